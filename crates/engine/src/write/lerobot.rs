//! `COPY (query) TO 'dir' STORED AS LEROBOT OPTIONS (fps '30', ...)`: the
//! query's rows (one per frame) written as a LeRobot v3 dataset by
//! [`logsql_writers::lerobot`]. This is the DataFusion glue: the format, its
//! options, the sink, and [`write_dataset`], which runs the dataset writer
//! through the one bridge ([`super::drive`]) into an
//! [`AtomicDir`](logsql_writers::publish::AtomicDir) beside the target
//! ([`Target::create_dir`]), published only when complete: a failed,
//! cancelled or interrupted query leaves no dataset (and no temporary
//! directory: the writer thread owns it and removes it once it has
//! stopped). The target must not exist, or be an empty directory.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::GetExt;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::FileSinkConfig;
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};
use logsql_writers::FormatWriter;
use logsql_writers::format_writer::Progress;
use logsql_writers::lerobot::{DatasetWriter, check_query, check_target};
pub use logsql_writers::lerobot::{ImageStorage, LeRobotOptions, SkippedEpisode, Written};
use logsql_writers::publish::AtomicDir;

use super::df_write_err;
use super::drive::{Drive, drive};
use super::target::Target;
use super::write_only::{WriteOnly, WriteOnlyFormat};

/// [`LeRobotOptions`] from `COPY ... OPTIONS (...)` with DataFusion's
/// errors (import it to call `LeRobotOptions::from_map`).
pub trait LeRobotOptionsExt: Sized {
    /// The options of `COPY ... OPTIONS (...)`; unknown keys are refused
    /// with the known ones listed.
    fn from_map(options: &HashMap<String, String>) -> Result<Self>;
}

impl LeRobotOptionsExt for LeRobotOptions {
    fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        LeRobotOptions::parse(options).map_err(df_write_err)
    }
}

/// The name of the format (`STORED AS LEROBOT`).
pub const FORMAT_NAME: &str = "lerobot";

/// The LeRobot dataset format (write only).
#[derive(Debug, Clone, Default)]
pub(crate) struct LeRobotFormat {
    options: LeRobotOptions,
}

impl WriteOnly for LeRobotFormat {
    fn extension(&self) -> String {
        String::new()
    }

    fn not_read(&self) -> DataFusionError {
        DataFusionError::NotImplemented(
            "LeRobot datasets are written by logsql (COPY ... TO 'dir' STORED AS LEROBOT), not read: read their data/*.parquet files"
                .into(),
        )
    }

    fn writer_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Refuse a query that cannot be written before it runs.
        check_query(conf.output_schema(), &self.options).map_err(df_write_err)?;
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
        Ok(Arc::new(WriteOnlyFormat(LeRobotFormat {
            options: LeRobotOptions::parse(options).map_err(df_write_err)?,
        })))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(WriteOnlyFormat(LeRobotFormat::default()))
    }
}

/// The sink writing the dataset.
pub(crate) struct LeRobotSink {
    config: FileSinkConfig,
    options: LeRobotOptions,
    target: PathBuf,
}

impl LeRobotSink {
    /// The sink's configuration (its target, for the plan guard).
    pub(crate) fn config(&self) -> &FileSinkConfig {
        &self.config
    }
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

/// The dataset writer with the directory it fills: the writer thread owns
/// both, so that an abandoned write removes the directory only after the
/// writer stopped writing into it.
struct Staged {
    writer: DatasetWriter,
    dir: AtomicDir,
}

/// A finished dataset, not yet published.
struct Finished {
    written: Written,
    dir: AtomicDir,
}

impl logsql_writers::Written for Finished {
    fn rows(&self) -> u64 {
        self.written.frames
    }
}

impl FormatWriter for Staged {
    type Report = Finished;

    fn write_batch(&mut self, batch: &RecordBatch) -> logsql_writers::Result<()> {
        self.writer.write_batch(batch)
    }

    fn progress(&self) -> Progress {
        self.writer.progress()
    }

    fn finish(self) -> logsql_writers::Result<Finished> {
        let Self { writer, dir } = self;
        Ok(Finished {
            written: writer.finish()?,
            dir,
        })
    }
}

/// Writes `stream` as a LeRobot dataset at `target` (atomically: see the
/// module documentation); `progress` is called with the episodes and frames
/// written. When `cancel` completes first, the export stops and leaves
/// nothing (as when the returned future is dropped: the temporary directory
/// belongs to the writer thread, which removes it once it has stopped).
/// Returns what was written (and the episodes skipped).
pub async fn write_dataset(
    stream: SendableRecordBatchStream,
    target: &Path,
    options: LeRobotOptions,
    progress: &(dyn Fn(usize, u64) + Send + Sync),
    cancel: impl std::future::Future<Output = ()>,
) -> Result<Written> {
    check_target(target).map_err(df_write_err)?;
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| DataFusionError::Execution(format!("{}: {e}", parent.display())))?;
    }
    let out = Target::Local(target.to_path_buf());
    let dir = out.create_dir()?;
    let writer = DatasetWriter::new(dir.path().to_path_buf(), &stream.schema(), options)
        .map_err(df_write_err)?;
    let on_progress = |p: Progress| progress(p.groups as usize, p.rows);
    let options = Drive {
        progress: &on_progress,
        ..Drive::new("LeRobot dataset", target.display().to_string())
    };
    let driven = drive(stream, Staged { writer, dir }, options, cancel).await?;
    let Finished { written, dir } = driven.report;
    dir.commit().map_err(|e| {
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
    use datafusion::datasource::table_schema::TableSchema;

    #[test]
    fn the_format_gives_a_file_source_and_refuses_to_be_read() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let format = WriteOnlyFormat(LeRobotFormat::default());
        let source = format.file_source(TableSchema::from(schema));
        assert_eq!(source.file_type(), "log");
        assert!(format.0.not_read().to_string().contains("not read"));
    }
}
