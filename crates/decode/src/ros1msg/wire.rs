//! The ROS1 wire format (little-endian, packed, u32 length prefixes) walked
//! with a compiled [`Plan`], in two passes per message:
//!
//! 1. [`check`]: bounds only. Fixed-size fields and sub-messages are one
//!    length comparison each; only strings and variable arrays are walked.
//!    Every length prefix is compared with the bytes left before anything is
//!    used, and a per-message work budget stops arrays of empty messages with
//!    huge counts. Errors name the field path (`pose.covariance[3]: ...`).
//! 2. [`fill`]: appends the values, still bounds-checked but knowing the
//!    payload is long enough, so a short payload never leaves a half-appended
//!    row behind.

use super::plan::{Node, Plan, Prim};
use crate::{ColumnBuilder, DecodeError};

/// One step of an error's field path.
#[derive(Debug)]
enum Seg {
    Field(Box<str>),
    Index(usize),
}

/// A decode failure while walking: the message and the path, innermost step
/// first (paths are only built on the error path).
#[derive(Debug)]
pub(super) struct Fail(Box<(String, Vec<Seg>)>);

impl Fail {
    fn new(message: String) -> Self {
        Fail(Box::new((message, Vec::new())))
    }

    /// The same failure inside field `name`.
    fn field(mut self, name: &str) -> Self {
        self.0.1.push(Seg::Field(name.into()));
        self
    }

    /// The same failure inside element `i` of an array.
    fn index(mut self, i: usize) -> Self {
        self.0.1.push(Seg::Index(i));
        self
    }

    /// `a.b[3].c: message`, the error callers see.
    pub(super) fn into_error(self) -> DecodeError {
        let (message, segs) = *self.0;
        let mut path = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Field(name) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                }
                Seg::Index(i) => {
                    path.push('[');
                    path.push_str(&i.to_string());
                    path.push(']');
                }
            }
        }
        if path.is_empty() {
            DecodeError::new(message)
        } else {
            DecodeError::new(format!("{path}: {message}"))
        }
    }
}

impl From<DecodeError> for Fail {
    fn from(e: DecodeError) -> Self {
        Fail::new(e.message.into())
    }
}

/// A read position in one payload.
struct Cursor<'a> {
    rest: &'a [u8],
    len: usize,
}

impl<'a> Cursor<'a> {
    fn new(payload: &'a [u8]) -> Self {
        Cursor {
            rest: payload,
            len: payload.len(),
        }
    }

    /// Byte offset of the next read.
    fn pos(&self) -> usize {
        self.len - self.rest.len()
    }

    fn short(&self, n: usize) -> Fail {
        Fail::new(format!(
            "needs {n} bytes at byte {} but the payload ends at byte {}",
            self.pos(),
            self.len
        ))
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        match self.rest.split_at_checked(n) {
            Some((head, rest)) => {
                self.rest = rest;
                Ok(head)
            }
            None => Err(self.short(n)),
        }
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Fail> {
        match self.rest.split_first_chunk::<N>() {
            Some((head, rest)) => {
                self.rest = rest;
                Ok(*head)
            }
            None => Err(self.short(N)),
        }
    }

    #[inline]
    fn u32(&mut self) -> Result<u32, Fail> {
        self.array::<4>().map(u32::from_le_bytes)
    }

    /// A u32 length or count prefix (as usize).
    #[inline]
    fn count(&mut self) -> Result<usize, Fail> {
        self.u32().map(|n| n as usize)
    }

    /// A string or byte-array body of `n` bytes, after its length prefix.
    #[inline]
    fn body(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        if n > self.rest.len() {
            return Err(Fail::new(format!(
                "length {n} at byte {} is more than the {} bytes left",
                self.pos().saturating_sub(4),
                self.rest.len()
            )));
        }
        self.take(n)
    }

    /// Length-prefixed bytes (a string or `uint8[]`).
    #[inline]
    fn prefixed(&mut self) -> Result<&'a [u8], Fail> {
        let n = self.count()?;
        self.body(n)
    }
}

/// The work budget's fixed part: [`MAX_WORK`](super::MAX_WORK) values per message, plus two
/// per payload byte. Fuzz builds (`cfg(fuzzing)`) use 2^16 instead, so that
/// inputs which exhaust the budget with arrays of empty messages do not
/// dominate a fuzzing run; the code path is the same.
#[cfg(not(fuzzing))]
const ALLOWANCE: usize = super::plan::MAX_WORK;
#[cfg(fuzzing)]
const ALLOWANCE: usize = 1 << 16;

/// Values the current message may still append (see [`ALLOWANCE`]).
struct Budget(usize);

