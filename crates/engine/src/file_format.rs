//! The DataFusion `FileFormat` / `FileFormatFactory` of every log format.
//!
//! With these registered, DataFusion's listing tables give logsql directories,
//! globs, object stores, `CREATE EXTERNAL TABLE ... STORED AS <FORMAT>`, parallel
//! file groups and statistics-based answers (`count(*)`, `min(log_time)`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{GetExt, ScalarValue, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{ObjectMeta, ObjectStore};
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::ExecutionPlan;

use crate::datasource::source::LogSource;
use crate::scanner::error::df_err;
use crate::scanner::options::LogsqlOptions;
use crate::scanner::schema::{col, messages_table_schema, table_schema};
use crate::scanner::shared_chunks::SharedChunkRegistry;
use crate::scanner::target::{DecodedSpec, ScanTarget, TableSpec};
use crate::scanner::time_order;
use crate::storage::object_io::FileLocation;
use crate::storage::summary_cache;
use crate::write::sink::{LogWrite, WriterSink};
use crate::write::sources::ScannedFiles;
use logsql_readers::formats::FormatReader;
use logsql_readers::model::Summary;

/// Name under which the auto-detecting format is registered (`STORED AS LOG`).
pub(crate) const AUTO_FORMAT: &str = "log";

/// A log format as a DataFusion file format. `None` detects the format of each
/// file from its first bytes (so one table may mix formats).
#[derive(Debug, Clone)]
pub struct LogFileFormat {
    format: Option<Arc<dyn FormatReader>>,
    /// What the table's scans read: `messages`, a typed table or a decoded topic.
    target: ScanTarget,
    /// Files of the listed path that the table leaves out (not log files, or
    /// without the topic a `read_topic` table reads).
    skip: Arc<HashSet<ObjectPath>>,
    /// How `COPY ... TO` writes files of this format (MCAP, ROS1 bag, ROS 2
    /// bag; `None`: the format is read-only).
    write: Option<LogWrite>,
    /// The table lists several files: one too damaged for a summary does not
    /// fail planning; its scan applies `logsql.on_error` as for any damage.
    defer_damage: bool,
    /// The URL of the store the table lists (DataFusion hands
    /// [`FileFormat::infer_stats`] the store, not its URL, which a remote
    /// file's name begins with).
    store_url: Option<ObjectStoreUrl>,
}

impl LogFileFormat {
    /// The file format for `format`, or auto-detection when `None`.
    pub fn new(format: Option<Arc<dyn FormatReader>>) -> Self {
        Self {
            format,
            target: ScanTarget::Messages,
            skip: Default::default(),
            write: None,
            defer_damage: false,
            store_url: None,
        }
    }

    /// The same format for a table listing files of the store at `url`.
    pub(crate) fn in_store(self, url: ObjectStoreUrl) -> Self {
        Self {
            store_url: Some(url),
            ..self
        }
    }

    /// The same format leaving the files `skip` out of every scan.
    pub(crate) fn with_skip(self, skip: HashSet<ObjectPath>) -> Self {
        Self {
            skip: Arc::new(skip),
            ..self
        }
    }

    /// The file format reading typed table `table` of `format` files.
    pub fn typed(format: Arc<dyn FormatReader>, table: Arc<TableSpec>) -> Self {
        Self {
            target: ScanTarget::Table(table),
            ..Self::new(Some(format))
        }
    }

    /// The file format reading one topic's decoded messages (`read_topic`);
    /// `format` is `None` when the files mix formats.
    pub fn decoded(format: Option<Arc<dyn FormatReader>>, spec: Arc<DecodedSpec>) -> Self {
        Self {
            target: ScanTarget::Decoded(spec),
            ..Self::new(format)
        }
    }

    /// The same format with damaged files left to the scans' `on_error`
    /// policy instead of failing planning (a table of several files).
    pub fn deferring_damage(self, defer_damage: bool) -> Self {
        Self {
            defer_damage,
            ..self
        }
    }

    fn name(&self) -> &'static str {
        self.format.as_ref().map_or(AUTO_FORMAT, |f| f.name())
    }

    /// The same format written as `write` says (`COPY ... OPTIONS`).
    pub(crate) fn with_write(self, write: LogWrite) -> Self {
        Self {
            write: Some(write),
            ..self
        }
    }
}

impl LogFileFormat {
    /// The statistics of the file at `loc` from its `summary` (its own, or
    /// the catalog's): the `messages` table's or a topic scan's, with the
    /// `file` column's bounds where its name is known.
    /// (Under `logsql.on_error = 'warn'` no answer is taken from them:
    /// see [`crate::surface::statistics_answers`].)
    fn file_statistics(
        &self,
        summary: &Summary,
        schema: &SchemaRef,
        loc: &FileLocation,
    ) -> Statistics {
        let stats = match self.target.is_messages() {
            true => summary_statistics(summary, schema),
            false => topic_statistics(summary, schema),
        };
        match loc.local || self.store_url.is_some() {
            true => with_file_bounds(stats, schema, loc),
            false => stats,
        }
    }
}

