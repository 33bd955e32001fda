//! `logsql plot`: a query's result drawn as a time-series chart.
//!
//! The first column is the x axis (timestamps drawn as UTC times), every other
//! numeric column a series (struct columns give one series per numeric field,
//! `linear_acceleration.x`). With `-o FILE.png` / `.svg` the chart is an image
//! ([`logsql::ops::chart_image`]); without, a text chart on stdout ([`text`]).
//!
//! Results stream through [`logsql::ops::chart::Chart`], which keeps memory bounded by
//! reducing each series to the first, last, lowest and highest point of fine
//! x buckets; drawing then keeps those four per pixel column, so spikes stay
//! visible however long the result. What was drawn is said on stderr.

pub mod text;

use std::io::{IsTerminal, Write};
use std::path::Path;

use futures::StreamExt;

use super::App;
use super::args::{Kind, PlotArgs};
use super::error::{CliError, CliResult};
use logsql::ops::chart::Chart;
use logsql::ops::chart_image::{self as image, ImageType, Look};
use logsql::ops::statements;

/// The chart library's kind of a `--kind`.
pub fn series_kind(kind: Kind) -> image::Kind {
    match kind {
        Kind::Line => image::Kind::Line,
        Kind::Scatter => image::Kind::Scatter,
        Kind::Step => image::Kind::Step,
    }
}

/// Runs `logsql plot`: writes the image (replacing it) or prints a text chart to
/// `out`, and says on stderr what was drawn unless `quiet`.
pub fn run(app: &App, a: &PlotArgs, quiet: bool, out: &mut dyn Write) -> CliResult {
    let image = a.output.as_deref().map(image_type).transpose()?;
    let statements = statements::script(&a.sql);
    let [sql] = statements.as_slice() else {
        return Err(CliError::msg(format!(
            "plot draws the result of one query; got {} statements",
            statements.len()
        )));
    };
    let chart = collect(app, sql)?;
    match (&a.output, image) {
        (Some(path), Some(kind)) => {
            let look = Look {
                kind: series_kind(a.kind),
                title: a.title.clone(),
                width: a.width.unwrap_or(1200).clamp(200, 16_000),
                height: a.height.unwrap_or(600).clamp(150, 16_000),
            };
            let bytes = image::draw(&chart, &look, kind)?;
            super::write_atomically(path, &bytes)?;
            if !quiet {
                let target = path.display().to_string();
                eprintln!("{}", summary(&chart, &target, look.width, "pixel"));
            }
        }
        _ => {
            let (rows, columns) = terminal_size();
            let columns = a.width.unwrap_or(columns);
            let per_series = a.height.unwrap_or_else(|| {
                let n = chart.series.len() as u32;
                (rows.saturating_sub(2 + 3 * n) / n.max(1)).clamp(4, 16)
            });
            if let Some(title) = &a.title {
                writeln!(out, "{title}").map_err(|e| CliError::io("writing output", e))?;
            }
            let chart_text = text::draw(&chart, a.kind, columns, per_series)?;
            out.write_all(chart_text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| CliError::io("writing output", e))?;
            if !quiet {
                eprintln!(
                    "{}",
                    summary(&chart, "text", text::dot_columns(columns), "dot")
                );
            }
        }
    }
    Ok(())
}

/// Runs `sql` and streams its batches into a [`Chart`].
fn collect(app: &App, sql: &str) -> CliResult<Chart> {
    app.rt.block_on(async {
        let df = logsql::sql(&app.ctx, sql).await?;
        let mut stream = df.execute_stream().await?;
        let mut chart = Chart::new(stream.schema().as_ref())?;
        while let Some(batch) = stream.next().await {
            chart.push(&batch?)?;
        }
        Ok::<_, CliError>(chart)
    })
}

/// The image type of an output path, from its extension.
fn image_type(path: &Path) -> CliResult<ImageType> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("png") => Ok(ImageType::Png),
        Some("svg") => Ok(ImageType::Svg),
        _ => Err(CliError::msg(format!(
            "plot writes .png or .svg images, not '{}' (without -o it draws a text chart)",
            path.display()
        ))),
    }
}

/// The terminal's (rows, columns), or (40, 100) when stdout is not a terminal.
fn terminal_size() -> (u32, u32) {
    if std::io::stdout().is_terminal()
        && let Some((rows, columns)) = console::Term::stdout().size_checked()
    {
        return (u32::from(rows), u32::from(columns));
    }
    (40, 100)
}

/// What was drawn: `plotted 2 series from 2000 rows (4000 values; each series
/// at most 4 points per pixel column of 1200: ...) to imu.png`.
fn summary(chart: &Chart, target: &str, columns: u32, unit: &str) -> String {
    let values: u64 = chart.series.iter().map(|s| s.values).sum();
    let mut text = format!(
        "plotted {} series from {} rows ({} values; each series at most 4 points per \
         {unit} column of {columns}: first, last, lowest, highest) to {target}",
        chart.series.len(),
        chart.rows,
        values,
    );
    if !chart.skipped.is_empty() {
        let names: Vec<String> = chart
            .skipped
            .iter()
            .map(|(n, t)| format!("{n} ({t})"))
            .collect();
        text.push_str(&format!("; not numeric, not drawn: {}", names.join(", ")));
    }
    text
}
