//! Camera images as H.264 MP4 video: [`Mp4Writer`] takes rows with a
//! `log_time` column and one image column (the `image` value of
//! `read_images`, or a column of its type; other columns are ignored), in
//! `log_time` order.
//!
//! Each image is decoded and converted to the encoder's 4:2:0 planes on the
//! thread that calls [`FormatWriter::write_batch`], and put onto the H.264
//! encoder by [`logsql_media::video::VideoWriter`] on a thread of the
//! writer's own, so that decoding the next images overlaps encoding the
//! frame before: one frame per image at its own time, or with
//! `OPTIONS (fps 'N')` a frame every 1/N s.
//!
//! An image that does not decode fails the write, or when the writer is
//! told to warn is left out with a warning; a null image, or a second image
//! at the same time, is left out. The report is the number of frames
//! written.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema};
use logsql_media::images::PixelFormat;
use logsql_media::images::arrow::{ImageColumn, image_type};
use logsql_media::video::{VideoOptions, VideoWriter, Yuv420};

use crate::columns::nanos;
use crate::error::{Error, Result};
use crate::format_writer::{FormatWriter, Progress};

/// The `COPY ... OPTIONS (...)` keys of MP4 output (without DataFusion's
/// `format.` prefix).
pub const OPTION_KEYS: &[&str] = &["fps", "quality", "keyframe_interval"];

/// Decoded frames waiting for the encoder (640x480: 0.46 MB each).
const FRAME_QUEUE: usize = 4;

/// How the video is written (`COPY ... OPTIONS (...)`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VideoWriteOptions {
    /// Resample to this many frames per second; `None`: one frame per image.
    pub fps: Option<f64>,
    /// The encoder's quality and key frame interval.
    pub video: VideoOptions,
}

