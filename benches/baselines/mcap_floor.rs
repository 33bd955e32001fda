//! The floor of logsql's MCAP full scan, as a whole process: the work the scan
//! cannot leave out, and nothing else, on one thread. Each Chunk record is read
//! with `pread` into one reused buffer (as logsql reads it), decompressed with
//! the `zstd` crate's one-shot decompressor into another, its
//! `uncompressed_crc` checked with `crc32fast` (logsql checks every chunk it
//! reads; the official crate's `IndexedReader`, `mcap_baseline`, does not),
//! and its Message records (op 0x05) counted. Prints `count payload_bytes`
//! like `SELECT count(*), sum(length(data))` (benches/raw_compare.sh, format
//! `mcap-floor`).
//!
//! ```text
//! cargo build --release --example mcap_floor
//! target/release/examples/mcap_floor target/bench-data/bench.mcap [--map]
//! ```
//!
//! `--map` decompresses from a map of the file instead of `pread` copies.
//! Records are walked in file order from the magic to the DataEnd record; the
//! file is trusted (zstd or uncompressed chunks), and anything unexpected
//! panics with its offset.

use std::fs::File;
use std::os::unix::fs::FileExt;

#[path = "raw.rs"]
mod raw;
use raw::{u32_at, u64_at};

const MAGIC: &[u8] = b"\x89MCAP0\r\n";
/// Opcodes: Chunk, Message, DataEnd.
const CHUNK: u8 = 0x06;
const MESSAGE: u8 = 0x05;
const DATA_END: u8 = 0x0F;
/// A Message record's fields before its payload: channel id u16, sequence
/// u32, log time u64, publish time u64.
const MESSAGE_HEADER: u64 = 2 + 4 + 8 + 8;

/// (messages, payload bytes) of a chunk's decompressed records.
fn messages(records: &[u8]) -> (u64, u64) {
    let (mut n, mut bytes, mut p) = (0, 0, 0);
    while p + 9 <= records.len() {
        let len = u64_at(records, p + 1);
        if records[p] == MESSAGE {
            n += 1;
            bytes += len - MESSAGE_HEADER;
        }
        p += 9 + len as usize;
    }
    (n, bytes)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: mcap_floor FILE.mcap [--map]");
    let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // SAFETY: the benchmark file is not modified while it is mapped.
    let map = match args.next().as_deref() {
        Some("--map") => Some(unsafe { memmap2::Mmap::map(&file) }.expect("mmap")),
        _ => None,
    };
    let size = file.metadata().expect("metadata").len();
    let mut magic = [0u8; 8];
    file.read_exact_at(&mut magic, 0).expect("read");
    assert_eq!(magic, MAGIC, "not an MCAP file");
    let mut zstd = zstd::bulk::Decompressor::new().expect("zstd");
    let (mut raw, mut out) = (Vec::new(), Vec::new());
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut pos = 8u64;
    let mut prefix = [0u8; 9];
    while pos + 9 <= size {
        file.read_exact_at(&mut prefix, pos).expect("read");
        let (op, len) = (prefix[0], u64_at(&prefix, 1));
        if op == DATA_END {
            break;
        }
        if op == CHUNK {
            let start = (pos + 9) as usize;
            let record: &[u8] = match &map {
                Some(m) => &m[start..start + len as usize],
                None => {
                    raw.resize(len as usize, 0);
                    file.read_exact_at(&mut raw, pos + 9).expect("read");
                    &raw
                }
            };
            // start u64, end u64, uncompressed size u64, crc u32, compression
            // string, records (u64 length + bytes).
            let uncompressed = u64_at(record, 16) as usize;
            let crc = u32_at(record, 24);
            let name_len = u32_at(record, 28) as usize;
            let compression = &record[32..32 + name_len];
            let at = 32 + name_len;
            let records = &record[at + 8..at + 8 + u64_at(record, at) as usize];
            let records: &[u8] = match compression {
                b"zstd" => {
                    out.clear();
                    out.reserve(uncompressed);
                    zstd.decompress_to_buffer(records, &mut out)
                        .unwrap_or_else(|e| panic!("chunk at {pos}: {e}"));
                    &out
                }
                b"" => records,
                other => panic!("chunk at {pos}: compression {other:?}"),
            };
            assert_eq!(records.len(), uncompressed, "chunk at {pos}: size");
            if crc != 0 {
                assert_eq!(crc32fast::hash(records), crc, "chunk at {pos}: crc");
            }
            let (cn, cb) = messages(records);
            n += cn;
            bytes += cb;
        }
        pos += 9 + len;
    }
    println!("{n} {bytes}");
}
