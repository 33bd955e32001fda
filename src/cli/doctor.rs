//! `logsql doctor`: the health of log files, problem by problem.
//!
//! The checks are the readers' ([`logsql_readers::doctor`]); this module
//! finds the files (a directory stands for the log files under it), prints
//! each report as text or JSON, and turns the worst outcome into the exit
//! status: 0 healthy, 1 problems, 2 a file that cannot be read at all.

use std::io::Write;
use std::path::{Path, PathBuf};

use logsql::LogsqlOptions;
use logsql_readers::doctor::{Report, Severity};
use logsql_readers::formats::{self, FormatReader};
use logsql_readers::io::FileReader;
use logsql_readers::limits::Limits;
use serde_json::{Value, json};

use super::App;
use super::args::Format;
use super::error::{CliError, CliResult};

/// Exit status of a file with problems.
pub const PROBLEMS: u8 = 1;
/// Exit status of a file that cannot be read.
pub const UNREADABLE: u8 = 2;

/// One file's outcome.
pub struct Checked {
    /// The file's path.
    pub path: PathBuf,
    /// The report, or why the file cannot be read at all.
    pub report: Result<Report, logsql_readers::Error>,
}

impl Checked {
    /// The exit status this file alone would give.
    pub fn status(&self) -> u8 {
        match &self.report {
            Ok(r) if r.healthy() => 0,
            Ok(_) => PROBLEMS,
            Err(_) => UNREADABLE,
        }
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
        status = status.max(checked.status());
        match format {
            Format::Table => write(out, &text(&checked))?,
            Format::Ndjson => write(out, &format!("{}\n", to_json(&checked)))?,
            Format::Json => objects.push(to_json(&checked)),
            Format::Csv => {
                return Err(CliError::msg(
                    "doctor prints text (--format table), json or ndjson, not csv",
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

/// Checks one local file.
pub fn check_path(path: &Path, limits: &Limits) -> Checked {
    let report = FileReader::open(path).and_then(|file| {
        let format = formats::detect(&file)?;
        logsql_readers::doctor::check(format.as_ref(), &file, limits)
    });
    Checked {
        path: path.to_path_buf(),
        report,
    }
}

/// The files `paths` name: a file as it is, a directory as the log files
/// under it at any depth (in name order), leaving out the companions of a
/// format (`-wal`, `-shm`) and files no format recognises unless they are
/// named like a log file.
pub fn expand(paths: &[String]) -> CliResult<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        let p = Path::new(path);
        if p.is_dir() {
            let before = out.len();
            walk(p, &mut out)?;
            if out.len() == before {
                return Err(logsql_readers::Error::NoLogFiles { path: path.clone() }.into());
            }
        } else {
            out.push(p.to_path_buf());
        }
    }
    Ok(out)
}

/// Adds the log files under `dir` to `out` (see [`expand`]).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> CliResult {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| CliError::io(dir.display().to_string(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            walk(&entry, out)?;
        } else if is_log_file(&entry) {
            out.push(entry);
        }
    }
    Ok(())
}

/// Whether `path` is a log file of some format (by content, or by a log
/// file's name), and not a companion file.
fn is_log_file(path: &Path) -> bool {
    let name = path.display().to_string();
    let all = formats::all();
    if all.iter().any(|f| formats::is_companion(f.as_ref(), &name)) {
        return false;
    }
    let by_content = FileReader::open(path)
        .ok()
        .and_then(|f| formats::detect(&f).ok())
        .is_some();
    by_content || has_log_extension(&all, path)
}

/// Whether `path`'s extension is one a format claims.
fn has_log_extension(all: &[std::sync::Arc<dyn FormatReader>], path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let ext = ext.to_ascii_lowercase();
    all.iter().any(|f| f.extensions().contains(&ext.as_str())) || ext == "active"
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
