//! Building a [`Summary`] for a bag: bag header, index section, fallbacks.
//!
//! 1. **Bag header** (op 3, right after the magic): `index_pos`, `conn_count`,
//!    `chunk_count`. Its data (padding) is skipped by its length, never assumed
//!    to be 4096 bytes. Encrypted bags (`encryptor`) are refused.
//! 2. **Indexed path.** At `index_pos`, exactly `conn_count` connection records
//!    and `chunk_count` chunk-info records (in any order) are read with bounded
//!    memory. Every chunk position must lie between the bag header and the
//!    index, without duplicates. Chunk infos give each chunk's time bounds
//!    (inclusive) and per-connection counts, so topic statistics and pruning
//!    need no chunk. The index-data records scattered after the chunks are *not*
//!    read here (that is what makes ROS tools slow to open large bags).
//!    Chunk record headers (compression, exact sizes) are read when the bag has
//!    at most [`PROBE_LIMIT`] chunks (one small read each); beyond that only the
//!    first one is, the others are presumed to use its compression and their
//!    `length` is the distance to the next chunk (chunk + its index data).
//! 3. **Fallback walk** when there is no usable index: `index_pos` 0 (a
//!    recording that was never closed), an index outside the file, or index
//!    records that do not parse or do not match the data. See [`super::walk`].
//!    A truncated file (the walk stopped at an incomplete record, or the index
//!    the header promises is cut off) is reported in [`Summary::damage`]; an
//!    index that is merely garbage is replaced by the walk and only noted in the
//!    `index` property.
//! 4. **Connection discovery.** Chunks that use connection ids defined by no
//!    top-level connection record (always the case in an unindexed bag, whose
//!    connection records live inside the chunks), and walked chunks whose index
//!    data could not be trusted, are decompressed once to read their connection
//!    records and count their messages exactly.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::chunk::{ChunkHead, header_error, read_chunk_head, scan_chunk};
use super::index::{BagIndex, ChunkDetail, connection_channel, synthetic_channel};
use super::records::{
    self, CHUNK_INFO_ENTRY_LEN, MAGIC, MAX_CONNECTION_DATA_LEN, op, parse_header, u32_at,
};
use super::walk::{self, next_record};
use crate::error::{Error, ErrorContext, Result, hex_head};
use crate::io::{ReadAt, SequentialReader};
use crate::model::{ChunkMeta, Summary};

/// Bags with at most this many chunks have every chunk record header read
/// when the summary is built (one small read each).
pub const PROBE_LIMIT: usize = 1024;

/// Bytes read at the bag header in the hope of getting all of its header.
const HEADER_PROBE: usize = 4096;

/// The bag header record.
#[derive(Debug, Clone)]
struct BagHeader {
    index_pos: u64,
    conn_count: u32,
    chunk_count: u32,
    /// Offset of the first record after the bag header.
    first_record: u64,
}

/// Why the index could not be used.
#[derive(Debug)]
struct Fallback {
    reason: String,
    error: Option<Error>,
}

impl Fallback {
    fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            error: None,
        }
    }

    fn with_error(reason: impl Into<String>, error: Error) -> Self {
        Self {
            reason: reason.into(),
            error: Some(error),
        }
    }
}

/// One chunk while the summary is assembled.
#[derive(Debug)]
struct Entry {
    meta: ChunkMeta,
    detail: ChunkDetail,
    /// Messages per connection, when known.
    counts: Option<BTreeMap<u32, u64>>,
}

/// What both paths hand to [`finish`].
#[derive(Debug, Default)]
struct Parts {
    entries: Vec<Entry>,
    connections: BTreeMap<u32, crate::model::Channel>,
    indexed: bool,
    note: String,
    presumed: usize,
}

