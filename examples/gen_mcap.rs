//! Generates a deterministic ROS1-style MCAP recording for benchmarks and demos.
//!
//! ```text
//! cargo run --release --example gen_mcap -- OUT.mcap [--seconds N] [--compression zstd|lz4|none]
//!     [--chunk-size BYTES] [--image-bytes BYTES] [--seed N]
//! ```
//!
//! Defaults: 376 s (about 200 MB), zstd, 1 MiB chunks, 50 kB camera images, seed 42.
//! Topics: `/imu` 200 Hz, `/camera/compressed` 10 Hz, `/tf` 50 Hz (ros1), `/diagnostics`
//! 1 Hz (json); see `benches/support/gen.rs`. The small demo file in the repository is
//! `tests/data/demo.mcap`, made with `--seconds 10 --image-bytes 1000`.

#[path = "../benches/support/gen.rs"]
mod gen_support;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: gen_mcap OUT.mcap [--seconds N] [--compression zstd|lz4|none] \
[--chunk-size BYTES] [--image-bytes BYTES] [--seed N]";

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
            "--seed" => opts.seed = num("--seed", value("--seed")?)?,
            "-h" | "--help" => return Err(USAGE.to_string()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{USAGE}")),
            s if out.is_none() => out = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument {s}\n{USAGE}")),
        }
    }
    let out = out.ok_or_else(|| USAGE.to_string())?;
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
