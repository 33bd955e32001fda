//! MCAP output from the engine: [`write_mcap`], the call `logsql export
//! out.mcap` and `logsql recover` make, over the MCAP writer of
//! [`logsql_writers::mcap`] and the one sink of the log formats
//! ([`super::sink`]), which `COPY (...) TO 'x.mcap'` (or `STORED AS MCAP`)
//! plans.
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

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::SendableRecordBatchStream;
use prost_reflect::DescriptorPool;

pub use super::drive::StreamErrors;
use super::sink::{LogSources, LogWrite, write_log};
use super::sources::ScannedFiles;
pub use super::target::Target;
pub use logsql_writers::mcap::{Compression, McapWriteOptions, OPTION_KEYS};

/// Writes `stream` as one MCAP file to `target`. Channels, schemas, metadata
/// and attachments come only from the files in `scanned` (see
/// [`super::sources`]). Returns the rows written and, under
/// [`StreamErrors::KeepRows`], the stream's error after which the file was
/// completed. `progress` is called with the running row count.
#[allow(clippy::too_many_arguments)]
pub async fn write_mcap(
    stream: SendableRecordBatchStream,
    env: Arc<RuntimeEnv>,
    pool: Option<Arc<DescriptorPool>>,
    scanned: &ScannedFiles,
    options: &McapWriteOptions,
    target: &Target,
    on_error: StreamErrors,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(u64, Option<DataFusionError>)> {
    let driven = write_log(
        stream,
        &LogWrite::Mcap(options.clone()),
        target,
        LogSources { scanned, env, pool },
        on_error,
        &|p| progress(p.rows),
        std::future::pending(),
    )
    .await?;
    Ok((driven.report.rows, driven.stream_error))
}
