//! The info header, the header walk that builds the frame index, layout
//! detection, and the [`Summary`] assembled from them.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{ErrorContext, Result};
use crate::io::{ReadAt, SequentialReader};
use crate::model::{Channel, ChunkMeta, Nanos, Summary};

use super::decode::{self, Cur, FrameStart};
use super::layout::{Kind, Layout, TailIds, unknown_channel_id};

/// The magic string after the version.
pub const MAGIC: &[u8] = b"CARLA_RECORDER";

/// Target size of one chunk (a run of whole frames).
pub(crate) const CHUNK_TARGET: u64 = 1 << 20;

/// Bytes of a packet header (u8 id + u32 size).
pub(crate) const PACKET_HEADER: u64 = 5;

/// The info header at the start of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format version (always 1).
    pub version: u16,
    /// Recording start, Unix seconds.
    pub date: i64,
    /// Map name.
    pub map: String,
    /// Offset of the first packet.
    pub end: u64,
}

/// Why the header could not be read.
#[derive(Debug)]
pub(crate) enum HeaderError {
    /// The magic string is not "CARLA_RECORDER".
    BadMagic(Vec<u8>),
    /// The file ends inside the header.
    Truncated,
}

/// Parses the info header from the file's first bytes.
pub(crate) fn parse_header(head: &[u8]) -> Result<Header, HeaderError> {
    let mut c = Cur::new(head, false);
    let version = c.u16().ok_or(HeaderError::Truncated)?;
    let magic = c.str().ok_or_else(|| {
        // A short file whose available bytes already differ from the magic is "bad magic".
        let got = head.get(4..).unwrap_or(&[]);
        if MAGIC.starts_with(got) && head.get(2..4).is_none_or(|l| l == [14, 0]) {
            HeaderError::Truncated
        } else {
            HeaderError::BadMagic(got.iter().copied().take(32).collect())
        }
    })?;
    if magic != MAGIC {
        return Err(HeaderError::BadMagic(
            magic.iter().copied().take(32).collect(),
        ));
    }
    let date = c.i64().ok_or(HeaderError::Truncated)?;
    let map = c.str().ok_or(HeaderError::Truncated)?;
    Ok(Header {
        version,
        date,
        map: decode::text(map).into_owned(),
        end: c.p as u64,
    })
}

/// Reads and checks the header of `file`.
pub(crate) fn read_header(file: &dyn ReadAt, ctx: &ErrorContext) -> Result<Header> {
    // version + magic + date + map name (u16 length, at most 64 KiB).
    let head = file
        .read_upto(0, 2 + 16 + 8 + 2 + 65_535)
        .map_err(|e| ctx.io(e))?;
    parse_header(&head).map_err(|e| match e {
        HeaderError::BadMagic(got) => ctx.corrupt(
            2,
            format!(
                "not a CARLA recorder file: the magic string is {:?}, expected \"CARLA_RECORDER\"",
                String::from_utf8_lossy(&got)
            ),
        ),
        HeaderError::Truncated => ctx.truncated(0, "the info header is cut short"),
    })
}

/// One frame of the index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameEntry {
    /// Offset of the frame's FrameStart packet (or of its first packet).
    pub offset: u64,
    /// Frame id (0 for packets before the first FrameStart).
    pub id: u64,
    /// Seconds since start.
    pub elapsed: f64,
    /// Frame duration as stored (-1 for the last frame).
    pub duration: f64,
}

/// Reader-private detail of one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkDetail {
    /// Index of the chunk's first frame in [`CarlaIndex::frames`].
    pub(crate) first_frame: usize,
    /// Number of frames.
    pub frames: usize,
    /// End offset (exclusive) of the chunk's packets.
    pub end: u64,
}

/// Everything the walk learnt about the file ([`Summary::private`]).
#[derive(Debug, Clone)]
pub struct CarlaIndex {
    /// The info header.
    pub header: Header,
    /// The detected layout.
    pub layout: Layout,
    /// Every frame, in file order.
    pub frames: Vec<FrameEntry>,
    /// Per-chunk detail, parallel to [`Summary::chunks`].
    pub chunks: Vec<ChunkDetail>,
    /// End of the last whole packet.
    pub data_end: u64,
    /// Packets per raw id.
    pub packets: [u64; 256],
}

