//! Reading one chunk record: its header, its decompressed records, and the
//! index-data records that follow it.
//!
//! This module owns everything between "a chunk starts at this offset" and
//! messages handed to a [`MessageReceiver`]: reading the chunk record header
//! (compression, uncompressed size, data length), decompressing into a buffer
//! bounded by the declared size, walking the inner connection and message-data
//! records with a per-read connection map (the shared
//! [`ChannelResolver`](crate::formats::channels::ChannelResolver)), and the index-data
//! shortcuts (skip a chunk whose messages all lie outside the wanted window;
//! answer a header-only read without decompressing).

use std::collections::BTreeMap;

use super::index::{connection_channel, synthetic_channel};
use super::records::{
    self, ConnectionData, FieldError, INDEX_ENTRY_LEN, MAX_HEADER_LEN, op, parse_header,
    slice_record, u32_at,
};
use crate::compression::{self, Codec};
use crate::error::{Error, ErrorContext, Result};
use crate::formats::channels::ChannelResolver;
use crate::formats::chunk_io::{ChunkBuf, LoadedChunk, decompressed, with_buffers};
use crate::io::ReadAt;
use crate::model::{ChunkMeta, ChunkRead, Flow, Message, MessageReceiver, Selection, Summary};
use arrow_buffer::Buffer;

/// Index-data ranges longer than this are not read (the chunk is decompressed instead).
const MAX_INDEX_REGION: u64 = 64 << 20;

/// Bytes read at a chunk's offset in the hope of getting its whole record header.
const HEAD_PROBE: usize = 512;

/// The header of a chunk record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChunkHead {
    /// File offset of the chunk record.
    pub offset: u64,
    /// `header_len`.
    pub header_len: u32,
    /// `data_len` (the compressed size).
    pub data_len: u32,
    /// The `compression` field, as text.
    pub compression: String,
    /// The `size` field (uncompressed size).
    pub size: u32,
}

impl ChunkHead {
    /// File offset of the chunk data.
    pub(crate) fn data_offset(&self) -> u64 {
        self.offset + 8 + u64::from(self.header_len)
    }

    /// File offset just past the chunk record.
    pub(crate) fn end(&self) -> u64 {
        self.data_offset() + u64::from(self.data_len)
    }

    /// Bytes of the whole record (lengths, header, data).
    pub(crate) fn record_len(&self) -> u64 {
        self.end() - self.offset
    }
}

/// A [`Error::Corrupt`] for a header field error in the record at `record`.
pub(crate) fn header_error(ctx: &ErrorContext, record: u64, what: &str, e: &FieldError) -> Error {
    ctx.corrupt(
        record + 4 + e.pos as u64,
        format!("bad {what} record header: {}", e.message),
    )
}

/// Parses a chunk record header from `head` (bytes read at `offset`), given the file size.
fn parse_chunk_head(ctx: &ErrorContext, offset: u64, head: &[u8]) -> Result<ChunkHead> {
    let hl = u32_at(head, 0).unwrap_or(0);
    let hl_usize = hl as usize;
    let header = head.get(4..4 + hl_usize).unwrap_or(&[]);
    let h = parse_header(header).map_err(|e| header_error(ctx, offset, "chunk", &e))?;
    match h.op {
        Some(op::CHUNK) => {}
        Some(other) => {
            return Err(ctx.corrupt(
                offset,
                format!(
                    "expected a chunk record (op 0x05), found op {other:#04x} ({})",
                    op::name(other)
                ),
            ));
        }
        None => return Err(ctx.corrupt(offset, "record header without an op field")),
    }
    let field = |e: FieldError| header_error(ctx, offset, "chunk", &e);
    let compression = records::required(h.compression, "compression", "chunk").map_err(field)?;
    let size = records::required(h.size, "size", "chunk").map_err(field)?;
    let data_len = u32_at(head, 4 + hl_usize).unwrap_or(0);
    Ok(ChunkHead {
        offset,
        header_len: hl,
        data_len,
        compression: String::from_utf8_lossy(compression).into_owned(),
        size,
    })
}

