//! Loading chunks, shared by the format readers: bounded reads into reusable
//! per-thread buffers, and errors that point into a decompressed chunk.

use std::cell::Cell;

use crate::error::{Error, ErrorContext, Result};
use crate::io::ReadAt;

/// Buffers larger than this are freed after use instead of being kept for the next chunk.
const KEEP_BUFFER_LIMIT: usize = 64 << 20;

thread_local! {
    /// Reusable (raw, decompressed) buffers, taken out while in use so re-entrant
    /// calls simply allocate fresh ones.
    static BUFFERS: Cell<(Vec<u8>, Vec<u8>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

/// Runs `f` with the thread's two reusable byte buffers (raw and decompressed).
pub fn with_buffers<T>(f: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>) -> T) -> T {
    let (mut raw, mut out) = BUFFERS.with(|b| b.take());
    let result = f(&mut raw, &mut out);
    for buf in [&mut raw, &mut out] {
        if buf.capacity() > KEEP_BUFFER_LIMIT {
            *buf = Vec::new();
        }
    }
    BUFFERS.with(|b| b.set((raw, out)));
    result
}

/// Reads `len` bytes at `offset` into `buf` (replacing its content), after checking
/// that the range lies inside the file, so a corrupt length never allocates more
/// than the file holds. `what` names the range in the error.
pub fn read_range_into(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
    len: u64,
    buf: &mut Vec<u8>,
    what: &str,
) -> Result<()> {
    let fits = offset
        .checked_add(len)
        .is_some_and(|end| end <= file.size());
    let n = match usize::try_from(len) {
        Ok(n) if fits => n,
        _ => {
            return Err(ctx.truncated(
                offset,
                format!(
                    "{what} of {len} bytes extends past the end of the file ({} bytes left)",
                    file.size().saturating_sub(offset)
                ),
            ));
        }
    };
    // Every byte is overwritten by the read: only growth is zero-filled, so a
    // reused buffer costs no memset per chunk.
    buf.resize(n, 0);
    file.read_exact_at(offset, buf).map_err(|e| ctx.io(e))
}

/// A chunk read from the file and decompressed.
#[derive(Debug)]
pub struct LoadedChunk<'b> {
    /// File offset of the chunk record.
    pub offset: u64,
    /// The decompressed records.
    pub records: &'b [u8],
    /// File offset of the records when they are stored uncompressed.
    pub records_file_offset: Option<u64>,
    /// Compression name.
    pub compression: &'b str,
    /// Bytes produced by decompression (0 when stored uncompressed).
    pub bytes_decompressed: u64,
}

impl LoadedChunk<'_> {
    /// An error about the inner records at `pos` (a position in the decompressed records):
    /// the absolute file offset when the records are stored as is, else the chunk's
    /// offset and the position inside its decompressed records.
    pub fn error(&self, ctx: &ErrorContext, pos: usize, message: impl std::fmt::Display) -> Error {
        match self.records_file_offset {
            Some(base) => ctx.corrupt(
                base + pos as u64,
                format!("inside the chunk at byte {}: {message}", self.offset),
            ),
            None => ctx.corrupt(
                self.offset,
                format!(
                    "in the {} chunk at this offset, at byte {pos} of its decompressed records: {message}",
                    self.compression
                ),
            ),
        }
    }
}
