//! The raw baseline of the BDDF full scan, as a whole process: the blocks
//! walked in file order from offset 4 over an mmap (one thread), every data
//! block counted with its payload (block size less the `DataDescriptor`), up
//! to the end block. BDDF has no compression; `--sha1` first checks the
//! file's SHA1 (of every byte before the digest, with the `sha1` crate)
//! against the trailer, as logsql's default verification of a full scan does.
//! Prints `count payload_bytes` like `SELECT count(*), sum(length(data))`
//! (benches/raw_compare.sh).
//!
//! ```text
//! cargo build --release --example bddf_baseline
//! target/release/examples/bddf_baseline target/bench-data/bench.bddf [--sha1]
//! ```

use sha1::{Digest, Sha1};

#[path = "raw.rs"]
mod raw;
use raw::{map_arg, u32_at, u64_at};

const DATA: u64 = 0x00;
const DESCRIPTOR: u64 = 0x01;
const END: u64 = 0x02;
/// End-block header, index offset, 20-byte SHA1, "FDDB".
const TRAILER: usize = 8 + 8 + 20 + 4;

fn main() {
    let (buf, args) = map_arg("bddf_baseline FILE.bddf [--sha1]");
    assert!(
        buf.starts_with(b"BDDF") && buf.ends_with(b"FDDB"),
        "not a BDDF file"
    );
    if args.iter().any(|a| a == "--sha1") {
        let digest_at = buf.len() - 24;
        let sha = Sha1::digest(&buf[..digest_at]);
        assert!(sha[..] == buf[digest_at..digest_at + 20], "SHA1 mismatch");
    }
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut pos = 4;
    while pos + TRAILER <= buf.len() {
        let header = u64_at(&buf, pos);
        let size = (header & 0x00ff_ffff_ffff_ffff) as usize;
        match header >> 56 {
            DATA => {
                let desc = u32_at(&buf, pos + 8) as usize;
                n += 1;
                bytes += (size - desc) as u64;
                pos += 12 + size;
            }
            DESCRIPTOR => pos += 8 + size,
            END => break,
            kind => panic!("block type {kind} at {pos}"),
        }
    }
    println!("{n} {bytes}");
}