/// Reads the header of the chunk record at `offset` and checks that the whole
/// record lies inside the file.
pub(crate) fn read_chunk_head(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
) -> Result<ChunkHead> {
    let size = file.size();
    let mut head = file.read_upto(offset, HEAD_PROBE).map_err(|e| ctx.io(e))?;
    let Some(hl) = u32_at(&head, 0) else {
        return Err(ctx.truncated(offset, "chunk record header length"));
    };
    if hl > MAX_HEADER_LEN {
        return Err(ctx.corrupt(
            offset,
            format!("implausible record header length {hl} (the limit is {MAX_HEADER_LEN})"),
        ));
    }
    let need = 8 + u64::from(hl);
    if need > head.len() as u64 {
        head = file.read_vec(ctx, offset, need, "chunk record header")?;
    }
    let chunk = parse_chunk_head(ctx, offset, &head)?;
    if chunk.end() > size {
        return Err(ctx.truncated(
            offset,
            format!(
                "chunk record of {} bytes extends past the end of the file",
                chunk.record_len()
            ),
        ));
    }
    Ok(chunk)
}

/// Reads the chunk data of `head` into `raw` and, when compressed, decompresses
/// it into `out` (bounded by the declared size).
pub(crate) fn load_chunk<'b>(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    head: &'b ChunkHead,
    raw: &'b mut ChunkBuf,
    out: &'b mut ChunkBuf,
) -> Result<LoadedChunk<'b>> {
    let codec = Codec::from_name(&head.compression).ok_or_else(|| {
        ctx.unsupported(
            head.offset,
            format!(
                "chunk compression {:?} (supported: none, bz2, lz4)",
                head.compression
            ),
        )
    })?;
    let raw: &'b Buffer = raw.read(
        file,
        ctx,
        head.data_offset(),
        u64::from(head.data_len),
        "chunk data",
    )?;
    if codec == Codec::None {
        // The size field of an uncompressed chunk is informational: the data
        // length is authoritative (rosbag.js does the same).
        if raw.len() as u64 != u64::from(head.size) {
            log::debug!(
                "{}: uncompressed chunk at byte {} declares size {} but holds {} bytes",
                ctx.file,
                head.offset,
                head.size,
                raw.len()
            );
        }
        return Ok(LoadedChunk {
            offset: head.offset,
            records: raw,
            buffer: raw,
            records_file_offset: Some(head.data_offset()),
            compression: &head.compression,
            bytes_decompressed: 0,
        });
    }
    ctx.check_chunk_size(head.offset, u64::from(head.size))?;
    let (out, bytes_decompressed) = decompressed(file, head.offset, out, |out| {
        compression::decompress_shared(codec, raw, raw, u64::from(head.size), out).map_err(|e| {
            ctx.corrupt(
                head.data_offset(),
                format!(
                    "cannot decompress the {} chunk at byte {}: {e}",
                    head.compression, head.offset
                ),
            )
        })
    })?;
    Ok(LoadedChunk {
        offset: head.offset,
        records: out,
        buffer: out,
        records_file_offset: None,
        compression: &head.compression,
        bytes_decompressed,
    })
}

/// A record inside a chunk, as far as the reader cares.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Inner<'a> {
    /// A connection record.
    Connection {
        conn: u32,
        topic: &'a [u8],
        data: &'a [u8],
    },
    /// A message-data record.
    Message {
        conn: u32,
        time: u64,
        data: &'a [u8],
    },
}

/// Calls `f` for every connection and message-data record of `records`, in
/// order; other records are skipped by their lengths. `f` returning
/// [`Flow::Stop`] ends the walk. An error is `(position, message)`.
pub(crate) fn for_each_record<'a>(
    records: &'a [u8],
    mut f: impl FnMut(usize, Inner<'a>) -> Flow,
) -> Result<Flow, (usize, String)> {
    let mut pos = 0;
    while pos < records.len() {
        let rec = slice_record(records, pos).map_err(|e| (e.pos, e.message))?;
        let h = parse_header(rec.header)
            .map_err(|e| (pos + 4 + e.pos, format!("bad record header: {}", e.message)))?;
        let item = match h.op {
            Some(op::MESSAGE_DATA) => match (h.conn, h.time) {
                (Some(conn), Some(time)) => Some(Inner::Message {
                    conn,
                    time,
                    data: rec.data,
                }),
                _ => {
                    return Err((
                        pos,
                        "message data record without a conn or time field".into(),
                    ));
                }
            },
            Some(op::CONNECTION) => match h.conn {
                Some(conn) => Some(Inner::Connection {
                    conn,
                    topic: h.topic.unwrap_or(b""),
                    data: rec.data,
                }),
                None => return Err((pos, "connection record without a conn field".into())),
            },
            Some(_) => None,
            None => return Err((pos, "record header without an op field".into())),
        };
        if let Some(item) = item
            && f(pos, item) == Flow::Stop
        {
            return Ok(Flow::Stop);
        }
        pos = rec.end;
    }
    Ok(Flow::Continue)
}

