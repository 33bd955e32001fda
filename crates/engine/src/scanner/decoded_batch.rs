//! Building `read_topic` record batches: each message decoded into typed
//! columns by its channel's decoder, aligned to the table's merged type.
//!
//! Rows are grouped by channel (each channel's schema has its own column
//! builder); a batch is the groups' rows aligned to the merged type and
//! concatenated. A message that fails to decode fails the scan with an error
//! naming file, topic, time and schema, or, with `logsql.decode_errors =
//! 'null'`, becomes a null row carrying the error text and the raw payload.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BinaryBuilder, StringArray, StringBuilder, StructArray,
    TimestampNanosecondArray,
};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::{DataFusionError, Result};

use super::schema::col;
use super::target::{DecodedSpec, ERROR_COLUMN, RAW_COLUMN};
use logsql_decode::{ColumnBuilder, MessageDecoder, append_message, merge};
use logsql_readers::formats::FormatReader;
use logsql_readers::model::Message;

/// Rows of one channel (one decoder) buffered for the next batch.
struct Group {
    decoder: Arc<dyn MessageDecoder>,
    fields: ColumnBuilder,
    log_time: Vec<i64>,
    publish_time: Vec<Option<i64>>,
    errors: StringBuilder,
    raw: BinaryBuilder,
}

/// Where a column of the read schema comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    LogTime,
    PublishTime,
    File,
    Error,
    Raw,
    /// The message column at this position (top-level field, or flattened column).
    Message(usize),
}

/// Appends decoded messages of one file to typed columns.
pub(crate) struct DecodedBatchBuilder {
    spec: Arc<DecodedSpec>,
    read_schema: SchemaRef,
    sources: Vec<Source>,
    format: Arc<dyn FormatReader>,
    cache_key: String,
    file: Arc<str>,
    groups: Vec<Group>,
    by_channel: HashMap<u64, usize>,
    rows: usize,
    bytes: usize,
    max_rows: usize,
    max_bytes: usize,
}