/// The catalog `logsql.catalog` names, when one is set: its newest
/// generation (see [`crate::catalog::snapshot`]).
pub(crate) async fn catalog_of(
    state: &dyn Session,
    options: &LogsqlOptions,
) -> Result<Option<Arc<crate::catalog::CatalogSnapshot>>> {
    if options.catalog.is_empty() {
        return Ok(None);
    }
    crate::catalog::snapshot::current(state.runtime_env(), &options.catalog).await
}

/// Exact statistics from a file's summary, where the file states them, for
/// the `messages` table: row count and `log_time` bounds.
pub(crate) fn summary_statistics(summary: &Summary, schema: &SchemaRef) -> Statistics {
    let mut stats = Statistics::new_unknown(schema);
    stats.total_byte_size = Precision::Inexact(summary.file_size as usize);
    // Trust a stated count only when nothing contradicts it: no damage, and when
    // every chunk's count is known, their sum agrees (files with wrong Statistics exist).
    let chunk_sum = summary
        .chunks
        .iter()
        .try_fold(0u64, |acc, c| acc.checked_add(c.message_count?));
    let exact =
        summary.damage.is_none() && chunk_sum.is_none_or(|n| Some(n) == summary.message_count);
    if let (Some(n), true) = (summary.message_count, exact) {
        stats.num_rows = Precision::Exact(n as usize);
        if let (Some(lo), Some(hi), true, Ok(i)) = (
            summary.start_time,
            summary.end_time,
            n > 0,
            schema.index_of(col::LOG_TIME),
        ) {
            let ts = |v: u64| {
                ScalarValue::TimestampNanosecond(i64::try_from(v).ok(), Some("UTC".into()))
            };
            stats.column_statistics[i].min_value = Precision::Exact(ts(lo));
            stats.column_statistics[i].max_value = Precision::Exact(ts(hi));
            stats.column_statistics[i].null_count = Precision::Exact(0);
        }
    } else if let Some(n) = chunk_sum.or(summary.message_count) {
        stats.num_rows = Precision::Inexact(n as usize);
    }
    stats
}

/// Bounds a scan of some of a file's messages (a `read_topic` table) lies in:
/// the file's stated time range, inexact (the topic's own messages may start
/// later and end earlier). No row count: the file's is not the topic's.
pub(crate) fn topic_statistics(summary: &Summary, schema: &SchemaRef) -> Statistics {
    let mut stats = Statistics::new_unknown(schema);
    if let (Some(lo), Some(hi), Ok(i)) = (
        summary.start_time,
        summary.end_time,
        schema.index_of(col::LOG_TIME),
    ) && summary.damage.is_none()
    {
        let ts =
            |v: u64| ScalarValue::TimestampNanosecond(i64::try_from(v).ok(), Some("UTC".into()));
        stats.column_statistics[i].min_value = Precision::Inexact(ts(lo));
        stats.column_statistics[i].max_value = Precision::Inexact(ts(hi));
    }
    stats
}

/// Sets the bounds of the `file` column: every row of a file holds its name.
/// Inexact (so no answer is taken from it: a file may hold no row), but bounds
/// all the same, which is what lets DataFusion keep a declared order by
/// (`file`, `log_time`) over a partition reading several files in name order
/// ([`time_order::declare`]). Not where the name is unknown: a remote file of
/// a table whose store URL was not given ([`LogFileFormat::in_store`]).
fn with_file_bounds(mut stats: Statistics, schema: &SchemaRef, loc: &FileLocation) -> Statistics {
    if let Ok(i) = schema.index_of(col::FILE) {
        let name = ScalarValue::Utf8(Some(loc.display_name()));
        stats.column_statistics[i].min_value = Precision::Inexact(name.clone());
        stats.column_statistics[i].max_value = Precision::Inexact(name);
    }
    stats
}

#[async_trait]
impl FileFormat for LogFileFormat {
    fn get_ext(&self) -> String {
        // Formats without a reliable extension (CARLA `.log`, Apollo's split
        // `.record.00001`) filter nothing by name; content decides.
        self.format
            .as_ref()
            .and_then(|f| f.extensions().first())
            .map_or(String::new(), |e| format!(".{e}"))
    }

