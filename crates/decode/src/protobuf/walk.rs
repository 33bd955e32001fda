//! The wire-format walker: decodes one encoded message straight into the
//! columns of a [`ColumnBuilder`] Struct, driven by a [`MessagePlan`].
//!
//! Values are appended as their fields are met on the wire, so a message costs
//! one pass over its bytes and no intermediate objects. Protobuf's merge rules
//! are kept with the builder's `truncate`:
//!
//! - a singular scalar seen again replaces the earlier value (last one wins);
//! - a oneof member clears the other members of its oneof;
//! - repeated fields accept packed and unpacked occurrences, in any mix, and
//!   interleaved with other fields; each list is closed once, at the end;
//! - a singular message field seen again is merged: its occurrences (since the
//!   last time another member of its oneof was set) are concatenated and
//!   decoded as one, which is what merging means on the wire;
//! - unknown fields, and known fields with an unexpected wire type, are skipped;
//! - at the end, absent fields get a null (fields that track presence) or
//!   their default.

use super::super::{ColumnBuilder, DecodeError};
use super::plan::{FieldPlan, Kind, MessagePlan, Shape};
use super::wire::{
    self, FIXED32, FIXED64, LEN, START_GROUP, VARINT, WalkError, WalkResult, zigzag32, zigzag64,
};

impl From<DecodeError> for Box<WalkError> {
    #[cold]
    fn from(e: DecodeError) -> Self {
        WalkError::new(e.message.into_string())
    }
}

/// A set of field indices of one message: inline for the first 256 fields,
/// allocated beyond (only when such a field occurs).
#[derive(Default)]
struct Bits {
    low: [u64; 4],
    high: Vec<u64>,
}

impl Bits {
    #[inline(always)]
    fn has(&self, i: usize) -> bool {
        let (w, b) = (i / 64, i % 64);
        let word = match self.low.get(w) {
            Some(word) => *word,
            None => self.high.get(w - 4).copied().unwrap_or(0),
        };
        word & (1 << b) != 0
    }

    #[inline(always)]
    fn set(&mut self, i: usize) {
        let (w, b) = (i / 64, i % 64);
        match self.low.get_mut(w) {
            Some(word) => *word |= 1 << b,
            None => {
                if self.high.len() <= w - 4 {
                    self.high.resize(w - 3, 0);
                }
                self.high[w - 4] |= 1 << b;
            }
        }
    }

    #[inline(always)]
    fn clear(&mut self, i: usize) {
        let (w, b) = (i / 64, i % 64);
        match self.low.get_mut(w) {
            Some(word) => *word &= !(1 << b),
            None => {
                if let Some(word) = self.high.get_mut(w - 4) {
                    *word &= !(1 << b);
                }
            }
        }
    }

    #[inline]
    fn any(&self) -> bool {
        self.low.iter().chain(&self.high).any(|&w| w != 0)
    }

    fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.low
            .iter()
            .chain(&self.high)
            .enumerate()
            .flat_map(|(w, &word)| {
                (0..64)
                    .filter(move |b| word & (1 << b) != 0)
                    .map(move |b| w * 64 + b)
            })
    }
}

/// What one message's walk has seen so far.
#[derive(Default)]
struct State {
    /// Singular fields that have their value in the row.
    seen: Bits,
    /// Singular message fields that occurred more than once: merged at the end.
    pending: Bits,
}

