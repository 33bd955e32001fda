//! LeRobot v3 datasets from query rows (one per frame): `COPY (query) TO
//! 'dir' STORED AS LEROBOT OPTIONS (fps '30', ...)` and `logsql dataset`.
//!
//! - [`options`]: the `OPTIONS` keys, and the frame rate ([`parse_fps`]);
//! - `columns`: what each column becomes (episode, time, task, features);
//! - `episodes`: the episode checks as pure data (which rows form an
//!   episode, which are dropped, what is a problem, `skip_bad_episodes`);
//! - [`writer`]: the [`DatasetWriter`] carrying them out;
//! - `data`, `cameras`: the data files and each camera's videos;
//! - `staging`: an episode's rows and encoded frames until it is kept;
//! - `stats`: the statistics as LeRobot computes them;
//! - `meta`: `meta/info.json`, `stats.json`, `tasks.parquet`, episodes;
//! - `files`: LeRobot's file numbering and Parquet files.
//!
//! The writer fills a directory the caller made (an
//! [`AtomicDir`](crate::publish::AtomicDir)) and publishes when the writer
//! finished; a failed or abandoned write leaves no dataset.

mod cameras;
mod columns;
mod data;
mod episodes;
mod files;
mod meta;
pub mod options;
mod staging;
mod stats;
pub mod writer;

pub use episodes::SkippedEpisode;
pub use options::{ImageStorage, LeRobotOptions, MAX_FPS, OPTION_KEYS, parse_fps};
pub use writer::{DatasetWriter, Written, check_query, check_target};
