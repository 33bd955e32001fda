//! Reading one chunk (a run of whole frames) and walking its packets.

use crate::error::{ErrorContext, Result};
use crate::formats::chunk_io;
use crate::io::ReadAt;
use crate::model::{ChunkMeta, Flow, Nanos, Selection, Summary};
use arrow_buffer::Buffer;

use super::decode::FrameStart;
use super::index::{CarlaIndex, ChunkDetail, PACKET_HEADER};

/// The frame a packet belongs to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameCtx {
    /// Frame id.
    pub id: u64,
    /// Seconds since start.
    pub elapsed: f64,
    /// Frame duration as stored (-1 when unknown).
    pub duration: f64,
    /// `log_time` (ns).
    pub log_time: Nanos,
}

/// One packet of a chunk.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// File offset of the packet header.
    pub offset: u64,
    /// Raw packet id.
    pub raw: u8,
    /// The packet body.
    pub body: &'a [u8],
    /// The shared buffer `body` lies in.
    pub buffer: &'a Buffer,
    /// Its frame.
    pub frame: FrameCtx,
}

/// The index and the detail of `chunk`, or an error naming the chunk.
pub fn find<'s>(
    summary: &'s Summary,
    chunk: &ChunkMeta,
    ctx: &ErrorContext,
) -> Result<(&'s CarlaIndex, ChunkDetail)> {
    let index = summary
        .private::<CarlaIndex>()
        .ok_or_else(|| ctx.corrupt(chunk.offset, "summary is not a CARLA summary"))?;
    let detail = summary
        .chunk_position(chunk)
        .and_then(|i| index.chunks.get(i))
        .copied()
        .ok_or_else(|| ctx.corrupt(chunk.offset, "chunk is not in the summary"))?;
    Ok((index, detail))
}

/// What `for_each_packet` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Walked {
    /// Packets parsed.
    pub parsed: u64,
    /// The callback asked to stop.
    pub stopped: bool,
    /// No frame of the chunk is in the time window: nothing was read.
    pub skipped: bool,
}

/// Reads the part of `chunk` that holds frames inside `sel.time` (all frames
/// when `None`; found with the frame index, so a narrow window reads only its
/// frames) and calls `f` for every packet of those frames; `want_raw` filters
/// packets by raw id before `f` sees them.
pub(crate) fn for_each_packet(
    file: &dyn ReadAt,
    summary: &Summary,
    chunk: &ChunkMeta,
    sel: &Selection,
    want_raw: &dyn Fn(u8) -> bool,
    f: &mut dyn FnMut(Packet<'_>) -> Result<Flow>,
) -> Result<Walked> {
    let ctx = ErrorContext::new(file.name(), "carla", file.size());
    let (index, detail) = find(summary, chunk, &ctx)?;
    let frames = index
        .frames
        .get(detail.first_frame..detail.first_frame.saturating_add(detail.frames))
        .unwrap_or(&[]);
    let in_window = |e: f64| sel.wants_time(index.log_time(e));
    let first_in = frames.iter().position(|fr| in_window(fr.elapsed));
    let last_in = frames.iter().rposition(|fr| in_window(fr.elapsed));
    let (Some(i), Some(j)) = (first_in, last_in) else {
        return Ok(Walked {
            skipped: true,
            ..Walked::default()
        });
    };
    let Some(first) = frames.get(i) else {
        return Ok(Walked::default());
    };
    let start = first.offset;
    let end = frames.get(j + 1).map_or(detail.end, |f| f.offset);
    let len = end.saturating_sub(start);
    chunk_io::with_buffers(|raw, _| -> Result<Walked> {
        let shared: &Buffer = raw.read(file, &ctx, start, len, "chunk")?;
        let buf: &[u8] = shared;
        let mut frame = FrameCtx {
            id: first.id,
            elapsed: first.elapsed,
            duration: first.duration,
            log_time: index.log_time(first.elapsed),
        };
        let mut wanted = in_window(frame.elapsed);
        let mut p = 0usize;
        let mut parsed = 0u64;
        while p < buf.len() {
            let offset = start + p as u64;
            let Some(h) = buf.get(p..p + PACKET_HEADER as usize) else {
                return Err(ctx.truncated(offset, "packet header cut short"));
            };
            let raw_id = h[0];
            let size = u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as usize;
            let b0 = p + PACKET_HEADER as usize;
            let Some(body) = b0.checked_add(size).and_then(|e| buf.get(b0..e)) else {
                return Err(ctx.truncated(
                    offset,
                    format!("packet id {raw_id} of {size} bytes extends past the end of its chunk"),
                ));
            };
            p = b0 + size;
            parsed += 1;
            if raw_id == 0 {
                let fs = FrameStart::parse(body).ok_or_else(|| {
                    ctx.corrupt(
                        offset,
                        format!("FrameStart packet of {size} bytes, expected 24"),
                    )
                })?;
                frame = FrameCtx {
                    id: fs.id,
                    elapsed: fs.elapsed,
                    duration: fs.duration,
                    log_time: index.log_time(fs.elapsed),
                };
                wanted = in_window(fs.elapsed);
            }
            if !wanted || !want_raw(raw_id) {
                continue;
            }
            let pkt = Packet {
                offset,
                raw: raw_id,
                body,
                buffer: shared,
                frame,
            };
            if f(pkt)? == Flow::Stop {
                return Ok(Walked {
                    parsed,
                    stopped: true,
                    skipped: false,
                });
            }
        }
        Ok(Walked {
            parsed,
            ..Walked::default()
        })
    })
}
