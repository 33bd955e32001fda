//! The summary: header, index (both position conventions), or a recovery
//! walk of the sections when the recording was never closed or the index is
//! unusable.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use prost::Message as _;

use crate::error::{Error, ErrorContext, Result};
use crate::io::ReadAt;
use crate::model::{Channel, ChunkMeta, Summary};

use super::FORMAT;
use super::descriptor::{self, DescriptorKind};
use super::proto;
use super::section::{
    FIRST_SECTION, SECTION_LEN, SectionHeader, kind, kind_name, read_header, read_section_header,
    walk_body,
};

/// Reader-private summary data.
#[derive(Debug, Default)]
pub(crate) struct RecordIndex {
    /// Channel name (bytes) to channel id.
    pub by_name: HashMap<Box<[u8]>, u64>,
    /// `Header.compress` (0 none, 1 bz2, 2 lz4).
    pub compress: i32,
}

/// The compression name of a `CompressType` value.
pub(crate) fn compress_name(c: i32) -> String {
    match c {
        0 => "none".into(),
        1 => "bz2".into(),
        2 => "lz4".into(),
        n => format!("unknown ({n})"),
    }
}

/// Builds the channel of `name` with id `id`.
pub(crate) fn make_channel(id: u64, name: &str, message_type: &str, proto_desc: &[u8]) -> Channel {
    let kind = descriptor::classify(proto_desc, message_type);
    let mut metadata = BTreeMap::new();
    metadata.insert("descriptor".to_string(), kind.as_str().to_string());
    if kind == DescriptorKind::FileDescriptor
        && let Some((_, files)) = descriptor::descriptor_files(proto_desc, message_type)
    {
        let missing = descriptor::missing_imports(&files);
        if !missing.is_empty() {
            metadata.insert("descriptor_missing_imports".to_string(), missing.join(","));
        }
    }
    Channel {
        id,
        topic: name.to_string(),
        message_type: (!message_type.is_empty()).then(|| message_type.to_string()),
        message_encoding: "protobuf".to_string(),
        schema_encoding: Some("protobuf".to_string()),
        schema: (!proto_desc.is_empty()).then(|| Arc::from(proto_desc)),
        metadata,
    }
}

/// The stand-in channel for messages whose channel has no CHANNEL section:
/// id = top bit set | FNV-1a of the name, so every chunk agrees on it.
pub(crate) fn undeclared_channel(name: &[u8]) -> Channel {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut ch = make_channel(1 << 63 | h, &String::from_utf8_lossy(name), "", &[]);
    ch.schema_encoding = None;
    ch.metadata
        .insert("declared".to_string(), "false".to_string());
    ch
}

/// What the index or the walk found.
#[derive(Default)]
struct Parts {
    /// Channels in order of appearance, with the index's message count.
    channels: Vec<(Channel, Option<u64>)>,
    chunks: Vec<ChunkMeta>,
    indexed: bool,
    note: String,
    damage: Option<Error>,
}

impl Parts {
    fn add_channel(&mut self, name: &str, message_type: &str, desc: &[u8], count: Option<u64>) {
        if self.channels.iter().any(|(c, _)| c.topic == name) {
            return;
        }
        let id = self.channels.len() as u64;
        self.channels
            .push((make_channel(id, name, message_type, desc), count));
    }
}

/// Chunk begin times below this (2001-09-09) mean the writer fed its own
/// clock (demo writers count from 0), where the chunk's `begin_time` cannot be
/// trusted as a lower bound: a message at time 0 is the writer's "unset"
/// sentinel, so the next message overwrites the begin time (`mytest.record`:
/// times 0..9, chunk begin 1). Such chunks get `start_time` 0 and the file no
/// start time. Recorder files (wall clock) are far above it.
pub(crate) const SYNTHETIC_CLOCK_LIMIT: u64 = 1_000_000_000_000_000_000;

/// Whether a chunk header's begin time may hide earlier messages (see [`SYNTHETIC_CLOCK_LIMIT`]).
fn suspect_begin(h: &proto::ChunkHeader) -> bool {
    h.begin_time() < SYNTHETIC_CLOCK_LIMIT
}

