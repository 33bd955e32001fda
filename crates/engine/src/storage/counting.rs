//! `CountingReader`: a [`ReadAt`] that counts the bytes read through it
//! (the scans' `bytes_read` metric, and summary loads).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use logsql_readers::io::ReadAt;
use logsql_readers::shared_chunks::ChunkMemo;

/// Wraps a [`ReadAt`] and counts the bytes read through it.
pub(crate) struct CountingReader<'a> {
    inner: &'a dyn ReadAt,
    bytes: AtomicU64,
    /// The scan's share of the file's decompressed chunks, if any.
    shared: Option<&'a dyn ChunkMemo>,
}

impl<'a> CountingReader<'a> {
    /// Counts reads of `inner`.
    pub(crate) fn new(inner: &'a dyn ReadAt) -> Self {
        Self {
            inner,
            bytes: AtomicU64::new(0),
            shared: None,
        }
    }

    /// The same reader offering readers the scan's `shared` chunks.
    pub(crate) fn sharing(self, shared: Option<&'a dyn ChunkMemo>) -> Self {
        Self { shared, ..self }
    }

    /// Bytes read since the last call.
    pub(crate) fn take_count(&self) -> u64 {
        self.bytes.swap(0, Ordering::Relaxed)
    }
}

impl ReadAt for CountingReader<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.inner.read_exact_at(offset, buf)
    }
    fn local_path(&self) -> Option<&std::path::Path> {
        self.inner.local_path()
    }
    fn note_external_read(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.inner.note_external_read(bytes);
    }
    fn shared_chunks(&self) -> Option<&dyn ChunkMemo> {
        self.shared.or_else(|| self.inner.shared_chunks())
    }
}
