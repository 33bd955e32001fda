//! Protobuf wire format primitives: varints, tags, length-delimited slices,
//! skipping unknown fields and groups, and the walker's error type.
//!
//! Every read is bounds-checked against the bytes left; a length is only ever
//! used to slice the input, never to size an allocation.

use std::fmt;

/// Wire type of a varint (`int32`, `uint64`, `bool`, enums, ...).
pub(super) const VARINT: u8 = 0;
/// Wire type of 8-byte little-endian values (`fixed64`, `sfixed64`, `double`).
pub(super) const FIXED64: u8 = 1;
/// Wire type of length-delimited values (strings, bytes, messages, packed lists).
pub(super) const LEN: u8 = 2;
/// Wire type of a group start tag.
pub(super) const START_GROUP: u8 = 3;
/// Wire type of a group end tag.
pub(super) const END_GROUP: u8 = 4;
/// Wire type of 4-byte little-endian values (`fixed32`, `sfixed32`, `float`).
pub(super) const FIXED32: u8 = 5;

/// Nesting of groups (inside one message) beyond which a payload is refused.
const MAX_GROUP_DEPTH: usize = 100;

/// Largest valid field number (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// A decoding failure: what went wrong, at which byte, under which field path.
///
/// Boxed in results so the hot path's `Result` stays one word.
#[derive(Debug)]
pub(super) struct WalkError {
    /// Field names from the failing field outwards (reversed path).
    path: Vec<Box<str>>,
    /// The description, without the path.
    what: String,
}

/// The walker's result type.
pub(super) type WalkResult<T> = Result<T, Box<WalkError>>;

impl WalkError {
    /// A new error described by `what`.
    #[cold]
    pub(super) fn new(what: impl Into<String>) -> Box<Self> {
        Box::new(Self {
            path: Vec::new(),
            what: what.into(),
        })
    }

    /// Adds the enclosing field `name` to the path.
    #[cold]
    pub(super) fn within(mut self: Box<Self>, name: &str) -> Box<Self> {
        self.path.push(name.into());
        self
    }
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            return f.write_str(&self.what);
        }
        f.write_str("field \"")?;
        for (i, name) in self.path.iter().rev().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            f.write_str(name)?;
        }
        write!(f, "\": {}", self.what)
    }
}

/// The payload ended inside a value.
#[cold]
fn truncated(at: usize, what: &str, needed: usize) -> Box<WalkError> {
    WalkError::new(format!(
        "payload ends at byte {at} inside {what} ({needed} more bytes needed)"
    ))
}

/// Reads a varint at `*pos`, advancing it. Up to 10 bytes; bits beyond 64 are
/// dropped, as protobuf parsers do.
#[inline(always)]
pub(super) fn varint(buf: &[u8], pos: &mut usize) -> WalkResult<u64> {
    match buf.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Ok(u64::from(b))
        }
        _ => varint_slow(buf, pos),
    }
}

#[inline(never)]
fn varint_slow(buf: &[u8], pos: &mut usize) -> WalkResult<u64> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = buf.get(*pos + i) else {
            return Err(truncated(buf.len(), "a varint", 1));
        };
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            *pos += i + 1;
            return Ok(value);
        }
    }
    Err(WalkError::new(format!(
        "varint at byte {} is longer than 10 bytes",
        *pos
    )))
}

/// Reads a tag: `(field number, wire type)`. Field number 0, numbers above
/// 2^29-1 and wire types 6 and 7 are errors.
#[inline(always)]
pub(super) fn tag(buf: &[u8], pos: &mut usize) -> WalkResult<(u32, u8)> {
    let at = *pos;
    let tag = varint(buf, pos)?;
    let number = tag >> 3;
    let wire = (tag & 7) as u8;
    if number == 0 || number > MAX_FIELD_NUMBER || wire > FIXED32 {
        return Err(bad_tag(tag, at));
    }
    Ok((number as u32, wire))
}

#[cold]
fn bad_tag(tag: u64, at: usize) -> Box<WalkError> {
    let number = tag >> 3;
    let wire = tag & 7;
    if wire > 5 {
        WalkError::new(format!(
            "invalid wire type {wire} (field number {number}) at byte {at}"
        ))
    } else {
        WalkError::new(format!("invalid field number {number} at byte {at}"))
    }
}

/// Reads `N` little-endian bytes at `*pos`, advancing it.
#[inline(always)]
pub(super) fn fixed<const N: usize>(buf: &[u8], pos: &mut usize) -> WalkResult<[u8; N]> {
    match buf.get(*pos..*pos + N) {
        Some(bytes) => {
            let mut out = [0u8; N];
            out.copy_from_slice(bytes);
            *pos += N;
            Ok(out)
        }
        None => Err(truncated(
            buf.len(),
            if N == 4 { "a fixed32" } else { "a fixed64" },
            *pos + N - buf.len(),
        )),
    }
}

