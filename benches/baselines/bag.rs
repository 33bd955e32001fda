//! The raw baseline of the ROS1 bag full scan, as a whole process: the bag's
//! top-level records walked in file order over an mmap, every chunk
//! decompressed with the format's own decompressor crate (`lz4_flex` frames,
//! `bzip2` streams, or stored as is) into one reused buffer on one thread, and
//! its message-data records (op 0x02) counted. Prints `count payload_bytes`
//! like `SELECT count(*), sum(length(data))` (benches/raw_compare.sh).
//!
//! ```text
//! cargo build --release --example bag_baseline
//! target/release/examples/bag_baseline target/bench-data/bench-lz4.bag
//! ```

use std::io::Read;

#[path = "raw.rs"]
mod raw;
use raw::{map_arg, u32_at};

/// The value of header field `name` (`len u32`, `name=value` fields).
fn field<'a>(header: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let mut p = 0;
    while p + 4 <= header.len() {
        let len = u32_at(header, p) as usize;
        let f = &header[p + 4..p + 4 + len];
        p += 4 + len;
        if f.len() > name.len() && f[name.len()] == b'=' && f.starts_with(name) {
            return Some(&f[name.len() + 1..]);
        }
    }
    None
}

/// Calls `each(header, data, offset)` for every record of `buf` from `pos` on.
fn records<'a>(buf: &'a [u8], mut pos: usize, mut each: impl FnMut(&'a [u8], &'a [u8], usize)) {
    while pos + 4 <= buf.len() {
        let hl = u32_at(buf, pos) as usize;
        let header = &buf[pos + 4..pos + 4 + hl];
        let dl = u32_at(buf, pos + 4 + hl) as usize;
        let data_at = pos + 8 + hl;
        each(header, &buf[data_at..data_at + dl], pos);
        pos = data_at + dl;
    }
}

/// (messages, payload bytes) of the message-data records of a chunk's data.
fn messages(chunk: &[u8]) -> (u64, u64) {
    let (mut n, mut bytes) = (0, 0);
    records(chunk, 0, |header, data, _| {
        if field(header, b"op") == Some(&[0x02]) {
            n += 1;
            bytes += data.len() as u64;
        }
    });
    (n, bytes)
}

fn main() {
    let (buf, _) = map_arg("bag_baseline FILE.bag");
    assert!(buf.starts_with(b"#ROSBAG V2.0\n"), "not a ROS bag 2.0");
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut out = Vec::new();
    // One lz4 decoder for every chunk: each chunk is one frame, and a new frame
    // resets the decoder's state but keeps its block buffers (a decoder per chunk
    // would allocate and zero them again every time).
    let mut lz4 = lz4_flex::frame::FrameDecoder::new(&[][..]);
    records(&buf, 13, |header, data, at| {
        if field(header, b"op") != Some(&[0x05]) {
            return;
        }
        let size = u32_at(field(header, b"size").expect("chunk size"), 0) as usize;
        let chunk = match field(header, b"compression").expect("chunk compression") {
            b"none" => data,
            codec => {
                out.clear();
                out.reserve(size);
                let read = match codec {
                    b"lz4" => {
                        *lz4.get_mut() = data;
                        lz4.read_to_end(&mut out)
                    }
                    b"bz2" => bzip2::bufread::BzDecoder::new(data).read_to_end(&mut out),
                    other => panic!(
                        "chunk at {at}: compression {:?}",
                        String::from_utf8_lossy(other)
                    ),
                };
                read.unwrap_or_else(|e| panic!("chunk at {at}: {e}"));
                assert_eq!(out.len(), size, "chunk at {at}: decompressed size");
                &out[..]
            }
        };
        let (cn, cb) = messages(chunk);
        n += cn;
        bytes += cb;
    });
    println!("{n} {bytes}");
}
