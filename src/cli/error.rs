//! The CLI's error type and the user-facing rendering of DataFusion errors.
//!
//! DataFusion wraps errors in layers (`External error: `, `Arrow error: `,
//! contexts, shared errors); [`render`] peels them so that a damaged file reads
//! as `<file>: truncated mcap file: ... at byte N (...)` rather than a chain of
//! prefixes.

use std::fmt;
use std::io;

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;

/// Anything that stops a CLI command.
#[derive(Debug)]
pub enum CliError {
    /// A query or engine error.
    DataFusion(DataFusionError),
    /// A logsql reader error (used without DataFusion, e.g. by `info`).
    Logsql(logsql_readers::Error),
    /// An I/O error with what was being done.
    Io(String, io::Error),
    /// Output could not be written because the reader went away (`| head`).
    BrokenPipe,
    /// Anything else, already phrased for the user.
    Message(String),
    /// An outcome already reported on stdout, ending with this exit status
    /// and no error line (`logsql doctor`'s 1 and 2).
    Status(u8),
}

/// Result alias of the CLI.
pub type CliResult<T = ()> = Result<T, CliError>;

impl CliError {
    /// A plain message.
    pub fn msg(m: impl Into<String>) -> Self {
        CliError::Message(m.into())
    }

    /// An I/O error while doing `what`; a broken pipe becomes [`CliError::BrokenPipe`].
    pub fn io(what: impl Into<String>, e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            CliError::BrokenPipe
        } else {
            CliError::Io(what.into(), e)
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::DataFusion(e) => f.write_str(&render(e)),
            CliError::Logsql(e) => write!(f, "{e}"),
            CliError::Io(what, e) => write!(f, "{what}: {e}"),
            CliError::BrokenPipe => f.write_str("broken pipe"),
            CliError::Message(m) => f.write_str(m),
            CliError::Status(n) => write!(f, "exit status {n}"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<DataFusionError> for CliError {
    fn from(e: DataFusionError) -> Self {
        if is_broken_pipe(&e) {
            CliError::BrokenPipe
        } else {
            CliError::DataFusion(e)
        }
    }
}

impl From<ArrowError> for CliError {
    fn from(e: ArrowError) -> Self {
        match e {
            ArrowError::IoError(_, io) if io.kind() == io::ErrorKind::BrokenPipe => {
                CliError::BrokenPipe
            }
            e => CliError::from(DataFusionError::from(e)),
        }
    }
}

impl From<datafusion::parquet::errors::ParquetError> for CliError {
    fn from(e: datafusion::parquet::errors::ParquetError) -> Self {
        CliError::from(DataFusionError::from(e))
    }
}

impl From<logsql_readers::Error> for CliError {
    fn from(e: logsql_readers::Error) -> Self {
        CliError::Logsql(e)
    }
}

impl From<logsql::ops::chart::ChartError> for CliError {
    fn from(e: logsql::ops::chart::ChartError) -> Self {
        CliError::Message(e.to_string())
    }
}

/// Whether a DataFusion error is, at bottom, a broken pipe on output.
fn is_broken_pipe(e: &DataFusionError) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>()
            && io.kind() == io::ErrorKind::BrokenPipe
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// Renders a DataFusion error for users: logsql errors (file, byte offset, cause)
/// without the `External error: ` prefix, contexts after their cause as notes,
/// SQL parser errors without Rust debug quoting, and no backtraces.
pub fn render(e: &DataFusionError) -> String {
    match e {
        DataFusionError::External(inner) => render_dyn(inner.as_ref()),
        DataFusionError::Context(desc, inner) => format!("{}\n  note: {desc}", render(inner)),
        DataFusionError::Shared(inner) => render(inner),
        DataFusionError::Diagnostic(_, inner) => render(inner),
        DataFusionError::Collection(errs) => match errs.first() {
            Some(first) => render(first),
            None => e.strip_backtrace(),
        },
        DataFusionError::ArrowError(inner, _) => render_arrow(inner),
        DataFusionError::SQL(inner, _) => inner.to_string(),
        // Its own Display already says "Parquet error: ".
        DataFusionError::ParquetError(inner) => inner.to_string(),
        DataFusionError::ExecutionJoin(inner) => format!("query task failed: {inner}"),
        DataFusionError::Plan(msg) => missing_path(msg).unwrap_or_else(|| e.strip_backtrace()),
        _ => e.strip_backtrace(),
    }
}

/// `table 'datafusion.public./x/run.mcap' not found` is how DataFusion reports
/// `FROM '/x/run.mcap'` when nothing is there: say that instead.
fn missing_path(msg: &str) -> Option<String> {
    let name = msg.strip_prefix("table '")?.strip_suffix("' not found")?;
    let name = name.strip_prefix("datafusion.public.").unwrap_or(name);
    let looks_like_path = name.contains('/') || name.contains('.') || name.contains('*');
    if !looks_like_path || std::path::Path::new(name).exists() {
        return None;
    }
    Some(if name.contains(['*', '?', '[']) {
        format!("{name}: no file matches this pattern")
    } else {
        format!("{name}: no such file or directory")
    })
}

fn render_arrow(e: &ArrowError) -> String {
    match e {
        ArrowError::ExternalError(inner) => render_dyn(inner.as_ref()),
        other => other.to_string(),
    }
}

fn render_dyn(e: &(dyn std::error::Error + Send + Sync + 'static)) -> String {
    if let Some(df) = e.downcast_ref::<DataFusionError>() {
        render(df)
    } else if let Some(arrow) = e.downcast_ref::<ArrowError>() {
        render_arrow(arrow)
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corrupt() -> logsql_readers::Error {
        logsql_readers::Error::Corrupt {
            file: "/x/run.mcap".into(),
            format: "mcap",
            offset: 42,
            message: "bad opcode".into(),
        }
    }

    #[test]
    fn logsql_errors_lose_the_external_prefix() {
        let e = DataFusionError::External(Box::new(corrupt()));
        assert_eq!(
            render(&e),
            "/x/run.mcap: corrupt mcap data at byte 42: bad opcode"
        );
        let wrapped = DataFusionError::ArrowError(
            Box::new(ArrowError::ExternalError(Box::new(
                DataFusionError::Shared(std::sync::Arc::new(e)),
            ))),
            None,
        );
        assert_eq!(
            render(&wrapped),
            "/x/run.mcap: corrupt mcap data at byte 42: bad opcode"
        );
    }

    #[test]
    fn context_follows_its_cause() {
        let e = DataFusionError::External(Box::new(corrupt())).context("reading stopped");
        assert_eq!(
            render(&e),
            "/x/run.mcap: corrupt mcap data at byte 42: bad opcode\n  note: reading stopped"
        );
    }

    #[test]
    fn missing_paths_are_named() {
        let e = DataFusionError::Plan("table 'datafusion.public./no/such.mcap' not found".into());
        assert_eq!(render(&e), "/no/such.mcap: no such file or directory");
        let e = DataFusionError::Plan("table 'datafusion.public./no/*.mcap' not found".into());
        assert_eq!(render(&e), "/no/*.mcap: no file matches this pattern");
        let e = DataFusionError::Plan("table 'datafusion.public.t' not found".into());
        assert_eq!(
            render(&e),
            "Error during planning: table 'datafusion.public.t' not found"
        );
    }

    #[test]
    fn broken_pipes_are_recognised() {
        let e = ArrowError::IoError("w".into(), io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(matches!(CliError::from(e), CliError::BrokenPipe));
        let e = DataFusionError::IoError(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(matches!(CliError::from(e), CliError::BrokenPipe));
    }
}
