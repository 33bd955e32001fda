//! The arguments of the MCP tools, as an agent sends them: each a JSON
//! object whose schema (with the descriptions below) the server lists.

use schemars::JsonSchema;
use serde::Deserialize;

/// `list_recordings`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListRecordings {
    /// A directory or glob below a data root (relative paths are taken from
    /// the first root; default: every root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only recordings with this topic.
    #[serde(default)]
    pub topic: Option<String>,
    /// At most this many recordings (default 100).
    #[serde(default)]
    pub limit: Option<u32>,
    /// With a catalog (`--catalog`): only this device's recordings (the
    /// catalog's `device` column).
    #[serde(default)]
    pub device: Option<String>,
    /// With a catalog: only recordings that end at or after this time (RFC
    /// 3339, or a time with its unit such as `1714557600s`).
    #[serde(default)]
    pub start: Option<String>,
    /// With a catalog: only recordings that start at or before this time.
    #[serde(default)]
    pub end: Option<String>,
    /// With a catalog: only recordings whose metadata has each of these
    /// keys with this value.
    #[serde(default)]
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// `describe_recording`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DescribeRecording {
    /// The recording: a log file (MCAP, ROS 1 bag, ROS 2 bag, Apollo record,
    /// BDDF, CARLA log) below a data root, as `list_recordings` names it.
    pub path: String,
}

/// `describe_topic`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DescribeTopic {
    /// The recording, as `list_recordings` names it.
    pub path: String,
    /// The topic, as `describe_recording` lists it.
    pub topic: String,
    /// Sample rows to show (default 3, at most 20).
    #[serde(default)]
    pub samples: Option<u32>,
    /// The minimum, maximum and mean of each numeric field over every
    /// message (default true; reads the whole topic).
    #[serde(default)]
    pub statistics: Option<bool>,
}

/// `query`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Query {
    /// One read-only SQL statement (DataFusion's dialect with logsql's
    /// table functions: `FROM 'run.mcap'`, `read_topic('run.mcap',
    /// '/imu')`, `topics('dir/')`, ASOF JOIN).
    pub sql: String,
    /// At most this many rows come back (default 100, at most 10000); the
    /// answer says when the result had more.
    #[serde(default)]
    pub max_rows: Option<u32>,
}

/// `sample_frames`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SampleFrames {
    /// The recording, as `list_recordings` names it.
    pub path: String,
    /// A camera topic (`sensor_msgs/Image`, `CompressedImage`, Foxglove images).
    pub topic: String,
    /// Log times (RFC 3339, or nanoseconds since the epoch) to show the
    /// first image at or after; default: `count` times spread evenly over
    /// the topic.
    #[serde(default)]
    pub times: Vec<String>,
    /// How many frames when no times are given (default 4, at most 16).
    #[serde(default)]
    pub count: Option<u32>,
    /// The longer side of each thumbnail in pixels (default 320, at most 1024).
    #[serde(default)]
    pub size: Option<u32>,
}

/// `export_clip` (only with `--allow-write DIR`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExportClip {
    /// The recording (or a directory of recordings, merged in time), as
    /// `list_recordings` names it.
    pub path: String,
    /// The window's first log time: RFC 3339 (`2024-05-01T10:00:00Z`) or a
    /// time since the epoch with its unit (`1714557600s`).
    pub start: String,
    /// The window's last log time (included).
    pub end: String,
    /// Only these topics (default: every topic).
    #[serde(default)]
    pub topics: Vec<String>,
    /// The clip's file name in the write directory (letters, digits, `-`,
    /// `_`, `.`; no directory); `.mcap` or `.bag` is added for those formats.
    pub name: String,
    /// `mcap` (default), `bag` (ROS 1) or `db3` (a ROS 2 bag directory).
    #[serde(default)]
    pub format: Option<String>,
}

/// `export_dataset` (only with `--allow-write DIR`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExportDataset {
    /// The dataset spec, as `logsql dataset SPEC.toml` takes it (TOML):
    /// `input` (recordings below the data roots), `fps`, `[features]`
    /// (a topic and field each), `[cameras]`, `task` (the user guide's
    /// "Robot-learning datasets" page).
    pub spec: String,
    /// The dataset's directory name in the write directory (letters,
    /// digits, `-`, `_`, `.`).
    pub name: String,
}

/// `plot`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Plot {
    /// One read-only SQL query: its first column is the x axis (timestamps
    /// drawn as UTC times), every other numeric column a series (a struct
    /// column one series per numeric field).
    pub sql: String,
    /// `line` (default), `scatter` or `step`.
    #[serde(default)]
    pub kind: Option<String>,
    /// A caption above the chart.
    #[serde(default)]
    pub title: Option<String>,
    /// Pixels across (default 1000, 200 to 2000).
    #[serde(default)]
    pub width: Option<u32>,
    /// Pixels down (default 500, 150 to 1500).
    #[serde(default)]
    pub height: Option<u32>,
}
