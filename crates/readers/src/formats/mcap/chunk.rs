//! Reading one Chunk record: load, decompress, check, and deliver its messages.
//!
//! This module owns everything between "here is a chunk's byte range" and
//! messages handed to a [`MessageReceiver`]: reading the record, decompressing into
//! a buffer bounded by the declared size, the `uncompressed_crc` check, walking
//! the inner records with a per-read channel map ([`Resolver`]), and the
//! header-only fast path over the MessageIndex records that follow a chunk.

use std::collections::{BTreeSet, HashMap};

use super::index::{ChannelDef, SchemaInfo, synthetic_channel};
use super::records::{self, FieldError, RECORD_PREFIX_LEN, SliceRecords, op};
use crate::byte_buf::ByteBuf;
use crate::compression::{self, Codec};
use crate::error::{ErrorContext, Result};
use crate::formats::channels::ChannelResolver;
use crate::formats::chunk_io::{
    ChunkBuf, LoadedChunk, decompressed, read_range_into, with_buffers,
};
use crate::io::ReadAt;
use crate::model::{self, ChunkRead, Flow, Message, MessageReceiver, Selection, Summary};
use arrow_buffer::Buffer;

/// An error for a record at `record_pos` of `loaded` whose field parse failed.
pub(crate) fn field_error(
    loaded: &LoadedChunk<'_>,
    ctx: &ErrorContext,
    record_pos: usize,
    opcode: u8,
    e: &FieldError,
) -> crate::Error {
    let pos = record_pos + RECORD_PREFIX_LEN as usize + e.pos;
    loaded.error(
        ctx,
        pos,
        format!("bad {} record: {}", op::name(opcode), e.message),
    )
}

/// Decompresses a chunk's records into `out` and checks the size and (when
/// `verify_crc`) the CRC.
///
/// `chunk_offset` is the file offset of the Chunk record and `records_offset` the
/// file offset of its compressed records (both for error messages). `owner` is
/// the shared buffer `compressed` lies in, if any
/// ([`compression::decompress_shared`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn decompress_records(
    ctx: &ErrorContext,
    chunk_offset: u64,
    header: &records::ChunkHeader<'_>,
    compressed: &[u8],
    owner: Option<&Buffer>,
    records_offset: u64,
    out: &mut ByteBuf,
    verify_crc: bool,
) -> Result<()> {
    let codec = Codec::from_name(header.compression).ok_or_else(|| {
        ctx.unsupported(
            chunk_offset,
            format!(
                "chunk compression {:?} (supported: none, zstd, lz4)",
                header.compression
            ),
        )
    })?;
    let size = header.uncompressed_size;
    if codec != Codec::None {
        ctx.check_chunk_size(chunk_offset, size)?;
    }
    match owner {
        Some(owner) => compression::decompress_shared(codec, compressed, owner, size, out),
        None => compression::decompress(codec, compressed, size, out),
    }
    .map_err(|e| {
        ctx.corrupt(
            records_offset,
            format!(
                "cannot decompress the {:?} chunk at byte {chunk_offset}: {e}",
                header.compression
            ),
        )
    })?;
    if verify_crc {
        check_crc(ctx, chunk_offset, header, out)
    } else {
        Ok(())
    }
}

fn check_crc(
    ctx: &ErrorContext,
    chunk_offset: u64,
    header: &records::ChunkHeader<'_>,
    records: &[u8],
) -> Result<()> {
    if header.uncompressed_crc != 0 {
        let computed = crc32fast::hash(records);
        if computed != header.uncompressed_crc {
            return Err(ctx.checksum(
                chunk_offset,
                "chunk uncompressed_crc",
                u64::from(header.uncompressed_crc),
                u64::from(computed),
            ));
        }
    }
    Ok(())
}

