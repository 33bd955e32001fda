//! The growable byte buffer chunks are read and decompressed into, and
//! payloads copied into, which Arrow arrays then share without a copy.
//!
//! A [`ByteBuf`] owns a `Vec<u8>` whose every byte is initialized (its
//! length is the buffer's capacity; the buffer's own length is a prefix of
//! it). [`ByteBuf::share`] hands the vector to Arrow as a [`Buffer`] (no copy)
//! and keeps a reference to it; once every array holding it is dropped, the
//! next write takes the vector back ([`Buffer::into_vec`]) and reuses its
//! memory, so a scan reads each chunk into memory already faulted in rather
//! than into a fresh allocation. While arrays still hold it, a write moves to
//! a new vector and leaves them their bytes.

use std::ops::Deref;

use arrow_buffer::Buffer;

/// Where a [`ByteBuf`]'s bytes are: owned, or handed to Arrow.
#[derive(Debug)]
enum Memory {
    /// Owned and writable; every byte initialized.
    Owned(Vec<u8>),
    /// The whole vector handed to Arrow by [`ByteBuf::share`]; read only
    /// until taken back.
    Shared(Buffer),
}

impl Default for Memory {
    fn default() -> Self {
        Self::Owned(Vec::new())
    }
}

/// A growable byte buffer, filled like a `Vec<u8>` and shared with Arrow
/// arrays without a copy ([`ByteBuf::share`]).
#[derive(Debug, Default)]
pub struct ByteBuf {
    memory: Memory,
    len: usize,
}

impl ByteBuf {
    /// Bytes in the buffer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the buffer holds room for (all of them initialized).
    pub fn capacity(&self) -> usize {
        match &self.memory {
            Memory::Owned(v) => v.len(),
            Memory::Shared(b) => b.len(),
        }
    }

    /// Whether no array holds the buffer's memory (a write needs no new
    /// memory). Takes the memory back from Arrow when that is so.
    pub fn is_unique(&mut self) -> bool {
        if let Memory::Shared(b) = &self.memory {
            if b.strong_count() != 1 {
                return false;
            }
            let Memory::Shared(b) = std::mem::take(&mut self.memory) else {
                unreachable!("matched above")
            };
            match b.into_vec::<u8>() {
                Ok(v) => self.memory = Memory::Owned(v),
                Err(b) => {
                    self.memory = Memory::Shared(b);
                    return false;
                }
            }
        }
        true
    }

    /// Empties the buffer, keeping its memory.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `n` bytes.
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    /// Empties the buffer and makes room for `n` bytes: the memory is kept
    /// when no array holds it (grown as needed), else replaced.
    pub fn room_for(&mut self, n: usize) {
        self.len = 0;
        if !self.is_unique() {
            self.memory = Memory::default();
        }
        self.grow_to(n);
    }

    /// The owned vector, at least `capacity` bytes long, keeping the first
    /// `len` bytes: a new vector (at least double the old one when growing)
    /// when arrays hold the old one.
    fn writable(&mut self, capacity: usize) -> &mut Vec<u8> {
        if !self.is_unique() {
            let size = capacity.max(self.capacity().saturating_mul(2));
            let mut fresh = vec![0; size];
            fresh[..self.len].copy_from_slice(&self[..]);
            self.memory = Memory::Owned(fresh);
        }
        self.grow_to(capacity);
        match &mut self.memory {
            Memory::Owned(v) => v,
            Memory::Shared(_) => unreachable!("made unique above"),
        }
    }

    /// Grows owned memory to `capacity` bytes or more (doubling), zeroing
    /// only the new bytes.
    fn grow_to(&mut self, capacity: usize) {
        if let Memory::Owned(v) = &mut self.memory
            && v.len() < capacity
        {
            let size = capacity.max(v.len().saturating_mul(2));
            if v.capacity() < size {
                // Replace rather than grow: growing would copy the old bytes.
                if self.len == 0 {
                    *v = vec![0; size];
                    return;
                }
                v.reserve_exact(size - v.len());
            }
            v.resize(size, 0);
        }
    }

