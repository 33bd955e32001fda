//! [`WriterSink`]: the one DataFusion `DataSink` of the log formats logsql
//! writes itself: MCAP (`COPY ... TO 'x.mcap'`, `STORED AS MCAP`), ROS1 bags
//! (`TO 'x.bag'`, `STORED AS BAG`) and ROS 2 bag directories (`TO 'dir/'
//! STORED AS DB3`). The sink holds a [`LogWrite`], a small factory that
//! knows the format's options and makes its [`FormatWriter`] from the
//! staged output; [`write_log`] runs it through the one bridge
//! ([`super::drive::drive`]) and publishes the output
//! ([`super::target::Target`]) only when it is complete. `logsql export`
//! and `logsql recover` call [`write_log`] with the same factories.
//!
//! Channels (MCAP channels, bag connections, ROS 2 topics) come only from
//! the files the same query scanned ([`super::sources`]).

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Component, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::datasource::physical_plan::FileSinkConfig;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, SendableRecordBatchStream};
use logsql_readers::model::Channel;
use logsql_writers::bag::{BagBatchWriter, BagWriteOptions};
use logsql_writers::format_writer::Progress;
use logsql_writers::mcap::{McapWriteOptions, McapWriter};
pub use logsql_writers::messages::Report;
use logsql_writers::messages::check_schema;
use logsql_writers::ros2::{Ros2BagWriter, Ros2WriteOptions};
use logsql_writers::{FormatWriter, SourceFile};

use super::df_write_err;
use super::drive::{Drive, Driven, StreamErrors, drive};
use super::sources::{ScannedFiles, SourceResolver};
use super::target::{Target, io_err};
use crate::atomic_write::{AtomicDir, AtomicFile};
use crate::scanner::options::LogsqlOptions;

/// A log format logsql writes, with its options: the factory of its writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogWrite {
    /// One MCAP file.
    Mcap(McapWriteOptions),
    /// One ROS1 bag file.
    Bag(BagWriteOptions),
    /// A ROS 2 bag directory (SQLite storage).
    Db3(Ros2WriteOptions),
}

impl Default for LogWrite {
    fn default() -> Self {
        Self::Mcap(McapWriteOptions::default())
    }
}

impl LogWrite {
    /// The writer of the log format read as `format` (a reader's name, or
    /// `db3`), with `COPY ... OPTIONS` `options`; `None` for a format
    /// logsql only reads.
    pub fn of_format(format: &str, options: &HashMap<String, String>) -> Result<Option<Self>> {
        let write = match format {
            "mcap" => Self::Mcap(McapWriteOptions::from_map(options).map_err(df_write_err)?),
            "bag" => Self::Bag(BagWriteOptions::from_map(options).map_err(df_write_err)?),
            "ros2" | "db3" => Self::Db3(Ros2WriteOptions::from_map(options).map_err(df_write_err)?),
            _ => return Ok(None),
        };
        Ok(Some(write))
    }

    /// The same write with every channel of `channels` made an output
    /// channel before any row (the first of a topic and type wins), and rows
    /// that cannot be written left out and counted (`logsql recover`: a
    /// connection whose messages were all lost is kept, messages whose
    /// connection record was lost are left out). Refused, with the reason,
    /// when a channel cannot be written in this format. MCAP makes its
    /// channels from the rows and takes no declaration.
    pub fn declaring(self, channels: Vec<Channel>) -> std::result::Result<Self, String> {
        Ok(match self {
            Self::Mcap(o) => Self::Mcap(o),
            Self::Bag(o) => {
                logsql_writers::bag::check_channels(&channels)?;
                Self::Bag(BagWriteOptions {
                    channels,
                    leave_out: true,
                    ..o
                })
            }
            Self::Db3(o) => {
                logsql_writers::ros2::check_channels(&channels)?;
                Self::Db3(Ros2WriteOptions {
                    channels,
                    leave_out: true,
                    ..o
                })
            }
        })
    }

    /// A ROS1 bag with the default options.
    pub fn bag() -> Self {
        Self::Bag(BagWriteOptions::default())
    }

    /// A ROS 2 bag directory with the default options.
    pub fn db3() -> Self {
        Self::Db3(Ros2WriteOptions::default())
    }

