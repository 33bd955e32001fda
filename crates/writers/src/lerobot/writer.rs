//! [`DatasetWriter`]: query rows in, a LeRobot v3 dataset out (in a
//! directory the caller publishes when [`FormatWriter::finish`] succeeds).
//!
//! What each row is comes from the [`EpisodePlan`] (the episode checks, pure
//! data); the writer carries it out: a frame's values go to the data rows
//! ([`DataRows`]) and its images to each camera's encoder ([`Camera`]),
//! staged until the episode ends; a kept episode is appended to the data
//! and video files with its statistics, a skipped one discarded. Memory
//! holds one batch, the encoders' state and the current episode's numeric
//! values (for its quantiles).

use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampNanosecondType};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_cast::cast;
use arrow_schema::{DataType, Schema, TimeUnit};
use logsql_media::images::arrow::ImageColumn;
use logsql_media::images::codec::encode_png;

use super::cameras::Camera;
use super::columns::{
    ColumnPlan, FeatureKind, NumericColumn, NumericShape, TimeColumn, numeric_values, row_values,
};
use super::data::{DataRows, FrameIndices};
use super::episodes::{EpisodeEnd, EpisodePlan, KeptEpisode, Named, RowStep, RowTime};
use super::meta::{self, EpisodeMeta, FeatureInfo};
use super::options::{ImageStorage, LeRobotOptions};
use super::stats::{ImageAccumulator, NumericAccumulator, Stats};
use crate::error::{Error, Result};
use crate::format_writer::{FormatWriter, Progress};

pub use super::episodes::SkippedEpisode;

/// What [`DatasetWriter`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Frames in the dataset.
    pub frames: u64,
    /// Episodes in the dataset.
    pub episodes: usize,
    /// Episodes left out, in the order they came.
    pub skipped: Vec<SkippedEpisode>,
}

impl crate::format_writer::Written for Written {
    fn rows(&self) -> u64 {
        self.frames
    }
}

/// A feature's statistics: of the open episode, and of each episode kept.
struct Feature {
    name: String,
    kind: FeatureKind,
    /// The column in the query.
    index: usize,
    numeric: Option<NumericAccumulator>,
    image: ImageAccumulator,
    episodes: Vec<Stats>,
    camera: Option<Camera>,
}

/// The outcome of a step of an episode: `Err` fails the export; `Ok(Err)`
/// is a problem of the episode (its message).
type Step = Result<std::result::Result<(), String>>;

/// One batch's columns, cast once.
struct BatchColumns<'a> {
    times: ArrayRef,
    tasks: Option<ArrayRef>,
    numeric: Vec<Option<NumericColumn>>,
    images: Vec<Option<ImageColumn<'a>>>,
}

/// Fails unless a query of `schema` can be written with `options` (found
/// before it runs).
pub fn check_query(schema: &Schema, options: &LeRobotOptions) -> Result<()> {
    ColumnPlan::of(schema)?;
    options.fps()?;
    Ok(())
}

/// Fails unless `target` can take a dataset: absent, or an empty
/// directory (a dataset is never written over another directory's files).
pub fn check_target(target: &std::path::Path) -> Result<()> {
    match std::fs::symlink_metadata(target) {
        Err(_) => Ok(()),
        Ok(m) if m.is_dir() => {
            let empty = std::fs::read_dir(target)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            match empty {
                true => Ok(()),
                false => Err(Error::Input(format!(
                    "{} exists and is not empty: a LeRobot dataset is written to a new directory (remove it or choose another name)",
                    target.display()
                ))),
            }
        }
        Ok(_) => Err(Error::Input(format!(
            "{} exists and is not a directory",
            target.display()
        ))),
    }
}

/// Writes a LeRobot dataset under a directory; see the module
/// documentation.
pub struct DatasetWriter {
    root: PathBuf,
    options: LeRobotOptions,
    fps: u32,
    plan: ColumnPlan,
    episodes_plan: EpisodePlan,
    features: Vec<Feature>,
    /// Statistics of the five columns LeRobot adds (timestamp, frame_index,
    /// episode_index, index, task_index).
    defaults: Vec<(NumericAccumulator, Vec<Stats>)>,
    data: DataRows,
    episodes: Vec<EpisodeMeta>,
}

