//! The one Arrow column builder every message decoder writes into.
//!
//! A [`ColumnBuilder`] is made from an Arrow [`DataType`] (the decoded
//! message's type: a `Struct` of its fields) and grows one row per message.
//! Decoders (ROS1, CDR, protobuf, JSON) walk their payload and append values in
//! schema order; the builder checks every append against the column's type, so
//! a payload that does not match its schema is an error, never a panic.
//!
//! Unlike arrow's own builders, every builder here can [`truncate`]: when a
//! payload fails half-way, the partial row is rolled back (see
//! [`super::append_message`]), so one bad message never shifts the columns of
//! the messages after it.
//!
//! [`truncate`]: ColumnBuilder::truncate

use std::sync::Arc;

use arrow_array::types::{
    DurationNanosecondType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, FixedSizeListArray, ListArray,
    MapArray, NullArray, PrimitiveArray, StringArray, StructArray,
};
use arrow_buffer::{BooleanBufferBuilder, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef, Fields, TimeUnit};

use super::DecodeError;

/// A growable, truncatable Arrow column of any type a decoder produces.
///
/// Supported types: `Null`, `Boolean`, all integer widths, `Float32`,
/// `Float64`, `Timestamp(Nanosecond, _)`, `Duration(Nanosecond)`, `Utf8`,
/// `Binary`, `List`, `FixedSizeList`, `Struct` and `Map`.
#[derive(Debug)]
pub struct ColumnBuilder {
    data_type: DataType,
    nulls: NullBufferBuilder,
    values: Values,
    /// Rows appended (kept here: the null builder's own count is not inlined).
    rows: usize,
}

/// The value storage of a [`ColumnBuilder`], one variant per physical layout.
#[derive(Debug)]
enum Values {
    Null,
    Bool(BooleanBufferBuilder),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// `Timestamp(Nanosecond, tz)` and `Duration(Nanosecond)`: nanoseconds.
    Nanos(Vec<i64>),
    /// `Utf8` and `Binary`: offsets (one more than rows) and bytes.
    Bytes {
        offsets: Vec<i32>,
        data: Vec<u8>,
    },
    /// `List` and `Map`: offsets into the child.
    List {
        field: FieldRef,
        offsets: Vec<i32>,
        child: Box<ColumnBuilder>,
    },
    /// `FixedSizeList`: exactly `size` child values per row.
    FixedList {
        field: FieldRef,
        size: usize,
        child: Box<ColumnBuilder>,
    },
    /// `Struct`: one child per field.
    Struct {
        fields: Fields,
        children: Vec<ColumnBuilder>,
    },
}

/// What an append was given, for type-mismatch errors.
fn mismatch(data_type: &DataType, given: &str) -> DecodeError {
    DecodeError::new(format!(
        "cannot store {given} in a column of type {data_type}"
    ))
}

impl ColumnBuilder {
    /// An empty builder for columns of `data_type`.
    pub fn new(data_type: &DataType) -> Result<Self, DecodeError> {
        let values = match data_type {
            DataType::Null => Values::Null,
            DataType::Boolean => Values::Bool(BooleanBufferBuilder::new(0)),
            DataType::Int8 => Values::I8(Vec::new()),
            DataType::Int16 => Values::I16(Vec::new()),
            DataType::Int32 => Values::I32(Vec::new()),
            DataType::Int64 => Values::I64(Vec::new()),
            DataType::UInt8 => Values::U8(Vec::new()),
            DataType::UInt16 => Values::U16(Vec::new()),
            DataType::UInt32 => Values::U32(Vec::new()),
            DataType::UInt64 => Values::U64(Vec::new()),
            DataType::Float32 => Values::F32(Vec::new()),
            DataType::Float64 => Values::F64(Vec::new()),
            DataType::Timestamp(TimeUnit::Nanosecond, _)
            | DataType::Duration(TimeUnit::Nanosecond) => Values::Nanos(Vec::new()),
            DataType::Utf8 | DataType::Binary => Values::Bytes {
                offsets: vec![0],
                data: Vec::new(),
            },
            DataType::List(field) | DataType::Map(field, _) => Values::List {
                field: field.clone(),
                offsets: vec![0],
                child: Box::new(ColumnBuilder::new(field.data_type())?),
            },
            DataType::FixedSizeList(field, size) => Values::FixedList {
                field: field.clone(),
                size: usize::try_from(*size)
                    .map_err(|_| DecodeError::new(format!("bad list size {size}")))?,
                child: Box::new(ColumnBuilder::new(field.data_type())?),
            },
            DataType::Struct(fields) => Values::Struct {
                fields: fields.clone(),
                children: fields
                    .iter()
                    .map(|f| ColumnBuilder::new(f.data_type()))
                    .collect::<Result<_, _>>()?,
            },
            other => {
                return Err(DecodeError::new(format!(
                    "decoded columns of type {other} are not supported"
                )));
            }
        };
        Ok(Self {
            data_type: data_type.clone(),
            nulls: NullBufferBuilder::new(0),
            values,
            rows: 0,
        })
    }

