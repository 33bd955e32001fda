//! MCAP: the byte-level reader (no DataFusion, no Arrow).
//!
//! [`McapFormat`] implements [`FormatReader`]:
//!
//! - [`FormatReader::summary`] reads the footer and summary section when they are
//!   usable (checking `summary_crc`), and otherwise walks the file once with
//!   bounded memory, reading only record headers for chunks. Runs of loose
//!   (unchunked) messages become *pseudo-chunks* of about 4 MiB, with exact time
//!   bounds and channel ids, so large unchunked files still split into parallel
//!   work. Loose records beside indexed chunks are found too. Damage that leaves a
//!   readable prefix goes in [`Summary::damage`]. Reader-private details
//!   (message-index locations, schemas) are in [`index::McapIndex`].
//! - [`FormatReader::read_chunk`] decompresses one chunk into a buffer bounded by its
//!   declared size, checks its CRC and delivers its messages in file order. When
//!   neither payloads nor full headers are wanted and the chunk has message
//!   indexes, it answers from the MessageIndex records alone, without reading the
//!   chunk (`publish_time` and `sequence` are then `None`). Pseudo-chunks are
//!   streamed record by record.
//! - [`FormatReader::chunk_times`] answers every message's log time per channel
//!   from the same MessageIndex records, in no order (for `logsql info`'s
//!   timelines).
//!
//! Messages on a channel id that no Channel record defines are delivered with a
//! synthetic channel (empty topic and encoding, no schema).
//!
//! Modules:
//! - [`records`]: opcodes, borrowed record structs, tolerant parsers;
//! - [`reader`]: [`reader::RecordReader`], every record in file order with chunks flattened;
//! - [`index`]: the reader-private summary data and channel/schema conversion;
//! - `summary`: footer, summary section, fallbacks, summary assembly;
//! - `walk`: the linear structural walk and pseudo-chunk reading;
//! - `chunk`: loading, decompressing and reading one chunk; the message-index fast path;
//! - `doctor`: the checks only MCAP makes for `logsql doctor`.

use crate::error::{ErrorContext, Result};
use crate::formats::FormatReader;
use crate::io::ReadAt;
use crate::model::{ChannelTimes, ChunkMeta, ChunkRead, MessageReceiver, Selection, Summary};

mod chunk;
mod doctor;
pub mod index;
pub mod mapping;
pub mod reader;
pub mod records;
mod summary;
mod walk;

pub use index::{ChunkDetail, ChunkKind, McapIndex, SchemaInfo};
pub use reader::{RecordItem, RecordReader, RecordReaderOptions};
pub use records::{MAGIC, Record};
pub use walk::PSEUDO_CHUNK_TARGET;

/// The MCAP format.
#[derive(Debug, Default, Clone, Copy)]
pub struct McapFormat;

impl FormatReader for McapFormat {
    /// Message indexes hold every message's channel and time (a file written
    /// without them is read chunk by chunk instead).
    fn times_in_index(&self) -> bool {
        true
    }

    fn chunk_times_enclose_messages(&self) -> bool {
        true
    }

    fn doctor(&self, file: &dyn ReadAt, summary: &Summary, report: &mut crate::doctor::Report) {
        doctor::check(file, summary, report);
    }

    fn name(&self) -> &'static str {
        "mcap"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["mcap"]
    }

    fn sniff(&self, head: &[u8]) -> bool {
        head.starts_with(MAGIC)
    }

    fn summary_with_limits(
        &self,
        file: &dyn ReadAt,
        limits: &crate::limits::Limits,
    ) -> Result<Summary> {
        summary::read_summary(file, limits)
    }

    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        sel: &Selection,
        receiver: &mut dyn MessageReceiver,
    ) -> Result<ChunkRead> {
        let ctx = ErrorContext::new(file.name(), "mcap", file.size()).with_limits(sel.limits);
        let detail = find_detail(summary, chunk);
        let kind = match detail {
            Some(d) => d.kind,
            // A chunk list built by someone else: look at the bytes.
            None => {
                let head = file.read_upto(chunk.offset, 1).map_err(|e| ctx.io(e))?;
                if head.first() == Some(&records::op::CHUNK) {
                    ChunkKind::Chunk
                } else {
                    ChunkKind::Loose
                }
            }
        };
        match kind {
            ChunkKind::Chunk => {
                let header_only = !sel.payload && !sel.full_header;
                let indexed = detail
                    .filter(|d| !d.message_index_offsets.is_empty() && d.message_index_length > 0);
                let mi_offset = chunk.offset.saturating_add(chunk.length);
                // A chunk that only partly overlaps the wanted time: its message
                // indexes may show that none of its wanted messages is in the
                // window, which saves reading and decompressing it.
                let partial = |lo: u64, hi: u64| {
                    chunk.start_time.is_none_or(|s| s < lo) || chunk.end_time.is_none_or(|e| e > hi)
                };
                if let (Some(d), false) = (indexed, header_only)
                    && sel.time.is_some_and(|(lo, hi)| partial(lo, hi))
                    && chunk::indexes_exclude_chunk(
                        file,
                        &ctx,
                        summary,
                        mi_offset,
                        d.message_index_length,
                        sel,
                    )?
                {
                    return Ok(ChunkRead {
                        skipped: true,
                        ..ChunkRead::default()
                    });
                }
                if let Some(d) = indexed.filter(|_| header_only) {
                    let fast = chunk::read_message_indexes(
                        file,
                        &ctx,
                        summary,
                        mi_offset,
                        d.message_index_length,
                        sel,
                        receiver,
                    )?;
                    if let Some(read) = fast {
                        return Ok(read);
                    }
                }
                chunk::read_chunk_records(
                    file,
                    &ctx,
                    summary,
                    chunk.offset,
                    chunk.length,
                    sel,
                    receiver,
                )
            }
            ChunkKind::Loose => walk::read_loose(
                file,
                &ctx,
                summary,
                chunk.offset,
                chunk.length,
                sel,
                receiver,
            ),
        }
    }

    /// Answered from the MessageIndex records after a Chunk record; pseudo-chunks
    /// and chunks without message indexes answer `Ok(false)`.
    fn chunk_times(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        out: &mut ChannelTimes,
    ) -> Result<bool> {
        let Some(d) = find_detail(summary, chunk) else {
            return Ok(false);
        };
        let Some(uncompressed_size) = chunk.uncompressed_size else {
            return Ok(false);
        };
        if d.kind != ChunkKind::Chunk
            || d.message_index_offsets.is_empty()
            || d.message_index_length == 0
        {
            return Ok(false);
        }
        let ctx = ErrorContext::new(file.name(), "mcap", file.size());
        chunk::message_index_times(
            file,
            &ctx,
            summary,
            chunk.offset.saturating_add(chunk.length),
            d.message_index_length,
            uncompressed_size,
            out,
        )
    }
}

/// The reader-private detail of `chunk`, matched by index and offset.
fn find_detail<'s>(summary: &'s Summary, chunk: &ChunkMeta) -> Option<&'s ChunkDetail> {
    let index = summary.private::<McapIndex>()?;
    index.chunks.get(summary.chunk_position(chunk)?)
}
