//! H.264 video in an MP4 file from camera frames: the encoder core of the
//! video export.
//!
//! [`Mp4Encoder`] takes `rgb8` frames with their times in nanoseconds, one at
//! a time, encodes each with OpenH264 and writes it to an MP4 file whose
//! sample durations are the differences of the frame times (variable frame
//! rate: each frame is shown at its own time, relative to the first).
//!
//! Crates:
//!
//! - `openh264` builds Cisco's OpenH264 encoder from its bundled source (no
//!   system library, no ffmpeg binary). Baseline-profile H.264, which every
//!   player and browser decodes.
//! - `mp4` (mp4-rust) writes the container. It streams: each sample's bytes
//!   go to the file as soon as a chunk (one second of samples) is complete,
//!   and only the sample tables (a few bytes per frame) stay in memory until
//!   the `moov` box is written at the end; its samples carry their own
//!   durations, which is what variable frame rate needs. `muxide` was the
//!   other candidate: it keeps every encoded frame in memory until the file is
//!   finished (unbounded for an hour of video) and brings JSON and CLI
//!   dependencies by default.
//!
//! [`VideoWriter`] puts images of any size and times onto the encoder's
//! frames: cropping to even sizes, and resampling to a fixed frame rate.
//!
//! Memory is bounded whatever the length: the encoder's reference frames,
//! one converted frame and one encoded frame waiting for the next frame's
//! time (its duration), plus the sample tables.

use std::io::{Seek, Write};

use bytes::Bytes;
use mp4::{AvcConfig, MediaConfig, Mp4Config, Mp4Sample, Mp4Writer, TrackConfig, TrackType};
use openh264::OpenH264API;
use openh264::encoder::{
    Complexity, Encoder, EncoderConfig, FrameRate, FrameType, IntraFramePeriod, QpRange,
    RateControlMode, UsageType,
};
use openh264::formats::YUVSlices;

use crate::error::{MediaError, Result};

mod frame;
mod writer;

pub use frame::Yuv420;
pub use writer::{MAX_FPS, VideoWriter};

/// Ticks per second of the MP4 track's times: 90 kHz, the usual video
/// clock (a frame time is kept within 6 microseconds).
pub const TIMESCALE: u32 = 90_000;

/// The largest frame side encoded: the `openh264` crate refuses frames
/// larger than 3840 x 2160 (or 2160 x 3840).
pub const MAX_SIDE: u32 = 3840;

/// The largest shorter side of a frame encoded.
pub const MAX_SHORT_SIDE: u32 = 2160;

/// The smallest frame side OpenH264 encodes (one macroblock).
pub const MIN_SIDE: u32 = 16;

/// How a video is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VideoOptions {
    /// 1 (smallest file) to 100 (best picture); see [`VideoOptions::qp`].
    pub quality: u8,
    /// A key frame every this many frames (where a player can seek to).
    pub keyframe_interval: u32,
}

impl Default for VideoOptions {
    /// Quality 75 (quantizer 19: no visible loss on camera images), a key
    /// frame every 60 frames.
    fn default() -> Self {
        Self {
            quality: 75,
            keyframe_interval: 60,
        }
    }
}

impl VideoOptions {
    /// The H.264 quantizer of the quality: 100 gives 10, 1 gives 46 (of
    /// 0..=51; lower is better and larger).
    pub fn qp(&self) -> u8 {
        let q = u32::from(self.quality.clamp(1, 100));
        (10 + ((100 - q) * 36 + 50) / 99) as u8
    }
}

/// An encoded frame waiting for the next frame's time, which gives its
/// duration.
#[derive(Debug)]
struct Pending {
    /// Ticks since the first frame.
    start: u64,
    is_sync: bool,
    bytes: Bytes,
}

/// One encoded frame: the MP4 sample (length-prefixed NAL units) and, on
/// the first frame of an encoder, the SPS and PPS the track needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedFrame {
    /// The NAL units of the frame, each prefixed by its 4-byte length.
    pub sample: Vec<u8>,
    /// Whether the frame is a key frame (where decoding can start).
    pub is_sync: bool,
    /// The sequence parameter set, when the frame carries one.
    pub sps: Option<Vec<u8>>,
    /// The picture parameter set, when the frame carries one.
    pub pps: Option<Vec<u8>>,
}

