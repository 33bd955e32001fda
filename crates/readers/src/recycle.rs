//! Buffers lent to Arrow arrays and taken back for reuse once no array holds
//! them: the chunk buffers of the format readers and the `data` column's copy
//! buffers. A buffer taken back keeps its pages mapped in, where a fresh
//! allocation of the same size would be faulted in page by page.

use std::collections::VecDeque;

use crate::byte_buf::ByteBuf;

/// Buffers handed out to arrays, oldest first, bounded in number and bytes:
/// past the bounds the oldest are forgotten (their arrays free them).
#[derive(Debug)]
pub struct Recycler {
    lent: VecDeque<ByteBuf>,
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

    /// Watches `buffer`, whose region arrays may still hold ([`ByteBuf::share`]), for reuse.
    pub fn lend(&mut self, buffer: ByteBuf) {
        self.bytes += buffer.capacity();
        self.lent.push_back(buffer);
        while self.lent.len() > self.max_buffers || self.bytes > self.max_bytes {
            let Some(old) = self.lent.pop_front() else {
                break;
            };
            self.bytes -= old.capacity();
        }
    }

    /// The oldest lent buffer that no array holds any more, emptied.
    pub fn take_back(&mut self) -> Option<ByteBuf> {
        for _ in 0..self.lent.len() {
            let mut buffer = self.lent.pop_front()?;
            if buffer.is_unique() {
                self.bytes -= buffer.capacity();
                buffer.clear();
                return Some(buffer);
            }
            // Still part of an array somewhere: look again next time.
            self.lent.push_back(buffer);
        }
        None
    }

    /// Forgets the buffers larger than `limit` bytes.
    pub(crate) fn forget_larger_than(&mut self, limit: usize) {
        self.lent.retain(|b| b.capacity() <= limit);
        self.bytes = self.lent.iter().map(ByteBuf::capacity).sum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(fill: u8, n: usize) -> ByteBuf {
        let mut b = ByteBuf::default();
        b.extend_from_slice(&vec![fill; n]);
        b
    }

    #[test]
    fn a_buffer_comes_back_only_once_nothing_holds_it_and_the_bounds_hold() {
        let mut r = Recycler::new(2, 1 << 20);
        let mut a = buf(1, 100);
        let at = a.as_ptr();
        let held = a.share();
        r.lend(a);
        assert!(r.take_back().is_none(), "still held");
        drop(held);
        let mut back = r.take_back().unwrap();
        assert!(back.is_empty());
        assert_eq!(
            back.resize_for_overwrite(100).as_ptr(),
            at,
            "the same memory"
        );
        assert!(back.iter().all(|&x| x == 1), "content left as it was");
        assert!(r.take_back().is_none());
        // Past two buffers, the oldest is forgotten.
        let ats: Vec<_> = (0..3u8)
            .map(|i| {
                let b = buf(i, 10);
                let at = b.as_ptr();
                r.lend(b);
                at
            })
            .collect();
        assert_eq!(r.take_back().unwrap().as_ptr(), ats[1]);
        assert_eq!(r.take_back().unwrap().as_ptr(), ats[2]);
        assert!(r.take_back().is_none());
        // Past the byte bound too.
        let mut r = Recycler::new(8, 100);
        r.lend(buf(0, 60));
        let last = buf(9, 60);
        let at = last.as_ptr();
        r.lend(last);
        assert_eq!(r.take_back().unwrap().as_ptr(), at);
        assert!(r.take_back().is_none());
    }
}
