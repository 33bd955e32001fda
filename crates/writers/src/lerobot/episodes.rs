//! The episode checks of a LeRobot dataset, as pure data apart from file
//! writing: which rows form an episode, which leading rows are dropped,
//! which rows are frames (and which frame), what is a problem of the
//! episode (skipped under `skip_bad_episodes`, else the export's error) and
//! what fails the export outright. [`EpisodePlan`] decides; the dataset
//! writer carries out what it decides (stages, encodes, writes, discards).
//!
//! Rows come one per frame, grouped by episode, in time order. An episode's
//! leading rows where a feature is still NULL are dropped (the episode starts
//! when every feature is present); after that a NULL feature, a vector whose
//! length changes, a frame whose size changes or a row off the `1/fps` grid
//! is a problem of the episode, named with the feature, the episode, its
//! recording (`file`) and the time.

use std::collections::{HashMap, HashSet};

use crate::error::{Error, Result};

/// How far a row's time may be from its frame's (`frame / fps`): LeRobot's
/// own tolerance.
const TOLERANCE_S: f64 = 1e-4;

/// A row's time as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowTime {
    /// `timestamp`, in seconds.
    Seconds(f64),
    /// `log_time`, in nanoseconds.
    Nanos(i64),
}

impl RowTime {
    /// Seconds from `start` to this time.
    fn since(self, start: RowTime) -> f64 {
        match (self, start) {
            (RowTime::Seconds(a), RowTime::Seconds(b)) => a - b,
            (RowTime::Nanos(a), RowTime::Nanos(b)) => (a - b) as f64 / 1e9,
            _ => f64::NAN,
        }
    }

    /// The time as messages name it.
    pub fn describe(self) -> String {
        match self {
            RowTime::Seconds(s) => format!("timestamp {s} s"),
            RowTime::Nanos(ns) => format!("log_time {ns} ns"),
        }
    }
}

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

/// What the plan makes of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum RowStep {
    /// A leading row without every feature: dropped.
    Dropped,
    /// The row is frame `frame` of the episode (at `frame / fps` s).
    Frame(u64),
    /// A problem of the episode (its message).
    Problem(String),
}

/// A feature's vector length and camera frame size, once known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// A numeric feature's vector length.
    pub dims: Option<usize>,
    /// A camera's (width, height).
    pub size: Option<(u32, u32)>,
}

/// An episode the plan kept, for the dataset's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptEpisode {
    /// The dataset's episode index (consecutive from 0).
    pub index: i64,
    /// Its tasks, in the order they came.
    pub tasks: Vec<String>,
    /// Its frames.
    pub frames: u64,
    /// The dataset's frames before it.
    pub frames_before: u64,
}

/// How an episode ended.
#[derive(Debug, Clone, PartialEq)]
pub enum EpisodeEnd {
    /// No episode was open.
    None,
    /// The episode is kept.
    Kept(KeptEpisode),
    /// The episode has a problem (no row had every feature).
    Problem(String),
}

/// The episode being planned.
#[derive(Debug, Clone)]
struct Episode {
    /// The query's episode_index.
    source: i64,
    /// The dataset's (consecutive from 0).
    index: i64,
    file: Option<String>,
    frames: u64,
    /// The time of the first kept row.
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
    /// The dataset's indexes of `tasks` (so noting a task is constant time,
    /// however many distinct tasks an episode has).
    task_set: HashSet<i64>,
    /// Tasks known before the episode (a skipped episode's new ones are
    /// forgotten).
    tasks_before: usize,
    /// The shapes before the episode (a skipped episode's first values do
    /// not set them).
    shapes_before: Vec<Shape>,
}

/// A feature as the plan names it in messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The feature's key.
    pub name: String,
    /// Whether it is a camera.
    pub camera: bool,
}

/// The episode checks (see the module documentation).
#[derive(Debug)]
pub struct EpisodePlan {
    fps: u32,
    skip_bad: bool,
    features: Vec<Named>,
    shapes: Vec<Shape>,
    episode: Option<Episode>,
    /// The query's episode being skipped (its remaining rows are ignored).
    skipping: Option<i64>,
    last_source: Option<i64>,
    kept: i64,
    kept_frames: u64,
    tasks: Vec<String>,
    task_ids: HashMap<String, i64>,
    skipped: Vec<SkippedEpisode>,
}

