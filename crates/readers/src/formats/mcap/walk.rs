//! The linear structural walk over top-level records, and pseudo-chunk reading.
//!
//! This module owns the bounded-memory pass that rebuilds a chunk list when a
//! file has no usable index (and that covers the gaps an index leaves): it reads
//! record prefixes with [`SequentialReader`], reads only the header fields of
//! Chunk, Message and Attachment records and skips their bulk by length, and
//! turns runs of loose Message records into *pseudo-chunks* (split every ~4 MiB)
//! with exact time bounds, channel ids and counts. MessageIndex records right
//! after a chunk give that chunk's channel ids and message count for free.
//!
//! It also owns [`read_loose`], which streams the messages of one pseudo-chunk.

use std::collections::{BTreeMap, BTreeSet};

use super::chunk::Resolver;
use super::index::{ChannelDef, ChunkDetail, SchemaInfo};
use super::records::{self, MESSAGE_HEADER_LEN, RECORD_PREFIX_LEN, op};
use crate::error::{ErrorContext, Result};
use crate::io::{ReadAt, SequentialReader};
use crate::model::{
    AttachmentInfo, ChunkMeta, ChunkRead, Flow, MessageReceiver, MetadataInfo, Selection, Summary,
};

/// A run of loose messages is split into pseudo-chunks of about this many bytes.
pub const PSEUDO_CHUNK_TARGET: u64 = 4 << 20;

/// Bytes read to parse the header fields of a Chunk or Attachment record.
const HEADER_PEEK: u64 = 4096;

/// Why a walk over a byte range ended without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A DataEnd record ended the data section.
    DataEnd {
        /// Offset of the DataEnd record.
        at: u64,
        /// Offset just after it.
        end: u64,
    },
    /// A Footer record (at this offset) ended the file.
    Footer(u64),
    /// The end of the range was reached.
    End,
}

/// A run of loose messages being gathered into a pseudo-chunk.
#[derive(Debug)]
struct Run {
    start: u64,
    end: u64,
    messages: u64,
    min_time: u64,
    max_time: u64,
    channels: BTreeSet<u16>,
}

/// The chunk whose MessageIndex records may come next.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MiTarget {
    /// Position of the chunk in [`Walker::chunks`].
    pub chunk: usize,
    /// File offset just after the Chunk record.
    pub chunk_end: u64,
    /// File offset where the next MessageIndex record must start to belong to it.
    pub next: u64,
}

/// Everything a walk found, accumulated over one or more ranges.
pub(crate) struct Walker<'f> {
    file: &'f dyn ReadAt,
    ctx: &'f ErrorContext,
    /// `(profile, library)` of the first Header record.
    pub header: Option<(String, String)>,
    /// Schema records by id (first occurrence wins).
    pub schemas: BTreeMap<u16, SchemaInfo>,
    /// Channel records by id (first occurrence wins).
    pub channels: BTreeMap<u16, ChannelDef>,
    /// Chunks and pseudo-chunks found (plus any the caller seeded), not yet sorted.
    pub chunks: Vec<(ChunkMeta, ChunkDetail)>,
    /// Attachment records found.
    pub attachments: Vec<AttachmentInfo>,
    /// Metadata records found.
    pub metadata: Vec<MetadataInfo>,
    /// Offset of the DataEnd record, once seen.
    pub data_end: Option<u64>,
    /// Where MessageIndex records would attach.
    pub(crate) mi_target: Option<MiTarget>,
    run: Option<Run>,
}

impl<'f> Walker<'f> {
    /// An empty walker over `file`.
    pub(super) fn new(file: &'f dyn ReadAt, ctx: &'f ErrorContext) -> Self {
        Self {
            file,
            ctx,
            header: None,
            schemas: BTreeMap::new(),
            channels: BTreeMap::new(),
            chunks: Vec::new(),
            attachments: Vec::new(),
            metadata: Vec::new(),
            data_end: None,
            mi_target: None,
            run: None,
        }
    }

    /// Walks the records in `[start, end)`. Everything before an error stays recorded
    /// (an unfinished pseudo-chunk is closed after its last complete message).
    ///
    /// When damage cuts the MessageIndex records after a chunk short, what they
    /// said about that chunk (channels, count, index location) is dropped: a
    /// partial list would under-count and could prune the chunk on a topic it holds.
    pub(super) fn walk(&mut self, start: u64, end: u64) -> Result<Stop> {
        let result = self.walk_inner(start, end, false);
        self.close_run();
        if result.is_err() {
            self.drop_open_message_indexes();
        }
        result
    }

