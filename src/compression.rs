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
    /// LZ4 frame format (any flavour: independent or linked blocks, with or
    /// without content size and checksums — ROS `roslz4` and python-lz4 both).
    Lz4,
    /// bzip2 stream(s) (ROS bags).
    Bz2,
}

impl Codec {
    /// The codec named `name` in a file (`""`/`none`, `zstd`, `lz4`, `bz2`), if supported.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "" | "none" => Some(Codec::None),
            "zstd" => Some(Codec::Zstd),
            "lz4" => Some(Codec::Lz4),
            "bz2" => Some(Codec::Bz2),
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
    #[cfg(logsql_sweep_memo)]
    return sweep_memo::decompress(codec, src, expected, dst);
    #[cfg(not(logsql_sweep_memo))]
    decompress_uncached(codec, src, expected, dst)
}

/// [`decompress`] itself, without the sweep memo.
fn decompress_uncached(
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
        Codec::Zstd => {
            if !zstd_bulk(src, expected, dst) {
                read_capped(zstd_reader(src)?, src.len(), expected, dst)?;
            }
        }
        Codec::Lz4 => read_capped(
            lz4_flex::frame::FrameDecoder::new(src),
            src.len(),
            expected,
            dst,
        )?,
        Codec::Bz2 => read_capped(
            bzip2::bufread::MultiBzDecoder::new(src),
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

/// A memo of successful decompressions, compiled only with
/// `RUSTFLAGS="--cfg logsql_sweep_memo"` for the every-offset truncation sweep
/// (`tests/it/hardening_sweeps.rs`): a file cut at every offset decompresses
/// the same complete chunks again at every cut, which makes bzip2 bags cost
/// hours. Decompression is a pure function of `(codec, src, expected)`, so the
/// memo returns exactly what decompressing again would; the key compares the
/// whole input, not only its hash. Failures are not memoized.
#[cfg(logsql_sweep_memo)]
mod sweep_memo {
    use super::{Codec, decompress_uncached};
    use std::collections::HashMap;
    use std::hash::{Hash, Hasher};
    use std::sync::{Mutex, OnceLock};

    /// Inputs and outputs, by a hash of the input; cleared beyond this many bytes.
    const LIMIT: usize = 1 << 30;

    type Entry = (Codec, u64, Vec<u8>, Vec<u8>);

    #[derive(Default)]
    struct Memo {
        entries: HashMap<u64, Vec<Entry>>,
        bytes: usize,
    }

    fn memo() -> &'static Mutex<Memo> {
        static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
        MEMO.get_or_init(Default::default)
    }

    pub(super) fn decompress(
        codec: Codec,
        src: &[u8],
        expected: u64,
        dst: &mut Vec<u8>,
    ) -> Result<(), String> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        src.hash(&mut h);
        expected.hash(&mut h);
        let key = h.finish();
        if let Ok(m) = memo().lock() {
            let hit = m.entries.get(&key).and_then(|v| {
                v.iter()
                    .find(|(c, e, i, _)| *c == codec && *e == expected && i[..] == *src)
            });
            if let Some((_, _, _, out)) = hit {
                dst.clear();
                dst.extend_from_slice(out);
                return Ok(());
            }
        }
        decompress_uncached(codec, src, expected, dst)?;
        if let Ok(mut m) = memo().lock() {
            if m.bytes + src.len() + dst.len() > LIMIT {
                *m = Memo::default();
            }
            m.bytes += src.len() + dst.len();
            m.entries
                .entry(key)
                .or_default()
                .push((codec, expected, src.to_vec(), dst.clone()));
        }
        Ok(())
    }
}

thread_local! {
    /// One reusable zstd decompression context per thread.
    static ZSTD: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// One-shot zstd decompression into `dst` (with exactly `expected` bytes of
/// room), the fast path for well-formed chunks. Returns `false` (with `dst`
/// cleared) when it cannot be used or fails, e.g. on trailing padding after the
/// last frame; the streaming decoder then takes over.
fn zstd_bulk(src: &[u8], expected: u64, dst: &mut Vec<u8>) -> bool {
    if expected > plausible_size(src.len()) {
        return false;
    }
    let Ok(expected) = usize::try_from(expected) else {
        return false;
    };
    dst.reserve(expected);
    let ok = ZSTD
        .try_with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else {
                return false;
            };
            if slot.is_none() {
                *slot = zstd::bulk::Decompressor::new().ok();
            }
            let Some(d) = slot.as_mut() else {
                return false;
            };
            // Writes into the spare capacity; output larger than it is an error.
            matches!(d.decompress_to_buffer(src, dst), Ok(n) if n == expected)
        })
        .unwrap_or(false);
    if !ok {
        dst.clear();
    }
    ok
}

