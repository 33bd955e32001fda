//! A bounds-checked CDR byte reader and the decode-time error that records
//! the field path.
//!
//! The reader walks the payload bytes after the 4-byte encapsulation header.
//! Alignment is relative to the first byte after that header; every
//! primitive is aligned to its own size, capped at `max_align` (8 for CDR1,
//! 4 for XCDR2). Every read checks the bytes left first, so a truncated or
//! lying payload is an error and never a panic or a large allocation.

use std::fmt::Write as _;

use crate::DecodeError;

/// Byte order of a payload, as a type so the decode walk is monomorphised
/// per order (no per-value branch on endianness).
pub(super) trait Order {
    /// A `u16` from its two bytes.
    fn u16(b: [u8; 2]) -> u16;
    /// A `u32` from its four bytes.
    fn u32(b: [u8; 4]) -> u32;
    /// A `u64` from its eight bytes.
    fn u64(b: [u8; 8]) -> u64;
}

/// Little-endian payloads (encapsulation `00 01`, `00 07`).
pub(super) struct Le;

/// Big-endian payloads (encapsulation `00 00`, `00 06`).
pub(super) struct Be;

impl Order for Le {
    #[inline(always)]
    fn u16(b: [u8; 2]) -> u16 {
        u16::from_le_bytes(b)
    }
    #[inline(always)]
    fn u32(b: [u8; 4]) -> u32 {
        u32::from_le_bytes(b)
    }
    #[inline(always)]
    fn u64(b: [u8; 8]) -> u64 {
        u64::from_le_bytes(b)
    }
}

impl Order for Be {
    #[inline(always)]
    fn u16(b: [u8; 2]) -> u16 {
        u16::from_be_bytes(b)
    }
    #[inline(always)]
    fn u32(b: [u8; 4]) -> u32 {
        u32::from_be_bytes(b)
    }
    #[inline(always)]
    fn u64(b: [u8; 8]) -> u64 {
        u64::from_be_bytes(b)
    }
}

/// The first `N` bytes of `c` as an array. Callers pass exactly `N` bytes
/// (`chunks_exact`, `take`); anything else gives zeros rather than a panic.
#[inline(always)]
pub(super) fn arr<const N: usize>(c: &[u8]) -> [u8; N] {
    c.try_into().unwrap_or([0; N])
}

/// Length of the encapsulation header in front of the CDR data; positions
/// in error messages count from the start of the payload, header included.
pub(super) const HEADER_LEN: usize = 4;

/// A cursor over the CDR data of one payload.
pub(super) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    max_align: usize,
    /// XCDR2: sequences and arrays of non-primitive elements carry a DHEADER.
    pub(super) xcdr2: bool,
}

impl<'a> Reader<'a> {
    /// A reader over `data` (the bytes after the encapsulation header).
    pub(super) fn new(data: &'a [u8], max_align: usize, xcdr2: bool) -> Self {
        Self {
            data,
            pos: 0,
            max_align,
            xcdr2,
        }
    }

    /// Current position, relative to the start of the CDR data.
    #[inline(always)]
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left after the current position (0 when alignment went past the end).
    #[inline(always)]
    pub(super) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Skips the padding before a value of `size` bytes.
    #[inline(always)]
    pub(super) fn align(&mut self, size: usize) {
        let a = if size < self.max_align {
            size
        } else {
            self.max_align
        };
        if a > 1 {
            self.pos = (self.pos + a - 1) & !(a - 1);
        }
    }

