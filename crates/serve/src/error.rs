//! The serve crate's one error type: why a server cannot start, or why it
//! refuses a statement.

use std::io;

use datafusion::error::DataFusionError;

/// Anything that stops a server from starting, or a statement from running.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A configuration the server cannot start with, already phrased for
    /// the user (no data root, a `--table` spec without a name, ...).
    #[error("{0}")]
    Config(String),
    /// A certificate or key that does not load, or a TLS setting that
    /// cannot be met.
    #[error("{0}")]
    Tls(String),
    /// An I/O error with what was being done.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (`listening on 127.0.0.1:5432`).
        what: String,
        /// The error.
        source: io::Error,
    },
    /// A statement a shared server session does not run, and why.
    #[error("{0}")]
    Refused(String),
    /// A query or session error.
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
}

impl ServeError {
    /// An I/O error while doing `what`.
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        ServeError::Io {
            what: what.into(),
            source,
        }
    }
}

/// Result alias of the serve crate.
pub type ServeResult<T = ()> = Result<T, ServeError>;
