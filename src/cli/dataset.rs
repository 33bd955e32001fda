//! `logsql dataset SPEC.toml -o OUT_DIR [--print-sql] [--skip-bad-episodes]`:
//! a LeRobot dataset from a small spec instead of SQL.
//!
//! The spec and its query are [`logsql::ops::dataset_spec`]'s (`--print-sql`
//! prints the `COPY`); this module runs it through the LeRobot writer with a
//! progress bar of episodes and frames, and names a failing `split_when` or
//! feature by the spec's words.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::execute_stream;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use logsql::ops::dataset_spec::Spec;

use super::args::DatasetArgs;
use super::error::{CliError, CliResult, render};
use super::{App, logger};
use logsql::write::frame_batches::under_frames;
use logsql::write::lerobot::{LeRobotOptions, LeRobotOptionsExt as _, write_dataset};

/// `e`, a failure to plan `spec`'s query, named as the fault of
/// `[episodes] split_when` when the query plans without that condition
/// (DataFusion's message alone points into the generated SQL).
async fn blame_split_when(
    spec: &Spec,
    ctx: &datafusion::prelude::SessionContext,
    path: &Path,
    e: DataFusionError,
) -> DataFusionError {
    let Some(condition) = spec.split_when() else {
        return e;
    };
    let without = spec.without_split_when();
    if logsql::sql(ctx, &without.select()).await.is_err() {
        return e;
    }
    DataFusionError::External(
        format!(
            "{}: [episodes] split_when = {condition:?} is not a condition on a frame's columns \
             (the features and cameras by their keys, task, log_time and file): {}",
            path.display(),
            render(&e)
        )
        .into(),
    )
}

/// Runs `logsql dataset`.
pub fn run(app: &App, a: &DatasetArgs, out: &mut dyn Write) -> CliResult {
    let text = std::fs::read_to_string(&a.spec)
        .map_err(|e| CliError::io(a.spec.display().to_string(), e))?;
    let spec = Spec::parse(&a.spec, &text).map_err(|e| CliError::msg(e.to_string()))?;
    let target = a.output.display().to_string();
    if a.print_sql {
        writeln!(out, "{};", spec.copy_sql(&target, a.skip_bad_episodes))
            .map_err(|e| CliError::io("stdout", e))?;
        return Ok(());
    }
    let map = spec.options(a.skip_bad_episodes).into_iter().collect();
    let options = LeRobotOptions::from_map(&map)?;
    // The grid's frames: the bar's length (leading frames without every
    // feature are dropped, so the count ends a little short of it).
    let count_sql = spec.count_sql();
    let batches = app
        .rt
        .block_on(async { logsql::sql(&app.ctx, &count_sql).await?.collect().await })?;
    let total = batches
        .first()
        .filter(|b| b.num_rows() > 0)
        .map(|b| b.column(0).as_primitive::<Int64Type>().value(0) as u64);
    let bar = progress_bar(total);
    let select = spec.select();
    log::info!("dataset: {select}");
    let written = app.rt.block_on(async {
        // Batches of a few frames, as under `COPY ... STORED AS LEROBOT`.
        let frame = match logsql::sql(&app.ctx, &select).await {
            Ok(frame) => frame,
            Err(e) => return Err(blame_split_when(&spec, &app.ctx, &a.spec, e).await),
        };
        let task = Arc::new(frame.task_ctx());
        let plan = under_frames(
            frame.create_physical_plan().await?,
            task.session_config().batch_size(),
        )?;
        let stream = execute_stream(plan, task)?;
        let progress = |episodes: usize, frames: u64| {
            if let Some(b) = &bar {
                b.set_position(frames);
                b.set_message(format!("{episodes} episodes"));
            }
        };
        write_dataset(stream, &a.output, options, &progress, interrupted()).await
    });
    if let Some(b) = bar {
        logger::set_progress(None);
        b.finish_and_clear();
    }
    let written = written.map_err(|e| CliError::msg(spec.with_topics(&render(&e))))?;
    let mut say = |line: String| writeln!(out, "{line}").map_err(|e| CliError::io("stdout", e));
    let episodes = |n: usize| match n {
        1 => "1 episode".to_string(),
        n => format!("{n} episodes"),
    };
    let frames = match written.frames {
        1 => "1 frame".to_string(),
        n => format!("{n} frames"),
    };
    say(format!(
        "{target}: {frames} written ({})",
        episodes(written.episodes)
    ))?;
    if !written.skipped.is_empty() {
        say(format!("{} skipped:", episodes(written.skipped.len())))?;
        // Each reason names the episode and its recording.
        for s in &written.skipped {
            say(format!("  {}", spec.with_topics(&s.reason)))?;
        }
    }
    Ok(())
}

/// Completes at Ctrl-C (SIGINT) or SIGTERM: the export then stops and
/// leaves nothing behind.
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// A bar of frames on stderr when it is a terminal.
fn progress_bar(total: Option<u64>) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    let template =
        "{bar:40.cyan/blue} {human_pos}/{human_len} frames, {msg} ({per_sec}, eta {eta})";
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    logger::set_progress(Some(bar.clone()));
    Some(bar)
}
