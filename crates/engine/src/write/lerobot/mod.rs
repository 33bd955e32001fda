//! `COPY (query) TO 'dir' STORED AS LEROBOT OPTIONS (fps '30', ...)`: the
//! query's rows (one per frame) written as a LeRobot v3 dataset.
//!
//! - [`columns`]: what each column becomes (episode, time, task, features);
//! - [`writer`]: the dataset writer (data files, videos, leading rows
//!   dropped, the checks that name file, feature and time);
//! - [`staging`]: an episode's rows and encoded frames until it is kept
//!   (or skipped, `skip_bad_episodes`);
//! - [`stats`]: the statistics as LeRobot computes them;
//! - [`meta`]: `meta/info.json`, `stats.json`, `tasks.parquet`, episodes;
//! - [`options`]: the `OPTIONS` keys.
//!
//! The dataset is written into a new temporary directory beside the target
//! (`.<name>.<random>.tmp`) on a blocking thread fed through a bounded
//! channel, and renamed to the target only when complete: a failed,
//! cancelled or interrupted query leaves no dataset (and no temporary
//! directory: the thread that owns it removes it once it has stopped). The target
//! must not exist, or be an empty directory.

pub(crate) mod columns;
pub(crate) mod meta;
pub(crate) mod options;
pub(crate) mod staging;
pub(crate) mod stats;
pub(crate) mod writer;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::{GetExt, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::object_store::{ObjectMeta, ObjectStore};
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};
use futures::{FutureExt, StreamExt};

use crate::datasource::source::LogSource;
use columns::ColumnPlan;
pub use options::{ImageStorage, LeRobotOptions};
use writer::DatasetWriter;
pub use writer::{SkippedEpisode, Written};

/// The name of the format (`STORED AS LEROBOT`).
pub const FORMAT_NAME: &str = "lerobot";

/// Batches queued between the query and the writer thread.
const QUEUE: usize = 2;

fn write_only() -> DataFusionError {
    DataFusionError::NotImplemented(
        "LeRobot datasets are written by logsql (COPY ... TO 'dir' STORED AS LEROBOT), not read: read their data/*.parquet files"
            .into(),
    )
}

/// The LeRobot dataset format (write only).
#[derive(Debug, Clone, Default)]
pub struct LeRobotFormat {
    options: LeRobotOptions,
}

#[async_trait]
impl FileFormat for LeRobotFormat {
    fn get_ext(&self) -> String {
        String::new()
    }

    fn get_ext_with_compression(&self, _c: &FileCompressionType) -> Result<String> {
        Ok(String::new())
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        Err(write_only())
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _table_schema: SchemaRef,
        _object: &ObjectMeta,
    ) -> Result<Statistics> {
        Err(write_only())
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        _conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Err(write_only())
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Refuse a query that cannot be written before it runs.
        ColumnPlan::of(conf.output_schema())?;
        self.options.fps()?;
        if !conf.table_partition_cols.is_empty() {
            return Err(DataFusionError::NotImplemented(
                "COPY ... PARTITIONED BY is not supported for LeRobot datasets".into(),
            ));
        }
        let target = target_dir(&conf)?;
        // Rows grouped by episode, in time order within each: DataFusion
        // merges or sorts the input unless it already comes so (or the query
        // says it does: `presorted`, which the writer checks).
        let schema = input.schema();
        let asc = Some(datafusion::arrow::compute::SortOptions {
            descending: false,
            nulls_first: false,
        });
        let mut order = Vec::new();
        for name in ["episode_index", "log_time", "timestamp"] {
            if let Ok(c) = datafusion::physical_plan::expressions::col(name, &schema) {
                order.push(datafusion::physical_expr::PhysicalSortRequirement::new(
                    c, asc,
                ));
                if name != "episode_index" {
                    break;
                }
            }
        }
        let order = match self.options.presorted {
            true => None,
            false => LexRequirement::new(order).or(order_requirements),
        };
        let sink = Arc::new(LeRobotSink {
            config: conf,
            options: self.options.clone(),
            target,
        });
        Ok(Arc::new(DataSinkExec::new(input, sink, order)))
    }

    /// Never scanned (`create_physical_plan` refuses); the source exists
    /// because the trait asks for one.
    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(LogSource::new(None, table_schema))
    }
}

/// The local directory a `COPY` names.
fn target_dir(conf: &FileSinkConfig) -> Result<PathBuf> {
    let table = conf
        .table_paths
        .first()
        .ok_or_else(|| DataFusionError::Internal("COPY to LeRobot without a path".into()))?;
    let url: &url::Url = table.as_ref();
    if url.scheme() != "file" {
        return Err(DataFusionError::NotImplemented(format!(
            "LeRobot datasets are written to a local directory ('{}' is not one)",
            conf.original_url
        )));
    }
    url.to_file_path()
        .map_err(|_| DataFusionError::Plan(format!("not a local path: {}", conf.original_url)))
}

/// Creates [`LeRobotFormat`]s for `STORED AS LEROBOT OPTIONS (...)`.
#[derive(Debug, Default)]
pub struct LeRobotFormatFactory;

impl GetExt for LeRobotFormatFactory {
    fn get_ext(&self) -> String {
        FORMAT_NAME.to_string()
    }
}

impl FileFormatFactory for LeRobotFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        Ok(Arc::new(LeRobotFormat {
            options: LeRobotOptions::from_map(options)?,
        }))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(LeRobotFormat::default())
    }
}

/// The sink writing the dataset.
pub(crate) struct LeRobotSink {
    config: FileSinkConfig,
    options: LeRobotOptions,
    target: PathBuf,
}

impl fmt::Debug for LeRobotSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeRobotSink")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl DisplayAs for LeRobotSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LeRobotSink: {}", self.target.display())
    }
}