impl VideoWriteOptions {
    /// The options of `COPY ... OPTIONS (...)` (keys with or without the
    /// `format.` prefix); unknown keys are refused with the known ones listed.
    pub fn parse(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            let bare = key.strip_prefix("format.").unwrap_or(key);
            let number = |what: &str| Error::Options(format!("MP4 {bare} '{value}' is not {what}"));
            match bare {
                "fps" => {
                    let fps: f64 = value.trim().parse().map_err(|_| number("a number"))?;
                    if !(fps.is_finite() && fps > 0.0 && fps <= logsql_media::video::MAX_FPS) {
                        return Err(number("a frame rate above 0, at most 1000"));
                    }
                    out.fps = Some(fps);
                }
                "quality" => {
                    out.video.quality = value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|q| (1..=100).contains(q))
                        .ok_or_else(|| number("a quality from 1 to 100"))?;
                }
                "keyframe_interval" => {
                    out.video.keyframe_interval = value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| number("a number of frames above 0"))?;
                }
                _ => {
                    return Err(Error::Options(format!(
                        "unknown option '{key}' for MP4 output (known: {})",
                        OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }
}

/// Where the writer finds its columns.
#[derive(Debug, Clone, Copy)]
pub struct Columns {
    log_time: usize,
    image: usize,
    /// The `file` column, named in errors when present.
    file: Option<usize>,
}

impl Columns {
    /// The columns of `schema`, or an error saying what the query lacks.
    pub fn of(schema: &Schema) -> Result<Self> {
        let have = || {
            schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let log_time = match schema.index_of("log_time") {
            Ok(i) if matches!(schema.field(i).data_type(), DataType::Timestamp(..)) => i,
            _ => {
                return Err(Error::Input(format!(
                    "writing MP4 needs a log_time timestamp column and an image column (read_images' image); the query has: {}",
                    have()
                )));
            }
        };
        let images: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| schema.field(i).data_type() == &image_type())
            .collect();
        let image = match images.as_slice() {
            [i] => *i,
            [] => {
                return Err(Error::Input(format!(
                    "writing MP4 needs an image column (the image value of read_images); the query has: {}",
                    have()
                )));
            }
            _ => {
                return Err(Error::Input(format!(
                    "writing MP4 takes one image column; the query has {}: select one",
                    images.len()
                )));
            }
        };
        let file = schema
            .index_of("file")
            .ok()
            .filter(|&i| schema.field(i).data_type() == &DataType::Utf8);
        Ok(Self {
            log_time,
            image,
            file,
        })
    }
}

/// A decoded image on its way to the encoder, with what errors call it.
struct Frame {
    time: i64,
    frame: Yuv420,
    what: String,
}

/// An MP4 file written from rows of camera images (see the module
/// documentation).
pub struct Mp4Writer {
    columns: Columns,
    /// The target, for messages.
    name: String,
    /// An image that does not decode is left out with a warning.
    warn: bool,
    /// The latest image's time.
    last: Option<i64>,
    /// Images taken.
    rows: u64,
    /// Images left out (null, undecodable, or at the time of the one before).
    left_out: u64,
    /// Why the first image left out was left out.
    first_left_out: Option<String>,
    frames: Option<SyncSender<Frame>>,
    encoder: Option<JoinHandle<Result<u64>>>,
}

impl Mp4Writer {
    /// A writer of `file` (the output `name` in messages) from rows with
    /// `columns`; `warn`: images that cannot go into the video are left out
    /// with a warning instead of failing the write.
    pub fn new(
        file: File,
        name: String,
        columns: Columns,
        options: VideoWriteOptions,
        warn: bool,
    ) -> Result<Self> {
        let writer = VideoWriter::new(BufWriter::new(file), options.video, options.fps)
            .map_err(|e| Error::Options(e.to_string()))?;
        let mut encoder = Encoder {
            writer,
            name: name.clone(),
            warn,
            left_out: 0,
        };
        let (tx, rx) = sync_channel::<Frame>(FRAME_QUEUE);
        let thread = std::thread::Builder::new()
            .name("logsql-mp4".into())
            .spawn(move || -> Result<u64> {
                for frame in rx {
                    encoder.add(frame)?;
                }
                encoder.finish()
            })
            .map_err(|e| Error::io(&name, e))?;
        Ok(Self {
            columns,
            name,
            warn,
            last: None,
            rows: 0,
            left_out: 0,
            first_left_out: None,
            frames: Some(tx),
            encoder: Some(thread),
        })
    }

    /// Counts an image left out, noting why if it is the first.
    fn leave_out(&mut self, why: impl FnOnce() -> String) {
        self.left_out += 1;
        if self.first_left_out.is_none() {
            self.first_left_out = Some(why());
        }
    }

    /// Waits for the encoder thread: the frames it wrote, or its error.
    fn join(&mut self) -> Result<u64> {
        self.frames = None;
        match self.encoder.take().map(JoinHandle::join) {
            Some(Ok(done)) => done,
            Some(Err(_)) => Err(Error::Write(format!(
                "writing MP4 {}: the encoder thread panicked",
                self.name
            ))),
            None => Err(Error::Write(format!(
                "writing MP4 {}: the encoder already stopped",
                self.name
            ))),
        }
    }
}

impl FormatWriter for Mp4Writer {
    type Report = u64;

    /// Decodes the batch's images and passes them to the encoder thread.
    fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let times = nanos(batch.column(self.columns.log_time))?;
        let times = times.as_primitive::<Int64Type>();
        let images = ImageColumn::new(batch.column(self.columns.image).as_ref())
            .map_err(|e| Error::Write(format!("writing MP4 {}: {e}", self.name)))?;
        let files = self
            .columns
            .file
            .map(|i| batch.column(i).as_string::<i32>());
        self.rows += batch.num_rows() as u64;
        for i in 0..batch.num_rows() {
            let (Some(image), false) = (images.get(i), times.is_null(i)) else {
                self.leave_out(|| match times.is_null(i) {
                    true => "an image without a log_time".into(),
                    false => format!(
                        "the null image at log_time {} (one that read_images could not read)",
                        times.value(i)
                    ),
                });
                continue;
            };
            let t = times.value(i);
            if let Some(last) = self.last.filter(|&last| t <= last) {
                self.leave_out(|| {
                    format!("the image at log_time {t}, not after the one before ({last})")
                });
                continue;
            }
            let source = files
                .filter(|f| f.is_valid(i))
                .map_or(String::new(), |f| format!(" of {}", f.value(i)));
            let what = format!(
                "writing MP4 {}: the {} image{source} at log_time {t}",
                self.name, image.encoding
            );
            let frame = image
                .pixels(PixelFormat::Rgb8)
                .and_then(|p| Yuv420::from_rgb8(p.width, p.height, &p.data));
            match frame {
                Ok(frame) => {
                    self.last = Some(t);
                    let frame = Frame {
                        time: t,
                        frame,
                        what,
                    };
                    let sent = self.frames.as_ref().is_some_and(|f| f.send(frame).is_ok());
                    if !sent {
                        // The encoder failed: its error is the write's.
                        self.join()?;
                        return Err(Error::Write(format!(
                            "writing MP4 {}: the encoder stopped",
                            self.name
                        )));
                    }
                }
                Err(e) => {
                    refuse_or_warn(self.warn, &what, &e)?;
                    self.leave_out(|| format!("{what}: {e}"));
                }
            }
        }
        Ok(())
    }

    fn progress(&self) -> Progress {
        Progress {
            rows: self.rows,
            groups: 0,
        }
    }

    fn finish(mut self) -> Result<u64> {
        if self.last.is_none()
            && let Some(first) = &self.first_left_out
        {
            // No image reached the encoder: say why the first did not.
            return Err(Error::Write(format!(
                "writing MP4 {}: a video needs at least one image, and all {} were left out; the first: {first}",
                self.name, self.left_out
            )));
        }
        let frames = self.join()?;
        if self.left_out > 0 {
            log::info!(
                "writing MP4 {}: {} images left out (null, undecodable, or at the time of the image before)",
                self.name,
                self.left_out
            );
        }
        Ok(frames)
    }
}

impl Drop for Mp4Writer {
    /// Ends the encoder thread (after the frames queued) without waiting.
    fn drop(&mut self) {
        self.frames = None;
    }
}

/// An image that cannot go into the video: the write's error, or under the
/// warn policy a warning.
fn refuse_or_warn(warn: bool, what: &str, e: &dyn std::fmt::Display) -> Result<()> {
    let message = format!("{what}: {e}");
    if !warn {
        return Err(Error::Write(format!(
            "{message} (SET logsql.on_error = 'warn' to leave such images out)"
        )));
    }
    log::warn!("{message}");
    Ok(())
}

/// The encoding side of the writer (on its own thread).
struct Encoder {
    writer: VideoWriter<BufWriter<File>>,
    /// The target, for messages.
    name: String,
    /// A frame the video cannot take is left out with a warning.
    warn: bool,
    /// Frames left out (of another size than the first, ...).
    left_out: u64,
}

impl Encoder {
    fn add(&mut self, frame: Frame) -> Result<()> {
        if let Err(e) = self.writer.add(frame.time, frame.frame) {
            self.left_out += 1;
            refuse_or_warn(self.warn, &frame.what, &e)?;
        }
        if let Some(drop) = self.writer.take_quality_drop() {
            log::warn!("{}: {drop}", frame.what);
        }
        Ok(())
    }

    fn finish(self) -> Result<u64> {
        if self.left_out > 0 {
            log::info!(
                "writing MP4 {}: {} frames left out",
                self.name,
                self.left_out
            );
        }
        let name = self.name;
        let (mut out, frames) = self
            .writer
            .finish()
            .map_err(|e| Error::Write(format!("writing MP4 {name}: {e}")))?;
        std::io::Write::flush(&mut out).map_err(|e| Error::io(&name, e))?;
        Ok(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> HashMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn options_parse_and_refuse_what_they_do_not_know() {
        let o = VideoWriteOptions::parse(&map(&[
            ("format.fps", "12.5"),
            ("quality", "90"),
            ("keyframe_interval", "30"),
        ]))
        .unwrap();
        assert_eq!(o.fps, Some(12.5));
        assert_eq!((o.video.quality, o.video.keyframe_interval), (90, 30));
        let err = |kv: &[(&str, &str)]| VideoWriteOptions::parse(&map(kv)).unwrap_err();
        assert!(matches!(err(&[("fps", "0")]), Error::Options(_)));
        assert!(
            err(&[("fps", "0")])
                .to_string()
                .contains("MP4 fps '0' is not a frame rate")
        );
        assert!(
            err(&[("quality", "101")])
                .to_string()
                .contains("quality from 1 to 100")
        );
        assert!(
            err(&[("format.codec", "h265")])
                .to_string()
                .contains("unknown option 'format.codec' for MP4 output (known: fps, quality")
        );
    }
}
