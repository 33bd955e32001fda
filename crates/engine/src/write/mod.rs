//! The write wing of the engine: the thin DataFusion glue over the writers
//! of `logsql-writers`. Every format is one [`logsql_writers::FormatWriter`]
//! plus its registration here; one bridge ([`drive`]) runs any of them.
//!
//! - [`drive`]: the one bridge from a query's record-batch stream to a
//!   blocking writer (progress, cancel, errors, the source files' channels);
//! - [`target`]: where an output goes (a local path, an object in a store)
//!   and how it is staged and published;
//! - [`sources`]: the files a query scanned, whose channels, schemas,
//!   metadata and attachments a writer may take;
//! - [`sink`]: the one sink of the log formats (MCAP, ROS1 bag, ROS 2 bag)
//!   and [`sink::write_log`], which `export` and `recover` call too;
//! - [`mcap`], [`mp4`], [`lerobot`]: the `COPY ... TO` formats;
//! - [`frame_batches`]: small batches under the sinks of camera frames;
//! - `write_only`: the one `FileFormat` of the outputs `COPY` writes and
//!   never reads (MP4, LeRobot).

pub mod drive;
pub mod frame_batches;
pub mod lerobot;
pub mod mcap;
pub mod mp4;
pub mod sink;
pub mod sources;
pub mod target;
mod write_only;

use datafusion::error::DataFusionError;

/// A writer's error as DataFusion's, each kind as the DataFusion error of
/// the same meaning (so its message reads as it did before the writers had
/// a crate of their own).
pub(crate) fn df_write_err(e: logsql_writers::Error) -> DataFusionError {
    use logsql_writers::Error;
    match e {
        Error::Options(m) => DataFusionError::Configuration(m),
        Error::Input(m) => DataFusionError::Plan(m),
        Error::Write(m) => DataFusionError::Execution(m),
        Error::Unsupported(m) => DataFusionError::NotImplemented(m),
        Error::Arrow(e) => DataFusionError::ArrowError(Box::new(e), None),
        e @ Error::Io { .. } => DataFusionError::External(Box::new(e)),
    }
}
