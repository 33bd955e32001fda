//! A deterministic robot recording for the LeRobot dataset tests and
//! benchmark, shared by `examples/gen_robot.rs` and `tests/it` (included with
//! `#[path = ...]`).
//!
//! One MCAP file (ROS1 messages, profile `ros1`, zstd chunks):
//!
//! | topic | type | rate | first message | content |
//! | --- | --- | --- | --- | --- |
//! | `/joint_states` | `sensor_msgs/JointState` | `joint_hz` (100) | start | 6 joints `j0`..`j5`: [`joint_position`], velocity, effort |
//! | `/cmd` | `sensor_msgs/JointState` | 10 Hz | start + 20 ms | 6 targets: [`command`] |
//! | `/camera/front` | `sensor_msgs/Image` `rgb8` | 30 Hz | start + 50 ms | `width` x `height` [`front_pixel`] |
//! | `/camera/wrist` | `sensor_msgs/CompressedImage` `jpeg` (quality 95) | 15 Hz | start + 70 ms | `width` x `height` [`wrist_pixel`] (only when `wrist`) |
//!
//! Message `i` of a topic of period `P` is logged at `start + offset + i * P`
//! nanoseconds (`publish_time` the same) until `start + seconds`.
//!
//! Variations for the tests: `gap` (no message of any topic in a time
//! range), `tasks` (a `/task` topic of `std_msgs/String`), `metadata` (MCAP
//! metadata records), `joints_after` (`/joint_states` has another number of
//! joints from a time on), `resize_after` (front frames of half the width
//! from a time on), `noise` (front frames of sensor noise, [`noise_pixel`])
//! and `broken_after` (front frames of 30 bytes from a time on: images that
//! do not decode).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// The joints of `/joint_states` and `/cmd`.
pub const JOINTS: usize = 6;

/// What to generate.
#[derive(Debug, Clone)]
pub struct RobotOptions {
    /// Length of the recording in seconds.
    pub seconds: f64,
    /// Log time of the first message, in nanoseconds.
    pub start_ns: u64,
    /// Camera frame width (even).
    pub width: u32,
    /// Camera frame height (even).
    pub height: u32,
    /// Rate of `/joint_states` in Hz.
    pub joint_hz: u32,
    /// Whether to write `/camera/wrist` (JPEG).
    pub wrist: bool,
    /// Varies the signals between recordings.
    pub seed: u32,
    /// No message of any topic from `.0` to `.1` seconds after the start
    /// (both excluded).
    pub gap: Option<(f64, f64)>,
    /// `/task` messages (`std_msgs/String`): (seconds after the start, text).
    pub tasks: Vec<(f64, String)>,
    /// MCAP metadata records: (name, key-value pairs).
    pub metadata: Vec<(String, Vec<(String, String)>)>,
    /// From this many seconds after the start, `/joint_states` has this
    /// many joints (positions `joint_position` of the first ones).
    pub joints_after: Option<(f64, usize)>,
    /// From this many seconds after the start, front frames are half as
    /// wide.
    pub resize_after: Option<f64>,
    /// Front frames are sensor noise ([`noise_pixel`]).
    pub noise: bool,
    /// From this many seconds after the start, front frames hold 30 bytes
    /// of data (fewer than their size needs).
    pub broken_after: Option<f64>,
}

impl Default for RobotOptions {
    fn default() -> Self {
        Self {
            seconds: 2.0,
            start_ns: 1_700_000_000_000_000_000,
            width: 64,
            height: 48,
            joint_hz: 100,
            wrist: false,
            seed: 0,
            gap: None,
            tasks: Vec::new(),
            metadata: Vec::new(),
            joints_after: None,
            resize_after: None,
            noise: false,
            broken_after: None,
        }
    }
}

/// The position of joint `j` at `t_s` seconds after the start.
pub fn joint_position(seed: u32, j: usize, t_s: f64) -> f64 {
    ((j as f64 + 1.0) * 0.7 * t_s + f64::from(seed) + j as f64).sin() * (1.0 + j as f64 * 0.1)
}

/// The command for joint `j` at `t_s` seconds after the start.
pub fn command(seed: u32, j: usize, t_s: f64) -> f64 {
    joint_position(seed, j, t_s + 0.25) + 0.01 * j as f64
}

