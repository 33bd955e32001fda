//! Decompressed chunks shared by the scans of one file that run together.
//!
//! A query that joins several topics of one recording (an ASOF JOIN of each
//! topic onto a time grid, a LeRobot export) scans the file once per topic.
//! Recorders put every topic in the same chunks, so each scan decompresses
//! every chunk that holds one of its messages: the same chunk three or four
//! times. The scans of such a query move through the file together (the join
//! pulls each up to the same time), so a chunk one scan decompressed can be
//! handed to the others instead of decompressed again.
//!
//! [`SharedFile`] is the state of one file: which chunks the scans that have
//! joined it will still read ([`SharedFile::join`] gives each scan a
//! [`ChunkShare`] with its chunks' offsets), and the decompressed bytes kept
//! for them. A chunk's bytes are kept only while another scan will still read
//! it, and dropped when the last one has ([`ChunkShare::passed`]) or leaves;
//! so a file scanned once keeps nothing. Every file of a session draws on one
//! [`ShareBudget`]: bytes past it are not kept, and the scan that comes later
//! decompresses the chunk itself. Memory is bounded by the budget whatever
//! the file's length.
//!
//! Readers see a scan's share through [`crate::io::ReadAt::shared_chunks`],
//! as [`ChunkMemo`], and call it where they decompress.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use arrow_buffer::Buffer;

/// What a reader asks of a scan's share of decompressed chunks.
pub trait ChunkMemo: Send + Sync + Debug {
    /// The decompressed bytes of the chunk at `offset`, when another scan of
    /// the file left them.
    fn take(&self, offset: u64) -> Option<Buffer>;

    /// Offers the bytes this scan just decompressed for the chunk at
    /// `offset` (and verified): kept if another scan will still read it.
    fn offer(&self, offset: u64, bytes: &Buffer);
}

/// The bytes the kept chunks of a session's files may hold in all.
#[derive(Debug)]
pub struct ShareBudget {
    limit: AtomicUsize,
    used: AtomicUsize,
}

impl ShareBudget {
    /// A budget of `limit` bytes (0: nothing is kept).
    pub fn new(limit: usize) -> Self {
        Self {
            limit: AtomicUsize::new(limit),
            used: AtomicUsize::new(0),
        }
    }

    /// Sets the limit (bytes already kept stay until their scans pass them).
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Bytes kept now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes, if they fit.
    fn try_take(&self, n: usize) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(n).filter(|&total| total <= limit)
            })
            .is_ok()
    }

    fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::Relaxed);
    }
}

/// A kept chunk and the scans that will still read it.
#[derive(Debug, Default)]
struct Chunk {
    /// Scans that have joined and not yet passed the chunk.
    readers: usize,
    bytes: Option<Buffer>,
}

/// One file's chunks, as the scans that joined it will read them.
#[derive(Debug)]
pub struct SharedFile {
    chunks: Mutex<HashMap<u64, Chunk>>,
    budget: Arc<ShareBudget>,
}