/// ` (file F)` when the recording is known.
fn where_(file: &Option<String>) -> String {
    file.as_ref().map(|f| format!(" ({f})")).unwrap_or_default()
}

fn fatal(m: String) -> Error {
    Error::Write(format!("LeRobot dataset: {m}"))
}

impl EpisodePlan {
    /// The checks of a dataset of `features` at `fps` frames per second.
    pub fn new(fps: u32, skip_bad: bool, features: Vec<Named>) -> Self {
        Self {
            fps,
            skip_bad,
            shapes: vec![Shape::default(); features.len()],
            features,
            episode: None,
            skipping: None,
            last_source: None,
            kept: 0,
            kept_frames: 0,
            tasks: Vec::new(),
            task_ids: HashMap::new(),
            skipped: Vec::new(),
        }
    }

    /// Whether a row of the query's episode `source` starts a new episode
    /// (it is neither the open one nor the one being skipped).
    pub fn starts_episode(&self, source: i64) -> bool {
        self.skipping != Some(source) && self.episode.as_ref().is_none_or(|e| e.source != source)
    }

    /// Whether the query's episode `source` is being skipped.
    pub fn skipping(&self, source: i64) -> bool {
        self.skipping == Some(source)
    }

    /// Fails unless episode `source` may come next (episodes come in
    /// order). Called before the open episode is ended.
    pub fn check_next(&self, source: i64) -> Result<()> {
        match self.last_source {
            Some(last) if source < last => Err(fatal(format!(
                "episode {source} comes after episode {last}: rows must come grouped by episode in order (add ORDER BY episode_index, log_time, and leave out the option presorted)"
            ))),
            _ => Ok(()),
        }
    }

    /// Opens the query's episode `source` (of recording `file`), once the
    /// one before has ended.
    pub fn begin(&mut self, source: i64, file: Option<String>) {
        self.skipping = None;
        self.last_source = Some(source);
        self.episode = Some(Episode {
            source,
            index: self.kept,
            file,
            frames: 0,
            start: None,
            dropped: 0,
            seen: vec![false; self.features.len()],
            span: None,
            last: None,
            tasks: Vec::new(),
            task_set: HashSet::new(),
            tasks_before: self.tasks.len(),
            shapes_before: self.shapes.clone(),
        });
    }

    fn open(&self) -> Result<&Episode> {
        self.episode
            .as_ref()
            .ok_or_else(|| fatal("a row outside an episode".into()))
    }

    /// What a row of the open episode is: at `time`, with `present[k]`
    /// telling whether feature `k` has a value. Rows going back in time fail
    /// the export.
    pub fn row(&mut self, time: Option<RowTime>, present: &[bool]) -> Result<RowStep> {
        let fps = self.fps;
        let features = &self.features;
        let Some(episode) = self.episode.as_mut() else {
            return Err(fatal("a row outside an episode".into()));
        };
        let source = episode.source;
        let Some(time) = time else {
            return Ok(RowStep::Problem(format!(
                "episode {source}{}: a row has a NULL time",
                where_(&episode.file)
            )));
        };
        if let Some(last) = episode.last.replace(time)
            && time.since(last) < 0.0
        {
            return Err(fatal(format!(
                "episode {source}{}: the row at {} comes after the row at {}: rows must come in time order within an episode (add ORDER BY episode_index, log_time, and leave out the option presorted)",
                where_(&episode.file),
                time.describe(),
                last.describe()
            )));
        }
        // Every feature present? Leading rows without one are dropped.
        if let Some(k) = present.iter().position(|p| !p) {
            if episode.frames == 0 {
                episode.dropped += 1;
                for (seen, p) in episode.seen.iter_mut().zip(present) {
                    *seen |= *p;
                }
                let first = episode.span.map_or(time, |(first, _)| first);
                episode.span = Some((first, time));
                return Ok(RowStep::Dropped);
            }
            return Ok(RowStep::Problem(format!(
                "episode {source}{}: feature \"{}\" is NULL at {} after the episode started",
                where_(&episode.file),
                features[k].name,
                time.describe()
            )));
        }
        let start = *episode.start.get_or_insert(time);
        let frame = episode.frames;
        let seconds = time.since(start);
        let expected = frame as f64 / f64::from(fps);
        if (seconds - expected).abs() > TOLERANCE_S {
            return Ok(RowStep::Problem(format!(
                "episode {source}{}: the row at {} is {seconds:.6} s into the episode, but frame {frame} is at {expected:.6} s: rows must be one per frame, 1/{fps} s apart (time_grid(path, {fps}) gives such rows; add ORDER BY episode_index, log_time if they are out of order)",
                where_(&episode.file),
                time.describe(),
            )));
        }
        Ok(RowStep::Frame(frame))
    }

