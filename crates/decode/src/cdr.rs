//! Decoding of ROS 2 message definitions (`ros2msg` schemas) and CDR payloads (`cdr`).
//!
//! [`compile`] turns a type name and its rosbag2-style concatenated
//! definition into a [`CdrDecoder`]: a tree of decode steps (the plan) and the
//! Arrow type of its rows, built once per schema. Decoding a payload walks the
//! plan over the bytes and appends straight into the [`ColumnBuilder`]; it
//! allocates nothing but the output columns (and a temporary for `wstring`
//! and invalid UTF-8 text).
//!
//! Type mapping (every field nullable):
//!
//! | ROS 2 | Arrow |
//! |---|---|
//! | `bool` | `Boolean` |
//! | `byte` (IDL `octet`, as mcap-ros2-support decodes it), `char` (as current rosidl), `uint8` | `UInt8` |
//! | `int8`..`int64`, `uint16`..`uint64`, `float32`, `float64` | same width |
//! | `string`, `string<=N`, `wstring` | `Utf8` (invalid UTF-8 replaced by U+FFFD) |
//! | `builtin_interfaces/Time` | [`super::timestamp_type`] |
//! | `builtin_interfaces/Duration` | [`super::duration_type`] |
//! | `uint8[]`, `uint8[N]`, `uint8[<=N]`, same for `byte` | `Binary` |
//! | other `T[N]` | `FixedSizeList` |
//! | other `T[]`, `T[<=N]` | `List` |
//! | nested message | `Struct` |
//!
//! Wire format: a 4-byte encapsulation header, `00 01` (CDR little-endian)
//! or `00 00` (big-endian), or XCDR2 `00 07`/`00 06` (PLAIN_CDR2: 8-byte values
//! aligned to 4, and a `u32` DHEADER before sequences and arrays of
//! non-primitive elements). Alignment is relative to the byte after the header.
//! Strings are a `u32` length including the NUL, then the bytes; sequences a
//! `u32` count, then the elements; a message without fields is one byte, as
//! rosidl serializes it. `wstring` is a `u32` count of characters, then 4-byte
//! characters in CDR1 (Fast-CDR 1 as used by rmw_fastrtps) and 2-byte ones
//! in XCDR2. Bounds (`<=N`) are not enforced when decoding.

mod msgdef;
mod reader;

use std::borrow::Cow;
use std::sync::Arc;

use arrow_schema::{DataType, Fields};

use super::{
    ColumnBuilder, DecodeError, MessageDecoder, duration_type, field, fixed_list_of, list_of,
    timestamp_type,
};
use logsql_readers::model::Channel;
use msgdef::{
    Array, BUILTIN_DURATION, BUILTIN_TIME, BaseType, FieldDef, Prim, Schema, package, parse_msg,
};
use reader::{Be, Fail, HEADER_LEN, Le, Order, Reader, arr};

/// Deepest nesting of message types accepted (guards the recursion of the
/// compiler and of the decode walk).
const MAX_DEPTH: usize = 64;

/// Most fields in one compiled message, a nested type's fields counted once
/// per use; stops definitions whose size grows exponentially with nesting.
const MAX_STEPS: usize = 100_000;

/// Largest payload a type may require at minimum (CDR lengths are `u32`).
const MAX_MIN_SIZE: u64 = u32::MAX as u64;

/// The decoder for `channel`, compiled from its schema (`channel.schema`,
/// the concatenated definition of `channel.message_type`).
pub fn decoder(channel: &Channel) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    let type_name = channel
        .message_type
        .as_deref()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| DecodeError::new("ros2msg schema without a type name"))?;
    let schema = channel.schema.as_deref().unwrap_or(&[]);
    let text = String::from_utf8_lossy(schema);
    Ok(Arc::new(compile(type_name, &text)?))
}

