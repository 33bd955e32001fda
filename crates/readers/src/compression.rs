//! Chunk decompression shared by the format readers.
//!
//! Every codec decompresses into a caller-provided buffer whose size is bounded
//! by the size the file declares, so a corrupt size field cannot make a reader
//! allocate without limit.

use std::io::Read;

use arrow_buffer::Buffer;

use crate::byte_buf::ByteBuf;

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
    dst: &mut ByteBuf,
) -> Result<(), String> {
    #[cfg(logsql_sweep_memo)]
    return sweep_memo::decompress(codec, src, expected, dst);
    #[cfg(not(logsql_sweep_memo))]
    decompress_uncached(codec, src, expected, dst)
}

/// [`decompress`] of `src`, which lies in the shared buffer `owner`: an lz4
/// frame is then read by a decoder kept for the thread's next chunk, which holds
/// a clone of `owner` while it reads. A decoder made for each chunk allocates,
/// faults in and zeroes its block buffers (for ROS `roslz4` frames, 4 MiB
/// blocks) every time. Other codecs, and `src` outside `owner`, take
/// [`decompress`].
pub(crate) fn decompress_shared(
    codec: Codec,
    src: &[u8],
    owner: &Buffer,
    expected: u64,
    dst: &mut ByteBuf,
) -> Result<(), String> {
    let shared = crate::formats::chunk_io::offset_in(owner, src);
    let (start, kind) = match (shared, lz4_frame_kind(src)) {
        (Some(start), Some(kind))
            if codec == Codec::Lz4 && expected <= MAX_CHUNK_SIZE && !cfg!(logsql_sweep_memo) =>
        {
            (start, kind)
        }
        _ => return decompress(codec, src, expected, dst),
    };
    let input = SharedInput(owner.slice_with_length(start, src.len()));
    LZ4.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return decompress(codec, src, expected, dst);
        };
        // The decoder sizes its buffers for the first frame it reads (and
        // asserts, in debug builds, that later frames fit them exactly): a frame
        // of another block size or mode gets a new one.
        let decoder = match slot.as_mut() {
            Some((k, decoder)) if *k == kind => decoder,
            _ => {
                let empty = std::io::Cursor::new(SharedInput::empty());
                &mut slot
                    .insert((kind, lz4_flex::frame::FrameDecoder::new(empty)))
                    .1
            }
        };
        *decoder.get_mut() = std::io::Cursor::new(input);
        let result = read_capped(&mut *decoder, src.len(), expected, dst)
            .and_then(|()| check_size(dst, expected));
        // A frame left half read (damaged input can end mid-frame and still
        // give the declared size) would be continued by the next chunk. An end
        // mark ends such a frame, and is nothing to a decoder between frames:
        // the decoder is kept only if reading one gives no output and no error.
        *decoder.get_mut() = std::io::Cursor::new(SharedInput::end_mark());
        let clean = matches!(decoder.read(&mut [0u8; 1]), Ok(0));
        // Let go of the chunk buffer, so that its reader can reuse it.
        *decoder.get_mut() = std::io::Cursor::new(SharedInput::empty());
        if result.is_err() || !clean {
            *slot = None;
        }
        result
    })
}

/// The error of a decompression that did not give the declared size.
fn check_size(dst: &[u8], expected: u64) -> Result<(), String> {
    if dst.len() as u64 == expected {
        Ok(())
    } else {
        Err(format!(
            "decompressed {} bytes, expected {expected}",
            dst.len()
        ))
    }
}

/// The block mode and maximum block size of the lz4 frame `src` starts with
/// (its FLG byte's independence bit and its BD byte), if it starts with the
/// magic number of the lz4 frame format.
fn lz4_frame_kind(src: &[u8]) -> Option<(u8, u8)> {
    const MAGIC: [u8; 4] = 0x184D_2204u32.to_le_bytes();
    match src {
        [m0, m1, m2, m3, flg, bd, ..] if [*m0, *m1, *m2, *m3] == MAGIC => {
            Some((flg & 0x20, bd & 0x70))
        }
        _ => None,
    }
}

/// Compressed bytes the kept lz4 decoder reads: a clone of the buffer they lie in.
struct SharedInput(Buffer);

