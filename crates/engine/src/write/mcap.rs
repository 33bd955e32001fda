//! Writing query results as MCAP: the `DataSink` behind `COPY (...) TO
//! 'x.mcap'` (or `STORED AS MCAP`), also used by `logsql export out.mcap`.
//!
//! Rows need `topic`, `log_time` and `data`; `publish_time` (null: the log
//! time), `sequence` (null: 0), `message_type`, `message_encoding` and `file`
//! are used when present. A row's channel and schema come from the file named
//! in its `file` column when the same query scanned that file
//! ([`super::sources`]): its summary (the one the scan cached) is read,
//! and the row gets the channel of that file with the row's topic, message
//! type and message encoding, mapped to MCAP by
//! [`logsql_readers::formats::mcap::target`]. Rows without a `file` column, or
//! whose `file` names anything the query did not scan (never opened), get a
//! channel keyed by (topic, message type, message encoding) whose schema record
//! carries only the type name. Each scanned source file's metadata records and
//! MCAP attachments are written once, when its first row arrives. Rows are
//! written in the order the query delivers them.
//!
//! The `mcap` crate's writer runs on a blocking thread fed through a bounded
//! channel; the output goes to an exclusively created temporary file beside
//! the target ([`crate::atomic_write::AtomicFile`]; for an object store, in the
//! temporary directory), and only a complete, synced file is renamed
//! (uploaded) to the target. An error in the input stream leaves the target as
//! it was and no temporary file. Scan errors of damaged files are
//! deferred past the sink ([`crate::scanner::damage`]): the sink sees the readable rows
//! end normally, completes the file, and the query then fails with the note
//! that the output is complete and valid, as with `COPY ... TO '.parquet'`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{BufWriter, Seek, Write};

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef, UInt32Type};
use datafusion::datasource::physical_plan::FileSinkConfig;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, SendableRecordBatchStream};
use futures::StreamExt;
use prost_reflect::DescriptorPool;

use super::sources::{ScannedFiles, SourceResolver};
pub use super::target::Target;
use super::target::io_err;
use crate::scanner::options::LogsqlOptions;
use crate::scanner::schema::col;
use logsql_readers::formats::mcap::target::{McapChannel, McapSchema, mcap_channel, named_only};
use logsql_writers::SourceFile;

/// Batches buffered between the query and the writer thread.
const QUEUE: usize = 4;

/// The `COPY ... OPTIONS (...)` keys of MCAP output (without DataFusion's
/// `format.` prefix).
pub(crate) const OPTION_KEYS: &[&str] = &["compression", "chunk_size", "summary"];

/// How the MCAP file is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McapWriteOptions {
    /// Chunk compression: `zstd` (default), `lz4` or `none`.
    pub compression: Compression,
    /// Target uncompressed chunk size in bytes (default 1 MiB, the `mcap` crate's).
    pub chunk_size: u64,
    /// Whether to write the summary section and indexes (message indexes,
    /// chunk indexes, statistics, summary offsets). Default `true`.
    pub summary: bool,
}

/// Chunk compression of MCAP output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// zstd (the default).
    Zstd,
    /// LZ4 frames.
    Lz4,
    /// No compression.
    None,
}

impl Compression {
    /// Parses `zstd`, `lz4` or `none` (also `uncompressed`), any case.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zstd" => Ok(Self::Zstd),
            "lz4" => Ok(Self::Lz4),
            "none" | "uncompressed" | "" => Ok(Self::None),
            other => Err(DataFusionError::Configuration(format!(
                "MCAP compression '{other}' is not one of zstd, lz4, none"
            ))),
        }
    }
}

impl Default for McapWriteOptions {
    fn default() -> Self {
        Self {
            compression: Compression::Zstd,
            chunk_size: mcap::WriteOptions::DEFAULT_CHUNK_SIZE,
            summary: true,
        }
    }
}