/// Reads the Chunk record at `offset` (`length` bytes, prefix included) into `raw`,
/// decompresses it into `out` when compressed, and checks it.
pub(crate) fn load_chunk<'b>(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
    length: u64,
    raw: &'b mut ChunkBuf,
    out: &'b mut ChunkBuf,
) -> Result<LoadedChunk<'b>> {
    if length < RECORD_PREFIX_LEN {
        return Err(ctx.corrupt(
            offset,
            format!("chunk length {length} is shorter than a record prefix"),
        ));
    }
    let raw_buffer: &'b Buffer = raw.read(file, ctx, offset, length, "chunk record")?;
    let raw: &'b [u8] = raw_buffer;
    let (opcode, content) = split_record(raw);
    if opcode != op::CHUNK {
        return Err(ctx.corrupt(
            offset,
            format!(
                "expected a Chunk record (opcode 0x06), found opcode {opcode:#04x} ({})",
                op::name(opcode)
            ),
        ));
    }
    let declared = record_len(raw);
    let content = match usize::try_from(declared)
        .ok()
        .and_then(|n| content.get(..n))
    {
        Some(c) => c,
        None => {
            return Err(ctx.corrupt(
                offset,
                format!(
                    "chunk record declares {declared} bytes of content but its index gives it {}",
                    length - RECORD_PREFIX_LEN
                ),
            ));
        }
    };
    let chunk = records::parse_chunk(content).map_err(|e| {
        ctx.corrupt(
            offset + RECORD_PREFIX_LEN + e.pos as u64,
            format!("bad Chunk record: {}", e.message),
        )
    })?;
    let records_offset = offset + RECORD_PREFIX_LEN + chunk.records_pos as u64;
    let header = chunk.header;
    if matches!(Codec::from_name(header.compression), Some(Codec::None)) {
        if chunk.records.len() as u64 != header.uncompressed_size {
            return Err(ctx.corrupt(
                offset,
                format!(
                    "uncompressed chunk holds {} bytes of records but declares uncompressed_size {}",
                    chunk.records.len(),
                    header.uncompressed_size
                ),
            ));
        }
        check_crc(ctx, offset, &header, chunk.records)?;
        return Ok(LoadedChunk {
            offset,
            records: chunk.records,
            buffer: raw_buffer,
            records_file_offset: Some(records_offset),
            compression: header.compression,
            bytes_decompressed: 0,
        });
    }
    let (out, bytes_decompressed) = decompressed(file, offset, out, |out| {
        decompress_records(
            ctx,
            offset,
            &header,
            chunk.records,
            Some(raw_buffer),
            records_offset,
            out,
            true,
        )
    })?;
    Ok(LoadedChunk {
        offset,
        records: out,
        buffer: out,
        records_file_offset: None,
        compression: header.compression,
        bytes_decompressed,
    })
}

/// Splits a complete record (prefix + content) into opcode and content.
fn split_record(raw: &[u8]) -> (u8, &[u8]) {
    let opcode = raw.first().copied().unwrap_or(0);
    (opcode, raw.get(RECORD_PREFIX_LEN as usize..).unwrap_or(&[]))
}

/// The length field of a record prefix at the start of `raw` (0 if too short).
fn record_len(raw: &[u8]) -> u64 {
    let mut len = [0u8; 8];
    if let Some(b) = raw.get(1..9) {
        len.copy_from_slice(b);
    }
    u64::from_le_bytes(len)
}

/// Maps channel ids to channels while one chunk (or pseudo-chunk) is read: the
/// shared [`ChannelResolver`] plus MCAP's schemas, so that a Channel record met
/// inside a chunk gets its Schema (from the summary or from the chunk itself).
pub(crate) struct Resolver<'s> {
    channels: ChannelResolver<'s>,
    schemas: Option<&'s std::collections::BTreeMap<u16, SchemaInfo>>,
    local_schemas: HashMap<u16, SchemaInfo>,
    sel: &'s Selection,
}

impl<'s> Resolver<'s> {
    /// A resolver over `summary`'s channels and schemas.
    pub(super) fn new(summary: &'s Summary, sel: &'s Selection) -> Self {
        let schemas = summary
            .private::<super::index::McapIndex>()
            .map(|i| &i.schemas);
        Self {
            channels: ChannelResolver::new(summary, sel, |id| synthetic_channel(id as u16)),
            schemas,
            local_schemas: HashMap::new(),
            sel,
        }
    }