    /// The column's Arrow type.
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// Rows appended so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Marks the row just appended as valid.
    #[inline]
    fn push_valid(&mut self) {
        self.nulls.append_non_null();
        self.rows += 1;
    }

    /// True when no row has been appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a null row (structs append nulls to every child, fixed-size
    /// lists `size` null children, so child lengths stay consistent).
    pub fn append_null(&mut self) {
        self.nulls.append_null();
        self.rows += 1;
        match &mut self.values {
            Values::Null => {}
            Values::Bool(b) => b.append(false),
            Values::I8(v) => v.push(0),
            Values::I16(v) => v.push(0),
            Values::I32(v) => v.push(0),
            Values::I64(v) | Values::Nanos(v) => v.push(0),
            Values::U8(v) => v.push(0),
            Values::U16(v) => v.push(0),
            Values::U32(v) => v.push(0),
            Values::U64(v) => v.push(0),
            Values::F32(v) => v.push(0.0),
            Values::F64(v) => v.push(0.0),
            Values::Bytes { offsets, data } => offsets.push(data.len() as i32),
            Values::List { offsets, child, .. } => offsets.push(child.len() as i32),
            Values::FixedList { size, child, .. } => {
                for _ in 0..*size {
                    child.append_null();
                }
            }
            Values::Struct { children, .. } => {
                for c in children {
                    c.append_null();
                }
            }
        }
    }

    /// Drops every row after the first `len` (rolls back a partial message).
    ///
    /// Children are cut back too, even when this column has no row past
    /// `len`: a struct or list row that failed half-way was never closed, so
    /// its children hold values the column's own length does not count.
    pub fn truncate(&mut self, len: usize) {
        let len = len.min(self.len());
        self.nulls.truncate(len);
        self.rows = len;
        match &mut self.values {
            Values::Null => {}
            Values::Bool(b) => b.truncate(len),
            Values::I8(v) => v.truncate(len),
            Values::I16(v) => v.truncate(len),
            Values::I32(v) => v.truncate(len),
            Values::I64(v) | Values::Nanos(v) => v.truncate(len),
            Values::U8(v) => v.truncate(len),
            Values::U16(v) => v.truncate(len),
            Values::U32(v) => v.truncate(len),
            Values::U64(v) => v.truncate(len),
            Values::F32(v) => v.truncate(len),
            Values::F64(v) => v.truncate(len),
            Values::Bytes { offsets, data } => {
                offsets.truncate(len + 1);
                data.truncate(offsets[len] as usize);
            }
            Values::List { offsets, child, .. } => {
                offsets.truncate(len + 1);
                child.truncate(offsets[len] as usize);
            }
            Values::FixedList { size, child, .. } => child.truncate(len * *size),
            Values::Struct { children, .. } => {
                for c in children {
                    c.truncate(len);
                }
            }
        }
    }

    /// Appends a boolean (Boolean columns only).
    #[inline]
    pub(crate) fn append_bool(&mut self, v: bool) -> Result<(), DecodeError> {
        match &mut self.values {
            Values::Bool(b) => b.append(v),
            _ => return Err(mismatch(&self.data_type, "a boolean")),
        }
        self.push_valid();
        Ok(())
    }

