//! The one error type of the writers, converted to DataFusion's at the
//! engine's boundary (each kind to the DataFusion error of the same meaning,
//! so a message reads the same from SQL, the CLI and Python).

use std::path::Path;

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An option the writer does not know or a value it cannot take (a
    /// `COPY ... OPTIONS (...)` key, a compression name, a frame rate).
    #[error("{0}")]
    Options(String),
    /// The rows do not fit the format: a column it needs is missing or of a
    /// type it cannot take (found before anything is written).
    #[error("{0}")]
    Input(String),
    /// A row or value that cannot be written, or a failure while writing,
    /// with the output, row or time it concerns.
    #[error("{0}")]
    Write(String),
    /// A feature of the format that the writer does not offer.
    #[error("{0}")]
    Unsupported(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// An Arrow computation (a cast of a column) failed.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

/// A writer's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