impl McapWriteOptions {
    /// The options of `COPY ... OPTIONS (...)` / `CREATE EXTERNAL TABLE ...
    /// OPTIONS (...)` (keys with or without the `format.` prefix); unknown keys
    /// are refused with the known ones listed.
    pub(crate) fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            let bare = key.strip_prefix("format.").unwrap_or(key);
            match bare {
                "compression" => out.compression = Compression::parse(value)?,
                "chunk_size" => {
                    out.chunk_size = value.trim().parse().map_err(|_| {
                        DataFusionError::Configuration(format!(
                            "MCAP chunk_size '{value}' is not a number of bytes"
                        ))
                    })?
                }
                "summary" => {
                    out.summary = match value.trim().to_ascii_lowercase().as_str() {
                        "true" | "yes" | "on" | "1" => true,
                        "false" | "no" | "off" | "0" => false,
                        _ => {
                            return Err(DataFusionError::Configuration(format!(
                                "MCAP summary '{value}' is not true or false"
                            )));
                        }
                    }
                }
                _ => {
                    return Err(DataFusionError::Configuration(format!(
                        "unknown option '{key}' for MCAP output (known: {})",
                        OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }

    /// The `mcap` crate's options for a file of `profile`.
    fn writer_options(&self, profile: &str) -> mcap::WriteOptions {
        let compression = match self.compression {
            Compression::Zstd => Some(mcap::Compression::Zstd),
            Compression::Lz4 => Some(mcap::Compression::Lz4),
            Compression::None => None,
        };
        let mut o = mcap::WriteOptions::new()
            .compression(compression)
            .chunk_size(Some(self.chunk_size.max(1)))
            // zstd on the writing thread itself. The crate's default (one
            // worker per physical core) hands each chunk to a worker, copying it first, but a
            // worker only splits jobs of 8 MiB and more at level 3: a 1 MiB chunk is
            // compressed by one worker while the writer waits. Without the handoff,
            // a 188 MB bag converts in 0.41 s instead of 0.50 s (docs/performance.md).
            .compression_threads(0)
            .profile(profile)
            .library(format!("logsql {}", env!("CARGO_PKG_VERSION")));
        if !self.summary {
            o = o
                .emit_summary_records(false)
                .emit_summary_offsets(false)
                .emit_message_indexes(false);
        }
        o
    }
}

/// Fails unless `schema` has the columns an MCAP message needs.
pub(crate) fn check_schema(schema: &SchemaRef) -> Result<()> {
    let missing: Vec<&str> = [col::TOPIC, col::LOG_TIME, col::DATA]
        .into_iter()
        .filter(|c| schema.index_of(c).is_err())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let have: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    Err(DataFusionError::Plan(format!(
        "writing MCAP needs the columns topic, log_time and data (missing: {}; the query has: {})",
        missing.join(", "),
        have.join(", ")
    )))
}

/// What the writer does with an error in its input stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamErrors {
    /// Abandon the file (nothing appears under the target name).
    Abort,
    /// After at least one row (a damaged source whose readable rows were all
    /// delivered): complete the file and return the error beside the row count.
    KeepRows,
}

/// Writes `stream` as one MCAP file to `target`. Channels, schemas, metadata
/// and attachments come only from the files in `scanned` (see
/// [`super::sources`]). Returns the rows written and, under
/// [`StreamErrors::KeepRows`], the stream's error after which the file was
/// completed. `progress` is called with the running row count.
#[allow(clippy::too_many_arguments)]
pub async fn write_mcap(
    mut stream: SendableRecordBatchStream,
    env: Arc<RuntimeEnv>,
    pool: Option<Arc<DescriptorPool>>,
    scanned: &ScannedFiles,
    options: &McapWriteOptions,
    target: &Target,
    on_error: StreamErrors,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(u64, Option<DataFusionError>)> {
    check_schema(&stream.schema())?;
    let mut out = target.create()?;
    let file = out
        .file()
        .try_clone()
        .map_err(|e| io_err(out.temp_path(), e))?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Item>(QUEUE);
    let opts = options.clone();
    let name = target.name();
    let writer = tokio::task::spawn_blocking(move || -> Result<Option<u64>> {
        let mut w = McapBatchWriter::new(BufWriter::new(file), opts, name);
        while let Some(item) = rx.blocking_recv() {
            match item {
                Item::Source(file, info) => w.add_source(file, info)?,
                Item::Batch(batch) => w.write_batch(&batch)?,
                Item::Finish => {
                    let rows = w.rows;
                    let mut buf = w.finish()?;
                    buf.flush()
                        .map_err(|e| DataFusionError::External(Box::new(e)))?;
                    return Ok(Some(rows));
                }
            }
        }
        // The query side gave up: the temporary file is removed there.
        Ok(None)
    });

    let mut resolver = SourceResolver::new(env, pool, scanned, target.name());
    let mut rows = 0u64;
    let mut failed = None;
    let send = |item| {
        let tx = tx.clone();
        async move { tx.send(item).await.is_ok() }
    };
    let mut writer_gone = false;
    while let Some(next) = stream.next().await {
        let batch = match next {
            Ok(b) => b,
            Err(e) if on_error == StreamErrors::KeepRows && rows > 0 => {
                failed = Some(e);
                break;
            }
            Err(e) => return Err(e),
        };
        for (file, info) in resolver.new_sources(&batch).await? {
            let info = info.map(|f| Arc::new(SourceInfo::of(&f)));
            writer_gone |= !send(Item::Source(file, info)).await;
        }
        rows += batch.num_rows() as u64;
        writer_gone |= !send(Item::Batch(batch)).await;
        if writer_gone {
            break;
        }
        progress(rows);
    }
    let _ = send(Item::Finish).await;
    drop(tx);
    let written = writer
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))??;
    let Some(written) = written else {
        return Err(DataFusionError::Internal(
            "the MCAP writer stopped early".into(),
        ));
    };
    target.publish(out).await?;
    Ok((written, failed))
}

/// What the MCAP writer takes from one source file: its channels and
/// schemas mapped to MCAP's.
#[derive(Debug, Default)]
pub(crate) struct SourceInfo {
    /// The MCAP profile it suggests (`ros1` for bags, an MCAP file's own).
    pub(crate) profile: String,
    /// Its channels by (topic, message type, message encoding); the lowest id wins.
    pub(crate) channels: HashMap<(String, Option<String>, String), McapChannel>,
    /// Schemas by (message type, message encoding), for rows whose topic a query renamed.
    pub(crate) schemas: HashMap<(String, String), McapSchema>,
    /// Its metadata records.
    pub(crate) metadata: Vec<logsql_readers::model::MetadataInfo>,
    /// Its MCAP attachments.
    pub(crate) attachments: Vec<mcap::Attachment<'static>>,
}

impl SourceInfo {
    /// The MCAP side of `file`.
    fn of(file: &SourceFile) -> Self {
        let mut info = SourceInfo {
            profile: file.profile.clone(),
            metadata: file.metadata.clone(),
            ..Default::default()
        };
        for ch in &file.channels {
            let key = (
                ch.topic.clone(),
                ch.message_type.clone(),
                ch.message_encoding.clone(),
            );
            let mapped = mcap_channel(&file.format, ch);
            if let (Some(ty), Some(s)) = (&ch.message_type, &mapped.schema) {
                info.schemas
                    .entry((ty.clone(), ch.message_encoding.clone()))
                    .or_insert_with(|| s.clone());
            }
            info.channels.entry(key).or_insert(mapped);
        }
        info.attachments = file
            .attachments
            .iter()
            .map(|a| mcap::Attachment {
                log_time: a.log_time,
                create_time: a.create_time,
                name: a.name.clone(),
                media_type: a.media_type.clone(),
                data: a.data.clone().into(),
            })
            .collect();
        info
    }
}

/// What the query side sends the writer thread.
enum Item {
    Source(String, Option<Arc<SourceInfo>>),
    Batch(RecordBatch),
    Finish,
}

/// The `mcap` crate's writer fed with record batches (on a blocking thread).
pub(crate) struct McapBatchWriter<W: Write + Seek> {
    options: McapWriteOptions,
    /// The output until the first record is due (the profile is not known before).
    out: Option<W>,
    writer: Option<mcap::Writer<W>>,
    sources: HashMap<String, Option<Arc<SourceInfo>>>,
    /// Channel ids by `file \0 topic \0 type \0 encoding`.
    channels: HashMap<String, u16>,
    key: String,
    name: String,
    /// Rows written.
    pub rows: u64,
}

fn mcap_err(name: &str, e: mcap::McapError) -> DataFusionError {
    DataFusionError::Execution(format!("writing MCAP {name}: {e}"))
}

impl<W: Write + Seek> McapBatchWriter<W> {
    /// A writer into `out`, named `name` in errors.
    pub(crate) fn new(out: W, options: McapWriteOptions, name: String) -> Self {
        Self {
            options,
            out: Some(out),
            writer: None,
            sources: HashMap::new(),
            channels: HashMap::new(),
            key: String::new(),
            name,
            rows: 0,
        }
    }

    /// The writer, created on first use with `profile`.
    fn writer(&mut self, profile: &str) -> Result<&mut mcap::Writer<W>> {
        if self.writer.is_none() {
            let out = self
                .out
                .take()
                .ok_or_else(|| DataFusionError::Internal("MCAP output used twice".into()))?;
            let w = self
                .options
                .writer_options(profile)
                .create(out)
                .map_err(|e| mcap_err(&self.name, e))?;
            self.writer = Some(w);
        }
        self.writer
            .as_mut()
            .ok_or_else(|| DataFusionError::Internal("no MCAP writer".into()))
    }

    /// Registers source file `file`: writes its metadata records and attachments.
    pub(crate) fn add_source(&mut self, file: String, info: Option<Arc<SourceInfo>>) -> Result<()> {
        if let Some(info) = &info {
            let name = self.name.clone();
            let w = self.writer(&info.profile)?;
            for m in &info.metadata {
                w.write_metadata(&mcap::records::Metadata {
                    name: m.name.clone(),
                    metadata: m.metadata.clone(),
                })
                .map_err(|e| mcap_err(&name, e))?;
            }
            for a in &info.attachments {
                w.attach(a).map_err(|e| mcap_err(&name, e))?;
            }
        }
        self.sources.insert(file, info);
        Ok(())
    }

    /// Writes every row of `batch` as a message.
    pub(crate) fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        let strings = |name: &str| -> Result<Option<Arc<dyn Array>>> {
            batch
                .column_by_name(name)
                .map(|c| cast(c, &DataType::Utf8))
                .transpose()
                .map_err(Into::into)
        };
        let need = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                DataFusionError::Plan(format!("writing MCAP needs the column {name}"))
            })
        };
        let topic = cast(need(col::TOPIC)?, &DataType::Utf8)?;
        let topic = topic.as_string::<i32>();
        let log_time = nanos(need(col::LOG_TIME)?)?;
        let log_time = log_time.as_primitive::<Int64Type>();
        let data = cast(need(col::DATA)?, &DataType::Binary)?;
        let data = data.as_binary::<i32>();
        let publish = batch
            .column_by_name(col::PUBLISH_TIME)
            .map(nanos)
            .transpose()?;
        let publish = publish.as_ref().map(|a| a.as_primitive::<Int64Type>());
        let sequence = batch
            .column_by_name(col::SEQUENCE)
            .map(|c| cast(c, &DataType::UInt32))
            .transpose()?;
        let sequence = sequence.as_ref().map(|a| a.as_primitive::<UInt32Type>());
        let mtype = strings(col::MESSAGE_TYPE)?;
        let mtype = mtype.as_ref().map(|a| a.as_string::<i32>());
        let menc = strings(col::MESSAGE_ENCODING)?;
        let menc = menc.as_ref().map(|a| a.as_string::<i32>());
        let file = strings(col::FILE)?;
        let file = file.as_ref().map(|a| a.as_string::<i32>());

        fn opt(a: Option<&datafusion::arrow::array::StringArray>, i: usize) -> Option<&str> {
            a.and_then(|a| a.is_valid(i).then(|| a.value(i)))
        }
        let (name, first) = (self.name.clone(), self.rows);
        let row_err = |i: usize, what: &str| {
            DataFusionError::Execution(format!(
                "writing MCAP {name}: row {} has {what}",
                first + i as u64 + 1
            ))
        };
        for i in 0..n {
            if topic.is_null(i) {
                return Err(row_err(i, "a null topic"));
            }
            if log_time.is_null(i) {
                return Err(row_err(i, "a null log_time"));
            }
            if data.is_null(i) {
                return Err(row_err(i, "null data"));
            }
            let t = log_time.value(i);
            let log_t = u64::try_from(t).map_err(|_| row_err(i, "a log_time before 1970"))?;
            let pub_t = match publish.filter(|p| p.is_valid(i)) {
                Some(p) => u64::try_from(p.value(i))
                    .map_err(|_| row_err(i, "a publish_time before 1970"))?,
                None => log_t,
            };
            let seq = sequence.filter(|s| s.is_valid(i)).map_or(0, |s| s.value(i));
            let (f, tp, ty, enc) = (
                opt(file, i),
                topic.value(i),
                opt(mtype, i),
                opt(menc, i).unwrap_or(""),
            );
            self.key.clear();
            for part in [f.unwrap_or("\u{1}"), tp, ty.unwrap_or("\u{1}"), enc] {
                self.key.push_str(part);
                self.key.push('\0');
            }
            let id = match self.channels.get(self.key.as_str()) {
                Some(id) => *id,
                None => {
                    let id = self.add_channel(f, tp, ty, enc)?;
                    self.channels.insert(self.key.clone(), id);
                    id
                }
            };
            let w = self.writer("")?;
            w.write_to_known_channel(
                &mcap::records::MessageHeader {
                    channel_id: id,
                    sequence: seq,
                    log_time: log_t,
                    publish_time: pub_t,
                },
                data.value(i),
            )
            .map_err(|e| mcap_err(&name, e))?;
        }
        self.rows += n as u64;
        Ok(())
    }

    /// Adds the channel (and schema) of a row of source `file`.
    fn add_channel(
        &mut self,
        file: Option<&str>,
        topic: &str,
        ty: Option<&str>,
        enc: &str,
    ) -> Result<u16> {
        let source = file.and_then(|f| self.sources.get(f).cloned().flatten());
        let key = (topic.to_string(), ty.map(str::to_string), enc.to_string());
        let chan = match source.as_ref().and_then(|s| s.channels.get(&key)) {
            Some(c) => c.clone(),
            None => McapChannel {
                topic: topic.to_string(),
                message_encoding: enc.to_string(),
                schema: ty.map(|ty| {
                    source
                        .as_ref()
                        .and_then(|s| s.schemas.get(&(ty.to_string(), enc.to_string())))
                        .cloned()
                        .unwrap_or_else(|| named_only(ty))
                }),
                metadata: BTreeMap::new(),
            },
        };
        let name = self.name.clone();
        let profile = source.as_ref().map_or("", |s| s.profile.as_str());
        let w = self.writer(profile)?;
        let schema_id = match &chan.schema {
            Some(s) => w
                .add_schema(&s.name, &s.encoding, &s.data)
                .map_err(|e| mcap_err(&name, e))?,
            None => 0,
        };
        w.add_channel(
            schema_id,
            &chan.topic,
            &chan.message_encoding,
            &chan.metadata,
        )
        .map_err(|e| mcap_err(&name, e))
    }

    /// Writes the summary and footer; returns the output.
    pub(crate) fn finish(mut self) -> Result<W> {
        let name = self.name.clone();
        let mut w = match self.writer.take() {
            Some(w) => w,
            None => {
                let out = self
                    .out
                    .take()
                    .ok_or_else(|| DataFusionError::Internal("MCAP output used twice".into()))?;
                self.options
                    .writer_options("")
                    .create(out)
                    .map_err(|e| mcap_err(&name, e))?
            }
        };
        w.finish().map_err(|e| mcap_err(&name, e))?;
        Ok(w.into_inner())
    }
}

