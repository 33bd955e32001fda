//! [`DatasetWriter`]: query rows in, a LeRobot v3 dataset out (in a
//! directory the caller publishes when [`DatasetWriter::finish`] succeeds).
//!
//! Rows come one per frame, grouped by episode, in time order. An episode's
//! leading rows where a feature is still NULL are dropped (the episode starts
//! when every feature is present); after that a NULL feature, a vector whose
//! length changes, a frame whose size changes or a row off the `1/fps` grid is
//! a problem of the episode, named with the feature, the episode, its
//! recording (`file`) and the time: it fails the export, or with
//! `skip_bad_episodes` the episode is left out and listed. An episode's data
//! rows and each camera's encoded frames (one H.264 encoder per camera and
//! episode) wait in [`staging`](super::staging) files until it ends; then
//! they are appended to `data/chunk-XXX/file-XXX.parquet` and
//! `videos/<key>/chunk-XXX/file-XXX.mp4` (several episodes a file, each at its
//! `from_timestamp`); a file is closed at the first episode end past its size
//! limit. Memory holds one batch, the encoders' state and the current
//! episode's numeric values (for its quantiles).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, FixedSizeListBuilder, Float32Builder, Int64Array,
    RecordBatch, StringBuilder, StructBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Field, Fields, Float64Type, Int64Type, Schema, SchemaRef, TimeUnit,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;

use super::columns::{
    ColumnPlan, FeatureKind, NumericColumn, NumericShape, TimeColumn, numeric_values, row_values,
};
use super::meta::{self, EpisodeMeta, FeatureInfo, VideoSpan};
use super::options::{ImageStorage, LeRobotOptions};
use super::staging::{DataStage, VideoStage};
use super::stats::{ImageAccumulator, NumericAccumulator, Stats};
use logsql_media::images::arrow::ImageColumn;
use logsql_media::images::codec::encode_png;
use logsql_media::images::{Image, PixelFormat, Pixels};
use logsql_media::video::{Mp4Encoder, VideoOptions};

/// How far a row's time may be from its frame's (`frame / fps`): LeRobot's
/// own tolerance.
const TOLERANCE_S: f64 = 1e-4;

/// Data rows buffered before they are written (fewer when frames are
/// stored as PNG in the data files).
const ROWS_PER_WRITE: usize = 1024;
const IMAGE_ROWS_PER_WRITE: usize = 64;

/// A feature's state: its shape (set by the first kept row) and statistics.
struct Feature {
    name: String,
    kind: FeatureKind,
    index: usize,
    /// Vector length (numeric) or (height, width) (camera).
    dims: Option<usize>,
    size: Option<(u32, u32)>,
    numeric: Option<NumericAccumulator>,
    image: ImageAccumulator,
    /// Statistics of each finished episode.
    episodes: Vec<Stats>,
    /// Camera: the video being written.
    video: Option<VideoFile>,
    /// Camera: the current episode's encoded frames.
    stage: Option<VideoStage>,
    /// Camera: (chunk, file) of the next video file.
    next_video: (u64, u64),
    /// Camera: the last image decoded, and its pixels.
    last_decoded: Option<Decoded>,
}

/// An image's pixels, and for a compressed image its bytes. A camera slower
/// than the dataset's frame rate gives several frames in a row the same
/// image (the latest at each frame); a compressed one is decoded once. (A
/// raw image's bytes are not kept: its decoding is a copy.)
struct Decoded {
    encoding: String,
    source: Option<Vec<u8>>,
    /// Shared with the camera's encoder thread.
    pixels: Arc<Pixels>,
}

impl Decoded {
    /// Whether `image` is the compressed image these pixels were decoded from.
    fn holds(&self, image: &Image<'_>) -> bool {
        self.encoding == image.encoding && self.source.as_deref() == Some(image.data)
    }
}

/// One MP4 file being written.
struct VideoFile {
    encoder: Mp4Encoder<BufWriter<File>>,
    file: File,
    chunk: u64,
    index: u64,
    /// Frames in the file before the current episode.
    frames_before: u64,
}

/// The data file being written.
struct DataFile {
    writer: ArrowWriter<File>,
    chunk: u64,
    index: u64,
}

/// Data rows not yet written.
struct Pending {
    numeric: Vec<Vec<f32>>,
    images: Vec<Vec<Option<Vec<u8>>>>,
    timestamp: Vec<f32>,
    frame_index: Vec<i64>,
    episode_index: Vec<i64>,
    index: Vec<i64>,
    task_index: Vec<i64>,
}

