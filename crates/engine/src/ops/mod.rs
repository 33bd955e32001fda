//! Whole operations the CLI and the Python bindings share, one per file, each
//! giving data for its callers to render (text, JSON, a Python dict):
//!
//! - [`info`]: the facts of a file's summary (`logsql info`, `logsql.info()`),
//!   with [`timeline`], its topics' timelines and gaps, and [`info_json`],
//!   the JSON `logsql info --format json` prints;
//! - [`check`]: `logsql check`: recordings against expectations (rates,
//!   gaps, durations, stamps, health), a pass or a fail per check;
//! - [`doctor`]: the files a health check takes (a directory's log files,
//!   walked without following a link into a loop), and each file's check;
//! - [`export`]: `logsql export`'s queries and its Parquet output;
//! - [`frames`]: a camera topic at a glance (`logsql frames`, MCP's
//!   `sample_frames`): its span, times spread over it, their thumbnails;
//! - [`index`]: `logsql index`: recordings read into a catalog's tables
//!   (new and changed ones only), committed as its next generation;
//! - [`message_files`]: one file per message of a camera or point-cloud
//!   topic (`logsql export --as png|jpeg|pcd|ply`);
//! - [`dataset_spec`]: the spec of `logsql dataset`, parsed and compiled to
//!   the SQL of its LeRobot export;
//! - [`recover`]: `logsql recover`'s plan: the time windows it sorts an
//!   unsorted recording in, each within a memory budget, and their queries;
//! - [`statements`]: SQL text split into statements at `;` (scripts, the
//!   shell's unfinished input);
//! - [`chart`]: a query's result as chart series, in bounded memory (`logsql
//!   plot`, MCP's `plot`), drawn as PNG or SVG by [`chart_image`] on the
//!   axis of [`chart_axis`];
//! - [`text`]: query results as text (fixed-digit RFC 3339 timestamps,
//!   JSON's non-finite floats), the same in every output that prints them;
//! - [`units`]: times, durations and sizes as the CLI shows them and as
//!   users type them.

pub mod chart;
pub mod chart_axis;
pub mod chart_image;
pub mod check;
pub mod dataset_spec;
pub mod doctor;
pub mod export;
pub mod frames;
pub mod index;
pub mod info;
pub mod info_json;
pub mod message_files;
pub mod recover;
pub mod statements;
pub mod text;
pub mod timeline;
/// Human units (a module of the crate root, which the SQL surface reads too).
pub use crate::units;

/// `s` as a SQL string literal (`'it''s'`); the SQL surface quotes with it too.
pub use crate::surface::table_functions::sql_literal;