/// Encodes `rgb8` frames of one size into H.264 (no container): the first
/// frame is a key frame carrying the SPS and PPS. Frames of several
/// encoders of the same size and options can follow one another in one
/// [`Mp4Encoder`] (see [`Mp4Encoder::push_encoded`]).
///
/// A frame the encoder cannot fit at the quality asked for (OpenH264 keeps
/// each frame's bitstream within one and a half bytes per pixel, which a
/// frame of sensor noise passes at the default quality) is encoded again at
/// a lower quality, as a key frame of a new encoder with the same parameter
/// sets; the rest of the video keeps that quality.
/// [`H264Encoder::take_quality_drop`] tells when that happened.
pub struct H264Encoder {
    encoder: Encoder,
    width: u32,
    height: u32,
    options: VideoOptions,
    /// The quality asked for.
    asked: u8,
    /// The SPS and PPS of the first frame, which a new encoder must repeat.
    params: Option<(Vec<u8>, Vec<u8>)>,
    /// A lowering of the quality not yet taken by the caller.
    dropped: Option<QualityDrop>,
    /// Frames encoded.
    frames: u64,
}

/// The quality of a video was lowered for a frame that did not fit (see
/// [`H264Encoder`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QualityDrop {
    /// The quality asked for.
    pub asked: u8,
    /// The quality the video has from this frame on.
    pub now: u8,
    /// The frame (0-based, of this encoder) that needed it.
    pub frame: u64,
}

impl std::fmt::Display for QualityDrop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the H.264 encoder could not fit the frame at quality {}; the video goes on at quality {}",
            self.asked, self.now
        )
    }
}

/// The steps by which the quality is lowered for a frame that does not fit:
/// each lowers the quantizer by about 5 (the bitstream shrinks by about 40%).
const QUALITY_STEPS: [u8; 7] = [60, 45, 30, 20, 10, 5, 1];

impl std::fmt::Debug for H264Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H264Encoder")
            .field("width", &self.width)
            .field("height", &self.height)
            .finish_non_exhaustive()
    }
}

impl H264Encoder {
    /// An encoder of `width` x `height` frames (both even, from
    /// [`MIN_SIDE`] to [`MAX_SIDE`], the shorter at most [`MAX_SHORT_SIDE`]).
    pub fn new(width: u32, height: u32, options: VideoOptions) -> Result<Self> {
        check_size(width, height)?;
        let encoder = Self::start(options)?;
        Ok(Self {
            encoder,
            width,
            height,
            options,
            asked: options.quality,
            params: None,
            dropped: None,
            frames: 0,
        })
    }

    /// The lowering of the quality since the last call, if any.
    pub fn take_quality_drop(&mut self) -> Option<QualityDrop> {
        self.dropped.take()
    }

    fn start(options: VideoOptions) -> Result<Encoder> {
        let qp = options.qp();
        let config = EncoderConfig::new()
            .usage_type(UsageType::CameraVideoRealTime)
            // The fastest search: 1.4x the speed of the default (medium),
            // 0.4 dB less PSNR on camera images at the default quality.
            .complexity(Complexity::Low)
            .rate_control_mode(RateControlMode::Bufferbased)
            .qp(QpRange::new(qp, qp))
            .max_frame_rate(FrameRate::from_hz(30.0))
            .skip_frames(false)
            .intra_frame_period(IntraFramePeriod::from_num_frames(
                options.keyframe_interval.max(1),
            ));
        Encoder::with_api_config(OpenH264API::from_source(), config)
            .map_err(|e| video_error("starting the H.264 encoder", e))
    }