    /// Forgets what the MessageIndex records after the last chunk said, when
    /// they may be cut short: the walk ended in or right after them (damage, or
    /// a file that ends there without DataEnd or Footer).
    pub(crate) fn drop_open_message_indexes(&mut self) {
        if let Some((meta, detail)) = self.mi_target.and_then(|t| self.chunks.get_mut(t.chunk))
            && !detail.message_index_offsets.is_empty()
        {
            meta.channels = None;
            meta.message_count = None;
            detail.message_index_offsets.clear();
            detail.message_index_length = 0;
        }
    }

    /// Walks the summary section after DataEnd, collecting only Schema and Channel
    /// records (tolerance for writers that put them only there). Errors end it quietly.
    pub(crate) fn walk_summary_section(&mut self, start: u64, end: u64) {
        let _ = self.walk_inner(start, end, true);
    }

    fn walk_inner(&mut self, start: u64, end: u64, summary_only: bool) -> Result<Stop> {
        let file = self.file;
        let ctx = self.ctx;
        let end = end.min(file.size());
        let window = Window { inner: file, end };
        let mut sr = SequentialReader::new(&window, start);
        loop {
            let pos = sr.position();
            if pos >= end {
                return Ok(Stop::End);
            }
            let avail = end - pos;
            let past_end = |what: String| {
                if end == file.size() {
                    ctx.truncated(pos, what)
                } else {
                    ctx.corrupt(pos, format!("{what} (beyond byte {end})"))
                }
            };
            if avail < RECORD_PREFIX_LEN {
                return Err(past_end(format!(
                    "{avail} bytes left, too few for a record"
                )));
            }
            let prefix = sr.peek(RECORD_PREFIX_LEN as usize).map_err(|e| ctx.io(e))?;
            let (opcode, len) = prefix_fields(prefix);
            if len > avail - RECORD_PREFIX_LEN {
                return Err(past_end(format!(
                    "{} record (opcode {opcode:#04x}) of {len} bytes extends past the end of the data ({} bytes left)",
                    op::name(opcode),
                    avail - RECORD_PREFIX_LEN
                )));
            }
            let rec_end = pos + RECORD_PREFIX_LEN + len;
            if opcode != op::MESSAGE_INDEX && opcode != op::CHUNK {
                self.mi_target = None;
            }
            if summary_only {
                if matches!(opcode, op::SCHEMA | op::CHANNEL) {
                    let content = peek_content(&mut sr, ctx, pos, len, len)?;
                    self.schema_or_channel(ctx, pos, opcode, content)?;
                } else if opcode == op::FOOTER {
                    return Ok(Stop::Footer(pos));
                }
                sr.seek(rec_end);
                continue;
            }
            match opcode {
                0 => {
                    return Err(ctx.corrupt(
                        pos,
                        "invalid record opcode 0x00 (garbage or zero-filled bytes)",
                    ));
                }
                op::MESSAGE => {
                    let content = peek_content(&mut sr, ctx, pos, len, MESSAGE_HEADER_LEN as u64)?;
                    let h = records::parse_message_header(content)
                        .map_err(|e| field_err(ctx, pos, opcode, &e))?;
                    self.add_loose_message(pos, rec_end, &h);
                }
                op::CHUNK => {
                    self.close_run();
                    let content = peek_content(&mut sr, ctx, pos, len, HEADER_PEEK)?;
                    let (h, records_pos) = records::parse_chunk_header(content)
                        .map_err(|e| field_err(ctx, pos, opcode, &e))?;
                    let room = len.saturating_sub(records_pos as u64);
                    if h.compressed_size > room {
                        return Err(ctx.corrupt(
                            pos,
                            format!("Chunk record declares {} bytes of records but only {room} fit in it", h.compressed_size),
                        ));
                    }
                    let meta = ChunkMeta {
                        index: 0,
                        offset: pos,
                        length: RECORD_PREFIX_LEN + len,
                        start_time: Some(h.message_start_time),
                        end_time: Some(h.message_end_time),
                        message_count: None,
                        channels: None,
                        compression: h.compression.to_string(),
                        compressed_size: h.compressed_size,
                        uncompressed_size: Some(h.uncompressed_size),
                    };
                    self.chunks.push((meta, ChunkDetail::chunk()));
                    self.mi_target = Some(MiTarget {
                        chunk: self.chunks.len() - 1,
                        chunk_end: rec_end,
                        next: rec_end,
                    });
                }
                op::MESSAGE_INDEX => match self.mi_target {
                    Some(t) if t.next == pos => {
                        let content = peek_content(&mut sr, ctx, pos, len, len)?;
                        let mi = records::parse_message_index(content)
                            .map_err(|e| field_err(ctx, pos, opcode, &e))?;
                        if let Some((meta, detail)) = self.chunks.get_mut(t.chunk) {
                            detail.message_index_offsets.push((mi.channel_id, pos));
                            detail.message_index_length = rec_end - t.chunk_end;
                            *meta.message_count.get_or_insert(0) += mi.len() as u64;
                            let channels = meta.channels.get_or_insert_with(Vec::new);
                            if !mi.is_empty() && !channels.contains(&u64::from(mi.channel_id)) {
                                channels.push(u64::from(mi.channel_id));
                                channels.sort_unstable();
                            }
                        }
                        self.mi_target = Some(MiTarget { next: rec_end, ..t });
                    }
                    _ => self.mi_target = None,
                },
                op::SCHEMA | op::CHANNEL => {
                    let content = peek_content(&mut sr, ctx, pos, len, len)?;
                    self.schema_or_channel(ctx, pos, opcode, content)?;
                }
                op::HEADER => {
                    let content = peek_content(&mut sr, ctx, pos, len, len)?;
                    let h = records::parse_header(content)
                        .map_err(|e| field_err(ctx, pos, opcode, &e))?;
                    if self.header.is_none() {
                        self.header = Some((h.profile.to_string(), h.library.to_string()));
                    }
                }
                op::ATTACHMENT => {
                    let content = peek_content(&mut sr, ctx, pos, len, HEADER_PEEK)?;
                    let (h, _) = records::parse_attachment_header(content)
                        .map_err(|e| field_err(ctx, pos, opcode, &e))?;
                    self.attachments.push(AttachmentInfo {
                        offset: pos,
                        length: RECORD_PREFIX_LEN + len,
                        name: h.name.to_string(),
                        media_type: h.media_type.to_string(),
                        log_time: h.log_time,
                        create_time: h.create_time,
                        data_size: h.data_len,
                    });
                }
                op::METADATA => {
                    let content = peek_content(&mut sr, ctx, pos, len, len)?;
                    let m = records::parse_metadata(content)
                        .map_err(|e| field_err(ctx, pos, opcode, &e))?;
                    self.metadata.push(MetadataInfo {
                        offset: Some(pos),
                        name: m.name.to_string(),
                        metadata: m.metadata.to_btree(),
                    });
                }
                op::DATA_END => {
                    self.close_run();
                    self.data_end = Some(pos);
                    return Ok(Stop::DataEnd {
                        at: pos,
                        end: rec_end,
                    });
                }
                op::FOOTER => {
                    self.close_run();
                    return Ok(Stop::Footer(pos));
                }
                _ => {}
            }
            sr.seek(rec_end);
        }
    }

