//! Writing camera images as video: `COPY (SELECT log_time, image FROM
//! read_images(...)) TO 'clip.mp4'` (or `STORED AS MP4`), the MP4 file
//! format DataFusion's `COPY` finds by the `.mp4` extension. MP4 is
//! written, never read.
//!
//! The query gives a `log_time` column and one image column (the `image`
//! value of `read_images`, or a column of its type); other columns are
//! ignored. The sink requires its input in `log_time` order: DataFusion
//! sorts the rows when the scan does not already deliver them so (a
//! `read_images` scan of time-ordered files does). Each image is decoded and
//! converted to the encoder's 4:2:0 planes on one blocking thread, and put
//! onto the H.264 encoder by [`logsql_media::video::VideoWriter`] on another:
//! one frame per image at its own time, or with `OPTIONS (fps 'N')` a frame
//! every 1/N s.
//!
//! An image that does not decode fails the query, or under
//! `logsql.on_error = 'warn'` is left out with a warning; a null image, or
//! a second image at the same time, is left out. The file is written to a
//! temporary file and appears under its name only when complete
//! ([`super::target`]). `COPY` reports the number of frames written.

use std::collections::HashMap;
use std::fmt;
use std::io::BufWriter;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
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
use datafusion::physical_expr::{LexRequirement, PhysicalSortRequirement};
use datafusion::physical_plan::expressions::col as column;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};
use futures::StreamExt;
use logsql_media::images::PixelFormat;
use logsql_media::images::arrow::{ImageColumn, image_type};
use logsql_media::video::{VideoOptions, VideoWriter, Yuv420};

use super::mcap::nanos;
use super::target::{Target, io_err};
use crate::datasource::source::LogSource;
use crate::scanner::options::{LogsqlOptions, OnError};
use crate::scanner::schema::col;

/// The name of the format (`STORED AS MP4`, the `.mp4` extension).
pub const MP4: &str = "mp4";

/// The `COPY ... OPTIONS (...)` keys of MP4 output (without DataFusion's
/// `format.` prefix).
pub const OPTION_KEYS: &[&str] = &["fps", "quality", "keyframe_interval"];

/// Batches buffered between the query and the encoding thread.
const QUEUE: usize = 2;

/// How the video is written (`COPY ... OPTIONS (...)`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VideoWriteOptions {
    /// Resample to this many frames per second; `None`: one frame per image.
    pub fps: Option<f64>,
    /// The encoder's quality and key frame interval.
    pub video: VideoOptions,
}