impl SharedFile {
    /// A file whose kept chunks draw on `budget`.
    pub fn new(budget: Arc<ShareBudget>) -> Arc<Self> {
        Arc::new(Self {
            chunks: Mutex::new(HashMap::new()),
            budget,
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Chunk>> {
        // A panic elsewhere while locked leaves the map consistent (every
        // change is one insert or remove).
        self.chunks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A scan that will read the chunks at `offsets` joins the file.
    pub fn join(self: &Arc<Self>, offsets: impl IntoIterator<Item = u64>) -> ChunkShare {
        let pending: HashSet<u64> = offsets.into_iter().collect();
        let mut chunks = self.lock();
        for &offset in &pending {
            chunks.entry(offset).or_default().readers += 1;
        }
        ChunkShare {
            file: Arc::clone(self),
            pending: Mutex::new(pending),
            hits: AtomicUsize::new(0),
        }
    }

    /// Bytes kept for this file now.
    pub fn kept_bytes(&self) -> usize {
        self.lock()
            .values()
            .filter_map(|c| c.bytes.as_ref())
            .map(Buffer::len)
            .sum()
    }

    /// One reader fewer for the chunk at `offset`; forgets the chunk (and
    /// gives its bytes back) after its last.
    fn release(&self, chunks: &mut HashMap<u64, Chunk>, offset: u64) {
        let Some(chunk) = chunks.get_mut(&offset) else {
            return;
        };
        chunk.readers = chunk.readers.saturating_sub(1);
        if chunk.readers == 0
            && let Some(bytes) = chunks.remove(&offset).and_then(|c| c.bytes)
        {
            self.budget.give_back(bytes.len());
        }
    }
}

/// One scan's part in a [`SharedFile`]: the chunks it will still read.
/// Dropping it (the scan ended or was cancelled) passes them all.
#[derive(Debug)]
pub struct ChunkShare {
    file: Arc<SharedFile>,
    pending: Mutex<HashSet<u64>>,
    /// Chunks taken from other scans, since [`ChunkShare::take_hits`].
    hits: AtomicUsize,
}

impl ChunkShare {
    fn pending(&self) -> MutexGuard<'_, HashSet<u64>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The scan is done with the chunk at `offset` (read, skipped or
    /// pruned): it no longer holds the chunk's bytes for this scan.
    pub fn passed(&self, offset: u64) {
        if self.pending().remove(&offset) {
            let mut chunks = self.file.lock();
            self.file.release(&mut chunks, offset);
        }
    }

    /// Chunks this scan took from other scans since the last call.
    pub fn take_hits(&self) -> usize {
        self.hits.swap(0, Ordering::Relaxed)
    }
}

impl ChunkMemo for ChunkShare {
    fn take(&self, offset: u64) -> Option<Buffer> {
        let bytes = self.file.lock().get(&offset)?.bytes.clone()?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(bytes)
    }

    fn offer(&self, offset: u64, bytes: &Buffer) {
        // Counting this scan, which has not passed the chunk yet.
        let mine = usize::from(self.pending().contains(&offset));
        let mut chunks = self.file.lock();
        let Some(chunk) = chunks.get_mut(&offset) else {
            return;
        };
        if chunk.bytes.is_none() && chunk.readers > mine && self.file.budget.try_take(bytes.len()) {
            chunk.bytes = Some(bytes.clone());
        }
    }
}

impl Drop for ChunkShare {
    fn drop(&mut self) {
        let pending = std::mem::take(&mut *self.pending());
        let mut chunks = self.file.lock();
        for offset in pending {
            self.file.release(&mut chunks, offset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Buffer {
        Buffer::from_vec(vec![7u8; n])
    }

    #[test]
    fn a_chunk_is_kept_until_the_last_scan_that_reads_it_has_passed_it() {
        let budget = Arc::new(ShareBudget::new(1 << 20));
        let file = SharedFile::new(Arc::clone(&budget));
        let a = file.join([10, 20]);
        let b = file.join([10, 20]);
        let c = file.join([20]);
        // a decompresses chunk 10: b will read it too.
        assert!(a.take(10).is_none());
        a.offer(10, &bytes(100));
        a.passed(10);
        assert_eq!(budget.used(), 100);
        // b finds it; once b passed it, nobody else reads it.
        assert_eq!(b.take(10).map(|b| b.len()), Some(100));
        b.passed(10);
        assert_eq!(budget.used(), 0);
        assert_eq!(file.kept_bytes(), 0);
        // Chunk 20: kept for b and c; b leaves early (dropped), c reads it.
        a.offer(20, &bytes(50));
        a.passed(20);
        drop(b);
        assert_eq!(budget.used(), 50);
        assert!(c.take(20).is_some());
        c.passed(20);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_file_scanned_once_keeps_nothing() {
        let budget = Arc::new(ShareBudget::new(1 << 20));
        let file = SharedFile::new(Arc::clone(&budget));
        let a = file.join([1, 2, 3]);
        for offset in [1, 2, 3] {
            assert!(a.take(offset).is_none());
            a.offer(offset, &bytes(10));
            a.passed(offset);
        }
        assert_eq!(budget.used(), 0);
        // A chunk the scan never joined for is not kept either.
        a.offer(4, &bytes(10));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn bytes_past_the_budget_are_not_kept() {
        let budget = Arc::new(ShareBudget::new(150));
        let file = SharedFile::new(Arc::clone(&budget));
        let a = file.join([1, 2]);
        let b = file.join([1, 2]);
        a.offer(1, &bytes(100));
        a.offer(2, &bytes(100));
        assert_eq!(budget.used(), 100);
        assert!(b.take(1).is_some());
        assert!(b.take(2).is_none());
        drop(a);
        drop(b);
        assert_eq!(budget.used(), 0);
        budget.set_limit(0);
        let c = file.join([5]);
        let d = file.join([5]);
        c.offer(5, &bytes(1));
        assert!(d.take(5).is_none());
    }
}
