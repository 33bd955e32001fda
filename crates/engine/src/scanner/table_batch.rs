//! Building record batches of a format's typed side tables ([`logsql_readers::table`])
//! from the rows a reader delivers as [`Value`] cells.
//!
//! Only the needed columns are built. Numbers are converted to the column's
//! declared type (a reader may hand `F64` for a `Float32` column); a value
//! that does not fit becomes null rather than wrapping.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, FixedSizeListArray, Float32Builder, Float64Builder,
    Int8Builder, Int16Builder, Int32Builder, Int64Builder, ListArray, MapBuilder, StringBuilder,
    TimestampNanosecondBuilder, UInt8Builder, UInt16Builder, UInt32Builder, UInt64Builder,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::{Field, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::{DataFusionError, Result};

use super::schema::col;
use logsql_readers::table::{ColumnType, ScalarType, TableDef, Value};

/// Appends typed-table rows to Arrow builders for a fixed set of columns.
pub(crate) struct TableBatchBuilder {
    schema: SchemaRef,
    /// For each output column: the position of its cell in a row (`None`: the `file` column).
    sources: Vec<Option<usize>>,
    columns: Vec<Column>,
    file: Arc<str>,
    rows: usize,
    max_rows: usize,
}

impl TableBatchBuilder {
    /// A builder for the columns of `schema` (a projection of `def`'s table schema).
    pub(crate) fn new(
        schema: SchemaRef,
        def: &TableDef,
        file: Arc<str>,
        max_rows: usize,
    ) -> Result<Self> {
        let mut sources = Vec::new();
        let mut columns = Vec::new();
        for field in schema.fields() {
            match def.columns.iter().position(|c| &c.name == field.name()) {
                Some(i) => {
                    sources.push(Some(i));
                    columns.push(Column::new(def.columns[i].ty));
                }
                None if field.name() == col::FILE => {
                    sources.push(None);
                    columns.push(Column::Scalar(Scalar::new(ScalarType::Utf8)));
                }
                None => {
                    return Err(DataFusionError::Internal(format!(
                        "table {} has no column {}",
                        def.name,
                        field.name()
                    )));
                }
            }
        }
        Ok(Self {
            schema,
            sources,
            columns,
            file,
            rows: 0,
            max_rows: max_rows.max(1),
        })
    }

    /// Appends one row (cells in the table definition's column order; missing cells are null).
    pub(crate) fn append(&mut self, cells: &[Value<'_>]) {
        for (src, column) in self.sources.iter().zip(&mut self.columns) {
            let v = match src {
                Some(i) => cells.get(*i).copied().unwrap_or(Value::Null),
                None => Value::Str(&self.file),
            };
            column.append(v);
        }
        self.rows += 1;
    }

    /// Whether the batch holds `1 / parts` of its row bound (`parts` 1: it
    /// reached the bound).
    pub(crate) fn holds_share(&self, parts: usize) -> bool {
        self.rows >= self.max_rows.div_ceil(parts)
    }

    /// Whether nothing is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Takes the buffered rows as a batch.
    pub(crate) fn finish(&mut self) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .iter_mut()
            .zip(self.schema.fields())
            .map(|(c, f)| c.finish(f))
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        self.rows = 0;
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            arrays,
            &options,
        )?)
    }
}

/// Builder of one typed-table column.
// One builder per column and batch: size differences do not matter.
#[allow(clippy::large_enum_variant)]
enum Column {
    Scalar(Scalar),
    /// Child values, offsets and validity of a variable-length list.
    List(Scalar, Vec<i32>, Vec<bool>),
    /// Child values, width and validity of a fixed-size list.
    FixedList(Scalar, usize, Vec<bool>),
    Map(MapBuilder<StringBuilder, StringBuilder>),
}

impl Column {
    fn new(ty: ColumnType) -> Self {
        match ty {
            ColumnType::Scalar(s) => Self::Scalar(Scalar::new(s)),
            ColumnType::List(s) => Self::List(Scalar::new(s), vec![0], Vec::new()),
            ColumnType::FixedList(s, n) => Self::FixedList(Scalar::new(s), n, Vec::new()),
            ColumnType::StringMap => Self::Map(MapBuilder::new(
                None,
                StringBuilder::new(),
                StringBuilder::new(),
            )),
        }
    }

