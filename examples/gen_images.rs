//! Generates a small deterministic MCAP recording of camera images (ROS1
//! `sensor_msgs/Image` and `sensor_msgs/CompressedImage`) for the image tests.
//!
//! ```text
//! cargo run --example gen_images -- tests/data/images.mcap
//! ```
//!
//! | topic | type | messages | what |
//! | --- | --- | ---: | --- |
//! | `/cam/jpeg` | CompressedImage | 3 | 32x24 JPEG (quality 90) of [`gradient`], format `jpeg` |
//! | `/cam/png` | CompressedImage | 2 | 32x24 PNG, format `png` |
//! | `/cam/raw/<encoding>` | Image | 1 | 6x4 pixels of `<encoding>`, rows padded by 2 bytes |
//! | `/cam/bad` | CompressedImage | 2 | the first a 4x2 PNG, the second bytes that are no image |
//!
//! Raw encodings: rgb8, bgr8, rgba8, bgra8, mono8, mono16 (big-endian),
//! 16UC1, 32FC1, bayer_rggb8, bayer_bggr8, bayer_gbrg8, bayer_grbg8, yuv422,
//! yuyv. Every message is logged from `1_000_000_000` ns on, 100 ms apart per
//! topic; frame ids are `camera`. The other pixel values are [`sample`]'s.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use logsql_media::images::codec::{encode_jpeg, encode_png};
use logsql_media::images::{PixelFormat, Pixels};

const HEADER_MSG: &str = "uint32 seq\ntime stamp\nstring frame_id\n";
const IMAGE_MSG: &str = "Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n";
const COMPRESSED_MSG: &str = "Header header\nstring format\nuint8[] data\n";
const SEP: &str =
    "================================================================================\n";

/// Raw encodings, with their bytes per pixel (yuv: per two pixels, halved).
const RAW: &[(&str, usize)] = &[
    ("rgb8", 3),
    ("bgr8", 3),
    ("rgba8", 4),
    ("bgra8", 4),
    ("mono8", 1),
    ("mono16", 2),
    ("16UC1", 2),
    ("32FC1", 4),
    ("bayer_rggb8", 1),
    ("bayer_bggr8", 1),
    ("bayer_gbrg8", 1),
    ("bayer_grbg8", 1),
    ("yuv422", 2),
    ("yuyv", 2),
];

/// The sample byte `c` of pixel (x, y) of message `n`.
fn sample(n: u32, x: u32, y: u32, c: u32) -> u8 {
    ((x * 37 + y * 71 + c * 53 + n * 29) % 256) as u8
}

fn definition(main: &str) -> String {
    format!("{main}{SEP}MSG: std_msgs/Header\n{HEADER_MSG}")
}

struct Ros1(Vec<u8>);

impl Ros1 {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn header(seq: u32, t: u64) -> Self {
        let mut m = Ros1(Vec::new());
        m.u32(seq);
        m.u32((t / 1_000_000_000) as u32);
        m.u32((t % 1_000_000_000) as u32);
        m.bytes(b"camera");
        m
    }
}

fn compressed(seq: u32, t: u64, format: &str, data: &[u8]) -> Vec<u8> {
    let mut m = Ros1::header(seq, t);
    m.bytes(format.as_bytes());
    m.bytes(data);
    m.0
}

/// A 6x4 raw image of `encoding`, each row padded by two bytes of 0xEE.
fn raw(seq: u32, t: u64, encoding: &str, bpp: usize) -> Vec<u8> {
    let (w, h) = (6u32, 4u32);
    let row = w as usize * bpp;
    let step = row + 2;
    let mut data = Vec::new();
    for y in 0..h {
        for i in 0..row {
            let (x, c) = ((i / bpp) as u32, (i % bpp) as u32);
            data.push(sample(0, x, y, c));
        }
        if encoding == "32FC1" {
            // Floats in [0, 1.25]: replace the row's samples with real values.
            let start = data.len() - row;
            for x in 0..w as usize {
                let v = f32::from(sample(0, x as u32, y, 0)) / 204.0;
                data[start + 4 * x..start + 4 * x + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        data.extend_from_slice(&[0xee, 0xee]);
    }
    let mut m = Ros1::header(seq, t);
    m.u32(h);
    m.u32(w);
    m.bytes(encoding.as_bytes());
    m.0.push(u8::from(encoding == "mono16"));
    m.u32(step as u32);
    m.bytes(&data);
    m.0
}

fn rgb(n: u32, w: u32, h: u32) -> Pixels {
    let data = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| (0..3).map(move |c| sample(n, x, y, c))))
        .collect();
    Pixels::new(PixelFormat::Rgb8, w, h, data)
}

/// A smooth 32x24 gradient (JPEG keeps it within a step or two).
fn gradient(n: u32, w: u32, h: u32) -> Pixels {
    let data = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| [x * 8, y * 10, (x + y) * 4 + n * 20]))
        .map(|v| v.min(255) as u8)
        .collect();
    Pixels::new(PixelFormat::Rgb8, w, h, data)
}

fn generate(path: &PathBuf) -> Result<(), Box<dyn std::error::Error>> {
    let out = BufWriter::new(std::fs::File::create(path)?);
    let mut w = mcap::WriteOptions::new()
        .profile("ros1")
        .compression(None)
        .create(out)?;
    let no_meta = BTreeMap::new();
    let image = w.add_schema(
        "sensor_msgs/Image",
        "ros1msg",
        definition(IMAGE_MSG).as_bytes(),
    )?;
    let comp = w.add_schema(
        "sensor_msgs/CompressedImage",
        "ros1msg",
        definition(COMPRESSED_MSG).as_bytes(),
    )?;
    let write = |w: &mut mcap::Writer<_>, ch: u16, seq: u32, data: &[u8]| {
        let t = 1_000_000_000 + u64::from(seq) * 100_000_000;
        let header = mcap::records::MessageHeader {
            channel_id: ch,
            sequence: seq,
            log_time: t,
            publish_time: t,
        };
        w.write_to_known_channel(&header, data)
    };
    let t = |seq: u32| 1_000_000_000 + u64::from(seq) * 100_000_000;
    let jpeg = w.add_channel(comp, "/cam/jpeg", "ros1", &no_meta)?;
    for n in 0..3 {
        let data = encode_jpeg(&gradient(n, 32, 24), 90)?;
        write(&mut w, jpeg, n, &compressed(n, t(n), "jpeg", &data))?;
    }
    let png = w.add_channel(comp, "/cam/png", "ros1", &no_meta)?;
    for n in 0..2 {
        let data = encode_png(&rgb(n, 32, 24))?;
        write(&mut w, png, n, &compressed(n, t(n), "png", &data))?;
    }
    for (encoding, bpp) in RAW {
        let ch = w.add_channel(image, &format!("/cam/raw/{encoding}"), "ros1", &no_meta)?;
        write(&mut w, ch, 0, &raw(0, t(0), encoding, *bpp))?;
    }
    let bad = w.add_channel(comp, "/cam/bad", "ros1", &no_meta)?;
    write(
        &mut w,
        bad,
        0,
        &compressed(0, t(0), "png", &encode_png(&rgb(0, 4, 2))?),
    )?;
    write(
        &mut w,
        bad,
        1,
        &compressed(1, t(1), "jpeg", b"not an image at all"),
    )?;
    w.finish()?;
    Ok(())
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: gen_images OUT.mcap");
        return ExitCode::from(2);
    };
    match generate(&path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_images: {e}");
            ExitCode::FAILURE
        }
    }
}