    /// The next `n` bytes (no alignment).
    #[inline(always)]
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        let start = self.pos;
        match start.checked_add(n) {
            Some(end) if end <= self.data.len() => {
                self.pos = end;
                Ok(&self.data[start..end])
            }
            _ => Err(self.eof(n)),
        }
    }

    /// The next aligned `N`-byte value's bytes.
    #[inline(always)]
    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], Fail> {
        self.align(N);
        let start = self.pos;
        match self.data.get(start..start + N) {
            Some(b) => {
                self.pos = start + N;
                Ok(arr(b))
            }
            None => Err(self.eof(N)),
        }
    }

    /// One byte.
    #[inline(always)]
    pub(super) fn u8(&mut self) -> Result<u8, Fail> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.eof(1)),
        }
    }

    /// An aligned `u16`.
    #[inline(always)]
    pub(super) fn u16<O: Order>(&mut self) -> Result<u16, Fail> {
        self.fixed::<2>().map(O::u16)
    }

    /// An aligned `u32`.
    #[inline(always)]
    pub(super) fn u32<O: Order>(&mut self) -> Result<u32, Fail> {
        self.fixed::<4>().map(O::u32)
    }

    /// An aligned `u64`.
    #[inline(always)]
    pub(super) fn u64<O: Order>(&mut self) -> Result<u64, Fail> {
        self.fixed::<8>().map(O::u64)
    }

    /// A string's bytes: `u32` length including the NUL terminator, then the
    /// bytes; the terminator is dropped. A length of 0 (written by some
    /// encoders for the empty string) is accepted.
    #[inline]
    pub(super) fn string_bytes<O: Order>(&mut self) -> Result<&'a [u8], Fail> {
        let len = self.u32::<O>()? as usize;
        if len > self.remaining() {
            return Err(Fail::new(format!(
                "string length {len} at byte {} but only {} bytes left",
                self.pos - 4 + HEADER_LEN,
                self.remaining()
            )));
        }
        let bytes = self.take(len)?;
        Ok(match bytes.split_last() {
            Some((0, text)) => text,
            _ => bytes,
        })
    }

    /// A sequence's element count, checked against the bytes left given
    /// that every element takes at least `min_elem` bytes.
    #[inline]
    pub(super) fn count<O: Order>(&mut self, min_elem: u64) -> Result<usize, Fail> {
        let n = self.u32::<O>()?;
        self.check_room(n as u64, min_elem, "sequence")?;
        Ok(n as usize)
    }

    /// Checks that `n` elements of at least `min_elem` bytes each can still
    /// be in the payload (before looping over them).
    #[inline]
    pub(super) fn check_room(&self, n: u64, min_elem: u64, what: &str) -> Result<(), Fail> {
        let need = n.saturating_mul(min_elem);
        if need > self.remaining() as u64 {
            return Err(Fail::new(format!(
                "{what} of {n} elements needs at least {need} bytes at byte {} but only {} are left",
                self.pos + HEADER_LEN,
                self.remaining()
            )));
        }
        Ok(())
    }

    /// The error for a read of `n` bytes past the end.
    #[cold]
    fn eof(&self, n: usize) -> Fail {
        Fail::new(format!(
            "payload ends at byte {}, {n} bytes needed at byte {}",
            self.data.len() + HEADER_LEN,
            self.pos + HEADER_LEN
        ))
    }
}

/// One step of a field path: a field name or an array index.
#[derive(Debug)]
enum Seg {
    Field(Box<str>),
    Index(usize),
}

/// A decode failure on its way up the plan; each level adds its field name
/// or array index, so the final error names the full path
/// (`items[2].stamp`). Boxed: the `Ok` path stays one word.
#[derive(Debug)]
pub(super) struct Fail(Box<FailInner>);

#[derive(Debug)]
struct FailInner {
    message: String,
    /// Innermost first.
    path: Vec<Seg>,
}

impl Fail {
    /// A failure with `message` and no path yet.
    #[cold]
    pub(super) fn new(message: impl Into<String>) -> Self {
        Self(Box::new(FailInner {
            message: message.into(),
            path: Vec::new(),
        }))
    }

    /// The same failure inside field `name`.
    #[cold]
    pub(super) fn field(mut self, name: &str) -> Self {
        self.0.path.push(Seg::Field(name.into()));
        self
    }

    /// The same failure inside element `i` of an array.
    #[cold]
    pub(super) fn index(mut self, i: usize) -> Self {
        self.0.path.push(Seg::Index(i));
        self
    }

    /// The public error: `field "a.b[2].c": message`, or just the message
    /// when it happened outside any field.
    #[cold]
    pub(super) fn into_error(self) -> DecodeError {
        let inner = *self.0;
        if inner.path.is_empty() {
            return DecodeError::new(inner.message);
        }
        let mut path = String::new();
        for seg in inner.path.iter().rev() {
            match seg {
                Seg::Field(name) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                }
                Seg::Index(i) => {
                    let _ = write!(path, "[{i}]");
                }
            }
        }
        DecodeError::new(format!("field {path:?}: {}", inner.message))
    }
}

impl From<DecodeError> for Fail {
    #[cold]
    fn from(e: DecodeError) -> Self {
        Fail::new(e.message.into_string())
    }
}