/// Builds the summary of a bag (see the module documentation).
/// Chunks it decompresses (a recovery scan) are bounded by `limits`.
pub(crate) fn read_summary(file: &dyn ReadAt, limits: &crate::limits::Limits) -> Result<Summary> {
    let size = file.size();
    let ctx = ErrorContext::new(file.name(), "bag", size).with_limits(*limits);
    let head = file.read_upto(0, MAGIC.len()).map_err(|e| ctx.io(e))?;
    if size == 0 {
        return Err(ctx.truncated(0, "empty file (0 bytes): no ROS bag magic"));
    }
    if head.as_slice() != MAGIC {
        if MAGIC.starts_with(&head) {
            return Err(ctx.truncated(
                0,
                format!("file of {size} bytes is too short for the ROS bag magic"),
            ));
        }
        if head.starts_with(b"#ROS") {
            let line = file.read_upto(0, 32).map_err(|e| ctx.io(e))?;
            let line = line.split(|&b| b == b'\n').next().unwrap_or(&[]);
            return Err(ctx.unsupported(
                0,
                format!(
                    "bag format {:?}: only ROS bag 2.0 (#ROSBAG V2.0) is supported",
                    String::from_utf8_lossy(line)
                ),
            ));
        }
        return Err(ctx.corrupt(
            0,
            format!(
                "not a ROS bag: expected {:?}, found {}",
                String::from_utf8_lossy(MAGIC),
                hex_head(&head)
            ),
        ));
    }
    let header = read_bag_header(file, &ctx)?;
    let mut properties = vec![
        ("version".to_string(), "2.0".to_string()),
        ("index_pos".to_string(), header.index_pos.to_string()),
        ("conn_count".to_string(), header.conn_count.to_string()),
        ("chunk_count".to_string(), header.chunk_count.to_string()),
    ];
    if header.first_record > size {
        // The bag header's padding is cut off: nothing can follow.
        let damage = ctx.truncated(
            MAGIC.len() as u64,
            format!(
                "bag header record of {} bytes extends past the end of the file",
                header.first_record - MAGIC.len() as u64
            ),
        );
        properties.push((
            "index".to_string(),
            "none: the file ends inside the bag header".into(),
        ));
        let mut s = empty_summary(file, properties);
        s.damage = Some(damage);
        return Ok(s);
    }
    let (parts, damage) = match indexed(file, &ctx, &header) {
        Ok(parts) => (parts, None),
        Err(fallback) => walked(file, &ctx, &header, fallback),
    };
    let mut summary = finish(file, &ctx, parts, properties);
    summary.damage = damage;
    Ok(summary)
}

fn empty_summary(file: &dyn ReadAt, properties: Vec<(String, String)>) -> Summary {
    Summary {
        format: "bag",
        file_size: file.size(),
        properties,
        private: Some(Arc::new(BagIndex::default())),
        ..Summary::default()
    }
}

/// Reads the bag header record at byte 13.
fn read_bag_header(file: &dyn ReadAt, ctx: &ErrorContext) -> Result<BagHeader> {
    let at = MAGIC.len() as u64;
    let mut buf = file.read_upto(at, HEADER_PROBE).map_err(|e| ctx.io(e))?;
    let Some(hl) = u32_at(&buf, 0) else {
        return Err(ctx.truncated(at, "bag header record length"));
    };
    if hl > records::MAX_HEADER_LEN {
        return Err(ctx.corrupt(at, format!("implausible bag header length {hl}")));
    }
    let need = 8 + u64::from(hl);
    if need > buf.len() as u64 {
        buf = file.read_vec(ctx, at, need, "bag header record")?;
    }
    let h = parse_header(&buf[4..4 + hl as usize])
        .map_err(|e| header_error(ctx, at, "bag header", &e))?;
    if h.op != Some(op::BAG_HEADER) {
        return Err(ctx.corrupt(
            at,
            format!(
                "expected the bag header record (op 0x03) after the magic, found op {}",
                h.op.map_or("none".to_string(), |o| format!(
                    "{o:#04x} ({})",
                    op::name(o)
                ))
            ),
        ));
    }
    if let Some(enc) = h.encryptor
        && !enc.is_empty()
    {
        return Err(ctx.unsupported(
            at,
            format!(
                "encrypted bag (encryptor {:?}): decrypt it with `rosbag decrypt` first",
                String::from_utf8_lossy(enc)
            ),
        ));
    }
    let field = |e| header_error(ctx, at, "bag header", &e);
    let index_pos = records::required(h.index_pos, "index_pos", "bag header").map_err(field)?;
    let conn_count = records::required(h.conn_count, "conn_count", "bag header").map_err(field)?;
    let chunk_count =
        records::required(h.chunk_count, "chunk_count", "bag header").map_err(field)?;
    let data_len = u32_at(&buf, 4 + hl as usize).unwrap_or(0);
    Ok(BagHeader {
        index_pos,
        conn_count,
        chunk_count,
        first_record: at + need + u64::from(data_len),
    })
}