/// A time column as nanoseconds (Int64): timestamps of any unit, or integers taken as ns.
pub(crate) fn nanos(c: &Arc<dyn Array>) -> Result<Arc<dyn Array>> {
    logsql_writers::columns::nanos(c).map_err(super::df_write_err)
}

/// The `COPY ... TO 'x.mcap'` sink.
pub(crate) struct McapSink {
    config: FileSinkConfig,
    options: McapWriteOptions,
    /// The files the query's scans read: the only ones channels come from.
    scanned: ScannedFiles,
}

impl McapSink {
    /// The sink writing `config`'s target with `options`, taking channels from
    /// the files of `scanned` only.
    pub(crate) fn new(
        config: FileSinkConfig,
        options: McapWriteOptions,
        scanned: ScannedFiles,
    ) -> Self {
        Self {
            config,
            options,
            scanned,
        }
    }

    /// The target of the write.
    pub(crate) fn config(&self) -> &FileSinkConfig {
        &self.config
    }
}

impl fmt::Debug for McapSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McapSink")
            .field("url", &self.config.original_url)
            .field("options", &self.options)
            .finish()
    }
}

impl DisplayAs for McapSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => {
                write!(f, "format: mcap\nfile={}", self.config.original_url)
            }
            _ => write!(f, "McapSink(file={})", self.config.original_url),
        }
    }
}