/// Channel `c` of pixel (x, y) of front frame `n`: a gradient moving one
/// pixel a frame, with a soft bright blob moving across it (camera-like:
/// no hard edges).
pub fn front_pixel(n: u32, x: u32, y: u32, c: u32, w: u32, h: u32) -> u8 {
    // A triangle wave: the gradient folds back instead of wrapping (no edge).
    let p = (x + n) % (2 * w);
    let xs = if p < w { p } else { 2 * w - 1 - p };
    let v = match c {
        0 => xs * 180 / w + 20,
        1 => y * 180 / h + 20,
        _ => (xs + y) * 100 / (w + h) + 60,
    };
    let (cx, cy) = ((n * 2 % w) as f64, (h / 2) as f64);
    let d2 = (f64::from(x) - cx).powi(2) + (f64::from(y) - cy).powi(2);
    let blob = 50.0 * (-d2 / 60.0).exp();
    (f64::from(v) + blob).round().min(255.0) as u8
}

/// Channel `c` of pixel (x, y) of a noise frame `n`: a hash of the four,
/// uniform over 0..=255 (a dark sensor's gain, a lens cap, a thermal
/// camera's flat field).
pub fn noise_pixel(n: u32, x: u32, y: u32, c: u32, w: u32, _h: u32) -> u8 {
    let mut v = (u64::from(n) << 40) ^ (u64::from(y * w + x) << 2) ^ u64::from(c);
    v = v.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    v ^= v >> 29;
    v = v.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (v >> 56) as u8
}

/// Channel `c` of pixel (x, y) of wrist frame `n`: a smooth diagonal gradient.
pub fn wrist_pixel(n: u32, x: u32, y: u32, c: u32, w: u32, h: u32) -> u8 {
    let v = match c {
        0 => (x + y + 2 * n) * 180 / (w + h + 2 * n) + 30,
        1 => 128 + (x * 60 / w),
        _ => 200 - (y * 120 / h),
    };
    v.min(255) as u8
}

const HEADER_MSG: &str = "uint32 seq\ntime stamp\nstring frame_id\n";
const JOINT_MSG: &str =
    "Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n";
const IMAGE_MSG: &str = "Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n";
const COMPRESSED_MSG: &str = "Header header\nstring format\nuint8[] data\n";
const SEP: &str =
    "================================================================================\n";

fn definition(main: &str) -> String {
    format!("{main}{SEP}MSG: std_msgs/Header\n{HEADER_MSG}")
}

/// A ROS1 message being serialised.
struct Ros1(Vec<u8>);

impl Ros1 {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn f64s(&mut self, v: &[f64]) {
        self.u32(v.len() as u32);
        for x in v {
            self.0.extend_from_slice(&x.to_le_bytes());
        }
    }
    fn header(seq: u32, t: u64, frame: &str) -> Self {
        let mut m = Ros1(Vec::new());
        m.u32(seq);
        m.u32((t / 1_000_000_000) as u32);
        m.u32((t % 1_000_000_000) as u32);
        m.bytes(frame.as_bytes());
        m
    }
}

fn joint_state(seq: u32, t: u64, position: &[f64], velocity: &[f64], effort: &[f64]) -> Vec<u8> {
    let mut m = Ros1::header(seq, t, "base");
    m.u32(position.len() as u32);
    for j in 0..position.len() {
        m.bytes(format!("j{j}").as_bytes());
    }
    m.f64s(position);
    m.f64s(velocity);
    m.f64s(effort);
    m.0
}

/// The rgb8 bytes of a frame.
pub fn frame(pixel: fn(u32, u32, u32, u32, u32, u32) -> u8, n: u32, w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity((w * h * 3) as usize);
    for y in 0..h {
        for x in 0..w {
            for c in 0..3 {
                out.push(pixel(n, x, y, c, w, h));
            }
        }
    }
    out
}

