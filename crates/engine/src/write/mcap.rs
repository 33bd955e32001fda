//! MCAP output from the engine: the MCAP writer of [`logsql_writers::mcap`]
//! and its options, written through the one sink of the log formats
//! ([`super::sink`]), which `COPY (...) TO 'x.mcap'` (or `STORED AS MCAP`)
//! plans and `logsql export out.mcap` and `logsql recover` call
//! ([`crate::ops::export::write_log_of`]).
//!
//! The output goes to an exclusively created temporary file beside the
//! target ([`crate::atomic_write::AtomicFile`]; for an object store, in the
//! temporary directory), and only a complete, synced file is renamed
//! (uploaded) to the target. An error in the input stream leaves the target
//! as it was and no temporary file. Scan errors of damaged files are
//! deferred past the sink ([`crate::scanner::damage`]): the sink sees the
//! readable rows end normally, completes the file, and the query then fails
//! with the note that the output is complete and valid, as with `COPY ... TO
//! '.parquet'`.

pub use super::drive::StreamErrors;
pub use super::target::Target;
pub use logsql_writers::mcap::{Compression, McapWriteOptions, OPTION_KEYS};
