//! Chunk decompression shared by the format readers.
//!
//! Every codec decompresses into a caller-provided buffer whose size is bounded
//! by the size the file declares, so a corrupt size field cannot make a reader
//! allocate without limit.

use std::io::Read;

/// Largest uncompressed chunk logsql accepts (4 GiB); larger declared sizes are corruption.
pub const MAX_CHUNK_SIZE: u64 = 4 << 30;

/// A chunk codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Stored as is.
    None,
    /// Zstandard frames (several frames and trailing padding are accepted).
    Zstd,
    /// LZ4 frame format.
    Lz4,
}

impl Codec {
    /// The codec named `name` in a file (`""`/`none`, `zstd`, `lz4`), if supported.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "" | "none" => Some(Codec::None),
            "zstd" => Some(Codec::Zstd),
            "lz4" => Some(Codec::Lz4),
            _ => None,
        }
    }
}

/// Decompresses `src` into `dst`, which is cleared first.
///
/// `expected` is the size the file declares; the output is capped at it (and
/// at [`MAX_CHUNK_SIZE`]), and a different actual size is an error message.
pub fn decompress(
    codec: Codec,
    src: &[u8],
    expected: u64,
    dst: &mut Vec<u8>,
) -> Result<(), String> {
    dst.clear();
    if expected > MAX_CHUNK_SIZE {
        return Err(format!(
            "declared uncompressed size {expected} exceeds the {MAX_CHUNK_SIZE}-byte limit"
        ));
    }
    match codec {
        Codec::None => dst.extend_from_slice(src),
        Codec::Zstd => read_capped(zstd_reader(src)?, src.len(), expected, dst)?,
        Codec::Lz4 => read_capped(
            lz4_flex::frame::FrameDecoder::new(src),
            src.len(),
            expected,
            dst,
        )?,
    }
    if dst.len() as u64 != expected {
        return Err(format!(
            "decompressed {} bytes, expected {expected}",
            dst.len()
        ));
    }
    Ok(())
}

fn zstd_reader(src: &[u8]) -> Result<impl Read + '_, String> {
    // Accepts concatenated frames; stops at trailing zero padding after the last frame.
    zstd::stream::read::Decoder::with_buffer(src).map_err(|e| format!("zstd: {e}"))
}

fn read_capped(
    reader: impl Read,
    src_len: usize,
    expected: u64,
    dst: &mut Vec<u8>,
) -> Result<(), String> {
    // Reserve what the file declares, but no more than a generous multiple of the
    // compressed size: a corrupt size field must not make us allocate up front
    // what the data cannot produce (the buffer still grows if the data does).
    let plausible = (src_len as u64)
        .saturating_mul(1024)
        .saturating_add(1 << 20);
    dst.reserve(usize::try_from(expected.min(plausible)).unwrap_or(0));
    // One byte more than expected, to detect oversize output without unbounded reads.
    let mut limited = reader.take(expected + 1);
    match limited.read_to_end(dst) {
        Ok(_) => Ok(()),
        // Trailing padding after the last zstd frame: keep what was decoded.
        Err(_) if dst.len() as u64 == expected => Ok(()),
        Err(e) => Err(format!(
            "decompression failed after {} bytes: {e}",
            dst.len()
        )),
    }
}