/// The episode being written.
struct Episode {
    /// The query's episode_index.
    source: i64,
    /// The dataset's (consecutive from 0).
    index: i64,
    file: Option<String>,
    frames: u64,
    /// Seconds of the first kept row (for `log_time`: nanoseconds as f64
    /// seconds are exact enough within an episode, see `row_seconds`).
    start: Option<RowTime>,
    dropped: u64,
    /// Leading rows: which features had a value in one of them, and the
    /// times of the first and last (for the error of an episode where no row
    /// has every feature).
    seen: Vec<bool>,
    span: Option<(RowTime, RowTime)>,
    /// The time of the episode's latest row (rows must not go back).
    last: Option<RowTime>,
    tasks: Vec<String>,
    /// Tasks known before the episode (a skipped episode's new ones are
    /// forgotten).
    tasks_before: usize,
    /// Each feature's (vector length, frame size) before the episode (a
    /// skipped episode's first values do not set them).
    shapes_before: Vec<Shape>,
}

/// A feature's vector length and camera frame size, once known.
type Shape = (Option<usize>, Option<(u32, u32)>);

/// An episode left out of the dataset (`skip_bad_episodes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedEpisode {
    /// The query's `episode_index`.
    pub episode: i64,
    /// Its recording, when the query has a `file` column.
    pub file: Option<String>,
    /// Why: the error the episode would have failed the export with.
    pub reason: String,
}

/// What [`DatasetWriter::finish`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Frames in the dataset.
    pub frames: u64,
    /// Episodes in the dataset.
    pub episodes: usize,
    /// Episodes left out, in the order they came.
    pub skipped: Vec<SkippedEpisode>,
}

/// The outcome of a step of an episode: `Err` fails the export; `Ok(Err)`
/// is a problem of the episode (its message), which skips it under
/// `skip_bad_episodes` and fails the export otherwise.
type Step = Result<std::result::Result<(), String>>;

/// A row's time as given.
#[derive(Debug, Clone, Copy)]
enum RowTime {
    Seconds(f64),
    Nanos(i64),
}

impl RowTime {
    fn since(self, start: RowTime) -> f64 {
        match (self, start) {
            (RowTime::Seconds(a), RowTime::Seconds(b)) => a - b,
            (RowTime::Nanos(a), RowTime::Nanos(b)) => (a - b) as f64 / 1e9,
            _ => f64::NAN,
        }
    }

    fn describe(self) -> String {
        match self {
            RowTime::Seconds(s) => format!("timestamp {s} s"),
            RowTime::Nanos(ns) => format!("log_time {ns} ns"),
        }
    }
}

/// Writes a LeRobot dataset under `root`; see the module documentation.
pub struct DatasetWriter {
    root: PathBuf,
    options: LeRobotOptions,
    fps: u32,
    plan: ColumnPlan,
    features: Vec<Feature>,
    /// Statistics of the five columns LeRobot adds (timestamp, frame_index,
    /// episode_index, index, task_index).
    defaults: Vec<(NumericAccumulator, Vec<Stats>)>,
    data: Option<DataFile>,
    next_data: (u64, u64),
    pending: Option<Pending>,
    /// The current episode's data rows.
    data_stage: Option<DataStage>,
    episode: Option<Episode>,
    /// The query's episode being skipped (its remaining rows are ignored).
    skipping: Option<i64>,
    skipped: Vec<SkippedEpisode>,
    tasks: Vec<String>,
    task_ids: HashMap<String, i64>,
    episodes: Vec<EpisodeMeta>,
    total_frames: u64,
    last_source_episode: Option<i64>,
}

fn exec(m: String) -> DataFusionError {
    DataFusionError::Execution(m)
}

fn io(path: &Path, e: impl std::fmt::Display) -> DataFusionError {
    exec(format!("writing {}: {e}", path.display()))
}

/// LeRobot's next (chunk, file): files count up to `chunks_size` a chunk.
fn next_file((chunk, file): (u64, u64), chunks_size: u64) -> (u64, u64) {
    if file + 1 >= chunks_size {
        (chunk + 1, 0)
    } else {
        (chunk, file + 1)
    }
}

/// `chunk-XXX/file-XXX`.
pub fn chunk_file(chunk: u64, file: u64) -> String {
    format!("chunk-{chunk:03}/file-{file:03}")
}