    /// Appends a signed integer to any integer, float, timestamp or duration
    /// column; integers out of the column's range are an error.
    #[inline]
    pub(crate) fn append_i64(&mut self, v: i64) -> Result<(), DecodeError> {
        let ok = match &mut self.values {
            Values::I8(c) => i8::try_from(v).map(|x| c.push(x)).is_ok(),
            Values::I16(c) => i16::try_from(v).map(|x| c.push(x)).is_ok(),
            Values::I32(c) => i32::try_from(v).map(|x| c.push(x)).is_ok(),
            Values::I64(c) | Values::Nanos(c) => {
                c.push(v);
                true
            }
            Values::U8(c) => u8::try_from(v).map(|x| c.push(x)).is_ok(),
            Values::U16(c) => u16::try_from(v).map(|x| c.push(x)).is_ok(),
            Values::U32(c) => u32::try_from(v).map(|x| c.push(x)).is_ok(),
            Values::U64(c) => u64::try_from(v).map(|x| c.push(x)).is_ok(),
            Values::F32(c) => {
                c.push(v as f32);
                true
            }
            Values::F64(c) => {
                c.push(v as f64);
                true
            }
            _ => return Err(mismatch(&self.data_type, "an integer")),
        };
        if !ok {
            return Err(mismatch(&self.data_type, &format!("the integer {v}")));
        }
        self.push_valid();
        Ok(())
    }

    /// Appends an unsigned integer to any integer, float, timestamp or
    /// duration column; integers out of the column's range are an error.
    #[inline]
    pub(crate) fn append_u64(&mut self, v: u64) -> Result<(), DecodeError> {
        match &mut self.values {
            Values::U64(c) => {
                c.push(v);
                self.push_valid();
                Ok(())
            }
            Values::F32(c) => {
                c.push(v as f32);
                self.push_valid();
                Ok(())
            }
            Values::F64(c) => {
                c.push(v as f64);
                self.push_valid();
                Ok(())
            }
            _ => match i64::try_from(v) {
                Ok(x) => self.append_i64(x),
                Err(_) => Err(mismatch(&self.data_type, &format!("the integer {v}"))),
            },
        }
    }

    /// Appends a float to a Float32 or Float64 column (narrowed to f32 there).
    #[inline]
    pub(crate) fn append_f64(&mut self, v: f64) -> Result<(), DecodeError> {
        match &mut self.values {
            Values::F32(c) => c.push(v as f32),
            Values::F64(c) => c.push(v),
            _ => return Err(mismatch(&self.data_type, "a float")),
        }
        self.push_valid();
        Ok(())
    }

    /// Appends an f32 exactly (Float32 columns; widened in Float64 ones).
    #[inline]
    pub(crate) fn append_f32(&mut self, v: f32) -> Result<(), DecodeError> {
        match &mut self.values {
            Values::F32(c) => c.push(v),
            Values::F64(c) => c.push(v as f64),
            _ => return Err(mismatch(&self.data_type, "a float")),
        }
        self.push_valid();
        Ok(())
    }

