//! The interactive shell: `logsql` with no SQL on a terminal.
//!
//! Lines accumulate until a statement ends with `;` (outside quotes and
//! comments); each complete statement then runs and prints, so several
//! statements typed ahead or pasted at once all run, in order. History lives
//! in `$HOME/.logsql_history` and is written as each statement runs. Ctrl-C
//! while a statement runs cancels it (the shell stays); at the prompt it drops
//! the statement being typed. Ctrl-D, `\q`, `quit` and `exit` leave. Tab
//! completes SQL keywords, table functions and tables, and file paths inside
//! `'...'`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::ValueEnum;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::sql::sqlparser::keywords::ALL_KEYWORDS;
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use super::App;
use super::args::Format;
use super::error::{CliError, CliResult};
use logsql::ops::statements;

const HELP: &str = "\
Statements end with ';' and may span lines. Examples:
  SELECT * FROM topics('run.mcap');
  SELECT topic, count(*) FROM 'run.mcap' GROUP BY topic;
  CREATE EXTERNAL TABLE m STORED AS MCAP LOCATION 'logs/';
  COPY (SELECT * FROM m WHERE topic = '/tf') TO 'tf.parquet';
  SET logsql.on_error = 'warn';
  SHOW TABLES;
Commands:
  \\d                                list tables
  \\d NAME                           columns and types of a table, a path ('run.mcap')
                                    or a table function call (read_topic('run.mcap', '/imu'))
  \\timing                           toggle the 'N rows in T s' line after results
  \\format [table|csv|json|ndjson]   show or set the output format
  \\?                                this help
  \\q, quit, exit                    leave (also Ctrl-D)
Tab completes keywords, table functions, tables and paths inside '...'.
Ctrl-C cancels a running statement, or drops the one being typed.";

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

/// Runs the shell until the user leaves; results go to `out`.
pub fn run(app: &mut App, out: &mut dyn Write, quiet: bool) -> CliResult {
    let mut rl: Editor<ShellHelper, DefaultHistory> =
        Editor::new().map_err(|e| CliError::msg(format!("cannot start the shell: {e}")))?;
    rl.set_helper(Some(ShellHelper::new(app)));
    let history = history_path();
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    app.cancel_on_ctrl_c()?;
    if !quiet {
        eprintln!(
            "logsql {}: SQL over robot logs. End statements with ';'. \\? for help, \\q to quit.",
            env!("CARGO_PKG_VERSION")
        );
    }
    let remember = |rl: &mut Editor<ShellHelper, DefaultHistory>, entry: &str| {
        let _ = rl.add_history_entry(entry);
        if let Some(h) = &history {
            // Written now, so a crash or a kill loses nothing already run.
            let _ = rl.append_history(h);
        }
    };
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
                remember(&mut rl, cmd);
                report(command(app, cmd, out));
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
            remember(&mut rl, entry);
        }
        for stmt in &split.statements {
            // The row-count line already separates results.
            app.shown = false;
            report(app.run_timed(stmt, out));
        }
        if let Some(helper) = rl.helper_mut() {
            // Tables created by the statements complete from now on.
            *helper = ShellHelper::new(app);
        }
        buf = split.rest;
    }
    Ok(())
}

/// Prints the error of a statement or command, if any: the shell goes on.
fn report(result: CliResult) {
    match result {
        Ok(()) | Err(CliError::BrokenPipe) => {}
        Err(e) => eprintln!("error: {}", super::terminal::for_stderr(&e.to_string())),
    }
}

/// A backslash command.
fn command(app: &mut App, cmd: &str, out: &mut dyn Write) -> CliResult {
    let (name, arg) = match cmd.split_once(char::is_whitespace) {
        Some((name, arg)) => (name, arg.trim().trim_end_matches(';').trim()),
        None => (cmd, ""),
    };
    match (name, arg) {
        ("\\?" | "\\h" | "\\help", _) => eprintln!("{HELP}"),
        ("\\d", "") => {
            app.shown = false;
            app.run_statement(
                "SELECT table_schema AS schema, table_name AS name, table_type AS type \
                 FROM information_schema.tables WHERE table_schema <> 'information_schema' \
                 ORDER BY table_schema, table_name",
                out,
            )?;
        }
        ("\\d", target) => describe(app, target, out)?,
        ("\\timing", "") => {
            app.timing = !app.timing;
            eprintln!("Timing is {}.", if app.timing { "on" } else { "off" });
        }
        ("\\format", "") => {
            let name = app
                .printer
                .format
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            eprintln!("format: {name}");
        }
        ("\\format", f) => match Format::from_str(f, true) {
            Ok(f) => app.printer.format = f,
            Err(_) => eprintln!("error: unknown format '{f}' (table, csv, json, ndjson)"),
        },
        _ => eprintln!("error: unknown command '{cmd}' (\\? for help)"),
    }
    Ok(())
}

