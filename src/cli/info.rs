//! `logsql info`: a human summary of log files, in the spirit of `mcap info`.
//!
//! Reads each file's [`Summary`] through the reader API (no query engine): the
//! index when the file has one, a recovery walk otherwise. When the file does
//! not state per-topic message counts, they are counted by reading message
//! headers (no payloads), chunk by chunk; damage stops a chunk, not the count.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use logsql::formats::{self, LogFormat};
use logsql::io::{FileReader, ReadAt};
use logsql::model::{Flow, Message, Selection, Summary};

use super::error::{CliError, CliResult};
use super::units::{bytes, duration, rfc3339};

/// Minimum width of the label column.
const LABEL: usize = 14;

/// Reader properties shown by other lines of the summary (`index`, `compression`).
const HIDDEN_PROPERTIES: &[&str] = &["index", "chunk_compression"];

/// Prints the summary of each file (directories stand for the log files under
/// them). A file that cannot be read is reported and the others still printed;
/// the command then fails.
pub fn run(paths: &[PathBuf], all: bool, out: &mut dyn Write) -> CliResult {
    let files = expand(paths)?;
    let mut failed = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let text = describe(file, all);
        let write = |out: &mut dyn Write, s: &str| write!(out, "{s}").and_then(|_| out.flush());
        if i > 0 {
            write(out, "\n").map_err(|e| CliError::io("writing output", e))?;
        }
        match text {
            Ok(text) => write(out, &text).map_err(|e| CliError::io("writing output", e))?,
            Err(e) if files.len() == 1 => return Err(e),
            Err(e) => {
                eprintln!("error: {e}");
                failed.push(file.display().to_string());
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::msg(format!(
            "{} of {} files could not be read: {}",
            failed.len(),
            files.len(),
            failed.join(", ")
        )))
    }
}