fn chunk_meta(
    offset: u64,
    length: u64,
    cache: Option<&proto::ChunkHeader>,
    compress: i32,
    trusted: bool,
) -> ChunkMeta {
    let times = cache.filter(|_| trusted);
    let body = length.saturating_sub(SECTION_LEN);
    ChunkMeta {
        index: 0,
        offset,
        length,
        start_time: times.map(|c| if suspect_begin(c) { 0 } else { c.begin_time() }),
        end_time: times.map(|c| c.end_time()),
        message_count: cache.map(|c| c.message_number()),
        channels: None,
        compression: if compress == 0 {
            String::new()
        } else {
            compress_name(compress)
        },
        compressed_size: body,
        uncompressed_size: (compress == 0).then_some(body),
    }
}

/// Reads the summary of a record file.
pub(crate) fn read_summary(file: &dyn ReadAt) -> Result<Summary> {
    let ctx = ErrorContext::new(file.name(), FORMAT, file.size());
    let info = read_header(file, &ctx)?;
    let header = info.header;
    let trusted = info.cpp_writer;
    let size = file.size();
    let compress = header.compress.unwrap_or(0);
    let mut properties = vec![
        (
            "version".to_string(),
            format!("{}.{}", header.major_version(), header.minor_version()),
        ),
        ("compress".to_string(), compress_name(compress)),
        (
            "chunk_interval".to_string(),
            header.chunk_interval().to_string(),
        ),
        (
            "segment_interval".to_string(),
            header.segment_interval().to_string(),
        ),
        (
            "chunk_raw_size".to_string(),
            header.chunk_raw_size().to_string(),
        ),
        (
            "segment_raw_size".to_string(),
            header.segment_raw_size().to_string(),
        ),
        (
            "index_position".to_string(),
            header.index_position().to_string(),
        ),
        ("record_size".to_string(), header.size().to_string()),
        ("is_complete".to_string(), header.is_complete().to_string()),
        (
            "chunk_number".to_string(),
            header.chunk_number().to_string(),
        ),
        (
            "channel_number".to_string(),
            header.channel_number().to_string(),
        ),
        (
            "message_number".to_string(),
            header.message_number().to_string(),
        ),
        ("begin_time".to_string(), header.begin_time().to_string()),
        ("end_time".to_string(), header.end_time().to_string()),
    ];
    let parts = if header.is_complete() {
        match indexed(file, &ctx, &header, compress, trusted) {
            Ok(parts) => parts,
            Err(e) => {
                let end = match header.size() {
                    s if s >= FIRST_SECTION && s <= size => s,
                    _ => size,
                };
                let mut parts = walk(file, &ctx, end, compress, trusted);
                parts.note = format!("unusable ({e}); sections walked instead");
                if parts.damage.is_none() && header.size() > size {
                    parts.damage = Some(ctx.truncated(
                        size,
                        format!(
                            "the file ends before the {} bytes its header declares (closed recording cut short)",
                            header.size()
                        ),
                    ));
                }
                parts
            }
        }
    } else {
        let mut parts = walk(file, &ctx, size, compress, trusted);
        parts.note =
            "none: the recording was not closed (is_complete false); sections walked".to_string();
        if let Some(d) = parts.damage.take() {
            parts.damage = Some(incomplete(&ctx, d));
        }
        parts
    };
    if header.is_complete() && header.size() > 0 && header.size() < size && parts.indexed {
        properties.push((
            "trailing_bytes".to_string(),
            format!(
                "{} stale bytes after the end of the data (header size {}) ignored",
                size - header.size(),
                header.size()
            ),
        ));
    }
    properties.push(("index".to_string(), parts.note.clone()));
    properties.push((
        "chunk_times".to_string(),
        if trusted {
            "used for pruning (C++ writer: each chunk header holds its min/max message time)"
        } else {
            "not used for pruning (not written by Apollo's C++ writer: the header padding does not start with '0'; chunk headers may hold first/last instead of min/max times)"
        }
        .to_string(),
    ));
    let mut parts = parts;
    if parts.indexed {
        discover_undeclared(file, &ctx, &mut parts);
    }
    Ok(assemble(file, parts, properties, compress))
}

