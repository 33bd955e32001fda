//! `logsql export IN OUT_DIR --topic T --as png|jpeg|pcd|ply`: one file per
//! message of a camera or point-cloud topic, named by its log time
//! ([`logsql::ops::message_files`]), and what the exports share: the export
//! flags a kind of export does not read, refused, and a file where its output
//! directory should be.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use logsql::ops::message_files::{MessageFile, write_message_files};
use logsql::ops::units::bytes;
use logsql_media::points::CloudFormat;

use super::App;
use super::args::{ExportArgs, FilesFormat};
use super::error::{CliError, CliResult};

/// Runs `logsql export --as FORMAT` and prints a one-line result to `out`.
pub fn run(
    app: &App,
    a: &ExportArgs,
    format: FilesFormat,
    window: (Option<i64>, Option<i64>),
    started: Instant,
    out: &mut dyn Write,
) -> CliResult {
    let flag = format!("--as {}", format.name());
    let (kind, what, one_topic) = match format {
        FilesFormat::Png => (MessageFile::Png, "image files", "exports one camera topic"),
        FilesFormat::Jpeg => (MessageFile::Jpeg, "image files", "exports one camera topic"),
        FilesFormat::Pcd => (
            MessageFile::Cloud(CloudFormat::Pcd),
            "one file per message",
            "writes one topic's messages",
        ),
        FilesFormat::Ply => (
            MessageFile::Cloud(CloudFormat::Ply),
            "one file per message",
            "writes one topic's messages",
        ),
    };
    let [topic] = a.topics.as_slice() else {
        return Err(CliError::msg(format!(
            "{flag} {one_topic}: give exactly one --topic"
        )));
    };
    refuse_other_flags(a, &["--as"], &format!("{flag} ({what})"))?;
    refuse_file_output(&a.output, &flag)?;
    let written = app.rt.block_on(write_message_files(
        &app.ctx, &a.input, topic, kind, window, &a.output,
    ))?;
    let (dir, size, n) = (a.output.display(), bytes(written.bytes), written.skipped);
    let secs = started.elapsed().as_secs_f64();
    let line = match kind {
        MessageFile::Cloud(_) => {
            let skipped = match n {
                0 => String::new(),
                n => format!(", {n} unreadable clouds skipped"),
            };
            let (files, points) = (written.files, written.points);
            format!(
                "exported {files} clouds ({points} points) to {dir} ({size}){skipped} in {secs:.2} s"
            )
        }
        _ => {
            let skipped = match n {
                0 => String::new(),
                n => format!(" ({n} images that did not decode skipped)"),
            };
            let files = written.files;
            format!("exported {files} images to {dir} ({size}) in {secs:.2} s{skipped}")
        }
    };
    writeln!(out, "{line}")
        .and_then(|_| out.flush())
        .map_err(|e| CliError::io("writing output", e))
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

/// Refuses a file where `flag`'s output directory `dir` should be, naming
/// the flag (the export creates the directory).
fn refuse_file_output(dir: &Path, flag: &str) -> CliResult {
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::msg(format!(
            "{}: {flag} writes one file per message into a directory, and this is a file",
            dir.display()
        )));
    }
    Ok(())
}
