//! Loading chunks, shared by the format readers: bounded reads into reusable
//! per-thread buffers, which a scan may then share with the batches that
//! reference payloads in place, and errors that point into a decompressed chunk.

use std::cell::Cell;

use arrow_buffer::Buffer;

use crate::byte_buf::ByteBuf;
use crate::error::{Error, ErrorContext, Result};
use crate::io::ReadAt;
use crate::recycle::Recycler;

/// Buffers larger than this are freed after use instead of being kept for the next chunk.
const KEEP_BUFFER_LIMIT: usize = 64 << 20;

/// Shared buffers a [`ChunkBuf`] watches for reuse, at most: batches in the
/// scan's channel, one with the consumer and one being built may still hold
/// them, each batch a few chunks' buffers.
const LENT_BUFFERS: usize = 16;

/// Bytes of shared buffers a [`ChunkBuf`] watches for reuse, at most (the
/// idle ones among them stay allocated until taken back): room for a few of
/// the largest buffers kept ([`KEEP_BUFFER_LIMIT`]), since a large chunk is
/// still held by the batches in flight when the next one is read.
const LENT_BYTES: usize = 4 * KEEP_BUFFER_LIMIT;

/// A reusable byte buffer a chunk is read (or decompressed) into.
///
/// It is filled as a [`ByteBuf`] ([`ChunkBuf::fill`]), then shared as an Arrow
/// [`Buffer`] ([`ChunkBuf::share`]) whose payloads the scan's batches may
/// reference in place. Once every batch holding a shared buffer is dropped, a
/// later [`ChunkBuf::fill`] takes its memory back (its pages already faulted
/// in); until then the memory is left to the batches.
#[derive(Debug)]
pub struct ChunkBuf {
    /// The buffer being filled, or the one last shared.
    buf: ByteBuf,
    /// `buf` as shared, from [`ChunkBuf::share`] until the next [`ChunkBuf::fill`].
    shared: Option<Buffer>,
    /// Buffers shared earlier, taken back once no batch holds them.
    lent: Recycler,
}

impl Default for ChunkBuf {
    fn default() -> Self {
        Self {
            buf: ByteBuf::default(),
            shared: None,
            lent: Recycler::new(LENT_BUFFERS, LENT_BYTES),
        }
    }
}

impl ChunkBuf {
    /// The buffer to fill: the one shared before if nobody else holds it,
    /// else an earlier one that has come back, else a new one.
    pub fn fill(&mut self) -> &mut ByteBuf {
        if self.shared.take().is_some() && !self.buf.is_unique() {
            self.lent.lend(std::mem::take(&mut self.buf));
            self.buf = self.lent.take_back().unwrap_or_default();
        }
        &mut self.buf
    }

    /// Reads `len` bytes at `offset` into the buffer, as `read_range_into`
    /// does, and shares them.
    pub fn read(
        &mut self,
        file: &dyn ReadAt,
        ctx: &ErrorContext,
        offset: u64,
        len: u64,
        what: &str,
    ) -> Result<&Buffer> {
        read_range_into(file, ctx, offset, len, self.fill(), what)?;
        Ok(self.share())
    }

    /// Shares what was filled as an Arrow buffer (no copy) and returns it.
    pub fn share(&mut self) -> &Buffer {
        self.shared.get_or_insert_with(|| self.buf.share())
    }

    /// Shares `bytes` (decompressed elsewhere) as this buffer's content, until
    /// the next [`ChunkBuf::fill`]; the buffer itself stays for that fill.
    fn adopt(&mut self, bytes: Buffer) -> &Buffer {
        self.fill();
        self.shared.insert(bytes)
    }

    /// Frees the buffers when they grew past what is worth keeping.
    fn trim(&mut self) {
        if self.buf.capacity() > KEEP_BUFFER_LIMIT {
            self.buf = ByteBuf::default();
            self.shared = None;
        }
        self.lent.forget_larger_than(KEEP_BUFFER_LIMIT);
    }
}

thread_local! {
    /// Reusable (raw, decompressed) buffers, taken out while in use so re-entrant
    /// calls simply allocate fresh ones.
    static BUFFERS: Cell<(ChunkBuf, ChunkBuf)> = Cell::new(Default::default());
}

