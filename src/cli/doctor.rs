//! `logsql doctor`: the health of log files, problem by problem.
//!
//! The checks are the readers' ([`logsql_readers::doctor`]) and the files
//! checked [`logsql::ops::doctor`]'s (a directory stands for the log files
//! under it); this module prints each report as text or JSON, and turns the
//! worst outcome into the exit status: 0 healthy, 1 problems, 2 a file that
//! cannot be read at all.

use std::io::Write;
use std::path::PathBuf;

use logsql::LogsqlOptions;
use logsql::ops::doctor::ExpandError;
pub use logsql::ops::doctor::{Checked, check_path};
use logsql_readers::doctor::Severity;
use serde_json::{Value, json};

use super::App;
use super::args::Format;
use super::error::{CliError, CliResult};

/// Exit status of a file with problems.
pub const PROBLEMS: u8 = 1;
/// Exit status of a file that cannot be read.
pub const UNREADABLE: u8 = 2;

/// The exit status `checked` alone would give.
pub fn exit_status(checked: &Checked) -> u8 {
    match &checked.report {
        Ok(r) if r.healthy() => 0,
        Ok(_) => PROBLEMS,
        Err(_) => UNREADABLE,
    }
}

/// Checks every file `paths` name and prints the reports; fails with the
/// exit status when any file is not healthy.
pub fn run(app: &App, paths: &[String], format: Format, out: &mut dyn Write) -> CliResult {
    let limits = LogsqlOptions::from_config(app.ctx.state().config_options()).limits();
    let files = expand(paths)?;
    let mut status = 0;
    let mut objects = Vec::new();
    for path in files {
        let checked = check_path(&path, &limits);
        status = status.max(exit_status(&checked));
        match format {
            Format::Table => write(out, &text(&checked))?,
            Format::Ndjson => write(out, &format!("{}\n", to_json(&checked)))?,
            Format::Json => objects.push(to_json(&checked)),
            Format::Csv | Format::Junit => {
                return Err(CliError::msg(
                    "doctor prints text (--format table), json or ndjson, not csv or junit",
                ));
            }
        }
    }
    if format == Format::Json {
        write(out, &format!("{:#}\n", Value::Array(objects)))?;
    }
    if status == 0 {
        Ok(())
    } else {
        out.flush().map_err(|e| CliError::io("writing output", e))?;
        Err(CliError::Status(status))
    }
}

/// The files `paths` name (see [`logsql::ops::doctor::expand`]); the walk's
/// warnings (a link to a directory it is in, a loop, is not followed) are
/// given on stderr.
pub fn expand(paths: &[String]) -> CliResult<Vec<PathBuf>> {
    let expanded = logsql::ops::doctor::expand(paths).map_err(|e| match e {
        ExpandError::NoLogFiles(e) => CliError::from(e),
        ExpandError::Walk(e) => CliError::io(e.path.display().to_string(), e.source),
    })?;
    for w in &expanded.warnings {
        log::warn!("{w}");
    }
    Ok(expanded.files)
}

fn write(out: &mut dyn Write, s: &str) -> CliResult {
    out.write_all(s.as_bytes())
        .map_err(|e| CliError::io("writing output", e))
}

/// The text report of one file.
pub fn text(checked: &Checked) -> String {
    let name = checked.path.display();
    let report = match &checked.report {
        Err(e) => return format!("{name}: unreadable: {e}\n"),
        Ok(r) => r,
    };
    let problems = report
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Problem)
        .count();
    let verdict = match problems {
        0 => "healthy".to_string(),
        1 => "1 problem".to_string(),
        n => format!("{n} problems"),
    };
    let mut s = format!(
        "{name}: {} file, {} bytes, {} chunks, {} messages read{}: {verdict}\n",
        report.format,
        report.file_size,
        report.chunks,
        report.messages,
        report
            .indexed_messages
            .map_or(String::new(), |n| format!(" (index states {n})")),
    );
    for p in &report.problems {
        s.push_str(&format!("  {p}\n"));
    }
    for lost in &report.lost {
        s.push_str(&format!(
            "  lost: bytes {}..{} ({}){}\n",
            lost.range.start,
            lost.range.end,
            lost.what,
            lost.messages
                .map_or(String::new(), |n| format!(", {n} messages"))
        ));
    }
    s
}

/// The JSON report of one file.
pub fn to_json(checked: &Checked) -> Value {
    let file = checked.path.display().to_string();
    let report = match &checked.report {
        Err(e) => return json!({"file": file, "status": "unreadable", "error": e.to_string()}),
        Ok(r) => r,
    };
    json!({
        "file": file,
        "status": if report.healthy() { "healthy" } else { "problems" },
        "format": report.format,
        "file_size": report.file_size,
        "chunks": report.chunks,
        "messages": report.messages,
        "indexed_messages": report.indexed_messages,
        "problems": report.problems.iter().map(|p| json!({
            "kind": p.kind.name(),
            "severity": p.severity.name(),
            "offset": p.offset,
            "time": p.time,
            "message": p.message,
        })).collect::<Vec<_>>(),
        "lost": report.lost.iter().map(|l| json!({
            "start": l.range.start,
            "end": l.range.end,
            "what": l.what,
            "messages": l.messages,
        })).collect::<Vec<_>>(),
    })
}