impl CarlaIndex {
    /// `log_time` of a frame at `elapsed` seconds.
    pub fn log_time(&self, elapsed: f64) -> Nanos {
        log_time(self.header.date, elapsed)
    }
}

/// `date` (Unix s) + `elapsed` (s) as ns, clamped to the `u64` range.
pub fn log_time(date: i64, elapsed: f64) -> Nanos {
    let base = i128::from(date) * 1_000_000_000;
    let e = if elapsed.is_finite() {
        (elapsed * 1e9).round() as i128
    } else {
        0
    };
    // `e` saturates at the i128 range for huge `elapsed` (a damaged FrameStart).
    base.saturating_add(e).clamp(0, u64::MAX as i128) as u64
}

/// Things remembered during the walk for layout detection.
#[derive(Default)]
struct Probe {
    /// Raw ids of the first frame, in order (bounded).
    first_frame: Vec<u8>,
    first_frame_done: bool,
    /// (offset of body, size) of the first non-empty EventAdd packets.
    event_adds: Vec<(u64, u64)>,
    /// (offset of body, size) of the first PhysicsControl packets.
    physics: Vec<(u64, u64)>,
    /// (offset, size) of the first non-empty Position packets.
    positions: Vec<(u64, u64)>,
}

/// Builds the summary: header, one walk over packet headers, layout detection.
pub(crate) fn read_summary(file: &dyn ReadAt) -> Result<Summary> {
    let ctx = ErrorContext::new(file.name(), "carla", file.size());
    let header = read_header(file, &ctx)?;
    let size = file.size();
    let mut rd = SequentialReader::new(file, header.end);
    let mut frames: Vec<FrameEntry> = Vec::new();
    let mut packets = [0u64; 256];
    let mut probe = Probe::default();
    let mut damage = None;
    // Per frame: raw-id bitset and packet count (folded into chunks below).
    let mut frame_ids: Vec<[u64; 4]> = Vec::new();
    let mut frame_packets: Vec<u64> = Vec::new();
    loop {
        let pos = rd.position();
        if pos >= size {
            break;
        }
        let (id, len) = match rd.take(PACKET_HEADER as usize).map_err(|e| ctx.io(e))? {
            Some(h) => (h[0], u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as u64),
            None => {
                damage = Some(ctx.truncated(
                    pos,
                    format!(
                        "packet header cut short ({} of 5 bytes); the last whole packet ends here",
                        size - pos
                    ),
                ));
                break;
            }
        };
        let body = pos + PACKET_HEADER;
        if body + len > size {
            damage = Some(ctx.truncated(
                pos,
                format!(
                    "packet id {id} of {len} bytes extends past the end of the file ({} bytes left); the last whole packet ends here",
                    size - body
                ),
            ));
            rd.seek(pos);
            break;
        }
        if id == 0 {
            // FrameStart is 24 bytes: read only those, skip any excess by size.
            let fs = match rd.take(len.min(24) as usize).map_err(|e| ctx.io(e))? {
                Some(b) => FrameStart::parse(b),
                None => None,
            };
            let Some(fs) = fs else {
                damage = Some(ctx.corrupt(
                    pos,
                    format!("FrameStart packet of {len} bytes, expected 24"),
                ));
                rd.seek(pos);
                break;
            };
            if !frames.is_empty() {
                probe.first_frame_done = true;
            }
            frames.push(FrameEntry {
                offset: pos,
                id: fs.id,
                elapsed: fs.elapsed,
                duration: fs.duration,
            });
            frame_ids.push([0; 4]);
            frame_packets.push(0);
            rd.seek(body + len);
        } else {
            if frames.is_empty() {
                // Packets before any FrameStart: a pseudo frame 0 at time 0.
                frames.push(FrameEntry {
                    offset: pos,
                    id: 0,
                    elapsed: 0.0,
                    duration: -1.0,
                });
                frame_ids.push([0; 4]);
                frame_packets.push(0);
            }
            match id {
                2 if len > 2 && probe.event_adds.len() < 4 => probe.event_adds.push((body, len)),
                15 if probe.physics.len() < 4 => probe.physics.push((body, len)),
                6 if len > 2 && probe.positions.len() < 4 => probe.positions.push((body, len)),
                1 => probe.first_frame_done = true,
                _ => {}
            }
            rd.seek(body + len);
        }
        if !probe.first_frame_done && probe.first_frame.len() < 64 {
            probe.first_frame.push(id);
        }
        packets[id as usize] += 1;
        if let (Some(ids), Some(n)) = (frame_ids.last_mut(), frame_packets.last_mut()) {
            ids[(id >> 6) as usize] |= 1u64 << (id & 63);
            *n += 1;
        }
    }
    let data_end = rd.position().min(size);
    let layout = detect_layout(file, &ctx, &probe, &packets);

    // Chunks: runs of whole frames of about CHUNK_TARGET bytes.
    let mut chunks = Vec::new();
    let mut details = Vec::new();
    let mut i = 0;
    while i < frames.len() {
        let start = frames[i].offset;
        let mut j = i + 1;
        while j < frames.len() && frames[j].offset - start < CHUNK_TARGET {
            j += 1;
        }
        let end = frames.get(j).map_or(data_end, |f| f.offset);
        let mut ids = [0u64; 4];
        let mut count = 0;
        for k in i..j {
            for (a, b) in ids.iter_mut().zip(frame_ids[k]) {
                *a |= b;
            }
            count += frame_packets[k];
        }
        let mut channels: Vec<u64> = (0..=255u8)
            .filter(|r| ids[(r >> 6) as usize] & (1u64 << (r & 63)) != 0)
            .map(|r| channel_id(&layout, r))
            .collect();
        channels.sort_unstable();
        // Min/max over every frame: elapsed is non-decreasing in CARLA's files,
        // but a damaged file must not make the engine prune a chunk wrongly.
        let times = frames[i..j]
            .iter()
            .map(|f| log_time(header.date, f.elapsed));
        let t0 = times.clone().min().unwrap_or(0);
        let t1 = times.max().unwrap_or(0);
        chunks.push(ChunkMeta {
            index: chunks.len(),
            offset: start,
            length: end - start,
            start_time: Some(t0.min(t1)),
            end_time: Some(t0.max(t1)),
            message_count: Some(count),
            channels: Some(channels),
            compression: String::new(),
            compressed_size: end - start,
            uncompressed_size: Some(end - start),
        });
        details.push(ChunkDetail {
            first_frame: i,
            frames: j - i,
            end,
        });
        i = j;
    }

    let mut channels = BTreeMap::new();
    let mut counts = BTreeMap::new();
    for raw in 0..=255u8 {
        let n = packets[raw as usize];
        if n == 0 {
            continue;
        }
        let ch = channel_for(&layout, raw);
        *counts.entry(ch.id).or_insert(0) += n;
        channels.entry(ch.id).or_insert(ch);
    }
    let start_time = chunks.iter().filter_map(|c| c.start_time).min();
    let end_time = chunks.iter().filter_map(|c| c.end_time).max();
    let total: u64 = packets.iter().sum();
    let last = frames.iter().rev().find(|f| f.id != 0 || f.elapsed != 0.0);
    let properties = vec![
        (
            "carla.version".to_string(),
            layout.version_label().to_string(),
        ),
        (
            "carla.header_version".to_string(),
            header.version.to_string(),
        ),
        ("carla.map".to_string(), header.map.clone()),
        ("carla.date".to_string(), header.date.to_string()),
        (
            "carla.frames".to_string(),
            frames.iter().filter(|f| f.id != 0).count().to_string(),
        ),
        (
            "carla.duration".to_string(),
            last.map_or(0.0, |f| f.elapsed).to_string(),
        ),
        (
            "carla.packet_ids".to_string(),
            layout.tail_label().to_string(),
        ),
        (
            "carla.vectors".to_string(),
            if layout.f64_vectors { "f64" } else { "f32" }.to_string(),
        ),
        (
            "carla.wheel_physics_bytes".to_string(),
            if layout.wheel_physics_known {
                layout.wheel_physics_bytes.to_string()
            } else {
                "unknown".to_string()
            },
        ),
        (
            "carla.additional_data".to_string(),
            (packets[14] > 0 || packets[13] > 0).to_string(),
        ),
    ];
    let index = CarlaIndex {
        header,
        layout,
        frames,
        chunks: details,
        data_end,
        packets,
    };
    Ok(Summary {
        format: "carla",
        file_size: size,
        channels,
        chunks,
        indexed: false,
        message_count: Some(total),
        channel_message_counts: Some(counts),
        start_time,
        end_time,
        attachments: Vec::new(),
        metadata: Vec::new(),
        properties,
        damage,
        private: Some(Arc::new(index)),
    })
}