impl DatasetWriter {
    /// A writer of rows of `schema` into the (empty) directory `root`.
    pub fn new(root: PathBuf, schema: &Schema, options: LeRobotOptions) -> Result<Self> {
        let plan = ColumnPlan::of(schema)?;
        let fps = options.fps()?;
        if fps.fract() != 0.0 {
            return Err(Error::Input(format!(
                "LeRobot datasets have a whole number of frames per second (fps '{fps}')"
            )));
        }
        let features: Vec<Feature> = plan
            .features
            .iter()
            .enumerate()
            .map(|(k, f)| Feature {
                name: f.name.clone(),
                kind: f.kind.clone(),
                index: f.index,
                numeric: None,
                image: ImageAccumulator::default(),
                episodes: Vec::new(),
                camera: (f.kind == FeatureKind::Camera).then(|| {
                    Camera::new(
                        f.name.clone(),
                        k,
                        root.clone(),
                        options.quality,
                        options.chunks_size,
                    )
                }),
            })
            .collect();
        let named = features
            .iter()
            .map(|f| Named {
                name: f.name.clone(),
                camera: f.kind == FeatureKind::Camera,
            })
            .collect();
        let defaults = meta::DEFAULT_FEATURES
            .iter()
            .map(|(name, _)| (NumericAccumulator::new(1, *name == "timestamp"), Vec::new()))
            .collect();
        let data = DataRows::new(
            root.clone(),
            options.images,
            options.chunks_size,
            features
                .iter()
                .map(|f| (f.name.clone(), f.kind.clone()))
                .collect(),
        );
        Ok(Self {
            root,
            fps: fps as u32,
            episodes_plan: EpisodePlan::new(fps as u32, options.skip_bad_episodes, named),
            options,
            plan,
            features,
            defaults,
            data,
            episodes: Vec::new(),
        })
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.episodes_plan.frames()
    }

    /// Episodes finished so far.
    pub fn episodes(&self) -> usize {
        self.episodes_plan.kept()
    }

    /// Each feature's vector length so far.
    fn dims(&self) -> Vec<Option<usize>> {
        (0..self.features.len())
            .map(|k| self.episodes_plan.shape(k).dims)
            .collect()
    }

