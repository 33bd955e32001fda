//! `logsql export IN clip.mp4 --topic T`: one camera topic as an H.264 MP4
//! video. The export is the SQL a user could write,
//! `COPY (SELECT log_time, image, file FROM read_images(IN, T) ...) TO
//! 'clip.mp4' STORED AS MP4 OPTIONS (fps 'N', quality 'Q')`, run by the
//! engine's MP4 sink (`logsql::write::mp4`): streamed, written
//! whole or not at all.

use std::io::Write;
use std::time::Instant;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::UInt64Type;
use logsql_media::video::MAX_FPS;

use super::args::ExportArgs;
use super::error::{CliError, CliResult};
use super::export_files::refuse_other_flags;
use super::{App, quote};
use logsql::ops::export::time_where;
use logsql::ops::units::bytes;

/// Runs `logsql export IN OUT.mp4` and prints a one-line result to `out`.
pub fn run(
    app: &App,
    a: &ExportArgs,
    start: Option<i64>,
    end: Option<i64>,
    started: Instant,
    out: &mut dyn Write,
) -> CliResult {
    let [topic] = a.topics.as_slice() else {
        return Err(CliError::msg(
            "an .mp4 export is one camera topic's video: give exactly one --topic",
        ));
    };
    refuse_other_flags(a, &["--fps", "--quality"], "a video (an .mp4 OUTPUT)")?;
    let mut options = Vec::new();
    if let Some(fps) = a.fps {
        if !(fps.is_finite() && fps > 0.0 && fps <= MAX_FPS) {
            return Err(CliError::msg(format!(
                "--fps {fps}: a number of frames per second above 0, at most {MAX_FPS}"
            )));
        }
        options.push(format!("fps '{fps}'"));
    }
    if let Some(q) = a.quality {
        options.push(format!("quality '{q}'"));
    }
    let options = match options.is_empty() {
        true => String::new(),
        false => format!(" OPTIONS ({})", options.join(", ")),
    };
    let output = a.output.display().to_string();
    let sql = format!(
        "COPY (SELECT log_time, image, file FROM read_images({}, {}){}) TO {} STORED AS MP4{options}",
        quote(&a.input),
        quote(topic),
        time_where(start, end),
        quote(&output),
    );
    log::info!("export: {sql}");
    let batches = app
        .rt
        .block_on(async { logsql::sql(&app.ctx, &sql).await?.collect().await })?;
    let frames: u64 = batches
        .iter()
        .filter_map(|b| b.column(0).as_primitive_opt::<UInt64Type>())
        .flat_map(|c| c.iter().flatten())
        .sum();
    let size = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
    writeln!(
        out,
        "exported {frames} frame{} to {output} ({}) in {:.2} s",
        if frames == 1 { "" } else { "s" },
        bytes(size),
        started.elapsed().as_secs_f64()
    )
    .and_then(|_| out.flush())
    .map_err(|e| CliError::io("writing output", e))
}
