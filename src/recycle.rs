//! Buffers lent to Arrow arrays and taken back for reuse once no array holds
//! them: the chunk buffers of the format readers and the `data` column's copy
//! buffers. A buffer taken back keeps its pages mapped in, where a fresh
//! allocation of the same size would be faulted in and zeroed page by page.

use std::collections::VecDeque;

use arrow_buffer::Buffer;

/// Buffers handed out to arrays, oldest first, bounded in number and bytes:
/// past the bounds the oldest are forgotten (their arrays free them).
#[derive(Debug)]
pub struct Recycler {
    lent: VecDeque<Buffer>,
    /// Capacity of the buffers in `lent`.
    bytes: usize,
    max_buffers: usize,
    max_bytes: usize,
}

impl Recycler {
    /// A recycler watching at most `max_buffers` buffers of `max_bytes` in all.
    pub const fn new(max_buffers: usize, max_bytes: usize) -> Self {
        Self {
            lent: VecDeque::new(),
            bytes: 0,
            max_buffers,
            max_bytes,
        }
    }

    /// Watches `buffer`, which arrays may still hold, for reuse.
    pub fn lend(&mut self, buffer: Buffer) {
        self.bytes += buffer.capacity();
        self.lent.push_back(buffer);
        while self.lent.len() > self.max_buffers || self.bytes > self.max_bytes {
            let Some(old) = self.lent.pop_front() else {
                break;
            };
            self.bytes -= old.capacity();
        }
    }

    /// The oldest lent buffer that no array holds any more, as a `Vec` (its
    /// content is left as it was).
    pub fn take_back(&mut self) -> Option<Vec<u8>> {
        for _ in 0..self.lent.len() {
            let buffer = self.lent.pop_front()?;
            let capacity = buffer.capacity();
            match buffer.into_vec::<u8>() {
                Ok(v) => {
                    self.bytes -= capacity;
                    return Some(v);
                }
                // Still part of an array somewhere: look again next time.
                Err(held) => self.lent.push_back(held),
            }
        }
        None
    }

    /// Forgets the buffers larger than `limit` bytes.
    pub fn forget_larger_than(&mut self, limit: usize) {
        self.lent.retain(|b| b.capacity() <= limit);
        self.bytes = self.lent.iter().map(Buffer::capacity).sum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_comes_back_only_once_nothing_holds_it_and_the_bounds_hold() {
        let mut r = Recycler::new(2, 1 << 20);
        let a = Buffer::from_vec(vec![1u8; 100]);
        let held = a.clone();
        r.lend(a);
        assert!(r.take_back().is_none(), "still held");
        drop(held);
        let v = r.take_back().unwrap();
        assert_eq!(v, vec![1u8; 100]);
        assert!(r.take_back().is_none());
        // Past two buffers, the oldest is forgotten.
        for i in 0..3u8 {
            r.lend(Buffer::from_vec(vec![i; 10]));
        }
        assert_eq!(r.take_back().unwrap(), vec![1u8; 10]);
        assert_eq!(r.take_back().unwrap(), vec![2u8; 10]);
        assert!(r.take_back().is_none());
        // Past the byte bound too.
        let mut r = Recycler::new(8, 100);
        r.lend(Buffer::from_vec(vec![0u8; 60]));
        r.lend(Buffer::from_vec(vec![9u8; 60]));
        assert_eq!(r.take_back().unwrap(), vec![9u8; 60]);
        assert!(r.take_back().is_none());
    }
}
