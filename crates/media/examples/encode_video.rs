//! Encodes generated camera frames with [`logsql_media::video::Mp4Encoder`],
//! for the video interop check (tests/interop/video_interop.py) and to time
//! the encoder.
//!
//! `encode_video OUT.mp4 FRAMES.rgb [COUNT] [WIDTH] [HEIGHT] [QUALITY]`
//! writes COUNT (default 60) frames of WIDTH x HEIGHT (default 640 x 480)
//! to OUT.mp4 at irregular times (about 30 fps with jitter and one gap), the
//! same frames as raw `rgb8` one after another to FRAMES.rgb, and prints one
//! line per frame (`<time ns>`) then `encode_ms_per_frame <mean>`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use logsql_media::video::{Mp4Encoder, VideoOptions};

/// Frame `i`: smooth gradients, a moving disc and a textured band, like a
/// camera scene (not noise, which no codec compresses).
fn frame(w: usize, h: usize, i: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(w * h * 3);
    let (cx, cy) = (
        (i * 7) % w,
        h / 2 + ((i as f64 * 0.2).sin() * h as f64 / 4.0) as usize,
    );
    for y in 0..h {
        for x in 0..w {
            let dx = x as i64 - cx as i64;
            let dy = y as i64 - cy as i64;
            let (r, g, b) = if dx * dx + dy * dy < 40 * 40 {
                (230, 40 + (x % 16) as u8 * 4, 30)
            } else if y > h * 3 / 4 {
                let t = (((x / 8 + y / 8 + i) % 2) * 90) as u8;
                (60 + t, 90 + t, 60 + t)
            } else {
                let wave = ((x + 2 * i) as f64 / 40.0).sin() * (y as f64 / 50.0).cos();
                (
                    (x * 255 / w) as u8,
                    (y * 255 / h) as u8,
                    (128.0 + 100.0 * wave) as u8,
                )
            };
            f.extend([r, g, b]);
        }
    }
    f
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: encode_video OUT.mp4 FRAMES.rgb [COUNT] [WIDTH] [HEIGHT] [QUALITY]");
        std::process::exit(2);
    }
    let num = |i: usize, default: usize| {
        args.get(i)
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let (count, w, h) = (num(2, 60), num(3, 640), num(4, 480));
    let options = VideoOptions {
        quality: num(5, usize::from(VideoOptions::default().quality)) as u8,
        ..VideoOptions::default()
    };
    let out = BufWriter::new(File::create(&args[0]).expect("create the mp4"));
    let mut raw = BufWriter::new(File::create(&args[1]).expect("create the raw frames file"));
    let mut enc = Mp4Encoder::new(out, w as u32, h as u32, options).expect("an encoder");
    let mut t: i64 = 1_700_000_000_123_456_789;
    let mut spent = 0.0;
    for i in 0..count {
        let f = frame(w, h, i);
        let started = Instant::now();
        enc.push_rgb8(t, &f).expect("a frame");
        spent += started.elapsed().as_secs_f64();
        raw.write_all(&f).expect("write a raw frame");
        println!("{t}");
        let jitter = ((i * 7919) % 7) as i64 - 3;
        t += 33_333_333 + jitter * 1_000_000 + if i == count / 2 { 200_000_000 } else { 0 };
    }
    let started = Instant::now();
    let mut out = enc.finish().expect("finish the mp4");
    spent += started.elapsed().as_secs_f64();
    out.flush().expect("flush the mp4");
    raw.flush().expect("flush the raw frames");
    println!(
        "encode_ms_per_frame {:.2}",
        spent * 1000.0 / count.max(1) as f64
    );
}
