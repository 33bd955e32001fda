//! Building `messages` record batches from delivered messages.
//!
//! Only the columns a query needs are built; the others are never touched, so a
//! scan without `data` copies no payload bytes. Batches are bounded in rows and
//! in payload bytes, which keeps memory flat whatever the file size.
//!
//! The `data` column is a `BinaryView` column that references each payload
//! where the reader left it, in the chunk buffer it was read or decompressed
//! into ([`logsql_readers::formats::chunk_io::ChunkBuf`]): no payload byte is copied,
//! unless the batch would hold a chunk buffer for a small share of its bytes
//! (then those payloads are copied out). The copy buffer is recycled: once
//! the consumer has dropped a batch, its buffer (still mapped in, its pages
//! already faulted) takes a later batch's copies, instead of a fresh
//! allocation whose every page the kernel must fault in and zero again.

use std::sync::Arc;

use datafusion::arrow::array::ByteView;
use datafusion::arrow::array::builder::make_view;
use datafusion::arrow::array::{
    ArrayRef, BinaryViewArray, Float64Builder, Int64Builder, MapBuilder, StringBuilder,
    TimestampNanosecondBuilder, UInt32Builder, UInt64Builder,
};
use datafusion::arrow::buffer::{Buffer, ScalarBuffer};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::{DataFusionError, Result};

use super::schema::col;
use logsql_readers::byte_buf::ByteBuf;
use logsql_readers::model::{ExtraColumn, ExtraKind, ExtraValue, Message};
use logsql_readers::recycle::Recycler;

/// Appends messages to Arrow builders for a fixed set of `messages` columns.
pub(crate) struct BatchBuilder {
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
            Self::Data(b) => b.append(m.data, m.data_buffer)?,
            Self::File(b) => b.append_value(file),
            Self::Extra(pos, b) => b.append(
                pos.and_then(|i| m.extra.get(i).copied())
                    .unwrap_or(ExtraValue::Null),
            ),
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(match self {
            Self::Topic(b) | Self::MessageType(b) | Self::MessageEncoding(b) | Self::File(b) => {
                Arc::new(b.finish())
            }
            Self::LogTime(b) | Self::PublishTime(b) => Arc::new(b.finish().with_timezone("UTC")),
            Self::Sequence(b) => Arc::new(b.finish()),
            Self::Data(b) => Arc::new(b.finish()?),
            Self::Extra(_, b) => b.finish(),
        })
    }
}