/// Decodes the message `buf` as one new row of `out` (a Struct builder made
/// from the plan's type). On error `out` may hold a partial row.
pub(super) fn message(plan: &MessagePlan, buf: &[u8], out: &mut ColumnBuilder) -> WalkResult<()> {
    let rows = out.len();
    let cols = out.fields_mut()?;
    if cols.len() != plan.fields.len() {
        return Err(WalkError::new(format!(
            "builder has {} fields, message {} has {}",
            cols.len(),
            plan.full_name,
            plan.fields.len()
        )));
    }
    let fields = &plan.fields;
    let mut state = State::default();
    let mut pos = 0;
    let mut next = 0;
    while pos < buf.len() {
        let (number, wire) = wire::tag(buf, &mut pos)?;
        // Fields usually come in declaration order: try the next one first.
        let index = match fields.get(next) {
            Some(f) if f.number == number => Some(next),
            _ => plan.index_of(number),
        };
        let Some(i) = index else {
            wire::skip(buf, &mut pos, number, wire)?;
            continue;
        };
        let f = &fields[i];
        if !f.accepts(wire) {
            wire::skip(buf, &mut pos, number, wire)?;
            continue;
        }
        next = i + 1;
        occurrence(f, i, cols, rows, buf, &mut pos, wire, &mut state)
            .map_err(|e| e.within(&f.name))?;
    }
    if state.pending.any() {
        merge(plan, buf, cols, &state.pending)?;
    }
    for (i, (f, col)) in fields.iter().zip(cols.iter_mut()).enumerate() {
        match f.shape {
            Shape::Repeated => col.close_list()?,
            Shape::Single if !state.seen.has(i) => {
                if f.presence {
                    col.append_null();
                } else {
                    default(f, col).map_err(|e| e.within(&f.name))?;
                }
            }
            Shape::Single => {}
        }
    }
    out.close_struct()?;
    Ok(())
}

/// One occurrence of field `f` (index `i`) whose tag was just read.
#[allow(clippy::too_many_arguments)]
#[inline]
fn occurrence(
    f: &FieldPlan,
    i: usize,
    cols: &mut [ColumnBuilder],
    rows: usize,
    buf: &[u8],
    pos: &mut usize,
    wire: u8,
    state: &mut State,
) -> WalkResult<()> {
    if f.shape == Shape::Repeated {
        let child = cols[i].list_child()?;
        if wire == LEN && f.kind.packable() {
            let (start, end) = wire::delimited(buf, pos)?;
            return packed(&f.kind, &buf[start..end], child);
        }
        return value(f, buf, pos, child);
    }
    for &s in f.oneof_siblings.iter() {
        if state.seen.has(s) {
            cols[s].truncate(rows);
            state.seen.clear(s);
            state.pending.clear(s);
        }
    }
    let col = &mut cols[i];
    if state.seen.has(i) {
        if f.kind.is_message() {
            // Seen before: merged with the other occurrences at the end
            // (`seen` stays set: the merge appends the value).
            if !state.pending.has(i) {
                col.truncate(rows);
                state.pending.set(i);
            }
            return wire::skip(buf, pos, f.number, wire);
        }
        col.truncate(rows);
    }
    state.seen.set(i);
    value(f, buf, pos, col)
}

/// Reads one value of field `f` at `*pos` and appends it to `col`.
#[inline(always)]
fn value(f: &FieldPlan, buf: &[u8], pos: &mut usize, col: &mut ColumnBuilder) -> WalkResult<()> {
    match f.kind.wire_type() {
        VARINT => append_varint(&f.kind, wire::varint(buf, pos)?, col),
        FIXED64 => append_fixed64(&f.kind, wire::fixed::<8>(buf, pos)?, col),
        FIXED32 => append_fixed32(&f.kind, wire::fixed::<4>(buf, pos)?, col),
        _ => {
            let (start, end) = if f.group {
                wire::group(buf, pos, f.number)?
            } else {
                wire::delimited(buf, pos)?
            };
            let data = &buf[start..end];
            match &f.kind {
                Kind::String { strict } => string(data, *strict, col),
                Kind::Bytes | Kind::Cut => Ok(col.append_bytes(data)?),
                kind => sub_message(kind, data, col),
            }
        }
    }
}

