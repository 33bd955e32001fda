//! `logsql clips SOURCE --topic T --when CONDITION -o DIR`: one complete
//! recording per moment. The moments are `intervals(SOURCE, T, CONDITION,
//! max_gap, min_duration)`; each is padded by `--before` / `--after`, padded
//! windows of one recording that overlap merge, and every message of the
//! window (of every topic, or of `--topics`) is written, in log-time order,
//! with the recording's channels, schemas, metadata and attachments, as an
//! MCAP file, a ROS1 bag or a ROS 2 bag directory (`recover`'s
//! `write_windows`, on [`logsql::ops::export::write_log_with`]); an MCAP clip
//! also holds a `logsql.clip` metadata record: its source, window and moments.
//! Each window's query is a time filter, so only the chunks it overlaps are
//! read. `logsql clip SOURCE --start T --end T -o OUT` writes one window.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;

use logsql::ops::export::{clip_metadata as clip_record, clip_sql};
use logsql::ops::sql_literal;
use logsql::ops::units::{bytes, parse_duration, parse_time, rfc3339};
use logsql::write::sink::LogWrite;
use logsql_readers::model::MetadataInfo;

use super::App;
use super::args::{ClipArgs, ClipsArgs};
use super::error::{CliError, CliResult};

/// One clip to write: the recording and its window (ns, both inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Window {
    file: String,
    start: i64,
    end: i64,
    /// The moments it holds (ns, both inclusive).
    moments: Vec<(i64, i64)>,
}

/// Runs `logsql clips`.
pub fn run(app: &App, a: &ClipsArgs, out: &mut dyn Write) -> CliResult {
    let started = Instant::now();
    let ns = |text: &Option<String>, flag: &str| -> CliResult<i64> {
        text.as_deref().map_or(Ok(0), |t| {
            let d = parse_duration(t).map_err(|e| CliError::msg(format!("{flag}: {e}")))?;
            i64::try_from(d.as_nanos()).map_err(|_| CliError::msg(format!("{flag}: too long")))
        })
    };
    let (before, after) = (ns(&a.before, "--before")?, ns(&a.after, "--after")?);
    let (ext, write) = match a.as_format.as_deref().unwrap_or("mcap") {
        f @ ("mcap" | "bag") => (format!(".{f}"), f),
        "db3" => (String::new(), "db3"),
        other => {
            return Err(CliError::msg(format!(
                "--as {other}: clips are written as mcap, bag or db3"
            )));
        }
    };
    let write = LogWrite::of_format(write, &HashMap::new())
        .map_err(CliError::from)?
        .ok_or_else(|| CliError::msg("no writer for the clips' format"))?;
    let intervals = format!(
        "SELECT file, CAST(start_time AS BIGINT) AS lo, CAST(end_time AS BIGINT) AS hi FROM intervals({}, {}, {}, {}, {}) ORDER BY file, lo",
        sql_literal(&a.source),
        sql_literal(&a.topic),
        sql_literal(&a.when),
        sql_literal(a.max_gap.as_deref().unwrap_or("0 s")),
        sql_literal(a.min_duration.as_deref().unwrap_or("0 s")),
    );
    log::info!("clips: {intervals}");
    let batches = app
        .rt
        .block_on(async { app.ctx.sql(&intervals).await?.collect().await })?;
    let mut moments = Vec::new();
    for b in &batches {
        let (f, lo, hi) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_primitive::<Int64Type>(),
        );
        for i in (0..b.num_rows()).filter(|&i| !lo.is_null(i) && !hi.is_null(i)) {
            moments.push((f.value(i).to_string(), lo.value(i), hi.value(i)));
        }
    }
    let windows = windows(&moments, before, after);
    std::fs::create_dir_all(&a.output)
        .map_err(|e| CliError::io(a.output.display().to_string(), e))?;
    let topics: BTreeSet<&str> = a.topics.iter().map(String::as_str).collect();
    let mut written = 0u64;
    let mut read_total = 0u64;
    for (k, w) in windows.iter().enumerate() {
        let path = clip_path(&a.output, &w.file, k, &ext);
        let mut record = clip_record(&w.file, (w.start, w.end));
        let moments: Vec<String> = w
            .moments
            .iter()
            .map(|&(lo, hi)| format!("{}/{}", rfc3339(lo), rfc3339(hi)))
            .collect();
        let given = |v: &Option<String>| v.clone().unwrap_or_else(|| "0 s".to_string());
        record.metadata.extend([
            ("moments".to_string(), moments.join(",")),
            ("topic".to_string(), a.topic.clone()),
            ("condition".to_string(), a.when.clone()),
            ("max_gap".to_string(), given(&a.max_gap)),
            ("min_duration".to_string(), given(&a.min_duration)),
            ("before".to_string(), given(&a.before)),
            ("after".to_string(), given(&a.after)),
        ]);
        let (rows, read) = write_clip(
            app,
            &w.file,
            &topics,
            (w.start, w.end),
            &path,
            &write,
            record,
        )?;
        written += rows;
        read_total += read;
        writeln!(
            out,
            "{}: {} messages of {} from {} to {} ({} moment{})",
            path.display(),
            rows,
            shown(&w.file),
            rfc3339(w.start),
            rfc3339(w.end),
            w.moments.len(),
            if w.moments.len() == 1 { "" } else { "s" }
        )
        .map_err(|e| CliError::io("stdout", e))?;
    }
    writeln!(
        out,
        "{} clip{} of {} moment{}, {written} messages, in {:.2} s; the clips read {}",
        windows.len(),
        if windows.len() == 1 { "" } else { "s" },
        moments.len(),
        if moments.len() == 1 { "" } else { "s" },
        started.elapsed().as_secs_f64(),
        bytes(read_total)
    )
    .map_err(|e| CliError::io("stdout", e))
}

