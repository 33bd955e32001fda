//! Top-level records read in file order with bounded memory, and the recovery
//! walk that lists a bag's chunks without its index.
//!
//! The walk starts at the first record after the bag header and reads only
//! record headers, skipping chunk data by its length (the `SequentialReader`
//! shrinks its read-ahead after each skip, so a walk over large chunks reads
//! little more than their headers). It collects:
//!
//! - every chunk record (offset, length, compression, sizes);
//! - the index-data records after each chunk: per-connection counts and time
//!   bounds of the chunk, *trusted* only once another top-level record follows
//!   them (the writer moved on, so the set is complete); the index data of the
//!   last chunk of a file that just ends is not trusted;
//! - connection records at top level (the index section);
//! - whether an index section (connection or chunk-info records) was seen.
//!
//! The first incomplete or malformed record ends the walk; it is reported as
//! damage and everything before it stays listed.

use std::collections::BTreeMap;

use super::chunk::{ChunkHead, header_error};
use super::index::connection_channel;
use super::records::{
    self, INDEX_ENTRY_LEN, MAX_CONNECTION_DATA_LEN, MAX_HEADER_LEN, op, parse_header, u32_at,
};
use crate::error::{Error, ErrorContext, Result};
use crate::io::{ReadAt, SequentialReader};
use crate::model;

/// A top-level record whose header has been read (its data not yet).
#[derive(Debug, Clone)]
pub(crate) struct TopRecord {
    /// File offset of the record.
    pub offset: u64,
    /// The header bytes.
    pub header: Vec<u8>,
    /// `data_len`.
    pub data_len: u32,
}

impl TopRecord {
    /// File offset of the record data.
    pub(crate) fn data_offset(&self) -> u64 {
        self.offset + 8 + self.header.len() as u64
    }

    /// File offset just past the record.
    pub(crate) fn end(&self) -> u64 {
        self.data_offset() + u64::from(self.data_len)
    }
}

/// Reads the next record's lengths and header; the reader is left at its data.
/// `Ok(None)` when the file ends exactly here. The record's data is checked to
/// lie inside the file.
pub(crate) fn next_record(
    seq: &mut SequentialReader<'_>,
    ctx: &ErrorContext,
) -> Result<Option<TopRecord>> {
    let offset = seq.position();
    if seq.remaining() == 0 {
        return Ok(None);
    }
    let io = |e| ctx.io(e);
    let Some(hl) = seq.take(4).map_err(io)?.and_then(|b| u32_at(b, 0)) else {
        return Err(ctx.truncated(offset, "record header length"));
    };
    if hl > MAX_HEADER_LEN {
        return Err(ctx.corrupt(
            offset,
            format!("implausible record header length {hl} (the limit is {MAX_HEADER_LEN})"),
        ));
    }
    let header = match seq.take(hl as usize).map_err(io)? {
        Some(h) => h.to_vec(),
        None => {
            return Err(ctx.truncated(offset, format!("record header of {hl} bytes")));
        }
    };
    let Some(data_len) = seq.take(4).map_err(io)?.and_then(|b| u32_at(b, 0)) else {
        return Err(ctx.truncated(offset, "record data length"));
    };
    let rec = TopRecord {
        offset,
        header,
        data_len,
    };
    if rec.end() > ctx.file_size {
        let op = parse_header(&rec.header)
            .ok()
            .and_then(|h| h.op)
            .map_or("record", op::name);
        return Err(ctx.truncated(
            offset,
            format!(
                "{op} record of {} bytes extends past the end of the file",
                rec.end() - offset
            ),
        ));
    }
    Ok(Some(rec))
}

/// What the index-data records after a chunk said.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChunkIndexInfo {
    /// Messages per connection.
    pub counts: BTreeMap<u32, u64>,
    /// Earliest message time.
    pub start: Option<u64>,
    /// Latest message time.
    pub end: Option<u64>,
    /// Index-data records seen.
    pub records: usize,
    /// Whether every record was well-formed.
    pub ok: bool,
}

/// A chunk found by the walk.
#[derive(Debug, Clone)]
pub(crate) struct WalkedChunk {
    /// The chunk record header.
    pub head: ChunkHead,
    /// The index data after it, when complete and well-formed.
    pub index: Option<ChunkIndexInfo>,
    /// End of the run of index-data records after the chunk.
    pub(crate) index_end: u64,
}

/// Everything the walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Chunks in file order.
    pub chunks: Vec<WalkedChunk>,
    /// Top-level connection records by id (first wins).
    pub connections: BTreeMap<u32, model::Channel>,
    /// Whether connection or chunk-info records were seen at top level.
    pub(crate) index_seen: bool,
    /// What ended the walk early.
    pub damage: Option<Error>,
}