/// Reads a length-delimited value at `*pos` (its varint length, then that many
/// bytes), advancing past it. Returns the value's range in `buf`.
#[inline(always)]
pub(super) fn delimited(buf: &[u8], pos: &mut usize) -> WalkResult<(usize, usize)> {
    let len = varint(buf, pos)?;
    let left = buf.len() - *pos;
    if len > left as u64 {
        return Err(too_long(len, left, *pos));
    }
    let start = *pos;
    *pos += len as usize;
    Ok((start, *pos))
}

#[cold]
fn too_long(len: u64, left: usize, at: usize) -> Box<WalkError> {
    WalkError::new(format!(
        "length {len} at byte {at} exceeds the {left} bytes left"
    ))
}

/// Skips the group whose start tag (field `number`) was just read. Returns
/// the range of the group's content (without its end tag).
pub(super) fn group(buf: &[u8], pos: &mut usize, number: u32) -> WalkResult<(usize, usize)> {
    group_at_depth(buf, pos, number, 1)
}

fn group_at_depth(
    buf: &[u8],
    pos: &mut usize,
    number: u32,
    depth: usize,
) -> WalkResult<(usize, usize)> {
    if depth > MAX_GROUP_DEPTH {
        return Err(WalkError::new(format!(
            "groups nested more than {MAX_GROUP_DEPTH} deep"
        )));
    }
    let start = *pos;
    loop {
        if *pos >= buf.len() {
            return Err(WalkError::new(format!(
                "payload ends at byte {} inside group {number} (no end-group tag)",
                buf.len()
            )));
        }
        let end = *pos;
        let (n, wire) = tag(buf, pos)?;
        if wire == END_GROUP {
            if n != number {
                return Err(WalkError::new(format!(
                    "end-group tag of field {n} at byte {end} closes group {number}"
                )));
            }
            return Ok((start, end));
        }
        skip_at_depth(buf, pos, n, wire, depth)?;
    }
}

/// Skips the value of a field (`number`, `wire`) whose tag was just read.
#[inline]
pub(super) fn skip(buf: &[u8], pos: &mut usize, number: u32, wire: u8) -> WalkResult<()> {
    skip_at_depth(buf, pos, number, wire, 0)
}

fn skip_at_depth(
    buf: &[u8],
    pos: &mut usize,
    number: u32,
    wire: u8,
    depth: usize,
) -> WalkResult<()> {
    match wire {
        VARINT => varint(buf, pos).map(|_| ()),
        FIXED64 => fixed::<8>(buf, pos).map(|_| ()),
        FIXED32 => fixed::<4>(buf, pos).map(|_| ()),
        LEN => delimited(buf, pos).map(|_| ()),
        START_GROUP => group_at_depth(buf, pos, number, depth + 1).map(|_| ()),
        _ => Err(WalkError::new(format!(
            "unexpected end-group tag of field {number} at byte {}",
            pos.saturating_sub(1)
        ))),
    }
}

/// ZigZag-decodes a 32-bit `sint32`.
#[inline(always)]
pub(super) fn zigzag32(v: u64) -> i32 {
    let v = v as u32;
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// ZigZag-decodes a 64-bit `sint64`.
#[inline(always)]
pub(super) fn zigzag64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let mut pos = 0;
        assert_eq!(varint(&[0x96, 0x01], &mut pos).unwrap(), 150);
        assert_eq!(pos, 2);
        let minus_one = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let mut pos = 0;
        assert_eq!(varint(&minus_one, &mut pos).unwrap(), u64::MAX);
        let mut pos = 0;
        assert!(varint(&[0xff; 11], &mut pos).is_err());
        let mut pos = 0;
        assert!(varint(&[0x80], &mut pos).is_err());
        assert_eq!(zigzag32(1), -1);
        assert_eq!(zigzag32(4294967294), 2147483647);
        assert_eq!(zigzag64(3), -2);
    }

    #[test]
    fn groups_and_lengths() {
        // field 1 group { field 2 varint 5 } end; then field 3 varint 1
        let buf = [0x0b, 0x10, 0x05, 0x0c, 0x18, 0x01];
        let mut pos = 0;
        let (n, w) = tag(&buf, &mut pos).unwrap();
        assert_eq!((n, w), (1, START_GROUP));
        assert_eq!(group(&buf, &mut pos, 1).unwrap(), (1, 3));
        assert_eq!(pos, 4);
        let mut pos = 0;
        assert!(delimited(&[0x05, 1, 2], &mut pos).is_err());
        // mismatched end group
        let mut pos = 1;
        assert!(group(&[0x0b, 0x14], &mut pos, 1).is_err());
    }
}