impl Budget {
    fn spend(&mut self, count: usize, each: usize, pos: usize) -> Result<(), Fail> {
        let cost = count.saturating_mul(each.max(1));
        match self.0.checked_sub(cost) {
            Some(left) => {
                self.0 = left;
                Ok(())
            }
            None => Err(Fail::new(format!(
                "{count} array elements at byte {pos} would make more values than the \
                 decoder allows for one message"
            ))),
        }
    }
}

/// Pass 1: checks that `payload` holds a whole message of `plan`'s main type.
/// Trailing bytes after the message are ignored, as ROS tools do.
pub(super) fn check(plan: &Plan, payload: &[u8]) -> Result<(), Fail> {
    let mut cur = Cursor::new(payload);
    let mut budget = Budget(ALLOWANCE.saturating_add(payload.len().saturating_mul(2)));
    check_struct(plan, plan.root, &mut cur, &mut budget)
}

fn check_struct(plan: &Plan, s: usize, cur: &mut Cursor<'_>, b: &mut Budget) -> Result<(), Fail> {
    let sp = &plan.structs[s];
    if let Some(n) = sp.fixed {
        if cur.rest.len() < n {
            return Err(locate(plan, Node::Struct(s), cur.pos(), cur.rest.len()));
        }
        cur.rest = &cur.rest[n..];
        return Ok(());
    }
    for f in &sp.fields {
        if let Some(n) = f.fixed {
            if cur.rest.len() < n {
                return Err(locate(plan, f.node, cur.pos(), cur.rest.len()).field(&f.name));
            }
            cur.rest = &cur.rest[n..];
            continue;
        }
        check_node(plan, f.node, cur, b).map_err(|e| e.field(&f.name))?;
    }
    Ok(())
}

/// Checks one variable-size field (fixed-size ones are skipped by the caller).
fn check_node(plan: &Plan, node: Node, cur: &mut Cursor<'_>, b: &mut Budget) -> Result<(), Fail> {
    match node {
        Node::Prim(Prim::Str) | Node::Bytes => {
            cur.prefixed()?;
        }
        Node::PrimList(p) => {
            let pos = cur.pos();
            let n = cur.count()?;
            check_elements(n, p.wire_size().unwrap_or(4), 1, pos, cur, b)?;
            match p.wire_size() {
                Some(k) => {
                    cur.take(n.saturating_mul(k))?;
                }
                None => check_strings(n, cur)?,
            }
        }
        Node::PrimArray(Prim::Str, n) => check_strings(n, cur)?,
        Node::Struct(s) => check_struct(plan, s, cur, b)?,
        Node::StructList(s) => {
            let pos = cur.pos();
            let n = cur.count()?;
            let sp = &plan.structs[s];
            check_elements(n, sp.min, sp.work, pos, cur, b)?;
            match sp.fixed {
                Some(k) => {
                    cur.take(n.saturating_mul(k))?;
                }
                None => check_structs(plan, s, n, cur, b)?,
            }
        }
        Node::StructArray(s, n) => check_structs(plan, s, n, cur, b)?,
        // Always fixed-size: the caller skipped them.
        Node::Prim(p) => {
            cur.take(p.wire_size().unwrap_or(0))?;
        }
        Node::FixedBytes(n) => {
            cur.take(n)?;
        }
        Node::PrimArray(p, n) => {
            cur.take(p.wire_size().unwrap_or(0).saturating_mul(n))?;
        }
    }
    Ok(())
}

/// A count of `n` elements of at least `min` bytes must fit in the bytes
/// left, and their values in the budget.
fn check_elements(
    n: usize,
    min: usize,
    work: usize,
    pos: usize,
    cur: &Cursor<'_>,
    b: &mut Budget,
) -> Result<(), Fail> {
    let need = n.saturating_mul(min);
    if need > cur.rest.len() {
        return Err(Fail::new(format!(
            "count {n} at byte {pos} needs at least {need} bytes but {} are left",
            cur.rest.len()
        )));
    }
    b.spend(n, work, pos)
}

fn check_strings(n: usize, cur: &mut Cursor<'_>) -> Result<(), Fail> {
    for i in 0..n {
        cur.prefixed().map_err(|e| e.index(i))?;
    }
    Ok(())
}

fn check_structs(
    plan: &Plan,
    s: usize,
    n: usize,
    cur: &mut Cursor<'_>,
    b: &mut Budget,
) -> Result<(), Fail> {
    for i in 0..n {
        check_struct(plan, s, cur, b).map_err(|e| e.index(i))?;
    }
    Ok(())
}