/// Appends a varint-encoded value of `kind`.
#[inline(always)]
fn append_varint(kind: &Kind, v: u64, col: &mut ColumnBuilder) -> WalkResult<()> {
    match kind {
        Kind::Int32 => col.append_i64(i64::from(v as i32))?,
        Kind::Int64 => col.append_i64(v as i64)?,
        Kind::UInt32 => col.append_u64(u64::from(v as u32))?,
        Kind::UInt64 => col.append_u64(v)?,
        Kind::SInt32 => col.append_i64(i64::from(zigzag32(v)))?,
        Kind::SInt64 => col.append_i64(zigzag64(v))?,
        Kind::Bool => col.append_bool(v != 0)?,
        Kind::Enum(e) => {
            let n = v as i32;
            match e.name(n) {
                Some(name) => col.append_str(name)?,
                None => col.append_str(&n.to_string())?,
            }
        }
        _ => return Err(kind_mismatch(kind, "a varint")),
    }
    Ok(())
}

/// Appends a 4-byte value of `kind`.
#[inline(always)]
fn append_fixed32(kind: &Kind, b: [u8; 4], col: &mut ColumnBuilder) -> WalkResult<()> {
    match kind {
        Kind::Float => col.append_f32(f32::from_le_bytes(b))?,
        Kind::Fixed32 => col.append_u64(u64::from(u32::from_le_bytes(b)))?,
        Kind::SFixed32 => col.append_i64(i64::from(i32::from_le_bytes(b)))?,
        _ => return Err(kind_mismatch(kind, "a fixed32")),
    }
    Ok(())
}

/// Appends an 8-byte value of `kind`.
#[inline(always)]
fn append_fixed64(kind: &Kind, b: [u8; 8], col: &mut ColumnBuilder) -> WalkResult<()> {
    match kind {
        Kind::Double => col.append_f64(f64::from_le_bytes(b))?,
        Kind::Fixed64 => col.append_u64(u64::from_le_bytes(b))?,
        Kind::SFixed64 => col.append_i64(i64::from_le_bytes(b))?,
        _ => return Err(kind_mismatch(kind, "a fixed64")),
    }
    Ok(())
}

#[cold]
fn kind_mismatch(kind: &Kind, what: &str) -> Box<WalkError> {
    WalkError::new(format!("internal: {kind:?} read as {what}"))
}

/// Appends every element of a packed list.
fn packed(kind: &Kind, data: &[u8], col: &mut ColumnBuilder) -> WalkResult<()> {
    match kind.wire_type() {
        VARINT => {
            let mut p = 0;
            while p < data.len() {
                append_varint(kind, wire::varint(data, &mut p)?, col)?;
            }
        }
        FIXED32 => {
            if !data.len().is_multiple_of(4) {
                return Err(bad_packed(data.len(), 4));
            }
            match kind {
                Kind::Float => {
                    for c in data.chunks_exact(4) {
                        col.append_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))?;
                    }
                }
                _ => {
                    for c in data.chunks_exact(4) {
                        append_fixed32(kind, [c[0], c[1], c[2], c[3]], col)?;
                    }
                }
            }
        }
        FIXED64 => {
            if !data.len().is_multiple_of(8) {
                return Err(bad_packed(data.len(), 8));
            }
            if matches!(kind, Kind::Double)
                && matches!(col.data_type(), arrow_schema::DataType::Float64)
            {
                col.extend_f64_le(data)?;
                return Ok(());
            }
            for c in data.chunks_exact(8) {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                append_fixed64(kind, b, col)?;
            }
        }
        _ => return Err(kind_mismatch(kind, "a packed list")),
    }
    Ok(())
}

#[cold]
fn bad_packed(len: usize, width: usize) -> Box<WalkError> {
    WalkError::new(format!(
        "packed list of {len} bytes is not a multiple of {width}"
    ))
}

