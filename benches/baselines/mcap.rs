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

use mcap::sans_io::indexed_reader::{
    IndexedReadEvent, IndexedReader, IndexedReaderOptions, ReadOrder,
};

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
    let summary = mcap::Summary::read(&buf)
        .expect("summary")
        .expect("file has a summary");
    let mut reader = IndexedReader::new_with_options(&summary, options).expect("IndexedReader");
    let (mut n, mut bytes) = (0u64, 0u64);
    while let Some(event) = reader.next_event() {
        match event.expect("event") {
            IndexedReadEvent::ReadChunkRequest { offset, length } => {
                let start = offset as usize;
                reader
                    .insert_chunk_record_data(offset, &buf[start..start + length])
                    .expect("chunk");
            }
            IndexedReadEvent::Message { data, .. } => {
                n += 1;
                bytes += data.len() as u64;
            }
        }
    }
    println!("{n} {bytes}");
}