impl DatasetWriter {
    /// A writer of rows of `schema` into the (empty) directory `root`.
    pub fn new(root: PathBuf, schema: &Schema, options: LeRobotOptions) -> Result<Self> {
        let plan = ColumnPlan::of(schema)?;
        let fps = options.fps()?;
        if fps.fract() != 0.0 {
            return Err(DataFusionError::Plan(format!(
                "LeRobot datasets have a whole number of frames per second (fps '{fps}')"
            )));
        }
        let features = plan
            .features
            .iter()
            .map(|f| Feature {
                name: f.name.clone(),
                kind: f.kind.clone(),
                index: f.index,
                dims: None,
                size: None,
                numeric: None,
                image: ImageAccumulator::default(),
                episodes: Vec::new(),
                video: None,
                stage: None,
                next_video: (0, 0),
                last_decoded: None,
            })
            .collect();
        let defaults = meta::DEFAULT_FEATURES
            .iter()
            .map(|(name, _)| (NumericAccumulator::new(1, *name == "timestamp"), Vec::new()))
            .collect();
        Ok(Self {
            root,
            options,
            fps: fps as u32,
            plan,
            features,
            defaults,
            data: None,
            next_data: (0, 0),
            pending: None,
            data_stage: None,
            episode: None,
            skipping: None,
            skipped: Vec::new(),
            tasks: Vec::new(),
            task_ids: HashMap::new(),
            episodes: Vec::new(),
            total_frames: 0,
            last_source_episode: None,
        })
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.total_frames + self.episode.as_ref().map_or(0, |e| e.frames)
    }

    /// Episodes finished so far.
    pub fn episodes(&self) -> usize {
        self.episodes.len()
    }

