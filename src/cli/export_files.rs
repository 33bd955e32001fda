//! What the exports share (their `log_time` bounds are
//! [`logsql::ops::export::time_where`]'s): for the per-message file exports (`--as png|jpeg` in
//! [`super::export_images`], `--as pcd|ply` in [`super::export_points`], the
//! video in [`super::export_video`]) the query of one topic's messages in a
//! time window, the output directory, and one file name per message.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::args::ExportArgs;
use super::error::{CliError, CliResult};
use super::quote;
use logsql::ops::export::time_where;

/// `SELECT CAST(log_time AS BIGINT) AS t, <column> FROM <function>(input,
/// topic)` with `--start` / `--end` as `log_time` bounds (pushed to the scan).
pub fn topic_sql(
    column: &str,
    function: &str,
    input: &str,
    topic: &str,
    start: Option<i64>,
    end: Option<i64>,
) -> String {
    format!(
        "SELECT CAST(log_time AS BIGINT) AS t, {column} FROM {function}({}, {}){}",
        quote(input),
        quote(topic),
        time_where(start, end)
    )
}

/// Refuses the export options set in `a` that `what` (an export of its own
/// kind, e.g. `--as png (image files)`) does not read: all but `accepted`.
pub fn refuse_other_flags(a: &ExportArgs, accepted: &[&str], what: &str) -> CliResult {
    let set = [
        (a.decode, "--decode"),
        (a.flatten, "--flatten"),
        (a.compression.is_some(), "--compression"),
        (a.chunk_size.is_some(), "--chunk-size"),
        (a.no_summary, "--no-summary"),
        (a.as_files.is_some(), "--as"),
        (a.fps.is_some(), "--fps"),
        (a.quality.is_some(), "--quality"),
    ];
    match set
        .iter()
        .find(|(on, flag)| *on && !accepted.contains(flag))
    {
        Some((_, flag)) => Err(CliError::msg(format!("{flag} does not apply to {what}"))),
        None => Ok(()),
    }
}

/// Creates the output directory `dir` of `flag` (refusing a file there).
pub fn output_dir(dir: &Path, flag: &str) -> CliResult {
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::msg(format!(
            "{}: {flag} writes one file per message into a directory, and this is a file",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| CliError::io(dir.display().to_string(), e))
}

/// One file name per message: `DIR/<log_time ns>.<ext>`, and
/// `DIR/<ns>-1.<ext>`, `-2`, ... for the other messages of the same time.
#[derive(Debug, Default)]
pub struct FileNames {
    taken: HashSet<PathBuf>,
}

impl FileNames {
    /// The next message's path.
    pub fn next(&mut self, dir: &Path, ns: i64, ext: &str) -> PathBuf {
        let mut path = dir.join(format!("{ns}.{ext}"));
        let mut k = 1;
        while self.taken.contains(&path) {
            path = dir.join(format!("{ns}-{k}.{ext}"));
            k += 1;
        }
        self.taken.insert(path.clone());
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_log_times_made_unique() {
        let dir = Path::new("/out");
        let mut names = FileNames::default();
        assert_eq!(names.next(dir, 5, "png"), dir.join("5.png"));
        assert_eq!(names.next(dir, 5, "png"), dir.join("5-1.png"));
        assert_eq!(names.next(dir, 5, "png"), dir.join("5-2.png"));
        assert_eq!(names.next(dir, 6, "pcd"), dir.join("6.pcd"));
    }

    #[test]
    fn the_query_filters_time() {
        assert_eq!(
            topic_sql(
                "points",
                "read_points",
                "a's.bag",
                "/p",
                Some(1_000_000_000),
                None
            ),
            "SELECT CAST(log_time AS BIGINT) AS t, points FROM read_points('a''s.bag', '/p') \
             WHERE log_time >= '1970-01-01T00:00:01Z'"
        );
    }
}