    fn append(&mut self, v: Value<'_>) {
        match self {
            Self::Scalar(b) => b.append(v),
            Self::List(child, offsets, valid) => {
                let n = child.append_list(v);
                let last = offsets.last().copied().unwrap_or(0);
                offsets.push(last.saturating_add(i32::try_from(n).unwrap_or(i32::MAX)));
                valid.push(!matches!(v, Value::Null));
            }
            Self::FixedList(child, width, valid) => {
                let n = child.append_list(v);
                // Pad or refuse rows of the wrong width: the list stays rectangular.
                let ok = n == *width;
                if !ok {
                    child.truncate_by(n);
                    for _ in 0..*width {
                        child.append(Value::Null);
                    }
                }
                valid.push(ok && !matches!(v, Value::Null));
            }
            Self::Map(b) => {
                if let Value::Pairs(pairs) = v {
                    for (k, val) in pairs {
                        b.keys().append_value(k);
                        b.values().append_value(val);
                    }
                    let _ = b.append(true);
                } else {
                    let _ = b.append(false);
                }
            }
        }
    }

    fn finish(&mut self, field: &Field) -> Result<ArrayRef> {
        Ok(match self {
            Self::Scalar(b) => b.finish(),
            Self::List(child, offsets, valid) => {
                let item = list_item(field)?;
                let values = child.finish();
                let offs = std::mem::replace(offsets, vec![0]);
                let nulls = NullBuffer::from(std::mem::take(valid));
                Arc::new(ListArray::try_new(
                    item,
                    OffsetBuffer::new(offs.into()),
                    values,
                    Some(nulls),
                )?)
            }
            Self::FixedList(child, width, valid) => {
                let item = list_item(field)?;
                let values = child.finish();
                let nulls = NullBuffer::from(std::mem::take(valid));
                Arc::new(FixedSizeListArray::try_new(
                    item,
                    i32::try_from(*width).unwrap_or(i32::MAX),
                    values,
                    Some(nulls),
                )?)
            }
            Self::Map(b) => Arc::new(b.finish()),
        })
    }
}

/// The item field of a list-typed output field.
fn list_item(field: &Field) -> Result<Arc<Field>> {
    use datafusion::arrow::datatypes::DataType;
    match field.data_type() {
        DataType::List(f) | DataType::FixedSizeList(f, _) => Ok(Arc::clone(f)),
        other => Err(DataFusionError::Internal(format!(
            "column {} is {other}, not a list",
            field.name()
        ))),
    }
}