/// Fails unless `target` can take the dataset: absent, or an empty
/// directory.
fn check_target(target: &Path) -> Result<()> {
    match std::fs::symlink_metadata(target) {
        Err(_) => Ok(()),
        Ok(m) if m.is_dir() => {
            let empty = std::fs::read_dir(target)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            if empty {
                Ok(())
            } else {
                Err(DataFusionError::Plan(format!(
                    "{} exists and is not empty: a LeRobot dataset is written to a new directory (remove it or choose another name)",
                    target.display()
                )))
            }
        }
        Ok(_) => Err(DataFusionError::Plan(format!(
            "{} exists and is not a directory",
            target.display()
        ))),
    }
}

/// A new temporary directory beside `target`.
fn temp_dir_beside(target: &Path) -> Result<tempfile::TempDir> {
    let parent = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .map_err(|e| DataFusionError::Execution(format!("{}: {e}", parent.display())))?;
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(target.file_name().unwrap_or_else(|| "dataset".as_ref()));
    prefix.push(".");
    tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempdir_in(&parent)
        .map_err(|e| DataFusionError::Execution(format!("{}: {e}", parent.display())))
}

/// What the query side sends the writer thread.
enum ToWriter {
    Batch(RecordBatch),
    /// The input is complete: the dataset can be finished.
    End,
}

/// Writes `stream` as a LeRobot dataset at `target` (atomically: see the
/// module documentation); `progress` is called with the episodes and frames
/// written. When `cancel` completes first, the export stops and leaves
/// nothing (as when the returned future is dropped: the temporary directory
/// belongs to the writer thread, which removes it once it has stopped).
/// Returns what was written (and the episodes skipped).
pub async fn write_dataset(
    mut stream: SendableRecordBatchStream,
    target: &Path,
    options: LeRobotOptions,
    progress: &(dyn Fn(usize, u64) + Send + Sync),
    cancel: impl std::future::Future<Output = ()>,
) -> Result<Written> {
    check_target(target)?;
    let temp = temp_dir_beside(target)?;
    let root = temp.path().to_path_buf();
    let mut writer = DatasetWriter::new(root, &stream.schema(), options)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<ToWriter>(QUEUE);
    let (ptx, mut prx) = tokio::sync::watch::channel((0usize, 0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let interrupted = || {
        DataFusionError::Execution(format!(
            "LeRobot dataset: interrupted: nothing was written to {}",
            target.display()
        ))
    };
    let task = tokio::task::spawn_blocking(move || -> Result<(Written, tempfile::TempDir)> {
        // Without `End` (a failed or cancelled query), or once stopped, the
        // dataset is not finished, and `temp` is removed here, after the
        // writer stopped.
        while let Some(message) = rx.blocking_recv() {
            if stopped.load(Ordering::Relaxed) {
                break;
            }
            match message {
                ToWriter::Batch(batch) => {
                    writer.write_batch(&batch)?;
                    let _ = ptx.send((writer.episodes(), writer.frames()));
                }
                ToWriter::End => return Ok((writer.finish()?, temp)),
            }
        }
        Err(DataFusionError::Execution(
            "LeRobot dataset: the query stopped before its end".into(),
        ))
    });
    let mut failed = None;
    let mut cancel = std::pin::pin!(cancel.fuse());
    loop {
        let next = tokio::select! {
            next = stream.next() => next,
            () = &mut cancel => {
                failed = Some(interrupted());
                break;
            }
        };
        let message = match next {
            None => ToWriter::End,
            Some(Ok(batch)) => ToWriter::Batch(batch),
            Some(Err(e)) => {
                failed = Some(e);
                break;
            }
        };
        let end = matches!(message, ToWriter::End);
        // A writer that failed has dropped its end: its error is the one to give.
        let sent = tokio::select! {
            sent = tx.send(message) => sent.is_ok(),
            () = &mut cancel => {
                failed = Some(interrupted());
                break;
            }
        };
        if end || !sent {
            break;
        }
        if prx.has_changed().unwrap_or(false) {
            let (e, f) = *prx.borrow_and_update();
            progress(e, f);
        }
    }
    if failed.is_some() {
        stop.store(true, Ordering::Relaxed);
    }
    drop(tx);
    let mut task = std::pin::pin!(task);
    let written = tokio::select! {
        written = &mut task => written,
        () = &mut cancel => {
            stop.store(true, Ordering::Relaxed);
            failed = Some(interrupted());
            task.await
        }
    }
    .map_err(|e| DataFusionError::External(Box::new(e)))?;
    if let Some(e) = failed {
        return Err(e);
    }
    let (written, temp) = written?;
    // An empty directory at the target is replaced.
    if target.is_dir() {
        std::fs::remove_dir(target)
            .map_err(|e| DataFusionError::Execution(format!("{}: {e}", target.display())))?;
    }
    let kept = temp.keep();
    std::fs::rename(&kept, target).map_err(|e| {
        let _ = std::fs::remove_dir_all(&kept);
        DataFusionError::Execution(format!(
            "moving the finished dataset to {}: {e}",
            target.display()
        ))
    })?;
    Ok(written)
}

#[async_trait]
impl DataSink for LeRobotSink {
    fn schema(&self) -> &SchemaRef {
        self.config.output_schema()
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let written = write_dataset(
            data,
            &self.target,
            self.options.clone(),
            &|_, _| {},
            std::future::pending(),
        )
        .await?;
        Ok(written.frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    #[test]
    fn the_format_gives_a_file_source_and_refuses_to_be_read() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let format = LeRobotFormat::default();
        let source = format.file_source(TableSchema::from(schema));
        assert_eq!(source.file_type(), "log");
        assert!(write_only().to_string().contains("not read"));
    }
}