/// Appends a string: proto3 strings must be UTF-8; proto2 ones are repaired.
#[inline]
fn string(data: &[u8], strict: bool, col: &mut ColumnBuilder) -> WalkResult<()> {
    match std::str::from_utf8(data) {
        Ok(s) => col.append_str(s)?,
        Err(e) if strict => {
            return Err(WalkError::new(format!(
                "string is not valid UTF-8 (byte {} of {})",
                e.valid_up_to(),
                data.len()
            )));
        }
        Err(_) => col.append_str(&String::from_utf8_lossy(data))?,
    }
    Ok(())
}

/// Appends an encoded sub-message of a message kind (the content of a
/// length-delimited value or of a group).
fn sub_message(kind: &Kind, data: &[u8], col: &mut ColumnBuilder) -> WalkResult<()> {
    match kind {
        Kind::Message(plan) => message(plan, data, col),
        Kind::Timestamp | Kind::Duration => {
            match nanos(data)? {
                Some(ns) => col.append_i64(ns)?,
                // Beyond ±292 years of nanoseconds: not representable.
                None => col.append_null(),
            }
            Ok(())
        }
        Kind::Cut => Ok(col.append_bytes(data)?),
        other => Err(kind_mismatch(other, "a message")),
    }
}

/// `seconds * 1e9 + nanos` of an encoded Timestamp or Duration (both parts
/// carry the sign); `None` when it overflows i64.
fn nanos(data: &[u8]) -> WalkResult<Option<i64>> {
    let mut seconds = 0i64;
    let mut nanos = 0i32;
    let mut pos = 0;
    while pos < data.len() {
        let (number, wire) = wire::tag(data, &mut pos)?;
        match (number, wire) {
            (1, VARINT) => seconds = wire::varint(data, &mut pos)? as i64,
            (2, VARINT) => nanos = wire::varint(data, &mut pos)? as i32,
            _ => wire::skip(data, &mut pos, number, wire)?,
        }
    }
    Ok(seconds
        .checked_mul(1_000_000_000)
        .and_then(|s| s.checked_add(i64::from(nanos))))
}

/// The value a field without presence has when it is not encoded.
fn default(f: &FieldPlan, col: &mut ColumnBuilder) -> WalkResult<()> {
    match &f.kind {
        Kind::Message(plan) => return message(plan, &[], col),
        Kind::Enum(_) => col.append_str(&f.enum_default)?,
        Kind::String { .. } => col.append_str("")?,
        Kind::Bytes | Kind::Cut => col.append_bytes(&[])?,
        Kind::Bool => col.append_bool(false)?,
        Kind::Float => col.append_f32(0.0)?,
        Kind::Double => col.append_f64(0.0)?,
        Kind::UInt32 | Kind::UInt64 | Kind::Fixed32 | Kind::Fixed64 => col.append_u64(0)?,
        _ => col.append_i64(0)?,
    }
    Ok(())
}

/// Decodes the singular message fields that occurred more than once: the
/// occurrences since the last other member of their oneof, concatenated.
fn merge(
    plan: &MessagePlan,
    buf: &[u8],
    cols: &mut [ColumnBuilder],
    pending: &Bits,
) -> WalkResult<()> {
    for i in pending.indices() {
        let f = &plan.fields[i];
        let mut joined = Vec::new();
        let mut pos = 0;
        while pos < buf.len() {
            let (number, wire) = wire::tag(buf, &mut pos)?;
            match plan.index_of(number) {
                Some(j) if j == i && f.accepts(wire) => {
                    let (start, end) = if wire == START_GROUP {
                        wire::group(buf, &mut pos, number)?
                    } else {
                        wire::delimited(buf, &mut pos)?
                    };
                    joined.extend_from_slice(&buf[start..end]);
                }
                Some(j) if f.oneof_siblings.contains(&j) && plan.fields[j].accepts(wire) => {
                    joined.clear();
                    wire::skip(buf, &mut pos, number, wire)?;
                }
                _ => wire::skip(buf, &mut pos, number, wire)?,
            }
        }
        sub_message(&f.kind, &joined, &mut cols[i]).map_err(|e| e.within(&f.name))?;
    }
    Ok(())
}