/// The channel resolver of one chunk read, with the bag's stand-in channel for
/// a connection id that nothing defines.
fn resolver<'s>(summary: &'s Summary, sel: &'s Selection) -> ChannelResolver<'s> {
    ChannelResolver::new(summary, sel, |id| synthetic_channel(id as u32))
}

/// A connection record met inside a chunk defines its connection (unless the
/// summary or an earlier record already did).
fn on_connection(resolver: &mut ChannelResolver<'_>, conn: u32, topic: &[u8], data: &[u8]) {
    if resolver.is_defined(u64::from(conn)) {
        return;
    }
    if let Ok(parsed) = records::parse_connection_data(data) {
        resolver.define(connection_channel(
            conn,
            &String::from_utf8_lossy(topic),
            &parsed,
        ));
    }
}

/// Delivers the messages of a loaded chunk to `receiver`.
fn deliver(
    ctx: &ErrorContext,
    loaded: &LoadedChunk<'_>,
    summary: &Summary,
    sel: &Selection,
    receiver: &mut dyn MessageReceiver,
) -> Result<ChunkRead> {
    let mut read = ChunkRead {
        bytes_decompressed: loaded.bytes_decompressed,
        ..ChunkRead::default()
    };
    let mut resolver = resolver(summary, sel);
    let walked = for_each_record(loaded.records, |_, item| match item {
        Inner::Connection { conn, topic, data } => {
            on_connection(&mut resolver, conn, topic, data);
            Flow::Continue
        }
        Inner::Message { conn, time, data } => {
            read.messages += 1;
            if !sel.wants_time(time) || !resolver.wants(u64::from(conn)) {
                return Flow::Continue;
            }
            let msg = Message {
                channel: resolver.channel(u64::from(conn)),
                log_time: time,
                publish_time: None,
                sequence: None,
                data: if sel.payload { data } else { &[] },
                data_buffer: Some(loaded.buffer),
                extra: &[],
            };
            receiver.message(msg)
        }
    });
    match walked {
        Ok(flow) => {
            read.stopped = flow == Flow::Stop;
            Ok(read)
        }
        Err((pos, message)) => Err(loaded.error(ctx, pos, message)),
    }
}

/// One index-data entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// Offset of the message record in the uncompressed chunk data.
    pub offset: u32,
    /// Connection id.
    pub conn: u32,
    /// Message time (ns).
    pub time: u64,
}

/// Reads the index-data records in `[start, end)` (those right after a chunk).
///
/// Returns `None` when they cannot vouch for the whole chunk: unreadable, not
/// version 1, or not adding up to `expected` messages on the connections
/// `expected_conns` (from the chunk info). The index is only a shortcut, so
/// every doubt means "decompress the chunk instead".
pub(crate) fn read_index_entries(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    start: u64,
    end: u64,
    expected: u64,
    expected_conns: Option<&[u64]>,
) -> Option<Vec<IndexEntry>> {
    let len = end.checked_sub(start)?;
    if len == 0 || len > MAX_INDEX_REGION {
        return None;
    }
    let raw = file.read_vec(ctx, start, len, "index data").ok()?;
    let mut entries = Vec::with_capacity(usize::try_from(expected).ok()?.min(1 << 20));
    let mut conns: Vec<u64> = Vec::new();
    let mut pos = 0;
    while pos < raw.len() {
        let Ok(rec) = slice_record(&raw, pos) else {
            break;
        };
        let h = parse_header(rec.header).ok()?;
        if h.op != Some(op::INDEX_DATA) {
            break;
        }
        if h.ver != Some(1) {
            return None;
        }
        let (conn, count) = (h.conn?, h.count?);
        if u64::from(count) * INDEX_ENTRY_LEN != rec.data.len() as u64 {
            return None;
        }
        if count > 0 {
            conns.push(u64::from(conn));
        }
        entries.extend(
            records::index_entries(rec.data).map(|(time, offset)| IndexEntry {
                offset,
                conn,
                time,
            }),
        );
        if entries.len() as u64 > expected {
            return None;
        }
        pos = rec.end;
    }
    if entries.len() as u64 != expected {
        return None;
    }
    if let Some(want) = expected_conns {
        conns.sort_unstable();
        conns.dedup();
        let mut want = want.to_vec();
        want.sort_unstable();
        want.dedup();
        if conns != want {
            return None;
        }
    }
    Some(entries)
}