    /// Appends little-endian f64 values (8 bytes each) to a Float64 column in
    /// one go (packed protobuf doubles, ROS arrays of float64); a trailing
    /// partial value is an error.
    pub(crate) fn extend_f64_le(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        if !bytes.len().is_multiple_of(8) {
            return Err(DecodeError::new(format!(
                "{} bytes are not a whole number of float64 values",
                bytes.len()
            )));
        }
        let n = bytes.len() / 8;
        match &mut self.values {
            Values::F64(v) => v.extend(
                bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(<[u8; 8]>::try_from(c).unwrap_or_default())),
            ),
            _ => return Err(mismatch(&self.data_type, "float64 values")),
        }
        self.nulls.append_n_non_nulls(n);
        self.rows += n;
        Ok(())
    }

    /// Appends text to a Utf8 column (or its bytes to a Binary column).
    #[inline]
    pub(crate) fn append_str(&mut self, v: &str) -> Result<(), DecodeError> {
        self.append_byte_slice(v.as_bytes(), "a string")
    }

    /// Appends bytes to a Binary column; to a Utf8 column only when they are
    /// valid UTF-8 (otherwise an error naming the column type).
    #[inline]
    pub(crate) fn append_bytes(&mut self, v: &[u8]) -> Result<(), DecodeError> {
        if matches!(self.data_type, DataType::Utf8) && std::str::from_utf8(v).is_err() {
            return Err(DecodeError::new("string is not valid UTF-8"));
        }
        self.append_byte_slice(v, "bytes")
    }

    #[inline]
    fn append_byte_slice(&mut self, v: &[u8], what: &str) -> Result<(), DecodeError> {
        match &mut self.values {
            Values::Bytes { offsets, data } => {
                let end = data.len() + v.len();
                let end = i32::try_from(end)
                    .map_err(|_| DecodeError::new("more than 2 GiB of text in one batch"))?;
                data.extend_from_slice(v);
                offsets.push(end);
            }
            _ => return Err(mismatch(&self.data_type, what)),
        }
        self.push_valid();
        Ok(())
    }

    /// The child of a List, Map (its entries struct) or FixedSizeList column:
    /// append the row's elements to it, then call [`Self::close_list`].
    #[inline]
    pub(crate) fn list_child(&mut self) -> Result<&mut ColumnBuilder, DecodeError> {
        match &mut self.values {
            Values::List { child, .. } | Values::FixedList { child, .. } => Ok(child),
            _ => Err(mismatch(&self.data_type, "a list")),
        }
    }

    /// Ends a list row whose elements were appended to [`Self::list_child`].
    /// For a FixedSizeList, the row must hold exactly the list size.
    #[inline]
    pub(crate) fn close_list(&mut self) -> Result<(), DecodeError> {
        let rows = self.len();
        match &mut self.values {
            Values::List { offsets, child, .. } => {
                let end = i32::try_from(child.len())
                    .map_err(|_| DecodeError::new("more than 2^31 list elements in one batch"))?;
                offsets.push(end);
            }
            Values::FixedList { size, child, .. } => {
                let want = (rows + 1) * *size;
                if child.len() != want {
                    let got = child.len() as i64 - (rows * *size) as i64;
                    let size = *size;
                    child.truncate(rows * size);
                    return Err(DecodeError::new(format!(
                        "fixed-size array of {size} elements got {got}"
                    )));
                }
            }
            _ => return Err(mismatch(&self.data_type, "a list")),
        }
        self.push_valid();
        Ok(())
    }

    /// Field `i` of a Struct column: append exactly one value (or null) to
    /// every field, then call `Self::close_struct`.
    #[inline]
    pub fn field(&mut self, i: usize) -> Result<&mut ColumnBuilder, DecodeError> {
        match &mut self.values {
            Values::Struct { children, .. } => {
                let n = children.len();
                children
                    .get_mut(i)
                    .ok_or_else(|| DecodeError::new(format!("field {i} of a {n}-field struct")))
            }
            _ => Err(mismatch(&self.data_type, "a struct")),
        }
    }

    /// All fields of a Struct column at once, for decoders that walk them in order.
    #[inline]
    pub(crate) fn fields_mut(&mut self) -> Result<&mut [ColumnBuilder], DecodeError> {
        match &mut self.values {
            Values::Struct { children, .. } => Ok(children),
            _ => Err(mismatch(&self.data_type, "a struct")),
        }
    }

    /// Ends a valid struct row. Fields the decoder did not fill get a null,
    /// so a message missing optional fields still makes a consistent row.
    #[inline]
    pub(crate) fn close_struct(&mut self) -> Result<(), DecodeError> {
        let rows = self.len();
        match &mut self.values {
            Values::Struct { children, fields } => {
                for (c, f) in children.iter_mut().zip(fields.iter()) {
                    match c.len() {
                        n if n == rows + 1 => {}
                        n if n == rows => c.append_null(),
                        n => {
                            return Err(DecodeError::new(format!(
                                "field {:?} got {} values in one row",
                                f.name(),
                                n as i64 - rows as i64
                            )));
                        }
                    }
                }
            }
            _ => return Err(mismatch(&self.data_type, "a struct")),
        }
        self.push_valid();
        Ok(())
    }

    /// Builds the Arrow array of every row so far and empties the builder.
    pub fn finish(&mut self) -> Result<ArrayRef, DecodeError> {
        let len = self.rows;
        self.rows = 0;
        let nulls = self.nulls.finish();
        let data_type = &self.data_type;
        Ok(match &mut self.values {
            Values::Null => Arc::new(NullArray::new(len)),
            Values::Bool(b) => Arc::new(BooleanArray::new(b.finish(), nulls)),
            Values::I8(v) => primitive::<Int8Type>(v, nulls, data_type),
            Values::I16(v) => primitive::<Int16Type>(v, nulls, data_type),
            Values::I32(v) => primitive::<Int32Type>(v, nulls, data_type),
            Values::I64(v) => primitive::<Int64Type>(v, nulls, data_type),
            Values::U8(v) => primitive::<UInt8Type>(v, nulls, data_type),
            Values::U16(v) => primitive::<UInt16Type>(v, nulls, data_type),
            Values::U32(v) => primitive::<UInt32Type>(v, nulls, data_type),
            Values::U64(v) => primitive::<UInt64Type>(v, nulls, data_type),
            Values::F32(v) => primitive::<Float32Type>(v, nulls, data_type),
            Values::F64(v) => primitive::<Float64Type>(v, nulls, data_type),
            Values::Nanos(v) => match data_type {
                DataType::Duration(_) => primitive::<DurationNanosecondType>(v, nulls, data_type),
                _ => primitive::<TimestampNanosecondType>(v, nulls, data_type),
            },
            Values::Bytes { offsets, data } => {
                let offsets = take_offsets(offsets);
                let data = take_keep_capacity(data).into();
                if matches!(data_type, DataType::Utf8) {
                    // SAFETY: every append to a Utf8 column was checked to be
                    // UTF-8 (`append_str` takes `&str`, `append_bytes`
                    // validates), and offsets are monotonic by construction.
                    Arc::new(unsafe { StringArray::new_unchecked(offsets, data, nulls) })
                } else {
                    Arc::new(BinaryArray::new(offsets, data, nulls))
                }
            }
            Values::List {
                field,
                offsets,
                child,
            } => {
                let offsets = take_offsets(offsets);
                let values = child.finish()?;
                match data_type {
                    DataType::Map(_, sorted) => {
                        let entries = values
                            .as_any()
                            .downcast_ref::<StructArray>()
                            .ok_or_else(|| DecodeError::new("map entries are not a struct"))?
                            .clone();
                        Arc::new(
                            MapArray::try_new(field.clone(), offsets, entries, nulls, *sorted)
                                .map_err(arrow_error)?,
                        )
                    }
                    _ => Arc::new(
                        ListArray::try_new(field.clone(), offsets, values, nulls)
                            .map_err(arrow_error)?,
                    ),
                }
            }
            Values::FixedList { field, size, child } => {
                let values = child.finish()?;
                Arc::new(
                    FixedSizeListArray::try_new_with_length(
                        field.clone(),
                        *size as i32,
                        values,
                        nulls,
                        len,
                    )
                    .map_err(arrow_error)?,
                )
            }
            Values::Struct { fields, children } => {
                let columns = children
                    .iter_mut()
                    .map(|c| c.finish())
                    .collect::<Result<Vec<_>, _>>()?;
                Arc::new(
                    StructArray::try_new_with_length(fields.clone(), columns, nulls, len)
                        .map_err(arrow_error)?,
                )
            }
        })
    }
}

