//! `logsql recover`: every readable message of a damaged log into a valid,
//! indexed, time-sorted MCAP file (or, with `--to`, a ROS1 bag or a ROS 2
//! bag directory: [`super::recover_to`]), and a report of what was lost.
//!
//! The loss report is `doctor`'s ([`super::doctor`]): the byte ranges no
//! reader can use, the chunks dropped and, where the file's index states
//! them, the messages lost. The messages are then written as `logsql export
//! OUT.mcap` writes them ([`logsql::ops::export::write_log_with`]): `SELECT * FROM
//! 'INPUT' ORDER BY log_time` under `logsql.on_error = 'warn'`, with each
//! channel's schema, metadata and attachments from the input, into a
//! temporary file renamed over OUTPUT only when complete.
//!
//! Memory does not grow with the input. A file whose chunks are in time
//! order streams through without a sort. Otherwise the time axis is cut into
//! windows ([`logsql::ops::recover`]) that each hold about half of `--memory-limit`
//! of messages by the chunks' stated times and sizes, and the windows are
//! sorted and written one after the other (`... WHERE log_time >= a AND
//! log_time < b ORDER BY log_time`; time pushdown reads only the chunks
//! overlapping each window). A window that holds more than estimated is
//! spilled to temporary files by DataFusion's sort.

use std::io::Write;
use std::time::Instant;

use logsql::LogsqlOptions;
use logsql::ops::export::write_log_with;
use logsql::ops::recover::{settings, summaries, window_sqls, writes_input};
use logsql::write::sink::{LogWrite, Report};

use super::App;
use super::args::RecoverArgs;
use super::doctor::{self, UNREADABLE};
use super::error::{CliError, CliResult};
use super::recover_to;

/// Recovers `a.input` into `a.output` and prints the report to `out`.
pub fn run(app: &mut App, a: &RecoverArgs, out: &mut dyn Write) -> CliResult {
    let started = Instant::now();
    let to = recover_to::infer(a.to, &a.output);
    if writes_input(&a.input, &a.output) {
        return Err(CliError::msg(format!(
            "{}: recover never writes its input; name another output file",
            a.output.display()
        )));
    }
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
    let readable = checked.iter().filter(|c| c.report.is_ok());
    let summaries = summaries(readable.map(|c| c.path.as_path()), &limits);
    let writer = recover_to::writer(to, &a.input, &summaries)?;
    for set in settings(a.memory_limit) {
        app.run_statement(&set, out)?;
    }
    let budget = (a.memory_limit / 2) as u64;
    let sqls = window_sqls(&a.input, checked.len(), &summaries, budget);
    log::info!("recover: {} time window(s): {sqls:?}", sqls.len());
    // The damage was reported above: the scans' warnings (one per window)
    // would only repeat it.
    let level = log::max_level();
    log::set_max_level(level.min(log::LevelFilter::Error));
    let written = write_windows(app, &a.input, &sqls, &a.output, &writer, Vec::new());
    log::set_max_level(level);
    let (Report { rows, left_out }, _) = written?;
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

/// Writes the windows' queries one after the other as one output at
/// `output`, as `write` says; the writer's report and the bytes the scans
/// read. An error in the stream after some rows (a
/// damaged input) still completes the output, and is returned with a note
/// saying so.
pub(super) fn write_windows(
    app: &App,
    input: &str,
    sqls: &[String],
    output: &std::path::Path,
    write: &LogWrite,
    metadata: Vec<logsql_readers::model::MetadataInfo>,
) -> CliResult<(Report, u64)> {
    let written = app.rt.block_on(write_log_with(
        &app.ctx,
        input,
        sqls,
        output,
        write,
        metadata,
        &|_| {},
    ))?;
    let driven = written.driven;
    let rows = driven.report.rows;
    let complete = match write {
        LogWrite::Mcap(_) => "a complete MCAP file",
        _ => "complete and indexed",
    };
    match driven.stream_error {
        None => Ok((driven.report, written.bytes_read)),
        Some(e) => Err(CliError::from(e.context(format!(
            "{} holds the {rows} messages read before the error ({complete})",
            output.display()
        )))),
    }
}

fn write(out: &mut dyn Write, s: &str) -> CliResult {
    out.write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| CliError::io("writing output", e))
}