    fn schema_or_channel(
        &mut self,
        ctx: &ErrorContext,
        pos: u64,
        opcode: u8,
        content: &[u8],
    ) -> Result<()> {
        if opcode == op::SCHEMA {
            let s = records::parse_schema(content).map_err(|e| field_err(ctx, pos, opcode, &e))?;
            if s.id != 0 {
                self.schemas
                    .entry(s.id)
                    .or_insert_with(|| SchemaInfo::from_record(&s));
            }
        } else {
            let c = records::parse_channel(content).map_err(|e| field_err(ctx, pos, opcode, &e))?;
            self.channels
                .entry(c.id)
                .or_insert_with(|| ChannelDef::from_record(&c));
        }
        Ok(())
    }

    fn add_loose_message(&mut self, pos: u64, rec_end: u64, h: &records::MessageHeader) {
        if self
            .run
            .as_ref()
            .is_some_and(|r| pos - r.start >= PSEUDO_CHUNK_TARGET)
        {
            self.close_run();
        }
        let run = self.run.get_or_insert_with(|| Run {
            start: pos,
            end: rec_end,
            messages: 0,
            min_time: u64::MAX,
            max_time: 0,
            channels: BTreeSet::new(),
        });
        run.end = rec_end;
        run.messages += 1;
        run.min_time = run.min_time.min(h.log_time);
        run.max_time = run.max_time.max(h.log_time);
        run.channels.insert(h.channel_id);
    }

    /// Turns the current run of loose messages (if any) into a pseudo-chunk.
    fn close_run(&mut self) {
        if let Some(run) = self.run.take() {
            let length = run.end - run.start;
            let meta = ChunkMeta {
                index: 0,
                offset: run.start,
                length,
                start_time: Some(run.min_time),
                end_time: Some(run.max_time),
                message_count: Some(run.messages),
                channels: Some(run.channels.iter().map(|&c| u64::from(c)).collect()),
                compression: String::new(),
                compressed_size: length,
                uncompressed_size: Some(length),
            };
            self.chunks.push((meta, ChunkDetail::loose()));
        }
    }
}

/// The first `end` bytes of a file, so that a [`SequentialReader`] walking a
/// byte range never reads ahead past it (a gap of a few bytes costs a read of a
/// few bytes, not a whole read-ahead block).
struct Window<'a> {
    inner: &'a dyn ReadAt,
    end: u64,
}