/// A chunk-info record, owned.
#[derive(Debug, Clone)]
struct ChunkInfo {
    chunk_pos: u64,
    start: u64,
    end: u64,
    counts: BTreeMap<u32, u64>,
}

/// The indexed path; `Err` says why the file must be walked instead.
fn indexed(file: &dyn ReadAt, ctx: &ErrorContext, hdr: &BagHeader) -> Result<Parts, Fallback> {
    let size = file.size();
    if hdr.index_pos == 0 {
        return Err(Fallback::new(
            "index_pos is 0: the bag was never closed (unindexed)",
        ));
    }
    if hdr.index_pos < hdr.first_record {
        return Err(Fallback::new(format!(
            "index_pos {} points inside the bag header",
            hdr.index_pos
        )));
    }
    if hdr.index_pos > size {
        return Err(Fallback::with_error(
            "the index lies past the end of the file",
            ctx.truncated(
                hdr.index_pos,
                format!(
                    "the bag header places the index section at byte {}, past the end of the file",
                    hdr.index_pos
                ),
            ),
        ));
    }
    let total = u64::from(hdr.conn_count) + u64::from(hdr.chunk_count);
    let mut seq = SequentialReader::new(file, hdr.index_pos);
    let mut connections = BTreeMap::new();
    let mut infos: Vec<ChunkInfo> = Vec::new();
    for n in 0..total {
        let bad = |e| Fallback::with_error("the index section cannot be read", e);
        let rec = match next_record(&mut seq, ctx).map_err(bad)? {
            Some(r) => r,
            None => {
                return Err(bad(ctx.truncated(
                    seq.position(),
                    format!(
                        "the index section ends after {n} of its {total} records \
                         ({} connections and {} chunk infos announced by the bag header)",
                        hdr.conn_count, hdr.chunk_count
                    ),
                )));
            }
        };
        let h = parse_header(&rec.header)
            .map_err(|e| bad(header_error(ctx, rec.offset, "index section", &e)))?;
        let corrupt = |msg: String| bad(ctx.corrupt(rec.offset, msg));
        match h.op {
            Some(op::CONNECTION) => {
                let conn = h
                    .conn
                    .ok_or_else(|| corrupt("connection record without a conn field".into()))?;
                if rec.data_len > MAX_CONNECTION_DATA_LEN {
                    return Err(corrupt(format!(
                        "implausible connection data length {}",
                        rec.data_len
                    )));
                }
                let data = seq
                    .take(rec.data_len as usize)
                    .map_err(|e| bad(ctx.io(e)))?
                    .ok_or_else(|| bad(ctx.truncated(rec.offset, "connection record")))?;
                let parsed = records::parse_connection_data(data)
                    .map_err(|e| corrupt(format!("bad connection data: {}", e.message)))?;
                let topic = String::from_utf8_lossy(h.topic.unwrap_or(b"")).into_owned();
                connections
                    .entry(conn)
                    .or_insert_with(|| connection_channel(conn, &topic, &parsed));
            }
            Some(op::CHUNK_INFO) => {
                if h.ver != Some(1) {
                    return Err(corrupt(format!(
                        "chunk info version {:?} (only 1 exists in bag 2.0)",
                        h.ver
                    )));
                }
                let (Some(chunk_pos), Some(start), Some(end), Some(count)) =
                    (h.chunk_pos, h.start_time, h.end_time, h.count)
                else {
                    return Err(corrupt("chunk info record with missing fields".into()));
                };
                if u64::from(count) * CHUNK_INFO_ENTRY_LEN != u64::from(rec.data_len) {
                    return Err(corrupt(format!(
                        "chunk info with {count} connections has {} data bytes",
                        rec.data_len
                    )));
                }
                let data = seq
                    .take(rec.data_len as usize)
                    .map_err(|e| bad(ctx.io(e)))?
                    .ok_or_else(|| bad(ctx.truncated(rec.offset, "chunk info record")))?;
                let mut counts = BTreeMap::new();
                for (c, k) in records::chunk_info_entries(data) {
                    *counts.entry(c).or_insert(0u64) += u64::from(k);
                }
                infos.push(ChunkInfo {
                    chunk_pos,
                    start,
                    end,
                    counts,
                });
            }
            other => {
                return Err(corrupt(format!(
                    "expected a connection or chunk info record in the index section, found op {}",
                    other.map_or("none".to_string(), |o| format!(
                        "{o:#04x} ({})",
                        op::name(o)
                    ))
                )));
            }
        }
    }
    infos.sort_by_key(|i| i.chunk_pos);
    let mut cursor = hdr.first_record;
    for i in &infos {
        // A record needs at least its two length fields.
        if i.chunk_pos < cursor || i.chunk_pos.saturating_add(8) > hdr.index_pos {
            return Err(Fallback::new(format!(
                "the chunk index does not fit the file (a chunk at byte {})",
                i.chunk_pos
            )));
        }
        cursor = i.chunk_pos + 8;
    }
    let limits: Vec<u64> = infos
        .iter()
        .skip(1)
        .map(|i| i.chunk_pos)
        .chain(std::iter::once(hdr.index_pos))
        .collect();
    let probe_all = infos.len() <= PROBE_LIMIT;
    let mut presumed_codec: Option<String> = None;
    let mut entries = Vec::with_capacity(infos.len());
    let mut presumed = 0;
    for (n, (info, &limit)) in infos.iter().zip(&limits).enumerate() {
        let head: Option<ChunkHead> = if probe_all || n == 0 {
            let head = read_chunk_head(file, ctx, info.chunk_pos)
                .map_err(|e| Fallback::with_error("the chunk index does not match the data", e))?;
            if head.end() > limit {
                return Err(Fallback::new(format!(
                    "the chunk record at byte {} overlaps the next chunk or the index",
                    info.chunk_pos
                )));
            }
            presumed_codec.get_or_insert_with(|| codec_name(&head.compression));
            Some(head)
        } else {
            None
        };
        let message_count: u64 = info.counts.values().sum();
        let channels: Vec<u64> = info
            .counts
            .iter()
            .filter(|&(_, &k)| k > 0)
            .map(|(&c, _)| u64::from(c))
            .collect();
        let span = limit - info.chunk_pos;
        let meta = ChunkMeta {
            index: 0,
            offset: info.chunk_pos,
            length: head.as_ref().map_or(span, ChunkHead::record_len),
            start_time: (message_count > 0).then_some(info.start),
            end_time: (message_count > 0).then_some(info.end),
            message_count: Some(message_count),
            channels: Some(channels),
            compression: match &head {
                Some(h) => codec_name(&h.compression),
                None => {
                    presumed += 1;
                    presumed_codec.clone().unwrap_or_default()
                }
            },
            compressed_size: head.as_ref().map_or(span, |h| u64::from(h.data_len)),
            uncompressed_size: head.as_ref().map(|h| u64::from(h.size)),
        };
        entries.push(Entry {
            meta,
            detail: ChunkDetail { index_end: limit },
            counts: Some(info.counts.clone()),
        });
    }
    Ok(Parts {
        entries,
        connections,
        indexed: true,
        note: format!(
            "{} connection and {} chunk info records at byte {}",
            hdr.conn_count, hdr.chunk_count, hdr.index_pos
        ),
        presumed,
    })
}

