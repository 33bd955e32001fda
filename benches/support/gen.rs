//! A deterministic MCAP generator for benchmarks and demos, shared by
//! `examples/gen_mcap.rs` and `benches/scan.rs` (included with `#[path = ...] mod gen;`).
//!
//! The file looks like a small ROS1 robot recording written with the official
//! `mcap` crate's `Writer`:
//!
//! | topic | encoding | schema | rate | payload |
//! | --- | --- | --- | --- | --- |
//! | `/imu` | `ros1` | `sensor_msgs/Imu` (`ros1msg`) | 200 Hz | 320 bytes |
//! | `/camera/compressed` | `ros1` | `sensor_msgs/CompressedImage` (`ros1msg`) | 10 Hz | ~`image_bytes` (+-10%) incompressible, or with `jpeg` real JPEG frames ([`camera_pixel`]) |
//! | `/tf` | `ros1` | `tf2_msgs/TFMessage` (`ros1msg`) | 50 Hz | 115 bytes |
//! | `/diagnostics` | `json` | `logsql_demo/Diagnostics` (`jsonschema`) | 1 Hz | ~130 bytes |
//!
//! plus one Metadata record (`recording`) and one Attachment (`calibration.yaml`).
//!
//! Message `i` of a topic with period `P` has `log_time = START + offset + i * P` exactly
//! (`publish_time = log_time`, `sequence = i`), where the per-topic offsets (0, 1, 2, 3 ms)
//! keep log times distinct across topics. Payloads come from a seeded PRNG, so the output
//! depends only on the options (and the `mcap`/`zstd` crate versions).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::Path;

/// Unix time of the first message: 2023-11-14T22:13:20Z.
pub const START_NS: u64 = 1_700_000_000_000_000_000;

/// One millisecond in nanoseconds.
const MS: u64 = 1_000_000;

/// Chunk compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Zstandard (the default).
    Zstd,
    /// LZ4 frames.
    Lz4,
    /// Uncompressed chunks.
    None,
}

impl std::str::FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "zstd" => Ok(Self::Zstd),
            "lz4" => Ok(Self::Lz4),
            "none" | "" => Ok(Self::None),
            other => Err(format!("unknown compression {other:?} (zstd, lz4 or none)")),
        }
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct Options {
    /// Seconds of data.
    pub seconds: u64,
    /// Chunk compression.
    pub compression: Compression,
    /// Target uncompressed chunk size in bytes.
    pub chunk_size: u64,
    /// Mean camera payload size in bytes (each image is within +-10% of it).
    pub image_bytes: usize,
    /// PRNG seed.
    pub seed: u64,
    /// `log_time` of the first message (nanoseconds; at least [`START_NS`]).
    pub start: u64,
    /// Camera frames as real JPEGs of this width and height (quality 75,
    /// [`camera_pixel`]) instead of `image_bytes` of noise that only starts
    /// like a JPEG.
    pub jpeg: Option<(u32, u32)>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            seconds: 376,
            compression: Compression::Zstd,
            chunk_size: 1024 * 1024,
            image_bytes: 50_000,
            seed: 42,
            start: START_NS,
            jpeg: None,
        }
    }
}

/// One generated topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicStats {
    /// Topic name.
    pub topic: &'static str,
    /// Messages written.
    pub messages: u64,
    /// Payload bytes written.
    pub payload_bytes: u64,
    /// log_time of the first message (ns).
    pub first: u64,
    /// log_time of the last message (ns).
    pub last: u64,
}

/// What [`generate`] wrote.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Per topic, in the order of the table above.
    pub topics: Vec<TopicStats>,
    /// Size of the file.
    pub file_bytes: u64,
    /// Chunks written.
    pub chunks: usize,
}

impl Stats {
    /// Total messages.
    pub fn messages(&self) -> u64 {
        self.topics.iter().map(|t| t.messages).sum()
    }
    /// Total payload bytes.
    pub fn payload_bytes(&self) -> u64 {
        self.topics.iter().map(|t| t.payload_bytes).sum()
    }
    /// Earliest log_time.
    pub fn start_time(&self) -> u64 {
        self.topics
            .iter()
            .map(|t| t.first)
            .min()
            .unwrap_or(START_NS)
    }
    /// Latest log_time.
    pub fn end_time(&self) -> u64 {
        self.topics.iter().map(|t| t.last).max().unwrap_or(START_NS)
    }
}

/// SplitMix64: tiny, fast, good enough for test payloads, and stable forever.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&last[..n]);
    }
}

const SEP: &str =
    "================================================================================\n";

