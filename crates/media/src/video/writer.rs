//! Camera images in, a video out: [`VideoWriter`] puts a stream of images of
//! one size, in time order, onto an [`Mp4Encoder`]'s frames.
//!
//! - The first image sets the video's size; an image of another size is an
//!   error naming both sizes.
//! - An odd width or height loses its last column or row (H.264's 4:2:0
//!   needs even sizes).
//! - Without a frame rate each image is one frame shown at its own time
//!   (variable frame rate). With one, a frame every `1/fps` s from the first
//!   image's time to the last's, each showing the latest image at its time.
//!
//! Images come as `rgb8` pixels ([`VideoWriter::add_rgb8`]) or as frames
//! converted already ([`VideoWriter::add`], from [`Yuv420::from_rgb8`], so
//! that the conversion can run on another thread than the encoder).
//!
//! It holds one encoder, one frame and (with a frame rate) the latest
//! image: memory does not depend on the length of the video.

use std::io::{Seek, Write};

use super::{Mp4Encoder, VideoOptions, Yuv420};
use crate::error::{MediaError, Result};

/// The highest frame rate a resampled video may have.
pub const MAX_FPS: f64 = 1000.0;

/// Puts images onto an [`Mp4Encoder`]; see the module documentation.
pub struct VideoWriter<W: Write + Seek> {
    options: VideoOptions,
    /// Nanoseconds between frames, when resampled.
    period: Option<f64>,
    /// Until the first image gives the size.
    out: Option<W>,
    encoder: Option<Mp4Encoder<W>>,
    /// The images' size.
    size: (u32, u32),
    /// When resampled: the latest image (time, frame) and the next frame's
    /// time.
    latest: Option<(i64, Yuv420)>,
    next: f64,
    /// Why the first image refused before the video started was refused.
    first_refused: Option<String>,
}

impl<W: Write + Seek> std::fmt::Debug for VideoWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VideoWriter")
            .field("size", &self.size)
            .field("period", &self.period)
            .field("frames", &self.frames())
            .finish_non_exhaustive()
    }
}

impl<W: Write + Seek> VideoWriter<W> {
    /// A writer to `out`, one frame per image (`fps` `None`) or resampled to
    /// `fps` frames per second (above 0, at most [`MAX_FPS`]).
    pub fn new(out: W, options: VideoOptions, fps: Option<f64>) -> Result<Self> {
        let period = match fps {
            None => None,
            Some(f) if f.is_finite() && f > 0.0 && f <= MAX_FPS => Some(1e9 / f),
            Some(f) => {
                return Err(MediaError::Invalid(format!(
                    "a frame rate of {f}: frames per second above 0, at most {MAX_FPS}"
                )));
            }
        };
        Ok(Self {
            options,
            period,
            out: Some(out),
            encoder: None,
            size: (0, 0),
            latest: None,
            next: 0.0,
            first_refused: None,
        })
    }

    /// Frames encoded so far.
    pub fn frames(&self) -> u64 {
        self.encoder.as_ref().map_or(0, Mp4Encoder::frames)
    }

    /// The lowering of the video's quality since the last call, if a frame
    /// did not fit at the quality asked for.
    pub fn take_quality_drop(&mut self) -> Option<super::QualityDrop> {
        self.encoder
            .as_mut()
            .and_then(Mp4Encoder::take_quality_drop)
    }

    /// Adds an `rgb8` image of `width` x `height` taken at `time_ns` (after
    /// the previous image's).
    pub fn add_rgb8(&mut self, time_ns: i64, width: u32, height: u32, rgb: &[u8]) -> Result<()> {
        let frame = Yuv420::from_rgb8(width, height, rgb)
            .map_err(|e| MediaError::Invalid(format!("the image at {time_ns} ns: {e}")))?;
        self.add(time_ns, frame)
    }

    /// Adds an image taken at `time_ns` (after the previous image's), as
    /// [`Yuv420::from_rgb8`] converted it.
    pub fn add(&mut self, time_ns: i64, frame: Yuv420) -> Result<()> {
        let added = self.add_frame(time_ns, frame);
        if let (Err(e), None, None) = (&added, &self.encoder, &self.first_refused) {
            self.first_refused = Some(e.to_string());
        }
        added
    }

    fn add_frame(&mut self, time_ns: i64, frame: Yuv420) -> Result<()> {
        let (width, height) = frame.image_size();
        if self.encoder.is_none() {
            // The image's own size is checked, before cropping to even sides
            // (a 1x1 image is refused as such, not as a 0x0 video).
            if width < super::MIN_SIDE || height < super::MIN_SIDE {
                return Err(MediaError::Unsupported(format!(
                    "the image at {time_ns} ns is {width}x{height}: OpenH264 encodes frames of at least {0}x{0} pixels",
                    super::MIN_SIDE
                )));
            }
            let (w, h) = frame.size();
            super::check_size(w, h)?;
            let out = self
                .out
                .take()
                .ok_or_else(|| MediaError::Write("the video's output is gone".into()))?;
            self.size = (width, height);
            self.encoder = Some(Mp4Encoder::new(out, w, h, self.options)?);
        }
        if (width, height) != self.size {
            return Err(MediaError::Invalid(format!(
                "the image at {time_ns} ns is {width}x{height}, the video's first was {}x{}",
                self.size.0, self.size.1
            )));
        }
        let Some(period) = self.period else {
            return self.push(time_ns, &frame);
        };
        match self.latest.take() {
            None => self.next = time_ns as f64,
            Some((t, _)) if time_ns <= t => {
                return Err(MediaError::Invalid(format!(
                    "the image at {time_ns} ns is not after the previous one ({t} ns)"
                )));
            }
            Some((_, latest)) => {
                // Every frame time before this image shows the latest one.
                while self.next < time_ns as f64 {
                    self.push(self.next.round() as i64, &latest)?;
                    self.next += period;
                }
            }
        }
        self.latest = Some((time_ns, frame));
        Ok(())
    }

