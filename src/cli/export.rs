//! `logsql export`: the (filtered) `messages` of a log written to Parquet (or
//! to MCAP, in log_time order, when OUTPUT ends in `.mcap`), or with
//! `--decode` one topic's decoded fields as typed columns (`read_topic`).
//!
//! The filter is SQL over the engine (`SELECT * FROM '<input>' WHERE topic IN
//! (...) AND log_time >= ... AND log_time < ...`), so topic and time pushdown
//! skip whole chunks. Batches stream from `execute_stream()` into an
//! `ArrowWriter` (zstd), one row group per ~128 MiB of encoded data, into an
//! exclusively created temporary file beside OUTPUT, renamed over it once
//! complete ([`logsql::ops::export`]). On a terminal, a
//! progress bar counts messages against the total the file summaries state.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use logsql::ops::export::{self, decoded_sql, expected_rows, export_sql, file_stem};
use logsql::write::mcap::{Compression as McapCompression, McapWriteOptions};
use logsql::write::sink::LogWrite;

use super::args::ExportArgs;
use super::error::{CliError, CliResult};
use super::{App, logger};
use logsql::ops::units::{bytes, parse_time, rfc3339};

/// Runs `logsql export` and prints a one-line result to `out`.
pub fn run(app: &App, a: &ExportArgs, out: &mut dyn Write) -> CliResult {
    let started = Instant::now();
    let time = |s: &Option<String>, flag: &str| {
        s.as_deref()
            .map(parse_time)
            .transpose()
            .map_err(|e| CliError::msg(format!("{flag}: {e}")))
    };
    let (start, end) = (time(&a.start, "--start")?, time(&a.end, "--end")?);
    if let (Some(s), Some(e)) = (start, end)
        && s >= e
    {
        return Err(CliError::msg(format!(
            "--start ({}) must be before --end ({})",
            rfc3339(s),
            rfc3339(e)
        )));
    }
    let topics: BTreeSet<&str> = a.topics.iter().map(String::as_str).collect();
    if !topics.is_empty() {
        check_topics(&a.input, &topics, &file_topics(app, &a.input)?)?;
    }
    if let Some(format) = a.as_files {
        return super::export_files::run(app, a, format, (start, end), started, out);
    }
    let video = a
        .output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("mp4"));
    if video {
        return super::export_video::run(app, a, start, end, started, out);
    }
    if let Some(flag) = [
        (a.fps.is_some(), "--fps"),
        (a.quality.is_some(), "--quality"),
    ]
    .iter()
    .find_map(|(set, flag)| set.then_some(flag))
    {
        return Err(CliError::msg(format!(
            "{flag} applies to a video (an .mp4 OUTPUT)"
        )));
    }
    let mcap = is_mcap(&a.output);
    let mcap_only = [
        (a.compression.is_some(), "--compression"),
        (a.chunk_size.is_some(), "--chunk-size"),
        (a.no_summary, "--no-summary"),
    ];
    if let Some((_, flag)) = mcap_only.iter().find(|(set, _)| *set && !mcap) {
        return Err(CliError::msg(format!(
            "{flag} applies to MCAP output (an OUTPUT ending in .mcap)"
        )));
    }
    if a.decode {
        if mcap {
            return Err(CliError::msg(
                "--decode writes Parquet (typed columns); MCAP output keeps the raw messages: leave out --decode",
            ));
        }
        return run_decoded(app, a, start, end, started, out);
    }
    let mut sql = export_sql(&a.input, &topics, start, end);
    log::info!("export: {sql}");

    // The expected row count, when the summaries state it exactly.
    let total = if start.is_none() && end.is_none() {
        app.rt.block_on(expected_rows(&app.ctx, &a.input, &topics))
    } else {
        None
    };
    let rows = if mcap {
        // Files of a directory or glob, and the chunks of one file read in
        // parallel, merged into one timeline.
        sql.push_str(" ORDER BY log_time");
        log::info!("export: {sql}");
        let options = McapWriteOptions {
            compression: match a.compression.as_deref() {
                Some(c) => McapCompression::parse(c).map_err(|e| CliError::msg(e.to_string()))?,
                None => McapCompression::Zstd,
            },
            chunk_size: a
                .chunk_size
                .unwrap_or(McapWriteOptions::default().chunk_size),
            summary: !a.no_summary,
        };
        write_mcap_file(app, &a.input, &sql, &a.output, total, &options)?
    } else {
        write_parquet(app, &sql, &a.output, total)?
    };
    report(out, rows, &a.output, started)
}

/// Whether `output` names an MCAP file (`.mcap`, any case).
fn is_mcap(output: &Path) -> bool {
    output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("mcap"))
}

/// Streams the result of `sql` into an MCAP file at `output`
/// ([`logsql::ops::export::write_log_of`]), with a progress bar on a
/// terminal. Returns the rows written.
///
/// As with Parquet, a query that fails after delivering rows (a damaged file)
/// leaves a complete MCAP file of those rows, and the error says so.
fn write_mcap_file(
    app: &App,
    input: &str,
    sql: &str,
    output: &Path,
    total: Option<u64>,
    options: &McapWriteOptions,
) -> CliResult<u64> {
    let progress = Progress::new(total);
    let write = LogWrite::Mcap(options.clone());
    let sqls = [sql.to_string()];
    let driven = app.rt.block_on(export::write_log_of(
        &app.ctx,
        input,
        &sqls,
        output,
        &write,
        &|n| progress.set(n),
    ))?;
    drop(progress);
    let rows = driven.report.rows;
    match driven.stream_error {
        None => Ok(rows),
        Some(e) => Err(CliError::from(e.context(format!(
            "{} holds the {rows} rows read before the error (a complete MCAP file)",
            output.display()
        )))),
    }
}