/// Compiles the decoder of `type_name` (`pkg/msg/Type` or `pkg/Type`) from
/// its rosbag2-style concatenated definition: the main `.msg` text, then per
/// dependency a line of `=`, a line `MSG: pkg/Type` and its text.
///
/// Errors (unknown or recursive types, bad lines, absurd sizes) name the type
/// and field they are about.
pub fn compile(type_name: &str, definition: &str) -> Result<CdrDecoder, DecodeError> {
    let context = |e: DecodeError| e.context(format_args!("ros2msg {type_name}"));
    let schema = Schema::split(type_name, definition).map_err(context)?;
    let mut compiler = Compiler {
        schema: &schema,
        stack: Vec::new(),
        steps: 0,
    };
    let main = schema.main.clone();
    let (root, fields) = compiler.message(&main).map_err(context)?;
    let min = min_struct_size(&root);
    if min > MAX_MIN_SIZE {
        return Err(context(DecodeError::new(format!(
            "a message needs at least {min} bytes, more than any CDR payload can hold"
        ))));
    }
    Ok(CdrDecoder {
        type_name: type_name.to_string(),
        data_type: DataType::Struct(fields),
        root,
    })
}

/// A compiled ROS 2 message decoder (see the [module docs](self)).
#[derive(Debug)]
pub struct CdrDecoder {
    type_name: String,
    data_type: DataType,
    root: Box<[Member]>,
}

/// One field of a compiled message.
#[derive(Debug)]
struct Member {
    name: Box<str>,
    op: Op,
}

/// One decode step.
#[derive(Debug)]
enum Op {
    Prim(Prim),
    Str,
    WStr,
    /// `builtin_interfaces/Time`: `i32` sec, `u32` nanosec.
    Time,
    /// `builtin_interfaces/Duration`: `i32` sec, `u32` nanosec.
    Duration,
    /// `uint8`/`byte` arrays: `Some(N)` fixed, `None` a sequence.
    Bytes(Option<usize>),
    /// `T[N]`; `min` is the least bytes one element takes.
    Fixed {
        len: usize,
        min: u64,
        elem: Box<Op>,
    },
    /// `T[]`, `T[<=N]`.
    Seq {
        min: u64,
        elem: Box<Op>,
    },
    Struct(Box<[Member]>),
}

impl Op {
    /// XCDR2 puts a DHEADER before arrays and sequences of these.
    fn is_primitive(&self) -> bool {
        matches!(self, Op::Prim(_))
    }
}

/// Least bytes a value takes on the wire (padding not counted).
fn min_size(op: &Op) -> u64 {
    match op {
        Op::Prim(p) => p.size() as u64,
        Op::Str | Op::WStr | Op::Bytes(None) | Op::Seq { .. } => 4,
        Op::Time | Op::Duration => 8,
        Op::Bytes(Some(n)) => *n as u64,
        Op::Fixed { len, min, .. } => (*len as u64).saturating_mul(*min),
        Op::Struct(members) => min_struct_size(members),
    }
}

/// Least bytes a message takes: the sum of its fields, 1 when it has none.
fn min_struct_size(members: &[Member]) -> u64 {
    if members.is_empty() {
        return 1;
    }
    members
        .iter()
        .fold(0u64, |acc, m| acc.saturating_add(min_size(&m.op)))
}

/// Arrow type of a primitive.
fn prim_type(p: Prim) -> DataType {
    match p {
        Prim::Bool => DataType::Boolean,
        Prim::Byte | Prim::Char | Prim::U8 => DataType::UInt8,
        Prim::I8 => DataType::Int8,
        Prim::I16 => DataType::Int16,
        Prim::U16 => DataType::UInt16,
        Prim::I32 => DataType::Int32,
        Prim::U32 => DataType::UInt32,
        Prim::I64 => DataType::Int64,
        Prim::U64 => DataType::UInt64,
        Prim::F32 => DataType::Float32,
        Prim::F64 => DataType::Float64,
    }
}

/// Builds the plan of one type, resolving dependencies in the schema.
struct Compiler<'s, 'a> {
    schema: &'s Schema<'a>,
    /// Types being compiled, outermost first (recursion detection).
    stack: Vec<String>,
    steps: usize,
}