/// Says that a walk's damage is the torn tail of an unclosed recording.
fn incomplete(ctx: &ErrorContext, damage: Error) -> Error {
    let offset = damage.offset().unwrap_or(0);
    let cause = match &damage {
        Error::Truncated { message, .. } | Error::Corrupt { message, .. } => message.clone(),
        other => other.to_string(),
    };
    ctx.truncated(
        offset,
        format!(
            "incomplete recording (is_complete false, no index; the recorder did not close it): {cause}; the messages before byte {offset} were recovered"
        ),
    )
}

/// When the index's per-channel counts do not add up to its chunk counts,
/// some messages use channels that have no CHANNEL section
/// (`RecordWriter::WriteMessage(RawMessage)` never declares one): reads the
/// chunk bodies once to find them, and adds their stand-in channels (see
/// [`undeclared_channel`]) with exact counts. A body that fails to read stops
/// the discovery (the reads report it).
fn discover_undeclared(file: &dyn ReadAt, ctx: &ErrorContext, parts: &mut Parts) {
    let declared: Option<u64> = parts.channels.iter().map(|(_, n)| *n).sum();
    let total: Option<u64> = parts.chunks.iter().map(|c| c.message_count).sum();
    if declared.is_none() || declared == total {
        return;
    }
    let known: std::collections::HashSet<Vec<u8>> = parts
        .channels
        .iter()
        .map(|(c, _)| c.topic.as_bytes().to_vec())
        .collect();
    let mut found: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for chunk in &parts.chunks {
        let Ok(raw) = file.read_vec(ctx, chunk.offset, chunk.length, "chunk body section") else {
            return;
        };
        let Some(len) = SectionHeader::parse(&raw).and_then(|h| h.length()) else {
            return;
        };
        let Some(body) = usize::try_from(len)
            .ok()
            .and_then(|l| raw.get(SECTION_LEN as usize..(SECTION_LEN as usize).checked_add(l)?))
        else {
            return;
        };
        let walked = walk_body(body, |m, _| {
            if !known.contains(m.channel) {
                *found.entry(m.channel.to_vec()).or_default() += 1;
            }
            std::ops::ControlFlow::Continue(())
        });
        if walked.is_err() {
            return;
        }
    }
    for (name, n) in found {
        parts.channels.push((undeclared_channel(&name), Some(n)));
    }
}

fn assemble(
    file: &dyn ReadAt,
    parts: Parts,
    properties: Vec<(String, String)>,
    compress: i32,
) -> Summary {
    let mut chunks = parts.chunks;
    for (i, c) in chunks.iter_mut().enumerate() {
        c.index = i;
    }
    let message_count = chunks.iter().map(|c| c.message_count).sum::<Option<u64>>();
    let channel_message_counts = parts
        .channels
        .iter()
        .map(|(c, n)| n.map(|n| (c.id, n)))
        .collect::<Option<BTreeMap<u64, u64>>>()
        .filter(|per| Some(per.values().sum::<u64>()) == message_count);
    let held = || chunks.iter().filter(|c| c.message_count != Some(0));
    let times_known = held().all(|c| c.start_time.is_some() && c.end_time.is_some());
    let (start_time, end_time) = if times_known {
        (
            held()
                .filter_map(|c| c.start_time)
                .min()
                .filter(|&t| t >= SYNTHETIC_CLOCK_LIMIT),
            held().filter_map(|c| c.end_time).max(),
        )
    } else {
        (None, None)
    };
    let by_name = parts
        .channels
        .iter()
        .map(|(c, _)| (Box::from(c.topic.as_bytes()), c.id))
        .collect();
    Summary {
        format: FORMAT,
        file_size: file.size(),
        channels: parts.channels.into_iter().map(|(c, _)| (c.id, c)).collect(),
        chunks,
        indexed: parts.indexed,
        message_count,
        channel_message_counts,
        start_time,
        end_time,
        attachments: Vec::new(),
        metadata: Vec::new(),
        properties,
        damage: parts.damage,
        private: Some(Arc::new(RecordIndex { by_name, compress })),
    }
}