/// The channel id of raw packet id `raw` under `layout`.
pub fn channel_id(layout: &Layout, raw: u8) -> u64 {
    layout
        .kind(raw)
        .map_or_else(|| unknown_channel_id(raw), Kind::channel_id)
}

/// The synthetic channel of raw packet id `raw`.
pub(crate) fn channel_for(layout: &Layout, raw: u8) -> Channel {
    let mut metadata = BTreeMap::new();
    metadata.insert("packet_id".to_string(), raw.to_string());
    match layout.kind(raw) {
        Some(k) => Channel {
            id: k.channel_id(),
            topic: k.topic().to_string(),
            message_type: Some(format!("carla.{}", k.carla_name())),
            message_encoding: "carla".into(),
            schema_encoding: None,
            schema: None,
            metadata,
        },
        None => Channel {
            id: unknown_channel_id(raw),
            topic: format!("unknown_{raw}"),
            message_type: None,
            message_encoding: "carla".into(),
            schema_encoding: None,
            schema: None,
            metadata,
        },
    }
}

fn read_body(file: &dyn ReadAt, ctx: &ErrorContext, off: u64, len: u64) -> Option<Vec<u8>> {
    file.read_vec(ctx, off, len, "packet").ok()
}

/// Decides the layout from the first frame's packet order and a few probed packets.
fn detect_layout(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    probe: &Probe,
    packets: &[u64; 256],
) -> Layout {
    let mut layout = Layout {
        has_visual_time: packets[20] > 0,
        ..Layout::default()
    };
    // Door id: the packet between Collision (5) and Position (6) in the first frame.
    let ff = &probe.first_frame;
    let between = ff
        .iter()
        .position(|&i| i == 5)
        .and_then(|p| ff.get(p + 1))
        .filter(|&&i| i != 6)
        .copied();
    layout.tail = match between {
        Some(21) => TailIds::Ue4Dev2024,
        Some(23) => TailIds::V0916,
        _ if packets[23] > 0 => TailIds::V0916,
        _ if packets[21] > 0 || packets[22] > 0 => TailIds::V0915,
        _ => TailIds::None,
    };
    // Vector width: an EventAdd packet parses exactly with only one of them.
    for &(off, len) in &probe.event_adds {
        let Some(body) = read_body(file, ctx, off, len) else {
            continue;
        };
        let f32_ok = decode::parse_event_adds(&body, false).is_some();
        let f64_ok = decode::parse_event_adds(&body, true).is_some();
        if f32_ok != f64_ok {
            layout.f64_vectors = f64_ok;
            break;
        }
    }
    if probe.event_adds.is_empty() {
        // Fallback: Position packets whose record count only fits 52-byte records.
        for &(off, len) in &probe.positions {
            let Some(body) = read_body(file, ctx, off, len.min(2)) else {
                continue;
            };
            let n = u64::from(u16::from_le_bytes([
                body[0],
                body.get(1).copied().unwrap_or(0),
            ]));
            if n * 52 + 2 == len && n * 28 + 2 != len {
                layout.f64_vectors = true;
            }
            break;
        }
    }
    for &(off, len) in &probe.physics {
        let Some(body) = read_body(file, ctx, off, len) else {
            continue;
        };
        if body.len() <= 2 {
            continue;
        }
        if let Some(w) = decode::detect_wheel_bytes(&body, layout.f64_vectors) {
            layout.wheel_physics_bytes = w;
            layout.wheel_physics_known = true;
            break;
        }
    }
    layout
}