    /// DataFusion turns `CREATE EXTERNAL TABLE ... LOCATION 'dir/'` into the glob
    /// `dir/*.<this>`: `mcap*`, `record*` (split recordings: `a.record.00001`),
    /// and `*` for formats named by content only (so `dir/*.*`).
    fn get_ext_with_compression(&self, c: &FileCompressionType) -> Result<String> {
        if c.is_compressed() {
            return Err(DataFusionError::NotImplemented(format!(
                "{} files compressed as a whole are not supported",
                self.name()
            )));
        }
        Ok(self
            .format
            .as_ref()
            .and_then(|f| f.extensions().first())
            .map_or("*".to_string(), |e| format!("{e}*")))
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        // Reported so that the directory glob above is used (log files carry
        // their own per-chunk compression).
        Some(FileCompressionType::UNCOMPRESSED)
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        Ok(match &self.target {
            ScanTarget::Table(t) => table_schema(&t.def),
            ScanTarget::Decoded(d) => Arc::clone(&d.schema),
            ScanTarget::Messages => messages_table_schema(),
        })
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        let companion = self.format.as_ref().is_some_and(|f| {
            logsql_readers::formats::is_companion(f.as_ref(), object.location.as_ref())
        });
        if self.skip.contains(&object.location) || companion {
            let mut stats = Statistics::new_unknown(&table_schema);
            stats.num_rows = Precision::Exact(0);
            return Ok(stats);
        }
        if self.target.table().is_some() {
            return Ok(Statistics::new_unknown(&table_schema));
        }
        let loc = match &self.store_url {
            Some(url) => FileLocation::in_store(url, Arc::clone(store), object.clone()),
            None => FileLocation::from_store(Arc::clone(store), object.clone()),
        };
        let options = LogsqlOptions::from_config(state.config_options());
        // A file the catalog knows as it is now: its statistics without opening it.
        if let Some(catalog) = catalog_of(state, &options).await?
            && let Some(entry) = catalog.entry(&loc.display_name(), object, self.format.as_ref())
        {
            return Ok(self.file_statistics(&entry.summary, &table_schema, &loc));
        }
        let cache = summary_cache::of(state.runtime_env());
        let limits = options.limits();
        let cached = match loc
            .summary_with_limits(Some(cache), self.format.clone(), limits)
            .await
        {
            Ok(cached) => cached,
            // A topic scan's statistics only help keep an order: a file
            // without a summary is the scan's to report, not planning's.
            Err(_) if !self.target.is_messages() => {
                return Ok(Statistics::new_unknown(&table_schema));
            }
            Err(e) if self.defer_damage && e.is_unreadable() => {
                return Ok(Statistics::new_unknown(&table_schema));
            }
            Err(e) => return Err(df_err(e)),
        };
        Ok(self.file_statistics(&cached.summary, &table_schema, &loc))
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        mut conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let options = LogsqlOptions::from_config(state.config_options());
        let time_order = options.time_order;
        let limits = options.limits();
        let summaries = summary_cache::of(state.runtime_env());
        let catalog = catalog_of(state, &options).await?;
        if let Some(source) = conf.file_source.downcast_ref::<LogSource>() {
            conf.file_source = Arc::new(
                source
                    .with_options(options)
                    .with_catalog(catalog.clone())
                    .with_summary_cache(Arc::clone(&summaries))
                    .with_memory_pool(Arc::clone(&state.runtime_env().memory_pool))
                    .with_shared_chunks(SharedChunkRegistry::of(state.config())),
            );
        }
        // `messages` and `read_topic` scans of files in time order declare it
        // (typed tables keep the order of their packets), when the query
        // reads `log_time` at all (else nothing above can use the order).
        let projects_log_time = conf
            .file_source
            .downcast_ref::<LogSource>()
            .is_some_and(LogSource::projects_log_time);
        if time_order
            && self.target.table().is_none()
            && projects_log_time
            && conf.output_ordering.is_empty()
        {
            let store = state.runtime_env().object_store(&conf.object_store_url)?;
            let format = self.format.clone();
            let skip = &self.skip;
            let known = catalog.as_deref();
            time_order::declare(&mut conf, store, summaries, format, skip, limits, known).await;
        }
        Ok(DataSourceExec::from_data_source(conf))
    }

    /// `COPY ... TO 'x.mcap'`, `'x.bag'`, `'dir/' STORED AS DB3`: one MCAP
    /// file, ROS1 bag or ROS 2 bag directory (see [`crate::write::sink`]);
    /// the other formats are read-only.
    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let write = match &self.write {
            Some(write) => write.clone(),
            None => match LogWrite::of_format(self.name(), &HashMap::new())? {
                Some(write) => write,
                None => {
                    return Err(DataFusionError::NotImplemented(format!(
                        "logsql writes log files as MCAP, ROS1 bag or ROS 2 bag only ({} is read-only): COPY ... TO 'out.mcap', TO 'out.bag', TO 'dir/' STORED AS DB3, or STORED AS PARQUET",
                        self.name()
                    )));
                }
            },
        };
        write.check_schema(conf.output_schema())?;
        // Channels come only from the files this query scans (never from a
        // path a `file` value names).
        let scanned = ScannedFiles::of_plan(&input);
        let sink = Arc::new(WriterSink::new(conf, write, scanned));
        Ok(Arc::new(DataSinkExec::new(input, sink, order_requirements)))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(
            LogSource::new(self.format.clone(), table_schema)
                .with_target(self.target.clone())
                .with_skip(Arc::clone(&self.skip)),
        )
    }
}