/// Writes the messages of `source` (of `topics`, or all) from `window.0` to
/// `window.1` (ns, inclusive) to `path` as `write` says, with `record` after
/// the source's metadata (MCAP); the messages written and the bytes read.
fn write_clip(
    app: &App,
    source: &str,
    topics: &BTreeSet<&str>,
    window: (i64, i64),
    path: &Path,
    write: &LogWrite,
    record: MetadataInfo,
) -> CliResult<(u64, u64)> {
    let sql = clip_sql(source, topics, window.0, window.1);
    log::info!("clips: {sql}");
    let (report, read) = super::recover::write_windows(
        app,
        source,
        std::slice::from_ref(&sql),
        path,
        write,
        vec![record],
    )?;
    Ok((report.rows, read))
}

/// `logsql clip SOURCE --start T --end T -o OUT`: one window of a recording
/// (or of a directory's recordings, merged in time), `--end` included, as
/// MCAP (`OUT.mcap`), a ROS1 bag (`OUT.bag`) or a ROS 2 bag (any other
/// OUT: a directory).
pub fn run_one(app: &App, a: &ClipArgs, out: &mut dyn Write) -> CliResult {
    let started = Instant::now();
    let time =
        |t: &str, flag: &str| parse_time(t).map_err(|e| CliError::msg(format!("{flag}: {e}")));
    let (start, end) = (time(&a.start, "--start")?, time(&a.end, "--end")?);
    if end < start {
        return Err(CliError::msg(format!(
            "--end ({}) is before --start ({})",
            rfc3339(end),
            rfc3339(start)
        )));
    }
    let format = match a.output.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("mcap") => "mcap",
        Some(e) if e.eq_ignore_ascii_case("bag") => "bag",
        _ => "db3",
    };
    let write = LogWrite::of_format(format, &HashMap::new())
        .map_err(CliError::from)?
        .ok_or_else(|| CliError::msg("no writer for the clip's format"))?;
    let topics: BTreeSet<&str> = a.topics.iter().map(String::as_str).collect();
    let record = clip_record(&a.source, (start, end));
    let (rows, read) = write_clip(
        app,
        &a.source,
        &topics,
        (start, end),
        &a.output,
        &write,
        record,
    )?;
    writeln!(
        out,
        "{}: {rows} messages of {} from {} to {} in {:.2} s; {} read ({read} bytes)",
        a.output.display(),
        shown(&a.source),
        rfc3339(start),
        rfc3339(end),
        started.elapsed().as_secs_f64(),
        bytes(read)
    )
    .map_err(|e| CliError::io("stdout", e))
}

/// The moments padded by `before` and `after`; windows of one recording
/// that overlap (or touch) merge. `moments` are in (file, start) order.
fn windows(moments: &[(String, i64, i64)], before: i64, after: i64) -> Vec<Window> {
    let mut out: Vec<Window> = Vec::new();
    for (file, lo, hi) in moments {
        let (start, end) = (lo.saturating_sub(before), hi.saturating_add(after));
        match out.last_mut() {
            Some(w) if &w.file == file && start <= w.end => {
                w.end = w.end.max(end);
                w.moments.push((*lo, *hi));
            }
            _ => out.push(Window {
                file: file.clone(),
                start,
                end,
                moments: vec![(*lo, *hi)],
            }),
        }
    }
    out
}

/// A recording as the user names it: below the working directory, relative
/// to it.
fn shown(file: &str) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            Path::new(file)
                .strip_prefix(cwd)
                .ok()
                .map(|p| p.display().to_string())
        })
        .unwrap_or_else(|| file.to_string())
}

/// `DIR/<recording's stem>_<k>.<ext>`, `k` counting the clips of the run.
fn clip_path(dir: &Path, file: &str, k: usize, ext: &str) -> PathBuf {
    let name = file.rsplit('/').next().unwrap_or(file);
    let stem = name
        .split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("clip");
    dir.join(format!("{stem}_{k:03}{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_moments_that_overlap_in_one_recording_merge() {
        let m = |f: &str, lo, hi| (f.to_string(), lo, hi);
        let got = windows(
            &[
                m("a", 100, 200),
                m("a", 250, 300),
                m("a", 1000, 1000),
                m("b", 260, 270),
            ],
            50,
            10,
        );
        let w = |f: &str, start, end, moments: &[(i64, i64)]| Window {
            file: f.into(),
            start,
            end,
            moments: moments.to_vec(),
        };
        assert_eq!(
            got,
            [
                w("a", 50, 310, &[(100, 200), (250, 300)]),
                w("a", 950, 1010, &[(1000, 1000)]),
                w("b", 210, 280, &[(260, 270)])
            ]
        );
        assert_eq!(
            clip_path(Path::new("out"), "/x/run.mcap", 7, ".bag"),
            Path::new("out/run_007.bag")
        );
    }
}