#[async_trait]
impl DataSink for McapSink {
    fn schema(&self) -> &SchemaRef {
        self.config.output_schema()
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let env = context.runtime_env();
        let target = Target::of_sink(&self.config, &env, "MCAP", "out.mcap")?;
        let options = LogsqlOptions::from_config(context.session_config().options());
        let pool = options.descriptor_pool()?;
        let (rows, _) = write_mcap(
            data,
            env,
            pool,
            &self.scanned,
            &self.options,
            &target,
            StreamErrors::Abort,
            &|_| {},
        )
        .await?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> HashMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn options_parse_with_or_without_the_format_prefix() {
        assert_eq!(
            McapWriteOptions::from_map(&HashMap::new()).unwrap(),
            McapWriteOptions::default()
        );
        let o = McapWriteOptions::from_map(&map(&[
            ("format.compression", "LZ4"),
            ("chunk_size", "65536"),
            ("format.summary", "false"),
        ]))
        .unwrap();
        assert_eq!(
            o,
            McapWriteOptions {
                compression: Compression::Lz4,
                chunk_size: 65536,
                summary: false
            }
        );
        let err = |kv: &[(&str, &str)]| {
            McapWriteOptions::from_map(&map(kv))
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(&[("format.chunk_size", "1MB")])
                .contains("chunk_size '1MB' is not a number of bytes")
        );
        assert!(
            err(&[("format.summary", "maybe")]).contains("summary 'maybe' is not true or false")
        );
        assert!(err(&[("format.codec", "zstd")]).contains(
            "unknown option 'format.codec' for MCAP output (known: compression, chunk_size, summary)"
        ));
    }

    #[test]
    fn rows_are_written_and_an_empty_result_is_a_valid_file() {
        use datafusion::arrow::array::{BinaryArray, StringArray, TimestampNanosecondArray};
        use datafusion::arrow::datatypes::{Field, Schema};
        let schema = Arc::new(Schema::new(vec![
            Field::new("topic", DataType::Utf8, true),
            Field::new(
                "log_time",
                DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Nanosecond, None),
                true,
            ),
            Field::new("data", DataType::Binary, true),
            Field::new("message_type", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(vec!["/a", "/b", "/a"])),
                Arc::new(TimestampNanosecondArray::from(vec![3, 1, 2])),
                Arc::new(BinaryArray::from(vec![&b"x"[..], b"", b"yz"])),
                Arc::new(StringArray::from(vec![Some("T"), None, Some("T")])),
            ],
        )
        .unwrap();
        let mut w = McapBatchWriter::new(
            std::io::Cursor::new(Vec::new()),
            McapWriteOptions::default(),
            "t.mcap".into(),
        );
        w.write_batch(&batch).unwrap();
        assert_eq!(w.rows, 3);
        let bytes = w.finish().unwrap().into_inner();
        let msgs: Vec<_> = mcap::MessageStream::new(&bytes)
            .unwrap()
            .map(|m| {
                let m = m.unwrap();
                let ty = m.channel.schema.as_ref().map(|s| s.name.clone());
                (
                    m.channel.topic.clone(),
                    m.log_time,
                    m.publish_time,
                    m.data.to_vec(),
                    ty,
                )
            })
            .collect();
        assert_eq!(
            msgs,
            [
                ("/a".to_string(), 3, 3, b"x".to_vec(), Some("T".to_string())),
                ("/b".to_string(), 1, 1, vec![], None),
                (
                    "/a".to_string(),
                    2,
                    2,
                    b"yz".to_vec(),
                    Some("T".to_string())
                ),
            ]
        );
        let empty = McapBatchWriter::new(
            std::io::Cursor::new(Vec::new()),
            McapWriteOptions::default(),
            "e.mcap".into(),
        );
        let bytes = empty.finish().unwrap().into_inner();
        assert_eq!(mcap::MessageStream::new(&bytes).unwrap().count(), 0);
    }
}