    /// [`ByteBuf::room_for`] `n` bytes, then the length set to `n` for the
    /// caller to overwrite every byte: the bytes hold whatever the memory
    /// held (nothing is zero-filled when the memory is reused).
    pub fn resize_for_overwrite(&mut self, n: usize) -> &mut [u8] {
        self.room_for(n);
        self.len = n;
        &mut self.writable(n)[..n]
    }

    /// Room for `additional` more bytes, the content kept.
    pub fn reserve(&mut self, additional: usize) {
        self.writable(self.len.saturating_add(additional));
    }

    /// The writable bytes past the length (all of them initialized): fill a
    /// prefix, then [`ByteBuf::set_len`].
    pub fn spare_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.writable(len)[len..]
    }

    /// Sets the length (at most the capacity) after writing into [`ByteBuf::spare_mut`].
    pub fn set_len(&mut self, n: usize) {
        assert!(n <= self.capacity(), "length {n} past the capacity");
        self.len = n;
    }

    /// Appends `bytes`.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        let len = self.len;
        let end = len.saturating_add(bytes.len());
        self.writable(end)[len..end].copy_from_slice(bytes);
        self.len = end;
    }

    /// Appends one byte.
    pub fn push(&mut self, byte: u8) {
        self.extend_from_slice(&[byte]);
    }

    /// The content as an Arrow buffer sharing the memory (no copy). The
    /// buffer keeps the memory alive; this `ByteBuf` writes to it again only
    /// once every such buffer is dropped.
    pub fn share(&mut self) -> Buffer {
        if let Memory::Owned(v) = &mut self.memory {
            if v.is_empty() {
                return Buffer::from_vec(Vec::<u8>::new());
            }
            self.memory = Memory::Shared(Buffer::from_vec(std::mem::take(v)));
        }
        match &self.memory {
            Memory::Shared(b) => b.slice_with_length(0, self.len),
            Memory::Owned(_) => unreachable!("shared above"),
        }
    }
}

impl Deref for ByteBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.memory {
            Memory::Owned(v) => &v[..self.len],
            Memory::Shared(b) => &b.as_slice()[..self.len],
        }
    }
}

impl AsRef<[u8]> for ByteBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_is_reused_once_no_array_holds_it() {
        let mut b = ByteBuf::default();
        b.extend_from_slice(b"hello");
        let at = b.as_ptr();
        let held = b.share();
        assert_eq!(held.as_slice(), b"hello");
        assert_eq!(held.as_ptr(), at, "sharing copies nothing");
        assert!(!b.is_unique());
        // A write while held moves to new memory; the array keeps its bytes.
        b.push(b'!');
        assert_eq!(&b[..], b"hello!");
        assert_ne!(b.as_ptr(), at);
        assert_eq!(held.as_slice(), b"hello");
        // Shared again and released: the same memory comes back.
        let at = b.as_ptr();
        drop(b.share());
        drop(held);
        assert!(b.is_unique());
        assert_eq!(b.resize_for_overwrite(3).as_ptr(), at);
        assert_eq!(
            &b[..],
            b"hel",
            "old content left for the caller to overwrite"
        );
    }

    #[test]
    fn spare_bytes_are_initialized_and_growth_keeps_content() {
        let mut b = ByteBuf::default();
        b.room_for(10);
        assert_eq!(b.len(), 0);
        assert!(b.capacity() >= 10);
        let spare = b.spare_mut();
        spare[..4].copy_from_slice(b"abcd");
        b.set_len(4);
        b.reserve(1000);
        assert_eq!(&b[..], b"abcd");
        assert!(b.capacity() >= 1004);
        b.truncate(2);
        assert_eq!(&b[..], b"ab");
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.share().len(), 0);
    }
}
