//! The record's framing: 16-byte section headers, the header slot, sniffing,
//! and the small protobuf wire-format scanner used on chunk bodies.

use prost::Message as _;

use crate::error::{ErrorContext, Result};
use crate::io::ReadAt;

use super::proto;

/// Bytes of a section header (`u32 type | 4 padding bytes | i64 size`).
pub(crate) const SECTION_LEN: u64 = 16;
/// Bytes reserved for the header protobuf and its padding after the first section header.
pub(crate) const HEADER_LENGTH: u64 = 2048;
/// Offset of the first section after the header slot.
pub const FIRST_SECTION: u64 = SECTION_LEN + HEADER_LENGTH;
/// Largest section the C++ reader accepts (`INT_MAX`).
pub(crate) const MAX_SECTION: u64 = i32::MAX as u64;

/// Section type values.
pub mod kind {
    /// The file header.
    pub(crate) const HEADER: u32 = 0;
    /// A chunk header (time range, count).
    pub const CHUNK_HEADER: u32 = 1;
    /// A chunk body (the messages).
    pub const CHUNK_BODY: u32 = 2;
    /// The index (closed files only, always last).
    pub const INDEX: u32 = 3;
    /// A channel declaration.
    pub const CHANNEL: u32 = 4;
}

/// Name of a section type for messages.
pub(crate) fn kind_name(kind: u32) -> String {
    match kind {
        kind::HEADER => "HEADER".into(),
        kind::CHUNK_HEADER => "CHUNK_HEADER".into(),
        kind::CHUNK_BODY => "CHUNK_BODY".into(),
        kind::INDEX => "INDEX".into(),
        kind::CHANNEL => "CHANNEL".into(),
        other => format!("unknown type {other}"),
    }
}

/// A decoded 16-byte section header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SectionHeader {
    /// Section type (bytes 0..4; bytes 4..8 are padding, garbage in old files).
    pub kind: u32,
    /// Byte length of the protobuf after the header (bytes 8..16, signed).
    pub size: i64,
}

impl SectionHeader {
    /// Decodes the first 16 bytes of `b` (`None` when shorter).
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        let kind = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
        let size = i64::from_le_bytes(b.get(8..16)?.try_into().ok()?);
        Some(Self { kind, size })
    }

    /// The size as a length, when it is not negative and not above [`MAX_SECTION`].
    pub(crate) fn length(&self) -> Option<u64> {
        u64::try_from(self.size).ok().filter(|&s| s <= MAX_SECTION)
    }
}

/// Reads the section header at `offset` (which must fit in the file).
pub(crate) fn read_section_header(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
) -> Result<SectionHeader> {
    let b = file.read_vec(ctx, offset, SECTION_LEN, "section header")?;
    SectionHeader::parse(&b).ok_or_else(|| ctx.truncated(offset, "section header"))
}

/// Whether the first bytes look like a Cyber record: a HEADER section header
/// (type 0, size 1..=2048) followed by a Header protobuf starting with
/// `major_version` (field 1, a small varint) and `minor_version` (field 2).
/// TFRecord files (often named `.record`) start with a non-zero u64 length
/// and fail the first test.
pub fn sniff(head: &[u8]) -> bool {
    let Some(h) = SectionHeader::parse(head) else {
        return false;
    };
    if h.kind != kind::HEADER || !(1..=HEADER_LENGTH as i64).contains(&h.size) {
        return false;
    }
    // 08 <major 1..=9> 10 <minor varint>.
    matches!(head.get(16..19), Some([0x08, 1..=9, 0x10]))
}

/// The decoded header and what its padding says about the writer.
#[derive(Debug, Clone)]
pub(crate) struct HeaderInfo {
    /// The Header protobuf.
    pub header: proto::Header,
    /// Whether the padding after it starts with ASCII `'0'`, as written by
    /// Apollo's C++ `RecordFileWriter` (`static char blank[2048] = {'0'}`).
    /// The C++ writer's chunk headers hold each chunk's min/max message time;
    /// other writers (the pip `cyber_record` writer pads with NULs) may store
    /// the first/last message time instead.
    pub(crate) cpp_writer: bool,
}

/// Reads and decodes the header section at offset 0.
pub(crate) fn read_header(file: &dyn ReadAt, ctx: &ErrorContext) -> Result<HeaderInfo> {
    if file.size() == 0 {
        return Err(ctx.truncated(0, "empty file: no record header"));
    }
    if file.size() < SECTION_LEN {
        return Err(ctx.truncated(0, "record header section"));
    }
    let h = read_section_header(file, ctx, 0)?;
    if h.kind != kind::HEADER {
        return Err(ctx.corrupt(
            0,
            format!(
                "not a Cyber record: the first section is {}, not HEADER",
                kind_name(h.kind)
            ),
        ));
    }
    let size = match h.length() {
        Some(s) if (1..=HEADER_LENGTH).contains(&s) => s,
        _ => {
            return Err(ctx.corrupt(
                8,
                format!(
                    "header section size {} is outside 1..={HEADER_LENGTH}",
                    h.size
                ),
            ));
        }
    };
    let bytes = file.read_vec(ctx, SECTION_LEN, size, "header protobuf")?;
    let header = proto::Header::decode(&bytes[..])
        .map_err(|e| ctx.corrupt(SECTION_LEN, format!("header protobuf does not decode: {e}")))?;
    let mut pad = [0u8; 1];
    let cpp_writer = size < HEADER_LENGTH
        && file.read_exact_at(SECTION_LEN + size, &mut pad).is_ok()
        && pad[0] == b'0';
    Ok(HeaderInfo { header, cpp_writer })
}