    /// Encodes a frame of `width * height * 3` bytes (`rgb8`, rows top to
    /// bottom).
    pub fn encode_rgb8(&mut self, rgb: &[u8]) -> Result<EncodedFrame> {
        let need = self.width as usize * self.height as usize * 3;
        if rgb.len() != need {
            return Err(MediaError::Invalid(format!(
                "a frame of {} bytes in a {}x{} rgb8 video (needs {need})",
                rgb.len(),
                self.width,
                self.height
            )));
        }
        self.encode(&Yuv420::from_rgb8(self.width, self.height, rgb)?)
    }

    /// Encodes a frame of the encoder's size.
    pub fn encode(&mut self, frame: &Yuv420) -> Result<EncodedFrame> {
        if frame.size() != (self.width, self.height) {
            let (w, h) = frame.size();
            return Err(MediaError::Invalid(format!(
                "a {w}x{h} frame in a {}x{} video",
                self.width, self.height
            )));
        }
        let (w, h) = (self.width as usize, self.height as usize);
        let yuv = YUVSlices::new(frame.planes(), (w, h), (w, w / 2, w / 2));
        let first_error = match self.encoder.encode(&yuv) {
            Ok(encoded) => {
                let frame = Self::frame_of(encoded);
                return Ok(self.counted(frame));
            }
            Err(e) => e,
        };
        // The frame did not fit (or the encoder failed otherwise): a new
        // encoder at each lower quality in turn, until one takes it.
        for quality in QUALITY_STEPS
            .into_iter()
            .filter(|&q| q < self.options.quality)
        {
            let options = VideoOptions {
                quality,
                ..self.options
            };
            let mut encoder = Self::start(options)?;
            let Ok(encoded) = encoder.encode(&yuv) else {
                continue;
            };
            let frame = Self::frame_of(encoded);
            if let (Some((s0, p0)), Some(sps), Some(pps)) = (&self.params, &frame.sps, &frame.pps)
                && (s0 != sps || p0 != pps)
            {
                break;
            }
            self.encoder = encoder;
            self.options = options;
            self.dropped = Some(QualityDrop {
                asked: self.asked,
                now: quality,
                frame: self.frames,
            });
            return Ok(self.counted(frame));
        }
        Err(video_error(
            &format!(
                "encoding a {}x{} frame (also at every lower quality)",
                self.width, self.height
            ),
            first_error,
        ))
    }

    fn counted(&mut self, frame: EncodedFrame) -> EncodedFrame {
        if self.params.is_none()
            && let (Some(s), Some(p)) = (&frame.sps, &frame.pps)
        {
            self.params = Some((s.clone(), p.clone()));
        }
        self.frames += 1;
        frame
    }

    fn frame_of(encoded: openh264::encoder::EncodedBitStream<'_>) -> EncodedFrame {
        let is_sync = matches!(encoded.frame_type(), FrameType::IDR | FrameType::I);
        let annexb = encoded.to_vec();
        let (sample, sps, pps) = to_sample(&annexb);
        EncodedFrame {
            sample,
            is_sync,
            sps,
            pps,
        }
    }
}

/// Encodes `rgb8` frames into an H.264 MP4 file; see the module doc.
pub struct Mp4Encoder<W: Write + Seek> {
    /// Made with the first `rgb8` frame ([`Mp4Encoder::push_encoded`]
    /// takes frames encoded elsewhere).
    encoder: Option<H264Encoder>,
    options: VideoOptions,
    /// Created with the first frame, which carries the SPS and PPS.
    writer: Option<Mp4Writer<W>>,
    out: Option<W>,
    width: u32,
    height: u32,
    /// The track's SPS and PPS.
    params: Option<(Vec<u8>, Vec<u8>)>,
    first_ns: Option<i64>,
    last_ns: i64,
    pending: Option<Pending>,
    frames: u64,
}

impl<W: Write + Seek> std::fmt::Debug for Mp4Encoder<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mp4Encoder")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