/// Walks the top-level records from `start` to the end of the file.
pub(crate) fn walk(file: &dyn ReadAt, ctx: &ErrorContext, start: u64) -> Walked {
    let mut w = Walked::default();
    let mut seq = SequentialReader::new(file, start);
    // Index data of the last chunk, while index-data records may still follow it.
    let mut pending: Option<ChunkIndexInfo> = None;
    if let Err(e) = walk_records(&mut seq, ctx, &mut w, &mut pending) {
        w.damage = Some(e);
    }
    w
}

fn walk_records(
    seq: &mut SequentialReader<'_>,
    ctx: &ErrorContext,
    w: &mut Walked,
    pending: &mut Option<ChunkIndexInfo>,
) -> Result<()> {
    while let Some(rec) = next_record(seq, ctx)? {
        let h = parse_header(&rec.header)
            .map_err(|e| header_error(ctx, rec.offset, "top-level", &e))?;
        let Some(opcode) = h.op else {
            return Err(ctx.corrupt(rec.offset, "record header without an op field"));
        };
        if opcode != op::INDEX_DATA
            && let Some(info) = pending.take()
            && let Some(last) = w.chunks.last_mut()
            && info.ok
            && info.records > 0
        {
            last.index = Some(info);
        }
        match opcode {
            op::CHUNK => {
                let field = |e| header_error(ctx, rec.offset, "chunk", &e);
                let compression =
                    records::required(h.compression, "compression", "chunk").map_err(field)?;
                let size = records::required(h.size, "size", "chunk").map_err(field)?;
                let head = ChunkHead {
                    offset: rec.offset,
                    header_len: rec.header.len() as u32,
                    data_len: rec.data_len,
                    compression: String::from_utf8_lossy(compression).into_owned(),
                    size,
                };
                w.chunks.push(WalkedChunk {
                    index_end: rec.end(),
                    head,
                    index: None,
                });
                *pending = Some(ChunkIndexInfo {
                    ok: true,
                    ..ChunkIndexInfo::default()
                });
                seq.advance(u64::from(rec.data_len));
            }
            op::INDEX_DATA => {
                match (pending.as_mut(), w.chunks.last_mut()) {
                    (Some(info), Some(last)) => {
                        read_index_data(seq, ctx, &rec, &h, info)?;
                        last.index_end = rec.end();
                    }
                    // Index data not right after a chunk: nothing to attach it to.
                    _ => seq.advance(u64::from(rec.data_len)),
                }
            }
            op::CONNECTION => {
                w.index_seen = true;
                let conn = h.conn.ok_or_else(|| {
                    ctx.corrupt(rec.offset, "connection record without a conn field")
                })?;
                if rec.data_len > MAX_CONNECTION_DATA_LEN {
                    return Err(ctx.corrupt(
                        rec.offset,
                        format!(
                            "implausible connection data length {} (the limit is {MAX_CONNECTION_DATA_LEN})",
                            rec.data_len
                        ),
                    ));
                }
                let data = seq
                    .take(rec.data_len as usize)
                    .map_err(|e| ctx.io(e))?
                    .ok_or_else(|| ctx.truncated(rec.offset, "connection record"))?;
                let parsed = records::parse_connection_data(data).map_err(|e| {
                    ctx.corrupt(
                        rec.data_offset() + e.pos as u64,
                        format!("bad connection record data: {}", e.message),
                    )
                })?;
                let topic = String::from_utf8_lossy(h.topic.unwrap_or(b"")).into_owned();
                w.connections
                    .entry(conn)
                    .or_insert_with(|| connection_channel(conn, &topic, &parsed));
            }
            op::CHUNK_INFO => {
                w.index_seen = true;
                seq.advance(u64::from(rec.data_len));
            }
            _ => seq.advance(u64::from(rec.data_len)),
        }
    }
    Ok(())
}

/// Reads the entries of an index-data record into `info` without keeping them.
fn read_index_data(
    seq: &mut SequentialReader<'_>,
    ctx: &ErrorContext,
    rec: &TopRecord,
    h: &records::Header<'_>,
    info: &mut ChunkIndexInfo,
) -> Result<()> {
    let well_formed = h.ver == Some(1)
        && h.conn.is_some()
        && h.count
            .is_some_and(|c| u64::from(c) * INDEX_ENTRY_LEN == u64::from(rec.data_len));
    if !well_formed {
        info.ok = false;
        seq.advance(u64::from(rec.data_len));
        return Ok(());
    }
    let (conn, count) = (h.conn.unwrap_or(0), h.count.unwrap_or(0));
    info.records += 1;
    if count > 0 {
        *info.counts.entry(conn).or_default() += u64::from(count);
    }
    // `next_record` checked the data lies inside the file, so every take succeeds.
    for _ in 0..count {
        let Some(e) = seq.take(INDEX_ENTRY_LEN as usize).map_err(|e| ctx.io(e))? else {
            info.ok = false;
            break;
        };
        let t = records::time_ns(u32_at(e, 0).unwrap_or(0), u32_at(e, 4).unwrap_or(0));
        info.start = Some(info.start.map_or(t, |s| s.min(t)));
        info.end = Some(info.end.map_or(t, |x| x.max(t)));
    }
    Ok(())
}
