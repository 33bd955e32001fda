//! Writing camera images as video: `COPY (SELECT log_time, image FROM
//! read_images(...)) TO 'clip.mp4'` (or `STORED AS MP4`), the MP4 file
//! format DataFusion's `COPY` finds by the `.mp4` extension. MP4 is
//! written, never read.
//!
//! The DataFusion glue of [`logsql_writers::mp4`]: the format, its
//! options, and the sink, which requires its input in `log_time` order
//! (DataFusion sorts the rows when the scan does not already deliver them
//! so; a `read_images` scan of time-ordered files does) and runs the
//! [`Mp4Writer`] through the one bridge ([`super::drive`]). Under
//! `logsql.on_error = 'warn'` an image that does not decode is left out with
//! a warning. The file is written to a temporary file and appears under its
//! name only when complete ([`super::target`]). `COPY` reports the number of
//! frames written.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::GetExt;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::FileSinkConfig;
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{LexRequirement, PhysicalSortRequirement};
use datafusion::physical_plan::expressions::col as column;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};
use logsql_writers::mp4::{Columns, Mp4Writer};
pub use logsql_writers::mp4::{OPTION_KEYS, VideoWriteOptions};

use super::df_write_err;
use super::drive::{Drive, drive};
use super::target::{Target, io_err};
use super::write_only::{WriteOnly, WriteOnlyFormat};
use crate::scanner::options::{LogsqlOptions, OnError};
use crate::scanner::schema::col;

/// The name of the format (`STORED AS MP4`, the `.mp4` extension).
pub const MP4: &str = "mp4";

/// The MP4 file format: written by `COPY`, never read ([`WriteOnly`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct VideoFileFormat {
    options: VideoWriteOptions,
}

impl WriteOnly for VideoFileFormat {
    fn extension(&self) -> String {
        format!(".{MP4}")
    }

    fn not_read(&self) -> DataFusionError {
        DataFusionError::NotImplemented(
            "logsql writes MP4 video (COPY ... TO 'clip.mp4') but does not read it".into(),
        )
    }

    fn writer_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        conf: FileSinkConfig,
        _order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns = Columns::of(conf.output_schema()).map_err(df_write_err)?;
        // Frames in time order: DataFusion sorts unless the input is.
        let order = LexRequirement::new([PhysicalSortRequirement::new(
            column(col::LOG_TIME, &input.schema())?,
            Some(SortOptions {
                descending: false,
                nulls_first: false,
            }),
        )]);
        let sink = Arc::new(VideoSink {
            config: conf,
            options: self.options,
            columns,
        });
        Ok(Arc::new(DataSinkExec::new(input, sink, order)))
    }
}

/// Creates [`VideoFileFormat`]s for `COPY ... TO 'x.mp4'` / `STORED AS MP4`.
#[derive(Debug, Clone, Default)]
pub struct VideoFileFormatFactory;

impl GetExt for VideoFileFormatFactory {
    fn get_ext(&self) -> String {
        MP4.to_string()
    }
}

impl FileFormatFactory for VideoFileFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        Ok(Arc::new(WriteOnlyFormat(VideoFileFormat {
            options: VideoWriteOptions::parse(options).map_err(df_write_err)?,
        })))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(WriteOnlyFormat(VideoFileFormat::default()))
    }
}

/// The `COPY ... TO 'x.mp4'` sink.
pub(crate) struct VideoSink {
    config: FileSinkConfig,
    options: VideoWriteOptions,
    columns: Columns,
}

impl VideoSink {
    /// The target of the write.
    pub(crate) fn config(&self) -> &FileSinkConfig {
        &self.config
    }
}

impl fmt::Debug for VideoSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VideoSink")
            .field("url", &self.config.original_url)
            .field("options", &self.options)
            .finish()
    }
}

impl DisplayAs for VideoSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => {
                write!(f, "format: mp4\nfile={}", self.config.original_url)
            }
            _ => write!(f, "VideoSink(file={})", self.config.original_url),
        }
    }
}

#[async_trait]
impl DataSink for VideoSink {
    fn schema(&self) -> &SchemaRef {
        self.config.output_schema()
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let env = context.runtime_env();
        let target = Target::of_sink(&self.config, &env, "MP4", "clip.mp4")?;
        let warn = LogsqlOptions::from_config(context.session_config().options()).on_error
            == OnError::Warn;
        let mut out = target.create()?;
        let file = out
            .file()
            .try_clone()
            .map_err(|e| io_err(out.temp_path(), e))?;
        let writer = Mp4Writer::new(file, target.name(), self.columns, self.options, warn)
            .map_err(df_write_err)?;
        let driven = drive(
            data,
            writer,
            Drive::new("writing MP4", target.name()),
            std::future::pending(),
        )
        .await?;
        target.publish(out).await?;
        Ok(driven.report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_errors_are_configuration_errors() {
        let options: HashMap<String, String> = [("fps".to_string(), "0".to_string())].into();
        let e = VideoFileFormatFactory
            .create(
                &datafusion::execution::session_state::SessionStateBuilder::new().build(),
                &options,
            )
            .unwrap_err();
        assert!(matches!(e, DataFusionError::Configuration(_)), "{e}");
        assert!(
            e.to_string().contains("MP4 fps '0' is not a frame rate"),
            "{e}"
        );
    }
}
