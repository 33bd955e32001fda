//! A LeRobot v3 dataset's `meta/`: `info.json` (format version, counts,
//! paths, features with dtype, shape, names and video info), `stats.json`
//! (the episodes' statistics combined), `tasks.parquet` (tasks indexed by
//! their text, as pandas writes a frame with an index) and
//! `episodes/chunk-000/file-000.parquet` (per episode: tasks, length, data
//! and video file indices, video timestamps, statistics).

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use serde_json::{Map, Value, json};

use super::files::{create, io, parquet_writer};
use super::options::{ImageStorage, LeRobotOptions};
use super::stats::{QUANTILES, Stats, aggregate};
use crate::error::Result;

/// The columns LeRobot adds to every frame, with their dtypes.
pub const DEFAULT_FEATURES: [(&str, &str); 5] = [
    ("timestamp", "float32"),
    ("frame_index", "int64"),
    ("episode_index", "int64"),
    ("index", "int64"),
    ("task_index", "int64"),
];

/// The dataset format version written.
pub const CODEBASE_VERSION: &str = "v3.0";

/// A feature of the dataset, with its episodes' statistics.
#[derive(Debug, Clone)]
pub struct FeatureInfo {
    pub name: String,
    pub camera: bool,
    /// Vector length (numeric features).
    pub dims: usize,
    /// (width, height) of a camera.
    pub size: Option<(u32, u32)>,
    /// Dimension names (a struct's fields).
    pub names: Option<Vec<String>>,
    pub episodes: Vec<Stats>,
}

/// Where an episode's frames of one camera are.
#[derive(Debug, Clone)]
pub struct VideoSpan {
    pub key: String,
    pub chunk: u64,
    pub file: u64,
    pub from: f64,
    pub to: f64,
}

/// One row of the episodes table.
#[derive(Debug, Clone)]
pub struct EpisodeMeta {
    pub index: i64,
    pub tasks: Vec<String>,
    pub length: u64,
    pub data_chunk: u64,
    pub data_file: u64,
    pub from_index: u64,
    pub to_index: u64,
    pub videos: Vec<VideoSpan>,
    /// (feature, statistics, is a camera), features then the default columns.
    pub stats: Vec<(String, Stats, bool)>,
}

/// Writes `meta/` under `root`.
#[allow(clippy::too_many_arguments)]
pub fn write_meta(
    root: &Path,
    options: &LeRobotOptions,
    fps: u32,
    features: &[FeatureInfo],
    defaults: &[Vec<Stats>],
    tasks: &[String],
    episodes: &[EpisodeMeta],
    total_frames: u64,
) -> Result<()> {
    let dir = root.join("meta");
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let video = options.images == ImageStorage::Video && features.iter().any(|f| f.camera);
    // info.json
    let mut feats = Map::new();
    for f in features {
        let entry = if f.camera {
            let (w, h) = f.size.unwrap_or((0, 0));
            let mut e = json!({
                "dtype": if options.images == ImageStorage::Video { "video" } else { "image" },
                "shape": [h, w, 3],
                "names": ["height", "width", "channels"],
            });
            if options.images == ImageStorage::Video {
                e["info"] = json!({
                    "video.height": h,
                    "video.width": w,
                    "video.codec": "h264",
                    "video.pix_fmt": "yuv420p",
                    "video.is_depth_map": false,
                    "video.fps": fps,
                    "video.channels": 3,
                    "has_audio": false,
                });
            }
            e
        } else {
            json!({
                "dtype": "float32",
                "shape": [f.dims],
                "names": f.names,
            })
        };
        feats.insert(f.name.clone(), entry);
    }
    for (name, dtype) in DEFAULT_FEATURES {
        feats.insert(
            name.into(),
            json!({"dtype": dtype, "shape": [1], "names": null}),
        );
    }
    let info = json!({
        "codebase_version": CODEBASE_VERSION,
        "robot_type": options.robot_type,
        "total_episodes": episodes.len(),
        "total_frames": total_frames,
        "total_tasks": tasks.len(),
        "chunks_size": options.chunks_size,
        "data_files_size_in_mb": options.data_files_size_in_mb,
        "video_files_size_in_mb": options.video_files_size_in_mb,
        "fps": fps,
        "splits": {"train": format!("0:{}", episodes.len())},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": if video {
            Value::from("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4")
        } else {
            Value::Null
        },
        "features": feats,
    });
    write_json(&dir.join("info.json"), &info)?;
    // stats.json
    let mut stats = Map::new();
    for f in features {
        if let Some(s) = aggregate(&f.episodes) {
            stats.insert(f.name.clone(), s.to_json(f.camera));
        }
    }
    for ((name, _), list) in DEFAULT_FEATURES.iter().zip(defaults) {
        if let Some(s) = aggregate(list) {
            stats.insert((*name).into(), s.to_json(false));
        }
    }
    write_json(&dir.join("stats.json"), &Value::Object(stats))?;
    write_tasks(&dir.join("tasks.parquet"), tasks)?;
    write_episodes(&dir.join("episodes/chunk-000/file-000.parquet"), episodes)
}

fn write_json(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| io(path, e))?;
    let mut file = create(path)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(|e| io(path, e))
}