const HEADER_MSG: &str = "\
# Standard metadata for higher-level stamped data types.
# This is generally used to communicate timestamped data 
# in a particular coordinate frame.
# 
# sequence ID: consecutively increasing ID 
uint32 seq
#Two-integer timestamp that is expressed as:
# * stamp.sec: seconds (stamp_secs) since epoch (in Python the variable is called 'secs')
# * stamp.nsec: nanoseconds since stamp_secs (in Python the variable is called 'nsecs')
# time-handling sugar is provided by the client library
time stamp
#Frame this data is associated with
string frame_id
";

const QUATERNION_MSG: &str = "\
# This represents an orientation in free space in quaternion form.

float64 x
float64 y
float64 z
float64 w
";

const VECTOR3_MSG: &str = "\
# This represents a vector in free space. 
# It is only meant to represent a direction. Therefore, it does not
# make sense to apply a translation to it (e.g., when applying a 
# generic rigid transformation to a Vector3, tf2 will only apply the
# rotation). If you want your data to be translatable too, use the
# geometry_msgs/Point message instead.

float64 x
float64 y
float64 z";

const IMU_MSG: &str = "\
# This is a message to hold data from an IMU (Inertial Measurement Unit)
#
# Accelerations should be in m/s^2 (not in g's), and rotational velocity should be in rad/sec
#
# If the covariance of the measurement is known, it should be filled in (if all you know is the 
# variance of each measurement, e.g. from the datasheet, just put those along the diagonal)
# A covariance matrix of all zeros will be interpreted as \"covariance unknown\", and to use the
# data a covariance will have to be assumed or gotten from some other source
#
# If you have no estimate for one of the data elements (e.g. your IMU doesn't produce an orientation 
# estimate), please set element 0 of the associated covariance matrix to -1
# If you are interpreting this message, please check for a value of -1 in the first element of each 
# covariance matrix, and disregard the associated estimate.

Header header

geometry_msgs/Quaternion orientation
float64[9] orientation_covariance # Row major about x, y, z axes

geometry_msgs/Vector3 angular_velocity
float64[9] angular_velocity_covariance # Row major about x, y, z axes

geometry_msgs/Vector3 linear_acceleration
float64[9] linear_acceleration_covariance # Row major x, y z 
";

const COMPRESSED_IMAGE_MSG: &str = "\
# This message contains a compressed image

Header header        # Header timestamp should be acquisition time of image
                     # Header frame_id should be optical frame of camera
                     # origin of frame should be optical center of camera
                     # +x should point to the right in the image
                     # +y should point down in the image
                     # +z should point into to plane of the image

string format        # Specifies the format of the data
                     #   Acceptable values:
                     #     jpeg, png
uint8[] data         # Compressed image buffer
";

const TF_MESSAGE_MSG: &str = "geometry_msgs/TransformStamped[] transforms\n";

const TRANSFORM_STAMPED_MSG: &str = "\
# This expresses a transform from coordinate frame header.frame_id
# to the coordinate frame child_frame_id
#
# This message is mostly used by the 
# <a href=\"http://wiki.ros.org/tf\">tf</a> package. 
# See its documentation for more information.

Header header
string child_frame_id # the frame id of the child frame
Transform transform
";

const TRANSFORM_MSG: &str = "\
# This represents the transform between two coordinate frames in free space.

Vector3 translation
Quaternion rotation
";

const DIAGNOSTICS_SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "logsql_demo/Diagnostics",
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "level": {"type": "integer", "minimum": 0, "maximum": 3},
    "message": {"type": "string"},
    "cpu_percent": {"type": "number"},
    "temperature_c": {"type": "number"},
    "uptime_s": {"type": "integer"}
  },
  "required": ["name", "level", "message"]
}
"#;

/// A ROS1 full message definition: the type's own text, then each dependency
/// after the 80-`=` separator and a `MSG: pkg/Type` line (as rosbag stores it).
fn ros1_definition(main: &str, deps: &[(&str, &str)]) -> String {
    let mut s = main.to_string();
    for (name, text) in deps {
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(SEP);
        s.push_str("MSG: ");
        s.push_str(name);
        s.push('\n');
        s.push_str(text);
    }
    s
}

/// `sensor_msgs/Imu` with its dependencies.
pub fn imu_definition() -> String {
    ros1_definition(
        IMU_MSG,
        &[
            ("std_msgs/Header", HEADER_MSG),
            ("geometry_msgs/Quaternion", QUATERNION_MSG),
            ("geometry_msgs/Vector3", VECTOR3_MSG),
        ],
    )
}

