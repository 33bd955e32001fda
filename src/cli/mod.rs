//! The `logsql` command-line tool.
//!
//! - [`args`]: the command line (clap);
//! - [`output`]: result printers (table, CSV, JSON, NDJSON);
//! - [`shell`]: the interactive shell;
//! - [`info`]: `logsql info`, a human summary of log files;
//! - [`doctor`] and [`recover`]: `logsql doctor` (each file's problems) and
//!   `logsql recover` (every readable message into a valid MCAP), with
//!   [`recover_to`] for its `--to bag|db3` outputs;
//! - [`index`]: `logsql index`, recordings into a catalog, with progress;
//! - [`events`]: `logsql events`, the events table's add, list, export, import;
//! - [`timeline`]: the per-topic timelines and gaps `info` prints;
//! - [`export`]: `logsql export`, filtered messages to Parquet;
//! - [`plot`]: `logsql plot`, a query's result as a PNG, SVG or text chart;
//! - [`serve`]: `logsql serve`, its flags handed to logsql-serve (the session
//!   over the Postgres wire protocol and Flight SQL);
//! - [`terminal`]: control characters escaped in what a terminal shows;
//! - [`error`], [`logger`]: error rendering, warnings on stderr (human units are [`logsql::ops::units`]).
//!
//! Everything runs on one [`App`]: a tokio runtime and a logsql `SessionContext`.
//! The main thread drives query streams with `block_on` and does all writing, so
//! output never blocks the runtime's workers.

pub mod args;
pub mod check;
pub mod clips;
pub mod dataset;
pub mod doctor;
pub mod error;
pub mod events;
pub mod export;
pub mod export_files;
pub mod export_video;
pub mod frames;
pub mod index;
pub mod info;
pub mod logger;
pub mod output;
pub mod plot;
pub mod recover;
pub mod recover_to;
pub mod serve;
pub mod shell;

pub mod terminal;
pub mod timeline;

use std::future::Future;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use datafusion::error::DataFusionError;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use tokio::runtime::Runtime;
use tokio::sync::watch;