/// Reads the index section of a closed file.
fn indexed(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    header: &proto::Header,
    compress: i32,
    trusted: bool,
) -> Result<Parts> {
    let pos = header.index_position();
    if pos < FIRST_SECTION {
        return Err(ctx.corrupt(
            SECTION_LEN,
            format!("header index_position {pos} is before the first section ({FIRST_SECTION})"),
        ));
    }
    let sh = read_section_header(file, ctx, pos)?;
    if sh.kind != kind::INDEX {
        return Err(ctx.corrupt(
            pos,
            format!(
                "header index_position points at a {} section, not INDEX",
                kind_name(sh.kind)
            ),
        ));
    }
    let len = sh.length().ok_or_else(|| {
        ctx.corrupt(
            pos + 8,
            format!("index section size {} is invalid", sh.size),
        )
    })?;
    let bytes = file.read_vec(ctx, pos + SECTION_LEN, len, "index section")?;
    let index = proto::Index::decode(&bytes[..]).map_err(|e| {
        ctx.corrupt(
            pos + SECTION_LEN,
            format!("index protobuf does not decode: {e}"),
        )
    })?;
    let entries = &index.indexes;

    // Which convention: read the section at the first chunk header entry.
    let legacy = match entries
        .iter()
        .find(|e| e.r#type == Some(kind::CHUNK_HEADER as i32))
    {
        None => false,
        Some(e) => {
            let at = e.position();
            match at.checked_add(SECTION_LEN) {
                Some(end) if at >= FIRST_SECTION && end <= pos => {}
                _ => {
                    return Err(ctx.corrupt(
                        pos + SECTION_LEN,
                        format!("index: chunk header position {at} is outside the data"),
                    ));
                }
            }
            match read_section_header(file, ctx, at)?.kind {
                kind::CHUNK_HEADER => false,
                kind::CHUNK_BODY => true,
                other => {
                    return Err(ctx.corrupt(
                        at,
                        format!(
                            "index: the first chunk header position holds a {} section",
                            kind_name(other)
                        ),
                    ));
                }
            }
        }
    };

    // Section ranges: [position(i), position(i+1)) for section starts,
    // [position(i-1), position(i)) for section ends.
    let positions: Vec<u64> = entries.iter().map(|e| e.position()).collect();
    let range = |i: usize| -> (u64, u64) {
        if legacy {
            let start = if i == 0 {
                FIRST_SECTION
            } else {
                positions[i - 1]
            };
            (start, positions[i])
        } else {
            (positions[i], positions.get(i + 1).copied().unwrap_or(pos))
        }
    };
    let mut parts = Parts {
        indexed: true,
        note: if legacy {
            "section END positions (Apollo 3.5/5.0 writer, before 2019-08)".to_string()
        } else {
            "section start positions".to_string()
        },
        ..Parts::default()
    };
    let mut last_header: Option<proto::ChunkHeader> = None;
    for (i, e) in entries.iter().enumerate() {
        let (start, end) = range(i);
        let at_index = pos + SECTION_LEN;
        if start < FIRST_SECTION || end > pos || start.saturating_add(SECTION_LEN) > end {
            return Err(ctx.corrupt(
                at_index,
                format!(
                    "index entry {i} ({}) gives the section range {start}..{end}, outside {FIRST_SECTION}..{pos} or too short",
                    kind_name(e.r#type.and_then(|t| u32::try_from(t).ok()).unwrap_or(u32::MAX))
                ),
            ));
        }
        match (e.r#type.unwrap_or(-1), &e.cache) {
            (t, Some(proto::single_index::Cache::ChannelCache(c))) if t == kind::CHANNEL as i32 => {
                parts.add_channel(
                    c.name(),
                    c.message_type(),
                    c.proto_desc(),
                    Some(c.message_number()),
                );
            }
            (t, cache) if t == kind::CHUNK_HEADER as i32 => {
                last_header = match cache {
                    Some(proto::single_index::Cache::ChunkHeaderCache(h)) => {
                        Some(proto::ChunkHeader {
                            begin_time: h.begin_time,
                            end_time: h.end_time,
                            message_number: h.message_number,
                            raw_size: h.raw_size,
                        })
                    }
                    _ => None,
                };
            }
            (t, cache) if t == kind::CHUNK_BODY as i32 => {
                let mut h = last_header.take();
                if let (Some(h), Some(proto::single_index::Cache::ChunkBodyCache(b))) =
                    (h.as_mut(), cache)
                    && h.message_number.is_none()
                {
                    h.message_number = b.message_number;
                }
                parts.chunks.push(chunk_meta(
                    start,
                    end - start,
                    h.as_ref(),
                    compress,
                    trusted,
                ));
            }
            _ => {}
        }
    }
    Ok(parts)
}

/// Walks the sections from the first one to `end`: channels as met, one chunk
/// per complete body (times and count from the chunk header before it).
/// Stops at the INDEX section, at `end`, or at the first section that is not
/// well formed or runs past `end` (then `damage`).
fn walk(file: &dyn ReadAt, ctx: &ErrorContext, end: u64, compress: i32, trusted: bool) -> Parts {
    let mut parts = Parts::default();
    let mut pos = FIRST_SECTION;
    let mut last_header: Option<proto::ChunkHeader> = None;
    while pos < end {
        if end - pos < SECTION_LEN {
            parts.damage = Some(ctx.truncated(
                pos,
                format!(
                    "section header cut short ({} of {SECTION_LEN} bytes before the end of the data)",
                    end - pos
                ),
            ));
            break;
        }
        let sh = match read_section_header(file, ctx, pos) {
            Ok(sh) => sh,
            Err(e) => {
                parts.damage = Some(e);
                break;
            }
        };
        let len = match sh.length() {
            Some(l) if (kind::CHUNK_HEADER..=kind::CHANNEL).contains(&sh.kind) => l,
            _ => {
                parts.damage = Some(ctx.corrupt(
                    pos,
                    format!(
                        "not a section header: {} with size {}",
                        kind_name(sh.kind),
                        sh.size
                    ),
                ));
                break;
            }
        };
        let data = pos + SECTION_LEN;
        if len > end - data {
            parts.damage = Some(ctx.truncated(
                pos,
                format!(
                    "{} section of {len} bytes is torn: only {} bytes follow its header",
                    kind_name(sh.kind),
                    end - data
                ),
            ));
            break;
        }
        match sh.kind {
            kind::INDEX => break,
            kind::CHANNEL => match read_proto::<proto::Channel>(file, ctx, data, len, "channel") {
                Ok(c) => parts.add_channel(c.name(), c.message_type(), c.proto_desc(), None),
                Err(e) => {
                    parts.damage.get_or_insert(e);
                }
            },
            kind::CHUNK_HEADER => {
                last_header =
                    match read_proto::<proto::ChunkHeader>(file, ctx, data, len, "chunk header") {
                        Ok(h) => Some(h),
                        Err(e) => {
                            parts.damage.get_or_insert(e);
                            None
                        }
                    };
            }
            _ => {
                let h = last_header.take();
                parts.chunks.push(chunk_meta(
                    pos,
                    SECTION_LEN + len,
                    h.as_ref(),
                    compress,
                    trusted,
                ));
            }
        }
        pos = data + len;
    }
    parts
}

fn read_proto<M: prost::Message + Default>(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
    len: u64,
    what: &str,
) -> Result<M> {
    let bytes = file.read_vec(ctx, offset, len, what)?;
    M::decode(&bytes[..])
        .map_err(|e| ctx.corrupt(offset, format!("{what} protobuf does not decode: {e}")))
}
