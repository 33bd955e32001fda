//! Shared by the hand-written raw baselines (`bag.rs`, `apollo.rs`, `bddf.rs`,
//! `carla.rs`, `mcap_floor.rs`): the file named on the command line mapped into memory, and
//! little-endian integer reads. These baselines are the reference logsql is
//! measured against, so they use none of logsql's code; they trust the
//! benchmark files and panic (with the offset) on anything unexpected.

use std::fs::File;

/// The file named by the first argument, mapped; the remaining arguments.
#[allow(dead_code)]
pub fn map_arg(usage: &str) -> (memmap2::Mmap, Vec<String>) {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| {
        eprintln!("usage: {usage}");
        std::process::exit(2)
    });
    let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // SAFETY: the benchmark file is not modified while it is mapped.
    // Populated: the page tables are filled in one go instead of one fault per
    // few pages as the walk goes (the file is in the page cache when timed).
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    (map, args.collect())
}

/// The little-endian u16 at `pos`.
#[allow(dead_code)]
pub fn u16_at(b: &[u8], pos: usize) -> u16 {
    u16::from_le_bytes(b[pos..pos + 2].try_into().unwrap())
}

/// The little-endian u32 at `pos`.
pub fn u32_at(b: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(b[pos..pos + 4].try_into().unwrap())
}

/// The little-endian u64 at `pos`.
#[allow(dead_code)]
pub fn u64_at(b: &[u8], pos: usize) -> u64 {
    u64::from_le_bytes(b[pos..pos + 8].try_into().unwrap())
}