impl Compiler<'_, '_> {
    /// The plan and Arrow fields of message `name` (normalized).
    fn message(&mut self, name: &str) -> Result<(Box<[Member]>, Fields), DecodeError> {
        if self.stack.iter().any(|s| s == name) {
            let mut chain = self.stack.join(" -> ");
            chain.push_str(" -> ");
            chain.push_str(name);
            return Err(DecodeError::new(format!("recursive message type: {chain}")));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(DecodeError::new(format!(
                "message types nested more than {MAX_DEPTH} deep (at {name})"
            )));
        }
        let text = self.schema.text(name).ok_or_else(|| {
            DecodeError::new(format!(
                "type {name:?} has no definition in the schema (no `MSG: {name}` section)"
            ))
        })?;
        let defs = parse_msg(text).map_err(|e| e.context(format_args!("definition of {name}")))?;
        self.stack.push(name.to_string());
        let pkg = package(name).to_string();
        let mut members = Vec::with_capacity(defs.len());
        let mut fields = Vec::with_capacity(defs.len());
        for def in &defs {
            let (op, data_type) = self
                .field(def, &pkg)
                .map_err(|e| e.context(format_args!("field {:?} of {name}", def.name)))?;
            members.push(Member {
                name: def.name.as_str().into(),
                op,
            });
            fields.push(field(def.name.as_str(), data_type));
        }
        self.stack.pop();
        Ok((members.into(), Fields::from(fields)))
    }

    /// The plan and Arrow type of one field.
    fn field(&mut self, def: &FieldDef, pkg: &str) -> Result<(Op, DataType), DecodeError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(DecodeError::new(format!(
                "the message has more than {MAX_STEPS} fields once nested types are expanded"
            )));
        }
        let (elem, elem_type) = match &def.base {
            BaseType::Prim(p) => {
                if matches!(p, Prim::U8 | Prim::Byte) {
                    match def.array {
                        Array::Fixed(n) => return Ok((Op::Bytes(Some(n)), DataType::Binary)),
                        Array::Seq => return Ok((Op::Bytes(None), DataType::Binary)),
                        Array::Single => {}
                    }
                }
                (Op::Prim(*p), prim_type(*p))
            }
            BaseType::String => (Op::Str, DataType::Utf8),
            BaseType::WString => (Op::WStr, DataType::Utf8),
            BaseType::Named(written) => {
                let name = self.schema.resolve(written, pkg)?;
                if name == BUILTIN_TIME && self.is_plain_time(&name) {
                    (Op::Time, timestamp_type())
                } else if name == BUILTIN_DURATION && self.is_plain_time(&name) {
                    (Op::Duration, duration_type())
                } else {
                    let (members, fields) = self.message(&name)?;
                    (Op::Struct(members), DataType::Struct(fields))
                }
            }
        };
        Ok(match def.array {
            Array::Single => (elem, elem_type),
            Array::Fixed(len) => {
                let size = i32::try_from(len)
                    .map_err(|_| DecodeError::new(format!("array of {len} elements")))?;
                (
                    Op::Fixed {
                        len,
                        min: min_size(&elem),
                        elem: Box::new(elem),
                    },
                    fixed_list_of(elem_type, size),
                )
            }
            Array::Seq => (
                Op::Seq {
                    min: min_size(&elem),
                    elem: Box::new(elem),
                },
                list_of(elem_type),
            ),
        })
    }

    /// True when builtin `name` (Time or Duration) is absent from the schema
    /// (the standard layout is assumed) or defined as `int32 sec`,
    /// `uint32 nanosec`; otherwise it decodes as an ordinary struct.
    fn is_plain_time(&self, name: &str) -> bool {
        let Some(text) = self.schema.text(name) else {
            return true;
        };
        let Ok(defs) = parse_msg(text) else {
            return false;
        };
        let plain = |d: &FieldDef, n: &str, p: Prim| {
            d.name == n && d.base == BaseType::Prim(p) && d.array == Array::Single
        };
        defs.len() == 2
            && plain(&defs[0], "sec", Prim::I32)
            && plain(&defs[1], "nanosec", Prim::U32)
    }
}

impl MessageDecoder for CdrDecoder {
    fn data_type(&self) -> &DataType {
        &self.data_type
    }

