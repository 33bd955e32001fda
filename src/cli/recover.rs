//! `logsql recover`: every readable message of a damaged log into a valid,
//! indexed, time-sorted MCAP file, and a report of what was lost.
//!
//! The loss report is `doctor`'s ([`super::doctor`]): the byte ranges no
//! reader can use, the chunks dropped and, where the file's index states
//! them, the messages lost. The messages are then written as `logsql export
//! OUT.mcap` writes them ([`super::export::write_mcap_file`]): `SELECT * FROM
//! 'INPUT' ORDER BY log_time` under `logsql.on_error = 'warn'`, with each
//! channel's schema, metadata and attachments from the input, into a
//! temporary file renamed over OUTPUT only when complete. A file whose
//! chunks are in time order streams through without a sort; otherwise
//! DataFusion's sort holds at most `--memory-limit` and spills the rest to
//! temporary files, so memory does not grow with the input.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use logsql::LogsqlOptions;
use logsql::datasource::mcap_sink::McapWriteOptions;

use super::args::RecoverArgs;
use super::doctor::{self, UNREADABLE};
use super::error::{CliError, CliResult};
use super::{App, quote};

/// Rows per batch while recovering: payloads may be large, and the sort
/// of an input out of time order reserves and spills whole batches.
const SORT_BATCH_ROWS: usize = 256;

/// Recovers `a.input` into `a.output` and prints the report to `out`.
pub fn run(app: &mut App, a: &RecoverArgs, out: &mut dyn Write) -> CliResult {
    let started = Instant::now();
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
    let sql = format!("SELECT * FROM {} ORDER BY log_time", quote(&a.input));
    let rows = super::export::write_mcap_file(
        app,
        &a.input,
        &sql,
        &a.output,
        None,
        &McapWriteOptions::default(),
    )?;
    let read: u64 = checked
        .iter()
        .filter_map(|c| c.report.as_ref().ok())
        .map(|r| r.messages)
        .sum();
    write(
        out,
        &format!(
            "recovered {rows} messages into {} ({read} read by the check) in {:.1} s\n",
            a.output.display(),
            started.elapsed().as_secs_f64()
        ),
    )
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