/// `export --decode`: one topic into OUTPUT, or every chosen (or every) topic
/// into `OUTPUT/<topic>.parquet`.
fn run_decoded(
    app: &App,
    a: &ExportArgs,
    start: Option<i64>,
    end: Option<i64>,
    started: Instant,
    out: &mut dyn Write,
) -> CliResult {
    let window = |t: &str| {
        let topics = BTreeSet::from([t]);
        if start.is_none() && end.is_none() {
            app.rt.block_on(expected_rows(&app.ctx, &a.input, &topics))
        } else {
            None
        }
    };
    if let [topic] = a.topics.as_slice()
        && !a.output.is_dir()
    {
        let sql = decoded_sql(&a.input, topic, a.flatten, start, end);
        log::info!("export: {sql}");
        let rows = write_parquet(app, &sql, &a.output, window(topic))?;
        return report(out, rows, &a.output, started);
    }
    let topics: Vec<String> = if a.topics.is_empty() {
        file_topics(app, &a.input)?
    } else {
        a.topics.clone()
    };
    std::fs::create_dir_all(&a.output)
        .map_err(|e| CliError::io(a.output.display().to_string(), e))?;
    let mut skipped = 0;
    for topic in &topics {
        let path = a.output.join(format!("{}.parquet", file_stem(topic)));
        let sql = decoded_sql(&a.input, topic, a.flatten, start, end);
        log::info!("export: {sql}");
        match write_parquet(app, &sql, &path, window(topic)) {
            Ok(rows) => report(out, rows, &path, started)?,
            // With every topic chosen implicitly, a topic without a decodable
            // schema is reported and skipped.
            Err(e) if a.topics.is_empty() => {
                skipped += 1;
                writeln!(out, "skipped {topic}: {e}")
                    .map_err(|e| CliError::io("writing output", e))?;
            }
            Err(e) => return Err(e),
        }
    }
    if skipped == topics.len() && !topics.is_empty() {
        return Err(CliError::msg(format!(
            "no topic of {} could be decoded",
            a.input
        )));
    }
    Ok(())
}

/// The distinct topics of the log(s) `input` names, sorted.
fn file_topics(app: &App, input: &str) -> CliResult<Vec<String>> {
    Ok(app.rt.block_on(export::topics(&app.ctx, input))?)
}

/// Fails, listing the topics `input` has, when some of `wanted` is not one of them.
pub fn check_topics(input: &str, wanted: &BTreeSet<&str>, known: &[String]) -> CliResult {
    let missing: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|t| !known.iter().any(|k| k == t))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let listed = if known.is_empty() {
        "it has no topics".to_string()
    } else {
        format!("its topics: {}", known.join(", "))
    };
    Err(CliError::msg(format!(
        "--topic {}: no such topic in {input}; {listed}",
        missing.join(", ")
    )))
}

/// Streams the result of `sql` into a Parquet file at `output`
/// ([`logsql::ops::export::write_parquet`]), with a progress bar on a
/// terminal. Returns the rows written; a query that failed after delivering
/// rows leaves a complete file of them, and the error says so.
fn write_parquet(app: &App, sql: &str, output: &Path, total: Option<u64>) -> CliResult<u64> {
    let progress = Progress::new(total);
    let written = app
        .rt
        .block_on(export::write_parquet_of(&app.ctx, sql, output, &|n| {
            progress.set(n)
        }))?;
    drop(progress);
    match written.failed {
        None => Ok(written.rows),
        Some(e) => Err(CliError::from(e.context(format!(
            "{} holds the {} rows read before the error (a complete Parquet file)",
            output.display(),
            written.rows
        )))),
    }
}

/// Prints the one-line result of writing `output`.
fn report(out: &mut dyn Write, rows: u64, output: &Path, started: Instant) -> CliResult {
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    writeln!(
        out,
        "exported {rows} rows to {} ({}) in {:.2} s",
        output.display(),
        bytes(size),
        started.elapsed().as_secs_f64()
    )
    .and_then(|_| out.flush())
    .map_err(|e| CliError::io("writing output", e))
}

/// A progress bar (known total) or spinner on stderr, only when stderr is a terminal.
struct Progress(Option<ProgressBar>);

impl Progress {
    fn new(total: Option<u64>) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self(None);
        }
        let (bar, template) = match total {
            Some(n) => (
                ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
                "{bar:40.cyan/blue} {human_pos}/{human_len} messages ({per_sec}, eta {eta})",
            ),
            None => (
                ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
                "{spinner} {human_pos} messages ({per_sec}, {elapsed})",
            ),
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        logger::set_progress(Some(bar.clone()));
        Self(Some(bar))
    }

    fn set(&self, rows: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(rows);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            logger::set_progress(None);
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_topics_are_listed_with_the_known_ones() {
        let known = vec!["/a".to_string(), "/b".to_string()];
        let wanted: BTreeSet<&str> = ["/a"].into_iter().collect();
        assert!(check_topics("run.bag", &wanted, &known).is_ok());
        let wanted: BTreeSet<&str> = ["/a", "/nope", "/x"].into_iter().collect();
        assert_eq!(
            check_topics("run.bag", &wanted, &known)
                .unwrap_err()
                .to_string(),
            "--topic /nope, /x: no such topic in run.bag; its topics: /a, /b"
        );
        assert_eq!(
            check_topics("e.mcap", &wanted, &[])
                .unwrap_err()
                .to_string(),
            "--topic /a, /nope, /x: no such topic in e.mcap; it has no topics"
        );
    }
}
