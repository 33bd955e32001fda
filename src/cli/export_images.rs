//! `logsql export IN OUT_DIR --topic T --as png|jpeg`: one image file per
//! message of a camera topic, named by its log time in nanoseconds
//! (`1700000000123456789.png`; a second message at the same time gets
//! `-1`, `-2`, ... appended).
//!
//! The images come from `read_images` and `image_encode` (so a JPEG exported
//! as JPEG, or a PNG as PNG, is written as recorded), streamed batch by
//! batch; each file is written to an exclusively created temporary file
//! beside its name and renamed over it when complete
//! ([`logsql::atomic_write`]). Under `--on-error warn` an image that does not
//! decode is skipped with a warning.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use futures::StreamExt;
use logsql::atomic_write::AtomicFile;

use super::args::ExportArgs;
use super::error::{CliError, CliResult};
use super::units::{bytes, rfc3339};
use super::{App, quote};

/// Runs the image export of `a` as `format` (`png` or `jpeg`).
pub fn run(
    app: &App,
    a: &ExportArgs,
    format: &str,
    start: Option<i64>,
    end: Option<i64>,
    out: &mut dyn Write,
) -> CliResult {
    let started = Instant::now();
    let [topic] = a.topics.as_slice() else {
        return Err(CliError::msg(format!(
            "--as {format} exports one camera topic: give exactly one --topic"
        )));
    };
    let refused = [
        (a.decode, "--decode"),
        (a.compression.is_some(), "--compression"),
        (a.chunk_size.is_some(), "--chunk-size"),
        (a.no_summary, "--no-summary"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(set, _)| *set) {
        return Err(CliError::msg(format!(
            "{flag} does not apply to --as {format} (image files)"
        )));
    }
    let sql = images_sql(&a.input, topic, format, start, end);
    log::debug!("export: {sql}");
    std::fs::create_dir_all(&a.output)
        .map_err(|e| CliError::io(a.output.display().to_string(), e))?;
    let df = app.rt.block_on(logsql::sql(&app.ctx, &sql))?;
    let mut stream = app.rt.block_on(df.execute_stream())?;
    let ext = if format == "jpeg" { "jpg" } else { "png" };
    let mut names: HashSet<PathBuf> = HashSet::new();
    let (mut written, mut skipped, mut size) = (0u64, 0u64, 0u64);
    while let Some(batch) = app.rt.block_on(stream.next()) {
        let batch = batch?;
        let times = batch.column(0).as_primitive::<Int64Type>();
        let images = batch.column(1).as_binary::<i32>();
        for i in 0..batch.num_rows() {
            if images.is_null(i) {
                skipped += 1;
                continue;
            }
            let path = unique_name(&a.output, times.value(i), ext, &mut names);
            write_file(&path, images.value(i))?;
            written += 1;
            size += images.value(i).len() as u64;
        }
    }
    let skipped = if skipped > 0 {
        format!(" ({skipped} images that did not decode skipped)")
    } else {
        String::new()
    };
    writeln!(
        out,
        "exported {written} images to {} ({}) in {:.2} s{skipped}",
        a.output.display(),
        bytes(size),
        started.elapsed().as_secs_f64()
    )
    .and_then(|_| out.flush())
    .map_err(|e| CliError::io("writing output", e))
}

/// The query behind an image export.
fn images_sql(
    input: &str,
    topic: &str,
    format: &str,
    start: Option<i64>,
    end: Option<i64>,
) -> String {
    let mut sql = format!(
        "SELECT CAST(log_time AS BIGINT) AS t, image_encode(image, {}) AS bytes FROM read_images({}, {})",
        quote(format),
        quote(input),
        quote(topic)
    );
    let mut filters = Vec::new();
    if let Some(s) = start {
        filters.push(format!("log_time >= {}", quote(&rfc3339(s))));
    }
    if let Some(e) = end {
        filters.push(format!("log_time < {}", quote(&rfc3339(e))));
    }
    if !filters.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&filters.join(" AND "));
    }
    sql
}

/// `DIR/<ns>.<ext>`, or `DIR/<ns>-<k>.<ext>` for the k-th other image of the
/// same time in this export.
fn unique_name(dir: &Path, ns: i64, ext: &str, taken: &mut HashSet<PathBuf>) -> PathBuf {
    let mut path = dir.join(format!("{ns}.{ext}"));
    let mut k = 1;
    while taken.contains(&path) {
        path = dir.join(format!("{ns}-{k}.{ext}"));
        k += 1;
    }
    taken.insert(path.clone());
    path
}

/// Writes `bytes` to `path` through a temporary file renamed over it.
fn write_file(path: &Path, bytes: &[u8]) -> CliResult {
    let io = |e| CliError::io(path.display().to_string(), e);
    let mut f = AtomicFile::create(path).map_err(io)?;
    f.file().write_all(bytes).map_err(io)?;
    f.commit().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_by_time_with_suffixes() {
        let mut taken = HashSet::new();
        let dir = Path::new("out");
        assert_eq!(unique_name(dir, 5, "png", &mut taken), dir.join("5.png"));
        assert_eq!(unique_name(dir, 5, "png", &mut taken), dir.join("5-1.png"));
        assert_eq!(unique_name(dir, 5, "png", &mut taken), dir.join("5-2.png"));
        assert_eq!(unique_name(dir, 6, "png", &mut taken), dir.join("6.png"));
    }

    #[test]
    fn sql_filters_time() {
        assert_eq!(
            images_sql("a.mcap", "/cam", "png", Some(1_000_000_000), None),
            "SELECT CAST(log_time AS BIGINT) AS t, image_encode(image, 'png') AS bytes FROM read_images('a.mcap', '/cam') WHERE log_time >= '1970-01-01T00:00:01Z'"
        );
    }
}
