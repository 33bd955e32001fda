//! The raw-reader baseline of the MCAP full scan, as a whole process: every
//! message of a file iterated with the official `mcap` crate's indexed reader
//! (`mcap::sans_io::IndexedReader` over an mmap, one thread), printing
//! `count payload_bytes` like `SELECT count(*), sum(length(data))`.
//!
//! ```text
//! cargo build --release --example mcap_baseline
//! hyperfine -N "target/release/examples/mcap_baseline target/bench-data/bench.mcap" \
//!     "target/release/logsql \"SELECT count(*), sum(length(data)) FROM 'target/bench-data/bench.mcap'\""
//! ```
//!
//! `--file-order` reads chunks in file order instead of log-time order.

use std::fs::File;

use mcap::sans_io::indexed_reader::{IndexedReaderOptions, ReadOrder};

#[path = "../support/mcap_indexed.rs"]
mod mcap_indexed;
use mcap_indexed::mcap_indexed;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: mcap_baseline FILE [--file-order]");
    let options = match args.next().as_deref() {
        Some("--file-order") => IndexedReaderOptions::new().with_order(ReadOrder::File),
        _ => IndexedReaderOptions::new(),
    };
    let file = File::open(&path).expect("open");
    // SAFETY: the benchmark file is not modified while it is mapped.
    let buf = unsafe { memmap2::Mmap::map(&file) }.expect("mmap");
    let (n, bytes) = mcap_indexed(&buf, options);
    println!("{n} {bytes}");
}
