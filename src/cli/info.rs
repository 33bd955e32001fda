//! `logsql info`: a human summary of log files, in the spirit of `mcap info`.
//!
//! The facts are [`logsql::ops::info`]'s (the summary as queries read it,
//! per-topic counts from message headers where the file states none,
//! cameras, timelines); this module prints them as aligned text or JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use logsql::CachedSummary;
use logsql::FileLocation;
use logsql::LogsqlOptions;
use logsql::ops::info::{self, AllTimes, Codec, Facts, FileTimes, Gather, InfoError, InfoFile};
use logsql::ops::info_json::{self, index_line};
use logsql_readers::limits::Limits;
use serde_json::Value;

use super::App;
use super::args::Format;
use super::error::{CliError, CliResult};
use super::timeline;
use logsql::ops::units::{bytes, duration, rfc3339};

/// Minimum width of the label column.
const LABEL: usize = 14;

/// What `info` prints and checks.
#[derive(Debug, Clone, Copy)]
pub struct InfoOptions {
    /// Also print the format's detailed listing (text output only).
    pub all: bool,
    /// Text (`table`), a JSON array of summaries (`json`) or one per line (`ndjson`).
    pub format: Format,
    /// Verify whole-file checksums (off with `--no-verify`).
    pub verify: bool,
    /// Print (or put in the JSON) each topic's timeline and gaps.
    pub timeline: bool,
    /// Draw timelines with ASCII characters instead of Unicode blocks.
    pub ascii: bool,
    /// Escape control characters in the topic table's cells before aligning
    /// them (stdout is a terminal; the rest of the text is escaped as written).
    pub escape: bool,
}

/// Prints the summary of each file (directories stand for the log files under
/// them; `s3://`, `https://`, ... URLs are read with range requests). A file
/// that cannot be read is reported and the others still printed; the command
/// then fails.
pub fn run(app: &App, paths: &[String], opts: InfoOptions, out: &mut dyn Write) -> CliResult {
    if opts.format == Format::Csv {
        return Err(CliError::msg(
            "info prints text (--format table), json or ndjson, not csv",
        ));
    }
    let files = expand(app, paths)?;
    let count = files.len();
    let limits = LogsqlOptions::from_config(app.ctx.state().config_options()).limits();
    let mut failed = Vec::new();
    let mut objects = Vec::new();
    let write = |out: &mut dyn Write, s: &str| {
        write!(out, "{s}")
            .and_then(|_| out.flush())
            .map_err(|e| CliError::io("writing output", e))
    };
    // Several files: one more timeline, across all of them.
    let distinct: std::collections::BTreeSet<&str> =
        files.iter().map(|f| f.name.as_str()).collect();
    let mut all = (opts.timeline && distinct.len() > 1).then(AllTimes::default);
    for (i, file) in files.into_iter().enumerate() {
        let described = match file.read {
            Ok((loc, cached)) => {
                let render = |e| CliError::from(e).to_string();
                let cameras =
                    app.rt
                        .block_on(info::cameras(&app.ctx, &loc, &cached.summary, &render));
                app.rt
                    .block_on(
                        app.rt
                            .spawn_blocking(move || describe(&loc, &cached, opts, limits, cameras)),
                    )
                    .map_err(|e| CliError::msg(format!("info task failed: {e}")))?
            }
            Err(e) => Err(e.into()),
        };
        let described = described.map(|(description, times)| {
            if let (Some(all), Some(times)) = (all.as_mut(), times) {
                all.add(file.name.clone(), times);
            }
            description
        });
        match described {
            Ok(Described::Text(text)) => {
                if i > 0 {
                    write(out, "\n")?;
                }
                write(out, &text)?;
            }
            Ok(Described::Json(v)) if opts.format == Format::Ndjson => {
                write(out, &format!("{v}\n"))?;
            }
            Ok(Described::Json(v)) => objects.push(v),
            Err(e) if count == 1 => return Err(e),
            Err(e) => {
                eprintln!("error: {}", super::terminal::for_stderr(&e.to_string()));
                failed.push(file.name);
            }
        }
    }
    match all.and_then(|all| describe_all(all, opts)) {
        Some(Described::Text(text)) => write(out, &format!("\n{text}"))?,
        Some(Described::Json(v)) if opts.format == Format::Ndjson => write(out, &format!("{v}\n"))?,
        Some(Described::Json(v)) => objects.push(v),
        None => {}
    }
    if opts.format == Format::Json {
        let text = serde_json::to_string_pretty(&objects)
            .map_err(|e| CliError::msg(format!("writing JSON: {e}")))?;
        write(out, &format!("{text}\n"))?;
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::msg(format!(
            "{} of {} files could not be read: {}",
            failed.len(),
            count,
            failed.join(", ")
        )))
    }
}

/// The files `paths` name, with their summaries ([`info::files`]).
fn expand(app: &App, paths: &[String]) -> CliResult<Vec<InfoFile>> {
    let state = app.ctx.state();
    app.rt
        .block_on(info::files(&state, paths))
        .map_err(|e| match e {
            InfoError::Read(e) => CliError::from(e),
            InfoError::Query(e) => CliError::from(e),
        })
}

/// One file's summary, as text or as a JSON object.
enum Described {
    Text(String),
    Json(Value),
}

