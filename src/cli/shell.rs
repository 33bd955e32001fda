//! The interactive shell: `logsql` with no SQL on a terminal.
//!
//! Lines accumulate until a statement ends with `;` (outside quotes and
//! comments); each complete statement then runs and prints. History lives in
//! `$HOME/.logsql_history`. Ctrl-C drops the statement being typed, Ctrl-D,
//! `\q`, `quit` and `exit` leave.

use std::io::{self, BufWriter};
use std::path::PathBuf;
use std::time::Instant;

use clap::ValueEnum;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::App;
use super::args::Format;
use super::error::{CliError, CliResult};
use super::statements;

const HELP: &str = "\
Statements end with ';' and may span lines. Examples:
  SELECT * FROM topics('run.mcap');
  SELECT topic, count(*) FROM 'run.mcap' GROUP BY topic;
  CREATE EXTERNAL TABLE m STORED AS MCAP LOCATION 'logs/';
  COPY (SELECT * FROM m WHERE topic = '/tf') TO 'tf.parquet';
  SET logsql.on_error = 'warn';
  SHOW TABLES;
Commands:
  \\format [table|csv|json|ndjson]   show or set the output format
  \\?                                this help
  \\q, quit, exit                    leave (also Ctrl-D)";

/// The history file: `$HOME/.logsql_history`.
fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".logsql_history"))
}

/// Whether a line (outside a statement) asks to leave.
fn is_quit(line: &str) -> bool {
    let l = line.trim().trim_end_matches(';').trim();
    l == "\\q" || l.eq_ignore_ascii_case("quit") || l.eq_ignore_ascii_case("exit")
}

/// Runs the shell until the user leaves.
pub fn run(app: &mut App) -> CliResult {
    let mut rl =
        DefaultEditor::new().map_err(|e| CliError::msg(format!("cannot start the shell: {e}")))?;
    let history = history_path();
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    eprintln!(
        "logsql {}: SQL over robot logs. End statements with ';'. \\? for help, \\q to quit.",
        env!("CARGO_PKG_VERSION")
    );
    let mut buf = String::new();
    loop {
        let prompt = if buf.is_empty() {
            "logsql> "
        } else {
            "     -> "
        };
        let line = match rl.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buf.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(CliError::msg(format!("reading input: {e}"))),
        };
        if buf.is_empty() {
            let cmd = line.trim();
            if is_quit(cmd) {
                break;
            }
            if cmd.starts_with('\\') {
                let _ = rl.add_history_entry(cmd);
                command(app, cmd);
                continue;
            }
            if cmd.eq_ignore_ascii_case("help") {
                eprintln!("{HELP}");
                continue;
            }
        }
        if !buf.is_empty() {
            buf.push('\n');
        }
        buf.push_str(&line);
        let split = statements::split(&buf);
        if split.statements.is_empty() && !split.rest.is_empty() {
            continue; // the statement goes on
        }
        let entry = buf.trim();
        if !entry.is_empty() {
            let _ = rl.add_history_entry(entry);
        }
        for stmt in &split.statements {
            run_one(app, stmt);
        }
        buf = split.rest;
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(())
}

/// Runs one statement, printing its result, row count and time, or its error.
fn run_one(app: &mut App, stmt: &str) {
    let started = Instant::now();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    // The row-count line already separates results.
    app.shown = false;
    match app.run_statement(stmt, &mut out) {
        Ok((rows, true)) => {
            drop(out);
            let s = if rows == 1 { "" } else { "s" };
            eprintln!("{rows} row{s} in {:.3} s", started.elapsed().as_secs_f64());
        }
        Ok((_, false)) => {}
        Err(CliError::BrokenPipe) => {}
        Err(e) => {
            drop(out);
            eprintln!("error: {e}");
        }
    }
}

/// A backslash command.
fn command(app: &mut App, cmd: &str) {
    let mut words = cmd.split_whitespace();
    match (words.next(), words.next()) {
        (Some("\\?" | "\\h" | "\\help"), _) => eprintln!("{HELP}"),
        (Some("\\format"), None) => {
            let name = app
                .printer
                .format
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            eprintln!("format: {name}");
        }
        (Some("\\format"), Some(f)) => match Format::from_str(f, true) {
            Ok(f) => app.printer.format = f,
            Err(_) => eprintln!("error: unknown format '{f}' (table, csv, json, ndjson)"),
        },
        _ => eprintln!("error: unknown command '{cmd}' (\\? for help)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quit_words() {
        for q in ["\\q", "quit", "EXIT;", " exit "] {
            assert!(is_quit(q), "{q}");
        }
        assert!(!is_quit("select 1"));
    }
}