impl BatchBuilder {
    /// A builder for the columns of `schema` (a projection of the messages schema),
    /// naming `file` in the `file` column; `extras` are the extra columns of the
    /// file's format, which [`Message::extra`] follows.
    pub(crate) fn new(
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
    /// when a copied payload does not fit the `data` column's 4 GiB per batch.
    pub(crate) fn append(&mut self, m: &Message<'_>) -> Result<()> {
        for c in &mut self.columns {
            c.append(m, &self.file)?;
        }
        self.rows += 1;
        self.bytes += m.data.len();
        Ok(())
    }

    /// Whether the batch holds `1 / parts` of its row or byte bound (`parts`
    /// 1: it reached the bound).
    pub(crate) fn holds_share(&self, parts: usize) -> bool {
        self.rows >= self.max_rows.div_ceil(parts) || self.bytes >= self.max_bytes.div_ceil(parts)
    }

    /// Whether nothing is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The file named in the `file` column.
    pub(crate) fn file(&self) -> &str {
        &self.file
    }

    /// Takes the buffered rows as a batch (also for zero-column schemas, e.g. `count(*)`).
    pub(crate) fn finish(&mut self) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .iter_mut()
            .map(ColumnBuilder::finish)
            .collect::<Result<_>>()?;
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

/// Copy buffers of sent batches a [`DataColumn`] watches for reuse: the scan's
/// channel holds two batches, the consumer works on one, the builder fills one.
const RECYCLED_BUFFERS: usize = 4;

/// A batch keeps referencing a shared chunk buffer only when its payloads
/// cover at least this share (1/N) of it; sparser payloads are copied out at
/// [`DataColumn::finish`], so a selective query never holds whole chunks for
/// a few small messages.
const DENSE_SHARE: usize = 4;

/// The `data` column of a batch being built, a `BinaryView` column.
///
/// A payload that lies in a shared chunk buffer ([`Message::data_buffer`]) is
/// referenced where it is: the batch holds the buffer, no byte is copied.
/// Other payloads (and those of buffers the batch uses too little) are copied
/// into one buffer per batch, which is taken back for a later batch once the
/// consumer drops the batch it was sent in. Payloads of up to 12 bytes live
/// in the views themselves.
struct DataColumn {
    /// One view per payload.
    views: Vec<u128>,
    /// The buffers the views point into, in block order.
    blocks: Vec<Block>,
    /// The payloads copied so far (empty with no capacity until the first
    /// copy after a [`DataColumn::finish`], which picks a buffer then).
    copied: ByteBuf,
    /// The block index of `copied` in this batch, once something was copied.
    copied_block: Option<u32>,
    /// The block index of the shared buffer referenced last (payloads come
    /// chunk by chunk, so the next one most likely lies in it too).
    last_shared: Option<usize>,
    /// That buffer's address, length and referenced bytes when the last
    /// batch was finished: a chunk that spans batches is judged by all of
    /// its payloads (an address only, so the reader can take the buffer
    /// back once the batches are dropped).
    carry: Option<(usize, usize, usize)>,
    /// Bytes of the shared buffers the batch references. Past twice the
    /// copy buffer's capacity, sparse ones are copied out before another is
    /// taken, so a batch being built never holds many chunks.
    held: usize,
    /// The capacity a new copy buffer gets: the batch's byte bound plus
    /// room for the message that crosses it, so it never regrows.
    capacity: usize,
    /// The copy buffers of the last batches sent.
    sent: Recycler,
}

/// A buffer the views of a batch point into.
struct Block {
    /// The buffer (an empty placeholder for the copy buffer until `finish`).
    buffer: Buffer,
    /// Payload bytes referenced in it: this batch's, plus the batches'
    /// before for the buffer a batch ended in (see `DataColumn::carry`).
    used: usize,
}

/// Largest payload that lives inside its view.
const INLINE_LEN: usize = 12;

impl DataColumn {
    fn new(capacity: usize) -> Self {
        Self {
            views: Vec::new(),
            blocks: Vec::new(),
            copied: ByteBuf::default(),
            copied_block: None,
            last_shared: None,
            carry: None,
            held: 0,
            capacity,
            sent: Recycler::new(RECYCLED_BUFFERS, usize::MAX),
        }
    }

    /// A copy buffer for a new batch: the buffer of a sent batch that no
    /// one holds any more (its pages are mapped in already), else a new one.
    fn take_buffer(&mut self) -> ByteBuf {
        let mut v = self.sent.take_back().unwrap_or_default();
        v.room_for(self.capacity);
        v
    }

    fn append(&mut self, data: &[u8], buffer: Option<&Buffer>) -> Result<()> {
        if data.len() <= INLINE_LEN {
            self.views.push(make_view(data, 0, 0));
            return Ok(());
        }
        if let Some((buffer, offset)) = buffer.and_then(|b| Some((b, view_offset(b, data)?))) {
            let block = match self.last_shared {
                Some(i) if self.blocks[i].buffer.ptr_eq(buffer) => i,
                _ => {
                    // A new buffer: the reader is done with the one before.
                    if self.held + buffer.len() > self.capacity.saturating_mul(2) {
                        // Sparse payloads (one topic among others) would make the
                        // batch hold many chunks: copy them out now.
                        self.compact(None)?;
                    }
                    // Payloads of this buffer the batch before referenced count too.
                    let used = match self.carry.take() {
                        Some((ptr, len, used))
                            if ptr == buffer.as_ptr() as usize && len == buffer.len() =>
                        {
                            used
                        }
                        _ => 0,
                    };
                    self.held += buffer.len();
                    self.blocks.push(Block {
                        buffer: buffer.clone(),
                        used,
                    });
                    self.last_shared = Some(self.blocks.len() - 1);
                    self.blocks.len() - 1
                }
            };
            self.blocks[block].used += data.len();
            self.views.push(make_view(data, block as u32, offset));
            return Ok(());
        }
        let view = self.copy(data)?;
        self.views.push(view);
        Ok(())
    }

    /// Copies `data` into the batch's copy buffer and returns its view.
    fn copy(&mut self, data: &[u8]) -> Result<u128> {
        if self.copied.capacity() == 0 {
            self.copied = self.take_buffer();
        }
        if u32::try_from(self.copied.len() + data.len()).is_err() {
            return Err(DataFusionError::Execution(format!(
                "a message payload of {} bytes does not fit the data column's batch \
                 (at most 4 GiB of copied payloads per batch, {} bytes in it already)",
                data.len(),
                self.copied.len()
            )));
        }
        // Below 4 GiB: checked above.
        let offset = self.copied.len() as u32;
        let block = match self.copied_block {
            Some(b) => b,
            None => {
                let b = self.blocks.len() as u32;
                self.blocks.push(Block {
                    buffer: Buffer::from_vec(Vec::<u8>::new()),
                    used: 0,
                });
                self.copied_block = Some(b);
                b
            }
        };
        self.copied.extend_from_slice(data);
        Ok(make_view(data, block, offset))
    }

    fn finish(&mut self) -> Result<BinaryViewArray> {
        // The buffer referenced last may still be being read: it is kept.
        self.compact(self.last_shared)?;
        self.carry = self.last_shared.map(|i| {
            let b = &self.blocks[i];
            (b.buffer.as_ptr() as usize, b.buffer.len(), b.used)
        });
        self.last_shared = None;
        self.held = 0;
        if let Some(b) = self.copied_block.take() {
            let mut copied = std::mem::take(&mut self.copied);
            self.blocks[b as usize].buffer = copied.share();
            self.sent.lend(copied);
        }
        let views = ScalarBuffer::from(std::mem::take(&mut self.views));
        let buffers: Vec<Buffer> = self.blocks.drain(..).map(|b| b.buffer).collect();
        Ok(BinaryViewArray::try_new(views, buffers, None)?)
    }

    /// Copies the payloads of the shared buffers this batch uses too little
    /// (see [`DENSE_SHARE`]) into the copy buffer and drops those buffers;
    /// block `keep` (a buffer still being read) stays whatever its share.
    fn compact(&mut self, keep: Option<usize>) -> Result<()> {
        let copy_block = self.copied_block.map(|b| b as usize);
        let sparse = |i: usize, b: &Block| {
            Some(i) != copy_block
                && Some(i) != keep
                && b.used.saturating_mul(DENSE_SHARE) < b.buffer.len()
        };
        if !self.blocks.iter().enumerate().any(|(i, b)| sparse(i, b)) {
            return Ok(());
        }
        let old = std::mem::take(&mut self.blocks);
        // The new index of every kept block; `None` for those copied out.
        let mut remap = Vec::with_capacity(old.len());
        for (i, b) in old.iter().enumerate() {
            if !sparse(i, b) {
                remap.push(Some(self.blocks.len() as u32));
                self.blocks.push(Block {
                    buffer: b.buffer.clone(),
                    used: b.used,
                });
            } else {
                remap.push(None);
            }
        }
        self.copied_block = copy_block.and_then(|b| remap[b]);
        let mut views = std::mem::take(&mut self.views);
        for v in &mut views {
            let view = ByteView::from(*v);
            if view.length as usize <= INLINE_LEN {
                continue;
            }
            let block = view.buffer_index as usize;
            *v = match remap[block] {
                Some(new) => view.with_buffer_index(new).as_u128(),
                None => {
                    let start = view.offset as usize;
                    let bytes = &old[block].buffer[start..start + view.length as usize];
                    self.copy(bytes)?
                }
            };
        }
        self.views = views;
        self.last_shared = self.last_shared.and_then(|i| remap[i]).map(|i| i as usize);
        self.held = self.shared_bytes();
        Ok(())
    }

    /// Bytes of the shared buffers among the blocks.
    fn shared_bytes(&self) -> usize {
        let copy_block = self.copied_block.map(|b| b as usize);
        self.blocks
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != copy_block)
            .map(|(_, b)| b.buffer.len())
            .sum()
    }
}

/// The offset of `data` inside `buffer`, when it lies wholly inside it and
/// the offset fits a view.
fn view_offset(buffer: &Buffer, data: &[u8]) -> Option<u32> {
    u32::try_from(logsql_readers::formats::chunk_io::offset_in(buffer, data)?).ok()
}

/// The kind of extra column `name` in whichever format defines it.
fn extra_kind_of_any_format(name: &str) -> Option<ExtraKind> {
    logsql_readers::formats::all()
        .iter()
        .flat_map(|f| f.extra_columns().iter())
        .find(|c| c.name == name)
        .map(|c| c.kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray};

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

    fn channel() -> logsql_readers::model::Channel {
        logsql_readers::model::Channel {
            id: 1,
            topic: "/t".into(),
            message_type: None,
            message_encoding: "x".into(),
            schema_encoding: None,
            schema: None,
            metadata: Default::default(),
        }
    }

    fn append(
        b: &mut BatchBuilder,
        channel: &logsql_readers::model::Channel,
        t: u64,
        data: &[u8],
        data_buffer: Option<&Buffer>,
    ) {
        b.append(&Message {
            channel,
            log_time: t,
            publish_time: None,
            sequence: None,
            data,
            data_buffer,
            extra: &[],
        })
        .unwrap();
    }

    fn payloads(batch: &RecordBatch) -> Vec<Vec<u8>> {
        let a = batch.column(1).as_binary_view();
        (0..a.len()).map(|i| a.value(i).to_vec()).collect()
    }

    /// The start of each buffer the batch's `data` column points into.
    fn buffer_ptrs(batch: &RecordBatch) -> Vec<*const u8> {
        let a = batch.column(1).as_binary_view();
        a.data_buffers().iter().map(|b| b.as_ptr()).collect()
    }

    const A: &[u8] = b"payload number one";
    const B: &[u8] = b"payload number two, longer";
    const C: &[u8] = b"third payload here";

    #[test]
    fn copied_payloads_recycle_their_buffer_once_the_batch_is_dropped() {
        let channel = channel();
        let mut b = builder();
        append(&mut b, &channel, 1, A, None);
        append(&mut b, &channel, 2, b"", None);
        append(&mut b, &channel, 3, b"tiny", None);
        append(&mut b, &channel, 4, B, None);
        let first = b.finish().unwrap();
        assert_eq!(payloads(&first), [A, b"", b"tiny", B]);
        let first_ptr = buffer_ptrs(&first);
        assert_eq!(first_ptr.len(), 1, "one copy buffer");
        // Still held: the next batch gets another buffer, and the first keeps its bytes.
        append(&mut b, &channel, 5, C, None);
        let second = b.finish().unwrap();
        assert_ne!(buffer_ptrs(&second), first_ptr);
        assert_eq!(payloads(&first), [A, b"", b"tiny", B]);
        // Dropped (a slice of it too): a later batch reuses the first one's buffer.
        let slice = first.slice(1, 2);
        drop(first);
        append(&mut b, &channel, 6, A, None);
        let third = b.finish().unwrap();
        assert_ne!(buffer_ptrs(&third), first_ptr, "a slice still holds it");
        drop((slice, third));
        append(&mut b, &channel, 7, B, None);
        let fourth = b.finish().unwrap();
        assert_eq!(buffer_ptrs(&fourth), first_ptr);
        assert_eq!(payloads(&fourth), [B]);
        let times = fourth
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::TimestampNanosecondType>();
        assert_eq!(times.values(), &[7]);
        assert_eq!(payloads(&second), [C]);
    }

    #[test]
    fn payloads_in_a_shared_chunk_buffer_are_referenced_not_copied() {
        let channel = channel();
        let chunk = Buffer::from_vec([A, B, C].concat());
        let (a, rest) = chunk.as_slice().split_at(A.len());
        let (bb, c) = rest.split_at(B.len());
        let mut b = builder();
        append(&mut b, &channel, 1, a, Some(&chunk));
        append(&mut b, &channel, 2, bb, Some(&chunk));
        // A payload outside the buffer it names is copied, never trusted.
        append(&mut b, &channel, 3, C, Some(&chunk));
        append(&mut b, &channel, 4, c, Some(&chunk));
        let batch = b.finish().unwrap();
        assert_eq!(payloads(&batch), [A, B, C, C]);
        let ptrs = buffer_ptrs(&batch);
        assert_eq!(ptrs.len(), 2, "the chunk and one copy buffer");
        assert!(ptrs.contains(&chunk.as_ptr()));
        let views = batch.column(1).as_binary_view();
        assert_eq!(views.views().len(), 4);
        // The batch holds the chunk: it outlives the reader's handle.
        drop(chunk);
        assert_eq!(payloads(&batch), [A, B, C, C]);
    }

    #[test]
    fn a_chunk_buffer_the_batch_uses_too_little_is_copied_out() {
        let channel = channel();
        let big = Buffer::from_vec([A.to_vec(), vec![0u8; 4096]].concat());
        let dense = Buffer::from_vec([B, C].concat());
        let mut b = builder();
        append(&mut b, &channel, 1, &big.as_slice()[..A.len()], Some(&big));
        append(
            &mut b,
            &channel,
            2,
            &dense.as_slice()[..B.len()],
            Some(&dense),
        );
        append(
            &mut b,
            &channel,
            3,
            &dense.as_slice()[B.len()..],
            Some(&dense),
        );
        append(&mut b, &channel, 4, C, None);
        let batch = b.finish().unwrap();
        assert_eq!(payloads(&batch), [A, B, C, C]);
        let ptrs = buffer_ptrs(&batch);
        assert!(ptrs.contains(&dense.as_ptr()), "dense: referenced");
        assert!(
            !ptrs.contains(&big.as_ptr()),
            "sparse: copied out and let go"
        );
        assert_eq!(ptrs.len(), 2);
        assert_eq!(big.strong_count(), 1);
    }

    #[test]
    fn a_batch_being_built_lets_go_of_sparse_chunks_before_holding_many() {
        let channel = channel();
        let mut b = builder();
        // One small payload per 64 KiB chunk: 200 chunks are 12.5 MiB, far past
        // the 2.5 MiB a batch of this builder may hold.
        let chunks: Vec<Buffer> = (0..200u8)
            .map(|i| Buffer::from_vec([vec![i; 20], vec![0; 64 << 10]].concat()))
            .collect();
        for (t, c) in chunks.iter().enumerate() {
            append(&mut b, &channel, t as u64, &c.as_slice()[..20], Some(c));
        }
        let held = chunks.iter().filter(|c| c.strong_count() > 1).count();
        assert!(held <= 40, "{held} chunks held while building");
        let batch = b.finish().unwrap();
        let want: Vec<Vec<u8>> = (0..200u8).map(|i| vec![i; 20]).collect();
        assert_eq!(payloads(&batch), want);
        // The last chunk may still be being read: kept; the rest were copied out.
        assert_eq!(buffer_ptrs(&batch).len(), 2);
        assert_eq!(chunks[199].strong_count(), 2);
        assert!(chunks[..199].iter().all(|c| c.strong_count() == 1));
    }

    #[test]
    fn a_chunk_spanning_batches_is_judged_by_all_its_payloads() {
        let channel = channel();
        let mut b = builder();
        // Chunk `a`: ten 10 KiB payloads; each batch takes two of them (20%).
        let a = Buffer::from_vec(
            (0..10u8)
                .flat_map(|i| vec![i; 10 << 10])
                .collect::<Vec<_>>(),
        );
        let part = |i: usize| &a.as_slice()[i * (10 << 10)..(i + 1) * (10 << 10)];
        let sparse = Buffer::from_vec([A.to_vec(), vec![0; 64 << 10]].concat());
        let next = Buffer::from_vec(B.to_vec());
        append(
            &mut b,
            &channel,
            0,
            &sparse.as_slice()[..A.len()],
            Some(&sparse),
        );
        append(&mut b, &channel, 1, part(0), Some(&a));
        append(&mut b, &channel, 2, part(1), Some(&a));
        // `sparse` is copied out; `a` is still being read: kept.
        let first = b.finish().unwrap();
        assert_eq!(buffer_ptrs(&first).len(), 2);
        assert!(buffer_ptrs(&first).contains(&a.as_ptr()));
        append(&mut b, &channel, 3, part(2), Some(&a));
        append(&mut b, &channel, 4, part(3), Some(&a));
        append(&mut b, &channel, 5, next.as_slice(), Some(&next));
        // `a` is done: 20% in this batch, 40% in all, so it stays referenced.
        let second = b.finish().unwrap();
        assert!(buffer_ptrs(&second).contains(&a.as_ptr()));
        assert_eq!(payloads(&second), [part(2), part(3), B]);
        assert_eq!(payloads(&first), [A, part(0), part(1)]);
    }
}