    /// Ends the video (when resampled, the last image fills the frame times
    /// up to its own) and returns the output and the frame count. A video
    /// without an image is an error.
    pub fn finish(mut self) -> Result<(W, u64)> {
        if let (Some((t, latest)), Some(period)) = (self.latest.take(), self.period) {
            while self.next <= t as f64 {
                self.push(self.next.round() as i64, &latest)?;
                self.next += period;
            }
        }
        let Some(encoder) = self.encoder else {
            return Err(MediaError::Invalid(match self.first_refused {
                Some(why) => format!(
                    "a video needs at least one image, and every image was refused; the first: {why}"
                ),
                None => "a video needs at least one image".into(),
            }));
        };
        let frames = encoder.frames();
        Ok((encoder.finish()?, frames))
    }

    fn push(&mut self, time_ns: i64, frame: &Yuv420) -> Result<()> {
        match &mut self.encoder {
            Some(e) => e.push(time_ns, frame).map_err(|e| match e {
                MediaError::Invalid(m) => {
                    MediaError::Invalid(format!("the frame at {time_ns} ns: {m}"))
                }
                other => other,
            }),
            None => Err(MediaError::Write("the video has no encoder".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::super::tests::frame;
    use super::*;

    fn sample_times(bytes: Vec<u8>) -> Vec<u64> {
        let size = bytes.len() as u64;
        let mut r = mp4::Mp4Reader::read_header(Cursor::new(bytes), size).unwrap();
        let n = r.tracks().get(&1).unwrap().sample_count();
        (1..=n)
            .map(|i| r.read_sample(1, i).unwrap().unwrap().start_time)
            .collect()
    }

    #[test]
    fn images_resample_to_a_frame_rate() {
        let mut w =
            VideoWriter::new(Cursor::new(Vec::new()), VideoOptions::default(), Some(10.0)).unwrap();
        // Images at 0, 0.25 and 0.5 s: frames every 0.1 s from 0 to 0.5 s.
        for (i, t) in [0i64, 250_000_000, 500_000_000].into_iter().enumerate() {
            w.add_rgb8(t, 32, 16, &frame(32, 16, i)).unwrap();
        }
        let (out, frames) = w.finish().unwrap();
        assert_eq!(frames, 6);
        assert_eq!(
            sample_times(out.into_inner()),
            [0, 9000, 18000, 27000, 36000, 45000]
        );
    }

    #[test]
    fn odd_sizes_are_cropped_and_other_sizes_refused() {
        let mut w =
            VideoWriter::new(Cursor::new(Vec::new()), VideoOptions::default(), None).unwrap();
        let odd = vec![7u8; 33 * 17 * 3];
        w.add_rgb8(0, 33, 17, &odd).unwrap();
        let e = w.add_rgb8(10, 32, 16, &frame(32, 16, 0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the image at 10 ns is 32x16, the video's first was 33x17"
        );
        let e = w.add_rgb8(10, 33, 17, &odd[..30]).unwrap_err();
        assert!(e.to_string().contains("30 bytes for a 33x17"), "{e}");
        w.add_rgb8(20, 33, 17, &odd).unwrap();
        let (out, frames) = w.finish().unwrap();
        assert_eq!(frames, 2);
        let bytes = out.into_inner();
        let size = bytes.len() as u64;
        let r = mp4::Mp4Reader::read_header(Cursor::new(bytes), size).unwrap();
        let t = r.tracks().get(&1).unwrap();
        assert_eq!((t.width(), t.height()), (32, 16));
    }

    #[test]
    fn bad_rates_and_empty_videos_are_refused() {
        for fps in [0.0, -1.0, f64::NAN, 1001.0] {
            assert!(
                VideoWriter::new(Cursor::new(Vec::new()), VideoOptions::default(), Some(fps))
                    .is_err()
            );
        }
        let w = VideoWriter::new(Cursor::new(Vec::new()), VideoOptions::default(), None).unwrap();
        assert_eq!(
            w.finish().unwrap_err().to_string(),
            "a video needs at least one image"
        );
        // Too small an image is refused as it is (not as the 0x0 video its
        // cropping would make), and the video that never started says why.
        let mut w =
            VideoWriter::new(Cursor::new(Vec::new()), VideoOptions::default(), None).unwrap();
        let e = w.add_rgb8(5, 1, 1, &[1, 2, 3]).unwrap_err().to_string();
        assert_eq!(
            e,
            "unsupported: the image at 5 ns is 1x1: OpenH264 encodes frames of at least 16x16 pixels"
        );
        assert!(w.add_rgb8(6, 2, 2, &[0; 12]).is_err());
        assert_eq!(
            w.finish().unwrap_err().to_string(),
            format!(
                "a video needs at least one image, and every image was refused; the first: {e}"
            )
        );
        // A good image after a refused one starts the video.
        let mut w =
            VideoWriter::new(Cursor::new(Vec::new()), VideoOptions::default(), None).unwrap();
        assert!(w.add_rgb8(5, 1, 1, &[1, 2, 3]).is_err());
        w.add_rgb8(10, 32, 16, &frame(32, 16, 0)).unwrap();
        assert_eq!(w.finish().unwrap().1, 1);
    }
}
