//! `logsql recover`: every readable message of a damaged log into a valid,
//! indexed, time-sorted MCAP file (or, with `--to`, a ROS1 bag or a ROS 2
//! bag directory: [`super::recover_to`]), and a report of what was lost.
//!
//! The loss report is `doctor`'s ([`super::doctor`]): the byte ranges no
//! reader can use, the chunks dropped and, where the file's index states
//! them, the messages lost. The messages are then written as `logsql export
//! OUT.mcap` writes them ([`super::export::write_mcap_file`]): `SELECT * FROM
//! 'INPUT' ORDER BY log_time` under `logsql.on_error = 'warn'`, with each
//! channel's schema, metadata and attachments from the input, into a
//! temporary file renamed over OUTPUT only when complete.
//!
//! Memory does not grow with the input. A file whose chunks are in time
//! order streams through without a sort. Otherwise the time axis is cut into
//! windows ([`time_windows`]) that each hold about half of `--memory-limit`
//! of messages by the chunks' stated times and sizes, and the windows are
//! sorted and written one after the other (`... WHERE log_time >= a AND
//! log_time < b ORDER BY log_time`; time pushdown reads only the chunks
//! overlapping each window). A window that holds more than estimated is
//! spilled to temporary files by DataFusion's sort.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use std::sync::Arc;

use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream, execute_stream};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use logsql::LogsqlOptions;
use logsql::ops::recover_windows::{chunk_spans, time_windows};
use logsql::write::mcap::{StreamErrors, Target};
use logsql::write::sink::{LogSources, LogWrite, Report, write_log};
use logsql::write::sources::ScannedFiles;
use logsql_readers::formats;
use logsql_readers::io::FileReader;
use logsql_readers::limits::Limits;
use logsql_readers::model::Summary;

use super::App;
use super::args::RecoverArgs;
use super::doctor::{self, UNREADABLE};
use super::error::{CliError, CliResult};
use super::recover_to;

/// Rows per batch while recovering: payloads may be large, and the sort
/// of an input out of time order reserves and spills whole batches.
const SORT_BATCH_ROWS: usize = 256;

/// Recovers `a.input` into `a.output` and prints the report to `out`.
pub fn run(app: &mut App, a: &RecoverArgs, out: &mut dyn Write) -> CliResult {
    let started = Instant::now();
    let to = recover_to::infer(a.to, &a.output);
    refuse_same_file(&a.input, &a.output)?;
    let limits = LogsqlOptions::from_config(app.ctx.state().config_options()).limits();
    let checked: Vec<_> = doctor::expand(std::slice::from_ref(&a.input))?
        .iter()
        .map(|p| doctor::check_path(p, &limits))
        .collect();
    let mut report = String::new();
    for c in &checked {
        report.push_str(&doctor::text(c));
    }
    write(out, &report)?;
    if checked.iter().all(|c| c.report.is_err()) {
        return Err(CliError::Status(UNREADABLE));
    }
    let summaries = summaries(&checked, &limits);
    let writer = recover_to::writer(to, &a.input, &summaries)?;
    for set in [
        "SET logsql.on_error = 'warn'".to_string(),
        // Small batches: a sort holds (and spills) payloads a few at a time.
        format!("SET datafusion.execution.batch_size = {SORT_BATCH_ROWS}"),
        format!(
            "SET datafusion.runtime.memory_limit = '{}K'",
            (a.memory_limit / 1024).max(1)
        ),
    ] {
        app.run_statement(&set, out)?;
    }
    let chunks = chunk_spans(&summaries);
    let windows = time_windows(&chunks, (a.memory_limit / 2) as u64);
    let sqls: Vec<String> = windows
        .iter()
        .map(|&(start, end)| {
            let mut sql =
                logsql::ops::export::export_sql(&a.input, &Default::default(), start, end);
            if windows.len() > 1 || checked.len() > 1 {
                // Payloads copied out of the chunk buffers they view: a
                // window's sort (or the sort that merges several files)
                // then holds its own messages, not every chunk any of them
                // came from.
                sql = sql.replacen(
                    "SELECT *",
                    "SELECT * EXCLUDE (data), arrow_cast(data, 'Binary') AS data",
                    1,
                );
            }
            sql.push_str(" ORDER BY log_time");
            sql
        })
        .collect();
    log::debug!("recover: {} time window(s): {sqls:?}", sqls.len());
    // The damage was reported above: the scans' warnings (one per window)
    // would only repeat it.
    let level = log::max_level();
    log::set_max_level(level.min(log::LevelFilter::Error));
    let written = write_windows(app, &a.input, &sqls, &a.output, &writer);
    log::set_max_level(level);
    let Report { rows, left_out } = written?;
    let read: u64 = checked
        .iter()
        .filter_map(|c| c.report.as_ref().ok())
        .map(|r| r.messages)
        .sum();
    if left_out > 0 {
        write(
            out,
            &format!(
                "left out {left_out} messages without a topic and type (their connection record was lost): {} cannot hold them (an MCAP output keeps them)\n",
                a.output.display()
            ),
        )?;
    }
    write(
        out,
        &format!(
            "recovered {rows} messages into {} ({read} read by the check) in {:.1} s\n",
            a.output.display(),
            started.elapsed().as_secs_f64()
        ),
    )
}