/// `\d TARGET`: the columns of a table, a quoted path or a table function call,
/// with their types.
fn describe(app: &mut App, target: &str, out: &mut dyn Write) -> CliResult {
    let df = app.wait(app.ctx.sql(&format!("SELECT * FROM {target} LIMIT 0")))?;
    let fields = df.schema().fields();
    let text = |f: &dyn Fn(&datafusion::arrow::datatypes::Field) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(fields.iter().map(|x| f(x))))
    };
    let batch = RecordBatch::try_from_iter([
        ("column_name", text(&|f| f.name().clone())),
        ("data_type", text(&|f| f.data_type().to_string())),
        (
            "is_nullable",
            text(&|f| if f.is_nullable() { "YES" } else { "NO" }.to_string()),
        ),
    ])?;
    let stream = Box::pin(RecordBatchStreamAdapter::new(
        batch.schema(),
        futures::stream::iter([Ok(batch)]),
    ));
    app.printer.print(&app.rt, stream, out)?;
    Ok(())
}

/// Tab completion: SQL keywords, the session's table functions and tables,
/// and file paths inside a quoted string.
struct ShellHelper {
    files: FilenameCompleter,
    /// Table functions (completed with their `(`) and tables.
    names: Vec<String>,
}

impl ShellHelper {
    /// Reads the names of `app`'s session: its table functions and tables.
    fn new(app: &App) -> Self {
        let mut names: Vec<String> = app
            .ctx
            .state()
            .table_functions()
            .keys()
            .map(|f| format!("{f}("))
            .collect();
        for catalog in app.ctx.catalog_names() {
            let Some(catalog) = app.ctx.catalog(&catalog) else {
                continue;
            };
            for schema in catalog.schema_names() {
                if schema == "information_schema" {
                    continue;
                }
                if let Some(schema) = catalog.schema(&schema) {
                    names.extend(schema.table_names());
                }
            }
        }
        names.sort();
        names.dedup();
        Self {
            files: FilenameCompleter::new(),
            names,
        }
    }

    /// Completions of the word `prefix` (not in quotes): names as they are,
    /// keywords in the case the word is typed in.
    fn words(&self, prefix: &str) -> Vec<Pair> {
        let lower = prefix.to_ascii_lowercase();
        let pair = |s: String| Pair {
            display: s.clone(),
            replacement: s,
        };
        let mut out: Vec<Pair> = self
            .names
            .iter()
            .filter(|n| n.to_ascii_lowercase().starts_with(&lower))
            .map(|n| pair(n.clone()))
            .collect();
        let upper = !prefix.chars().any(|c| c.is_ascii_lowercase());
        out.extend(
            ALL_KEYWORDS
                .iter()
                .filter(|k| k.to_ascii_lowercase().starts_with(&lower))
                .map(|k| {
                    pair(if upper {
                        k.to_string()
                    } else {
                        k.to_ascii_lowercase()
                    })
                }),
        );
        out
    }
}

/// Whether byte `pos` of `line` is inside a `'...'` string.
fn in_string(line: &str, pos: usize) -> bool {
    line[..pos].bytes().filter(|&b| b == b'\'').count() % 2 == 1
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if in_string(line, pos) {
            return self.files.complete_path(line, pos);
        }
        let start = line[..pos]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        if start == pos || line[..start].ends_with('\\') {
            return Ok((pos, Vec::new()));
        }
        Ok((start, self.words(&line[start..pos])))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {}

impl Validator for ShellHelper {}

impl Helper for ShellHelper {}

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

    #[test]
    fn quotes_decide_between_paths_and_words() {
        assert!(in_string("SELECT * FROM 'tests/da", 23));
        assert!(!in_string("SELECT * FROM 'a' WHERE x", 25));
    }
}