/// The model's compression name: `""` for none.
fn codec_name(compression: &str) -> String {
    if compression == "none" {
        String::new()
    } else {
        compression.to_string()
    }
}

/// The fallback: walk the whole file. Returns the parts and the damage.
fn walked(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    hdr: &BagHeader,
    fallback: Fallback,
) -> (Parts, Option<Error>) {
    let w = walk::walk(file, ctx, hdr.first_record);
    let note = match &fallback.error {
        Some(e) => format!("rebuilt by walking the file ({}: {e})", fallback.reason),
        None => format!("rebuilt by walking the file ({})", fallback.reason),
    };
    // Damage is what could not be read: where the walk stopped, or else an
    // index cut off by the end of the file (the file is truncated even if every
    // chunk survived).
    let damage = w.damage.or(match fallback.error {
        Some(e @ Error::Truncated { .. }) => Some(e),
        _ => None,
    });
    let entries = w
        .chunks
        .into_iter()
        .map(|c| {
            let (start_time, end_time, message_count, channels, counts) = match c.index {
                Some(info) => {
                    let n: u64 = info.counts.values().sum();
                    (
                        info.start,
                        info.end,
                        Some(n),
                        Some(info.counts.keys().map(|&k| u64::from(k)).collect()),
                        Some(info.counts),
                    )
                }
                None => (None, None, None, None, None),
            };
            Entry {
                meta: ChunkMeta {
                    index: 0,
                    offset: c.head.offset,
                    length: c.head.record_len(),
                    start_time,
                    end_time,
                    message_count,
                    channels,
                    compression: codec_name(&c.head.compression),
                    compressed_size: u64::from(c.head.data_len),
                    uncompressed_size: Some(u64::from(c.head.size)),
                },
                detail: ChunkDetail {
                    index_end: c.index_end,
                },
                counts,
            }
        })
        .collect();
    let parts = Parts {
        entries,
        connections: w.connections,
        indexed: false,
        note,
        presumed: 0,
    };
    (parts, damage)
}

