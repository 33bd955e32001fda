//! `logsql export IN clip.mp4 --topic T`: one camera topic as an H.264 MP4
//! video, streamed (a bounded number of frames in memory however long the
//! recording).
//!
//! The frames are `read_images` rows in `log_time` order decoded to `rgb8`
//! (`image_pixels`), encoded by `logsql_media::video::Mp4Encoder`: by default
//! one frame per message shown at its own `log_time` (variable frame rate);
//! with `--fps N` a frame every 1/N s, each the latest image at that time.
//! An odd width or height loses its last column or row (H.264's 4:2:0 needs
//! even sizes). The file is written to a temporary file beside OUTPUT and
//! renamed over it when complete.

use std::io::Write;
use std::time::Instant;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Int64Type, UInt32Type};
use futures::StreamExt;
use logsql::atomic_write::AtomicFile;
use logsql_media::video::{Mp4Encoder, VideoOptions};

use super::App;
use super::args::ExportArgs;
use super::error::{CliError, CliResult};
use super::export_files::{refuse_other_flags, topic_sql};
use super::units::bytes;

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
    let period = match a.fps {
        Some(fps) if fps.is_finite() && fps > 0.0 && fps <= 1000.0 => Some(1e9 / fps),
        Some(fps) => {
            return Err(CliError::msg(format!(
                "--fps {fps}: a number of frames per second above 0, at most 1000"
            )));
        }
        None => None,
    };
    let options = VideoOptions {
        quality: a.quality.unwrap_or(VideoOptions::default().quality),
        ..VideoOptions::default()
    };
    let columns = "width, height, image_pixels(image, 'rgb8') AS px";
    let sql = format!(
        "{} ORDER BY t",
        topic_sql(columns, "read_images", &a.input, topic, start, end)
    );
    log::debug!("export: {sql}");
    let df = app.rt.block_on(logsql::sql(&app.ctx, &sql))?;
    let mut stream = app.rt.block_on(df.execute_stream())?;

    let name = a.output.display().to_string();
    let io = |e| CliError::io(name.clone(), e);
    let mut file = AtomicFile::create(&a.output).map_err(io)?;
    let mut handle = Some(file.file());
    let mut video: Option<Video> = None;
    let mut skipped = 0u64;
    while let Some(batch) = app.rt.block_on(stream.next()) {
        let batch = batch?;
        let times = batch.column(0).as_primitive::<Int64Type>();
        let widths = batch.column(1).as_primitive::<UInt32Type>();
        let heights = batch.column(2).as_primitive::<UInt32Type>();
        let pixels = batch.column(3).as_binary::<i32>();
        for i in 0..batch.num_rows() {
            if pixels.is_null(i) {
                skipped += 1;
                continue;
            }
            let (t, w, h) = (times.value(i), widths.value(i), heights.value(i));
            // The first image gives the video its size.
            if let Some(f) = handle.take() {
                video = Some(Video::new(f, w, h, options, period, &name)?);
            }
            if let Some(video) = &mut video {
                video.add(t, w, h, pixels.value(i))?;
            }
        }
    }
    let Some(video) = video else {
        return Err(CliError::msg(format!(
            "{}: no image of {topic} to make a video of{}",
            a.input,
            match skipped {
                0 => String::new(),
                n => format!(" ({n} did not decode)"),
            }
        )));
    };
    let frames = video.finish()?;
    file.commit().map_err(io)?;
    let size = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
    let skipped = match skipped {
        0 => String::new(),
        n => format!(", {n} images that did not decode skipped"),
    };
    writeln!(
        out,
        "exported {frames} frames to {} ({}){skipped} in {:.2} s",
        a.output.display(),
        bytes(size),
        started.elapsed().as_secs_f64()
    )
    .and_then(|_| out.flush())
    .map_err(|e| CliError::io("writing output", e))
}

/// The video being written: the encoder, the frame size, and with `--fps`
/// the latest image and the time of the next frame.
struct Video<'f> {
    encoder: Mp4Encoder<&'f mut std::fs::File>,
    /// The size of the first image (every image must have it).
    size: (u32, u32),
    /// The encoded size: even width and height.
    even: (u32, u32),
    /// Nanoseconds between frames, with `--fps`.
    period: Option<f64>,
    /// With `--fps`: the latest image (time, cropped pixels) and the next
    /// frame's time.
    latest: Option<(i64, Vec<u8>)>,
    next: f64,
    name: String,
}

impl<'f> Video<'f> {
    fn new(
        file: &'f mut std::fs::File,
        width: u32,
        height: u32,
        options: VideoOptions,
        period: Option<f64>,
        name: &str,
    ) -> CliResult<Self> {
        let even = (width & !1, height & !1);
        let encoder = Mp4Encoder::new(file, even.0, even.1, options)
            .map_err(|e| CliError::msg(format!("{name}: {e}")))?;
        Ok(Self {
            encoder,
            size: (width, height),
            even,
            period,
            latest: None,
            next: 0.0,
            name: name.to_string(),
        })
    }

    /// Adds the image of `t`.
    fn add(&mut self, t: i64, width: u32, height: u32, rgb: &[u8]) -> CliResult {
        if (width, height) != self.size {
            return Err(CliError::msg(format!(
                "{}: the image at {t} ns is {width}x{height}, the video's first was {}x{}",
                self.name, self.size.0, self.size.1
            )));
        }
        let frame = self.crop(rgb);
        let Some(period) = self.period else {
            return self.push(t, &frame);
        };
        match self.latest.take() {
            None => self.next = t as f64,
            Some((_, latest)) => {
                // Every frame time before this image shows the latest one.
                while self.next < t as f64 {
                    self.push(self.next.round() as i64, &latest)?;
                    self.next += period;
                }
            }
        }
        self.latest = Some((t, frame));
        Ok(())
    }

    /// Ends the video: with `--fps`, the last image fills the frame times up
    /// to its own. Returns the frame count.
    fn finish(mut self) -> CliResult<u64> {
        if let Some((t, latest)) = self.latest.take() {
            while self.next <= t as f64 {
                self.push(self.next.round() as i64, &latest)?;
                self.next += self.period.unwrap_or(f64::INFINITY);
            }
        }
        let frames = self.encoder.frames();
        let name = self.name.clone();
        self.encoder
            .finish()
            .map_err(|e| CliError::msg(format!("{name}: {e}")))?;
        Ok(frames)
    }

    fn push(&mut self, t: i64, frame: &[u8]) -> CliResult {
        self.encoder
            .push_rgb8(t, frame)
            .map_err(|e| CliError::msg(format!("{}: the frame at {t} ns: {e}", self.name)))
    }

    /// The pixels without an odd last column or row.
    fn crop(&self, rgb: &[u8]) -> Vec<u8> {
        let (w, h) = (self.size.0 as usize, self.size.1 as usize);
        let (ew, eh) = (self.even.0 as usize, self.even.1 as usize);
        if (w, h) == (ew, eh) {
            return rgb.to_vec();
        }
        rgb.chunks_exact(w * 3)
            .take(eh)
            .flat_map(|row| &row[..ew * 3])
            .copied()
            .collect()
    }
}
