//! Table schemas: the `messages` table (common columns, plus the extra columns
//! of every format such as CARLA's `frame`), and the typed side tables of
//! [`logsql_readers::table`] in Arrow terms.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use logsql_readers::formats;
use logsql_readers::model::{ExtraColumn, ExtraKind};
use logsql_readers::table::{ColumnType, ScalarType, TableDef};

use datafusion::arrow::array::{
    ArrayRef, MapBuilder, StringBuilder, TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// Column names of the `messages` table, in schema order.
pub mod col {
    /// Topic name (Utf8).
    pub const TOPIC: &str = "topic";
    /// Log time, `Timestamp(Nanosecond, "UTC")`.
    pub(crate) const LOG_TIME: &str = "log_time";
    /// Publish time, same type, null where the format lacks it.
    pub(crate) const PUBLISH_TIME: &str = "publish_time";
    /// Sequence number (UInt32, nullable).
    pub(crate) const SEQUENCE: &str = "sequence";
    /// Message type / schema name (Utf8, nullable).
    pub(crate) const MESSAGE_TYPE: &str = "message_type";
    /// Payload encoding (Utf8).
    pub(crate) const MESSAGE_ENCODING: &str = "message_encoding";
    /// Raw payload (Binary).
    pub const DATA: &str = "data";
    /// The file the row came from (Utf8).
    pub const FILE: &str = "file";
}

/// The Arrow type of every time column: nanoseconds, UTC.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

static MESSAGES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new(col::TOPIC, DataType::Utf8, false),
        Field::new(col::LOG_TIME, timestamp_type(), false),
        Field::new(col::PUBLISH_TIME, timestamp_type(), true),
        Field::new(col::SEQUENCE, DataType::UInt32, true),
        Field::new(col::MESSAGE_TYPE, DataType::Utf8, true),
        Field::new(col::MESSAGE_ENCODING, DataType::Utf8, false),
        Field::new(col::DATA, DataType::BinaryView, false),
        Field::new(col::FILE, DataType::Utf8, false),
    ]))
});

/// The common columns of the `messages` table (without the formats' extra
/// columns; see [`messages_table_schema`]).
#[cfg(test)]
pub(crate) fn messages_schema() -> SchemaRef {
    Arc::clone(&MESSAGES)
}

/// The `messages` schema of every log table: the common columns, then the
/// extra columns of every format (CARLA's `frame`, BDDF's
/// `additional_indexes`, ...), null for rows of formats that lack them. One
/// schema for every format, so that tables of different formats union
/// (`SELECT * FROM 'a.bddf' UNION ALL SELECT * FROM 'b.log'`) and a file has
/// the same columns alone as in a directory of mixed formats.
pub(crate) fn messages_table_schema() -> SchemaRef {
    Arc::clone(&MESSAGES_TABLE)
}

static MESSAGES_TABLE: LazyLock<SchemaRef> = LazyLock::new(|| {
    let mut extras: Vec<ExtraColumn> = Vec::new();
    for f in formats::all() {
        for c in f.extra_columns() {
            if !extras.iter().any(|e| e.name == c.name) {
                extras.push(*c);
            }
        }
    }
    let mut fields: Vec<Field> = MESSAGES
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.extend(
        extras
            .iter()
            .map(|c| Field::new(c.name, extra_type(c.kind), true)),
    );
    Arc::new(Schema::new(fields))
});

/// The Arrow type of an extra column.
pub(crate) fn extra_type(kind: ExtraKind) -> DataType {
    match kind {
        ExtraKind::UInt64 => DataType::UInt64,
        ExtraKind::Int64 => DataType::Int64,
        ExtraKind::Float64 => DataType::Float64,
        ExtraKind::Int64Map => map_type(DataType::Int64),
    }
}

/// `Map<Utf8, value>` as arrow-rs's `MapBuilder` builds it.
pub(crate) fn map_type(value: DataType) -> DataType {
    let entries = DataType::Struct(
        vec![
            Field::new("keys", DataType::Utf8, false),
            Field::new("values", value, true),
        ]
        .into(),
    );
    DataType::Map(Arc::new(Field::new("entries", entries, false)), false)
}