/// Files named directly, and the log files found (recursively) under directories.
fn expand(paths: &[PathBuf]) -> CliResult<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let mut found = Vec::new();
        walk(path, &mut found)?;
        found.sort();
        let before = out.len();
        for f in found {
            let is_log = FileReader::open(&f)
                .ok()
                .is_some_and(|r| formats::detect(&r).is_ok());
            if is_log {
                out.push(f);
            }
        }
        if out.len() == before {
            return Err(CliError::msg(format!(
                "{}: no log file found in this directory",
                path.display()
            )));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> CliResult {
    let entries = std::fs::read_dir(dir).map_err(|e| CliError::io(dir.display().to_string(), e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| CliError::io(dir.display().to_string(), e))?
            .path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Per-topic facts for the topic table.
#[derive(Default)]
struct TopicRow {
    types: Vec<String>,
    encodings: Vec<String>,
    count: Option<u64>,
}

/// The summary text of one file.
fn describe(path: &Path, all: bool) -> CliResult<String> {
    let reader = FileReader::open(path)?;
    let format = formats::detect(&reader)?;
    let summary = format.summary(&reader)?;
    // Formats with their own established listing (CARLA's recorder info) print it.
    if let Some(text) = format.info_text(&reader, &summary, all) {
        return Ok(text?);
    }
    let checksum = format.verify(&reader, &summary);

    // Per-topic counts: from the file, else counted by the engine.
    let mut topics: BTreeMap<String, TopicRow> = BTreeMap::new();
    for ch in summary.channels.values() {
        let row = topics.entry(ch.topic.clone()).or_default();
        let ty = ch.message_type.clone().unwrap_or_else(|| "-".into());
        if !row.types.contains(&ty) {
            row.types.push(ty);
        }
        let enc = if ch.message_encoding.is_empty() {
            "-".to_string()
        } else {
            ch.message_encoding.clone()
        };
        if !row.encodings.contains(&enc) {
            row.encodings.push(enc);
        }
    }
    let (mut start, mut end, mut total) =
        (summary.start_time, summary.end_time, summary.message_count);
    let mut count_note = None;
    let mut read_error = None;
    match summary.topic_message_counts() {
        Some(counts) => {
            for (topic, n) in counts {
                topics.entry(topic.to_string()).or_default().count = Some(n);
            }
        }
        None if summary.chunks.is_empty() => {
            total = total.or(Some(0));
        }
        None => {
            let counted = count_messages(format.as_ref(), &reader, &summary);
            for (topic, (n, s, e)) in counted.topics {
                topics.entry(topic).or_default().count = Some(n);
                start = min_opt(start, s);
                end = max_opt(end, e);
            }
            for t in topics.values_mut() {
                t.count.get_or_insert(0);
            }
            total = total.or(Some(counted.total));
            count_note = Some("counted from message headers: the file states no per-topic counts");
            read_error = counted.error;
        }
    }
    let span = match (start, end) {
        (Some(s), Some(e)) if e >= s => Some(e - s),
        _ => None,
    };

    let width = summary
        .properties
        .iter()
        .filter(|(k, _)| !HIDDEN_PROPERTIES.contains(&k.as_str()))
        .map(|(k, _)| k.chars().count() + 2)
        .fold(LABEL, usize::max);
    let mut s = String::new();
    let mut line = |label: &str, value: &str| {
        let label = if label.is_empty() {
            String::new()
        } else {
            format!("{label}:")
        };
        let _ = writeln!(s, "{label:<width$}{value}");
    };
    line("file", &path.display().to_string());
    line("format", format.name());
    line(
        "size",
        &format!("{} ({} bytes)", bytes(summary.file_size), summary.file_size),
    );
    let mut index_note = None;
    for (k, v) in &summary.properties {
        match k.as_str() {
            // Shown in the lines below, in more detail.
            "index" => index_note = Some(v.as_str()),
            k if HIDDEN_PROPERTIES.contains(&k) => {}
            _ => line(k, if v.is_empty() { "(none)" } else { v }),
        }
    }
    line("index", &index_line(summary.indexed, index_note));
    match &checksum {
        Some(Ok(())) => line("checksum", "ok (whole file verified)"),
        Some(Err(e)) => line("checksum", &format!("MISMATCH: {e}")),
        None => {}
    }
    if let Some(damage) = &summary.damage {
        line("damage", &damage.to_string());
        line(
            "",
            "(messages before the damage are readable; queries fail at it unless --on-error warn)",
        );
    }
    line("messages", &total.map_or("?".into(), |n| n.to_string()));
    if let Some(note) = count_note {
        line("", &format!("({note})"));
    }
    if let Some(e) = &read_error {
        line("read error", &e.to_string());
    }
    line("duration", &span.map_or("?".into(), duration));
    line("start", &start.map_or("?".into(), time_line));
    line("end", &end.map_or("?".into(), time_line));
    line("chunks", &summary.chunks.len().to_string());
    for (i, c) in compression_lines(&summary).iter().enumerate() {
        line(if i == 0 { "compression" } else { "" }, c);
    }
    line("channels", &summary.channels.len().to_string());
    line("topics", &topics.len().to_string());
    if !topics.is_empty() {
        let mut rows = vec![
            ["topic", "message_type", "encoding", "messages", "frequency"]
                .map(String::from)
                .to_vec(),
        ];
        for (topic, t) in &topics {
            let freq = match (t.count, span) {
                (Some(n), Some(d)) if d > 0 => format!("{:.2} Hz", n as f64 / (d as f64 / 1e9)),
                _ => "-".into(),
            };
            rows.push(vec![
                if topic.is_empty() {
                    "\"\"".into()
                } else {
                    topic.clone()
                },
                t.types.join(", "),
                t.encodings.join(", "),
                t.count.map_or("?".into(), |n| n.to_string()),
                freq,
            ]);
        }
        s.push_str(&align(&rows, &[false, false, false, true, true], "  "));
    }
    let _ = writeln!(s, "{:<width$}{}", "attachments:", summary.attachments.len());
    let _ = writeln!(s, "{:<width$}{}", "metadata:", summary.metadata.len());
    Ok(s)
}

/// Where the summary came from: the file's index, or a recovery walk.
fn index_line(indexed: bool, note: Option<&str>) -> String {
    match (indexed, note) {
        (true, None) => "read from the file's index".into(),
        (true, Some(n)) => format!("read from the file's index ({n})"),
        (false, Some(n)) if n.starts_with("rebuilt by") => format!("none usable; summary {n}"),
        (false, Some(n)) => format!("none usable; summary rebuilt by a recovery walk ({n})"),
        (false, None) => "none usable; summary rebuilt by a recovery walk of the file".into(),
    }
}

fn time_line(ns: u64) -> String {
    format!("{} ({ns} ns)", rfc3339(ns as i64))
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// One line per codec: chunk count, compressed and uncompressed sizes, ratio.
fn compression_lines(summary: &Summary) -> Vec<String> {
    #[derive(Default)]
    struct Codec {
        chunks: usize,
        compressed: u64,
        uncompressed: u64,
        unknown: bool,
    }
    let mut codecs: BTreeMap<&str, Codec> = BTreeMap::new();
    for c in &summary.chunks {
        let codec = codecs
            .entry(if c.compression.is_empty() {
                "none"
            } else {
                c.compression.as_str()
            })
            .or_default();
        codec.chunks += 1;
        codec.compressed += c.compressed_size;
        match c.uncompressed_size {
            Some(u) => codec.uncompressed += u,
            None => codec.unknown = true,
        }
    }
    if codecs.is_empty() {
        return vec!["-".into()];
    }
    codecs
        .iter()
        .map(|(name, c)| {
            let plural = if c.chunks == 1 { "" } else { "s" };
            if *name == "none" {
                return format!("none: {} chunk{plural}, {}", c.chunks, bytes(c.compressed));
            }
            let mut l = format!(
                "{name}: {} chunk{plural}, {} compressed",
                c.chunks,
                bytes(c.compressed)
            );
            if !c.unknown {
                let _ = write!(l, ", {} uncompressed", bytes(c.uncompressed));
                if c.compressed > 0 {
                    let _ = write!(
                        l,
                        " (ratio {:.2})",
                        c.uncompressed as f64 / c.compressed as f64
                    );
                }
            }
            l
        })
        .collect()
}

/// Columns padded to their widest cell, each line indented by `indent`.
fn align(rows: &[Vec<String>], right: &[bool], indent: &str) -> String {
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..ncols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|v| v.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut l = String::from(indent);
        for (c, cell) in row.iter().enumerate() {
            let w = widths[c];
            if c > 0 {
                l.push_str("  ");
            }
            if right.get(c).copied().unwrap_or(false) {
                let _ = write!(l, "{cell:>w$}");
            } else {
                let _ = write!(l, "{cell:<w$}");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

/// Messages counted by reading every chunk's message headers.
struct Counted {
    /// `(count, first log_time, last log_time)` per topic.
    topics: BTreeMap<String, (u64, Option<u64>, Option<u64>)>,
    total: u64,
    /// The first chunk that could not be read to its end.
    error: Option<logsql::Error>,
}

fn count_messages(format: &dyn LogFormat, reader: &dyn ReadAt, summary: &Summary) -> Counted {
    let mut out = Counted {
        topics: BTreeMap::new(),
        total: 0,
        error: None,
    };
    let sel = Selection {
        time: None,
        topics: None,
        payload: false,
        full_header: false,
    };
    for chunk in &summary.chunks {
        let mut sink = |m: Message<'_>| {
            let e = out
                .topics
                .entry(m.channel.topic.clone())
                .or_insert((0, None, None));
            e.0 += 1;
            e.1 = min_opt(e.1, Some(m.log_time));
            e.2 = max_opt(e.2, Some(m.log_time));
            out.total += 1;
            Flow::Continue
        };
        if let Err(err) = format.read_chunk(reader, summary, chunk, &sel, &mut sink) {
            out.error.get_or_insert(err);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_pads_columns() {
        let rows = vec![
            vec!["topic".to_string(), "messages".to_string()],
            vec!["/diagnostics".to_string(), "52".to_string()],
            vec!["/tf".to_string(), "774".to_string()],
        ];
        assert_eq!(
            align(&rows, &[false, true], "  "),
            "  topic         messages\n  /diagnostics        52\n  /tf                774\n"
        );
    }
}
