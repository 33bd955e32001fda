//! The checks every format shares: summary damage, each chunk read whole,
//! chunk time order, counts against the index, whole-file checksums.

use super::{Lost, Problem, ProblemKind, Report, Tally, everything};
use crate::error::Result;
use crate::formats::FormatReader;
use crate::io::ReadAt;
use crate::limits::Limits;
use crate::model::{ChunkMeta, Summary};

/// Checks `file` of `format` (see the [module documentation](super)). An
/// error: the file has no readable summary at all (`logsql doctor`'s
/// "unreadable").
pub fn check(format: &dyn FormatReader, file: &dyn ReadAt, limits: &Limits) -> Result<Report> {
    let summary = format.summary_with_limits(file, limits)?;
    let mut report = Report {
        format: format.name(),
        file_size: file.size(),
        chunks: summary.chunks.len(),
        messages: 0,
        indexed_messages: summary.message_count.filter(|_| summary.indexed),
        problems: Vec::new(),
        lost: Vec::new(),
    };
    if let Some(e) = &summary.damage {
        report.add(Problem::from_error(e));
        if let Some(offset) = e.offset() {
            // What follows the damage up to the next chunk the summary found.
            let end = summary
                .chunks
                .iter()
                .map(|c| c.offset)
                .filter(|&o| o > offset)
                .min()
                .unwrap_or(report.file_size);
            if end > offset {
                report.lost.push(Lost {
                    range: offset..end,
                    what: if end == report.file_size {
                        "the end of the file".into()
                    } else {
                        "unreadable records".into()
                    },
                    messages: None,
                });
            }
        }
    }
    if !summary.indexed && format.keeps_index() {
        report.add(Problem::new(
            ProblemKind::MissingIndex,
            None,
            format!(
                "no usable {} index: the chunk list was rebuilt by walking the file",
                format.name()
            ),
        ));
    }
    order(format, &summary, &mut report);
    let chunk_errors = chunks(format, file, &summary, limits, &mut report);
    if let Some(stated) = report.indexed_messages
        && chunk_errors == 0
        && summary.damage.is_none()
        && stated != report.messages
    {
        report.add(Problem::new(
            ProblemKind::IndexMismatch,
            None,
            format!(
                "the index states {stated} messages, the chunks hold {}",
                report.messages
            ),
        ));
    }
    if let Some(Err(e)) = format.verify(file, &summary) {
        report.add(Problem::from_error(&e));
    }
    format.doctor(file, &summary, &mut report);
    report.problems.sort_by_key(|p| p.offset);
    Ok(report)
}

/// Reads every chunk whole, recording damage, messages outside the chunk's
/// stated times, and counts that differ from the index's. Returns how many
/// chunks failed.
fn chunks(
    format: &dyn FormatReader,
    file: &dyn ReadAt,
    summary: &Summary,
    limits: &Limits,
    report: &mut Report,
) -> usize {
    let sel = everything(limits);
    let enclose = format.chunk_times_enclose_messages();
    let mut failed = 0;
    for chunk in &summary.chunks {
        let mut tally = Tally {
            bounds: chunk.start_time.zip(chunk.end_time).filter(|_| enclose),
            ..Tally::default()
        };
        let read = format.read_chunk(file, summary, chunk, &sel, &mut tally);
        report.messages += tally.messages;
        match read {
            Ok(_) => {
                if let Some(stated) = chunk.message_count
                    && stated != tally.messages
                {
                    report.add(Problem::new(
                        ProblemKind::IndexMismatch,
                        Some(chunk.offset),
                        format!(
                            "chunk {}: the index states {stated} messages, the chunk holds {}",
                            chunk.index, tally.messages
                        ),
                    ));
                }
            }
            Err(e) => {
                failed += 1;
                report.add(Problem::from_error(&e));
                report.lost.push(Lost {
                    range: lost_range(chunk, &e, tally.messages > 0),
                    what: format!("chunk {}", chunk.index),
                    messages: chunk
                        .message_count
                        .map(|n| n.saturating_sub(tally.messages)),
                });
            }
        }
        if let (Some((t, n)), Some((lo, hi))) = (tally.outside, tally.bounds) {
            report.add(
                Problem::new(
                    ProblemKind::TimeOutsideChunk,
                    Some(chunk.offset),
                    format!(
                        "chunk {}: {n} message(s) outside the chunk's stated times {lo}..={hi} (first at {t})",
                        chunk.index
                    ),
                )
                .at_time(Some(t)),
            );
        }
    }
    failed
}

/// The bytes of `chunk` lost to `e`: from the error's offset when messages
/// before it were read, else the whole chunk.
fn lost_range(chunk: &ChunkMeta, e: &crate::Error, some_read: bool) -> std::ops::Range<u64> {
    let end = chunk.offset.saturating_add(chunk.length);
    let start = match e.offset() {
        Some(o) if some_read && (chunk.offset..end).contains(&o) => o,
        _ => chunk.offset,
    };
    start..end
}

/// Chunks that start before an earlier chunk starts (out of order) or ends
/// (overlapping): worth knowing, not damage, where the format allows it.
/// Each kind is reported once, at its first chunk, with how many chunks
/// follow the same pattern.
fn order(format: &dyn FormatReader, summary: &Summary, report: &mut Report) {
    if !format.chunk_times_enclose_messages() {
        return;
    }
    let mut latest_start: Option<u64> = None;
    let mut latest_end: Option<u64> = None;
    let mut out_of_order: Option<(&ChunkMeta, usize)> = None;
    let mut overlapping: Option<(&ChunkMeta, usize)> = None;
    for chunk in &summary.chunks {
        let (Some(start), Some(end)) = (chunk.start_time, chunk.end_time) else {
            continue;
        };
        if latest_start.is_some_and(|s| start < s) {
            out_of_order.get_or_insert((chunk, 0)).1 += 1;
        } else if latest_end.is_some_and(|e| start <= e) {
            overlapping.get_or_insert((chunk, 0)).1 += 1;
        }
        latest_start = Some(latest_start.map_or(start, |s| s.max(start)));
        latest_end = Some(latest_end.map_or(end, |e| e.max(end)));
    }
    let allowed = format.chunks_may_overlap();
    for (kind, found, what) in [
        (
            ProblemKind::OutOfOrderChunks,
            out_of_order,
            "starts before an earlier chunk",
        ),
        (
            ProblemKind::OverlappingChunks,
            overlapping,
            "starts before an earlier chunk ends",
        ),
    ] {
        let Some((chunk, n)) = found else { continue };
        let problem = Problem::new(
            kind,
            Some(chunk.offset),
            format!(
                "chunk {} {what} ({n} chunk(s) in all){}",
                chunk.index,
                if allowed {
                    "; the format allows it, readers sort by time"
                } else {
                    ""
                }
            ),
        )
        .at_time(chunk.start_time);
        report.add(if allowed { problem.info() } else { problem });
    }
}