/// Whether OpenH264 encodes frames of `width` x `height`: both even, from
/// [`MIN_SIDE`] to [`MAX_SIDE`], the shorter at most [`MAX_SHORT_SIDE`].
pub fn check_size(width: u32, height: u32) -> Result<()> {
    if width == 0 || height == 0 || width % 2 == 1 || height % 2 == 1 {
        return Err(MediaError::Unsupported(format!(
            "a {width}x{height} video: H.264 (4:2:0) needs an even width and height"
        )));
    }
    if width < MIN_SIDE || height < MIN_SIDE {
        return Err(MediaError::Unsupported(format!(
            "a {width}x{height} video: OpenH264 encodes frames of at least {MIN_SIDE}x{MIN_SIDE} pixels"
        )));
    }
    if width.max(height) > MAX_SIDE || width.min(height) > MAX_SHORT_SIDE {
        return Err(MediaError::Limit(format!(
            "a {width}x{height} video: at most {MAX_SIDE}x{MAX_SHORT_SIDE} or {MAX_SHORT_SIDE}x{MAX_SIDE} pixels"
        )));
    }
    Ok(())
}

/// The error of a failed encoder or container call.
fn video_error(what: &str, e: impl std::fmt::Display) -> MediaError {
    MediaError::Write(format!("{what}: {e}"))
}

impl<W: Write + Seek> Mp4Encoder<W> {
    /// An encoder of `width` x `height` frames (both even, from
    /// [`MIN_SIDE`] to [`MAX_SIDE`], the shorter at most [`MAX_SHORT_SIDE`])
    /// writing to `out`.
    pub fn new(out: W, width: u32, height: u32, options: VideoOptions) -> Result<Self> {
        // Checks the size (and that OpenH264 starts) before any frame.
        let encoder = H264Encoder::new(width, height, options)?;
        Ok(Self {
            encoder: Some(encoder),
            options,
            writer: None,
            out: Some(out),
            width,
            height,
            params: None,
            first_ns: None,
            last_ns: 0,
            pending: None,
            frames: 0,
        })
    }

    /// Frames added so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The lowering of the video's quality since the last call, if a frame
    /// did not fit at the quality asked for (see [`H264Encoder`]).
    pub fn take_quality_drop(&mut self) -> Option<QualityDrop> {
        self.encoder
            .as_mut()
            .and_then(H264Encoder::take_quality_drop)
    }

    /// The track's SPS and PPS, once the first frame is in.
    pub fn parameter_sets(&self) -> Option<(&[u8], &[u8])> {
        self.params
            .as_ref()
            .map(|(s, p)| (s.as_slice(), p.as_slice()))
    }

    /// Adds a frame of `width * height * 3` bytes (`rgb8`, rows top to
    /// bottom) shown at `time_ns`, which must be after the previous frame's.
    pub fn push_rgb8(&mut self, time_ns: i64, rgb: &[u8]) -> Result<()> {
        self.check_time(time_ns)?;
        let frame = self.encoder()?.encode_rgb8(rgb)?;
        self.push_encoded(time_ns, frame)
    }

    /// Adds a frame of the video's size shown at `time_ns`, which must be
    /// after the previous frame's.
    pub fn push(&mut self, time_ns: i64, frame: &Yuv420) -> Result<()> {
        self.check_time(time_ns)?;
        let frame = self.encoder()?.encode(frame)?;
        self.push_encoded(time_ns, frame)
    }

    fn encoder(&mut self) -> Result<&mut H264Encoder> {
        if self.encoder.is_none() {
            self.encoder = Some(H264Encoder::new(self.width, self.height, self.options)?);
        }
        self.encoder
            .as_mut()
            .ok_or_else(|| MediaError::Write("the H.264 encoder is gone".into()))
    }