/// Common assembly: connection discovery, channels, statistics, properties.
fn finish(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    mut parts: Parts,
    mut properties: Vec<(String, String)>,
) -> Summary {
    discover(file, ctx, &mut parts);
    let mut channels: BTreeMap<u64, crate::model::Channel> = parts
        .connections
        .iter()
        .map(|(&id, ch)| (u64::from(id), ch.clone()))
        .collect();
    for e in &parts.entries {
        for &id in e.counts.iter().flat_map(|c| c.keys()) {
            channels
                .entry(u64::from(id))
                .or_insert_with(|| synthetic_channel(id));
        }
    }

    // Statistics, exact or absent.
    let all_counted = parts.entries.iter().all(|e| e.counts.is_some());
    let (message_count, channel_message_counts) = if all_counted {
        let mut per: BTreeMap<u64, u64> = channels.keys().map(|&id| (id, 0)).collect();
        for e in &parts.entries {
            for (&c, &k) in e.counts.iter().flatten() {
                *per.entry(u64::from(c)).or_default() += k;
            }
        }
        (Some(per.values().sum()), Some(per))
    } else {
        (None, None)
    };
    let may_hold = |m: &ChunkMeta| m.message_count != Some(0);
    let times_known = parts
        .entries
        .iter()
        .filter(|e| may_hold(&e.meta))
        .all(|e| e.meta.start_time.is_some() && e.meta.end_time.is_some());
    let (start_time, end_time) = if times_known {
        let held = || parts.entries.iter().filter(|e| may_hold(&e.meta));
        (
            held().filter_map(|e| e.meta.start_time).min(),
            held().filter_map(|e| e.meta.end_time).max(),
        )
    } else {
        (None, None)
    };

    let mut by_codec: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &parts.entries {
        let c = e.meta.compression.as_str();
        *by_codec
            .entry(if c.is_empty() { "none" } else { c })
            .or_default() += 1;
    }
    if !by_codec.is_empty() {
        let mut text = by_codec
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        if parts.presumed > 0 {
            text.push_str(&format!(
                " ({} chunk headers not read: compression presumed from the first chunk)",
                parts.presumed
            ));
        }
        properties.push(("chunk_compression".to_string(), text));
    }
    properties.push(("index".to_string(), parts.note));

    let mut chunks = Vec::with_capacity(parts.entries.len());
    let mut details = Vec::with_capacity(parts.entries.len());
    for (i, e) in parts.entries.into_iter().enumerate() {
        let mut meta = e.meta;
        meta.index = i;
        chunks.push(meta);
        details.push(e.detail);
    }
    Summary {
        format: "bag",
        file_size: file.size(),
        channels,
        chunks,
        indexed: parts.indexed,
        message_count,
        channel_message_counts,
        start_time,
        end_time,
        attachments: Vec::new(),
        metadata: Vec::new(),
        properties,
        damage: None,
        private: Some(Arc::new(BagIndex { chunks: details })),
    }
}