/// Reads one chunk for [`crate::formats::FormatReader::read_chunk`].
///
/// `index_end` bounds the index-data records after the chunk (`None`: unknown).
pub(crate) fn read(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    chunk: &ChunkMeta,
    index_end: Option<u64>,
    sel: &Selection,
    receiver: &mut dyn MessageReceiver,
) -> Result<ChunkRead> {
    let head = read_chunk_head(file, ctx, chunk.offset)?;
    let header_only = !sel.payload && !sel.full_header;
    let partial = sel.time.is_some_and(|(lo, hi)| {
        chunk.start_time.is_none_or(|s| s < lo) || chunk.end_time.is_none_or(|e| e > hi)
    });
    if (header_only || partial)
        && let (Some(end), Some(total)) = (index_end, chunk.message_count)
        && end > head.end()
        && let Some(mut entries) = read_index_entries(
            file,
            ctx,
            head.end(),
            end,
            total,
            chunk.channels.as_deref(),
        )
        // Only connections the summary describes: a connection defined inside
        // the chunk alone needs the chunk's records for its topic.
        && entries
            .iter()
            .all(|e| summary.channels.contains_key(&u64::from(e.conn)))
    {
        let mut resolver = resolver(summary, sel);
        if header_only {
            // File order inside the chunk, as a full read would deliver.
            entries.sort_by_key(|e| e.offset);
            let mut read = ChunkRead {
                messages: entries.len() as u64,
                from_index: true,
                ..ChunkRead::default()
            };
            for e in &entries {
                if !sel.wants_time(e.time) || !resolver.wants(u64::from(e.conn)) {
                    continue;
                }
                let msg = Message {
                    channel: resolver.channel(u64::from(e.conn)),
                    log_time: e.time,
                    publish_time: None,
                    sequence: None,
                    extra: &[],
                    data: &[],
                    data_buffer: None,
                };
                if receiver.message(msg) == Flow::Stop {
                    read.stopped = true;
                    break;
                }
            }
            return Ok(read);
        }
        if !entries
            .iter()
            .any(|e| sel.wants_time(e.time) && resolver.wants(u64::from(e.conn)))
        {
            return Ok(ChunkRead {
                skipped: true,
                ..ChunkRead::default()
            });
        }
    }
    with_buffers(|raw, out| {
        let loaded = load_chunk(file, ctx, &head, raw, out)?;
        deliver(ctx, &loaded, summary, sel, receiver)
    })
}

/// What a full pass over one chunk's records found (for the summary).
#[derive(Debug, Default)]
pub(crate) struct ChunkScan {
    /// The chunk header.
    pub head: Option<ChunkHead>,
    /// Connection records, in order.
    pub connections: Vec<(u32, String, ConnectionData)>,
    /// Messages per connection.
    pub counts: BTreeMap<u32, u64>,
    /// Earliest and latest message time.
    pub start: Option<u64>,
    /// Latest message time.
    pub end: Option<u64>,
}

/// Decompresses the chunk at `offset` and lists its connections and message counts.
pub(crate) fn scan_chunk(file: &dyn ReadAt, ctx: &ErrorContext, offset: u64) -> Result<ChunkScan> {
    let head = read_chunk_head(file, ctx, offset)?;
    let mut scan = with_buffers(|raw, out| -> Result<ChunkScan> {
        let loaded = load_chunk(file, ctx, &head, raw, out)?;
        let mut scan = ChunkScan::default();
        let walked = for_each_record(loaded.records, |_, item| {
            match item {
                Inner::Connection { conn, topic, data } => {
                    if let Ok(c) = records::parse_connection_data(data) {
                        scan.connections.push((
                            conn,
                            String::from_utf8_lossy(topic).into_owned(),
                            c,
                        ));
                    }
                }
                Inner::Message { conn, time, .. } => {
                    *scan.counts.entry(conn).or_default() += 1;
                    scan.start = Some(scan.start.map_or(time, |s| s.min(time)));
                    scan.end = Some(scan.end.map_or(time, |e| e.max(time)));
                }
            }
            Flow::Continue
        });
        walked.map_err(|(pos, message)| loaded.error(ctx, pos, message))?;
        Ok(scan)
    })?;
    scan.head = Some(head);
    Ok(scan)
}