    /// A Schema record was read.
    pub(crate) fn on_schema(&mut self, s: &records::Schema<'_>) {
        let known = self.schemas.is_some_and(|m| m.contains_key(&s.id));
        if s.id != 0 && !known && !self.local_schemas.contains_key(&s.id) {
            self.local_schemas.insert(s.id, SchemaInfo::from_record(s));
        }
    }

    /// A Channel record was read.
    pub(crate) fn on_channel(&mut self, c: &records::Channel<'_>) {
        if self.channels.is_defined(u64::from(c.id)) {
            return;
        }
        let schema = self
            .local_schemas
            .get(&c.schema_id)
            .or_else(|| self.schemas.and_then(|m| m.get(&c.schema_id)));
        self.channels
            .define(ChannelDef::from_record(c).to_channel(schema));
    }

    /// Whether messages of channel `id` pass the selection's topic filter.
    pub(crate) fn wants(&mut self, id: u16) -> bool {
        self.channels.wants(u64::from(id))
    }

    /// The channel for `id` (resolving it if needed).
    pub(super) fn channel(&mut self, id: u16) -> &model::Channel {
        self.channels.channel(u64::from(id))
    }

    /// Delivers one message to `receiver` if it passes the selection; `buffer` is
    /// the shared buffer `data` lies in, if any.
    pub(super) fn deliver(
        &mut self,
        h: &records::MessageHeader,
        data: &[u8],
        buffer: Option<&Buffer>,
        receiver: &mut dyn MessageReceiver,
    ) -> Flow {
        if !self.sel.wants_time(h.log_time) || !self.wants(h.channel_id) {
            return Flow::Continue;
        }
        let payload = self.sel.payload;
        receiver.message(Message {
            channel: self.channels.channel(u64::from(h.channel_id)),
            log_time: h.log_time,
            publish_time: Some(h.publish_time),
            sequence: Some(h.sequence),
            data: if payload { data } else { &[] },
            data_buffer: buffer,
            extra: &[],
        })
    }
}

/// Reads a real Chunk record and delivers its messages in file order.
pub(crate) fn read_chunk_records(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    offset: u64,
    length: u64,
    sel: &Selection,
    receiver: &mut dyn MessageReceiver,
) -> Result<ChunkRead> {
    with_buffers(|raw, out| {
        let loaded = load_chunk(file, ctx, offset, length, raw, out)?;
        let mut stats = ChunkRead {
            bytes_decompressed: loaded.bytes_decompressed,
            ..ChunkRead::default()
        };
        let mut resolver = Resolver::new(summary, sel);
        for rec in SliceRecords::new(loaded.records) {
            let rec = rec.map_err(|e| loaded.error(ctx, e.pos, &e.message))?;
            match rec.opcode {
                op::MESSAGE => {
                    let m = records::parse_message(rec.content)
                        .map_err(|e| field_error(&loaded, ctx, rec.pos, rec.opcode, &e))?;
                    stats.messages += 1;
                    if resolver.deliver(&m.header, m.data, Some(loaded.buffer), receiver)
                        == Flow::Stop
                    {
                        stats.stopped = true;
                        break;
                    }
                }
                op::SCHEMA => {
                    let s = records::parse_schema(rec.content)
                        .map_err(|e| field_error(&loaded, ctx, rec.pos, rec.opcode, &e))?;
                    resolver.on_schema(&s);
                }
                op::CHANNEL => {
                    let c = records::parse_channel(rec.content)
                        .map_err(|e| field_error(&loaded, ctx, rec.pos, rec.opcode, &e))?;
                    resolver.on_channel(&c);
                }
                _ => {}
            }
        }
        Ok(stats)
    })
}

/// The MessageIndex records of a chunk (`mi_length` bytes at `mi_offset`);
/// `None` when they cannot be read (callers then read the chunk itself).
fn read_message_index_records(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    mi_offset: u64,
    mi_length: u64,
) -> Option<ByteBuf> {
    let mut raw = ByteBuf::default();
    read_range_into(
        file,
        ctx,
        mi_offset,
        mi_length,
        &mut raw,
        "message index records",
    )
    .ok()?;
    Some(raw)
}

