//! A camera feature of a LeRobot dataset: its images decoded (a repeated
//! image once), the open episode's frames encoded by an encoder of its own
//! and staged ([`VideoStage`]), and when the episode is kept, appended to
//! `videos/<key>/chunk-XXX/file-XXX.mp4` (several episodes a file, each at
//! its `from_timestamp`; a file is closed at the first episode end past its
//! size limit, or when an episode's encoder chose other parameter sets).

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;

use logsql_media::images::{Codec, Image, PixelFormat, Pixels};
use logsql_media::video::{Mp4Encoder, VideoOptions};

use super::files::{chunk_file, create, io, next_file};
use super::meta::VideoSpan;
use super::staging::VideoStage;
use crate::error::{Error, Result};

/// An image's pixels, and for a compressed image its bytes. A camera slower
/// than the dataset's frame rate gives several frames in a row the same
/// image (the latest at each frame); a compressed one is decoded once. (A
/// raw image's bytes are not kept: its decoding is a copy.)
struct Decoded {
    encoding: String,
    source: Option<Vec<u8>>,
    /// Shared with the camera's encoder thread.
    pixels: Arc<Pixels>,
}

impl Decoded {
    /// Whether `image` is the compressed image these pixels were decoded from.
    fn holds(&self, image: &Image<'_>) -> bool {
        self.encoding == image.encoding && self.source.as_deref() == Some(image.data)
    }
}

/// One MP4 file being written.
struct VideoFile {
    encoder: Mp4Encoder<BufWriter<File>>,
    file: File,
    chunk: u64,
    index: u64,
    /// Frames in the file before the current episode.
    frames_before: u64,
}

/// One camera's video (see the module documentation).
pub struct Camera {
    /// The feature's key.
    name: String,
    /// Its number among the features (names its staging file).
    k: usize,
    root: PathBuf,
    quality: u8,
    chunks_size: u64,
    video: Option<VideoFile>,
    /// The open episode's encoded frames.
    stage: Option<VideoStage>,
    /// (chunk, file) of the next video file.
    next: (u64, u64),
    last_decoded: Option<Decoded>,
}

impl Camera {
    /// Camera feature `k`, `name`, of the dataset under `root`.
    pub fn new(name: String, k: usize, root: PathBuf, quality: u8, chunks_size: u64) -> Self {
        Self {
            name,
            k,
            root,
            quality,
            chunks_size,
            video: None,
            stage: None,
            next: (0, 0),
            last_decoded: None,
        }
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::Write(format!("LeRobot dataset: camera \"{}\": {e}", self.name))
    }

    fn options(&self) -> VideoOptions {
        VideoOptions {
            quality: self.quality,
            ..VideoOptions::default()
        }
    }

    /// `image` as RGB pixels (the image before decoded once); `Err`: why it
    /// does not decode.
    pub fn decode(&mut self, image: &Image<'_>) -> Result<Arc<Pixels>, String> {
        if let Some(last) = &self.last_decoded
            && last.holds(image)
        {
            return Ok(Arc::clone(&last.pixels));
        }
        let pixels = Arc::new(image.pixels(PixelFormat::Rgb8).map_err(|e| e.to_string())?);
        let compressed = Codec::of_encoding(image.encoding).is_ok();
        self.last_decoded = Some(Decoded {
            encoding: image.encoding.to_string(),
            source: compressed.then(|| image.data.to_vec()),
            pixels: Arc::clone(&pixels),
        });
        Ok(pixels)
    }

    /// Queues a frame of the open episode for its encoder; `label` names
    /// the episode's camera in warnings (its first frame asks for it). An
    /// error is the encoder's cause alone: the caller names the frame.
    pub fn push(
        &mut self,
        pixels: &Arc<Pixels>,
        label: impl FnOnce() -> String,
    ) -> Result<(), String> {
        if self.stage.is_none() {
            let path = self.root.join(format!(".episode-camera-{}.h264", self.k));
            let stage =
                VideoStage::create(path, pixels.width, pixels.height, self.options(), label())
                    .map_err(|e| e.to_string())?;
            self.stage = Some(stage);
        }
        let stage = self.stage.as_mut().expect("just created");
        stage.push(pixels).map_err(|e| e.to_string())
    }

    /// Appends the kept episode's `frames` frames (of `size`) to the video
    /// file; returns where they are, at `fps` frames per second.
    pub fn commit(&mut self, size: (u32, u32), frames: u64, fps: f64) -> Result<Option<VideoSpan>> {
        let Some(stage) = self.stage.take() else {
            return Ok(None);
        };
        let stage = stage.finish()?;
        // The file's track has one pair of parameter sets: an episode whose
        // encoder chose others starts a new file.
        let other = match (&self.video, stage.parameter_sets()) {
            (Some(v), Some(p)) => v.encoder.parameter_sets().is_some_and(|q| q != p),
            _ => false,
        };
        if other {
            self.close()?;
        }
        if self.video.is_none() {
            self.video = Some(self.open(size)?);
        }
        let name = self.name.clone();
        let video = self.video.as_mut().expect("just opened");
        let before = video.frames_before;
        stage.drain(|k, frame| {
            let ns = ((before + k) as f64 * 1e9 / fps).round() as i64;
            video
                .encoder
                .push_encoded(ns, frame)
                .map_err(|e| Error::Write(format!("LeRobot dataset: camera \"{name}\": {e}")))
        })?;
        video.frames_before += frames;
        Ok(Some(VideoSpan {
            key: name,
            chunk: video.chunk,
            file: video.index,
            from: before as f64 / fps,
            to: (before + frames) as f64 / fps,
        }))
    }

    fn path(&self, (chunk, index): (u64, u64)) -> PathBuf {
        self.root.join(format!(
            "videos/{}/{}.mp4",
            self.name,
            chunk_file(chunk, index)
        ))
    }

    fn open(&self, (width, height): (u32, u32)) -> Result<VideoFile> {
        let (chunk, index) = self.next;
        let path = self.path(self.next);
        let file = create(&path)?;
        let handle = file.try_clone().map_err(|e| io(&path, e))?;
        let encoder = Mp4Encoder::new(BufWriter::new(file), width, height, self.options())
            .map_err(|e| self.err(e))?;
        Ok(VideoFile {
            encoder,
            file: handle,
            chunk,
            index,
            frames_before: 0,
        })
    }

    /// Forgets the open episode's frames (it is skipped).
    pub fn discard(&mut self) {
        if let Some(stage) = self.stage.take() {
            stage.discard();
        }
    }

    /// Closes the video file when it is past `limit` bytes.
    pub fn close_if_full(&mut self, limit: u64) -> Result<()> {
        let full = self
            .video
            .as_ref()
            .is_some_and(|v| v.file.metadata().map(|m| m.len()).unwrap_or(0) >= limit);
        if full {
            self.close()?;
        }
        Ok(())
    }

    /// Closes the video file (the next episode starts a new one).
    pub fn close(&mut self) -> Result<()> {
        if let Some(v) = self.video.take() {
            let path = self.path((v.chunk, v.index));
            let mut out = v.encoder.finish().map_err(|e| self.err(e))?;
            std::io::Write::flush(&mut out).map_err(|e| io(&path, e))?;
            self.next = next_file((v.chunk, v.index), self.chunks_size);
        }
        Ok(())
    }
}