/// `sensor_msgs/CompressedImage` with its dependencies.
pub fn compressed_image_definition() -> String {
    ros1_definition(COMPRESSED_IMAGE_MSG, &[("std_msgs/Header", HEADER_MSG)])
}

/// `tf2_msgs/TFMessage` with its dependencies.
pub fn tf_message_definition() -> String {
    ros1_definition(
        TF_MESSAGE_MSG,
        &[
            ("geometry_msgs/TransformStamped", TRANSFORM_STAMPED_MSG),
            ("std_msgs/Header", HEADER_MSG),
            ("geometry_msgs/Transform", TRANSFORM_MSG),
            ("geometry_msgs/Vector3", VECTOR3_MSG),
            ("geometry_msgs/Quaternion", QUATERNION_MSG),
        ],
    )
}

/// ROS1 wire-format writer (little-endian, u32-length-prefixed strings/arrays).
struct Ros1(Vec<u8>);

impl Ros1 {
    fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64s(&mut self, vs: &[f64]) {
        for v in vs {
            self.f64(*v);
        }
    }
    fn string(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn header(&mut self, seq: u32, stamp_ns: u64, frame_id: &str) {
        self.u32(seq);
        self.u32((stamp_ns / 1_000_000_000) as u32);
        self.u32((stamp_ns % 1_000_000_000) as u32);
        self.string(frame_id);
    }
}

/// Rounds to a multiple of 2^-12, as a 16-bit sensor's scaled readings would be
/// (keeps the floats realistically compressible).
fn quantize(v: f64) -> f64 {
    (v * 4096.0).round() / 4096.0
}

/// A `sensor_msgs/Imu` payload (320 bytes).
pub fn imu_payload(seq: u32, stamp: u64, rng: &mut Rng) -> Vec<u8> {
    let t = (stamp - START_NS) as f64 / 1e9;
    let yaw = 0.1 * t;
    let (s, c) = (yaw / 2.0).sin_cos();
    let mut noise = |scale: f64| (rng.unit() - 0.5) * scale;
    let mut w = Ros1::with_capacity(320);
    w.header(seq, stamp, "imu_link");
    w.f64s(&[
        quantize(noise(0.002)),
        quantize(noise(0.002)),
        quantize(s),
        quantize(c),
    ]);
    w.f64s(&[1e-4, 0.0, 0.0, 0.0, 1e-4, 0.0, 0.0, 0.0, 1e-4]);
    w.f64s(&[
        quantize(noise(0.02)),
        quantize(noise(0.02)),
        quantize(0.1 + noise(0.02)),
    ]);
    w.f64s(&[2.5e-5, 0.0, 0.0, 0.0, 2.5e-5, 0.0, 0.0, 0.0, 2.5e-5]);
    w.f64s(&[
        quantize(0.3 * (0.5 * t).sin() + noise(0.05)),
        quantize(noise(0.05)),
        quantize(9.80665 + noise(0.05)),
    ]);
    w.f64s(&[4e-4, 0.0, 0.0, 0.0, 4e-4, 0.0, 0.0, 0.0, 4e-4]);
    w.0
}

/// A `sensor_msgs/CompressedImage` payload with `image_len` random bytes.
pub fn image_payload(seq: u32, stamp: u64, image_len: usize, rng: &mut Rng) -> Vec<u8> {
    let mut w = Ros1::with_capacity(image_len + 64);
    w.header(seq, stamp, "camera_optical_frame");
    w.string("jpeg");
    w.u32(image_len as u32);
    let start = w.0.len();
    w.0.resize(start + image_len, 0);
    rng.fill(&mut w.0[start..]);
    // Make it look like a JPEG (SOI ... EOI) without making it compressible.
    if image_len >= 4 {
        w.0[start..start + 2].copy_from_slice(&[0xFF, 0xD8]);
        let end = w.0.len();
        w.0[end - 2..].copy_from_slice(&[0xFF, 0xD9]);
    }
    w.0
}

/// Channel `c` of pixel (x, y) of camera frame `n` (`w` x `h`): a floor
/// and a sky, with a bright disc crossing the view a pixel a frame.
pub fn camera_pixel(n: u32, x: u32, y: u32, c: u32, w: u32, h: u32) -> u8 {
    let horizon = h * 3 / 5;
    let (sky, floor) = ([90u32, 140, 220], [110u32, 95, 70]);
    let base = if y < horizon {
        sky[c as usize] + y * 30 / horizon
    } else {
        floor[c as usize] + (y - horizon) * 60 / (h - horizon).max(1)
    };
    let (cx, cy) = ((n % w) as i64, i64::from(horizon) - i64::from(h / 6));
    let (dx, dy) = (i64::from(x) - cx, i64::from(y) - cy);
    let r = i64::from(h / 6);
    let disc = if dx * dx + dy * dy <= r * r { 90 } else { 0 };
    (base + disc).min(255) as u8
}

/// A `sensor_msgs/CompressedImage` payload holding a real `w` x `h` JPEG of
/// camera frame `seq` ([`camera_pixel`], quality 75).
pub fn jpeg_image_payload(seq: u32, stamp: u64, w: u32, h: u32) -> Vec<u8> {
    let mut rgb = Vec::with_capacity((w * h * 3) as usize);
    for y in 0..h {
        for x in 0..w {
            for c in 0..3 {
                rgb.push(camera_pixel(seq, x, y, c, w, h));
            }
        }
    }
    let pixels =
        logsql_media::images::Pixels::new(logsql_media::images::PixelFormat::Rgb8, w, h, rgb);
    let jpeg = logsql_media::images::codec::encode_jpeg(&pixels, 75).expect("a JPEG of pixels");
    let mut out = Ros1::with_capacity(jpeg.len() + 64);
    out.header(seq, stamp, "camera_optical_frame");
    out.string("jpeg");
    out.u32(jpeg.len() as u32);
    out.0.extend_from_slice(&jpeg);
    out.0
}

/// A `tf2_msgs/TFMessage` payload with one transform `odom -> base_link`.
pub fn tf_payload(seq: u32, stamp: u64) -> Vec<u8> {
    let t = (stamp - START_NS) as f64 / 1e9;
    let yaw = 0.1 * t;
    let (s, c) = (yaw / 2.0).sin_cos();
    let mut w = Ros1::with_capacity(128);
    w.u32(1);
    w.header(seq, stamp, "odom");
    w.string("base_link");
    w.f64s(&[
        quantize(2.0 * (0.1 * t).cos()),
        quantize(2.0 * (0.1 * t).sin()),
        0.0,
    ]);
    w.f64s(&[0.0, 0.0, quantize(s), quantize(c)]);
    w.0
}

/// A `/diagnostics` JSON payload.
pub fn diagnostics_payload(seq: u32, rng: &mut Rng) -> Vec<u8> {
    let level = if seq % 60 == 59 { 1 } else { 0 };
    let message = if level == 0 { "OK" } else { "battery low" };
    let cpu = (rng.unit() * 800.0).round() / 10.0;
    let temp = 40.0 + (rng.unit() * 200.0).round() / 10.0;
    format!(
        r#"{{"name":"base_controller","level":{level},"message":"{message}","cpu_percent":{cpu:.1},"temperature_c":{temp:.1},"uptime_s":{seq}}}"#
    )
    .into_bytes()
}

/// Topic descriptions: (topic, period ns, offset ns).
pub const IMU: (&str, u64, u64) = ("/imu", 5 * MS, 0);
/// The camera.
pub const CAMERA: (&str, u64, u64) = ("/camera/compressed", 100 * MS, MS);
/// Transforms.
pub const TF: (&str, u64, u64) = ("/tf", 20 * MS, 2 * MS);
/// Diagnostics.
pub const DIAGNOSTICS: (&str, u64, u64) = ("/diagnostics", 1000 * MS, 3 * MS);

/// Number of messages of a topic with `period` over `seconds`.
pub fn count(seconds: u64, period: u64) -> u64 {
    seconds * 1_000_000_000 / period
}

/// Writes the file.
pub fn generate(path: &Path, opts: &Options) -> Result<Stats, Box<dyn std::error::Error>> {
    use mcap::records::MessageHeader;

    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    // Write to a temporary name and rename, so an interrupted run never leaves a
    // half-written file that a later run would take as done.
    let tmp = path.with_extension("mcap.partial");
    let out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
    let compression = match opts.compression {
        Compression::Zstd => Some(mcap::Compression::Zstd),
        Compression::Lz4 => Some(mcap::Compression::Lz4),
        Compression::None => None,
    };
    let mut w = mcap::WriteOptions::new()
        .profile("ros1")
        .compression(compression)
        .chunk_size(Some(opts.chunk_size))
        // Single-threaded compression: output identical on every machine.
        .compression_threads(0)
        .create(out)?;

    let no_meta = BTreeMap::new();
    let imu_schema = w.add_schema("sensor_msgs/Imu", "ros1msg", imu_definition().as_bytes())?;
    let img_schema = w.add_schema(
        "sensor_msgs/CompressedImage",
        "ros1msg",
        compressed_image_definition().as_bytes(),
    )?;
    let tf_schema = w.add_schema(
        "tf2_msgs/TFMessage",
        "ros1msg",
        tf_message_definition().as_bytes(),
    )?;
    let diag_schema = w.add_schema(
        "logsql_demo/Diagnostics",
        "jsonschema",
        DIAGNOSTICS_SCHEMA.as_bytes(),
    )?;
    let imu_ch = w.add_channel(imu_schema, IMU.0, "ros1", &no_meta)?;
    let cam_ch = w.add_channel(
        img_schema,
        CAMERA.0,
        "ros1",
        &BTreeMap::from([("callerid".to_string(), "/camera_driver".to_string())]),
    )?;
    let tf_ch = w.add_channel(tf_schema, TF.0, "ros1", &no_meta)?;
    let diag_ch = w.add_channel(diag_schema, DIAGNOSTICS.0, "json", &no_meta)?;

    w.write_metadata(&mcap::records::Metadata {
        name: "recording".into(),
        metadata: BTreeMap::from([
            ("robot".to_string(), "demo-bot-1".to_string()),
            (
                "generator".to_string(),
                "logsql examples/gen_mcap.rs".to_string(),
            ),
            ("seconds".to_string(), opts.seconds.to_string()),
            ("seed".to_string(), opts.seed.to_string()),
        ]),
    })?;
    let calibration = b"camera_matrix: [525.0, 0.0, 319.5, 0.0, 525.0, 239.5, 0.0, 0.0, 1.0]\n\
distortion_model: plumb_bob\n\
distortion_coefficients: [0.0, 0.0, 0.0, 0.0, 0.0]\n\
imu_to_base: [0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 1.0]\n";
    w.attach(&mcap::Attachment {
        log_time: opts.start,
        create_time: opts.start,
        name: "calibration.yaml".into(),
        media_type: "application/yaml".into(),
        data: std::borrow::Cow::Borrowed(calibration),
    })?;

    let mut stats: Vec<TopicStats> = [IMU, CAMERA, TF, DIAGNOSTICS]
        .iter()
        .map(|(topic, _, _)| TopicStats {
            topic,
            messages: 0,
            payload_bytes: 0,
            first: 0,
            last: 0,
        })
        .collect();
    let mut rng = Rng::new(opts.seed);
    let mut img_rng = Rng::new(opts.seed ^ 0x5EED_1A6E);

    // Every period is a multiple of the IMU's 5 ms: walk 5 ms ticks, emitting each
    // topic when its period comes round, in (offset) time order within a tick.
    let ticks = count(opts.seconds, IMU.1);
    for tick in 0..ticks {
        let base = opts.start + tick * IMU.1;
        let elapsed = tick * IMU.1;
        for (slot, (_, period, offset)) in [IMU, CAMERA, TF, DIAGNOSTICS].into_iter().enumerate() {
            if !elapsed.is_multiple_of(period) {
                continue;
            }
            let seq = (elapsed / period) as u32;
            let log_time = base + offset;
            let (channel_id, data) = match slot {
                0 => (imu_ch, imu_payload(seq, log_time, &mut rng)),
                1 if opts.jpeg.is_some() => {
                    let (w, h) = opts.jpeg.unwrap_or_default();
                    (cam_ch, jpeg_image_payload(seq, log_time, w, h))
                }
                1 => {
                    let jitter = opts.image_bytes / 10;
                    let len = opts.image_bytes - jitter
                        + (img_rng.next_u64() % (2 * jitter as u64 + 1)) as usize;
                    (cam_ch, image_payload(seq, log_time, len, &mut img_rng))
                }
                2 => (tf_ch, tf_payload(seq, log_time)),
                _ => (diag_ch, diagnostics_payload(seq, &mut rng)),
            };
            w.write_to_known_channel(
                &MessageHeader {
                    channel_id,
                    sequence: seq,
                    log_time,
                    publish_time: log_time,
                },
                &data,
            )?;
            let s = &mut stats[slot];
            if s.messages == 0 {
                s.first = log_time;
            }
            s.last = log_time;
            s.messages += 1;
            s.payload_bytes += data.len() as u64;
        }
    }
    let summary = w.finish()?;
    let mut out = w.into_inner();
    out.flush()?;
    drop(out);
    std::fs::rename(&tmp, path)?;
    let file_bytes = std::fs::metadata(path)?.len();
    Ok(Stats {
        topics: stats,
        file_bytes,
        chunks: summary.chunk_indexes.len(),
    })
}

/// Generates `path` with `opts` unless it already exists; returns whether it generated.
pub fn ensure(path: &Path, opts: &Options) -> Result<bool, Box<dyn std::error::Error>> {
    if path.is_file() {
        return Ok(false);
    }
    generate(path, opts)?;
    Ok(true)
}
