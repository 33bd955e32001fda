//! PNG and SVG charts, drawn with plotters.
//!
//! Text is set in DejaVu Sans, embedded in the binary and registered with
//! plotters' ab_glyph renderer once: no system fonts or fontconfig are needed.
//! A PNG is drawn into memory and encoded with `png`; an SVG into a string.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::chart::{Chart, ChartError, Result, reduce};
use super::chart_axis::{XAxis, number};

/// How series are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Points joined by straight lines.
    Line,
    /// Points only.
    Scatter,
    /// Each value held until the next point (signals that change in steps).
    Step,
}

/// What an image looks like.
#[derive(Debug, Clone)]
pub struct Look {
    /// How series are drawn.
    pub kind: Kind,
    /// A caption above the chart.
    pub title: Option<String>,
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
}

/// The font family the chart's text is set in.
pub const FONT: &str = "sans-serif";

/// Series colours, in order (repeating past the last).
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Registers the embedded font with plotters (once per process).
pub fn register_font() -> Result {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        if plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_err()
        {
            result = Err(ChartError::msg(
                "the embedded DejaVu Sans font did not load",
            ));
        }
    });
    result
}

/// The image file types `plot` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageType {
    /// A PNG bitmap.
    Png,
    /// An SVG drawing.
    Svg,
}

/// The bytes of `chart` drawn as an image of `look.width` x `look.height` pixels.
pub fn draw(chart: &Chart, look: &Look, kind: ImageType) -> Result<Vec<u8>> {
    register_font()?;
    let size = (look.width, look.height);
    match kind {
        ImageType::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                paint(&root, chart, look)?;
                root.present().map_err(drawing)?;
            }
            Ok(svg.into_bytes())
        }
        ImageType::Png => {
            let mut rgb = vec![0u8; look.width as usize * look.height as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
                paint(&root, chart, look)?;
                root.present().map_err(drawing)?;
            }
            encode_png(&rgb, look.width, look.height)
        }
    }
}

/// An RGB buffer as PNG bytes.
pub fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let err = |e: png::EncodingError| ChartError::msg(format!("encoding the PNG: {e}"));
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(err)?;
    writer.write_image_data(rgb).map_err(err)?;
    writer.finish().map_err(err)?;
    Ok(bytes)
}

/// A plotters error as a chart error.
fn drawing<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> ChartError {
    ChartError::msg(format!("drawing the chart: {e}"))
}

/// Draws the chart on `root`: title, axes with labels, one series per colour, legend.
fn paint<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart, look: &Look) -> Result
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(drawing)?;
    let (xs, (ylo, yhi)) = chart.ranges()?;
    let axis = XAxis::new(&chart.x_name, chart.x_kind, xs);
    let (x0, x1) = widen(axis.place(xs.0), axis.place(xs.1));
    let (y0, y1) = widen(ylo, yhi);
    let y_span = y1 - y0;
    let mut builder = ChartBuilder::on(root);
    builder
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70);
    if let Some(title) = &look.title {
        builder.caption(title, (FONT, 22));
    }
    let mut ctx = builder
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(drawing)?;
    let x_label = |v: &f64| axis.label(*v);
    let y_label = |v: &f64| number(*v, y_span);
    let y_title = if chart.series.len() == 1 {
        chart.series[0].name.clone()
    } else {
        String::new()
    };
    ctx.configure_mesh()
        .x_labels(8)
        .y_labels(8)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .x_desc(axis.title.clone())
        .y_desc(y_title)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()
        .map_err(drawing)?;

    let pixels = (look.width as usize).max(100);
    for (i, series) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points: Vec<(f64, f64)> = reduce(series.points.clone(), pixels)
            .into_iter()
            .map(|(x, y)| (axis.place(x), y))
            .collect();
        let annotation = match look.kind {
            Kind::Line => ctx
                .draw_series(LineSeries::new(points, color.stroke_width(1)))
                .map_err(drawing)?,
            Kind::Step => ctx
                .draw_series(LineSeries::new(steps(&points), color.stroke_width(1)))
                .map_err(drawing)?,
            Kind::Scatter => ctx
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 2, color.filled())),
                )
                .map_err(drawing)?,
        };
        annotation.label(series.name.clone()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
        });
    }
    if chart.series.len() > 1 {
        ctx.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(drawing)?;
    }
    Ok(())
}

/// A range with room around it (and some width when it is a single value).
fn widen(lo: f64, hi: f64) -> (f64, f64) {
    if hi > lo {
        let pad = (hi - lo) * 0.03;
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
        (lo - pad, hi + pad)
    }
}

/// The corners of a step line through x-sorted `points`: each value holds
/// until the next point's x.
pub fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, p) in points.iter().enumerate() {
        if i > 0 {
            out.push((p.0, points[i - 1].1));
        }
        out.push(*p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_hold_each_value_until_the_next_x() {
        assert_eq!(
            steps(&[(0.0, 1.0), (2.0, 5.0), (3.0, 4.0)]),
            [(0.0, 1.0), (2.0, 1.0), (2.0, 5.0), (3.0, 5.0), (3.0, 4.0)]
        );
    }

    #[test]
    fn single_values_get_a_range() {
        assert_eq!(widen(0.0, 0.0), (-1.0, 1.0));
        assert_eq!(widen(10.0, 10.0), (9.5, 10.5));
    }
}