/// Opens the chunks that use undefined connection ids, or whose content is not
/// known, to read their connection records and count their messages.
///
/// A connection record precedes the connection's first message, but not
/// necessarily in the same chunk (python `rosbags` writes it into the chunk
/// open when the connection is added, which may close before the first
/// message): ids still undefined are then looked for in the chunks before the
/// first one using them, nearest first.
fn discover(file: &dyn ReadAt, ctx: &ErrorContext, parts: &mut Parts) {
    let mut scanned = vec![false; parts.entries.len()];
    for (i, done) in scanned.iter_mut().enumerate() {
        let needed = match &parts.entries[i].counts {
            Some(c) => c
                .iter()
                .any(|(id, &k)| k > 0 && !parts.connections.contains_key(id)),
            None => true,
        };
        if needed {
            scan_into(file, ctx, parts, i);
            *done = true;
        }
    }
    let mut first_use: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, e) in parts.entries.iter().enumerate() {
        for (&id, &k) in e.counts.iter().flatten() {
            if k > 0 && !parts.connections.contains_key(&id) {
                first_use.entry(id).or_insert(i);
            }
        }
    }
    for (id, first) in first_use {
        for j in (0..first).rev() {
            if parts.connections.contains_key(&id) {
                break;
            }
            if !scanned[j] {
                scan_into(file, ctx, parts, j);
                scanned[j] = true;
            }
        }
    }
}

/// Scans chunk `i`: adds its connection records and, when its content was not
/// known, its exact counts and time bounds.
fn scan_into(file: &dyn ReadAt, ctx: &ErrorContext, parts: &mut Parts, i: usize) {
    // A damaged chunk is reported when it is read; here it just teaches nothing.
    let Ok(scan) = scan_chunk(file, ctx, parts.entries[i].meta.offset) else {
        return;
    };
    for (id, topic, data) in &scan.connections {
        parts
            .connections
            .entry(*id)
            .or_insert_with(|| connection_channel(*id, topic, data));
    }
    let e = &mut parts.entries[i];
    if e.counts.is_none() {
        e.meta.message_count = Some(scan.counts.values().sum());
        e.meta.channels = Some(scan.counts.keys().map(|&k| u64::from(k)).collect());
        e.meta.start_time = scan.start;
        e.meta.end_time = scan.end;
        e.counts = Some(scan.counts);
    }
}
