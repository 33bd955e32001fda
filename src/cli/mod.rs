//! The `logsql` command-line tool.
//!
//! - [`args`]: the command line (clap);
//! - [`output`]: result printers (table, CSV, JSON, NDJSON);
//! - [`statements`]: splitting scripts at `;`;
//! - [`shell`]: the interactive shell;
//! - [`info`]: `logsql info`, a human summary of log files;
//! - [`export`]: `logsql export`, filtered messages to Parquet;
//! - [`error`], [`logger`], [`units`]: error rendering, warnings on stderr, human units.
//!
//! Everything runs on one [`App`]: a tokio runtime and a logsql `SessionContext`.
//! The main thread drives query streams with `block_on` and does all writing, so
//! output never blocks the runtime's workers.

pub mod args;
pub mod error;
pub mod export;
pub mod info;
pub mod logger;
pub mod output;
pub mod shell;
pub mod statements;
pub mod units;

use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::process::ExitCode;

use datafusion::prelude::{SessionConfig, SessionContext};
use tokio::runtime::Runtime;

use args::{Args, Command, Format};
use error::{CliError, CliResult};
use output::Printer;

/// Parses the command line, runs it, and maps the outcome to an exit code:
/// 0 on success, 1 after printing `error: <message>` to stderr (2 for usage
/// errors, from clap).
pub fn main() -> ExitCode {
    let matches = <Args as clap::CommandFactory>::command().get_matches();
    let args =
        <Args as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Some(message) = args::unused_global_option(&matches) {
        <Args as clap::CommandFactory>::command()
            .error(clap::error::ErrorKind::ArgumentConflict, message)
            .exit();
    }
    logger::init();
    match run(args) {
        Ok(()) | Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a parsed command line.
pub fn run(args: Args) -> CliResult {
    let mut app = App::new(&args)?;
    let stdout = io::stdout();
    if let Some(command) = &args.command {
        if args.sql.is_some() || !args.files.is_empty() {
            return Err(CliError::msg(
                "give either SQL (or -f) or a subcommand, not both",
            ));
        }
        let mut out = BufWriter::new(stdout.lock());
        return match command {
            Command::Info { files, all } => {
                let opts = info::InfoOptions {
                    all: *all,
                    format: args.format,
                    verify: !args.no_verify,
                };
                info::run(&app, files, opts, &mut out)
            }
            Command::Export(e) => export::run(&app, e, &mut out),
            Command::Topics { path } => app.run_table_function("topics", path, &mut out),
            Command::Chunks { path } => app.run_table_function("chunks", path, &mut out),
            Command::Attachments { path } => app.run_table_function("attachments", path, &mut out),
            Command::Metadata { path } => app.run_table_function("metadata", path, &mut out),
            #[cfg(feature = "distributed")]
            Command::Worker { listen } => {
                eprintln!("logsql worker listening on http://{listen}");
                Ok(app
                    .rt
                    .block_on(logsql::engine::distributed::serve(*listen))?)
            }
        };
    }
    if args.sql.is_none() && args.files.is_empty() {
        if io::stdin().is_terminal() {
            return shell::run(&mut app);
        }
        let mut script = String::new();
        io::stdin()
            .read_to_string(&mut script)
            .map_err(|e| CliError::io("reading stdin", e))?;
        return app.run_script(&script, &mut BufWriter::new(stdout.lock()));
    }
    let mut out = BufWriter::new(stdout.lock());
    for file in &args.files {
        let script = std::fs::read_to_string(file)
            .map_err(|e| CliError::io(file.display().to_string(), e))?;
        app.run_script(&script, &mut out)?;
    }
    if let Some(sql) = &args.sql {
        app.run_script(sql, &mut out)?;
    }
    Ok(())
}

/// What every command runs on: a runtime, a session, and the result printer.
pub struct App {
    /// The tokio runtime DataFusion executes on.
    pub rt: Runtime,
    /// A session with logsql registered (and `information_schema` on).
    pub ctx: SessionContext,
    /// How results are printed.
    pub printer: Printer,
    /// Whether results printed so far showed anything (tables get a blank line between them).
    shown: bool,
}

impl App {
    /// Builds the runtime and the session from the global options.
    pub fn new(args: &Args) -> CliResult<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("logsql")
            .build()
            .map_err(|e| CliError::io("starting the runtime", e))?;
        let mut config = SessionConfig::new().with_information_schema(true);
        if let Some(n) = args.target_partitions {
            config = config.with_target_partitions(n as usize);
        }
        let ctx = session(args, config)?;
        let app = Self {
            rt,
            ctx,
            printer: Printer {
                format: args.format,
                max_width: args.max_width,
            },
            shown: false,
        };
        let mut settings = Vec::new();
        if let Some(policy) = args.on_error {
            settings.push(format!("SET logsql.on_error = '{}'", policy.as_option()));
        }
        if args.no_verify {
            settings.push("SET logsql.verify_checksums = false".to_string());
        }
        if !args.descriptors.is_empty() {
            let paths: Vec<String> = args
                .descriptors
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            settings.push(format!(
                "SET logsql.descriptor_set = {}",
                quote(&paths.join(","))
            ));
        }
        for set in settings {
            app.rt.block_on(app.ctx.sql(&set))?;
        }
        Ok(app)
    }

    /// Runs every statement of `script` in order, printing each result; stops at
    /// the first error.
    pub fn run_script(&mut self, script: &str, out: &mut dyn Write) -> CliResult {
        for stmt in statements::script(script) {
            self.run_statement(&stmt, out)?;
        }
        Ok(())
    }

    /// Plans, executes and prints one statement; returns the number of rows
    /// and whether the statement had a result to show.
    pub fn run_statement(&mut self, stmt: &str, out: &mut dyn Write) -> CliResult<(u64, bool)> {
        let df = self.rt.block_on(self.ctx.sql(stmt))?;
        let has_columns = !df.schema().fields().is_empty();
        let stream = self.rt.block_on(df.execute_stream())?;
        if has_columns && self.shown && self.printer.format == Format::Table {
            writeln!(out).map_err(|e| CliError::io("writing output", e))?;
        }
        let rows = self.printer.print(&self.rt, stream, out)?;
        self.shown |= has_columns;
        Ok((rows, has_columns))
    }

    /// `SELECT * FROM <function>('<path>')`.
    fn run_table_function(&mut self, function: &str, path: &str, out: &mut dyn Write) -> CliResult {
        self.run_statement(&format!("SELECT * FROM {function}({})", quote(path)), out)
            .map(|_| ())
    }
}

/// The session of the CLI: a local one, or with `--workers` a distributed one.
fn session(args: &Args, config: SessionConfig) -> CliResult<SessionContext> {
    #[cfg(feature = "distributed")]
    if !args.workers.is_empty() {
        use logsql::engine::distributed::{StaticWorkers, coordinator_context};
        return Ok(coordinator_context(
            config,
            StaticWorkers::parse(&args.workers)?,
        )?);
    }
    let _ = args;
    Ok(logsql::session_context_with_config(config))
}

/// `s` as a SQL string literal.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
