//! One file per message of a topic: a camera's images as PNG or JPEG files
//! (`read_images` and `image_encode`, so a JPEG exported as JPEG, or a PNG
//! as PNG, is written as recorded), a point-cloud topic's clouds as PCD or
//! PLY files (`read_points` and [`logsql_media::points::write_cloud`]),
//! each named by its log time in nanoseconds (`1700000000123456789.png`; a
//! second message at the same time gets `-1`, `-2`, ... appended).
//!
//! The messages stream batch by batch from one query with the time window
//! pushed down to the scan; each file is written to an exclusively created
//! temporary file beside its name and renamed over it when complete
//! ([`crate::AtomicFile`]): a failed write leaves no partial file (the files
//! written before it stay). A message that could not be read (NULL under
//! `logsql.on_error = 'warn'`) is skipped and counted.

use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use logsql_media::points::{CloudFormat, write_cloud};

use super::export::time_where;
use super::sql_literal;
use crate::atomic_write::AtomicFile;

/// What each message becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFile {
    /// A PNG image (lossless).
    Png,
    /// A JPEG image.
    Jpeg,
    /// A point cloud in PCD or PLY.
    Cloud(CloudFormat),
}

impl MessageFile {
    /// The files' name extension.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Cloud(format) => format.extension(),
        }
    }

    /// The query of `topic`'s messages of `input` in `[start, end)`: the log
    /// time (`t`) and the file's content (`bytes`) or cloud (`points`).
    pub fn sql(self, input: &str, topic: &str, start: Option<i64>, end: Option<i64>) -> String {
        let (column, function) = match self {
            Self::Png => ("image_encode(image, 'png') AS bytes", "read_images"),
            Self::Jpeg => ("image_encode(image, 'jpeg') AS bytes", "read_images"),
            Self::Cloud(_) => ("points", "read_points"),
        };
        topic_sql(column, function, input, topic, start, end)
    }
}

/// `SELECT CAST(log_time AS BIGINT) AS t, <column> FROM <function>(input,
/// topic)` with `start` / `end` as `log_time` bounds (pushed to the scan).
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
        sql_literal(input),
        sql_literal(topic),
        time_where(start, end)
    )
}

/// What [`write_message_files`] wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FilesWritten {
    /// Files written.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Points of the clouds written (0 for images).
    pub points: u64,
    /// Messages skipped because they could not be read.
    pub skipped: u64,
}

/// Writes each of `topic`'s messages of `input` in `[start, end)` as one
/// `kind` file in `dir` (created when missing). Files are written on the
/// calling task, as the messages arrive.
pub async fn write_message_files(
    ctx: &SessionContext,
    input: &str,
    topic: &str,
    kind: MessageFile,
    (start, end): (Option<i64>, Option<i64>),
    dir: &Path,
) -> Result<FilesWritten> {
    let io = |path: &Path| {
        let name = path.display().to_string();
        move |e: std::io::Error| DataFusionError::External(format!("{name}: {e}").into())
    };
    if dir.exists() && !dir.is_dir() {
        return Err(DataFusionError::Plan(format!(
            "{}: one file per message goes into a directory, and this is a file",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let sql = kind.sql(input, topic, start, end);
    log::info!("export: {sql}");
    let mut stream = crate::sql(ctx, &sql).await?.execute_stream().await?;
    let mut names = FileNames::default();
    let mut written = FilesWritten::default();
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let times = batch.column(0).as_primitive::<Int64Type>();
        let values = batch.column(1);
        for i in 0..batch.num_rows() {
            if values.is_null(i) {
                written.skipped += 1;
                continue;
            }
            let path = names.next(dir, times.value(i), kind.extension());
            let mut file = AtomicFile::create(&path).map_err(io(&path))?;
            let mut w = BufWriter::new(file.file());
            match kind {
                MessageFile::Png | MessageFile::Jpeg => {
                    w.write_all(values.as_binary::<i32>().value(i))
                        .map_err(io(&path))?;
                }
                MessageFile::Cloud(format) => {
                    let cloud = values.as_list::<i32>().value(i);
                    write_cloud(&mut w, cloud.as_struct(), format).map_err(|e| {
                        DataFusionError::Execution(format!("{}: {e}", path.display()))
                    })?;
                    written.points += cloud.len() as u64;
                }
            }
            w.flush().map_err(io(&path))?;
            drop(w);
            written.bytes += file.file().metadata().map(|m| m.len()).unwrap_or(0);
            file.commit().map_err(io(&path))?;
            written.files += 1;
        }
    }
    Ok(written)
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
            MessageFile::Cloud(CloudFormat::Pcd).sql("a's.bag", "/p", Some(1_000_000_000), None),
            "SELECT CAST(log_time AS BIGINT) AS t, points FROM read_points('a''s.bag', '/p') \
             WHERE log_time >= '1970-01-01T00:00:01Z'"
        );
        assert_eq!(
            MessageFile::Jpeg.sql("x.mcap", "/cam", None, None),
            "SELECT CAST(log_time AS BIGINT) AS t, image_encode(image, 'jpeg') AS bytes \
             FROM read_images('x.mcap', '/cam')"
        );
    }
}