/// Builder of a scalar column (or of list items).
enum Scalar {
    Boolean(BooleanBuilder),
    Int8(Int8Builder),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    UInt8(UInt8Builder),
    UInt16(UInt16Builder),
    UInt32(UInt32Builder),
    UInt64(UInt64Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Utf8(StringBuilder),
    Binary(BinaryBuilder),
    Timestamp(TimestampNanosecondBuilder),
}

/// The value as i64, when it is an integer (or a boolean, or an integral float).
fn as_i64(v: Value<'_>) -> Option<i64> {
    match v {
        Value::I64(x) => Some(x),
        Value::U64(x) | Value::Time(x) => i64::try_from(x).ok(),
        Value::Bool(b) => Some(i64::from(b)),
        Value::F64(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(f as i64),
        _ => None,
    }
}

/// The value as u64, when it is a non-negative integer.
fn as_u64(v: Value<'_>) -> Option<u64> {
    match v {
        Value::U64(x) | Value::Time(x) => Some(x),
        Value::I64(x) => u64::try_from(x).ok(),
        Value::Bool(b) => Some(u64::from(b)),
        Value::F64(f) if f.fract() == 0.0 && (0.0..1.8e19).contains(&f) => Some(f as u64),
        _ => None,
    }
}

/// The value as f64, when it is a number.
fn as_f64(v: Value<'_>) -> Option<f64> {
    match v {
        Value::F64(x) => Some(x),
        Value::I64(x) => Some(x as f64),
        Value::U64(x) => Some(x as f64),
        _ => None,
    }
}

impl Scalar {
    fn new(t: ScalarType) -> Self {
        match t {
            ScalarType::Boolean => Self::Boolean(BooleanBuilder::new()),
            ScalarType::Int8 => Self::Int8(Int8Builder::new()),
            ScalarType::Int16 => Self::Int16(Int16Builder::new()),
            ScalarType::Int32 => Self::Int32(Int32Builder::new()),
            ScalarType::Int64 => Self::Int64(Int64Builder::new()),
            ScalarType::UInt8 => Self::UInt8(UInt8Builder::new()),
            ScalarType::UInt16 => Self::UInt16(UInt16Builder::new()),
            ScalarType::UInt32 => Self::UInt32(UInt32Builder::new()),
            ScalarType::UInt64 => Self::UInt64(UInt64Builder::new()),
            ScalarType::Float32 => Self::Float32(Float32Builder::new()),
            ScalarType::Float64 => Self::Float64(Float64Builder::new()),
            ScalarType::Utf8 => Self::Utf8(StringBuilder::new()),
            ScalarType::Binary => Self::Binary(BinaryBuilder::new()),
            ScalarType::Timestamp => Self::Timestamp(TimestampNanosecondBuilder::new()),
        }
    }

    fn append(&mut self, v: Value<'_>) {
        match self {
            Self::Boolean(b) => b.append_option(match v {
                Value::Bool(x) => Some(x),
                other => as_i64(other).map(|i| i != 0),
            }),
            Self::Int8(b) => b.append_option(as_i64(v).and_then(|x| i8::try_from(x).ok())),
            Self::Int16(b) => b.append_option(as_i64(v).and_then(|x| i16::try_from(x).ok())),
            Self::Int32(b) => b.append_option(as_i64(v).and_then(|x| i32::try_from(x).ok())),
            Self::Int64(b) => b.append_option(as_i64(v)),
            Self::UInt8(b) => b.append_option(as_u64(v).and_then(|x| u8::try_from(x).ok())),
            Self::UInt16(b) => b.append_option(as_u64(v).and_then(|x| u16::try_from(x).ok())),
            Self::UInt32(b) => b.append_option(as_u64(v).and_then(|x| u32::try_from(x).ok())),
            Self::UInt64(b) => b.append_option(as_u64(v)),
            Self::Float32(b) => b.append_option(as_f64(v).map(|x| x as f32)),
            Self::Float64(b) => b.append_option(as_f64(v)),
            Self::Utf8(b) => match v {
                Value::Str(s) => b.append_value(s),
                Value::Bytes(x) => b.append_option(std::str::from_utf8(x).ok()),
                _ => b.append_null(),
            },
            Self::Binary(b) => match v {
                Value::Bytes(x) => b.append_value(x),
                Value::Str(s) => b.append_value(s.as_bytes()),
                _ => b.append_null(),
            },
            Self::Timestamp(b) => b.append_option(match v {
                Value::Time(t) | Value::U64(t) => i64::try_from(t).ok(),
                Value::I64(t) => Some(t),
                _ => None,
            }),
        }
    }

    /// Appends the items of a list value; returns how many.
    fn append_list(&mut self, v: Value<'_>) -> usize {
        match v {
            Value::I64s(xs) => xs.iter().for_each(|x| self.append(Value::I64(*x))),
            Value::U64s(xs) => xs.iter().for_each(|x| self.append(Value::U64(*x))),
            Value::F64s(xs) => xs.iter().for_each(|x| self.append(Value::F64(*x))),
            Value::F32s(xs) => xs
                .iter()
                .for_each(|x| self.append(Value::F64(f64::from(*x)))),
            Value::Null => return 0,
            scalar => {
                self.append(scalar);
                return 1;
            }
        }
        match v {
            Value::I64s(xs) => xs.len(),
            Value::U64s(xs) => xs.len(),
            Value::F64s(xs) => xs.len(),
            Value::F32s(xs) => xs.len(),
            _ => 0,
        }
    }

    /// Removes the last `n` appended items (a list row of the wrong width).
    fn truncate_by(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        // Arrow builders cannot pop; rebuild without the tail (rare: malformed rows only).
        let array = self.finish();
        let keep = array.len().saturating_sub(n);
        let kept = array.slice(0, keep);
        let ty = self.scalar_type();
        *self = Scalar::new(ty);
        for i in 0..kept.len() {
            self.append_from(&kept, i);
        }
    }

    fn scalar_type(&self) -> ScalarType {
        match self {
            Self::Boolean(_) => ScalarType::Boolean,
            Self::Int8(_) => ScalarType::Int8,
            Self::Int16(_) => ScalarType::Int16,
            Self::Int32(_) => ScalarType::Int32,
            Self::Int64(_) => ScalarType::Int64,
            Self::UInt8(_) => ScalarType::UInt8,
            Self::UInt16(_) => ScalarType::UInt16,
            Self::UInt32(_) => ScalarType::UInt32,
            Self::UInt64(_) => ScalarType::UInt64,
            Self::Float32(_) => ScalarType::Float32,
            Self::Float64(_) => ScalarType::Float64,
            Self::Utf8(_) => ScalarType::Utf8,
            Self::Binary(_) => ScalarType::Binary,
            Self::Timestamp(_) => ScalarType::Timestamp,
        }
    }

    /// Re-appends item `i` of `array` (same type as this builder).
    fn append_from(&mut self, array: &ArrayRef, i: usize) {
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::datatypes as t;
        if array.is_null(i) {
            self.append(Value::Null);
            return;
        }
        let v = match self.scalar_type() {
            ScalarType::Boolean => Value::Bool(array.as_boolean().value(i)),
            ScalarType::Int8 => Value::I64(array.as_primitive::<t::Int8Type>().value(i).into()),
            ScalarType::Int16 => Value::I64(array.as_primitive::<t::Int16Type>().value(i).into()),
            ScalarType::Int32 => Value::I64(array.as_primitive::<t::Int32Type>().value(i).into()),
            ScalarType::Int64 => Value::I64(array.as_primitive::<t::Int64Type>().value(i)),
            ScalarType::UInt8 => Value::U64(array.as_primitive::<t::UInt8Type>().value(i).into()),
            ScalarType::UInt16 => Value::U64(array.as_primitive::<t::UInt16Type>().value(i).into()),
            ScalarType::UInt32 => Value::U64(array.as_primitive::<t::UInt32Type>().value(i).into()),
            ScalarType::UInt64 => Value::U64(array.as_primitive::<t::UInt64Type>().value(i)),
            ScalarType::Float32 => {
                Value::F64(array.as_primitive::<t::Float32Type>().value(i).into())
            }
            ScalarType::Float64 => Value::F64(array.as_primitive::<t::Float64Type>().value(i)),
            ScalarType::Timestamp => {
                Value::I64(array.as_primitive::<t::TimestampNanosecondType>().value(i))
            }
            ScalarType::Utf8 | ScalarType::Binary => Value::Null,
        };
        self.append(v);
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Boolean(b) => Arc::new(b.finish()),
            Self::Int8(b) => Arc::new(b.finish()),
            Self::Int16(b) => Arc::new(b.finish()),
            Self::Int32(b) => Arc::new(b.finish()),
            Self::Int64(b) => Arc::new(b.finish()),
            Self::UInt8(b) => Arc::new(b.finish()),
            Self::UInt16(b) => Arc::new(b.finish()),
            Self::UInt32(b) => Arc::new(b.finish()),
            Self::UInt64(b) => Arc::new(b.finish()),
            Self::Float32(b) => Arc::new(b.finish()),
            Self::Float64(b) => Arc::new(b.finish()),
            Self::Utf8(b) => Arc::new(b.finish()),
            Self::Binary(b) => Arc::new(b.finish()),
            Self::Timestamp(b) => Arc::new(b.finish().with_timezone("UTC")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scanner::schema::table_schema;
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::Float32Type;
    use logsql_readers::table::ColumnDef;

    #[test]
    fn rows_become_typed_columns() {
        let def = TableDef {
            name: "t".into(),
            doc: String::new(),
            per_chunk: true,
            columns: vec![
                ColumnDef::new("id", ColumnType::Scalar(ScalarType::UInt32), ""),
                ColumnDef::new("v", ColumnType::FixedList(ScalarType::Float32, 3), ""),
                ColumnDef::new("xs", ColumnType::List(ScalarType::Int16), ""),
            ],
        };
        let schema = table_schema(&def);
        let mut b = TableBatchBuilder::new(schema, &def, "f".into(), 100).unwrap();
        b.append(&[
            Value::U64(7),
            Value::F32s(&[1.0, 2.0, 3.0]),
            Value::I64s(&[1, 2]),
        ]);
        // Wrong width and out-of-range values become nulls, never panics.
        b.append(&[Value::I64(-1), Value::F64s(&[1.0]), Value::I64s(&[70000])]);
        let batch = b.finish().unwrap();
        assert_eq!(batch.num_rows(), 2);
        let ids = batch
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::UInt32Type>();
        assert_eq!((ids.value(0), ids.is_null(1)), (7, true));
        let v = batch.column(1).as_fixed_size_list();
        assert!(v.is_valid(0) && v.is_null(1));
        assert_eq!(
            v.value(0).as_primitive::<Float32Type>().values(),
            &[1.0, 2.0, 3.0]
        );
        let xs = batch.column(2).as_list::<i32>();
        assert_eq!(xs.value(1).null_count(), 1);
        assert_eq!(batch.column(3).as_string::<i32>().value(1), "f");
    }
}
