//! `logsql export IN OUT_DIR --topic T --as pcd|ply`: one point-cloud file
//! per message of a point-cloud topic, named by its log_time.
//!
//! The clouds come from `read_points` (time pushdown as for any export);
//! each is written by [`logsql_media::points::write_cloud`] into an
//! exclusively created temporary file in OUT_DIR, renamed to
//! `<log_time ns>.<ext>` once complete ([`logsql::AtomicFile`]): a failed
//! write leaves no partial file (the files written before it stay). Two messages with the same log_time
//! (files of a directory or glob) get `<log_time>_2.<ext>`, `_3`, ...; a
//! cloud that could not be read (NULL under `--on-error warn`) is skipped
//! and counted.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use futures::StreamExt;

use logsql::AtomicFile;
use logsql_media::points::{CloudFormat, write_cloud};

use super::args::{ExportArgs, FilesFormat};
use super::error::{CliError, CliResult};
use super::export_files::{FileNames, output_dir, refuse_other_flags, topic_sql};
use logsql::ops::units::bytes;

/// Runs `logsql export --as pcd|ply` and prints a one-line result to `out`.
pub fn run(
    app: &super::App,
    a: &ExportArgs,
    format: FilesFormat,
    start: Option<i64>,
    end: Option<i64>,
    started: Instant,
    out: &mut dyn Write,
) -> CliResult {
    let format = match format {
        FilesFormat::Pcd => CloudFormat::Pcd,
        FilesFormat::Ply => CloudFormat::Ply,
        FilesFormat::Png | FilesFormat::Jpeg => {
            return Err(CliError::msg(
                "--as png|jpeg writes images (export_images), not point clouds",
            ));
        }
    };
    let flag = format!("--as {}", format.extension());
    let [topic] = a.topics.as_slice() else {
        return Err(CliError::msg(format!(
            "{flag} writes one topic's messages: give exactly one --topic"
        )));
    };
    refuse_other_flags(a, &["--as"], &format!("{flag} (one file per message)"))?;
    let dir = &a.output;
    output_dir(dir, &flag)?;
    let sql = topic_sql("points", "read_points", &a.input, topic, start, end);
    log::debug!("export: {sql}");
    let df = app.rt.block_on(logsql::sql(&app.ctx, &sql))?;
    let mut stream = app.rt.block_on(df.execute_stream())?;
    let (mut files, mut points, mut skipped, mut size) = (0u64, 0u64, 0u64, 0u64);
    let mut names = FileNames::default();
    while let Some(batch) = app.rt.block_on(stream.next()) {
        let batch = batch?;
        let times = batch.column(0).as_primitive::<Int64Type>();
        let clouds = batch.column(1).as_list::<i32>();
        for i in 0..batch.num_rows() {
            if clouds.is_null(i) {
                skipped += 1;
                continue;
            }
            let cloud = clouds.value(i);
            let path = names.next(dir, times.value(i), format.extension());
            size += write_one(&path, cloud.as_struct(), format)?;
            files += 1;
            points += cloud.len() as u64;
        }
    }
    let skipped = if skipped > 0 {
        format!(", {skipped} unreadable clouds skipped")
    } else {
        String::new()
    };
    writeln!(
        out,
        "exported {files} clouds ({points} points) to {} ({}){skipped} in {:.2} s",
        dir.display(),
        bytes(size),
        started.elapsed().as_secs_f64()
    )
    .and_then(|_| out.flush())
    .map_err(|e| CliError::io("writing output", e))
}

/// Writes one cloud to `path` atomically; returns the bytes written.
fn write_one(
    path: &Path,
    points: &datafusion::arrow::array::StructArray,
    format: CloudFormat,
) -> CliResult<u64> {
    let name = path.display().to_string();
    let mut target = AtomicFile::create(path).map_err(|e| CliError::io(name.clone(), e))?;
    {
        let mut w = BufWriter::new(target.file());
        write_cloud(&mut w, points, format).map_err(|e| CliError::msg(format!("{name}: {e}")))?;
        w.flush().map_err(|e| CliError::io(name.clone(), e))?;
    }
    let size = target.file().metadata().map(|m| m.len()).unwrap_or(0);
    target.commit().map_err(|e| CliError::io(name, e))?;
    Ok(size)
}