/// The non-empty MessageIndex records in `raw`; `None` when one is damaged or
/// names a channel the summary does not know.
fn known_message_indexes<'a>(
    raw: &'a [u8],
    summary: &Summary,
) -> Option<Vec<records::MessageIndex<'a>>> {
    let mut indexes = Vec::new();
    for rec in SliceRecords::new(raw) {
        let rec = rec.ok()?;
        if rec.opcode != op::MESSAGE_INDEX {
            continue;
        }
        let mi = records::parse_message_index(rec.content).ok()?;
        if mi.is_empty() {
            continue;
        }
        if !summary.channels.contains_key(&u64::from(mi.channel_id)) {
            return None;
        }
        indexes.push(mi);
    }
    Some(indexes)
}

/// `(offset in chunk, log_time, channel id)` of every message of a chunk, in file
/// order, from its MessageIndex records alone (read at `mi_offset`, `mi_length`
/// bytes, never decompressed).
///
/// `Ok(None)` when the indexes cannot answer (damaged, or naming a channel the
/// summary does not know); callers then read the chunk itself.
pub(crate) fn message_index_entries(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    mi_offset: u64,
    mi_length: u64,
) -> Result<Option<Vec<(u64, u64, u16)>>> {
    let Some(raw) = read_message_index_records(file, ctx, mi_offset, mi_length) else {
        return Ok(None);
    };
    let Some(indexes) = known_message_indexes(&raw, summary) else {
        return Ok(None);
    };
    let mut entries: Vec<(u64, u64, u16)> = Vec::new();
    for mi in &indexes {
        entries.extend(mi.entries().map(|(t, o)| (o, t, mi.channel_id)));
    }
    entries.sort_by_key(|e| e.0);
    // A message has one offset: duplicated index records must not duplicate it.
    entries.dedup_by_key(|e| e.0);
    Ok(Some(entries))
}

/// Bytes of the smallest Message record (opcode, length, channel id, sequence,
/// log and publish times, no data): distinct messages start at least this far apart.
const MIN_MESSAGE_RECORD: u64 = 1 + 8 + 2 + 4 + 8 + 8;

/// Appends the log time of each of a chunk's messages to `out`, per channel,
/// from its MessageIndex records alone (read at `mi_offset`, `mi_length` bytes),
/// without sorting them into file order or resolving channels message by message.
/// `uncompressed_size` is the chunk's records' size.
///
/// `Ok(false)`, with nothing appended, where [`message_index_entries`] would not
/// answer, and where it would drop or keep entries that this path cannot tell
/// apart: two entries at the same offset (a duplicated index record), or
/// offsets no two messages can have (closer than a Message record, or beyond
/// the chunk). The file-order path then decides.
pub(crate) fn message_index_times(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    mi_offset: u64,
    mi_length: u64,
    uncompressed_size: u64,
    out: &mut model::ChannelTimes,
) -> Result<bool> {
    let Some(raw) = read_message_index_records(file, ctx, mi_offset, mi_length) else {
        return Ok(false);
    };
    let Some(indexes) = known_message_indexes(&raw, summary) else {
        return Ok(false);
    };
    // Each offset / MIN_MESSAGE_RECORD is a different slot for different
    // messages: one bit per slot finds a repeated offset without sorting.
    // (At most 17 MB for the largest chunk read, zeroed lazily.)
    if uncompressed_size > ctx.limits.max_chunk_bytes.min(compression::MAX_CHUNK_SIZE) {
        return Ok(false);
    }
    let slots = uncompressed_size / MIN_MESSAGE_RECORD + 1;
    let mut seen = vec![0u64; slots.div_ceil(64) as usize];
    for mi in &indexes {
        for (_, offset) in mi.entries() {
            if offset >= uncompressed_size {
                return Ok(false);
            }
            let slot = offset / MIN_MESSAGE_RECORD;
            let (word, bit) = ((slot / 64) as usize, 1u64 << (slot % 64));
            if seen[word] & bit != 0 {
                return Ok(false);
            }
            seen[word] |= bit;
        }
    }
    for mi in &indexes {
        out.times_mut(u64::from(mi.channel_id))
            .extend(mi.entries().map(|(t, _)| t));
    }
    Ok(true)
}