/// Writes the recording to `path`.
pub fn write_robot(path: &Path, o: &RobotOptions) -> Result<(), Box<dyn std::error::Error>> {
    let out = BufWriter::new(File::create(path)?);
    let mut w = mcap::WriteOptions::new()
        .profile("ros1")
        .compression(Some(mcap::Compression::Zstd))
        .create(out)?;
    let none = BTreeMap::new();
    let joint_schema = w.add_schema(
        "sensor_msgs/JointState",
        "ros1msg",
        definition(JOINT_MSG).as_bytes(),
    )?;
    let image_schema = w.add_schema(
        "sensor_msgs/Image",
        "ros1msg",
        definition(IMAGE_MSG).as_bytes(),
    )?;
    let comp_schema = w.add_schema(
        "sensor_msgs/CompressedImage",
        "ros1msg",
        definition(COMPRESSED_MSG).as_bytes(),
    )?;
    let joints = w.add_channel(joint_schema, "/joint_states", "ros1", &none)?;
    let cmd = w.add_channel(joint_schema, "/cmd", "ros1", &none)?;
    let front = w.add_channel(image_schema, "/camera/front", "ros1", &none)?;
    let wrist = if o.wrist {
        Some(w.add_channel(comp_schema, "/camera/wrist", "ros1", &none)?)
    } else {
        None
    };
    let task = if o.tasks.is_empty() {
        None
    } else {
        let schema = w.add_schema("std_msgs/String", "ros1msg", b"string data\n")?;
        Some(w.add_channel(schema, "/task", "ros1", &none)?)
    };
    for (name, pairs) in &o.metadata {
        w.write_metadata(&mcap::records::Metadata {
            name: name.clone(),
            metadata: pairs.iter().cloned().collect(),
        })?;
    }
    let end = o.start_ns + (o.seconds * 1e9) as u64;
    // (time, topic order, channel, sequence) of every message, in time order.
    let mut events: Vec<(u64, u8, u16, u32)> = Vec::new();
    let mut add = |ch: u16, order: u8, offset: u64, period: u64| {
        let mut i = 0u32;
        loop {
            let t = o.start_ns + offset + u64::from(i) * period;
            if t > end {
                break;
            }
            events.push((t, order, ch, i));
            i += 1;
        }
    };
    add(joints, 0, 0, 1_000_000_000 / u64::from(o.joint_hz.max(1)));
    add(cmd, 1, 20_000_000, 100_000_000);
    add(front, 2, 50_000_000, 1_000_000_000 / 30);
    if let Some(ch) = wrist {
        add(ch, 3, 70_000_000, 1_000_000_000 / 15);
    }
    if let Some(ch) = task {
        for (i, (at, _)) in o.tasks.iter().enumerate() {
            events.push((o.start_ns + (at * 1e9) as u64, 4, ch, i as u32));
        }
    }
    if let Some((from, to)) = o.gap {
        let (from, to) = (
            o.start_ns + (from * 1e9) as u64,
            o.start_ns + (to * 1e9) as u64,
        );
        events.retain(|e| e.0 <= from || e.0 >= to);
    }
    events.sort();
    for (t, _, ch, seq) in events {
        let t_s = (t - o.start_ns) as f64 / 1e9;
        let payload = if Some(ch) == task {
            let mut m = Ros1(Vec::new());
            m.bytes(o.tasks[seq as usize].1.as_bytes());
            m.0
        } else if ch == joints {
            let n = match o.joints_after {
                Some((after, n)) if t_s >= after => n,
                _ => JOINTS,
            };
            let p: Vec<f64> = (0..n).map(|j| joint_position(o.seed, j, t_s)).collect();
            let v: Vec<f64> = p.iter().map(|x| x * 0.5).collect();
            let e: Vec<f64> = p.iter().enumerate().map(|(j, x)| j as f64 - x).collect();
            joint_state(seq, t, &p, &v, &e)
        } else if ch == cmd {
            let p: Vec<f64> = (0..JOINTS).map(|j| command(o.seed, j, t_s)).collect();
            joint_state(seq, t, &p, &[], &[])
        } else if ch == front {
            let width = match o.resize_after {
                Some(after) if t_s >= after => o.width / 2,
                _ => o.width,
            };
            let mut m = Ros1::header(seq, t, "front");
            m.u32(o.height);
            m.u32(width);
            m.bytes(b"rgb8");
            m.0.push(0);
            m.u32(width * 3);
            let pixel = if o.noise { noise_pixel } else { front_pixel };
            match o.broken_after {
                Some(after) if t_s >= after => m.bytes(&[7; 30]),
                _ => m.bytes(&frame(pixel, seq, width, o.height)),
            }
            m.0
        } else {
            let px = frame(wrist_pixel, seq, o.width, o.height);
            let pixels = logsql_media::images::Pixels::new(
                logsql_media::images::PixelFormat::Rgb8,
                o.width,
                o.height,
                px,
            );
            let jpeg = logsql_media::images::codec::encode_jpeg(&pixels, 95)?;
            let mut m = Ros1::header(seq, t, "wrist");
            m.bytes(b"jpeg");
            m.bytes(&jpeg);
            m.0
        };
        let header = mcap::records::MessageHeader {
            channel_id: ch,
            sequence: seq,
            log_time: t,
            publish_time: t,
        };
        w.write_to_known_channel(&header, &payload)?;
    }
    w.finish()?;
    Ok(())
}