impl ReadAt for Window<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn size(&self) -> u64 {
        self.end
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        match offset.checked_add(buf.len() as u64) {
            Some(e) if e <= self.end => self.inner.read_exact_at(offset, buf),
            _ => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

/// Opcode and length of a record prefix (zeros if `prefix` is short).
pub(crate) fn prefix_fields(prefix: &[u8]) -> (u8, u64) {
    let opcode = prefix.first().copied().unwrap_or(0);
    let mut len = [0u8; 8];
    if let Some(b) = prefix.get(1..9) {
        len.copy_from_slice(b);
    }
    (opcode, u64::from_le_bytes(len))
}

/// The first `min(len, want)` content bytes of the record at `pos`, whose length
/// `len` the caller has already checked against the bytes available.
pub(crate) fn peek_content<'s>(
    sr: &'s mut SequentialReader<'_>,
    ctx: &ErrorContext,
    pos: u64,
    len: u64,
    want: u64,
) -> Result<&'s [u8]> {
    let n = usize::try_from(len.min(want)).map_err(|_| {
        ctx.unsupported(
            pos,
            format!("record of {len} bytes is too large for this platform"),
        )
    })?;
    let total = n + RECORD_PREFIX_LEN as usize;
    let bytes = sr.peek(total).map_err(|e| ctx.io(e))?;
    if bytes.len() < total {
        return Err(ctx.truncated(
            pos,
            format!("record of {len} bytes extends past the end of the file"),
        ));
    }
    Ok(bytes.get(RECORD_PREFIX_LEN as usize..total).unwrap_or(&[]))
}

/// A field parse failure in the top-level record at `pos`.
pub(crate) fn field_err(
    ctx: &ErrorContext,
    pos: u64,
    opcode: u8,
    e: &records::FieldError,
) -> crate::Error {
    ctx.corrupt(
        pos + RECORD_PREFIX_LEN + e.pos as u64,
        format!(
            "bad {} record at byte {pos}: {}",
            op::name(opcode),
            e.message
        ),
    )
}

/// Delivers the messages of the pseudo-chunk `[offset, offset + length)`, streaming
/// its records (the range is never loaded whole).
pub(crate) fn read_loose(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    offset: u64,
    length: u64,
    sel: &Selection,
    receiver: &mut dyn MessageReceiver,
) -> Result<ChunkRead> {
    let end = match offset.checked_add(length) {
        Some(end) if end <= file.size() => end,
        _ => {
            return Err(ctx.truncated(
                offset,
                format!("loose-message range of {length} bytes extends past the end of the file"),
            ));
        }
    };
    let mut stats = ChunkRead::default();
    let mut resolver = Resolver::new(summary, sel);
    let window = Window { inner: file, end };
    let mut sr = SequentialReader::new(&window, offset);
    loop {
        let pos = sr.position();
        if pos >= end {
            return Ok(stats);
        }
        let avail = end - pos;
        if avail < RECORD_PREFIX_LEN {
            return Err(ctx.corrupt(pos, format!("{avail} bytes left in the loose-message range ending at byte {end}, too few for a record")));
        }
        let (opcode, len) =
            prefix_fields(sr.peek(RECORD_PREFIX_LEN as usize).map_err(|e| ctx.io(e))?);
        if len > avail - RECORD_PREFIX_LEN {
            return Err(ctx.corrupt(
                pos,
                format!("{} record of {len} bytes runs past the end of the loose-message range ending at byte {end}", op::name(opcode)),
            ));
        }
        let rec_end = pos + RECORD_PREFIX_LEN + len;
        match opcode {
            op::MESSAGE => {
                let content = peek_content(&mut sr, ctx, pos, len, MESSAGE_HEADER_LEN as u64)?;
                let h = records::parse_message_header(content)
                    .map_err(|e| field_err(ctx, pos, opcode, &e))?;
                stats.messages += 1;
                if sel.wants_time(h.log_time) && resolver.wants(h.channel_id) {
                    let want = if sel.payload {
                        len
                    } else {
                        MESSAGE_HEADER_LEN as u64
                    };
                    let content = peek_content(&mut sr, ctx, pos, len, want)?;
                    let data = content.get(MESSAGE_HEADER_LEN..).unwrap_or(&[]);
                    if resolver.deliver(&h, data, None, receiver) == Flow::Stop {
                        stats.stopped = true;
                        return Ok(stats);
                    }
                }
            }
            op::SCHEMA => {
                let content = peek_content(&mut sr, ctx, pos, len, len)?;
                resolver.on_schema(
                    &records::parse_schema(content).map_err(|e| field_err(ctx, pos, opcode, &e))?,
                );
            }
            op::CHANNEL => {
                let content = peek_content(&mut sr, ctx, pos, len, len)?;
                resolver.on_channel(
                    &records::parse_channel(content)
                        .map_err(|e| field_err(ctx, pos, opcode, &e))?,
                );
            }
            _ => {}
        }
        sr.seek(rec_end);
    }
}
