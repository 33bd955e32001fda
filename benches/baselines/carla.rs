//! The raw baseline of the CARLA positions scan, as a whole process: the
//! recorder's packets walked in file order over an mmap (one thread; the
//! format has no compression), every Position record (0.9.x layout: `u32 id`,
//! 3 × f32 location in cm, 3 × f32 rotation roll/pitch/yaw in degrees)
//! summed. Prints `count sum_x_m sum_yaw_deg` like
//! `SELECT count(*), sum(x), sum(yaw) FROM positions(..)` (x in metres, as
//! logsql converts it; benches/raw_compare.sh).
//!
//! ```text
//! cargo build --release --example carla_baseline
//! target/release/examples/carla_baseline target/bench-data/bench.log
//! ```

#[path = "raw.rs"]
mod raw;
use raw::{map_arg, u16_at, u32_at};

const POSITION: u8 = 6;
const RECORD: usize = 28;

fn f32_at(b: &[u8], pos: usize) -> f32 {
    f32::from_le_bytes(b[pos..pos + 4].try_into().unwrap())
}

fn main() {
    let (buf, _) = map_arg("carla_baseline FILE.log");
    // Header: u16 version, string magic, i64 date, string map name.
    let mut pos = 2;
    assert_eq!(
        &buf[pos + 2..pos + 16],
        b"CARLA_RECORDER",
        "not a CARLA recording"
    );
    pos += 2 + usize::from(u16_at(&buf, pos)) + 8;
    pos += 2 + usize::from(u16_at(&buf, pos));
    let (mut n, mut sum_x, mut sum_yaw) = (0u64, 0f64, 0f64);
    while pos + 5 <= buf.len() {
        let id = buf[pos];
        let size = u32_at(&buf, pos + 1) as usize;
        pos += 5;
        if id == POSITION {
            let count = usize::from(u16_at(&buf, pos));
            for r in buf[pos + 2..pos + 2 + count * RECORD].chunks_exact(RECORD) {
                sum_x += f64::from(f32_at(r, 4)) * 0.01;
                sum_yaw += f64::from(f32_at(r, 24));
            }
            n += count as u64;
        }
        pos += size;
    }
    println!("{n} {sum_x:?} {sum_yaw:?}");
}
