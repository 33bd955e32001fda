//! The raw baseline of the Apollo Cyber RT record full scan, as a whole
//! process: the sections walked in file order from offset 2064 over an mmap
//! (one thread), every chunk body's `SingleMessage`s parsed with a hand-written
//! protobuf wire walker (records are never compressed: no decompressor), up to
//! the INDEX section. Prints `count payload_bytes` like
//! `SELECT count(*), sum(length(data))` (benches/raw_compare.sh).
//!
//! ```text
//! cargo build --release --example apollo_baseline
//! target/release/examples/apollo_baseline target/bench-data/bench.record
//! ```

#[path = "raw.rs"]
mod raw;
use raw::{map_arg, u32_at, u64_at};

/// The first section after the 16-byte section header and 2048-byte header slot.
const FIRST_SECTION: usize = 2064;
const CHUNK_BODY: u32 = 2;
const INDEX: u32 = 3;

/// The varint at `*p`, advancing `*p`.
fn varint(b: &[u8], p: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[*p];
        *p += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Calls `each(field_number, bytes)` for every length-delimited field of the
/// protobuf message `msg`, skipping the others.
fn len_fields<'a>(msg: &'a [u8], mut each: impl FnMut(u64, &'a [u8])) {
    let mut p = 0;
    while p < msg.len() {
        let key = varint(msg, &mut p);
        match key & 7 {
            0 => {
                varint(msg, &mut p);
            }
            1 => p += 8,
            2 => {
                let len = varint(msg, &mut p) as usize;
                each(key >> 3, &msg[p..p + len]);
                p += len;
            }
            5 => p += 4,
            wire => panic!("wire type {wire}"),
        }
    }
}

fn main() {
    let (buf, _) = map_arg("apollo_baseline FILE.record");
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut pos = FIRST_SECTION;
    while pos + 16 <= buf.len() {
        let kind = u32_at(&buf, pos);
        let size = u64_at(&buf, pos + 8) as usize;
        let body = &buf[pos + 16..pos + 16 + size];
        match kind {
            INDEX => break,
            // ChunkBody { repeated SingleMessage messages = 1 }
            CHUNK_BODY => len_fields(body, |f, message| {
                if f == 1 {
                    n += 1;
                    // SingleMessage { channel_name = 1; time = 2; content = 3 }
                    len_fields(message, |f, content| {
                        if f == 3 {
                            bytes += content.len() as u64;
                        }
                    });
                }
            }),
            _ => {}
        }
        pos += 16 + size;
    }
    println!("{n} {bytes}");
}