impl VideoWriteOptions {
    /// The options of `COPY ... OPTIONS (...)` (keys with or without the
    /// `format.` prefix); unknown keys are refused with the known ones listed.
    pub fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            let bare = key.strip_prefix("format.").unwrap_or(key);
            let number = |what: &str| {
                DataFusionError::Configuration(format!("MP4 {bare} '{value}' is not {what}"))
            };
            match bare {
                "fps" => {
                    let fps: f64 = value.trim().parse().map_err(|_| number("a number"))?;
                    if !(fps.is_finite() && fps > 0.0 && fps <= logsql_media::video::MAX_FPS) {
                        return Err(number("a frame rate above 0, at most 1000"));
                    }
                    out.fps = Some(fps);
                }
                "quality" => {
                    out.video.quality = value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|q| (1..=100).contains(q))
                        .ok_or_else(|| number("a quality from 1 to 100"))?;
                }
                "keyframe_interval" => {
                    out.video.keyframe_interval = value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| number("a number of frames above 0"))?;
                }
                _ => {
                    return Err(DataFusionError::Configuration(format!(
                        "unknown option '{key}' for MP4 output (known: {})",
                        OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }
}

/// The MP4 file format: written by `COPY`, never read.
#[derive(Debug, Clone, Default)]
pub struct VideoFileFormat {
    options: VideoWriteOptions,
}

fn not_read() -> DataFusionError {
    DataFusionError::NotImplemented(
        "logsql writes MP4 video (COPY ... TO 'clip.mp4') but does not read it".into(),
    )
}

#[async_trait]
impl FileFormat for VideoFileFormat {
    fn get_ext(&self) -> String {
        format!(".{MP4}")
    }

    fn get_ext_with_compression(&self, _c: &FileCompressionType) -> Result<String> {
        Ok(self.get_ext())
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
        Err(not_read())
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        _object: &ObjectMeta,
    ) -> Result<Statistics> {
        Ok(Statistics::new_unknown(&table_schema))
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        _conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Err(not_read())
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        _order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns = Columns::of(conf.output_schema())?;
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

    /// Never scanned (`create_physical_plan` refuses); the source exists
    /// because the trait asks for one.
    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(LogSource::new(None, table_schema))
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
        Ok(Arc::new(VideoFileFormat {
            options: VideoWriteOptions::from_map(options)?,
        }))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(VideoFileFormat::default())
    }
}

/// Where the sink finds its columns.
#[derive(Debug, Clone, Copy)]
struct Columns {
    log_time: usize,
    image: usize,
    /// The `file` column, named in errors when present.
    file: Option<usize>,
}

impl Columns {
    fn of(schema: &SchemaRef) -> Result<Self> {
        let have = || {
            schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let log_time = match schema.index_of(col::LOG_TIME) {
            Ok(i) if matches!(schema.field(i).data_type(), DataType::Timestamp(..)) => i,
            _ => {
                return Err(DataFusionError::Plan(format!(
                    "writing MP4 needs a log_time timestamp column and an image column (read_images' image); the query has: {}",
                    have()
                )));
            }
        };
        let images: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| schema.field(i).data_type() == &image_type())
            .collect();
        let image = match images.as_slice() {
            [i] => *i,
            [] => {
                return Err(DataFusionError::Plan(format!(
                    "writing MP4 needs an image column (the image value of read_images); the query has: {}",
                    have()
                )));
            }
            _ => {
                return Err(DataFusionError::Plan(format!(
                    "writing MP4 takes one image column; the query has {}: select one",
                    images.len()
                )));
            }
        };
        let file = schema
            .index_of(col::FILE)
            .ok()
            .filter(|&i| schema.field(i).data_type() == &DataType::Utf8);
        Ok(Self {
            log_time,
            image,
            file,
        })
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
        mut data: SendableRecordBatchStream,
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
        let (tx, mut rx) = tokio::sync::mpsc::channel::<RecordBatch>(QUEUE);
        let (frames_tx, frames_rx) = std::sync::mpsc::sync_channel::<Frame>(FRAME_QUEUE);
        let name = target.name();
        let mut decoder = Decoder {
            columns: self.columns,
            name: name.clone(),
            warn,
            last: None,
            left_out: 0,
            frames: frames_tx,
        };
        let mut encoder = Encoder {
            writer: VideoWriter::new(BufWriter::new(file), self.options.video, self.options.fps)
                .map_err(|e| DataFusionError::Configuration(e.to_string()))?,
            name,
            warn,
            left_out: 0,
        };
        // Two blocking threads, so that decoding the next images overlaps
        // encoding the frame before.
        let decoding = tokio::task::spawn_blocking(move || -> Result<u64> {
            while let Some(batch) = rx.blocking_recv() {
                if !decoder.write_batch(&batch)? {
                    break;
                }
            }
            Ok(decoder.left_out)
        });
        let encoding = tokio::task::spawn_blocking(move || -> Result<u64> {
            for frame in frames_rx {
                encoder.add(frame)?;
            }
            encoder.finish()
        });
        while let Some(batch) = data.next().await {
            if tx.send(batch?).await.is_err() {
                // The decoder or the encoder failed: the error is returned below.
                break;
            }
        }
        drop(tx);
        let joined = |e| DataFusionError::External(Box::new(e));
        let left_out = decoding.await.map_err(joined);
        // The encoder's error comes first: a decoder stops when it goes.
        let frames = encoding.await.map_err(joined)??;
        let left_out = left_out??;
        if left_out > 0 {
            log::info!(
                "writing MP4 {}: {left_out} images left out (null, undecodable, or at the time of the image before)",
                target.name()
            );
        }
        target.publish(out).await?;
        Ok(frames)
    }
}

/// Decoded frames waiting for the encoder (640x480: 0.46 MB each).
const FRAME_QUEUE: usize = 4;

/// A decoded image on its way to the encoder, with what errors call it.
struct Frame {
    time: i64,
    frame: Yuv420,
    what: String,
}

/// The decoding side of the sink (on a blocking thread): images to frames
/// of 4:2:0 planes, in order, for the [`Encoder`].
struct Decoder {
    columns: Columns,
    /// The target, for messages.
    name: String,
    /// `logsql.on_error = 'warn'`: an image that does not decode is left out.
    warn: bool,
    /// The latest image's time.
    last: Option<i64>,
    /// Images left out (null, undecodable, or at the time of the one before).
    left_out: u64,
    frames: std::sync::mpsc::SyncSender<Frame>,
}

impl Decoder {
    /// Decodes the batch's images and passes them on; `false` once the
    /// encoder is gone (it failed: its error is the query's).
    fn write_batch(&mut self, batch: &RecordBatch) -> Result<bool> {
        let times = nanos(batch.column(self.columns.log_time))?;
        let times = times.as_primitive::<Int64Type>();
        let images = ImageColumn::new(batch.column(self.columns.image).as_ref())
            .map_err(|e| DataFusionError::Execution(format!("writing MP4 {}: {e}", self.name)))?;
        let files = self
            .columns
            .file
            .map(|i| batch.column(i).as_string::<i32>());
        for i in 0..batch.num_rows() {
            let (Some(image), false) = (images.get(i), times.is_null(i)) else {
                self.left_out += 1;
                continue;
            };
            let t = times.value(i);
            if self.last.is_some_and(|last| t <= last) {
                self.left_out += 1;
                continue;
            }
            let source = files
                .filter(|f| f.is_valid(i))
                .map_or(String::new(), |f| format!(" of {}", f.value(i)));
            let what = format!(
                "writing MP4 {}: the {} image{source} at log_time {t}",
                self.name, image.encoding
            );
            let frame = image
                .pixels(PixelFormat::Rgb8)
                .and_then(|p| Yuv420::from_rgb8(p.width, p.height, &p.data));
            match frame {
                Ok(frame) => {
                    self.last = Some(t);
                    let frame = Frame {
                        time: t,
                        frame,
                        what,
                    };
                    if self.frames.send(frame).is_err() {
                        return Ok(false);
                    }
                }
                Err(e) => {
                    self.left_out += 1;
                    refuse_or_warn(self.warn, &what, &e)?;
                }
            }
        }
        Ok(true)
    }
}

/// An image that cannot go into the video: the query's error, or under the
/// warn policy a warning.
fn refuse_or_warn(warn: bool, what: &str, e: &dyn std::fmt::Display) -> Result<()> {
    let message = format!("{what}: {e}");
    if !warn {
        return Err(DataFusionError::Execution(format!(
            "{message} (SET logsql.on_error = 'warn' to leave such images out)"
        )));
    }
    log::warn!("{message}");
    Ok(())
}

/// The encoding side of the sink (on a blocking thread).
struct Encoder {
    writer: VideoWriter<BufWriter<std::fs::File>>,
    /// The target, for messages.
    name: String,
    /// `logsql.on_error = 'warn'`: a frame the video cannot take is left out.
    warn: bool,
    /// Frames left out (of another size than the first, ...).
    left_out: u64,
}

impl Encoder {
    fn add(&mut self, frame: Frame) -> Result<()> {
        if let Err(e) = self.writer.add(frame.time, frame.frame) {
            self.left_out += 1;
            refuse_or_warn(self.warn, &frame.what, &e)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<u64> {
        if self.left_out > 0 {
            log::info!(
                "writing MP4 {}: {} frames left out",
                self.name,
                self.left_out
            );
        }
        let name = self.name;
        let (mut out, frames) = self
            .writer
            .finish()
            .map_err(|e| DataFusionError::Execution(format!("writing MP4 {name}: {e}")))?;
        std::io::Write::flush(&mut out).map_err(|e| io_err(std::path::Path::new(&name), e))?;
        Ok(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> HashMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn options_parse_and_refuse_what_they_do_not_know() {
        let o = VideoWriteOptions::from_map(&map(&[
            ("format.fps", "12.5"),
            ("quality", "90"),
            ("keyframe_interval", "30"),
        ]))
        .unwrap();
        assert_eq!(o.fps, Some(12.5));
        assert_eq!((o.video.quality, o.video.keyframe_interval), (90, 30));
        let err = |kv: &[(&str, &str)]| {
            VideoWriteOptions::from_map(&map(kv))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[("fps", "0")]).contains("MP4 fps '0' is not a frame rate"));
        assert!(err(&[("quality", "101")]).contains("quality from 1 to 100"));
        assert!(
            err(&[("format.codec", "h265")])
                .contains("unknown option 'format.codec' for MP4 output (known: fps, quality")
        );
    }
}