    /// The format as messages name it (`MCAP`, `ROS1 bag`, `ROS 2 bag`).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Mcap(_) => "MCAP",
            Self::Bag(_) => "ROS1 bag",
            Self::Db3(_) => "ROS 2 bag",
        }
    }

    /// The format's `STORED AS` name.
    fn format(&self) -> &'static str {
        match self {
            Self::Mcap(_) => "mcap",
            Self::Bag(_) => "bag",
            Self::Db3(_) => "db3",
        }
    }

    /// What is written, for messages (`writing MCAP`).
    fn what(&self) -> &'static str {
        match self {
            Self::Mcap(_) => "writing MCAP",
            Self::Bag(_) => "writing ROS1 bag",
            Self::Db3(_) => "writing ROS 2 bag",
        }
    }

    /// Fails unless `schema` has the columns a message needs.
    pub fn check_schema(&self, schema: &Schema) -> Result<()> {
        check_schema(schema, self.what()).map_err(df_write_err)
    }

    /// The target of a `COPY` with `config`: one file, or for a ROS 2 bag
    /// one local directory.
    fn target(&self, config: &FileSinkConfig, context: &TaskContext) -> Result<Target> {
        let env = context.runtime_env();
        match self {
            Self::Mcap(_) => Target::of_sink(config, &env, "MCAP", "out.mcap"),
            Self::Bag(_) => Target::of_sink(config, &env, "ROS1 bag", "out.bag"),
            Self::Db3(_) => dir_target(config),
        }
    }

    /// The output staged for `target` and the writer filling it.
    fn start(&self, target: &Target) -> Result<(Staged, LogWriter)> {
        let name = target.name();
        let file = |out: &mut AtomicFile| -> Result<BufWriter<File>> {
            let f = out
                .file()
                .try_clone()
                .map_err(|e| io_err(out.temp_path(), e))?;
            Ok(BufWriter::new(f))
        };
        Ok(match self {
            Self::Mcap(options) => {
                let mut out = target.create()?;
                let w = McapWriter::new(file(&mut out)?, options.clone(), name);
                (Staged::File(out), LogWriter::Mcap(Box::new(w)))
            }
            Self::Bag(options) => {
                let mut out = target.create()?;
                let w = BagBatchWriter::new(file(&mut out)?, options.clone(), name)
                    .map_err(df_write_err)?;
                (Staged::File(out), LogWriter::Bag(w))
            }
            Self::Db3(options) => {
                let dir = target.create_dir()?;
                let bag_name = dir
                    .target()
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "bag".into());
                let w = Ros2BagWriter::create(dir.path(), &bag_name, options.clone(), name)
                    .map_err(df_write_err)?;
                (Staged::Dir(dir), LogWriter::Db3(w))
            }
        })
    }
}

/// The local directory a `COPY ... STORED AS DB3` names (with or without a
/// trailing `/`).
fn dir_target(config: &FileSinkConfig) -> Result<Target> {
    let table = config.table_paths.first().ok_or_else(|| {
        DataFusionError::Internal("COPY to a ROS 2 bag without an output path".into())
    })?;
    if !config.table_partition_cols.is_empty() {
        return Err(DataFusionError::NotImplemented(
            "COPY ... PARTITIONED BY is not supported for ROS 2 bag output (one bag directory is written)".into(),
        ));
    }
    let url: &url::Url = table.as_ref();
    if url.scheme() != "file" {
        return Err(DataFusionError::NotImplemented(format!(
            "a ROS 2 bag directory is written to a local path, not to {}",
            config.original_url
        )));
    }
    let path = url
        .to_file_path()
        .map_err(|_| DataFusionError::Plan(format!("not a local path: {}", config.original_url)))?;
    // Without a trailing separator: the directory's own name names its database.
    let path: PathBuf = path.components().collect();
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("db3"))
    {
        return Err(DataFusionError::Plan(format!(
            "a ROS 2 bag is a directory (its database and metadata.yaml): '{}' names a database; give a directory such as COPY (...) TO 'out/' STORED AS DB3",
            config.original_url
        )));
    }
    if path
        .components()
        .next_back()
        .is_none_or(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(DataFusionError::Plan(format!(
            "'{}' names no new directory for the ROS 2 bag",
            config.original_url
        )));
    }
    Ok(Target::Local(path))
}

/// An output being written, published when complete.
enum Staged {
    File(AtomicFile),
    Dir(AtomicDir),
}

impl Staged {
    async fn publish(self, target: &Target) -> Result<()> {
        match self {
            Self::File(out) => target.publish(out).await,
            Self::Dir(dir) => {
                let path = dir.target().to_path_buf();
                tokio::task::spawn_blocking(move || dir.commit())
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
                    .map_err(|e| io_err(&path, e))
            }
        }
    }
}

/// The writer of one [`LogWrite`].
enum LogWriter {
    Mcap(Box<McapWriter<BufWriter<File>>>),
    Bag(BagBatchWriter<BufWriter<File>>),
    Db3(Ros2BagWriter),
}

impl FormatWriter for LogWriter {
    type Report = Report;