    fn decode(&self, payload: &[u8], out: &mut ColumnBuilder) -> Result<(), DecodeError> {
        let Some((header, data)) = payload.split_first_chunk::<HEADER_LEN>() else {
            return Err(DecodeError::new(format!(
                "CDR payload of {} bytes has no 4-byte encapsulation header",
                payload.len()
            )));
        };
        // (big-endian, max alignment, XCDR2)
        let (big, max_align, xcdr2) = match [header[0], header[1]] {
            [0, 1] => (false, 8, false),
            [0, 0] => (true, 8, false),
            [0, 7] => (false, 4, true),
            [0, 6] => (true, 4, true),
            [a, b] => {
                let kind = match b {
                    2 | 3 => " (PL_CDR, parameter lists)",
                    8 | 9 => " (DELIMITED_CDR2)",
                    10 | 11 => " (PL_CDR2)",
                    _ => "",
                };
                return Err(DecodeError::new(format!(
                    "unsupported CDR encapsulation {a:02x} {b:02x}{kind}: only CDR \
                     (00 00, 00 01) and PLAIN_CDR2 (00 06, 00 07) are decoded"
                )));
            }
        };
        let mut r = Reader::new(data, max_align, xcdr2);
        let result = if big {
            read_struct::<Be>(&self.root, &mut r, out)
        } else {
            read_struct::<Le>(&self.root, &mut r, out)
        };
        result.map_err(Fail::into_error)
    }

    fn describe(&self) -> String {
        format!("ros2msg {}", self.type_name)
    }
}

// Every `read_*` function below leaves `out` exactly as it found it when it
// fails: a failing level truncates the values its children completed (those
// are whole, so `ColumnBuilder::truncate` removes them cleanly), and the
// failing child has already cleaned up after itself. The builder's own
// rollback cannot be relied on for this: it stops at a struct or list whose
// row was never closed and leaves that row's partial children behind.

/// Reads one message into struct column `out` (one row).
fn read_struct<O: Order>(
    members: &[Member],
    r: &mut Reader<'_>,
    out: &mut ColumnBuilder,
) -> Result<(), Fail> {
    let rows = out.len();
    if members.is_empty() {
        // rosidl gives empty messages one `uint8` member.
        r.u8()?;
    } else {
        let columns = out.fields_mut()?;
        for (i, (m, column)) in members.iter().zip(columns.iter_mut()).enumerate() {
            if let Err(e) = read_op::<O>(&m.op, r, column) {
                for done in &mut columns[..i] {
                    done.truncate(rows);
                }
                return Err(e.field(&m.name));
            }
        }
    }
    if let Err(e) = out.close_struct() {
        if let Ok(columns) = out.fields_mut() {
            for c in columns {
                c.truncate(rows);
            }
        }
        return Err(e.into());
    }
    Ok(())
}

/// Reads one array (`fixed` length) or sequence value into list column
/// `out`: DHEADER (XCDR2), count, elements, then closes the row. On failure
/// the child is truncated back to where it started.
fn read_list<O: Order>(
    elem: &Op,
    fixed: Option<usize>,
    min: u64,
    r: &mut Reader<'_>,
    out: &mut ColumnBuilder,
) -> Result<(), Fail> {
    let end = dheader::<O>(elem, r)?;
    let n = match fixed {
        Some(len) => {
            r.check_room(len as u64, min, "array")?;
            len
        }
        None => r.count::<O>(min)?,
    };
    let child = out.list_child()?;
    let before = child.len();
    let result = read_elements::<O>(elem, n, r, child).and_then(|()| check_dheader(end, r));
    if let Err(e) = result {
        child.truncate(before);
        return Err(e);
    }
    if let Err(e) = out.close_list() {
        if let Ok(child) = out.list_child() {
            child.truncate(before);
        }
        return Err(e.into());
    }
    Ok(())
}