/// `tasks.parquet`: `task_index` with the task text as the pandas index
/// (the metadata pandas writes, so that `pd.read_parquet` indexes by task).
fn write_tasks(path: &Path, tasks: &[String]) -> Result<()> {
    let pandas = json!({
        "index_columns": ["__index_level_0__"],
        "column_indexes": [{"name": null, "field_name": null, "pandas_type": "unicode", "numpy_type": "object", "metadata": {"encoding": "UTF-8"}}],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": null},
            {"name": null, "field_name": "__index_level_0__", "pandas_type": "unicode", "numpy_type": "object", "metadata": null}
        ],
        "attributes": {},
        "creator": {"library": "logsql", "version": env!("CARGO_PKG_VERSION")},
        "pandas_version": "2.2.0"
    });
    let schema = Arc::new(
        Schema::new(vec![
            Field::new("task_index", DataType::Int64, true),
            Field::new("__index_level_0__", DataType::Utf8, true),
        ])
        .with_metadata([("pandas".to_string(), pandas.to_string())].into()),
    );
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from_iter_values(0..tasks.len() as i64)),
            Arc::new(StringArray::from_iter_values(tasks)),
        ],
    )?;
    let mut w = parquet_writer(path, schema)?;
    w.write(&batch).map_err(|e| io(path, e))?;
    w.close().map_err(|e| io(path, e))?;
    Ok(())
}

/// A list column of one list of f64 per episode.
fn f64_lists(rows: impl Iterator<Item = Vec<f64>>) -> ArrayRef {
    let mut b = ListBuilder::new(Float64Builder::new());
    for r in rows {
        b.values().append_slice(&r);
        b.append(true);
    }
    Arc::new(b.finish())
}

/// A list column of `[[[v]], ...]` per episode (image statistics, shape (3, 1, 1)).
fn image_lists(rows: impl Iterator<Item = Vec<f64>>) -> ArrayRef {
    let mut b = ListBuilder::new(ListBuilder::new(ListBuilder::new(Float64Builder::new())));
    for r in rows {
        for v in r {
            b.values().values().values().append_value(v);
            b.values().values().append(true);
            b.values().append(true);
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

fn i64s(rows: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(rows))
}

/// `meta/episodes/chunk-000/file-000.parquet`.
fn write_episodes(path: &Path, episodes: &[EpisodeMeta]) -> Result<()> {
    let mut fields: Vec<Field> = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    let mut add = |name: String, column: ArrayRef| {
        fields.push(Field::new(name, column.data_type().clone(), true));
        columns.push(column);
    };
    add(
        "episode_index".into(),
        i64s(episodes.iter().map(|e| e.index)),
    );
    let mut tasks = ListBuilder::new(StringBuilder::new());
    for e in episodes {
        for t in &e.tasks {
            tasks.values().append_value(t);
        }
        tasks.append(true);
    }
    add("tasks".into(), Arc::new(tasks.finish()));
    add(
        "length".into(),
        i64s(episodes.iter().map(|e| e.length as i64)),
    );
    add(
        "data/chunk_index".into(),
        i64s(episodes.iter().map(|e| e.data_chunk as i64)),
    );
    add(
        "data/file_index".into(),
        i64s(episodes.iter().map(|e| e.data_file as i64)),
    );
    add(
        "dataset_from_index".into(),
        i64s(episodes.iter().map(|e| e.from_index as i64)),
    );
    add(
        "dataset_to_index".into(),
        i64s(episodes.iter().map(|e| e.to_index as i64)),
    );
    let first = &episodes[0];
    for (k, v) in first.videos.iter().enumerate() {
        let key = &v.key;
        let span = |e: &EpisodeMeta| e.videos[k].clone();
        add(
            format!("videos/{key}/chunk_index"),
            i64s(episodes.iter().map(|e| span(e).chunk as i64)),
        );
        add(
            format!("videos/{key}/file_index"),
            i64s(episodes.iter().map(|e| span(e).file as i64)),
        );
        add(
            format!("videos/{key}/from_timestamp"),
            Arc::new(Float64Array::from_iter_values(
                episodes.iter().map(|e| span(e).from),
            )),
        );
        add(
            format!("videos/{key}/to_timestamp"),
            Arc::new(Float64Array::from_iter_values(
                episodes.iter().map(|e| span(e).to),
            )),
        );
    }
    for (k, (name, _, camera)) in first.stats.iter().enumerate() {
        let stat = |e: &EpisodeMeta| e.stats[k].1.clone();
        let lists = |get: &dyn Fn(&Stats) -> Vec<f64>| {
            let rows = episodes.iter().map(|e| get(&stat(e)));
            if *camera {
                image_lists(rows)
            } else {
                f64_lists(rows)
            }
        };
        add(format!("stats/{name}/min"), lists(&|s| s.min.clone()));
        add(format!("stats/{name}/max"), lists(&|s| s.max.clone()));
        add(format!("stats/{name}/mean"), lists(&|s| s.mean.clone()));
        add(format!("stats/{name}/std"), lists(&|s| s.std.clone()));
        let mut count = ListBuilder::new(Int64Builder::new());
        for e in episodes {
            count.values().append_value(stat(e).count as i64);
            count.append(true);
        }
        add(format!("stats/{name}/count"), Arc::new(count.finish()));
        for (q, (_, key)) in QUANTILES.iter().enumerate() {
            add(
                format!("stats/{name}/{key}"),
                lists(&|s| s.quantiles[q].clone()),
            );
        }
    }
    add(
        "meta/episodes/chunk_index".into(),
        i64s(episodes.iter().map(|_| 0)),
    );
    add(
        "meta/episodes/file_index".into(),
        i64s(episodes.iter().map(|_| 0)),
    );
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns)?;
    let mut w = parquet_writer(path, schema)?;
    w.write(&batch).map_err(|e| io(path, e))?;
    w.close().map_err(|e| io(path, e))?;
    Ok(())
}