    /// Adds a frame encoded by an [`H264Encoder`] of this size, shown at
    /// `time_ns` (after the previous frame's). The first frame must carry
    /// the SPS and PPS; a later frame carrying different ones is refused
    /// (the track has one pair: start a new file).
    pub fn push_encoded(&mut self, time_ns: i64, frame: EncodedFrame) -> Result<()> {
        self.check_time(time_ns)?;
        let first = *self.first_ns.get_or_insert(time_ns);
        match (&self.params, frame.sps, frame.pps) {
            (None, Some(sps), Some(pps)) => {
                self.start_file(sps.clone(), pps.clone())?;
                self.params = Some((sps, pps));
            }
            (None, _, _) => {
                return Err(MediaError::Write(
                    "the H.264 encoder gave no SPS/PPS with its first frame".into(),
                ));
            }
            (Some((s0, p0)), sps, pps) => {
                if sps.is_some_and(|s| &s != s0) || pps.is_some_and(|p| &p != p0) {
                    return Err(MediaError::Invalid(
                        "a frame with other H.264 parameter sets than the track's".into(),
                    ));
                }
            }
        }
        let start = ticks(time_ns - first);
        self.flush_pending(Some(start))?;
        self.pending = Some(Pending {
            start,
            is_sync: frame.is_sync,
            bytes: Bytes::from(frame.sample),
        });
        self.last_ns = time_ns;
        self.frames += 1;
        Ok(())
    }

    fn check_time(&self, time_ns: i64) -> Result<()> {
        if self.frames > 0 && time_ns <= self.last_ns {
            return Err(MediaError::Invalid(format!(
                "frame {} at {time_ns} ns is not after the previous frame ({} ns)",
                self.frames, self.last_ns
            )));
        }
        Ok(())
    }

    /// Writes the last frame and the file's index; returns the output.
    /// The last frame lasts as long as the one before it (1/30 s when there
    /// is only one).
    pub fn finish(mut self) -> Result<W> {
        self.flush_pending(None)?;
        match self.writer.take() {
            Some(mut w) => {
                w.write_end()
                    .map_err(|e| video_error("writing the MP4 index", e))?;
                Ok(w.into_writer())
            }
            None => Err(MediaError::Invalid(
                "a video needs at least one frame".into(),
            )),
        }
    }

    fn start_file(&mut self, sps: Vec<u8>, pps: Vec<u8>) -> Result<()> {
        let out = self
            .out
            .take()
            .ok_or_else(|| MediaError::Write("the MP4 output is gone".into()))?;
        let config = Mp4Config {
            major_brand: "isom".parse().map_err(|e| video_error("MP4 brand", e))?,
            minor_version: 512,
            compatible_brands: ["isom", "iso2", "avc1", "mp41"]
                .iter()
                .map(|b| b.parse())
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| video_error("MP4 brand", e))?,
            timescale: TIMESCALE,
        };
        let mut w = Mp4Writer::write_start(out, &config)
            .map_err(|e| video_error("writing the MP4 header", e))?;
        w.add_track(&TrackConfig {
            track_type: TrackType::Video,
            timescale: TIMESCALE,
            language: "und".into(),
            media_conf: MediaConfig::AvcConfig(AvcConfig {
                width: self.width as u16,
                height: self.height as u16,
                seq_param_set: sps,
                pic_param_set: pps,
            }),
        })
        .map_err(|e| video_error("adding the video track", e))?;
        self.writer = Some(w);
        Ok(())
    }

    /// Writes the pending frame, lasting until `next` (ticks), or as long
    /// as the frame before it when `next` is `None`.
    fn flush_pending(&mut self, next: Option<u64>) -> Result<()> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        let default = u64::from(TIMESCALE / 30);
        let duration = match next {
            Some(n) => n.saturating_sub(p.start),
            None if self.frames > 1 => {
                let before = ticks(self.last_ns - self.first_ns.unwrap_or(self.last_ns));
                let per_frame = before / (self.frames - 1);
                per_frame.max(1)
            }
            None => default,
        };
        let duration = u32::try_from(duration.max(1)).map_err(|_| {
            MediaError::Limit(format!(
                "a frame shown for {} s (at most {} s between frames)",
                duration / u64::from(TIMESCALE),
                u32::MAX / TIMESCALE
            ))
        })?;
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        w.write_sample(
            1,
            &Mp4Sample {
                start_time: p.start,
                duration,
                rendering_offset: 0,
                is_sync: p.is_sync,
                bytes: p.bytes,
            },
        )
        .map_err(|e| video_error("writing a frame", e))
    }
}

/// Nanoseconds to [`TIMESCALE`] ticks, rounded.
fn ticks(ns: i64) -> u64 {
    let ns = ns.max(0) as u128;
    ((ns * u128::from(TIMESCALE) + 500_000_000) / 1_000_000_000) as u64
}