/// Reads one value of `op` and appends it to `out`.
fn read_op<O: Order>(op: &Op, r: &mut Reader<'_>, out: &mut ColumnBuilder) -> Result<(), Fail> {
    match op {
        Op::Prim(p) => read_prim::<O>(*p, r, out),
        Op::Str => append_text(r.string_bytes::<O>()?, out),
        Op::WStr => read_wstring::<O>(r, out),
        Op::Time | Op::Duration => {
            let sec = r.u32::<O>()? as i32;
            let nanosec = r.u32::<O>()?;
            out.append_i64(sec as i64 * 1_000_000_000 + nanosec as i64)?;
            Ok(())
        }
        Op::Bytes(fixed) => {
            let n = match fixed {
                Some(n) => *n,
                None => r.count::<O>(1)?,
            };
            out.append_bytes(r.take(n)?)?;
            Ok(())
        }
        Op::Fixed { len, min, elem } => read_list::<O>(elem, Some(*len), *min, r, out),
        Op::Seq { min, elem } => read_list::<O>(elem, None, *min, r, out),
        Op::Struct(members) => read_struct::<O>(members, r, out),
    }
}

/// XCDR2: reads the DHEADER (byte length) before an array or sequence of
/// non-primitive elements; returns where the elements must end.
#[inline]
fn dheader<O: Order>(elem: &Op, r: &mut Reader<'_>) -> Result<Option<usize>, Fail> {
    if !r.xcdr2 || elem.is_primitive() {
        return Ok(None);
    }
    let len = r.u32::<O>()? as usize;
    if len > r.remaining() {
        return Err(Fail::new(format!(
            "XCDR2 DHEADER of {len} bytes at byte {} but only {} bytes left",
            r.pos() - 4 + HEADER_LEN,
            r.remaining()
        )));
    }
    Ok(Some(r.pos() + len))
}

/// Checks that the elements ended where their DHEADER said.
#[inline]
fn check_dheader(end: Option<usize>, r: &Reader<'_>) -> Result<(), Fail> {
    match end {
        Some(end) if end != r.pos() => Err(Fail::new(format!(
            "XCDR2 DHEADER says the elements end at byte {}, they end at byte {}",
            end + HEADER_LEN,
            r.pos() + HEADER_LEN
        ))),
        _ => Ok(()),
    }
}

/// Reads `n` elements of `elem` into list child `out`; primitives in one
/// bounds check and a tight loop.
fn read_elements<O: Order>(
    elem: &Op,
    n: usize,
    r: &mut Reader<'_>,
    out: &mut ColumnBuilder,
) -> Result<(), Fail> {
    if let Op::Prim(p) = elem {
        return read_prim_array::<O>(*p, n, r, out);
    }
    for i in 0..n {
        read_op::<O>(elem, r, out).map_err(|e| e.index(i))?;
    }
    Ok(())
}

/// One primitive.
#[inline]
fn read_prim<O: Order>(p: Prim, r: &mut Reader<'_>, out: &mut ColumnBuilder) -> Result<(), Fail> {
    match p {
        Prim::Bool => out.append_bool(r.u8()? != 0),
        Prim::Byte | Prim::Char | Prim::U8 => out.append_i64(r.u8()? as i64),
        Prim::I8 => out.append_i64(r.u8()? as i8 as i64),
        Prim::I16 => out.append_i64(r.u16::<O>()? as i16 as i64),
        Prim::U16 => out.append_i64(r.u16::<O>()? as i64),
        Prim::I32 => out.append_i64(r.u32::<O>()? as i32 as i64),
        Prim::U32 => out.append_i64(r.u32::<O>()? as i64),
        Prim::I64 => out.append_i64(r.u64::<O>()? as i64),
        Prim::U64 => out.append_u64(r.u64::<O>()?),
        Prim::F32 => out.append_f32(f32::from_bits(r.u32::<O>()?)),
        Prim::F64 => out.append_f64(f64::from_bits(r.u64::<O>()?)),
    }?;
    Ok(())
}