    /// The batch's columns, cast once.
    fn columns<'a>(&self, batch: &'a RecordBatch) -> Result<BatchColumns<'a>> {
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
        let mut numeric = Vec::new();
        let mut images = Vec::new();
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
                        Error::Write(format!("LeRobot dataset: column \"{}\": {e}", f.name))
                    })?));
                }
            }
        }
        Ok(BatchColumns {
            times,
            tasks,
            numeric,
            images,
        })
    }

    /// Adds row `row` of a batch to the open episode.
    fn row(&mut self, row: usize, c: &BatchColumns<'_>) -> Result<()> {
        let time = match self.plan.time {
            TimeColumn::Seconds(_) => {
                let t = c.times.as_primitive::<Float64Type>();
                t.is_valid(row).then(|| RowTime::Seconds(t.value(row)))
            }
            TimeColumn::LogTime(_) => {
                let t = c.times.as_primitive::<TimestampNanosecondType>();
                t.is_valid(row).then(|| RowTime::Nanos(t.value(row)))
            }
        };
        let present: Vec<bool> = c
            .numeric
            .iter()
            .zip(&c.images)
            .map(|(n, i)| match (n, i) {
                (Some(n), _) => row_values(n, row).is_some(),
                (_, Some(i)) => i.get(row).is_some(),
                _ => false,
            })
            .collect();
        let step = match self.episodes_plan.row(time, &present)? {
            RowStep::Dropped => Ok(()),
            RowStep::Problem(reason) => Err(reason),
            RowStep::Frame(frame) => {
                let time = time.expect("a frame has a time");
                self.push_frame(row, frame, time, c)?
            }
        };
        match step {
            Ok(()) => Ok(()),
            Err(reason) => self.reject(reason),
        }
    }

    /// The open episode has a problem (`reason`): skipped (what was staged
    /// of it discarded) or the export's error, as the plan says.
    fn reject(&mut self, reason: String) -> Result<()> {
        self.episodes_plan.reject(reason)?;
        self.data.discard();
        for (k, f) in self.features.iter_mut().enumerate() {
            if let Some(c) = &mut f.camera {
                c.discard();
            }
            if let Some(n) = &mut f.numeric {
                n.finish();
            }
            if self.episodes_plan.shape(k).dims.is_none() {
                f.numeric = None;
            }
            f.image.finish();
        }
        for (acc, _) in &mut self.defaults {
            acc.finish();
        }
        Ok(())
    }

    /// Ends the open episode: kept (see [`Self::keep`]) or, when it has a
    /// problem, rejected (see [`Self::reject`]).
    fn end_episode(&mut self) -> Result<()> {
        match self.episodes_plan.end() {
            EpisodeEnd::None => Ok(()),
            EpisodeEnd::Problem(reason) => self.reject(reason),
            EpisodeEnd::Kept(episode) => self.keep(episode),
        }
    }

    /// Frame `frame` of the open episode, from row `row`.
    fn push_frame(&mut self, row: usize, frame: u64, time: RowTime, c: &BatchColumns<'_>) -> Step {
        let task = c
            .tasks
            .as_ref()
            .and_then(|t| {
                let t = t.as_string::<i32>();
                t.is_valid(row).then(|| t.value(row).to_string())
            })
            .unwrap_or_default();
        let task_index = self.episodes_plan.task(&task);
        let fps = self.fps;
        let images = self.options.images;
        for (k, f) in self.features.iter_mut().enumerate() {
            if let Some(col) = &c.numeric[k] {
                let values = row_values(col, row).expect("checked present");
                if let Err(reason) = self.episodes_plan.check_dims(k, values.len(), time)? {
                    return Ok(Err(reason));
                }
                let values: Vec<f64> = values.iter().map(|v| f64::from(*v as f32)).collect();
                f.numeric
                    .get_or_insert_with(|| NumericAccumulator::new(values.len(), true))
                    .push(&values);
                self.data.push_numeric(k, &values);
            } else if let Some(col) = &c.images[k] {
                let image = col.get(row).expect("checked present");
                let camera = f.camera.as_mut().expect("a camera feature");
                let pixels = match camera.decode(&image) {
                    Ok(p) => p,
                    Err(e) => return Ok(Err(self.episodes_plan.camera_problem(k, time, e))),
                };
                let size = (pixels.width, pixels.height);
                if let Err(reason) = self.episodes_plan.check_size(k, size, time)? {
                    return Ok(Err(reason));
                }
                f.image.push_rgb8(&pixels.data, pixels.width, pixels.height);
                match images {
                    ImageStorage::Video => {
                        let label = || self.episodes_plan.camera_label(k);
                        camera.push(&pixels, label).map_err(|e| {
                            Error::Write(format!(
                                "LeRobot dataset: {}",
                                self.episodes_plan.camera_problem(k, time, e)
                            ))
                        })?
                    }
                    ImageStorage::Parquet => {
                        let png = encode_png(&pixels).map_err(|e| {
                            Error::Write(format!("LeRobot dataset: camera \"{}\": {e}", f.name))
                        })?;
                        self.data.push_png(k, png);
                    }
                }
            }
        }
        let indices = FrameIndices {
            timestamp: frame as f32 / fps as f32,
            frame_index: frame as i64,
            episode_index: self.episodes_plan.episode_index(),
            index: (self.episodes_plan.kept_frames() + frame) as i64,
            task_index,
        };
        for ((acc, _), v) in self.defaults.iter_mut().zip(indices.values()) {
            acc.push(&[v]);
        }
        self.episodes_plan.frame_kept();
        let dims = self.dims();
        self.data.push_row(indices, &dims)?;
        Ok(Ok(()))
    }

    /// Keeps `episode`: its staged rows and frames are appended to the data
    /// and video files, its statistics and metadata kept, and files past
    /// their size limit closed.
    fn keep(&mut self, episode: KeptEpisode) -> Result<()> {
        let dims = self.dims();
        let (data_chunk, data_file) = self.data.commit(&dims)?;
        let mut stats = Vec::new();
        let mut videos = Vec::new();
        let fps = f64::from(self.fps);
        for (k, f) in self.features.iter_mut().enumerate() {
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
            if let Some(camera) = &mut f.camera {
                let size = self
                    .episodes_plan
                    .shape(k)
                    .size
                    .expect("a kept frame set it");
                videos.extend(camera.commit(size, episode.frames, fps)?);
            }
        }
        for ((acc, list), (name, _)) in self.defaults.iter_mut().zip(meta::DEFAULT_FEATURES) {
            let s = acc.finish();
            list.push(s.clone());
            stats.push((name.to_string(), s, false));
        }
        self.episodes.push(EpisodeMeta {
            index: episode.index,
            tasks: episode.tasks,
            length: episode.frames,
            data_chunk,
            data_file,
            from_index: episode.frames_before,
            to_index: episode.frames_before + episode.frames,
            videos,
            stats,
        });
        // Files past their size close here; the next episode starts new ones.
        self.data
            .close_if_full(self.options.data_files_size_in_mb * 1024 * 1024)?;
        let video_limit = self.options.video_files_size_in_mb * 1024 * 1024;
        for camera in self.features.iter_mut().filter_map(|f| f.camera.as_mut()) {
            camera.close_if_full(video_limit)?;
        }
        Ok(())
    }

    /// Finishes the dataset: the last episode, the data and video files, and
    /// `meta/`. Returns what was written.
    fn complete(mut self) -> Result<Written> {
        self.end_episode()?;
        if self.episodes.is_empty() {
            let skipped = self.episodes_plan.skipped();
            if !skipped.is_empty() {
                let list: Vec<String> = skipped.iter().map(|s| s.reason.clone()).collect();
                return Err(Error::Write(format!(
                    "LeRobot dataset: every episode was skipped: {}",
                    list.join("; ")
                )));
            }
            return Err(Error::Write(
                "LeRobot dataset: the query gave no rows (no episode to write)".into(),
            ));
        }
        self.data.close()?;
        for camera in self.features.iter_mut().filter_map(|f| f.camera.as_mut()) {
            camera.close()?;
        }
        let infos: Vec<FeatureInfo> = self
            .features
            .iter()
            .enumerate()
            .map(|(k, f)| FeatureInfo {
                name: f.name.clone(),
                camera: f.kind == FeatureKind::Camera,
                dims: self.episodes_plan.shape(k).dims.unwrap_or(1),
                size: self.episodes_plan.shape(k).size,
                names: match &f.kind {
                    FeatureKind::Numeric(NumericShape::Struct(n)) => Some(n.clone()),
                    _ => None,
                },
                episodes: f.episodes.clone(),
            })
            .collect();
        let defaults: Vec<Vec<Stats>> = self.defaults.iter().map(|(_, l)| l.clone()).collect();
        let total_frames = self.episodes_plan.kept_frames();
        meta::write_meta(
            &self.root,
            &self.options,
            self.fps,
            &infos,
            &defaults,
            self.episodes_plan.tasks(),
            &self.episodes,
            total_frames,
        )?;
        Ok(Written {
            frames: total_frames,
            episodes: self.episodes.len(),
            skipped: self.episodes_plan.take_skipped(),
        })
    }
}

