//! Text charts for the terminal: one braille panel per series (textplots), each
//! headed by the series' name and value range, all on the same x axis.
//!
//! Separate panels rather than one shared frame, so series of different scales
//! stay readable and a chart needs no colour to tell its lines apart.

use textplots::{Chart as TextChart, LabelBuilder, LabelFormat, Plot, Shape};

use super::Kind;
use crate::cli::error::CliResult;
use logsql::ops::chart::{Chart, reduce};
use logsql::ops::chart_axis::{XAxis, number};
use logsql::ops::chart_image::steps;

/// Narrowest text chart, in characters (textplots needs 32 dots, 16 characters).
const MIN_COLUMNS: u32 = 40;

/// Braille dot columns of the drawing area of a chart `columns` characters wide.
pub fn dot_columns(columns: u32) -> u32 {
    (columns.max(MIN_COLUMNS) - 12) * 2
}

/// `chart` as text `columns` characters wide, each series `rows` lines high.
pub fn draw(chart: &Chart, kind: Kind, columns: u32, rows: u32) -> CliResult<String> {
    let (xs, _) = chart.ranges()?;
    let axis = XAxis::new(&chart.x_name, chart.x_kind, xs);
    // Braille: 2 dots per character across, 4 down; room for the y labels.
    let width = dot_columns(columns);
    let height = rows.max(3) * 4;
    let (x0, x1) = (
        axis.place(xs.0),
        axis.place(xs.1).max(axis.place(xs.0) + 1e-9),
    );
    let mut text = String::new();
    for series in &chart.series {
        let points: Vec<(f32, f32)> = reduce(series.points.clone(), width as usize)
            .into_iter()
            .map(|(x, y)| (axis.place(x) as f32, y as f32))
            .collect();
        let (lo, hi) = points
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p.1), hi.max(p.1))
            });
        if points.is_empty() {
            text.push_str(&format!("{}: no values\n\n", series.name));
            continue;
        }
        let span = f64::from(hi - lo);
        text.push_str(&format!(
            "{}  ({} values, {} .. {})\n",
            series.name,
            series.values,
            number(f64::from(lo), span),
            number(f64::from(hi), span)
        ));
        let stepped;
        let shape = match kind {
            Kind::Line => Shape::Lines(&points),
            Kind::Scatter => Shape::Points(&points),
            Kind::Step => {
                stepped = steps(
                    &points
                        .iter()
                        .map(|p| (f64::from(p.0), f64::from(p.1)))
                        .collect::<Vec<_>>(),
                )
                .into_iter()
                .map(|(x, y)| (x as f32, y as f32))
                .collect::<Vec<_>>();
                Shape::Lines(&stepped)
            }
        };
        let (y0, y1) = if hi > lo {
            (lo, hi)
        } else {
            (lo - 1.0, hi + 1.0)
        };
        let label_axis = axis.clone();
        let mut frame = TextChart::new_with_y_range(width, height, x0 as f32, x1 as f32, y0, y1);
        let frame = frame
            .x_label_format(LabelFormat::Custom(Box::new(move |v| {
                label_axis.label(f64::from(v))
            })))
            .y_label_format(LabelFormat::Custom(Box::new(move |v| {
                number(f64::from(v), span)
            })))
            .lineplot(&shape);
        frame.axis();
        frame.figures();
        text.push_str(&frame.to_string());
        text.push('\n');
    }
    text.push_str(&format!("x: {}\n", axis.title));
    Ok(text)
}