/// Splits an Annex B access unit into the MP4 sample (each NAL unit prefixed
/// by its 4-byte length, without the SPS and PPS) and the SPS and PPS it
/// holds.
fn to_sample(annexb: &[u8]) -> (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>) {
    let (mut sample, mut sps, mut pps) = (Vec::with_capacity(annexb.len()), None, None);
    for unit in openh264::nal_units(annexb) {
        // Without the start code (00 00 01) and trailing zero bytes (a
        // 4-byte start code's first zero, cabac_zero_words end in 03).
        let start = unit.iter().position(|&b| b == 1).map_or(0, |i| i + 1);
        let end = unit.iter().rposition(|&b| b != 0).map_or(start, |i| i + 1);
        let Some(nal) = unit.get(start..end).filter(|n| !n.is_empty()) else {
            continue;
        };
        match nal[0] & 0x1f {
            7 => sps = Some(nal.to_vec()),
            8 => pps = Some(nal.to_vec()),
            _ => {
                sample.extend((nal.len() as u32).to_be_bytes());
                sample.extend(nal);
            }
        }
    }
    (sample, sps, pps)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    /// A moving gradient with a square: frame `i` of a `w` x `h` video.
    pub(crate) fn frame(w: usize, h: usize, i: usize) -> Vec<u8> {
        let mut f = Vec::with_capacity(w * h * 3);
        for y in 0..h {
            for x in 0..w {
                let inside = (x + 4 * i) % w < 16 && (8..24).contains(&y);
                let v = if inside {
                    255
                } else {
                    ((x + y + i) * 4 % 256) as u8
                };
                f.extend([v, (y * 255 / h) as u8, 255 - v]);
            }
        }
        f
    }

    /// Sensor noise: every byte from a xorshift generator.
    fn noise(w: usize, h: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..w * h * 3)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn noise_is_encoded_at_a_lower_quality_with_the_same_parameter_sets() {
        let (w, h) = (640, 480);
        let mut enc =
            Mp4Encoder::new(Cursor::new(Vec::new()), w, h, VideoOptions::default()).unwrap();
        // A camera frame, then noise (a lens cap off in the dark), then a
        // camera frame again.
        let camera = frame(w as usize, h as usize, 0);
        enc.push_rgb8(0, &camera).unwrap();
        assert_eq!(enc.take_quality_drop(), None);
        enc.push_rgb8(33_000_000, &noise(w as usize, h as usize, 7))
            .unwrap();
        let drop = enc
            .take_quality_drop()
            .expect("the noise frame lowers the quality");
        assert_eq!((drop.asked, drop.frame), (75, 1));
        assert!(drop.now < 75, "{drop:?}");
        assert_eq!(enc.take_quality_drop(), None, "told once");
        enc.push_rgb8(66_000_000, &noise(w as usize, h as usize, 8))
            .unwrap();
        enc.push_rgb8(99_000_000, &camera).unwrap();
        assert_eq!(enc.frames(), 4);
        let bytes = enc.finish().unwrap().into_inner();
        let size = bytes.len() as u64;
        let mut r = mp4::Mp4Reader::read_header(Cursor::new(bytes), size).unwrap();
        assert_eq!(r.tracks().get(&1).unwrap().sample_count(), 4);
        // The noise frame became a key frame of the new encoder.
        assert!(r.read_sample(1, 2).unwrap().unwrap().is_sync);
    }

    #[test]
    fn frames_keep_their_times_in_the_mp4() {
        let times: Vec<i64> = vec![
            1_000_000_000,
            1_033_000_000,
            1_100_000_000,
            1_101_000_000,
            1_500_000_000,
        ];
        let mut enc =
            Mp4Encoder::new(Cursor::new(Vec::new()), 64, 48, VideoOptions::default()).unwrap();
        for (i, t) in times.iter().enumerate() {
            enc.push_rgb8(*t, &frame(64, 48, i)).unwrap();
        }
        assert_eq!(enc.frames(), 5);
        let bytes = enc.finish().unwrap().into_inner();
        let size = bytes.len() as u64;
        let mut r = mp4::Mp4Reader::read_header(Cursor::new(bytes), size).unwrap();
        let track = r.tracks().get(&1).unwrap();
        assert_eq!(track.sample_count(), 5);
        assert_eq!((track.width(), track.height()), (64, 48));
        let mut starts = Vec::new();
        for i in 1..=5 {
            let s = r.read_sample(1, i).unwrap().unwrap();
            assert!(!s.bytes.is_empty());
            if i == 1 {
                assert!(s.is_sync, "the first frame is a key frame");
            }
            starts.push((s.start_time, s.duration));
        }
        // Ticks of 90 kHz since the first frame; the last lasts as long as
        // the average frame before it.
        assert_eq!(
            starts,
            [
                (0, 2970),
                (2970, 6030),
                (9000, 90),
                (9090, 35910),
                (45000, 11250)
            ]
        );
    }

    #[test]
    fn frames_of_several_encoders_follow_one_another_in_one_track() {
        let mut mp4 =
            Mp4Encoder::new(Cursor::new(Vec::new()), 64, 48, VideoOptions::default()).unwrap();
        let mut n = 0i64;
        for _ in 0..2 {
            let mut enc = H264Encoder::new(64, 48, VideoOptions::default()).unwrap();
            for i in 0..3 {
                let f = enc.encode_rgb8(&frame(64, 48, i)).unwrap();
                assert_eq!(f.sps.is_some(), i == 0, "the first frame carries the SPS");
                mp4.push_encoded(n * 33_333_333, f).unwrap();
                n += 1;
            }
        }
        let other = EncodedFrame {
            sample: vec![0, 0, 0, 1, 0x65],
            is_sync: true,
            sps: Some(vec![0x67, 1, 2]),
            pps: Some(vec![0x68, 3]),
        };
        let e = mp4.push_encoded(n * 33_333_333, other).unwrap_err();
        assert!(e.to_string().contains("other H.264 parameter sets"), "{e}");
        let bytes = mp4.finish().unwrap().into_inner();
        let size = bytes.len() as u64;
        let mut r = mp4::Mp4Reader::read_header(Cursor::new(bytes), size).unwrap();
        assert_eq!(r.tracks().get(&1).unwrap().sample_count(), 6);
        let sync: Vec<bool> = (1..=6)
            .map(|i| r.read_sample(1, i).unwrap().unwrap().is_sync)
            .collect();
        assert_eq!(sync, [true, false, false, true, false, false]);
    }

    #[test]
    fn bad_frames_are_refused() {
        let e =
            Mp4Encoder::new(Cursor::new(Vec::new()), 63, 48, VideoOptions::default()).unwrap_err();
        assert!(e.to_string().contains("even width and height"), "{e}");
        let mut enc =
            Mp4Encoder::new(Cursor::new(Vec::new()), 16, 16, VideoOptions::default()).unwrap();
        assert!(enc.push_rgb8(5, &[0; 10]).is_err());
        enc.push_rgb8(5, &frame(16, 16, 0)).unwrap();
        let e = enc.push_rgb8(5, &frame(16, 16, 1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "frame 1 at 5 ns is not after the previous frame (5 ns)"
        );
        for (w, h) in [(4096, 2160), (3840, 2162)] {
            let e = H264Encoder::new(w, h, VideoOptions::default()).unwrap_err();
            assert!(
                e.to_string().contains("at most 3840x2160 or 2160x3840"),
                "{e}"
            );
        }
        let empty =
            Mp4Encoder::new(Cursor::new(Vec::new()), 16, 16, VideoOptions::default()).unwrap();
        assert!(empty.finish().is_err());
    }

    #[test]
    fn quality_maps_to_a_quantizer() {
        let qp = |quality| {
            VideoOptions {
                quality,
                keyframe_interval: 1,
            }
            .qp()
        };
        assert_eq!((qp(100), qp(75), qp(1), qp(0)), (10, 19, 46, 46));
    }
}