impl FormatWriter for DatasetWriter {
    type Report = Written;

    fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let episodes = cast(batch.column(self.plan.episode), &DataType::Int64)?;
        let episodes = episodes.as_primitive::<Int64Type>();
        let files = match self.plan.file {
            Some(i) => Some(cast(batch.column(i), &DataType::Utf8)?),
            None => None,
        };
        let columns = self.columns(batch)?;
        for row in 0..batch.num_rows() {
            if episodes.is_null(row) {
                return Err(Error::Write(
                    "LeRobot dataset: a row has a NULL episode_index".into(),
                ));
            }
            let source = episodes.value(row);
            if self.episodes_plan.skipping(source) {
                continue;
            }
            if self.episodes_plan.starts_episode(source) {
                let file = files.as_ref().and_then(|f| {
                    let f = f.as_string::<i32>();
                    f.is_valid(row).then(|| f.value(row).to_string())
                });
                self.episodes_plan.check_next(source)?;
                self.end_episode()?;
                self.episodes_plan.begin(source, file);
            }
            self.row(row, &columns)?;
        }
        Ok(())
    }

    fn progress(&self) -> Progress {
        Progress {
            rows: self.frames(),
            groups: self.episodes() as u64,
        }
    }

    fn finish(self) -> Result<Written> {
        self.complete()
    }
}
