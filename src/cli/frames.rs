//! `logsql frames IN --topic T -o sheet.png [--count N] [--size S]`: a
//! contact sheet of a camera topic, N frames spread evenly over the topic's
//! time span, each labelled with its log time: a glance at what a camera saw.
//!
//! The span, the times and each frame's query (the first image at or after
//! its time, `LIMIT 1`) are [`logsql::ops::frames`]'s. The thumbnails are `image_thumbnail`'s PNGs; the sheet is
//! drawn in memory (the labels with plotters and the embedded font) and
//! written to a temporary file renamed over the output.

use std::io::Write;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::record_batch::RecordBatch;
use plotters::prelude::*;

use super::App;
use super::args::FramesArgs;
use super::error::{CliError, CliResult};
use logsql::ops::frames::{span_sql, spread, thumbnail_sql};
use logsql::ops::units::rfc3339;

/// Pixels between and around the frames.
const PAD: u32 = 8;
/// Height of the band under each frame that holds its label.
const LABEL: u32 = 18;
/// Width of a label (`2026-05-01T10:00:00.123Z` in 12-pixel DejaVu Sans).
const LABEL_WIDTH: u32 = 176;
/// Background and label colours.
const BACKGROUND: [u8; 3] = [32, 32, 32];

/// One frame on the sheet: its log time and its pixels.
struct Frame {
    time: i64,
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

/// Runs `logsql frames` and prints a one-line result to `out`.
pub fn run(app: &App, a: &FramesArgs, out: &mut dyn Write) -> CliResult {
    let batches = collect(app, &span_sql(&a.input, &a.topic))?;
    let bounds = batches.first().filter(|b| b.num_rows() > 0).and_then(|b| {
        let first = b.column(0).as_primitive::<Int64Type>();
        let last = b.column(1).as_primitive::<Int64Type>();
        (first.is_valid(0) && last.is_valid(0)).then(|| (first.value(0), last.value(0)))
    });
    let Some((first, last)) = bounds else {
        return Err(CliError::msg(format!(
            "{}: no messages of topic {} (see `logsql topics`)",
            a.input, a.topic
        )));
    };
    let mut frames: Vec<Frame> = Vec::new();
    for at in spread(first, last, a.count) {
        if frames.last().is_some_and(|f| f.time >= at) {
            continue;
        }
        let sql = thumbnail_sql(&a.input, &a.topic, a.size, at);
        for batch in collect(app, &sql)? {
            let times = batch.column(0).as_primitive::<Int64Type>();
            let pngs = batch.column(1).as_binary::<i32>();
            for i in 0..batch.num_rows() {
                let time = times.value(i);
                if pngs.is_null(i) || frames.last().is_some_and(|f| f.time >= time) {
                    continue;
                }
                frames.push(decode_png(pngs.value(i), time)?);
            }
        }
    }
    if frames.is_empty() {
        return Err(CliError::msg(format!(
            "{}: no image of {} decoded",
            a.input, a.topic
        )));
    }
    let (sheet, width, height) = draw(&frames, a.size)?;
    let bytes = logsql::ops::chart_image::encode_png(&sheet, width, height)?;
    super::write_atomically(&a.output, &bytes)?;
    writeln!(
        out,
        "wrote {} frames of {} to {} ({width}x{height})",
        frames.len(),
        a.topic,
        a.output.display()
    )
    .and_then(|_| out.flush())
    .map_err(|e| CliError::io("writing output", e))
}

/// The batches of `sql`.
fn collect(app: &App, sql: &str) -> CliResult<Vec<RecordBatch>> {
    log::info!("frames: {sql}");
    let df = app.rt.block_on(logsql::sql(&app.ctx, sql))?;
    Ok(app.rt.block_on(df.collect())?)
}

/// A thumbnail PNG as 8-bit RGB.
fn decode_png(bytes: &[u8], time: i64) -> CliResult<Frame> {
    let err = |e: png::DecodingError| {
        CliError::msg(format!("the thumbnail of the image at {time} ns: {e}"))
    };
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(err)?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(err)?;
    let pixels = &buf[..info.buffer_size()];
    let rgb: Vec<u8> = match info.color_type {
        png::ColorType::Rgb => pixels.to_vec(),
        png::ColorType::Rgba => pixels
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        png::ColorType::Grayscale => pixels.iter().flat_map(|&g| [g, g, g]).collect(),
        png::ColorType::GrayscaleAlpha => pixels
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0]])
            .collect(),
        png::ColorType::Indexed => {
            return Err(CliError::msg(format!(
                "the thumbnail of the image at {time} ns: an indexed PNG"
            )));
        }
    };
    Ok(Frame {
        time,
        width: info.width,
        height: info.height,
        rgb,
    })
}

/// The sheet: frames in rows of about the square root of their count, each
/// over its label. Returns the RGB pixels and the size.
fn draw(frames: &[Frame], size: u32) -> CliResult<(Vec<u8>, u32, u32)> {
    let count = frames.len() as u32;
    let cols = (f64::from(count).sqrt().ceil() as u32).max(1);
    let rows = count.div_ceil(cols);
    // Wide enough for the frame and for its label (a time to the millisecond).
    let cell_w = frames
        .iter()
        .map(|f| f.width)
        .max()
        .unwrap_or(size)
        .max(LABEL_WIDTH);
    let cell_h = frames.iter().map(|f| f.height).max().unwrap_or(size) + LABEL;
    let width = cols * cell_w + (cols + 1) * PAD;
    let height = rows * cell_h + (rows + 1) * PAD;
    let mut sheet: Vec<u8> = BACKGROUND
        .iter()
        .copied()
        .cycle()
        .take(width as usize * height as usize * 3)
        .collect();
    let origin = |i: u32| {
        (
            PAD + (i % cols) * (cell_w + PAD),
            PAD + (i / cols) * (cell_h + PAD),
        )
    };
    for (i, frame) in frames.iter().enumerate() {
        let (x0, y0) = origin(i as u32);
        let x0 = x0 + (cell_w - frame.width) / 2;
        let row_bytes = frame.width as usize * 3;
        for y in 0..frame.height as usize {
            let src = &frame.rgb[y * row_bytes..(y + 1) * row_bytes];
            let at = ((y0 as usize + y) * width as usize + x0 as usize) * 3;
            sheet[at..at + row_bytes].copy_from_slice(src);
        }
    }
    logsql::ops::chart_image::register_font()?;
    {
        let root = BitMapBackend::with_buffer(&mut sheet, (width, height)).into_drawing_area();
        let style = TextStyle::from((logsql::ops::chart_image::FONT, 12).into_font()).color(&WHITE);
        for (i, frame) in frames.iter().enumerate() {
            let (x0, y0) = origin(i as u32);
            let label = rfc3339(frame.time);
            let y = y0 + cell_h - LABEL + 3;
            root.draw_text(&label, &style, (x0 as i32, y as i32))
                .map_err(|e| CliError::msg(format!("drawing the contact sheet: {e}")))?;
        }
        root.present()
            .map_err(|e| CliError::msg(format!("drawing the contact sheet: {e}")))?;
    }
    Ok((sheet, width, height))
}