/// The summaries of every readable file checked.
fn summaries(checked: &[doctor::Checked], limits: &Limits) -> Vec<Summary> {
    checked
        .iter()
        .filter(|c| c.report.is_ok())
        .filter_map(|c| {
            let f = FileReader::open(&c.path).ok()?;
            formats::detect(&f)
                .and_then(|format| format.summary_with_limits(&f, limits))
                .ok()
        })
        .collect()
}

/// The rows of each of `sqls`, one after the other, as one stream, and the
/// files the queries scan.
fn window_stream(
    app: &App,
    input: &str,
    sqls: &[String],
) -> CliResult<(SendableRecordBatchStream, ScannedFiles)> {
    // One local file is read in one partition (as `export` reads it): its
    // scan in declared time order then needs no merge of partitions.
    let ctx = if Path::new(input).is_file() {
        let mut one = app.ctx.state();
        one.config_mut().options_mut().execution.target_partitions = 1;
        SessionContext::new_with_state(one)
    } else {
        app.ctx.clone()
    };
    let mut plans: Vec<Arc<dyn ExecutionPlan>> = Vec::with_capacity(sqls.len());
    for sql in sqls {
        let df = app.rt.block_on(ctx.sql(sql))?;
        plans.push(app.rt.block_on(df.create_physical_plan())?);
    }
    let scanned = ScannedFiles::of_plan(&plans[0]);
    let schema = plans[0].schema();
    let task = ctx.task_ctx();
    let batches = futures::stream::iter(plans).flat_map(move |plan| {
        match execute_stream(plan, Arc::clone(&task)) {
            Ok(stream) => stream.boxed(),
            Err(e) => futures::stream::once(async { Err(e) }).boxed(),
        }
    });
    let stream: SendableRecordBatchStream =
        Box::pin(RecordBatchStreamAdapter::new(schema, batches));
    Ok((stream, scanned))
}

/// Writes the result of each of `sqls`, one after the other, as one output
/// at `output` (an MCAP file, a ROS1 bag or a ROS 2 bag directory, as
/// `write` says: see [`logsql::write::sink`]). An error in the stream after
/// some rows (a damaged input) still completes the output, and is returned
/// with a note saying so.
fn write_windows(
    app: &App,
    input: &str,
    sqls: &[String],
    output: &Path,
    write: &LogWrite,
) -> CliResult<Report> {
    let (stream, scanned) = window_stream(app, input, sqls)?;
    let pool = LogsqlOptions::from_config(app.ctx.state().config_options()).descriptor_pool()?;
    let sources = LogSources {
        scanned: &scanned,
        env: app.ctx.runtime_env(),
        pool,
    };
    let driven = app.rt.block_on(write_log(
        stream,
        write,
        &Target::Local(output.to_path_buf()),
        sources,
        StreamErrors::KeepRows,
        &|_| {},
        std::future::pending(),
    ))?;
    let rows = driven.report.rows;
    let complete = match write {
        LogWrite::Mcap(_) => "a complete MCAP file",
        _ => "complete and indexed",
    };
    match driven.stream_error {
        None => Ok(driven.report),
        Some(e) => Err(CliError::from(e.context(format!(
            "{} holds the {rows} messages read before the error ({complete})",
            output.display()
        )))),
    }
}

/// Refuses an OUTPUT that is INPUT (or a file inside an INPUT directory):
/// recover never writes its input.
fn refuse_same_file(input: &str, output: &Path) -> CliResult {
    let (Ok(input), Some(parent)) = (
        std::fs::canonicalize(input),
        output.parent().map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        }),
    ) else {
        return Ok(());
    };
    let Ok(parent) = std::fs::canonicalize(parent) else {
        return Ok(());
    };
    let target = parent.join(output.file_name().unwrap_or_default());
    if target == input || (input.is_dir() && target.starts_with(&input)) {
        return Err(CliError::msg(format!(
            "{}: recover never writes its input; name another output file",
            output.display()
        )));
    }
    Ok(())
}

fn write(out: &mut dyn Write, s: &str) -> CliResult {
    out.write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| CliError::io("writing output", e))
}