/// Runs `f` with the thread's two reusable chunk buffers (raw and decompressed).
pub(crate) fn with_buffers<T>(f: impl FnOnce(&mut ChunkBuf, &mut ChunkBuf) -> T) -> T {
    let (mut raw, mut out) = BUFFERS.with(|b| b.take());
    let result = f(&mut raw, &mut out);
    raw.trim();
    out.trim();
    BUFFERS.with(|b| b.set((raw, out)));
    result
}

/// The decompressed records of the chunk at `offset`: the bytes another scan
/// of the file left ([`ReadAt::shared_chunks`]), else what `decompress` fills
/// `out` with (checked), offered to the other scans. With them, the bytes
/// decompressed here ([`LoadedChunk::bytes_decompressed`]: 0 when taken).
pub(crate) fn decompressed<'b>(
    file: &dyn ReadAt,
    offset: u64,
    out: &'b mut ChunkBuf,
    decompress: impl FnOnce(&mut ByteBuf) -> Result<()>,
) -> Result<(&'b Buffer, u64)> {
    let memo = file.shared_chunks();
    if let Some(bytes) = memo.and_then(|m| m.take(offset)) {
        return Ok((out.adopt(bytes), 0));
    }
    decompress(out.fill())?;
    let bytes = out.share();
    if let Some(m) = memo {
        m.offer(offset, bytes);
    }
    Ok((bytes, bytes.len() as u64))
}

/// The offset of `part` inside `buffer`, when it lies wholly inside it.
pub fn offset_in(buffer: &Buffer, part: &[u8]) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(buffer.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= buffer.len()).then_some(start)
}

/// Reads `len` bytes at `offset` into `buf` (replacing its content), after checking
/// that the range lies inside the file, so a corrupt length never allocates more
/// than the file holds. `what` names the range in the error.
pub(crate) fn read_range_into(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
    len: u64,
    buf: &mut ByteBuf,
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
    // Every byte is overwritten by the read.
    let out = buf.resize_for_overwrite(n);
    file.read_exact_at(offset, out).map_err(|e| ctx.io(e))
}

/// A chunk read from the file and decompressed.
#[derive(Debug)]
pub(crate) struct LoadedChunk<'b> {
    /// File offset of the chunk record.
    pub offset: u64,
    /// The decompressed records.
    pub records: &'b [u8],
    /// The shared buffer `records` lie in, for [`crate::model::Message::data_buffer`].
    pub buffer: &'b Buffer,
    /// File offset of the records when they are stored uncompressed.
    pub(crate) records_file_offset: Option<u64>,
    /// Compression name.
    pub compression: &'b str,
    /// Bytes produced by decompression (0 when stored uncompressed).
    pub bytes_decompressed: u64,
}

impl LoadedChunk<'_> {
    /// An error about the inner records at `pos` (a position in the decompressed records):
    /// the absolute file offset when the records are stored as is, else the chunk's
    /// offset and the position inside its decompressed records.
    pub(crate) fn error(
        &self,
        ctx: &ErrorContext,
        pos: usize,
        message: impl std::fmt::Display,
    ) -> Error {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(buf: &mut ChunkBuf, bytes: &[u8]) -> *const u8 {
        let v = buf.fill();
        v.clear();
        v.extend_from_slice(bytes);
        v.as_ptr()
    }

    #[test]
    fn a_shared_buffer_comes_back_once_no_batch_holds_it() {
        let mut buf = ChunkBuf::default();
        let first = fill(&mut buf, &[1; 4096]);
        assert_eq!(buf.share().as_ptr(), first, "freezing copies nothing");
        // Nobody else holds it: the next fill reuses the allocation.
        assert_eq!(fill(&mut buf, &[2; 4096]), first);
        let held = buf.share().clone();
        // Held by a batch: the next fill gets another allocation, the batch keeps its bytes.
        let second = fill(&mut buf, &[3; 4096]);
        assert_ne!(second, first);
        assert_eq!(held.as_slice(), &[2; 4096][..]);
        buf.share();
        drop(held);
        // Both free now: the current one is reused first, then the lent one.
        assert_eq!(fill(&mut buf, &[4; 16]), second);
        let again = buf.share().clone();
        assert_eq!(fill(&mut buf, &[5; 16]), first);
        assert_eq!(again.as_slice(), &[4; 16][..]);
    }
}