/// The error for a fixed-size `node` at byte `pos` with only `left` bytes:
/// descends to the first value that does not fit, for its path.
fn locate(plan: &Plan, node: Node, pos: usize, left: usize) -> Fail {
    let short = |n: usize, at: usize| {
        Fail::new(format!(
            "needs {n} bytes at byte {at} but the payload ends at byte {}",
            pos + left
        ))
    };
    match node {
        Node::Prim(p) => short(p.wire_size().unwrap_or(4), pos),
        Node::FixedBytes(n) => short(n, pos),
        Node::PrimArray(p, _) => {
            let k = p.wire_size().unwrap_or(4).max(1);
            let i = left / k;
            short(k, pos + i * k).index(i)
        }
        Node::Struct(s) => {
            let (mut pos, mut left) = (pos, left);
            for f in &plan.structs[s].fields {
                let k = f.fixed.unwrap_or(usize::MAX);
                if left < k {
                    return locate(plan, f.node, pos, left).field(&f.name);
                }
                pos += k;
                left -= k;
            }
            short(0, pos)
        }
        Node::StructArray(s, _) => {
            let k = plan.structs[s].fixed.unwrap_or(usize::MAX).max(1);
            let i = left / k;
            locate(plan, Node::Struct(s), pos + i * k, left - i * k).index(i)
        }
        Node::Bytes | Node::PrimList(_) | Node::StructList(_) => short(4, pos),
    }
}

/// Pass 2: appends the message in `payload` (checked by [`check`]) as one
/// row of `out`. After the check only the builder can still fail (more than
/// 2 GiB of strings or 2^31 list elements in one batch, or a builder of
/// another type); [`crate::append_message`] then rolls the row back.
pub(super) fn fill(plan: &Plan, payload: &[u8], out: &mut ColumnBuilder) -> Result<(), Fail> {
    let mut cur = Cursor::new(payload);
    fill_struct(plan, plan.root, &mut cur, out)
}

fn fill_struct(
    plan: &Plan,
    s: usize,
    cur: &mut Cursor<'_>,
    out: &mut ColumnBuilder,
) -> Result<(), Fail> {
    let sp = &plan.structs[s];
    let cols = out.fields_mut()?;
    if cols.len() != sp.fields.len() {
        return Err(Fail::new(format!(
            "builder has {} fields for {} ({} expected)",
            cols.len(),
            sp.type_name,
            sp.fields.len()
        )));
    }
    for (f, col) in sp.fields.iter().zip(cols.iter_mut()) {
        fill_node(plan, f.node, cur, col).map_err(|e| e.field(&f.name))?;
    }
    out.close_struct()?;
    Ok(())
}

/// Appends one field to `col`.
#[inline]
fn fill_node(
    plan: &Plan,
    node: Node,
    cur: &mut Cursor<'_>,
    col: &mut ColumnBuilder,
) -> Result<(), Fail> {
    match node {
        Node::Prim(p) => fill_prim(p, cur, col)?,
        Node::Bytes => col.append_bytes(cur.prefixed()?)?,
        Node::FixedBytes(n) => col.append_bytes(cur.take(n)?)?,
        Node::PrimList(p) => {
            let n = cur.count()?;
            fill_prims(p, n, cur, col.list_child()?)?;
            col.close_list()?;
        }
        Node::PrimArray(p, n) => {
            fill_prims(p, n, cur, col.list_child()?)?;
            col.close_list()?;
        }
        Node::Struct(s) => fill_struct(plan, s, cur, col)?,
        Node::StructList(s) => {
            let n = cur.count()?;
            fill_structs(plan, s, n, cur, col.list_child()?)?;
            col.close_list()?;
        }
        Node::StructArray(s, n) => {
            fill_structs(plan, s, n, cur, col.list_child()?)?;
            col.close_list()?;
        }
    }
    Ok(())
}

/// `n` messages of type `s` as elements of a list's child column.
fn fill_structs(
    plan: &Plan,
    s: usize,
    n: usize,
    cur: &mut Cursor<'_>,
    child: &mut ColumnBuilder,
) -> Result<(), Fail> {
    for i in 0..n {
        fill_struct(plan, s, cur, child).map_err(|e| e.index(i))?;
    }
    Ok(())
}

/// `sec * 1e9 + nsec` of a ROS1 `time` (u32, u32).
#[inline]
fn time_ns(b: [u8; 8]) -> i64 {
    let sec = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let nsec = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    i64::from(sec) * 1_000_000_000 + i64::from(nsec)
}

/// `sec * 1e9 + nsec` of a ROS1 `duration` (i32, i32): sec -2, nsec 5e8 is -1.5 s.
#[inline]
fn duration_ns(b: [u8; 8]) -> i64 {
    let sec = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let nsec = i32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    i64::from(sec) * 1_000_000_000 + i64::from(nsec)
}