    /// The task index of `task` (new tasks are numbered as they come), and
    /// the task noted for the open episode.
    pub fn task(&mut self, task: &str) -> i64 {
        let index = match self.task_ids.get(task) {
            Some(i) => *i,
            None => {
                let i = self.tasks.len() as i64;
                self.tasks.push(task.to_string());
                self.task_ids.insert(task.to_string(), i);
                i
            }
        };
        if let Some(e) = self.episode.as_mut()
            && e.task_set.insert(index)
        {
            e.tasks.push(task.to_string());
        }
        index
    }

    /// Checks feature `k`'s vector length at `time` (the first kept row
    /// sets it): a length that changes is a problem of the episode.
    pub fn check_dims(
        &mut self,
        k: usize,
        len: usize,
        time: RowTime,
    ) -> Result<Result<(), String>> {
        self.open()?;
        let dims = *self.shapes[k].dims.get_or_insert(len);
        if len == dims {
            return Ok(Ok(()));
        }
        let episode = self.open()?;
        Ok(Err(format!(
            "episode {}{}: feature \"{}\" has {len} values at {}, but {dims} before: a feature's length cannot change",
            episode.source,
            where_(&episode.file),
            self.features[k].name,
            time.describe(),
        )))
    }

    /// Checks camera `k`'s frame size at `time` (the first kept frame sets
    /// it): a size that changes is a problem of the episode.
    pub fn check_size(
        &mut self,
        k: usize,
        (width, height): (u32, u32),
        time: RowTime,
    ) -> Result<Result<(), String>> {
        self.open()?;
        let size = *self.shapes[k].size.get_or_insert((width, height));
        if size == (width, height) {
            return Ok(Ok(()));
        }
        let episode = self.open()?;
        Ok(Err(format!(
            "episode {}{}: camera \"{}\" has a {width}x{height} frame at {}, but {}x{} before: a camera's frame size cannot change",
            episode.source,
            where_(&episode.file),
            self.features[k].name,
            time.describe(),
            size.0,
            size.1
        )))
    }

    /// A problem of the open episode's camera `k` at `time` that is not the
    /// plan's own (an image that does not decode).
    pub fn camera_problem(&self, k: usize, time: RowTime, e: impl std::fmt::Display) -> String {
        format!("{} at {}: {e}", self.camera_label(k), time.describe())
    }

    /// The open episode's camera `k`, for messages: `episode 3 (run.mcap):
    /// camera "observation.images.front"`.
    pub fn camera_label(&self, k: usize) -> String {
        let (source, file) = self
            .episode
            .as_ref()
            .map_or((0, None), |e| (e.source, e.file.clone()));
        format!(
            "episode {source}{}: camera \"{}\"",
            where_(&file),
            self.features[k].name
        )
    }

    /// The open episode's frame `frame` was kept.
    pub fn frame_kept(&mut self) {
        if let Some(e) = self.episode.as_mut() {
            e.frames += 1;
        }
    }

    /// Ends the open episode: kept, unless no row had every feature.
    pub fn end(&mut self) -> EpisodeEnd {
        let Some(episode) = self.episode.as_ref() else {
            return EpisodeEnd::None;
        };
        if episode.frames == 0 {
            return EpisodeEnd::Problem(self.never_complete(episode));
        }
        let Some(episode) = self.episode.take() else {
            return EpisodeEnd::None;
        };
        if episode.dropped > 0 {
            log::info!(
                "LeRobot dataset: episode {}{}: {} leading rows dropped (before every feature had a first value)",
                episode.source,
                where_(&episode.file),
                episode.dropped
            );
        }
        let kept = KeptEpisode {
            index: episode.index,
            tasks: episode.tasks,
            frames: episode.frames,
            frames_before: self.kept_frames,
        };
        self.kept += 1;
        self.kept_frames += episode.frames;
        EpisodeEnd::Kept(kept)
    }

