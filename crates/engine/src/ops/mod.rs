//! Whole operations the CLI and the Python bindings share, one per file, each
//! giving data for its callers to render (text, JSON, a Python dict):
//!
//! - [`info`]: the facts of a file's summary (`logsql info`, `logsql.info()`),
//!   with [`timeline`], its topics' timelines and gaps;
//! - [`doctor`]: the files a health check takes (a directory's log files,
//!   walked without following a link into a loop), and each file's check;
//! - [`export`]: `logsql export`'s queries and its Parquet output;
//! - [`dataset_spec`]: the spec of `logsql dataset`, parsed and compiled to
//!   the SQL of its LeRobot export;
//! - [`recover_windows`]: the time windows `logsql recover` sorts an
//!   unsorted recording in, each within a memory budget;
//! - [`units`]: times, durations and sizes as the CLI shows them and as
//!   users type them.

pub mod dataset_spec;
pub mod doctor;
pub mod export;
pub mod info;
pub mod recover_windows;
pub mod timeline;
pub mod units;

/// `s` as a SQL string literal (`'it''s'`).
pub(crate) fn sql_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