impl SharedInput {
    /// No input: what the kept decoder holds between chunks.
    fn empty() -> Self {
        Self(Buffer::from_vec(Vec::<u8>::new()))
    }

    /// An lz4 frame's end mark (a block size of zero).
    fn end_mark() -> Self {
        Self(Buffer::from_vec(vec![0u8; 4]))
    }
}

impl AsRef<[u8]> for SharedInput {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The lz4 frame decoder [`decompress_shared`] keeps, over shared input.
type Lz4Decoder = lz4_flex::frame::FrameDecoder<std::io::Cursor<SharedInput>>;

thread_local! {
    /// The lz4 frame decoder [`decompress_shared`] keeps for the thread's next chunk.
    static LZ4: std::cell::RefCell<Option<((u8, u8), Lz4Decoder)>> =
        const { std::cell::RefCell::new(None) };
}

/// [`decompress`] itself, without the sweep memo.
fn decompress_uncached(
    codec: Codec,
    src: &[u8],
    expected: u64,
    dst: &mut ByteBuf,
) -> Result<(), String> {
    if expected > MAX_CHUNK_SIZE {
        dst.clear();
        return Err(format!(
            "declared uncompressed size {expected} exceeds the {MAX_CHUNK_SIZE}-byte limit"
        ));
    }
    match codec {
        Codec::None => {
            dst.room_for(src.len());
            dst.extend_from_slice(src);
        }
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
    check_size(dst, expected)
}

/// A memo of successful decompressions, compiled only with
/// `RUSTFLAGS="--cfg logsql_sweep_memo"` for the every-offset truncation sweep
/// (`tests/readers/hardening_sweeps.rs`): a file cut at every offset decompresses
/// the same complete chunks again at every cut, which makes bzip2 bags cost
/// hours. Decompression is a pure function of `(codec, src, expected)`, so the
/// memo returns exactly what decompressing again would; the key compares the
/// whole input, not only its hash. Failures are not memoized.
#[cfg(logsql_sweep_memo)]
mod sweep_memo {
    use super::{ByteBuf, Codec, decompress_uncached};
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
        dst: &mut ByteBuf,
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
                .push((codec, expected, src.to_vec(), dst.to_vec()));
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
fn zstd_bulk(src: &[u8], expected: u64, dst: &mut ByteBuf) -> bool {
    if expected > plausible_size(src.len()) {
        return false;
    }
    let Ok(expected) = usize::try_from(expected) else {
        return false;
    };
    dst.room_for(expected);
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
            // Writes into the room made; output larger than it is an error.
            match d.decompress_to_buffer(src, dst.spare_mut()) {
                Ok(n) if n == expected => {
                    dst.set_len(n);
                    true
                }
                _ => false,
            }
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

/// Reads the decompressed output of `reader` into `dst`, which must come to
/// `expected` bytes; the caller checks the size `dst` ends with.
///
/// `dst`'s old content is overwritten, not cleared first: a buffer reused from
/// the previous chunk is zero-filled only where it grows, where reading into a
/// cleared `Vec` (`read_to_end`) would zero every chunk's whole output before
/// decompressing into it.
fn read_capped(
    mut reader: impl Read,
    src_len: usize,
    expected: u64,
    dst: &mut ByteBuf,
) -> Result<(), String> {
    let n = match usize::try_from(expected) {
        Ok(n) if expected <= plausible_size(src_len) => n,
        // A declared size the data cannot produce: reserve only what it plausibly
        // can, and let the buffer grow if the data does.
        _ => return read_to_end_capped(reader, src_len, expected, dst),
    };
    let out = dst.resize_for_overwrite(n);
    let mut filled = 0;
    let mut failed = None;
    while filled < n {
        match reader.read(&mut out[filled..]) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    dst.truncate(filled);
    if let Some(e) = failed {
        return Err(format!("decompression failed after {filled} bytes: {e}"));
    }
    if filled == n {
        // One byte more would be more than declared.
        let mut probe = [0u8; 1];
        loop {
            match reader.read(&mut probe) {
                Ok(0) => break,
                Ok(_) => {
                    dst.push(probe[0]);
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // Trailing padding after the last zstd frame: keep what was decoded.
                Err(_) => break,
            }
        }
    }
    Ok(())
}

/// Reads all of `reader` into `buf` (cleared first), never holding more than
/// `limit + 1` bytes: the buffer grows by doubling up to that bound, not past
/// it as `read_to_end` would. `Ok(false)` when the output exceeds `limit`.
pub fn read_bounded(mut reader: impl Read, limit: u64, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    buf.clear();
    let bound = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let mut filled = 0;
    let result = loop {
        if filled == bound {
            break Ok(false);
        }
        if filled == buf.len() {
            let want = buf.len().saturating_mul(2).max(READ_STEP).min(bound);
            buf.reserve_exact(want - buf.len());
            buf.resize(want, 0);
        }
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break Ok(true),
            Ok(k) => filled += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    buf.truncate(filled);
    result
}

/// How much [`read_bounded`] and [`read_to_end_capped`] grow a full buffer by, at least.
const READ_STEP: usize = 64 << 10;

/// [`read_capped`] for a declared size beyond what the data can plausibly
/// produce: the buffer is reserved for the plausible size and grows as needed.
fn read_to_end_capped(
    reader: impl Read,
    src_len: usize,
    expected: u64,
    dst: &mut ByteBuf,
) -> Result<(), String> {
    // Reserve what the file declares, but no more than a generous multiple of the
    // compressed size: a corrupt size field must not make us allocate up front
    // what the data cannot produce (the buffer still grows if the data does).
    dst.room_for(usize::try_from(expected.min(plausible_size(src_len))).unwrap_or(0));
    // One byte more than expected, to detect oversize output without unbounded reads.
    let mut limited = reader.take(expected + 1);
    loop {
        if dst.len() == dst.capacity() {
            dst.reserve(READ_STEP);
        }
        let len = dst.len();
        match limited.read(dst.spare_mut()) {
            Ok(0) => return Ok(()),
            Ok(k) => dst.set_len(len + k),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Trailing padding after the last zstd frame: keep what was decoded.
            Err(_) if dst.len() as u64 == expected => return Ok(()),
            Err(e) => {
                return Err(format!(
                    "decompression failed after {} bytes: {e}",
                    dst.len()
                ));
            }
        }
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
        let mut out = ByteBuf::default();
        decompress(Codec::Zstd, &src, d.len() as u64, &mut out).unwrap();
        assert_eq!(out[..], d[..]);
    }

    #[test]
    fn wrong_declared_sizes_are_errors() {
        let d = data();
        let src = zstd::encode_all(&d[..], 3).unwrap();
        let mut out = ByteBuf::default();
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
        let mut out = ByteBuf::default();
        decompress(Codec::Lz4, &src, d.len() as u64, &mut out).unwrap();
        assert_eq!(out[..], d[..]);
        assert!(decompress(Codec::Lz4, &src[..src.len() / 2], d.len() as u64, &mut out).is_err());
    }

    #[test]
    fn bz2_round_trips_and_rejects_damage() {
        let d = data();
        let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
        std::io::Write::write_all(&mut enc, &d).unwrap();
        let src = enc.finish().unwrap();
        let mut out = ByteBuf::default();
        decompress(Codec::Bz2, &src, d.len() as u64, &mut out).unwrap();
        assert_eq!(out[..], d[..]);
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
        let mut out = ByteBuf::default();
        decompress(Codec::Lz4, &src, d.len() as u64, &mut out).unwrap();
        assert_eq!(out[..], d[..]);
    }

    fn lz4(d: &[u8], mode: lz4_flex::frame::BlockMode) -> Vec<u8> {
        let info = lz4_flex::frame::FrameInfo::new()
            .block_mode(mode)
            .block_size(lz4_flex::frame::BlockSize::Max64KB);
        let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        std::io::Write::write_all(&mut enc, d).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn the_kept_lz4_decoder_reads_chunk_after_chunk_and_recovers_from_damage() {
        use lz4_flex::frame::BlockMode;
        let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let small = data();
        // Chunks as a reader holds them: inside a larger shared buffer.
        let mut file = vec![0xAAu8; 5];
        let mut at = Vec::new();
        for (d, mode) in [
            (&big, BlockMode::Linked),
            (&small, BlockMode::Independent),
            (&big, BlockMode::Independent),
        ] {
            let src = lz4(d, mode);
            at.push((file.len(), src.len(), d.clone()));
            file.extend(src);
        }
        let owner = Buffer::from_vec(file);
        // One output buffer reused throughout, as a reader does: stale longer
        // content must never show through.
        let mut out = ByteBuf::default();
        let read = |i: usize, out: &mut ByteBuf| {
            let (start, len, d) = &at[i];
            decompress_shared(
                Codec::Lz4,
                &owner[*start..start + len],
                &owner,
                d.len() as u64,
                out,
            )
            .unwrap();
            assert_eq!(out[..], d[..], "chunk {i}");
        };
        for _round in 0..2 {
            for i in 0..at.len() {
                read(i, &mut out);
            }
        }
        // A damaged frame is an error, and the next chunk still decodes.
        let (start, len, d) = &at[0];
        let cut = &owner[*start..start + len / 2];
        let e = decompress_shared(Codec::Lz4, cut, &owner, d.len() as u64, &mut out).unwrap_err();
        assert!(e.contains("expected") || e.contains("failed"), "{e}");
        read(1, &mut out);
        // A chunk cut after a whole block gives what it declares (the blocks
        // before the cut) but leaves its frame open: the next chunk must not be
        // read as the rest of that frame.
        let (start, len, d) = &at[2];
        let src = &owner[*start..start + len];
        let first_block =
            4 + (u32::from_le_bytes(src[7..11].try_into().unwrap()) & 0x7FFF_FFFF) as usize;
        let cut = &src[..7 + first_block];
        decompress_shared(Codec::Lz4, cut, &owner, 65_536, &mut out).unwrap();
        assert_eq!(out[..], d[..65_536]);
        read(1, &mut out);
        let (start, len, d) = &at[1];
        // Wrong declared sizes, either way, are errors that name both sizes.
        let src = &owner[*start..start + len];
        let e =
            decompress_shared(Codec::Lz4, src, &owner, d.len() as u64 - 1, &mut out).unwrap_err();
        assert!(
            e.contains(&format!("decompressed {} bytes", d.len())),
            "{e}"
        );
        let e =
            decompress_shared(Codec::Lz4, src, &owner, d.len() as u64 + 1, &mut out).unwrap_err();
        assert!(
            e.contains(&format!("decompressed {} bytes", d.len())),
            "{e}"
        );
        decompress_shared(Codec::Lz4, src, &owner, d.len() as u64, &mut out).unwrap();
        assert_eq!(out[..], d[..]);
        // Bytes outside the buffer named are decoded all the same (by a new decoder).
        let copy = src.to_vec();
        decompress_shared(Codec::Lz4, &copy, &owner, d.len() as u64, &mut out).unwrap();
        assert_eq!(out[..], d[..]);
        // The decoder lets go of the buffer once it is done.
        assert!(
            owner.into_vec::<u8>().is_ok(),
            "no clone of the chunk buffer is left behind"
        );
    }

    #[test]
    fn a_reused_output_buffer_is_overwritten_exactly() {
        let d = data();
        let stale = vec![9u8; 3 * d.len()];
        let mut out = ByteBuf::default();
        out.extend_from_slice(&stale);
        for codec in [Codec::Bz2, Codec::Lz4, Codec::Zstd, Codec::None] {
            let src = match codec {
                Codec::Bz2 => {
                    let mut enc =
                        bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
                    std::io::Write::write_all(&mut enc, &d).unwrap();
                    enc.finish().unwrap()
                }
                Codec::Lz4 => lz4(&d, lz4_flex::frame::BlockMode::Independent),
                Codec::Zstd => zstd::encode_all(&d[..], 3).unwrap(),
                Codec::None => d.clone(),
            };
            decompress(codec, &src, d.len() as u64, &mut out).unwrap();
            assert_eq!(out[..], d[..], "{codec:?}");
            out.clear();
            out.extend_from_slice(&stale);
        }
    }

    #[test]
    fn bounded_reads_stop_one_byte_past_the_limit() {
        let d = data();
        let mut buf = Vec::new();
        assert!(read_bounded(&d[..], d.len() as u64, &mut buf).unwrap());
        assert_eq!(buf, d);
        let mut buf = Vec::new();
        assert!(!read_bounded(&d[..], 1000, &mut buf).unwrap());
        assert_eq!(buf.len(), 1001);
        assert!(buf.capacity() <= 1001, "{}", buf.capacity());
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