/// Appends a string: UTF-8 as is, anything else with U+FFFD replacements.
#[inline]
fn append_text(col: &mut ColumnBuilder, bytes: &[u8]) -> Result<(), DecodeError> {
    match std::str::from_utf8(bytes) {
        Ok(s) => col.append_str(s),
        Err(_) => col.append_str(&String::from_utf8_lossy(bytes)),
    }
}

#[inline]
fn fill_prim(p: Prim, cur: &mut Cursor<'_>, col: &mut ColumnBuilder) -> Result<(), Fail> {
    match p {
        Prim::Bool => col.append_bool(cur.array::<1>()?[0] != 0)?,
        Prim::I8 => col.append_i64(i8::from_le_bytes(cur.array()?).into())?,
        Prim::U8 => col.append_i64(u8::from_le_bytes(cur.array()?).into())?,
        Prim::I16 => col.append_i64(i16::from_le_bytes(cur.array()?).into())?,
        Prim::U16 => col.append_i64(u16::from_le_bytes(cur.array()?).into())?,
        Prim::I32 => col.append_i64(i32::from_le_bytes(cur.array()?).into())?,
        Prim::U32 => col.append_i64(u32::from_le_bytes(cur.array()?).into())?,
        Prim::I64 => col.append_i64(i64::from_le_bytes(cur.array()?))?,
        Prim::U64 => col.append_u64(u64::from_le_bytes(cur.array()?))?,
        Prim::F32 => col.append_f32(f32::from_le_bytes(cur.array()?))?,
        Prim::F64 => col.append_f64(f64::from_le_bytes(cur.array()?))?,
        Prim::Str => append_text(col, cur.prefixed()?)?,
        Prim::Time => col.append_i64(time_ns(cur.array()?))?,
        Prim::Duration => col.append_i64(duration_ns(cur.array()?))?,
    }
    Ok(())
}

/// Appends every `K`-byte chunk of `bytes`, converted by `f`.
macro_rules! each_chunk {
    ($bytes:expr, $k:literal, |$c:ident| $append:expr) => {{
        let (chunks, _) = $bytes.as_chunks::<$k>();
        for &$c in chunks {
            $append?;
        }
    }};
}

/// Appends `n` builtin values to a list's child column, in bulk where the
/// values are fixed-size (one bounds check for the whole array).
fn fill_prims(
    p: Prim,
    n: usize,
    cur: &mut Cursor<'_>,
    child: &mut ColumnBuilder,
) -> Result<(), Fail> {
    let Some(k) = p.wire_size() else {
        for i in 0..n {
            let bytes = cur.prefixed().map_err(|e| e.index(i))?;
            append_text(child, bytes)?;
        }
        return Ok(());
    };
    let len = n
        .checked_mul(k)
        .ok_or_else(|| Fail::new(format!("{n} elements of {k} bytes overflow")))?;
    let bytes = cur.take(len)?;
    match p {
        Prim::Bool => {
            for &v in bytes {
                child.append_bool(v != 0)?;
            }
        }
        Prim::I8 => each_chunk!(bytes, 1, |c| child.append_i64(i8::from_le_bytes(c).into())),
        Prim::U8 => each_chunk!(bytes, 1, |c| child.append_i64(u8::from_le_bytes(c).into())),
        Prim::I16 => each_chunk!(bytes, 2, |c| child.append_i64(i16::from_le_bytes(c).into())),
        Prim::U16 => each_chunk!(bytes, 2, |c| child.append_i64(u16::from_le_bytes(c).into())),
        Prim::I32 => each_chunk!(bytes, 4, |c| child.append_i64(i32::from_le_bytes(c).into())),
        Prim::U32 => each_chunk!(bytes, 4, |c| child.append_i64(u32::from_le_bytes(c).into())),
        Prim::I64 => each_chunk!(bytes, 8, |c| child.append_i64(i64::from_le_bytes(c))),
        Prim::U64 => each_chunk!(bytes, 8, |c| child.append_u64(u64::from_le_bytes(c))),
        Prim::F32 => each_chunk!(bytes, 4, |c| child.append_f32(f32::from_le_bytes(c))),
        Prim::F64 => child.extend_f64_le(bytes)?,
        Prim::Time => each_chunk!(bytes, 8, |c| child.append_i64(time_ns(c))),
        Prim::Duration => each_chunk!(bytes, 8, |c| child.append_i64(duration_ns(c))),
        Prim::Str => {}
    }
    Ok(())
}