/// The summary of one file, as text or JSON, and its message times when the
/// timelines were read. Runs on a blocking thread (object stores block on it).
fn describe(
    loc: &FileLocation,
    cached: &CachedSummary,
    opts: InfoOptions,
    limits: Limits,
    cameras: Vec<info::Camera>,
) -> CliResult<(Described, Option<FileTimes>)> {
    // Formats with their own established listing (CARLA's recorder info) print it.
    if opts.format == Format::Table {
        let reader = loc.open()?;
        if let Some(text) = cached
            .format
            .info_text(reader.as_ref(), &cached.summary, opts.all)
        {
            return Ok((Described::Text(text?), None));
        }
    }
    let what = Gather {
        verify: opts.verify,
        timeline: opts.timeline,
    };
    let (mut facts, times) = info::gather(loc, cached, what, limits)?;
    facts.cameras = cameras;
    let description = if opts.format == Format::Table {
        Described::Text(text(&facts, opts.ascii, opts.escape))
    } else {
        Described::Json(info_json::facts(&facts))
    };
    Ok((description, times))
}

/// The timeline across every file, as text or JSON (`None` without messages).
fn describe_all(mut all: AllTimes, opts: InfoOptions) -> Option<Described> {
    let timeline = all.timeline()?;
    let n = all.files.len();
    Some(if opts.format == Format::Table {
        Described::Text(format!(
            "all {n} files:\ntimeline:\n{}",
            timeline::text(&timeline, opts.ascii)
        ))
    } else {
        Described::Json(info_json::across(&all, &timeline))
    })
}

/// The summary as aligned text.
fn text(f: &Facts, ascii: bool, escape: bool) -> String {
    let width = f
        .properties
        .iter()
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
    line("file", &f.file);
    line("format", f.format);
    line("size", &format!("{} ({} bytes)", bytes(f.size), f.size));
    for (k, v) in &f.properties {
        line(k, if v.is_empty() { "(none)" } else { v });
    }
    line("index", &index_line(f.indexed, f.index_note.as_deref()));
    match &f.checksum {
        Some(Ok(())) => line("checksum", "ok (whole file verified)"),
        Some(Err(e)) => line("checksum", &format!("MISMATCH: {e}")),
        None => {}
    }
    if let Some(damage) = &f.damage {
        line("damage", damage);
        line(
            "",
            "(messages before the damage are readable; queries fail at it unless --on-error warn)",
        );
    }
    line(
        "messages",
        &f.messages.map_or("?".into(), |n| n.to_string()),
    );
    if let Some(note) = f.count_note {
        line("", &format!("({note})"));
    }
    if let Some(e) = &f.read_error {
        line("read error", e);
    }
    line("duration", &f.span.map_or("?".into(), duration));
    line("start", &f.start.map_or("?".into(), time_line));
    line("end", &f.end.map_or("?".into(), time_line));
    line("chunks", &f.chunks.to_string());
    for (i, c) in compression_lines(&f.codecs).iter().enumerate() {
        line(if i == 0 { "compression" } else { "" }, c);
    }
    line("channels", &f.channels.to_string());
    line("topics", &f.topics.len().to_string());
    if !f.topics.is_empty() {
        let mut rows = vec![
            ["topic", "message_type", "encoding", "messages", "frequency"]
                .map(String::from)
                .to_vec(),
        ];
        let cell = |s: String| match escape {
            true => super::terminal::escape(&s).into_owned(),
            false => s,
        };
        for (topic, t) in &f.topics {
            rows.push(vec![
                if topic.is_empty() {
                    "\"\"".into()
                } else {
                    cell(topic.clone())
                },
                cell(t.types.join(", ")),
                cell(t.encodings.join(", ")),
                t.count.map_or("?".into(), |n| n.to_string()),
                f.frequency(t.count)
                    .map_or("-".into(), |hz| format!("{hz:.2} Hz")),
            ]);
        }
        s.push_str(&align(&rows, &[false, false, false, true, true], "  "));
    }
    if !f.cameras.is_empty() {
        let rows: Vec<Vec<String>> = f
            .cameras
            .iter()
            .map(|c| match &c.first {
                Ok((enc, w, h)) => vec![c.topic.clone(), format!("{w}x{h}"), enc.clone()],
                Err(e) => vec![c.topic.clone(), "?".into(), e.clone()],
            })
            .collect();
        let _ = writeln!(s, "cameras:      (first image of each topic)");
        s.push_str(&align(&rows, &[false, true, false], "  "));
    }
    if let Some(t) = &f.timeline {
        let _ = writeln!(s, "timeline:");
        s.push_str(&timeline::text(t, ascii));
    }
    let _ = writeln!(s, "{:<width$}{}", "attachments:", f.attachments);
    let _ = writeln!(s, "{:<width$}{}", "metadata:", f.metadata);
    s
}

fn time_line(ns: u64) -> String {
    format!("{} ({ns} ns)", rfc3339(ns as i64))
}

/// One line per codec: chunk count, compressed and uncompressed sizes, ratio.
fn compression_lines(codecs: &BTreeMap<String, Codec>) -> Vec<String> {
    if codecs.is_empty() {
        return vec!["-".into()];
    }
    codecs
        .iter()
        .map(|(name, c)| {
            let plural = if c.chunks == 1 { "" } else { "s" };
            if name == "none" {
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