use args::{Args, Command, Format};
use error::{CliError, CliResult};
use logsql::AtomicFile;
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
    logger::init(args.verbose);
    // The command runs on a thread whose stack holds a statement planned to
    // the deepest nesting logsql accepts (the main thread's may not).
    let command = std::thread::Builder::new()
        .name("logsql-main".to_string())
        .stack_size(logsql::complexity::PLANNING_STACK)
        .spawn(move || run(args));
    let outcome = match command {
        Ok(thread) => thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        Err(e) => Err(CliError::io("starting the command's thread", e)),
    };
    match outcome {
        Ok(()) | Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(CliError::Status(n)) => ExitCode::from(n),
        Err(e) => {
            eprintln!("error: {}", terminal::for_stderr(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

/// Runs a parsed command line. With `-o FILE`, the output is written to a
/// temporary file beside FILE and renamed over it only when everything
/// succeeded: a failing command leaves FILE as it was.
pub fn run(args: Args) -> CliResult {
    if let Some(Command::Serve(serve)) = &args.command {
        if args.sql.is_some() || !args.files.is_empty() || !args.commands.is_empty() {
            return Err(CliError::msg(
                "give either SQL (or -f / -c) or a subcommand, not both",
            ));
        }
        return serve::run(&args, serve);
    }
    if let Some(Command::Mcp(mcp)) = &args.command {
        if args.sql.is_some() || !args.files.is_empty() || !args.commands.is_empty() {
            return Err(CliError::msg(
                "give either SQL (or -f / -c) or a subcommand, not both",
            ));
        }
        return serve::run_mcp(&args, mcp);
    }
    let mut app = App::new(&args)?;
    let (mut out, file) = output(&args)?;
    let result = run_with(&mut app, &args, &mut out);
    let flushed = out
        .flush()
        .map_err(|e| CliError::io("writing the output", e));
    drop(out);
    app.close();
    result.and(flushed)?;
    if let Some(file) = file {
        let name = file.target().display().to_string();
        file.commit().map_err(|e| CliError::io(name, e))?;
    }
    Ok(())
}

/// Runs a parsed command line on `app`, writing results to `out`.
fn run_with(app: &mut App, args: &Args, out: &mut dyn Write) -> CliResult {
    if let Some(command) = &args.command {
        if args.sql.is_some() || !args.files.is_empty() {
            return Err(CliError::msg(
                "give either SQL (or -f / -c) or a subcommand, not both",
            ));
        }
        // `-c "SET ..."` before a subcommand sets its options (limits,
        // policies), as it would for a query; nothing else runs there.
        for sql in &args.commands {
            let is_set = sql
                .trim_start()
                .get(..4)
                .is_some_and(|w| w.eq_ignore_ascii_case("set "));
            if !is_set {
                return Err(CliError::msg(
                    "with a subcommand, -c takes SET statements only (they set its options)",
                ));
            }
            app.run_statement(sql, out)?;
        }
        return match command {
            Command::Info {
                files,
                all,
                no_timeline,
                ascii,
            } => {
                let opts = info::InfoOptions {
                    all: *all,
                    format: args.format,
                    verify: !args.no_verify,
                    timeline: !no_timeline,
                    ascii: *ascii,
                    escape: args.output.is_none() && escapes_terminal(args),
                };
                info::run(app, files, opts, out)
            }
            Command::Index(i) => index::run(app, args, i, out),
            Command::Export(e) => export::run(app, e, out),
            Command::Doctor { paths } => doctor::run(app, paths, args.format, out),
            Command::Check(c) => check::run(app, c, args.format, out),
            Command::Events(e) => events::run(app, e, out),
            Command::Recover(r) => recover::run(app, r, out),
            Command::Plot(p) => plot::run(app, p, p.quiet || args.quiet, out),
            Command::Frames(f) => frames::run(app, f, out),
            Command::Dataset(d) => dataset::run(app, d, out),
            Command::Clips(c) => clips::run(app, c, out),
            Command::Clip(c) => clips::run_one(app, c, out),
            Command::Topics { path } => app.run_table_function("topics", path, out),
            Command::Chunks { path } => app.run_table_function("chunks", path, out),
            Command::Attachments { path } => app.run_table_function("attachments", path, out),
            Command::Metadata { path } => app.run_table_function("metadata", path, out),
            Command::Serve(_) | Command::Mcp(_) => {
                unreachable!("`logsql serve` and `logsql mcp` make their own App (see run)")
            }
            #[cfg(feature = "distributed")]
            Command::Worker(w) => worker(app, w),
        };
    }
    if args.sql.is_none() && args.files.is_empty() && args.commands.is_empty() {
        if interactive(args) {
            app.timing = !args.quiet;
            return shell::run(app, out, args.quiet);
        }
        let mut script = String::new();
        io::stdin()
            .read_to_string(&mut script)
            .map_err(|e| CliError::io("reading stdin", e))?;
        return app.run_script(&script, out);
    }
    for sql in args.commands.iter().chain(&args.sql) {
        not_a_path(sql)?;
    }
    for file in &args.files {
        let script = std::fs::read_to_string(file)
            .map_err(|e| CliError::io(file.display().to_string(), e))?;
        app.run_script(&script, out)?;
    }
    for sql in args.commands.iter().chain(&args.sql) {
        app.run_script(sql, out)?;
    }
    Ok(())
}

/// Where results go: `-o FILE` (a temporary file beside it, renamed over it by
/// [`run`] on success), else stdout (escaped on a terminal, see [`escapes_terminal`]).
fn output(args: &Args) -> CliResult<(Box<dyn Write>, Option<AtomicFile>)> {
    Ok(match &args.output {
        Some(path) => {
            let name = || path.display().to_string();
            let mut file = AtomicFile::create(path).map_err(|e| CliError::io(name(), e))?;
            let handle = file
                .file()
                .try_clone()
                .map_err(|e| CliError::io(name(), e))?;
            (Box::new(BufWriter::new(handle)), Some(file))
        }
        None if escapes_terminal(args) => (
            Box::new(BufWriter::new(terminal::EscapeWriter::new(io::stdout()))),
            None,
        ),
        None => (Box::new(BufWriter::new(io::stdout())), None),
    })
}

/// Whether stdout is a terminal shown a human format (the table, `info`'s
/// text), or the interactive shell's terminal (whose `\format` may switch to
/// the table at any time): control characters from the data are then escaped
/// ([`terminal`]).
fn escapes_terminal(args: &Args) -> bool {
    io::stdout().is_terminal() && (args.format == Format::Table || interactive(args))
}

/// Whether the run is the interactive shell: no subcommand, no SQL, a
/// terminal on stdin.
fn interactive(args: &Args) -> bool {
    args.command.is_none()
        && args.sql.is_none()
        && args.files.is_empty()
        && args.commands.is_empty()
        && io::stdin().is_terminal()
}

/// Fails with a hint when the SQL given is a log file's path (`logsql run.mcap`):
/// an existing file or directory, or a name with a log extension, that does not
/// parse as SQL.
fn not_a_path(sql: &str) -> CliResult {
    let text = sql.trim();
    let path = Path::new(text);
    let log_extension = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        // CARLA recordings have no extension of their own; `.log` is the usual one.
        e.eq_ignore_ascii_case("log")
            || logsql_readers::formats::all()
                .iter()
                .any(|f| f.extensions().iter().any(|x| x.eq_ignore_ascii_case(e)))
    });
    if !(log_extension || path.exists())
        || datafusion::sql::parser::DFParser::parse_sql(text).is_ok()
    {
        return Ok(());
    }
    let what = if path.is_dir() {
        "is a directory"
    } else if path.exists() {
        "is a file"
    } else {
        "looks like a file name"
    };
    Err(CliError::msg(format!(
        "'{text}' {what}, not SQL: try logsql info {text} or logsql \"SELECT * FROM {} LIMIT 10\"",
        quote(text)
    )))
}

/// The error of a statement stopped by Ctrl-C.
#[derive(Debug, thiserror::Error)]
#[error("query cancelled (Ctrl-C)")]
struct Cancelled;

/// `stream`, ending with a [`Cancelled`] error (and dropping the query's stream,
/// which stops its tasks) as soon as `interrupt` changes.
fn cancellable(
    stream: SendableRecordBatchStream,
    interrupt: watch::Receiver<u64>,
) -> SendableRecordBatchStream {
    let schema = stream.schema();
    let batches = futures::stream::unfold(Some((stream, interrupt)), |state| async move {
        let (mut stream, mut interrupt) = state?;
        tokio::select! {
            batch = stream.next() => batch.map(|b| (b, Some((stream, interrupt)))),
            _ = interrupt.changed() => {
                Some((Err(DataFusionError::External(Box::new(Cancelled))), None))
            }
        }
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, batches))
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
    /// Whether each result is followed by `N rows in T s` on stderr.
    pub timing: bool,
    /// Counts Ctrl-C presses once [`App::cancel_on_ctrl_c`] is on: a change
    /// cancels the running statement.
    interrupt: Option<watch::Receiver<u64>>,
}

impl App {
    /// Builds the runtime and the session from the global options.
    pub fn new(args: &Args) -> CliResult<Self> {
        Self::with_config(args, |config| config)
    }

    /// [`App::new`], with the session's config passed through `configure`
    /// first (`logsql serve` puts its data roots there).
    pub fn with_config(
        args: &Args,
        configure: impl FnOnce(SessionConfig) -> SessionConfig,
    ) -> CliResult<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("logsql")
            .thread_stack_size(logsql::complexity::PLANNING_STACK)
            .build()
            .map_err(|e| CliError::io("starting the runtime", e))?;
        let mut config = SessionConfig::new().with_information_schema(true);
        if let Some(n) = args.target_partitions {
            config = config.with_target_partitions(n as usize);
        }
        let ctx = session(args, configure(config))?;
        let app = Self {
            rt,
            ctx,
            printer: Printer {
                format: args.format,
                max_width: args.max_width,
                max_rows: args.max_rows.0,
                escape: args.output.is_none() && escapes_terminal(args),
            },
            shown: false,
            // Statements given on the command line show their time only to a person.
            timing: !args.quiet && io::stderr().is_terminal(),
            interrupt: None,
        };
        let mut settings = Vec::new();
        if let Some(policy) = args.on_error {
            settings.push(format!("SET logsql.on_error = '{}'", policy.as_option()));
        }
        if args.no_verify {
            settings.push("SET logsql.verify_checksums = never".to_string());
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
        if !args.msg_path.is_empty() {
            let paths: Vec<String> = args
                .msg_path
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            settings.push(format!("SET logsql.msg_path = {}", quote(&paths.join(","))));
        }
        if let Some(catalog) = &args.catalog {
            settings.push(format!("SET logsql.catalog = {}", quote(catalog)));
        }
        if let Some(events) = &args.events {
            settings.push(format!("SET logsql.events = {}", quote(events)));
        }
        for set in settings {
            app.rt.block_on(app.ctx.sql(&set))?;
        }
        Ok(app)
    }

    /// Ends the session without waiting for the runtime's threads: the session,
    /// and with it whatever its tables hold (temporary copies of remote files),
    /// is dropped here, and the threads end with the process. Joining them
    /// instead costs a process a millisecond or two at exit, each thread
    /// unmapping its chunk buffers while the others still run.
    pub fn close(self) {
        let App { rt, ctx, .. } = self;
        drop(ctx);
        rt.shutdown_background();
    }

    /// Runs every statement of `script` in order, printing each result; stops at
    /// the first error.
    pub fn run_script(&mut self, script: &str, out: &mut dyn Write) -> CliResult {
        for stmt in logsql::ops::statements::script(script) {
            self.run_timed(&stmt, out)?;
        }
        Ok(())
    }

    /// Runs one statement like [`App::run_statement`], then (with `timing` on)
    /// prints `N rows in T s` on stderr.
    pub fn run_timed(&mut self, stmt: &str, out: &mut dyn Write) -> CliResult {
        let started = Instant::now();
        let (rows, has_columns) = self.run_statement(stmt, out)?;
        if self.timing && has_columns {
            let s = if rows == 1 { "" } else { "s" };
            eprintln!("{rows} row{s} in {:.3} s", started.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// Plans, executes and prints one statement; returns the number of rows
    /// and whether the statement had a result to show.
    pub fn run_statement(&mut self, stmt: &str, out: &mut dyn Write) -> CliResult<(u64, bool)> {
        if let Some(interrupt) = &mut self.interrupt {
            // Ctrl-C pressed before this statement does not cancel it.
            interrupt.mark_unchanged();
        }
        let df = self.wait(logsql::sql(&self.ctx, stmt))?;
        let has_columns = !df.schema().fields().is_empty();
        let mut stream = self.wait(df.execute_stream())?;
        if let Some(interrupt) = &self.interrupt {
            stream = cancellable(stream, interrupt.clone());
        }
        if has_columns && self.shown && self.printer.format == Format::Table {
            writeln!(out).map_err(|e| CliError::io("writing output", e))?;
        }
        let rows = self.printer.print(&self.rt, stream, out)?;
        self.shown |= has_columns;
        Ok((rows, has_columns))
    }

    /// From now on, Ctrl-C (SIGINT) cancels the running statement instead of
    /// ending the process (the shell's behaviour).
    pub fn cancel_on_ctrl_c(&mut self) -> CliResult {
        let (tx, rx) = watch::channel(0u64);
        let _runtime = self.rt.enter();
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            // Registered here, before the first statement runs.
            let mut sigint = signal(SignalKind::interrupt())
                .map_err(|e| CliError::io("listening for Ctrl-C", e))?;
            self.rt.spawn(async move {
                while sigint.recv().await.is_some() {
                    tx.send_modify(|n| *n += 1);
                }
            });
        }
        #[cfg(not(unix))]
        self.rt.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                tx.send_modify(|n| *n += 1);
            }
        });
        self.interrupt = Some(rx);
        Ok(())
    }

    /// Waits for `fut` on the runtime; with Ctrl-C handling on, a Ctrl-C
    /// abandons it with a cancellation error.
    fn wait<T>(&self, fut: impl Future<Output = datafusion::error::Result<T>>) -> CliResult<T> {
        let Some(interrupt) = &self.interrupt else {
            return Ok(self.rt.block_on(fut)?);
        };
        let mut interrupt = interrupt.clone();
        self.rt.block_on(async move {
            tokio::select! {
                r = fut => Ok(r?),
                _ = interrupt.changed() => Err(CliError::msg(Cancelled.to_string())),
            }
        })
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
        use logsql::distributed::{StaticWorkers, coordinator_context};
        return Ok(coordinator_context(
            config,
            StaticWorkers::parse(&args.workers)?,
            cluster_auth(
                args.worker_token_file.as_deref(),
                args.worker_tls_ca.as_deref(),
                args.worker_tls_cert.as_deref(),
                args.worker_tls_key.as_deref(),
            )?,
        )?);
    }
    let _ = args;
    Ok(logsql::session_context_with_config(config))
}

/// One side's token and TLS files: the token from `token_file`, else from
/// `LOGSQL_WORKER_TOKEN`.
#[cfg(feature = "distributed")]
fn cluster_auth(
    token_file: Option<&std::path::Path>,
    ca: Option<&std::path::Path>,
    cert: Option<&std::path::Path>,
    key: Option<&std::path::Path>,
) -> CliResult<logsql::distributed::ClusterAuth> {
    use logsql::distributed::{ClusterAuth, TlsFiles, Token};
    let token = match token_file {
        Some(file) => Some(Token::from_file(file)?),
        None => Token::from_env()?,
    };
    let tls = TlsFiles::load(ca, cert, key)?;
    Ok(ClusterAuth { token, tls })
}

/// `logsql worker`: serves until stopped.
#[cfg(feature = "distributed")]
fn worker(app: &App, w: &args::WorkerArgs) -> CliResult<()> {
    use logsql::DataRoots;
    use logsql::distributed::WorkerOptions;
    let options = WorkerOptions {
        auth: cluster_auth(
            w.token_file.as_deref(),
            w.tls_ca.as_deref(),
            w.tls_cert.as_deref(),
            w.tls_key.as_deref(),
        )?,
        roots: DataRoots::parse(&w.data_root)?,
        insecure: w.insecure,
        memory_limit: w.memory_limit,
    };
    options.validate()?;
    let scheme = match w.tls_cert {
        Some(_) => "https",
        None => "http",
    };
    if w.insecure && !options.auth.authenticates_peers() {
        eprintln!(
            "warning: --insecure: this worker runs queries for anyone who reaches {}",
            w.listen
        );
    }
    if w.tls_cert.is_none() && options.auth.token.is_some() && !w.listen.ip().is_loopback() {
        eprintln!(
            "warning: listening on {} without TLS: the token travels in clear text, and anyone \
             who reads it off the network can run queries here (give --tls-cert and --tls-key)",
            w.listen
        );
    }
    eprintln!(
        "logsql worker listening on {scheme}://{}, reading below {}",
        w.listen, options.roots
    );
    Ok(app
        .rt
        .block_on(logsql::distributed::serve(w.listen, options))?)
}

/// Writes `bytes` to an exclusively created temporary file beside `path`,
/// then renames it over `path`: a failed write never leaves a half-written
/// file (an image, a contact sheet, a chart) under the name asked for, nor writes through a link there.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> CliResult {
    use std::io::Write;
    let mut file = logsql::AtomicFile::create(path)
        .map_err(|e| CliError::io(path.display().to_string(), e))?;
    file.file()
        .write_all(bytes)
        .and_then(|()| file.commit())
        .map_err(|e| CliError::io(path.display().to_string(), e))
}

/// `s` as a SQL string literal (`'it''s'`).
pub use logsql::ops::sql_literal as quote;