/// Creates [`LogFileFormat`]s for `STORED AS <NAME>`.
#[derive(Debug, Clone)]
pub struct LogFileFormatFactory {
    format: Option<Arc<dyn FormatReader>>,
    /// The name it is registered under, when not the format's own.
    name: Option<&'static str>,
}

impl LogFileFormatFactory {
    /// The factory for `format`, or for auto-detection when `None`.
    pub fn new(format: Option<Arc<dyn FormatReader>>) -> Self {
        Self { format, name: None }
    }

    /// The factories of every format, under their names, and of ROS 2 bags
    /// also under `db3` (`STORED AS DB3`, `COPY ... TO 'dir/' STORED AS DB3`).
    pub fn all() -> Vec<Self> {
        let mut out: Vec<Self> = logsql_readers::formats::all()
            .into_iter()
            .map(|f| Self::new(Some(f)))
            .collect();
        if let Some(ros2) = out
            .iter()
            .find(|f| f.format.as_ref().is_some_and(|f| f.name() == "ros2"))
        {
            out.push(Self {
                format: ros2.format.clone(),
                name: Some(DB3_FORMAT),
            });
        }
        out.push(Self::new(None));
        out
    }
}

/// The second name of the ROS 2 bag format (`STORED AS DB3`).
pub(crate) const DB3_FORMAT: &str = "db3";

impl GetExt for LogFileFormatFactory {
    fn get_ext(&self) -> String {
        self.name
            .unwrap_or_else(|| self.format.as_ref().map_or(AUTO_FORMAT, |f| f.name()))
            .to_string()
    }
}

impl FileFormatFactory for LogFileFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        // Write options (`COPY ... TO 'x.mcap' OPTIONS (compression 'lz4')`)
        // of the formats logsql writes; reading takes none.
        let name = self.get_ext();
        if let Some(write) = LogWrite::of_format(&name, options)? {
            return Ok(Arc::new(
                LogFileFormat::new(self.format.clone()).with_write(write),
            ));
        }
        if let Some(key) = options.keys().find(|k| k.starts_with("format.")) {
            return Err(DataFusionError::Configuration(format!(
                "unknown option '{key}' for {} tables (logsql options are session settings: SET logsql.on_error = 'warn')",
                self.get_ext()
            )));
        }
        Ok(self.default())
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(LogFileFormat::new(self.format.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scanner::schema::messages_schema;
    use logsql_readers::model::ChunkMeta;

    fn chunk(count: Option<u64>) -> ChunkMeta {
        ChunkMeta {
            index: 0,
            offset: 0,
            length: 0,
            start_time: Some(1),
            end_time: Some(2),
            message_count: count,
            channels: None,
            compression: String::new(),
            compressed_size: 0,
            uncompressed_size: None,
        }
    }

    fn summary(stated: Option<u64>, chunks: Vec<ChunkMeta>) -> Summary {
        Summary {
            message_count: stated,
            start_time: Some(1),
            end_time: Some(2),
            chunks,
            ..Summary::default()
        }
    }

    #[test]
    fn stated_counts_are_exact_unless_contradicted() {
        let schema = messages_schema();
        let s = summary(Some(9), vec![chunk(Some(4)), chunk(Some(5))]);
        assert_eq!(
            summary_statistics(&s, &schema).num_rows,
            Precision::Exact(9)
        );
        let s = summary(Some(9), vec![chunk(None), chunk(Some(5))]);
        assert_eq!(
            summary_statistics(&s, &schema).num_rows,
            Precision::Exact(9)
        );
        // The chunks hold 10 messages, the file says 9: not exact.
        let s = summary(Some(9), vec![chunk(Some(5)), chunk(Some(5))]);
        assert_eq!(
            summary_statistics(&s, &schema).num_rows,
            Precision::Inexact(10)
        );
        // Damage: nothing is exact; the readable chunks are the estimate.
        let mut s = summary(Some(9), vec![chunk(Some(4))]);
        s.damage = Some(logsql_readers::Error::Invalid("cut".into()));
        assert_eq!(
            summary_statistics(&s, &schema).num_rows,
            Precision::Inexact(4)
        );
    }
}