    /// The problem of an episode where no row has every feature.
    fn never_complete(&self, episode: &Episode) -> String {
        // The features that never had a value, named as the other errors
        // name them.
        let never: Vec<String> = self
            .features
            .iter()
            .zip(&episode.seen)
            .filter(|(_, seen)| !**seen)
            .map(|(f, _)| match f.camera {
                true => format!("camera \"{}\"", f.name),
                false => format!("feature \"{}\"", f.name),
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
        format!(
            "episode {}{}: no row has every feature{detail}: is a topic missing from the recording?",
            episode.source,
            where_(&episode.file),
        )
    }

    /// The open episode has a problem (`reason`): under `skip_bad_episodes`
    /// it is left out (the tasks and shapes it introduced forgotten, its
    /// remaining rows ignored) and listed; otherwise the export fails. The
    /// caller then discards what it staged of the episode.
    pub fn reject(&mut self, reason: String) -> Result<()> {
        if !self.skip_bad {
            return Err(fatal(reason));
        }
        let Some(episode) = self.episode.take() else {
            return Err(fatal(reason));
        };
        log::warn!("LeRobot dataset: skipping {reason}");
        self.shapes = episode.shapes_before;
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

    /// Feature `k`'s shape so far.
    pub fn shape(&self, k: usize) -> Shape {
        self.shapes[k]
    }

    /// The dataset's index of the open episode.
    pub fn episode_index(&self) -> i64 {
        self.episode.as_ref().map_or(self.kept, |e| e.index)
    }

    /// Frames kept: of the episodes kept, and of the open one.
    pub fn frames(&self) -> u64 {
        self.kept_frames + self.episode.as_ref().map_or(0, |e| e.frames)
    }

    /// Frames of the episodes kept.
    pub fn kept_frames(&self) -> u64 {
        self.kept_frames
    }

    /// Episodes kept.
    pub fn kept(&self) -> usize {
        self.kept as usize
    }

    /// The tasks, by index.
    pub fn tasks(&self) -> &[String] {
        &self.tasks
    }

    /// The episodes skipped, in the order they came.
    pub fn skipped(&self) -> &[SkippedEpisode] {
        &self.skipped
    }

    /// The episodes skipped, taken.
    pub fn take_skipped(&mut self) -> Vec<SkippedEpisode> {
        std::mem::take(&mut self.skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(skip_bad: bool) -> EpisodePlan {
        let features = vec![
            Named {
                name: "x".into(),
                camera: false,
            },
            Named {
                name: "cam".into(),
                camera: true,
            },
        ];
        EpisodePlan::new(10, skip_bad, features)
    }

    fn at(s: f64) -> Option<RowTime> {
        Some(RowTime::Seconds(s))
    }

    #[test]
    fn leading_rows_are_dropped_and_frames_follow_the_grid() {
        let mut p = plan(false);
        assert!(p.starts_episode(3));
        p.check_next(3).unwrap();
        p.begin(3, Some("a.mcap".into()));
        assert!(!p.starts_episode(3));
        assert_eq!(p.row(at(0.0), &[true, false]).unwrap(), RowStep::Dropped);
        assert_eq!(p.row(at(0.1), &[true, true]).unwrap(), RowStep::Frame(0));
        p.frame_kept();
        assert_eq!(p.row(at(0.2), &[true, true]).unwrap(), RowStep::Frame(1));
        p.frame_kept();
        assert_eq!(p.task("pick"), 0);
        assert_eq!(p.check_dims(0, 6, RowTime::Seconds(0.2)).unwrap(), Ok(()));
        let RowStep::Problem(m) = p.row(at(0.35), &[true, true]).unwrap() else {
            panic!("off the grid");
        };
        assert!(
            m.starts_with("episode 3 (a.mcap): the row at timestamp 0.35 s is 0.250000 s into the episode, but frame 2 is at 0.200000 s"),
            "{m}"
        );
        let RowStep::Problem(m) = p.row(at(0.4), &[false, true]).unwrap() else {
            panic!("a NULL after the start");
        };
        assert!(m.contains("feature \"x\" is NULL at timestamp 0.4 s after the episode started"));
        let e = p.row(at(0.1), &[true, true]).unwrap_err().to_string();
        assert!(
            e.contains("must come in time order within an episode"),
            "{e}"
        );
        assert_eq!(
            p.end(),
            EpisodeEnd::Kept(KeptEpisode {
                index: 0,
                tasks: vec!["pick".into()],
                frames: 2,
                frames_before: 0,
            })
        );
        let e = p.check_next(2).unwrap_err().to_string();
        assert!(e.contains("episode 2 comes after episode 3"), "{e}");
        assert_eq!((p.kept(), p.frames()), (1, 2));
    }

    #[test]
    fn an_episode_lists_each_of_its_tasks_once_in_the_order_they_came() {
        // 100,000 distinct tasks, each seen twice: numbered as they come,
        // listed once each (a scan of the episode's list per row made this
        // quadratic: over a minute).
        let mut p = plan(false);
        p.begin(0, None);
        let n = 100_000;
        for round in 0..2 {
            for i in 0..n {
                assert_eq!(p.task(&format!("task {i}")), i as i64, "round {round}");
            }
        }
        assert_eq!(p.task("task 0"), 0);
        assert_eq!(p.tasks().len(), n);
        assert_eq!(p.row(at(0.0), &[true, true]).unwrap(), RowStep::Frame(0));
        p.frame_kept();
        let EpisodeEnd::Kept(kept) = p.end() else {
            panic!("kept");
        };
        assert_eq!(kept.tasks.len(), n);
        assert_eq!(
            (&kept.tasks[0][..], &kept.tasks[n - 1][..]),
            ("task 0", "task 99999")
        );
    }

    #[test]
    fn a_bad_episode_is_skipped_with_what_it_introduced() {
        let mut p = plan(true);
        p.begin(0, None);
        assert_eq!(p.row(at(0.0), &[true, true]).unwrap(), RowStep::Frame(0));
        assert_eq!(p.task("a"), 0);
        assert_eq!(
            p.check_size(1, (4, 2), RowTime::Seconds(0.0)).unwrap(),
            Ok(())
        );
        p.frame_kept();
        assert!(matches!(p.end(), EpisodeEnd::Kept(_)));
        p.begin(1, Some("b.mcap".into()));
        assert_eq!(p.row(at(5.0), &[true, true]).unwrap(), RowStep::Frame(0));
        assert_eq!(p.task("b"), 1);
        assert_eq!(p.check_dims(0, 3, RowTime::Seconds(5.0)).unwrap(), Ok(()));
        let reason = p
            .check_size(1, (8, 2), RowTime::Seconds(5.0))
            .unwrap()
            .unwrap_err();
        assert!(reason.contains("camera \"cam\" has a 8x2 frame at timestamp 5 s, but 4x2 before"));
        p.reject(reason.clone()).unwrap();
        // Its remaining rows are ignored; its task and first length forgotten.
        assert!(p.skipping(1) && !p.starts_episode(1));
        assert_eq!(p.tasks(), ["a"]);
        assert_eq!(p.shape(0).dims, None);
        assert_eq!(p.shape(1).size, Some((4, 2)));
        assert_eq!(
            p.skipped(),
            [SkippedEpisode {
                episode: 1,
                file: Some("b.mcap".into()),
                reason,
            }]
        );
        // An episode where no row has every feature.
        p.begin(2, None);
        assert_eq!(p.row(at(0.0), &[false, true]).unwrap(), RowStep::Dropped);
        assert_eq!(p.row(at(0.1), &[false, true]).unwrap(), RowStep::Dropped);
        let EpisodeEnd::Problem(m) = p.end() else {
            panic!("never complete");
        };
        assert_eq!(
            m,
            "episode 2: no row has every feature: feature \"x\" never has a value from timestamp 0 s to timestamp 0.1 s: is a topic missing from the recording?"
        );
        // Without skip_bad_episodes a problem is the export's error.
        let mut strict = plan(false);
        strict.begin(0, None);
        let e = strict.reject("episode 0: bad".into()).unwrap_err();
        assert_eq!(e.to_string(), "LeRobot dataset: episode 0: bad");
    }
}