/// Protobuf wire types.
pub mod wire {
    /// Varint.
    pub const VARINT: u8 = 0;
    /// 64-bit.
    pub const FIXED64: u8 = 1;
    /// Length-delimited.
    pub const LEN: u8 = 2;
    /// 32-bit.
    pub const FIXED32: u8 = 5;
}

/// Reads a varint at `*pos`, advancing it; `None` when truncated or over-long.
#[inline]
pub fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..70).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        value |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(value);
        }
    }
    None
}

/// Reads a length-delimited value at `*pos`, advancing past it.
#[inline]
pub(crate) fn len_delimited<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len = usize::try_from(varint(buf, pos)?).ok()?;
    let end = pos.checked_add(len)?;
    let out = buf.get(*pos..end)?;
    *pos = end;
    Some(out)
}

/// Skips a value of wire type `wt` at `*pos`. Groups (types 3, 4) are refused.
#[inline]
pub fn skip(buf: &[u8], pos: &mut usize, wt: u8) -> Option<()> {
    let n = match wt {
        wire::VARINT => {
            varint(buf, pos)?;
            return Some(());
        }
        wire::LEN => {
            len_delimited(buf, pos)?;
            return Some(());
        }
        wire::FIXED64 => 8,
        wire::FIXED32 => 4,
        _ => return None,
    };
    let end = pos.checked_add(n)?;
    if end > buf.len() {
        return None;
    }
    *pos = end;
    Some(())
}

/// One `SingleMessage` of a chunk body, borrowed from the body bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct RawMessage<'a> {
    /// `channel_name` (field 1), as bytes.
    pub channel: &'a [u8],
    /// `time` (field 2).
    pub time: u64,
    /// `content` (field 3).
    pub content: &'a [u8],
}

/// Decodes one `SingleMessage` (the last occurrence of a field wins, unknown fields are skipped).
pub(crate) fn single_message(buf: &[u8]) -> Result<RawMessage<'_>, String> {
    let mut out = RawMessage::default();
    let mut pos = 0;
    while pos < buf.len() {
        let at = pos;
        let key = varint(buf, &mut pos).ok_or_else(|| format!("bad field key at byte {at}"))?;
        let (field, wt) = (key >> 3, (key & 7) as u8);
        let ok = match (field, wt) {
            (1, wire::LEN) => len_delimited(buf, &mut pos).map(|v| out.channel = v),
            (2, wire::VARINT) => varint(buf, &mut pos).map(|v| out.time = v),
            (3, wire::LEN) => len_delimited(buf, &mut pos).map(|v| out.content = v),
            (0, _) => None,
            _ => skip(buf, &mut pos, wt),
        };
        if ok.is_none() {
            return Err(format!(
                "SingleMessage field {field} (wire type {wt}) at byte {at} is malformed or truncated"
            ));
        }
    }
    Ok(out)
}

/// Walks the `SingleMessage`s (field 1) of a `ChunkBody`. `f` gets each
/// message and the position of its key in `body`; an error names the
/// position of the bad field.
pub(crate) fn walk_body<'a>(
    body: &'a [u8],
    mut f: impl FnMut(RawMessage<'a>, usize) -> std::ops::ControlFlow<()>,
) -> Result<(), (usize, String)> {
    let mut pos = 0;
    while pos < body.len() {
        let at = pos;
        let key = varint(body, &mut pos).ok_or((at, "bad field key".to_string()))?;
        let (field, wt) = (key >> 3, (key & 7) as u8);
        if field == 1 && wt == wire::LEN {
            let bytes = len_delimited(body, &mut pos).ok_or_else(|| {
                (
                    at,
                    "SingleMessage extends past the end of the chunk body".to_string(),
                )
            })?;
            let msg = single_message(bytes).map_err(|e| (at, e))?;
            if f(msg, at).is_break() {
                return Ok(());
            }
        } else if field == 0 || skip(body, &mut pos, wt).is_none() {
            return Err((
                at,
                format!("ChunkBody field {field} (wire type {wt}) is malformed or truncated"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_bounds() {
        let mut p = 0;
        assert_eq!(varint(&[0xac, 0x02], &mut p), Some(300));
        assert_eq!(p, 2);
        let mut p = 0;
        assert_eq!(varint(&[0x80, 0x80], &mut p), None);
        let mut p = 0;
        assert_eq!(varint(&[0xff; 11], &mut p), None);
        let mut p = 0;
        assert_eq!(len_delimited(&[0x05, 1, 2], &mut p), None);
    }

    #[test]
    fn sniff_rejects_tfrecords_and_accepts_headers() {
        let mut head = vec![0u8; 64];
        head[8] = 58;
        head[16..20].copy_from_slice(&[0x08, 0x01, 0x10, 0x00]);
        assert!(sniff(&head));
        head[4] = 0xaa; // padding garbage from old writers
        assert!(sniff(&head));
        let mut tf = head.clone();
        tf[0] = 58; // a TFRecord length
        assert!(!sniff(&tf));
        let mut big = head.clone();
        big[9] = 0x10; // size 4154
        assert!(!sniff(&big));
        assert!(!sniff(&head[..18]));
    }

    #[test]
    fn single_message_fields() {
        // name "a", time 5, content [9, 9], unknown field 7 varint.
        let b = [0x0a, 1, b'a', 0x10, 5, 0x38, 1, 0x1a, 2, 9, 9];
        let m = single_message(&b).unwrap();
        assert_eq!(
            (m.channel, m.time, m.content),
            (&b"a"[..], 5, &[9u8, 9][..])
        );
        assert!(single_message(&b[..10]).is_err());
    }
}
