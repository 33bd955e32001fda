//! MCAP's own `logsql doctor` checks: one walk of the top-level records
//! (chunks not decompressed) finds records of unknown opcodes, the data
//! section CRC and attachment CRCs, and the Chunk records the chunk index
//! describes differently or not at all.

use std::collections::BTreeMap;

use super::index::{ChunkKind, McapIndex};
use super::reader::{RecordReader, RecordReaderOptions};
use super::records::Record;
use crate::doctor::{Problem, ProblemKind, Report};
use crate::io::ReadAt;
use crate::model::Summary;

/// A Chunk record's header as the walk found it.
struct Found {
    start: u64,
    end: u64,
    uncompressed_size: u64,
}

/// Adds MCAP's own problems to `report` (see the module documentation).
pub(super) fn check(file: &dyn ReadAt, summary: &Summary, report: &mut Report) {
    let opts = RecordReaderOptions {
        flatten_chunks: false,
        message_indexes: false,
        verify_crcs: true,
    };
    let Ok(mut reader) = RecordReader::with_options(file, opts) else {
        return;
    };
    let mut found = BTreeMap::new();
    let mut unknown: Option<(u64, u8, u64)> = None;
    let summary_start = footer_summary_start(file);
    loop {
        match reader.next_record() {
            Ok(Some(item)) => match item.record {
                Record::Chunk(c) => {
                    found.insert(
                        item.offset,
                        Found {
                            start: c.header.message_start_time,
                            end: c.header.message_end_time,
                            uncompressed_size: c.header.uncompressed_size,
                        },
                    );
                }
                Record::Unknown { opcode, .. } => {
                    unknown.get_or_insert((item.offset, opcode, 0)).2 += 1;
                }
                _ => {}
            },
            Ok(None) => break,
            // Truncation and corruption are the summary's and the chunks'
            // reports; a checksum only this walk computes (data section,
            // attachments) is reported here.
            Err(e) => {
                if matches!(e, crate::Error::Checksum { .. }) {
                    report.add(Problem::from_error(&e));
                }
                break;
            }
        }
    }
    if let Some((offset, opcode, n)) = unknown {
        report.add(Problem::new(
            ProblemKind::UnknownRecord,
            Some(offset),
            format!("{n} record(s) of unknown opcode, the first 0x{opcode:02x}"),
        ));
    }
    if !summary.indexed {
        if let Some(start) = summary_start {
            report.add(Problem::new(
                ProblemKind::InvalidIndex,
                Some(start),
                format!(
                    "the footer points at a summary section at byte {start} that cannot be used"
                ),
            ));
        }
        return;
    }
    let kinds = summary.private::<McapIndex>().map(|i| &i.chunks);
    for chunk in &summary.chunks {
        let is_chunk = kinds
            .and_then(|k| k.get(chunk.index))
            .is_none_or(|d| d.kind == ChunkKind::Chunk);
        if !is_chunk {
            continue;
        }
        let problem = match found.remove(&chunk.offset) {
            None => Some(format!(
                "the chunk index points at byte {}, where the walk found no Chunk record",
                chunk.offset
            )),
            Some(f) => {
                let stated = (chunk.start_time, chunk.end_time, chunk.uncompressed_size);
                let actual = (Some(f.start), Some(f.end), Some(f.uncompressed_size));
                (stated != actual).then(|| {
                    format!(
                        "chunk {}: the chunk index states times {:?}..{:?} and {:?} bytes, the Chunk record {}..{} and {} bytes",
                        chunk.index,
                        chunk.start_time,
                        chunk.end_time,
                        chunk.uncompressed_size,
                        f.start,
                        f.end,
                        f.uncompressed_size
                    )
                })
            }
        };
        if let Some(message) = problem {
            report.add(Problem::new(
                ProblemKind::IndexMismatch,
                Some(chunk.offset),
                message,
            ));
        }
    }
    for offset in found.keys() {
        report.add(Problem::new(
            ProblemKind::IndexMismatch,
            Some(*offset),
            format!("the Chunk record at byte {offset} is missing from the chunk index"),
        ));
    }
}

/// The `summary_start` of the Footer record before the closing magic, when
/// the file ends with one that points at a summary (read directly: the walk
/// may stop at damage before it).
fn footer_summary_start(file: &dyn ReadAt) -> Option<u64> {
    // Footer: opcode, length (20), summary_start, summary_offset_start, crc; then the magic.
    const FOOTER: u64 = 1 + 8 + 20;
    let size = file.size();
    let at = size.checked_sub(FOOTER + super::MAGIC.len() as u64)?;
    let bytes = file
        .read_upto(at, (FOOTER as usize) + super::MAGIC.len())
        .ok()?;
    if bytes.len() != FOOTER as usize + super::MAGIC.len()
        || bytes[0] != super::records::op::FOOTER
        || &bytes[FOOTER as usize..] != super::MAGIC
    {
        return None;
    }
    let start = u64::from_le_bytes(bytes[9..17].try_into().ok()?);
    (start != 0 && start < at).then_some(start)
}
