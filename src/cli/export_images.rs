//! `logsql export IN OUT_DIR --topic T --as png|jpeg`: one image file per
//! message of a camera topic, named by its log time in nanoseconds
//! (`1700000000123456789.png`; a second message at the same time gets
//! `-1`, `-2`, ... appended).
//!
//! The images come from `read_images` and `image_encode` (so a JPEG exported
//! as JPEG, or a PNG as PNG, is written as recorded), streamed batch by
//! batch; each file is written to an exclusively created temporary file
//! beside its name and renamed over it when complete
//! ([`logsql::AtomicFile`]). Under `--on-error warn` an image that does not
//! decode is skipped with a warning.

use std::io::Write;
use std::time::Instant;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use futures::StreamExt;

use super::args::ExportArgs;
use super::error::{CliError, CliResult};
use super::export_files::{FileNames, output_dir, refuse_other_flags, topic_sql};
use super::{App, quote};
use logsql::ops::units::bytes;

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
    refuse_other_flags(a, &["--as"], &format!("--as {format} (image files)"))?;
    let column = format!("image_encode(image, {}) AS bytes", quote(format));
    let sql = topic_sql(&column, "read_images", &a.input, topic, start, end);
    log::debug!("export: {sql}");
    output_dir(&a.output, &format!("--as {format}"))?;
    let df = app.rt.block_on(logsql::sql(&app.ctx, &sql))?;
    let mut stream = app.rt.block_on(df.execute_stream())?;
    let ext = if format == "jpeg" { "jpg" } else { "png" };
    let mut names = FileNames::default();
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
            let path = names.next(&a.output, times.value(i), ext);
            super::write_atomically(&path, images.value(i))?;
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
