//! Building `messages` record batches from delivered messages.
//!
//! Only the columns a query needs are built; the others are never touched, so a
//! scan without `data` copies no payload bytes. Batches are bounded in rows and
//! in payload bytes, which keeps memory flat whatever the file size.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, Float64Builder, Int64Builder, MapBuilder, StringBuilder,
    TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::Result;

use super::schema::col;
use crate::model::{ExtraColumn, ExtraKind, ExtraValue, Message};

/// Appends messages to Arrow builders for a fixed set of `messages` columns.
pub struct BatchBuilder {
    schema: SchemaRef,
    columns: Vec<ColumnBuilder>,
    file: Arc<str>,
    rows: usize,
    bytes: usize,
    max_rows: usize,
    max_bytes: usize,
}

// One builder per column and batch: size differences do not matter.
#[allow(clippy::large_enum_variant)]
enum ColumnBuilder {
    Topic(StringBuilder),
    LogTime(TimestampNanosecondBuilder),
    PublishTime(TimestampNanosecondBuilder),
    Sequence(UInt32Builder),
    MessageType(StringBuilder),
    MessageEncoding(StringBuilder),
    /// The payload builder and the capacity to give each new batch's buffer.
    Data(BinaryBuilder, usize),
    File(StringBuilder),
    /// A format's extra column: its position in the file format's
    /// [`ExtraColumn`] list (`None`: this file's format lacks it, always null).
    Extra(Option<usize>, ExtraBuilder),
}

/// Builder of one extra column.
// One builder per column and batch: size differences do not matter.
#[allow(clippy::large_enum_variant)]
enum ExtraBuilder {
    UInt64(UInt64Builder),
    Int64(Int64Builder),
    Float64(Float64Builder),
    Int64Map(MapBuilder<StringBuilder, Int64Builder>),
}

impl ExtraBuilder {
    fn new(kind: ExtraKind) -> Self {
        match kind {
            ExtraKind::UInt64 => Self::UInt64(UInt64Builder::new()),
            ExtraKind::Int64 => Self::Int64(Int64Builder::new()),
            ExtraKind::Float64 => Self::Float64(Float64Builder::new()),
            ExtraKind::Int64Map => Self::Int64Map(MapBuilder::new(
                None,
                StringBuilder::new(),
                Int64Builder::new(),
            )),
        }
    }

    fn append(&mut self, v: ExtraValue<'_>) {
        match (self, v) {
            (Self::UInt64(b), ExtraValue::UInt64(x)) => b.append_value(x),
            (Self::UInt64(b), ExtraValue::Int64(x)) => b.append_option(u64::try_from(x).ok()),
            (Self::Int64(b), ExtraValue::Int64(x)) => b.append_value(x),
            (Self::Int64(b), ExtraValue::UInt64(x)) => b.append_option(i64::try_from(x).ok()),
            (Self::Float64(b), ExtraValue::Float64(x)) => b.append_value(x),
            (Self::Int64Map(b), ExtraValue::Int64Map { keys, values }) => {
                for (k, v) in keys.iter().zip(values) {
                    b.keys().append_value(k);
                    b.values().append_value(*v);
                }
                // Appending a valid map only fails on mismatched key/value counts: never here.
                let _ = b.append(true);
            }
            (Self::UInt64(b), _) => b.append_null(),
            (Self::Int64(b), _) => b.append_null(),
            (Self::Float64(b), _) => b.append_null(),
            (Self::Int64Map(b), _) => {
                let _ = b.append(false);
            }
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::UInt64(b) => Arc::new(b.finish()),
            Self::Int64(b) => Arc::new(b.finish()),
            Self::Float64(b) => Arc::new(b.finish()),
            Self::Int64Map(b) => Arc::new(b.finish()),
        }
    }
}

