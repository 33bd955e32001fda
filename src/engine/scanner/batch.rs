//! Building `messages` record batches from delivered messages.
//!
//! Only the columns a query needs are built; the others are never touched, so a
//! scan without `data` copies no payload bytes. Batches are bounded in rows and
//! in payload bytes, which keeps memory flat whatever the file size.
//!
//! The `data` column's payload buffer is recycled: once the consumer has
//! dropped a batch, its buffer (still mapped in, its pages already faulted)
//! takes the next batch's payloads, instead of a fresh multi-megabyte
//! allocation whose every page the kernel must fault in and zero again.

use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryArray, Float64Builder, Int64Builder, MapBuilder, StringBuilder,
    TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use datafusion::arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::{DataFusionError, Result};

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
    /// The payloads.
    Data(DataColumn),
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
            col::DATA => Self::Data(DataColumn::new(data_bytes)),
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

    fn append(&mut self, m: &Message<'_>, file: &str) -> Result<()> {
        match self {
            Self::Topic(b) => b.append_value(&m.channel.topic),
            Self::LogTime(b) => b.append_value(ts(m.log_time)),
            Self::PublishTime(b) => b.append_option(m.publish_time.map(ts)),
            Self::Sequence(b) => b.append_option(m.sequence),
            Self::MessageType(b) => b.append_option(m.channel.message_type.as_deref()),
            Self::MessageEncoding(b) => b.append_value(&m.channel.message_encoding),
            Self::Data(b) => b.append(m.data)?,
            Self::File(b) => b.append_value(file),
            Self::Extra(pos, b) => b.append(
                pos.and_then(|i| m.extra.get(i).copied())
                    .unwrap_or(ExtraValue::Null),
            ),
        }
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Topic(b) | Self::MessageType(b) | Self::MessageEncoding(b) | Self::File(b) => {
                Arc::new(b.finish())
            }
            Self::LogTime(b) | Self::PublishTime(b) => Arc::new(b.finish().with_timezone("UTC")),
            Self::Sequence(b) => Arc::new(b.finish()),
            Self::Data(b) => Arc::new(b.finish()),
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

    /// Appends one message. Fails (nothing appended to the failing column)
    /// when its payload does not fit a `Binary` column's 2 GiB per batch.
    pub fn append(&mut self, m: &Message<'_>) -> Result<()> {
        for c in &mut self.columns {
            c.append(m, &self.file)?;
        }
        self.rows += 1;
        self.bytes += m.data.len();
        Ok(())
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

/// Value buffers of sent batches a [`DataColumn`] watches for reuse: the scan's
/// channel holds two batches, the consumer works on one, the builder fills one.
const RECYCLED_BUFFERS: usize = 4;

/// The `data` column of a batch being built: payloads appended to one values
/// buffer, which is taken back for a later batch once the consumer drops the
/// batch it was sent in.
struct DataColumn {
    /// The payloads appended so far (empty with no capacity until the first
    /// append after a [`DataColumn::finish`], which picks a buffer then).
    values: Vec<u8>,
    /// End offsets of the payloads in `values`, after a leading 0.
    offsets: Vec<i32>,
    /// The capacity a new values buffer gets: the batch's byte bound plus
    /// room for the message that crosses it, so it never regrows.
    capacity: usize,
    /// The values buffers of the last batches sent, oldest first.
    sent: VecDeque<Buffer>,
}

impl DataColumn {
    fn new(capacity: usize) -> Self {
        Self {
            values: Vec::new(),
            offsets: vec![0],
            capacity,
            sent: VecDeque::with_capacity(RECYCLED_BUFFERS),
        }
    }

    /// A values buffer for a new batch: the buffer of a sent batch that no
    /// one holds any more (its pages are mapped in already), else a new one.
    fn take_buffer(&mut self) -> Vec<u8> {
        for _ in 0..self.sent.len() {
            let Some(buffer) = self.sent.pop_front() else {
                break;
            };
            match buffer.into_vec::<u8>() {
                Ok(mut v) => {
                    v.clear();
                    v.reserve(self.capacity);
                    return v;
                }
                // Still part of a batch somewhere: look again next time.
                Err(buffer) => self.sent.push_back(buffer),
            }
        }
        Vec::with_capacity(self.capacity)
    }

    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.values.capacity() == 0 {
            self.values = self.take_buffer();
        }
        let end = self.values.len() + data.len();
        let end = i32::try_from(end).map_err(|_| {
            DataFusionError::Execution(format!(
                "a message payload of {} bytes does not fit the data column's batch \
                 (Binary: at most 2 GiB of payloads per batch, {} bytes in it already)",
                data.len(),
                self.values.len()
            ))
        })?;
        self.values.extend_from_slice(data);
        self.offsets.push(end);
        Ok(())
    }

    fn finish(&mut self) -> BinaryArray {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let values = Buffer::from_vec(std::mem::take(&mut self.values));
        if self.sent.len() == RECYCLED_BUFFERS {
            self.sent.pop_front();
        }
        self.sent.push_back(values.clone());
        // Offsets start at 0 and grow by each payload's length: valid by construction.
        BinaryArray::new(OffsetBuffer::new(ScalarBuffer::from(offsets)), values, None)
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

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::BinaryType;

    fn builder() -> BatchBuilder {
        let schema = super::super::schema::messages_schema();
        let idx = [
            schema.index_of(col::LOG_TIME).unwrap(),
            schema.index_of(col::DATA).unwrap(),
        ];
        BatchBuilder::new(
            Arc::new(schema.project(&idx).unwrap()),
            "f".into(),
            &[],
            1000,
            1 << 20,
        )
        .unwrap()
    }

    fn append(b: &mut BatchBuilder, channel: &crate::model::Channel, t: u64, data: &[u8]) {
        b.append(&Message {
            channel,
            log_time: t,
            publish_time: None,
            sequence: None,
            data,
            extra: &[],
        })
        .unwrap();
    }

    fn payloads(batch: &RecordBatch) -> Vec<Vec<u8>> {
        let a = batch.column(1).as_bytes::<BinaryType>();
        (0..a.len()).map(|i| a.value(i).to_vec()).collect()
    }

    fn values_ptr(batch: &RecordBatch) -> *const u8 {
        batch.column(1).as_bytes::<BinaryType>().values().as_ptr()
    }

    #[test]
    fn a_dropped_batch_lends_its_payload_buffer_to_the_next_and_a_held_one_does_not() {
        let channel = crate::model::Channel {
            id: 1,
            topic: "/t".into(),
            message_type: None,
            message_encoding: "x".into(),
            schema_encoding: None,
            schema: None,
            metadata: Default::default(),
        };
        let mut b = builder();
        append(&mut b, &channel, 1, b"abc");
        append(&mut b, &channel, 2, b"");
        append(&mut b, &channel, 3, b"defgh");
        let first = b.finish().unwrap();
        assert_eq!(payloads(&first), [&b"abc"[..], b"", b"defgh"]);
        let first_ptr = values_ptr(&first);
        // Still held: the next batch gets another buffer, and the first keeps its bytes.
        append(&mut b, &channel, 4, b"XYZ");
        let second = b.finish().unwrap();
        assert_ne!(values_ptr(&second), first_ptr);
        assert_eq!(payloads(&first), [&b"abc"[..], b"", b"defgh"]);
        assert_eq!(payloads(&second), [&b"XYZ"[..]]);
        // Dropped (a slice of it too): the third batch reuses the first one's buffer.
        let slice = first.slice(1, 2);
        drop(first);
        append(&mut b, &channel, 5, b"no");
        let third = b.finish().unwrap();
        assert_ne!(values_ptr(&third), first_ptr, "a slice still holds it");
        drop((slice, third));
        append(&mut b, &channel, 6, b"again");
        append(&mut b, &channel, 7, b"!");
        let fourth = b.finish().unwrap();
        assert_eq!(values_ptr(&fourth), first_ptr);
        assert_eq!(payloads(&fourth), [&b"again"[..], b"!"]);
        let times = fourth
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::TimestampNanosecondType>();
        assert_eq!(times.values(), &[6, 7]);
        assert_eq!(payloads(&second), [&b"XYZ"[..]]);
    }
}
