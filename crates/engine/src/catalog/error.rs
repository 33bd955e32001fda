//! The catalog's errors: each names the catalog and what was wrong.

use datafusion::error::DataFusionError;

/// Why a catalog could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The location holds files but no catalog (no `_log/` commits).
    #[error(
        "{catalog}: not a logsql catalog (it holds files but no _log/ commits); give an empty or new directory"
    )]
    NotACatalog {
        /// The catalog as the user named it.
        catalog: String,
    },
    /// No commit yet: nothing was indexed there.
    #[error("{catalog}: no catalog there yet (run: logsql index SOURCE --catalog {catalog})")]
    Empty {
        /// The catalog as the user named it.
        catalog: String,
    },
    /// A commit of a layout this build does not know.
    #[error(
        "{catalog}: catalog layout version {found} is newer than this logsql reads ({known}); upgrade logsql"
    )]
    NewerLayout {
        /// The catalog as the user named it.
        catalog: String,
        /// The version the commit states.
        found: u64,
        /// The newest version this build reads.
        known: u64,
    },
    /// Another run committed the same generation first, again and again.
    #[error(
        "{catalog}: other `logsql index` runs kept committing first ({attempts} attempts); run again"
    )]
    Contended {
        /// The catalog as the user named it.
        catalog: String,
        /// How many commits were tried.
        attempts: usize,
    },
    /// A commit or table file that does not read as one.
    #[error("{catalog}: {file}: {message}")]
    Damaged {
        /// The catalog as the user named it.
        catalog: String,
        /// The file, relative to the catalog.
        file: String,
        /// What was wrong.
        message: String,
    },
    /// A request to the catalog's store failed.
    #[error("{catalog}: {source}")]
    Store {
        /// The catalog as the user named it.
        catalog: String,
        /// The store's error.
        #[source]
        source: datafusion::object_store::Error,
    },
    /// A local directory could not be made or read.
    #[error("{catalog}: {source}")]
    Io {
        /// The catalog as the user named it.
        catalog: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl From<CatalogError> for DataFusionError {
    fn from(e: CatalogError) -> Self {
        DataFusionError::External(Box::new(e))
    }
}