fn ts(v: u64) -> i64 {
    // Nanoseconds past year 2262 do not fit Arrow's i64 timestamps; saturate.
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl ColumnBuilder {
    /// A builder for column `name`; `data_bytes` pre-sizes the payload buffer so
    /// that it never regrows (regrowth would copy every payload byte once more).
    fn new(name: &str, data_bytes: usize, extras: &[ExtraColumn]) -> Option<Self> {
        Some(match name {
            col::TOPIC => Self::Topic(StringBuilder::new()),
            col::LOG_TIME => Self::LogTime(TimestampNanosecondBuilder::new()),
            col::PUBLISH_TIME => Self::PublishTime(TimestampNanosecondBuilder::new()),
            col::SEQUENCE => Self::Sequence(UInt32Builder::new()),
            col::MESSAGE_TYPE => Self::MessageType(StringBuilder::new()),
            col::MESSAGE_ENCODING => Self::MessageEncoding(StringBuilder::new()),
            col::DATA => Self::Data(BinaryBuilder::with_capacity(1024, data_bytes), data_bytes),
            col::FILE => Self::File(StringBuilder::new()),
            other => {
                let pos = extras.iter().position(|c| c.name == other);
                let kind = match pos {
                    Some(i) => extras[i].kind,
                    None => extra_kind_of_any_format(other)?,
                };
                Self::Extra(pos, ExtraBuilder::new(kind))
            }
        })
    }

    fn append(&mut self, m: &Message<'_>, file: &str) {
        match self {
            Self::Topic(b) => b.append_value(&m.channel.topic),
            Self::LogTime(b) => b.append_value(ts(m.log_time)),
            Self::PublishTime(b) => b.append_option(m.publish_time.map(ts)),
            Self::Sequence(b) => b.append_option(m.sequence),
            Self::MessageType(b) => b.append_option(m.channel.message_type.as_deref()),
            Self::MessageEncoding(b) => b.append_value(&m.channel.message_encoding),
            Self::Data(b, _) => b.append_value(m.data),
            Self::File(b) => b.append_value(file),
            Self::Extra(pos, b) => b.append(
                pos.and_then(|i| m.extra.get(i).copied())
                    .unwrap_or(ExtraValue::Null),
            ),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Topic(b) | Self::MessageType(b) | Self::MessageEncoding(b) | Self::File(b) => {
                Arc::new(b.finish())
            }
            Self::LogTime(b) | Self::PublishTime(b) => Arc::new(b.finish().with_timezone("UTC")),
            Self::Sequence(b) => Arc::new(b.finish()),
            Self::Data(b, cap) => {
                let array = Arc::new(b.finish());
                *b = BinaryBuilder::with_capacity(1024, *cap);
                array
            }
            Self::Extra(_, b) => b.finish(),
        }
    }
}

impl BatchBuilder {
    /// A builder for the columns of `schema` (a projection of the messages schema),
    /// naming `file` in the `file` column; `extras` are the extra columns of the
    /// file's format, which [`Message::extra`] follows.
    pub fn new(
        schema: SchemaRef,
        file: Arc<str>,
        extras: &[ExtraColumn],
        max_rows: usize,
        max_bytes: usize,
    ) -> Result<Self> {
        let columns = schema
            .fields()
            .iter()
            .map(|f| {
                // A batch ends at the first message that reaches `max_bytes`: leave room for it.
                ColumnBuilder::new(f.name(), max_bytes.saturating_add(256 << 10), extras)
                    .ok_or_else(|| {
                        datafusion::error::DataFusionError::Internal(format!(
                            "unknown messages column {}",
                            f.name()
                        ))
                    })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            schema,
            columns,
            file,
            rows: 0,
            bytes: 0,
            max_rows: max_rows.max(1),
            max_bytes,
        })
    }

    /// Appends one message.
    pub fn append(&mut self, m: &Message<'_>) {
        for c in &mut self.columns {
            c.append(m, &self.file);
        }
        self.rows += 1;
        self.bytes += m.data.len();
    }

    /// Whether the batch reached its row or byte bound.
    pub fn is_full(&self) -> bool {
        self.rows >= self.max_rows || self.bytes >= self.max_bytes
    }

    /// Rows buffered so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Takes the buffered rows as a batch (also for zero-column schemas, e.g. `count(*)`).
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let arrays = self.columns.iter_mut().map(ColumnBuilder::finish).collect();
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        self.rows = 0;
        self.bytes = 0;
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            arrays,
            &options,
        )?)
    }
}

/// The kind of extra column `name` in whichever format defines it.
fn extra_kind_of_any_format(name: &str) -> Option<ExtraKind> {
    crate::formats::all()
        .iter()
        .flat_map(|f| f.extra_columns().iter())
        .find(|c| c.name == name)
        .map(|c| c.kind)
}