/// Offsets moved out of a builder (which starts again at `[0]`, with room
/// for as many rows as the last batch had).
fn take_offsets(offsets: &mut Vec<i32>) -> OffsetBuffer<i32> {
    let mut next = Vec::with_capacity(offsets.len());
    next.push(0);
    OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(offsets, next)))
}

/// The values moved out of a builder, leaving room for as many in the next
/// batch: batches are alike, and growing from empty copies every value
/// log2(n) times.
fn take_keep_capacity<T>(v: &mut Vec<T>) -> Vec<T> {
    let n = v.len();
    std::mem::replace(v, Vec::with_capacity(n))
}

/// An Arrow error from assembling arrays (a decoder broke the row protocol).
fn arrow_error(e: arrow_schema::ArrowError) -> DecodeError {
    DecodeError::new(format!("building decoded columns: {e}"))
}

/// A primitive array from a values vector (emptied), keeping timezone etc.
fn primitive<T: ArrowPrimitiveType>(
    values: &mut Vec<T::Native>,
    nulls: Option<arrow_buffer::NullBuffer>,
    data_type: &DataType,
) -> ArrayRef {
    let values = ScalarBuffer::from(take_keep_capacity(values));
    Arc::new(PrimitiveArray::<T>::new(values, nulls).with_data_type(data_type.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{field, list_of};
    use arrow_array::Array;

    fn st(fields: Vec<arrow_schema::Field>) -> DataType {
        DataType::Struct(fields.into())
    }

    #[test]
    fn truncate_rolls_back_an_unclosed_row() {
        let t = st(vec![
            field("a", DataType::Int32),
            field("l", list_of(st(vec![field("s", DataType::Utf8)]))),
        ]);
        let mut b = ColumnBuilder::new(&t).unwrap();
        // One good row.
        b.field(0).unwrap().append_i64(1).unwrap();
        let l = b.field(1).unwrap();
        l.list_child()
            .unwrap()
            .field(0)
            .unwrap()
            .append_str("x")
            .unwrap();
        l.list_child().unwrap().close_struct().unwrap();
        l.close_list().unwrap();
        b.close_struct().unwrap();
        // A row that fails inside the list's second element.
        b.field(0).unwrap().append_i64(2).unwrap();
        let l = b.field(1).unwrap();
        l.list_child()
            .unwrap()
            .field(0)
            .unwrap()
            .append_str("y")
            .unwrap();
        l.list_child().unwrap().close_struct().unwrap();
        l.list_child()
            .unwrap()
            .field(0)
            .unwrap()
            .append_str("z")
            .unwrap();
        b.truncate(1);
        // A null row and a good row after it.
        b.append_null();
        b.field(0).unwrap().append_i64(3).unwrap();
        b.field(1).unwrap().close_list().unwrap();
        b.close_struct().unwrap();
        let a = b.finish().unwrap();
        a.to_data().validate_full().unwrap();
        assert_eq!(a.len(), 3);
        assert!(a.is_null(1));
        let s = a.as_any().downcast_ref::<StructArray>().unwrap();
        let l = s.column(1).as_any().downcast_ref::<ListArray>().unwrap();
        assert_eq!(l.value_offsets(), &[0, 1, 1, 1]);
    }

    #[test]
    fn appends_check_types_and_ranges() {
        let mut b = ColumnBuilder::new(&DataType::UInt8).unwrap();
        assert!(b.append_i64(256).is_err());
        assert!(b.append_i64(-1).is_err());
        assert!(b.append_str("x").is_err());
        b.append_i64(255).unwrap();
        assert_eq!(b.len(), 1);
        let mut f = ColumnBuilder::new(&fixed_list(DataType::Float64, 2)).unwrap();
        f.list_child().unwrap().append_f64(1.0).unwrap();
        assert!(f.close_list().is_err());
        assert_eq!(f.len(), 0);
        f.list_child().unwrap().append_f64(1.0).unwrap();
        f.list_child().unwrap().append_f64(2.0).unwrap();
        f.close_list().unwrap();
        f.append_null();
        let a = f.finish().unwrap();
        a.to_data().validate_full().unwrap();
        assert_eq!((a.len(), a.null_count()), (2, 1));
        let mut s = ColumnBuilder::new(&DataType::Utf8).unwrap();
        assert!(s.append_bytes(&[0xff]).is_err());
    }

    fn fixed_list(item: DataType, n: i32) -> DataType {
        crate::fixed_list_of(item, n)
    }
}
