//! Generates a deterministic ROS1-style MCAP recording for benchmarks and demos.
//!
//! ```text
//! cargo run --release --example gen_mcap -- OUT.mcap [--seconds N] [--compression zstd|lz4|none]
//!     [--chunk-size BYTES] [--image-bytes BYTES] [--jpeg WxH] [--seed N] [--start NANOS]
//! ```
//!
//! `--jpeg WxH`: camera frames are real JPEGs of that size (a disc crossing
//! a sky and a floor) instead of `--image-bytes` of noise that only starts
//! like a JPEG.
//!
//! Defaults: 376 s (about 200 MB), zstd, 1 MiB chunks, 50 kB camera images, seed 42,
//! first message at 2023-11-14T22:13:20Z (`--start 1700000000000000000`, the earliest allowed).
//! Topics: `/imu` 200 Hz, `/camera/compressed` 10 Hz, `/tf` 50 Hz (ros1), `/diagnostics`
//! 1 Hz (json); see `benches/support/gen.rs`.
//!
//! The small demo file in the repository, `tests/data/demo.mcap` (188,393 bytes, 15 zstd
//! chunks, 2,610 messages, 10 s from 2023-11-14T22:13:20Z), is made (by `tests/data/regenerate.sh`) with
//!
//! ```text
//! cargo run --example gen_mcap -- tests/data/demo.mcap --seconds 10 --jpeg 64x48 --chunk-size 65536
//! ```
//!
//! | topic | messages | first log_time | last log_time |
//! | --- | ---: | --- | --- |
//! | `/camera/compressed` | 100 | 22:13:20.001 | 22:13:29.901 |
//! | `/diagnostics` | 10 | 22:13:20.003 | 22:13:29.003 |
//! | `/imu` | 2000 | 22:13:20.000 | 22:13:29.995 |
//! | `/tf` | 500 | 22:13:20.002 | 22:13:29.982 |
//!
//! The ~200 MB benchmark file (`benches/scan.rs`, `benches/compare.sh`) is the default:
//! 193,813,300 bytes, 203 chunks, 98,136 messages (/imu 75,200, /camera/compressed 3,760,
//! /tf 18,800, /diagnostics 376), 213,816,320 payload bytes.

#[path = "../benches/support/gen.rs"]
mod gen_support;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: gen_mcap OUT.mcap [--seconds N] [--compression zstd|lz4|none] \
[--chunk-size BYTES] [--image-bytes BYTES] [--jpeg WxH] [--seed N] [--start NANOS]";

fn parse_args() -> Result<(PathBuf, gen_support::Options), String> {
    let mut opts = gen_support::Options::default();
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        let num =
            |name: &str, v: String| v.parse::<u64>().map_err(|e| format!("{name} {v:?}: {e}"));
        match arg.as_str() {
            "--seconds" => opts.seconds = num("--seconds", value("--seconds")?)?,
            "--compression" => opts.compression = value("--compression")?.parse()?,
            "--chunk-size" => opts.chunk_size = num("--chunk-size", value("--chunk-size")?)?,
            "--image-bytes" => {
                opts.image_bytes = num("--image-bytes", value("--image-bytes")?)? as usize
            }
            "--jpeg" => {
                let v = value("--jpeg")?;
                let size = v
                    .split_once('x')
                    .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                    .filter(|&(w, h): &(u32, u32)| w >= 8 && h >= 8 && w <= 4096 && h <= 4096);
                opts.jpeg = Some(
                    size.ok_or_else(|| format!("--jpeg {v:?} is not WxH (8 to 4096)\n{USAGE}"))?,
                );
            }
            "--seed" => opts.seed = num("--seed", value("--seed")?)?,
            "--start" => opts.start = num("--start", value("--start")?)?,
            "-h" | "--help" => return Err(USAGE.to_string()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{USAGE}")),
            s if out.is_none() => out = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument {s}\n{USAGE}")),
        }
    }
    let out = out.ok_or_else(|| USAGE.to_string())?;
    if opts.start < gen_support::START_NS {
        return Err(format!(
            "--start must be at least {}",
            gen_support::START_NS
        ));
    }
    Ok((out, opts))
}

fn main() -> ExitCode {
    let (out, opts) = match parse_args() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let stats = match gen_support::generate(&out, &opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gen_mcap: {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{}: {} bytes, {} messages, {} payload bytes, {} chunks, {} s of data, written in {:.2?}",
        out.display(),
        stats.file_bytes,
        stats.messages(),
        stats.payload_bytes(),
        stats.chunks,
        opts.seconds,
        started.elapsed()
    );
    println!("| topic | messages | payload bytes | first log_time (ns) | last log_time (ns) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for t in &stats.topics {
        println!(
            "| {} | {} | {} | {} | {} |",
            t.topic, t.messages, t.payload_bytes, t.first, t.last
        );
    }
    ExitCode::SUCCESS
}