/// `n` contiguous primitives: one alignment, one bounds check, then a loop
/// over exact chunks.
fn read_prim_array<O: Order>(
    p: Prim,
    n: usize,
    r: &mut Reader<'_>,
    out: &mut ColumnBuilder,
) -> Result<(), Fail> {
    if n == 0 {
        return Ok(());
    }
    let size = p.size();
    r.align(size);
    let total = n
        .checked_mul(size)
        .ok_or_else(|| Fail::new(format!("array of {n} elements is too large")))?;
    let bytes = r.take(total)?;
    match p {
        Prim::Bool => bytes.iter().try_for_each(|&b| out.append_bool(b != 0)),
        Prim::Byte | Prim::Char | Prim::U8 => {
            bytes.iter().try_for_each(|&b| out.append_i64(b as i64))
        }
        Prim::I8 => bytes
            .iter()
            .try_for_each(|&b| out.append_i64(b as i8 as i64)),
        Prim::I16 => bytes
            .chunks_exact(2)
            .try_for_each(|c| out.append_i64(O::u16(arr(c)) as i16 as i64)),
        Prim::U16 => bytes
            .chunks_exact(2)
            .try_for_each(|c| out.append_i64(O::u16(arr(c)) as i64)),
        Prim::I32 => bytes
            .chunks_exact(4)
            .try_for_each(|c| out.append_i64(O::u32(arr(c)) as i32 as i64)),
        Prim::U32 => bytes
            .chunks_exact(4)
            .try_for_each(|c| out.append_i64(O::u32(arr(c)) as i64)),
        Prim::F32 => bytes
            .chunks_exact(4)
            .try_for_each(|c| out.append_f32(f32::from_bits(O::u32(arr(c))))),
        Prim::I64 => bytes
            .chunks_exact(8)
            .try_for_each(|c| out.append_i64(O::u64(arr(c)) as i64)),
        Prim::U64 => bytes
            .chunks_exact(8)
            .try_for_each(|c| out.append_u64(O::u64(arr(c)))),
        // Little-endian payloads (nearly all): one bulk append.
        Prim::F64 if O::u16([1, 0]) == 1 => out.extend_f64_le(bytes),
        Prim::F64 => bytes
            .chunks_exact(8)
            .try_for_each(|c| out.append_f64(f64::from_bits(O::u64(arr(c))))),
    }?;
    Ok(())
}

/// Appends string bytes as text, invalid UTF-8 replaced by U+FFFD.
#[inline]
fn append_text(bytes: &[u8], out: &mut ColumnBuilder) -> Result<(), Fail> {
    match String::from_utf8_lossy(bytes) {
        Cow::Borrowed(text) => out.append_str(text)?,
        Cow::Owned(text) => out.append_str(&text)?,
    }
    Ok(())
}

/// A `wstring`: `u32` character count, then 4-byte (CDR1) or 2-byte (XCDR2)
/// characters, read as UTF-16 code units or code points (rmw_fastrtps
/// widens each UTF-16 unit to a `wchar_t`); unpaired surrogates and invalid
/// code points become U+FFFD.
fn read_wstring<O: Order>(r: &mut Reader<'_>, out: &mut ColumnBuilder) -> Result<(), Fail> {
    let width = if r.xcdr2 { 2 } else { 4 };
    let n = r.count::<O>(width)?;
    if n == 0 {
        out.append_str("")?;
        return Ok(());
    }
    r.align(width as usize);
    let bytes = r.take(n * width as usize)?;
    let mut units: Vec<u16> = Vec::with_capacity(n);
    if width == 2 {
        units.extend(bytes.chunks_exact(2).map(|c| O::u16(arr(c))));
    } else {
        for c in bytes.chunks_exact(4) {
            let v = O::u32(arr(c));
            match u16::try_from(v) {
                Ok(u) => units.push(u),
                Err(_) => {
                    let ch = char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER);
                    let mut buf = [0u16; 2];
                    units.extend_from_slice(ch.encode_utf16(&mut buf));
                }
            }
        }
    }
    // A trailing NUL some encoders add is not part of the text.
    if units.last() == Some(&0) {
        units.pop();
    }
    let text: String = char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect();
    out.append_str(&text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::MessageDecoder;

    #[test]
    fn a_bundled_ros2_definition_compiles() {
        let (text, _) =
            logsql_readers::ros2_interfaces::definition("sensor_msgs/msg/Imu", "").unwrap();
        let d = super::compile("sensor_msgs/msg/Imu", &text).unwrap();
        assert!(format!("{:?}", d.data_type()).contains("angular_velocity_covariance"));
    }
}