impl DecodedBatchBuilder {
    /// A builder producing `read_schema` (a projection of the spec's schema)
    /// for the file `file` (cache key `cache_key`) of `format`.
    pub(crate) fn new(
        spec: Arc<DecodedSpec>,
        read_schema: SchemaRef,
        format: Arc<dyn FormatReader>,
        cache_key: String,
        file: Arc<str>,
        max_rows: usize,
        max_bytes: usize,
    ) -> Result<Self> {
        let message_columns =
            spec.schema.fields().len() - 3 - if spec.null_on_error { 2 } else { 0 };
        let sources = read_schema
            .fields()
            .iter()
            .map(|f| {
                let i = spec.schema.index_of(f.name())?;
                Ok(match f.name().as_str() {
                    col::LOG_TIME if i == 0 => Source::LogTime,
                    col::PUBLISH_TIME if i == 1 => Source::PublishTime,
                    col::FILE => Source::File,
                    ERROR_COLUMN if spec.null_on_error => Source::Error,
                    RAW_COLUMN if spec.null_on_error => Source::Raw,
                    _ if (2..2 + message_columns).contains(&i) => Source::Message(i - 2),
                    other => {
                        return Err(DataFusionError::Internal(format!(
                            "read_topic: no source for column {other}"
                        )));
                    }
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            spec,
            read_schema,
            sources,
            format,
            cache_key,
            file,
            groups: Vec::new(),
            by_channel: HashMap::new(),
            rows: 0,
            bytes: 0,
            max_rows: max_rows.max(1),
            max_bytes: max_bytes.max(1),
        })
    }

    /// Decodes one message into the buffered rows.
    pub(crate) fn append(&mut self, msg: &Message<'_>) -> Result<()> {
        let g = match self.by_channel.get(&msg.channel.id) {
            Some(&g) => g,
            None => {
                let decoder = self
                    .spec
                    .decoder_for(self.format.as_ref(), &self.cache_key, msg.channel)
                    .map_err(|e| {
                        DataFusionError::Execution(format!(
                            "{}: cannot decode topic {:?} (type {:?}): {e}",
                            self.file,
                            msg.channel.topic,
                            msg.channel.message_type.as_deref().unwrap_or("")
                        ))
                    })?;
                let fields = ColumnBuilder::new(decoder.data_type())
                    .map_err(|e| DataFusionError::Execution(e.to_string()))?;
                self.groups.push(Group {
                    decoder,
                    fields,
                    log_time: Vec::new(),
                    publish_time: Vec::new(),
                    errors: StringBuilder::new(),
                    raw: BinaryBuilder::new(),
                });
                self.by_channel
                    .insert(msg.channel.id, self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        let group = &mut self.groups[g];
        match append_message(group.decoder.as_ref(), msg.data, &mut group.fields) {
            Ok(()) => {
                if self.spec.null_on_error {
                    group.errors.append_null();
                    group.raw.append_null();
                }
            }
            Err(e) if self.spec.null_on_error => {
                group.fields.append_null();
                group.errors.append_value(e.to_string());
                group.raw.append_value(msg.data);
            }
            Err(e) => {
                return Err(DataFusionError::Execution(format!(
                    "{}: topic {:?}: the message logged at {} ns does not decode as {}: {e} \
                     (SET logsql.decode_errors = 'null' to get a null row with the raw bytes instead)",
                    self.file,
                    msg.channel.topic,
                    msg.log_time,
                    group.decoder.describe()
                )));
            }
        }
        group.log_time.push(msg.log_time as i64);
        group.publish_time.push(msg.publish_time.map(|t| t as i64));
        self.rows += 1;
        self.bytes += msg.data.len();
        Ok(())
    }

    /// The file the rows come from.
    pub(crate) fn file(&self) -> &str {
        &self.file
    }

    /// Whether no row is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Whether the buffered rows hold `1 / parts` of a batch bound (`parts`
    /// 1: they reached it).
    pub(crate) fn holds_share(&self, parts: usize) -> bool {
        self.rows >= self.max_rows.div_ceil(parts) || self.bytes >= self.max_bytes.div_ceil(parts)
    }

    /// The buffered rows as one batch of the read schema.
    pub(crate) fn finish(&mut self) -> Result<RecordBatch> {
        let mut batches = Vec::with_capacity(self.groups.len());
        for g in &mut self.groups {
            let n = g.log_time.len();
            if n == 0 {
                continue;
            }
            let exec = |e: logsql_decode::DecodeError| DataFusionError::Execution(e.to_string());
            let fields = g.fields.finish().map_err(exec)?;
            let fields = merge::align(&fields, &self.spec.message_type).map_err(exec)?;
            let fields = fields
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| DataFusionError::Internal("decoded rows are not a struct".into()))?;
            let message: Vec<ArrayRef> = if self.spec.flatten {
                merge::flatten(fields)
            } else {
                fields.columns().to_vec()
            };
            let log_time = Arc::new(
                TimestampNanosecondArray::from(std::mem::take(&mut g.log_time))
                    .with_timezone("UTC"),
            );
            let publish_time = Arc::new(
                TimestampNanosecondArray::from(std::mem::take(&mut g.publish_time))
                    .with_timezone("UTC"),
            );
            let errors: ArrayRef = Arc::new(g.errors.finish());
            let raw: ArrayRef = Arc::new(g.raw.finish());
            let columns = self
                .sources
                .iter()
                .map(|s| match s {
                    Source::LogTime => Arc::clone(&log_time) as ArrayRef,
                    Source::PublishTime => Arc::clone(&publish_time) as ArrayRef,
                    Source::File => Arc::new(StringArray::from(vec![self.file.as_ref(); n])),
                    Source::Error => Arc::clone(&errors),
                    Source::Raw => Arc::clone(&raw),
                    Source::Message(i) => Arc::clone(&message[*i]),
                })
                .collect();
            batches.push(RecordBatch::try_new_with_options(
                Arc::clone(&self.read_schema),
                columns,
                &RecordBatchOptions::new().with_row_count(Some(n)),
            )?);
        }
        self.rows = 0;
        self.bytes = 0;
        match batches.len() {
            0 => Ok(RecordBatch::new_empty(Arc::clone(&self.read_schema))),
            1 => Ok(batches.pop().expect("one batch")),
            _ => Ok(concat_batches(&self.read_schema, &batches)?),
        }
    }
}

impl std::fmt::Debug for DecodedBatchBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodedBatchBuilder")
            .field("topic", &self.spec.topic)
            .field("rows", &self.rows)
            .finish()
    }
}