/// Whether a chunk's message indexes prove that none of its messages is selected
/// (by time and channel), so the chunk need not be read or decompressed.
/// `Ok(false)` when the indexes cannot tell.
pub(crate) fn indexes_exclude_chunk(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    mi_offset: u64,
    mi_length: u64,
    sel: &Selection,
) -> Result<bool> {
    let Some(entries) = message_index_entries(file, ctx, summary, mi_offset, mi_length)? else {
        return Ok(false);
    };
    let mut resolver = Resolver::new(summary, sel);
    Ok(!entries
        .iter()
        .any(|&(_, t, c)| sel.wants_time(t) && resolver.wants(c)))
}

/// The header-only fast path: delivers `(channel, log_time)` for every message of
/// a chunk from its MessageIndex records, in file order (by offset in the chunk),
/// without reading or decompressing the chunk itself.
///
/// Returns `Ok(None)` when the message indexes cannot answer (damaged, or naming a
/// channel the summary does not know); the caller then reads the chunk instead.
pub(crate) fn read_message_indexes(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    mi_offset: u64,
    mi_length: u64,
    sel: &Selection,
    receiver: &mut dyn MessageReceiver,
) -> Result<Option<ChunkRead>> {
    let Some(entries) = message_index_entries(file, ctx, summary, mi_offset, mi_length)? else {
        return Ok(None);
    };
    let total = entries.len() as u64;
    let mut resolver = Resolver::new(summary, sel);
    let mut stats = ChunkRead {
        messages: total,
        from_index: true,
        ..ChunkRead::default()
    };
    for (_, log_time, channel_id) in entries {
        if !sel.wants_time(log_time) || !resolver.wants(channel_id) {
            continue;
        }
        let channel = resolver.channel(channel_id);
        let flow = receiver.message(Message {
            channel,
            log_time,
            publish_time: None,
            sequence: None,
            data: &[],
            data_buffer: None,
            extra: &[],
        });
        if flow == Flow::Stop {
            stats.stopped = true;
            break;
        }
    }
    Ok(Some(stats))
}

/// What [`scan_chunk`] learned about a chunk's content.
#[derive(Debug, Default)]
pub(crate) struct ChunkScan {
    /// Channel ids of the chunk's messages.
    pub channels: BTreeSet<u16>,
    /// Number of messages.
    pub messages: u64,
    /// Schema records inside.
    pub schemas: Vec<SchemaInfo>,
    /// Channel records inside.
    pub(crate) channel_defs: Vec<ChannelDef>,
}

/// Opens a chunk to learn its Schema/Channel records and its messages' channel ids
/// (used when the summary lacks Channel records the chunks need).
pub(crate) fn scan_chunk(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
    length: u64,
) -> Result<ChunkScan> {
    with_buffers(|raw, out| {
        let loaded = load_chunk(file, ctx, offset, length, raw, out)?;
        let mut scan = ChunkScan::default();
        for rec in SliceRecords::new(loaded.records) {
            let rec = rec.map_err(|e| loaded.error(ctx, e.pos, &e.message))?;
            let field_err = |e: FieldError| field_error(&loaded, ctx, rec.pos, rec.opcode, &e);
            match rec.opcode {
                op::MESSAGE => {
                    let h = records::parse_message_header(rec.content).map_err(field_err)?;
                    scan.messages += 1;
                    scan.channels.insert(h.channel_id);
                }
                op::SCHEMA => {
                    let s = records::parse_schema(rec.content).map_err(field_err)?;
                    if s.id != 0 {
                        scan.schemas.push(SchemaInfo::from_record(&s));
                    }
                }
                op::CHANNEL => {
                    let c = records::parse_channel(rec.content).map_err(field_err)?;
                    scan.channel_defs.push(ChannelDef::from_record(&c));
                }
                _ => {}
            }
        }
        Ok(scan)
    })
}