/// The Arrow type of a scalar of a typed table.
pub(crate) fn scalar_type(t: ScalarType) -> DataType {
    match t {
        ScalarType::Boolean => DataType::Boolean,
        ScalarType::Int8 => DataType::Int8,
        ScalarType::Int16 => DataType::Int16,
        ScalarType::Int32 => DataType::Int32,
        ScalarType::Int64 => DataType::Int64,
        ScalarType::UInt8 => DataType::UInt8,
        ScalarType::UInt16 => DataType::UInt16,
        ScalarType::UInt32 => DataType::UInt32,
        ScalarType::UInt64 => DataType::UInt64,
        ScalarType::Float32 => DataType::Float32,
        ScalarType::Float64 => DataType::Float64,
        ScalarType::Utf8 => DataType::Utf8,
        ScalarType::Binary => DataType::Binary,
        ScalarType::Timestamp => timestamp_type(),
    }
}

/// The Arrow type of a typed-table column.
pub fn column_type(t: ColumnType) -> DataType {
    let item = |s| Arc::new(Field::new("item", scalar_type(s), true));
    match t {
        ColumnType::Scalar(s) => scalar_type(s),
        ColumnType::FixedList(s, n) => {
            DataType::FixedSizeList(item(s), i32::try_from(n).unwrap_or(i32::MAX))
        }
        ColumnType::List(s) => DataType::List(item(s)),
        ColumnType::StringMap => map_type(DataType::Utf8),
    }
}

/// The schema of a typed table: its columns, then `file` (unless it has one).
pub fn table_schema(def: &TableDef) -> SchemaRef {
    let mut fields: Vec<Field> = def
        .columns
        .iter()
        .map(|c| {
            let mut meta = std::collections::HashMap::new();
            if !c.doc.is_empty() {
                meta.insert("doc".to_string(), c.doc.clone());
            }
            Field::new(&c.name, column_type(c.ty), true).with_metadata(meta)
        })
        .collect();
    if !def.columns.iter().any(|c| c.name == col::FILE) {
        fields.push(Field::new(col::FILE, DataType::Utf8, false));
    }
    Arc::new(Schema::new(fields))
}

/// The type of a string-to-string map column.
pub(crate) fn map_field(name: &str) -> Field {
    let entries = DataType::Struct(
        vec![
            Field::new("keys", DataType::Utf8, false),
            Field::new("values", DataType::Utf8, true),
        ]
        .into(),
    );
    Field::new(
        name,
        DataType::Map(Arc::new(Field::new("entries", entries, false)), false),
        false,
    )
}

/// A map column with one map per item of `maps`.
pub(crate) fn map_array<'a>(
    maps: impl IntoIterator<Item = &'a BTreeMap<String, String>>,
) -> datafusion::error::Result<ArrayRef> {
    let mut b = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    for m in maps {
        for (k, v) in m {
            b.keys().append_value(k);
            b.values().append_value(v);
        }
        b.append(true)?;
    }
    Ok(Arc::new(b.finish()))
}

/// A UTC nanosecond timestamp column of `values` (past `i64`: null).
pub(crate) fn ts_array(values: impl IntoIterator<Item = Option<u64>>) -> ArrayRef {
    let a: TimestampNanosecondArray = values
        .into_iter()
        .map(|v| v.and_then(|v| i64::try_from(v).ok()))
        .collect();
    Arc::new(a.with_timezone("UTC"))
}

/// A string column of `values`.
pub(crate) fn str_array<'a>(values: impl IntoIterator<Item = Option<&'a str>>) -> ArrayRef {
    let mut b = StringBuilder::new();
    values.into_iter().for_each(|v| b.append_option(v));
    Arc::new(b.finish())
}

/// A `UInt64` column of `values`.
pub(crate) fn u64_array(values: impl IntoIterator<Item = Option<u64>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<UInt64Array>())
}