    /// Writes the rows of `batch`.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let episodes = cast(batch.column(self.plan.episode), &DataType::Int64)?;
        let episodes = episodes.as_primitive::<Int64Type>();
        let times: ArrayRef = match self.plan.time {
            TimeColumn::Seconds(i) => cast(batch.column(i), &DataType::Float64)?,
            TimeColumn::LogTime(i) => cast(
                batch.column(i),
                &DataType::Timestamp(TimeUnit::Nanosecond, None),
            )?,
        };
        let tasks = match self.plan.task {
            Some(i) => Some(cast(batch.column(i), &DataType::Utf8)?),
            None => None,
        };
        let files = match self.plan.file {
            Some(i) => Some(cast(batch.column(i), &DataType::Utf8)?),
            None => None,
        };
        let mut numeric: Vec<Option<NumericColumn>> = Vec::new();
        let mut images: Vec<Option<ImageColumn<'_>>> = Vec::new();
        for f in &self.features {
            let column = batch.column(f.index);
            match &f.kind {
                FeatureKind::Numeric(shape) => {
                    numeric.push(Some(numeric_values(column, shape)?));
                    images.push(None);
                }
                FeatureKind::Camera => {
                    numeric.push(None);
                    images.push(Some(ImageColumn::new(column.as_ref()).map_err(|e| {
                        exec(format!("LeRobot dataset: column \"{}\": {e}", f.name))
                    })?));
                }
            }
        }
        for row in 0..batch.num_rows() {
            if episodes.is_null(row) {
                return Err(exec(
                    "LeRobot dataset: a row has a NULL episode_index".into(),
                ));
            }
            let source = episodes.value(row);
            if self.skipping == Some(source) {
                continue;
            }
            let file = files.as_ref().and_then(|f| {
                let f = f.as_string::<i32>();
                f.is_valid(row).then(|| f.value(row).to_string())
            });
            if self.episode.as_ref().is_none_or(|e| e.source != source) {
                self.start_episode(source, file.clone())?;
            }
            let step = self.row(row, &times, tasks.as_ref(), &numeric, &images)?;
            if let Err(reason) = step {
                self.reject(reason)?;
            }
        }
        Ok(())
    }

    /// Adds row `row` of a batch to the current episode.
    fn row(
        &mut self,
        row: usize,
        times: &ArrayRef,
        tasks: Option<&ArrayRef>,
        numeric: &[Option<NumericColumn>],
        images: &[Option<ImageColumn<'_>>],
    ) -> Step {
        let episode = self.episode.as_mut().expect("started by the caller");
        let source = episode.source;
        let time = match self.plan.time {
            TimeColumn::Seconds(_) => {
                let t = times.as_primitive::<Float64Type>();
                t.is_valid(row).then(|| RowTime::Seconds(t.value(row)))
            }
            TimeColumn::LogTime(_) => {
                let t =
                    times.as_primitive::<datafusion::arrow::datatypes::TimestampNanosecondType>();
                t.is_valid(row).then(|| RowTime::Nanos(t.value(row)))
            }
        };
        let Some(time) = time else {
            return Ok(Err(format!(
                "episode {source}{}: a row has a NULL time",
                where_(&episode.file)
            )));
        };
        if let Some(last) = episode.last.replace(time)
            && time.since(last) < 0.0
        {
            return Err(exec(format!(
                "LeRobot dataset: episode {source}{}: the row at {} comes after the row at {}: rows must come in time order within an episode (add ORDER BY episode_index, log_time, and leave out the option presorted)",
                where_(&episode.file),
                time.describe(),
                last.describe()
            )));
        }
        // Every feature present? Leading rows without one are dropped.
        let missing =
            self.features
                .iter()
                .enumerate()
                .find(|(k, _)| match (&numeric[*k], &images[*k]) {
                    (Some(n), _) => row_values(n, row).is_none(),
                    (_, Some(i)) => i.get(row).is_none(),
                    _ => true,
                });
        if let Some((_, f)) = missing {
            if episode.frames == 0 {
                episode.dropped += 1;
                for (k, seen) in episode.seen.iter_mut().enumerate() {
                    *seen |= match (&numeric[k], &images[k]) {
                        (Some(n), _) => row_values(n, row).is_some(),
                        (_, Some(i)) => i.get(row).is_some(),
                        _ => false,
                    };
                }
                let first = episode.span.map_or(time, |(first, _)| first);
                episode.span = Some((first, time));
                return Ok(Ok(()));
            }
            return Ok(Err(format!(
                "episode {source}{}: feature \"{}\" is NULL at {} after the episode started",
                where_(&episode.file),
                f.name,
                time.describe()
            )));
        }
        let start = *episode.start.get_or_insert(time);
        let frame = episode.frames;
        let seconds = time.since(start);
        let expected = frame as f64 / f64::from(self.fps);
        if (seconds - expected).abs() > TOLERANCE_S {
            return Ok(Err(format!(
                "episode {source}{}: the row at {} is {seconds:.6} s into the episode, but frame {frame} is at {expected:.6} s: rows must be one per frame, 1/{} s apart (time_grid(path, {}) gives such rows; add ORDER BY episode_index, log_time if they are out of order)",
                where_(&episode.file),
                time.describe(),
                self.fps,
                self.fps
            )));
        }
        let task = tasks
            .and_then(|t| {
                let t = t.as_string::<i32>();
                t.is_valid(row).then(|| t.value(row).to_string())
            })
            .unwrap_or_default();
        self.push_frame(row, frame, time, &task, numeric, images)
    }

    /// The current episode has a problem (`reason`): under
    /// `skip_bad_episodes` it is dropped (its staged rows and frames, its
    /// statistics, the tasks and shapes it introduced) and listed, else the
    /// export fails.
    fn reject(&mut self, reason: String) -> Result<()> {
        if !self.options.skip_bad_episodes {
            return Err(exec(format!("LeRobot dataset: {reason}")));
        }
        let Some(episode) = self.episode.take() else {
            return Err(exec(format!("LeRobot dataset: {reason}")));
        };
        log::warn!("LeRobot dataset: skipping {reason}");
        self.pending = None;
        if let Some(stage) = self.data_stage.take() {
            stage.discard();
        }
        for (f, (dims, size)) in self.features.iter_mut().zip(&episode.shapes_before) {
            if let Some(stage) = f.stage.take() {
                stage.discard();
            }
            if let Some(n) = &mut f.numeric {
                n.finish();
            }
            if dims.is_none() {
                f.numeric = None;
            }
            f.image.finish();
            f.dims = *dims;
            f.size = *size;
        }
        for (acc, _) in &mut self.defaults {
            acc.finish();
        }
        for task in self.tasks.drain(episode.tasks_before..) {
            self.task_ids.remove(&task);
        }
        self.skipping = Some(episode.source);
        self.skipped.push(SkippedEpisode {
            episode: episode.source,
            file: episode.file,
            reason,
        });
        Ok(())
    }

    fn start_episode(&mut self, source: i64, file: Option<String>) -> Result<()> {
        if let Some(last) = self.last_source_episode
            && source < last
        {
            return Err(exec(format!(
                "LeRobot dataset: episode {source} comes after episode {last}: rows must come grouped by episode in order (add ORDER BY episode_index, log_time, and leave out the option presorted)"
            )));
        }
        self.finish_episode()?;
        self.skipping = None;
        self.last_source_episode = Some(source);
        self.episode = Some(Episode {
            source,
            index: self.episodes.len() as i64,
            file,
            frames: 0,
            start: None,
            dropped: 0,
            seen: vec![false; self.features.len()],
            span: None,
            last: None,
            tasks: Vec::new(),
            tasks_before: self.tasks.len(),
            shapes_before: self.features.iter().map(|f| (f.dims, f.size)).collect(),
        });
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn push_frame(
        &mut self,
        row: usize,
        frame: u64,
        time: RowTime,
        task: &str,
        numeric: &[Option<NumericColumn>],
        images: &[Option<ImageColumn<'_>>],
    ) -> Step {
        let episode = self.episode.as_mut().expect("an episode is open");
        let task_index = match self.task_ids.get(task) {
            Some(i) => *i,
            None => {
                let i = self.tasks.len() as i64;
                self.tasks.push(task.to_string());
                self.task_ids.insert(task.to_string(), i);
                i
            }
        };
        if !episode.tasks.iter().any(|t| t == task) {
            episode.tasks.push(task.to_string());
        }
        let n_features = self.features.len();
        let pending = self.pending.get_or_insert_with(|| Pending {
            numeric: vec![Vec::new(); n_features],
            images: vec![Vec::new(); n_features],
            timestamp: Vec::new(),
            frame_index: Vec::new(),
            episode_index: Vec::new(),
            index: Vec::new(),
            task_index: Vec::new(),
        });
        let timestamp = frame as f32 / self.fps as f32;
        let global = self.total_frames + frame;
        for (k, f) in self.features.iter_mut().enumerate() {
            if let Some(col) = &numeric[k] {
                let values = row_values(col, row).expect("checked present");
                let dims = *f.dims.get_or_insert(values.len());
                if values.len() != dims {
                    return Ok(Err(format!(
                        "episode {}{}: feature \"{}\" has {} values at {}, but {} before: a feature's length cannot change",
                        episode.source,
                        where_(&episode.file),
                        f.name,
                        values.len(),
                        time.describe(),
                        dims
                    )));
                }
                f.numeric
                    .get_or_insert_with(|| NumericAccumulator::new(dims, true))
                    .push(
                        &values
                            .iter()
                            .map(|v| f64::from(*v as f32))
                            .collect::<Vec<_>>(),
                    );
                pending.numeric[k].extend(values.iter().map(|v| *v as f32));
            } else if let Some(col) = &images[k] {
                let image = col.get(row).expect("checked present");
                if !f.last_decoded.as_ref().is_some_and(|l| l.holds(&image)) {
                    let pixels = match image.pixels(PixelFormat::Rgb8) {
                        Ok(p) => p,
                        Err(e) => {
                            return Ok(Err(format!(
                                "episode {}{}: camera \"{}\" at {}: {e}",
                                episode.source,
                                where_(&episode.file),
                                f.name,
                                time.describe()
                            )));
                        }
                    };
                    let compressed = matches!(image.encoding, "jpeg" | "png");
                    f.last_decoded = Some(Decoded {
                        encoding: image.encoding.to_string(),
                        source: compressed.then(|| image.data.to_vec()),
                        pixels: Arc::new(pixels),
                    });
                }
                let pixels = &f.last_decoded.as_ref().expect("just decoded").pixels;
                let size = *f.size.get_or_insert((pixels.width, pixels.height));
                if size != (pixels.width, pixels.height) {
                    return Ok(Err(format!(
                        "episode {}{}: camera \"{}\" has a {}x{} frame at {}, but {}x{} before: a camera's frame size cannot change",
                        episode.source,
                        where_(&episode.file),
                        f.name,
                        pixels.width,
                        pixels.height,
                        time.describe(),
                        size.0,
                        size.1
                    )));
                }
                f.image.push_rgb8(&pixels.data, pixels.width, pixels.height);
                match self.options.images {
                    ImageStorage::Video => {
                        let stage = match &mut f.stage {
                            Some(v) => v,
                            None => {
                                let path = self.root.join(format!(".episode-camera-{k}.h264"));
                                let options = VideoOptions {
                                    quality: self.options.quality,
                                    ..VideoOptions::default()
                                };
                                f.stage.insert(
                                    VideoStage::create(path, size.0, size.1, options).map_err(
                                        |e| {
                                            exec(format!(
                                                "LeRobot dataset: camera \"{}\": {e}",
                                                f.name
                                            ))
                                        },
                                    )?,
                                )
                            }
                        };
                        stage.push(pixels).map_err(|e| {
                            exec(format!("LeRobot dataset: camera \"{}\": {e}", f.name))
                        })?;
                    }
                    ImageStorage::Parquet => {
                        let png = encode_png(pixels).map_err(|e| {
                            exec(format!("LeRobot dataset: camera \"{}\": {e}", f.name))
                        })?;
                        pending.images[k].push(Some(png));
                    }
                }
            }
        }
        pending.timestamp.push(timestamp);
        pending.frame_index.push(frame as i64);
        pending.episode_index.push(episode.index);
        pending.index.push(global as i64);
        pending.task_index.push(task_index);
        let values = [
            f64::from(timestamp),
            frame as f64,
            episode.index as f64,
            global as f64,
            task_index as f64,
        ];
        for ((acc, _), v) in self.defaults.iter_mut().zip(values) {
            acc.push(&[v]);
        }
        episode.frames += 1;
        let limit = if self.options.images == ImageStorage::Parquet
            && self.features.iter().any(|f| f.kind == FeatureKind::Camera)
        {
            IMAGE_ROWS_PER_WRITE
        } else {
            ROWS_PER_WRITE
        };
        if pending.timestamp.len() >= limit {
            self.flush()?;
        }
        Ok(Ok(()))
    }

    /// The data files' schema (known once every feature's shape is).
    fn data_schema(&self) -> SchemaRef {
        let mut fields: Vec<Field> = self
            .features
            .iter()
            .map(|f| match &f.kind {
                FeatureKind::Numeric(NumericShape::Scalar) => {
                    Field::new(&f.name, DataType::Float32, true)
                }
                FeatureKind::Numeric(_) => Field::new(
                    &f.name,
                    DataType::FixedSizeList(
                        Arc::new(Field::new("element", DataType::Float32, true)),
                        f.dims.unwrap_or(0) as i32,
                    ),
                    true,
                ),
                FeatureKind::Camera => Field::new(&f.name, DataType::Struct(png_fields()), true),
            })
            .filter(|field| {
                self.options.images == ImageStorage::Parquet
                    || !matches!(field.data_type(), DataType::Struct(_))
            })
            .collect();
        fields.push(Field::new("timestamp", DataType::Float32, true));
        for name in ["frame_index", "episode_index", "index", "task_index"] {
            fields.push(Field::new(name, DataType::Int64, true));
        }
        Arc::new(Schema::new(fields))
    }

    /// Writes the pending rows to the data file.
    fn flush(&mut self) -> Result<()> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        if p.timestamp.is_empty() {
            return Ok(());
        }
        let schema = self.data_schema();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (k, f) in self.features.iter().enumerate() {
            match &f.kind {
                FeatureKind::Numeric(NumericShape::Scalar) => {
                    columns.push(Arc::new(datafusion::arrow::array::Float32Array::from(
                        p.numeric[k].clone(),
                    )));
                }
                FeatureKind::Numeric(_) => {
                    let dims = f.dims.unwrap_or(0);
                    let mut b = FixedSizeListBuilder::new(Float32Builder::new(), dims as i32)
                        .with_field(Arc::new(Field::new("element", DataType::Float32, true)));
                    for chunk in p.numeric[k].chunks(dims.max(1)) {
                        b.values().append_slice(chunk);
                        b.append(true);
                    }
                    columns.push(Arc::new(b.finish()));
                }
                FeatureKind::Camera if self.options.images == ImageStorage::Parquet => {
                    let mut b = StructBuilder::new(
                        png_fields(),
                        vec![
                            Box::new(BinaryBuilder::new()),
                            Box::new(StringBuilder::new()),
                        ],
                    );
                    for png in &p.images[k] {
                        b.field_builder::<BinaryBuilder>(0)
                            .expect("bytes")
                            .append_option(png.as_deref());
                        b.field_builder::<StringBuilder>(1)
                            .expect("path")
                            .append_null();
                        b.append(true);
                    }
                    columns.push(Arc::new(b.finish()));
                }
                FeatureKind::Camera => {}
            }
        }
        columns.push(Arc::new(datafusion::arrow::array::Float32Array::from(
            p.timestamp,
        )));
        for v in [p.frame_index, p.episode_index, p.index, p.task_index] {
            columns.push(Arc::new(Int64Array::from(v)));
        }
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns)?;
        let stage = match &mut self.data_stage {
            Some(s) => s,
            None => self.data_stage.insert(DataStage::create(
                self.root.join(".episode-data.arrows"),
                &schema,
            )?),
        };
        stage.write(&batch)
    }

    /// Appends a finished episode's staged rows to the data file.
    fn commit_data(&mut self) -> Result<()> {
        let Some(stage) = self.data_stage.take() else {
            return Ok(());
        };
        let schema = self.data_schema();
        let data = match &mut self.data {
            Some(d) => d,
            None => {
                let (chunk, index) = self.next_data;
                let path = self
                    .root
                    .join(format!("data/{}.parquet", chunk_file(chunk, index)));
                let writer = parquet_writer(&path, schema)?;
                self.data.insert(DataFile {
                    writer,
                    chunk,
                    index,
                })
            }
        };
        stage.drain(|batch| {
            data.writer
                .write(batch)
                .map_err(|e| exec(format!("writing a LeRobot data file: {e}")))
        })
    }

    /// Ends the current episode: kept (see [`Self::commit_episode`]) or,
    /// when it has a problem, rejected (see [`Self::reject`]).
    fn finish_episode(&mut self) -> Result<()> {
        if let Err(reason) = self.commit_episode()? {
            self.reject(reason)?;
        }
        Ok(())
    }

    /// Keeps the current episode: its staged rows and frames are appended
    /// to the data and video files, its statistics and metadata kept, and
    /// files past their size limit closed.
    fn commit_episode(&mut self) -> Step {
        let Some(episode) = self.episode.as_ref() else {
            return Ok(Ok(()));
        };
        if episode.frames == 0 {
            // The features that never had a value, named as the other
            // errors name them.
            let never: Vec<String> = self
                .features
                .iter()
                .zip(&episode.seen)
                .filter(|(_, seen)| !**seen)
                .map(|(f, _)| match f.kind {
                    FeatureKind::Camera => format!("camera \"{}\"", f.name),
                    FeatureKind::Numeric(_) => format!("feature \"{}\"", f.name),
                })
                .collect();
            let span = episode
                .span
                .map(|(a, b)| format!(" from {} to {}", a.describe(), b.describe()))
                .unwrap_or_default();
            let detail = if never.is_empty() {
                let all: Vec<&str> = self.features.iter().map(|f| f.name.as_str()).collect();
                format!(" ({}){span}", all.join(", "))
            } else {
                format!(": {} never has a value{span}", never.join(", "))
            };
            return Ok(Err(format!(
                "episode {}{}: no row has every feature{detail}: is a topic missing from the recording?",
                episode.source,
                where_(&episode.file),
            )));
        }
        let Some(episode) = self.episode.take() else {
            return Ok(Ok(()));
        };
        if episode.dropped > 0 {
            log::info!(
                "LeRobot dataset: episode {}{}: {} leading rows dropped (before every feature had a first value)",
                episode.source,
                where_(&episode.file),
                episode.dropped
            );
        }
        self.flush()?;
        let (data_chunk, data_file) = match &self.data {
            Some(d) => (d.chunk, d.index),
            None => self.next_data,
        };
        self.commit_data()?;
        let mut stats = Vec::new();
        let mut videos = Vec::new();
        let fps = f64::from(self.fps);
        for f in &mut self.features {
            let s = match &f.kind {
                FeatureKind::Numeric(_) => f
                    .numeric
                    .as_mut()
                    .map(NumericAccumulator::finish)
                    .expect("a kept row set it"),
                FeatureKind::Camera => f.image.finish(),
            };
            f.episodes.push(s.clone());
            stats.push((f.name.clone(), s, f.kind == FeatureKind::Camera));
            if let Some(stage) = f.stage.take() {
                let stage = stage.finish()?;
                // The file's track has one pair of parameter sets: an
                // episode whose encoder chose others starts a new file.
                let other = match (&f.video, stage.parameter_sets()) {
                    (Some(v), Some(p)) => v.encoder.parameter_sets().is_some_and(|q| q != p),
                    _ => false,
                };
                if other {
                    close_video(f, &self.root, self.options.chunks_size)?;
                }
                let size = f.size.expect("a kept frame set it");
                let video = match &mut f.video {
                    Some(v) => v,
                    None => {
                        let (chunk, index) = f.next_video;
                        let path = self.root.join(format!(
                            "videos/{}/{}.mp4",
                            f.name,
                            chunk_file(chunk, index)
                        ));
                        f.video.insert(open_video(
                            &path,
                            size,
                            self.options.quality,
                            chunk,
                            index,
                            &f.name,
                        )?)
                    }
                };
                let before = video.frames_before;
                let name = f.name.clone();
                stage.drain(|k, frame| {
                    let ns = ((before + k) as f64 * 1e9 / fps).round() as i64;
                    video
                        .encoder
                        .push_encoded(ns, frame)
                        .map_err(|e| exec(format!("LeRobot dataset: camera \"{name}\": {e}")))
                })?;
                videos.push(VideoSpan {
                    key: f.name.clone(),
                    chunk: video.chunk,
                    file: video.index,
                    from: before as f64 / fps,
                    to: (before + episode.frames) as f64 / fps,
                });
                video.frames_before += episode.frames;
            }
        }
        for ((acc, list), (name, _)) in self.defaults.iter_mut().zip(meta::DEFAULT_FEATURES) {
            let s = acc.finish();
            list.push(s.clone());
            stats.push((name.to_string(), s, false));
        }
        let data_from = self.total_frames;
        self.total_frames += episode.frames;
        self.episodes.push(EpisodeMeta {
            index: episode.index,
            tasks: episode.tasks,
            length: episode.frames,
            data_chunk,
            data_file,
            from_index: data_from,
            to_index: self.total_frames,
            videos,
            stats,
        });
        // Files past their size close here; the next episode starts new ones.
        let data_limit = self.options.data_files_size_in_mb * 1024 * 1024;
        if let Some(d) = &self.data
            && d.writer.bytes_written() + d.writer.in_progress_size() >= data_limit as usize
        {
            self.close_data()?;
        }
        let video_limit = self.options.video_files_size_in_mb * 1024 * 1024;
        for f in &mut self.features {
            let full = f
                .video
                .as_ref()
                .is_some_and(|v| v.file.metadata().map(|m| m.len()).unwrap_or(0) >= video_limit);
            if full {
                close_video(f, &self.root, self.options.chunks_size)?;
            }
        }
        Ok(Ok(()))
    }

    fn close_data(&mut self) -> Result<()> {
        if let Some(d) = self.data.take() {
            d.writer
                .close()
                .map_err(|e| exec(format!("writing a LeRobot data file: {e}")))?;
            self.next_data = next_file((d.chunk, d.index), self.options.chunks_size);
        }
        Ok(())
    }

    /// Finishes the dataset: the last episode, the data and video files, and
    /// `meta/`. Returns what was written.
    pub fn finish(mut self) -> Result<Written> {
        self.finish_episode()?;
        if self.episodes.is_empty() {
            if !self.skipped.is_empty() {
                let list: Vec<String> = self.skipped.iter().map(|s| s.reason.clone()).collect();
                return Err(exec(format!(
                    "LeRobot dataset: every episode was skipped: {}",
                    list.join("; ")
                )));
            }
            return Err(exec(
                "LeRobot dataset: the query gave no rows (no episode to write)".into(),
            ));
        }
        self.close_data()?;
        for f in &mut self.features {
            close_video(f, &self.root, self.options.chunks_size)?;
        }
        let infos: Vec<FeatureInfo> = self
            .features
            .iter()
            .map(|f| FeatureInfo {
                name: f.name.clone(),
                camera: f.kind == FeatureKind::Camera,
                dims: f.dims.unwrap_or(1),
                size: f.size,
                names: match &f.kind {
                    FeatureKind::Numeric(NumericShape::Struct(n)) => Some(n.clone()),
                    _ => None,
                },
                episodes: f.episodes.clone(),
            })
            .collect();
        let defaults: Vec<Vec<Stats>> = self.defaults.iter().map(|(_, l)| l.clone()).collect();
        meta::write_meta(
            &self.root,
            &self.options,
            self.fps,
            &infos,
            &defaults,
            &self.tasks,
            &self.episodes,
            self.total_frames,
        )?;
        Ok(Written {
            frames: self.total_frames,
            episodes: self.episodes.len(),
            skipped: self.skipped,
        })
    }
}