/// The most a compressed payload of `src_len` bytes is assumed to expand to when
/// reserving memory up front.
fn plausible_size(src_len: usize) -> u64 {
    (src_len as u64)
        .saturating_mul(1024)
        .saturating_add(1 << 20)
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
    dst.reserve(usize::try_from(expected.min(plausible_size(src_len))).unwrap_or(0));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Vec<u8> {
        (0..50_000u32).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn zstd_tolerates_trailing_padding_and_several_frames() {
        let d = data();
        let mut src = zstd::encode_all(&d[..25_000], 3).unwrap();
        src.extend(zstd::encode_all(&d[25_000..], 3).unwrap());
        src.extend([0u8; 13]);
        let mut out = Vec::new();
        decompress(Codec::Zstd, &src, d.len() as u64, &mut out).unwrap();
        assert_eq!(out, d);
    }

    #[test]
    fn wrong_declared_sizes_are_errors() {
        let d = data();
        let src = zstd::encode_all(&d[..], 3).unwrap();
        let mut out = Vec::new();
        let e = decompress(Codec::Zstd, &src, d.len() as u64 - 1, &mut out).unwrap_err();
        assert!(e.contains("expected"), "{e}");
        assert!(out.len() <= d.len());
        let e = decompress(Codec::Zstd, &src, d.len() as u64 + 1, &mut out).unwrap_err();
        assert!(e.contains("expected"), "{e}");
        let e = decompress(Codec::Zstd, &src, MAX_CHUNK_SIZE + 1, &mut out).unwrap_err();
        assert!(e.contains("limit"), "{e}");
        let e = decompress(Codec::None, &d, 3, &mut out).unwrap_err();
        assert!(e.contains("expected 3"), "{e}");
        // A huge (but allowed) declared size over tiny input fails without reserving it.
        let e = decompress(Codec::Zstd, &src[..10], MAX_CHUNK_SIZE, &mut out).unwrap_err();
        assert!(e.contains("failed") || e.contains("expected"), "{e}");
        assert!(out.capacity() < 64 << 20, "{}", out.capacity());
    }

    #[test]
    fn lz4_frames_round_trip() {
        let d = data();
        let mut enc = lz4_flex::frame::FrameEncoder::new(Vec::new());
        std::io::Write::write_all(&mut enc, &d).unwrap();
        let src = enc.finish().unwrap();
        let mut out = Vec::new();
        decompress(Codec::Lz4, &src, d.len() as u64, &mut out).unwrap();
        assert_eq!(out, d);
        assert!(decompress(Codec::Lz4, &src[..src.len() / 2], d.len() as u64, &mut out).is_err());
    }

    #[test]
    fn bz2_round_trips_and_rejects_damage() {
        let d = data();
        let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
        std::io::Write::write_all(&mut enc, &d).unwrap();
        let src = enc.finish().unwrap();
        let mut out = Vec::new();
        decompress(Codec::Bz2, &src, d.len() as u64, &mut out).unwrap();
        assert_eq!(out, d);
        assert!(decompress(Codec::Bz2, &src[..src.len() / 2], d.len() as u64, &mut out).is_err());
        let e = decompress(Codec::Bz2, &src, d.len() as u64 - 7, &mut out).unwrap_err();
        assert!(e.contains("expected"), "{e}");
        assert!(decompress(Codec::Bz2, b"BZh9garbage", 100, &mut out).is_err());
    }

    #[test]
    fn lz4_linked_blocks_with_content_size_decode() {
        // The python-lz4 / rosbags flavour: linked blocks, content size, 64 KiB blocks.
        let d: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let info = lz4_flex::frame::FrameInfo::new()
            .block_mode(lz4_flex::frame::BlockMode::Linked)
            .block_size(lz4_flex::frame::BlockSize::Max64KB)
            .content_size(Some(d.len() as u64));
        let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        std::io::Write::write_all(&mut enc, &d).unwrap();
        let src = enc.finish().unwrap();
        let mut out = Vec::new();
        decompress(Codec::Lz4, &src, d.len() as u64, &mut out).unwrap();
        assert_eq!(out, d);
    }

    #[test]
    fn codec_names() {
        assert_eq!(Codec::from_name(""), Some(Codec::None));
        assert_eq!(Codec::from_name("zstd"), Some(Codec::Zstd));
        assert_eq!(Codec::from_name("lz4"), Some(Codec::Lz4));
        assert_eq!(Codec::from_name("bz2"), Some(Codec::Bz2));
        assert_eq!(Codec::from_name("brotli"), None);
    }
}