    fn add_source(
        &mut self,
        name: &str,
        source: Option<&SourceFile>,
    ) -> logsql_writers::Result<()> {
        match self {
            Self::Mcap(w) => w.add_source(name, source),
            Self::Bag(w) => w.add_source(name, source),
            Self::Db3(w) => w.add_source(name, source),
        }
    }

    fn write_batch(&mut self, batch: &RecordBatch) -> logsql_writers::Result<()> {
        match self {
            Self::Mcap(w) => w.write_batch(batch),
            Self::Bag(w) => w.write_batch(batch),
            Self::Db3(w) => w.write_batch(batch),
        }
    }

    fn progress(&self) -> Progress {
        match self {
            Self::Mcap(w) => w.progress(),
            Self::Bag(w) => w.progress(),
            Self::Db3(w) => w.progress(),
        }
    }

    fn finish(self) -> logsql_writers::Result<Report> {
        match self {
            Self::Mcap(w) => (*w).finish().map(|rows| Report { rows, left_out: 0 }),
            Self::Bag(w) => w.finish(),
            Self::Db3(w) => w.finish(),
        }
    }
}

/// Where a [`write_log`] takes channels from and how it reports.
pub struct LogSources<'a> {
    /// The files the query scanned (the only ones channels come from).
    pub scanned: &'a ScannedFiles,
    /// The session's runtime (object stores, the summary cache).
    pub env: Arc<datafusion::execution::runtime_env::RuntimeEnv>,
    /// The session's protobuf descriptors.
    pub pool: Option<Arc<prost_reflect::DescriptorPool>>,
    /// Metadata records of the output's own (a clip's window and source),
    /// written after the first source file's (formats without metadata
    /// records, ROS1 and ROS 2 bags, leave them out).
    pub extra_metadata: Vec<logsql_readers::model::MetadataInfo>,
}

/// Writes `stream` as `write` says to `target`, published only when
/// complete. Under [`StreamErrors::KeepRows`] an input error after some rows
/// completes the output and is returned beside the report. `progress` is
/// called with how far the writer got; when `cancel` completes first,
/// nothing is written.
pub async fn write_log(
    stream: SendableRecordBatchStream,
    write: &LogWrite,
    target: &Target,
    sources: LogSources<'_>,
    on_error: StreamErrors,
    progress: &(dyn Fn(Progress) + Send + Sync),
    cancel: impl std::future::Future<Output = ()>,
) -> Result<Driven<Report>> {
    write.check_schema(&stream.schema())?;
    let (staged, writer) = write.start(target)?;
    let resolver = SourceResolver::new(sources.env, sources.pool, sources.scanned, target.name())
        .with_extra_metadata(sources.extra_metadata);
    let options = Drive {
        what: write.what(),
        target: target.name(),
        on_error,
        sources: Some(resolver),
        progress,
    };
    let driven = drive(stream, writer, options, cancel).await?;
    staged.publish(target).await?;
    Ok(driven)
}

/// The `COPY ... TO` sink of the log formats (see the module documentation).
pub(crate) struct WriterSink {
    config: FileSinkConfig,
    write: LogWrite,
    /// The files the query's scans read: the only ones channels come from.
    scanned: ScannedFiles,
}

impl WriterSink {
    /// The sink writing `config`'s target as `write` says, taking channels
    /// from the files of `scanned` only.
    pub(crate) fn new(config: FileSinkConfig, write: LogWrite, scanned: ScannedFiles) -> Self {
        Self {
            config,
            write,
            scanned,
        }
    }

    /// The target of the write.
    pub(crate) fn config(&self) -> &FileSinkConfig {
        &self.config
    }
}

impl fmt::Debug for WriterSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriterSink")
            .field("url", &self.config.original_url)
            .field("write", &self.write)
            .finish()
    }
}

impl DisplayAs for WriterSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let format = self.write.format();
        match t {
            DisplayFormatType::TreeRender => {
                write!(f, "format: {format}\nfile={}", self.config.original_url)
            }
            _ => write!(
                f,
                "WriterSink(format={format}, file={})",
                self.config.original_url
            ),
        }
    }
}

#[async_trait]
impl DataSink for WriterSink {
    fn schema(&self) -> &SchemaRef {
        self.config.output_schema()
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let target = self.write.target(&self.config, context)?;
        let options = LogsqlOptions::from_config(context.session_config().options());
        let sources = LogSources {
            scanned: &self.scanned,
            env: context.runtime_env(),
            pool: options.descriptor_pool()?,
            extra_metadata: Vec::new(),
        };
        let driven = write_log(
            data,
            &self.write,
            &target,
            sources,
            StreamErrors::Abort,
            &|_| {},
            std::future::pending(),
        )
        .await?;
        Ok(driven.report.rows)
    }
}