/// ` (file F)` when the recording is known.
fn where_(file: &Option<String>) -> String {
    file.as_ref().map(|f| format!(" ({f})")).unwrap_or_default()
}

/// The fields of a LeRobot image value in a data file (Hugging Face
/// `datasets.Image`).
pub fn png_fields() -> Fields {
    Fields::from(vec![
        Field::new("bytes", DataType::Binary, true),
        Field::new("path", DataType::Utf8, true),
    ])
}

fn create(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    File::create(path).map_err(|e| io(path, e))
}

/// A Parquet writer (snappy, as LeRobot writes) of `schema` at `path`.
pub fn parquet_writer(path: &Path, schema: SchemaRef) -> Result<ArrowWriter<File>> {
    let file = create(path)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| io(path, e))
}

fn open_video(
    path: &Path,
    (width, height): (u32, u32),
    quality: u8,
    chunk: u64,
    index: u64,
    name: &str,
) -> Result<VideoFile> {
    let file = create(path)?;
    let handle = file.try_clone().map_err(|e| io(path, e))?;
    let options = VideoOptions {
        quality,
        ..VideoOptions::default()
    };
    let encoder = Mp4Encoder::new(BufWriter::new(file), width, height, options)
        .map_err(|e| exec(format!("LeRobot dataset: camera \"{name}\": {e}")))?;
    Ok(VideoFile {
        encoder,
        file: handle,
        chunk,
        index,
        frames_before: 0,
    })
}

fn close_video(f: &mut Feature, root: &Path, chunks_size: u64) -> Result<()> {
    if let Some(v) = f.video.take() {
        let path = root.join(format!(
            "videos/{}/{}.mp4",
            f.name,
            chunk_file(v.chunk, v.index)
        ));
        let mut out = v
            .encoder
            .finish()
            .map_err(|e| exec(format!("LeRobot dataset: camera \"{}\": {e}", f.name)))?;
        std::io::Write::flush(&mut out).map_err(|e| io(&path, e))?;
        f.next_video = next_file((v.chunk, v.index), chunks_size);
    }
    Ok(())
}
