//! What every format's scan shares: the plan of a scan ([`ScanPlan`]), its
//! metrics, and the collector readers push rows into, which builds, filters and
//! projects the batches ([`Collector`]). A file's scan itself, step by step, is
//! [`super::file_scan`].

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::cast::as_boolean_array;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column as ColumnExpr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_optimizer::pruning::PruningPredicate;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};

use super::batch::BatchBuilder;
use super::damage::DamageLog;
use super::decoded_batch::DecodedBatchBuilder;
use super::options::{LogsqlOptions, OnError, VerifyChecksums};
use super::predicate;
use super::shared_chunks::SharedChunkRegistry;
use super::table_batch::TableBatchBuilder;
use super::target::ScanTarget;
use super::time_order::ChunkOrder;
use crate::storage::summary_cache::SummaryCache;
use logsql_readers::formats::FormatReader;
use logsql_readers::model::{ChunkMeta, ChunkRead, Flow, Message, Selection};
use logsql_readers::table::{RowReceiver, Value};

/// The scan metrics, as `EXPLAIN ANALYZE` shows them on the scan node.
#[derive(Debug, Clone)]
pub(crate) struct ScanMetrics {
    /// Chunks in the scanned byte ranges, before pruning.
    pub chunks_total: Count,
    /// Chunks actually read.
    pub chunks_read: Count,
    /// Bytes read from storage (indexes, chunks, record headers).
    pub bytes_read: Count,
    /// Bytes produced by decompression.
    pub bytes_decompressed: Count,
    /// Messages parsed from the chunks read.
    pub messages_read: Count,
    /// Bytes read only to verify whole-file checksums (BDDF SHA1): the bytes between
    /// the chunks of a full scan, or the whole file under `verify_checksums = 'always'`.
    pub bytes_verified: Count,
    /// Files opened by the scan (their summaries read, or found in the cache).
    pub files_total: Count,
    /// Files whose summary (time range, topics) excludes them: none of their chunks is read.
    pub files_pruned: Count,
    /// Of those, files the catalog (`logsql.catalog`) ruled out: not even opened.
    pub files_pruned_by_catalog: Count,
    /// Files the scan opened that the catalog does not know as they are now
    /// (new since it was written, changed, or never readable).
    pub files_unknown_to_catalog: Count,
    /// Rows answered from the file's stated per-channel counts, without
    /// reading a chunk ([`super::summary_rows`]).
    pub messages_from_summary: Count,
    /// Messages answered from a chunk's message index (`log_time` and
    /// channel only), without reading the chunk.
    pub messages_from_index: Count,
    /// File opens whose summary the session's file-metadata cache held.
    pub summary_cache_hits: Count,
    /// File opens that read the file's summary (then cached).
    pub summary_cache_misses: Count,
    /// Chunks not read because a filter set while the query ran (a TopK's
    /// bound, see [`super::newest_first`]) ruled them out.
    pub chunks_pruned_at_run_time: Count,
    /// Chunks whose decompressed bytes another scan of the file in the same
    /// query left (see [`super::shared_chunks`]), not decompressed again.
    pub chunks_shared: Count,
}

impl ScanMetrics {
    /// Registers the metrics of `partition` in `set`.
    pub(crate) fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        let counter = |name: &'static str| MetricBuilder::new(set).counter(name, partition);
        Self {
            chunks_total: counter("chunks_total"),
            chunks_read: counter("chunks_read"),
            bytes_read: counter("bytes_read"),
            bytes_decompressed: counter("bytes_decompressed"),
            messages_read: counter("messages_read"),
            bytes_verified: counter("bytes_verified"),
            files_total: counter("files_total"),
            files_pruned: counter("files_pruned"),
            files_pruned_by_catalog: counter("files_pruned_by_catalog"),
            files_unknown_to_catalog: counter("files_unknown_to_catalog"),
            messages_from_summary: counter("messages_from_summary"),
            messages_from_index: counter("messages_from_index"),
            summary_cache_hits: counter("summary_cache_hits"),
            summary_cache_misses: counter("summary_cache_misses"),
            chunks_pruned_at_run_time: counter("chunks_pruned_at_run_time"),
            chunks_shared: counter("chunks_shared"),
        }
    }
}

/// Everything a scan of one table needs, derived once from projection and filters.
#[derive(Debug)]
pub(crate) struct ScanPlan {
    /// The format, or `None` to detect it per file from its magic bytes.
    pub format: Option<Arc<dyn FormatReader>>,
    /// Schema of the batches the reader builds: the needed columns, in schema order.
    pub(crate) read_schema: SchemaRef,
    /// Positions in `read_schema` of the output columns, in output order.
    pub output: Vec<usize>,
    /// Exact predicate over `read_schema`, applied to every batch.
    pub predicate: Option<Arc<dyn PhysicalExpr>>,
    /// Chunk pruning, over the full file schema.
    pub pruning: Option<Arc<PruningPredicate>>,
    /// What readers may skip.
    pub selection: Selection,
    /// Row bound of a batch.
    pub batch_rows: usize,
    /// Payload-byte bound of a batch.
    pub batch_bytes: usize,
    /// What to do with damaged files.
    pub on_error: OnError,
    /// Stop after this many rows (after filtering).
    pub limit: Option<usize>,
    /// What the scan reads: `messages`, a typed table or a decoded topic.
    pub target: ScanTarget,
    /// When whole-file checksums are verified (`logsql.verify_checksums`).
    pub verify: VerifyChecksums,
    /// Where errors go when the query reports them at its end (see
    /// [`super::damage`]); `None`: they end this scan's stream.
    pub damage: Option<Arc<DamageLog>>,
    /// When the scan declared `log_time` order ([`super::time_order`]) and
    /// reads `log_time`: its position in `read_schema`. Each chunk's rows are
    /// then held until the chunk ends, sorted and checked against its bounds.
    pub time_order: Option<usize>,
    /// The session's file-metadata cache the summaries are kept in (`None`:
    /// every file open reads its summary).
    pub summaries: Option<SummaryCache>,
    /// The session's memory pool, which each file's decompressed chunk
    /// counts against while its rows are being made and handed out (`None`:
    /// not accounted).
    pub memory: Option<Arc<dyn MemoryPool>>,
    /// The session's files read by several scans at once, whose decompressed
    /// chunks they share (`None`: not shared), and the bytes they may keep
    /// (`logsql.shared_chunk_bytes`).
    pub(crate) shared: Option<Arc<SharedChunkRegistry>>,
    pub(crate) shared_limit: usize,
    /// Whether each byte range's chunks are read newest first (a `log_time
    /// DESC` sort pushed to the scan: [`super::newest_first`]).
    pub newest_first: bool,
    /// Filters whose value changes while the query runs (a TopK's bound),
    /// over the file schema: chunks they rule out are not read.
    pub(crate) runtime_filters: Vec<Arc<dyn PhysicalExpr>>,
    /// The file schema the runtime filters are expressions over.
    pub(crate) file_schema: SchemaRef,
}

/// What a scan is asked for, by name: the inputs of [`ScanPlan::new`]
/// (the file source builds it from itself and DataFusion's file scan config).
#[derive(Debug, Clone)]
pub(crate) struct ScanRequest<'a> {
    /// The format, or `None` to detect it per file.
    pub format: Option<Arc<dyn FormatReader>>,
    /// The schema of the table's files.
    pub(crate) file_schema: &'a SchemaRef,
    /// The output columns, as indices into `file_schema`.
    pub output: &'a [usize],
    /// The exact predicate, in `file_schema` terms.
    pub predicate: Option<Arc<dyn PhysicalExpr>>,
    /// What the scan reads.
    pub target: ScanTarget,
    /// Row bound of a batch.
    pub batch_rows: usize,
    /// The session's `logsql.*` options (batch bytes, `on_error`, checksums).
    pub options: &'a LogsqlOptions,
    /// Stop after this many rows (after filtering).
    pub limit: Option<usize>,
    /// The session's file-metadata cache (see [`ScanPlan::summaries`]).
    pub summaries: Option<SummaryCache>,
    /// The session's memory pool (see [`ScanPlan::memory`]).
    pub memory: Option<Arc<dyn MemoryPool>>,
}

impl ScanPlan {
    /// Plans a scan of `req.file_schema` producing the columns `req.output`
    /// under the exact `req.predicate`.
    pub(crate) fn new(req: ScanRequest<'_>) -> Result<Self> {
        let ScanRequest {
            format,
            file_schema,
            output,
            predicate,
            target,
            batch_rows,
            options,
            limit,
            summaries,
            memory,
        } = req;
        let mut needed: Vec<usize> = output.to_vec();
        if let Some(p) = &predicate {
            for c in collect_columns(p) {
                needed.push(file_schema.index_of(c.name())?);
            }
        }
        needed.sort_unstable();
        needed.dedup();
        let read_schema = Arc::new(file_schema.project(&needed)?);
        let names: HashSet<String> = read_schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let mut selection = predicate::selection(predicate.as_ref(), &names);
        selection.limits = options.limits();
        if options.on_error == OnError::Warn {
            // Under `warn` every readable row is delivered and the damage
            // only warned of: a count must then be the rows that decode, so
            // chunks are read rather than answered from their message
            // indexes (which still list a chunk that no longer decompresses).
            selection.full_header = true;
        }
        match &target {
            ScanTarget::Messages => {}
            ScanTarget::Table(_) => {
                // Typed rows are decoded from payloads; `topic` means nothing there.
                selection.payload = true;
                selection.full_header = true;
                selection.topics = None;
            }
            ScanTarget::Decoded(spec) => {
                // `read_topic`: readers deliver that topic's payloads and full headers.
                selection.payload = true;
                selection.full_header = true;
                selection.topics = Some(HashSet::from([spec.topic.clone()]));
            }
        }
        let pruning = predicate
            .as_ref()
            .and_then(|p| predicate::pruning_predicate(p, file_schema));
        let predicate = predicate
            .map(|p| remap_columns(p, &read_schema))
            .transpose()?;
        let output = output
            .iter()
            .map(|i| needed.binary_search(i).unwrap_or_default())
            .collect();
        Ok(Self {
            format,
            read_schema,
            output,
            predicate,
            pruning,
            selection,
            batch_rows,
            batch_bytes: options.batch_bytes,
            on_error: options.on_error,
            limit,
            target,
            verify: options.verify_checksums,
            damage: None,
            time_order: None,
            summaries,
            memory,
            shared: None,
            shared_limit: options.shared_chunk_bytes,
            newest_first: false,
            runtime_filters: Vec::new(),
            file_schema: Arc::clone(file_schema),
        })
    }

    /// The same plan sharing decompressed chunks with the other scans of its
    /// files through `registry` (see [`super::shared_chunks`]).
    pub(crate) fn with_shared_chunks(mut self, registry: Option<Arc<SharedChunkRegistry>>) -> Self {
        self.shared = registry;
        self
    }

    /// The same plan reading chunks newest first when `newest_first`, and
    /// skipping the chunks `runtime_filters` (over the file schema) rule out
    /// as they tighten (see [`super::newest_first`]).
    pub(crate) fn with_newest_first(
        mut self,
        newest_first: bool,
        runtime_filters: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Self {
        self.newest_first = newest_first;
        self.runtime_filters = runtime_filters;
        self
    }

    /// The same plan keeping `log_time` order within each chunk when `ordered`
    /// (the scan declared it). `log_time` is then read even when the output
    /// lacks it: DataFusion may drop it from the scan's projection after it
    /// relied on the order (`SELECT topic ... ORDER BY log_time`).
    pub(crate) fn with_time_order(
        mut self,
        ordered: bool,
        file_schema: &SchemaRef,
    ) -> Result<Self> {
        let log_time = super::schema::col::LOG_TIME;
        if !ordered || self.target.table().is_some() || file_schema.index_of(log_time).is_err() {
            return Ok(self);
        }
        if self.read_schema.index_of(log_time).is_err() {
            let names = |s: &SchemaRef| -> Vec<String> {
                s.fields().iter().map(|f| f.name().clone()).collect()
            };
            let old = names(&self.read_schema);
            let mut needed = old
                .iter()
                .chain(std::iter::once(&log_time.to_string()))
                .map(|n| file_schema.index_of(n))
                .collect::<std::result::Result<Vec<usize>, _>>()?;
            needed.sort_unstable();
            let read_schema = Arc::new(file_schema.project(&needed)?);
            self.output = self
                .output
                .iter()
                .map(|&i| read_schema.index_of(&old[i]))
                .collect::<std::result::Result<_, _>>()?;
            self.predicate = self
                .predicate
                .map(|p| remap_columns(p, &read_schema))
                .transpose()?;
            self.read_schema = read_schema;
        }
        self.time_order = Some(self.read_schema.index_of(log_time)?);
        Ok(self)
    }

    /// The same plan recording its errors in `log` (see [`super::damage`]).
    pub(crate) fn with_damage_log(self, damage: Option<Arc<DamageLog>>) -> Self {
        Self { damage, ..self }
    }
}

/// Rewrites column references to their positions in `schema`.
fn remap_columns(expr: Arc<dyn PhysicalExpr>, schema: &SchemaRef) -> Result<Arc<dyn PhysicalExpr>> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    expr.transform(|e| {
        if let Some(c) = e.downcast_ref::<ColumnExpr>() {
            let idx = schema.index_of(c.name())?;
            return Ok(Transformed::yes(
                Arc::new(ColumnExpr::new(c.name(), idx)) as Arc<dyn PhysicalExpr>
            ));
        }
        Ok(Transformed::no(e))
    })
    .map(|t| t.data)
}

/// The position in `0..size` that decides which byte range reads chunk `i`
/// of `n` in a scan in declared time order: the centre of slot `i`'s
/// bit-reversal among `2^ceil(log2 n)` equal slots of the file. Consecutive
/// chunks land in different halves (quarters, ...) of the file, so byte
/// ranges that split a file evenly deal its chunks out in turn: each
/// partition still reads its chunks in file (and time) order, and an
/// order-preserving merge of the partitions draws on all of them instead of
/// draining the first half of the file while the second waits.
pub(crate) fn dealt_position(i: usize, n: usize, size: u64) -> u64 {
    if n <= 1 || size == 0 {
        return 0;
    }
    let bits = usize::BITS - (n - 1).leading_zeros();
    let slot = (i as u64).reverse_bits() >> (u64::BITS - bits);
    ((u128::from(2 * slot + 1) * u128::from(size)) >> (bits + 1)) as u64
}

/// What a [`BatchCollector`] buffers rows in.
pub(crate) trait RowBuffer {
    /// Whether nothing is buffered.
    fn is_empty(&self) -> bool;
    /// Whether the buffer holds `1 / parts` of its bound.
    fn holds_share(&self, parts: usize) -> bool;
    /// Whether the buffer reached its bound.
    fn is_full(&self) -> bool {
        self.holds_share(1)
    }
    /// Whether the buffer holds enough rows to be sent at the end of a chunk
    /// (a quarter of its bound). A batch that ends with a chunk holds no
    /// buffer of the next one, so the reader refills the same chunk buffers
    /// once the consumer has dropped the batch.
    fn is_quarter_full(&self) -> bool {
        self.holds_share(4)
    }
    /// Takes the buffered rows as a batch.
    fn finish(&mut self) -> Result<RecordBatch>;
}

impl RowBuffer for BatchBuilder {
    fn is_empty(&self) -> bool {
        BatchBuilder::is_empty(self)
    }
    fn holds_share(&self, parts: usize) -> bool {
        BatchBuilder::holds_share(self, parts)
    }
    fn finish(&mut self) -> Result<RecordBatch> {
        BatchBuilder::finish(self)
    }
}

impl RowBuffer for TableBatchBuilder {
    fn is_empty(&self) -> bool {
        TableBatchBuilder::is_empty(self)
    }
    fn holds_share(&self, parts: usize) -> bool {
        TableBatchBuilder::holds_share(self, parts)
    }
    fn finish(&mut self) -> Result<RecordBatch> {
        TableBatchBuilder::finish(self)
    }
}

/// The one collector a scan fills: `messages` rows, typed-table rows or decoded rows.
pub(crate) enum Collector {
    Messages(BatchCollector<BatchBuilder>),
    Rows(BatchCollector<TableBatchBuilder>),
    Decoded(BatchCollector<DecodedBatchBuilder>),
}

impl Collector {
    /// The collector of `plan`'s target for the file `name` of `format`
    /// (`cache_key` names the file for the decoders' caches).
    pub(crate) fn new(
        plan: &Arc<ScanPlan>,
        format: &Arc<dyn FormatReader>,
        name: &str,
        cache_key: String,
    ) -> Result<Self> {
        Ok(match &plan.target {
            ScanTarget::Table(spec) => Collector::Rows(BatchCollector::new(
                plan,
                TableBatchBuilder::new(
                    Arc::clone(&plan.read_schema),
                    &spec.def,
                    name.into(),
                    plan.batch_rows,
                )?,
            )),
            ScanTarget::Decoded(spec) => Collector::Decoded(BatchCollector::new(
                plan,
                DecodedBatchBuilder::new(
                    Arc::clone(spec),
                    Arc::clone(&plan.read_schema),
                    Arc::clone(format),
                    cache_key,
                    name.into(),
                    plan.batch_rows,
                    plan.batch_bytes,
                )?,
            )),
            ScanTarget::Messages => Collector::Messages(BatchCollector::new(
                plan,
                BatchBuilder::new(
                    Arc::clone(&plan.read_schema),
                    name.into(),
                    format.extra_columns(),
                    plan.batch_rows,
                    plan.batch_bytes,
                )?,
            )),
        })
    }

    /// Reads one chunk into this collector.
    pub(crate) fn read_chunk(
        &mut self,
        format: &dyn FormatReader,
        file: &dyn logsql_readers::io::ReadAt,
        summary: &logsql_readers::model::Summary,
        chunk: &ChunkMeta,
        plan: &ScanPlan,
    ) -> logsql_readers::Result<ChunkRead> {
        match self {
            Collector::Messages(s) => format.read_chunk(file, summary, chunk, &plan.selection, s),
            Collector::Decoded(s) => format.read_chunk(file, summary, chunk, &plan.selection, s),
            Collector::Rows(s) => {
                let spec = plan.target.table().expect("a typed-table scan has a table");
                spec.table.read_chunk(
                    file,
                    summary,
                    chunk,
                    spec.arg.as_deref(),
                    &plan.selection,
                    s,
                )
            }
        }
    }

    /// The error a collector met while taking rows, if any.
    pub(crate) fn take_error(&mut self) -> Option<DataFusionError> {
        match self {
            Collector::Messages(s) => s.error.take(),
            Collector::Rows(s) => s.error.take(),
            Collector::Decoded(s) => s.error.take(),
        }
    }

    pub(crate) fn end_chunk(&mut self, bounds: (i64, i64)) -> Result<Option<i64>> {
        match self {
            Collector::Messages(s) => s.end_chunk(bounds),
            Collector::Rows(s) => s.end_chunk(bounds),
            Collector::Decoded(s) => s.end_chunk(bounds),
        }
    }

    /// Whether the buffered rows are worth sending at the end of a chunk.
    pub(crate) fn is_quarter_full(&self) -> bool {
        match self {
            Collector::Messages(s) => s.is_quarter_full(),
            Collector::Rows(s) => s.is_quarter_full(),
            Collector::Decoded(s) => s.is_quarter_full(),
        }
    }

    pub(crate) fn flush(&mut self) -> Result<bool> {
        match self {
            Collector::Messages(s) => s.flush(),
            Collector::Rows(s) => s.flush(),
            Collector::Decoded(s) => s.flush(),
        }
    }

    pub(crate) fn done(&self) -> bool {
        match self {
            Collector::Messages(s) => s.done(),
            Collector::Rows(s) => s.done(),
            Collector::Decoded(s) => s.done(),
        }
    }

    /// The batches made since the last call, ready for the consumer.
    pub(crate) fn take_batches(&mut self) -> Vec<RecordBatch> {
        match self {
            Collector::Messages(s) => std::mem::take(&mut s.out),
            Collector::Rows(s) => std::mem::take(&mut s.out),
            Collector::Decoded(s) => std::mem::take(&mut s.out),
        }
    }
}

/// The collector of a scan (messages or typed rows): builds, filters and
/// projects batches, which wait in `out` for the consumer.
pub(crate) struct BatchCollector<B> {
    plan: Arc<ScanPlan>,
    builder: B,
    /// Batches made and not yet taken ([`Collector::take_batches`]).
    out: Vec<RecordBatch>,
    remaining: Option<usize>,
    pub(crate) error: Option<DataFusionError>,
    /// In a scan in declared time order: the current chunk's rows, held until
    /// the chunk ends.
    order: Option<ChunkOrder>,
}

impl<B: RowBuffer> BatchCollector<B> {
    fn new(plan: &Arc<ScanPlan>, builder: B) -> Self {
        Self {
            plan: Arc::clone(plan),
            builder,
            out: Vec::new(),
            remaining: plan.limit,
            error: None,
            order: plan.time_order.map(ChunkOrder::new),
        }
    }

    /// Whether the scan's `LIMIT` is reached.
    fn done(&self) -> bool {
        self.remaining == Some(0)
    }

    /// Whether the buffered rows are worth sending at the end of a chunk
    /// ([`RowBuffer::is_quarter_full`]).
    fn is_quarter_full(&self) -> bool {
        self.builder.is_quarter_full()
    }

    /// Filters and projects the buffered rows and hands them out (in a scan
    /// in time order: holds them until the chunk ends). Returns false when
    /// the limit is reached.
    pub(crate) fn flush(&mut self) -> Result<bool> {
        if self.builder.is_empty() {
            return Ok(!self.done());
        }
        let batch = self.builder.finish()?;
        match &mut self.order {
            Some(order) => {
                order.push(batch);
                Ok(!self.done())
            }
            None => self.send(batch),
        }
    }

    /// Ends a chunk of a scan in time order: sends its rows sorted by
    /// `log_time`; returns the first time outside the chunk's bounds, if any.
    fn end_chunk(&mut self, bounds: (i64, i64)) -> Result<Option<i64>> {
        let Some(order) = self.order.as_mut() else {
            return Ok(None);
        };
        if !self.builder.is_empty() {
            order.push(self.builder.finish()?);
        }
        let (batches, outside) = order.finish(bounds, self.plan.batch_rows)?;
        for batch in batches {
            if !self.send(batch)? {
                break;
            }
        }
        Ok(outside)
    }

    /// Filters and projects `batch` and hands it out. Returns false when the
    /// limit is reached.
    fn send(&mut self, batch: RecordBatch) -> Result<bool> {
        let batch = match &self.plan.predicate {
            Some(p) => {
                let mask = p.evaluate(&batch)?.into_array(batch.num_rows())?;
                filter_record_batch(&batch, as_boolean_array(&mask)?)?
            }
            None => batch,
        };
        let mut batch = batch.project(&self.plan.output)?;
        if let Some(rem) = self.remaining.as_mut() {
            if batch.num_rows() > *rem {
                batch = batch.slice(0, *rem);
            }
            *rem -= batch.num_rows();
        }
        if batch.num_rows() > 0 {
            self.out.push(batch);
        }
        Ok(!self.done())
    }

    /// Flushes when the buffer is full; the flow the reader should follow.
    fn after_append(&mut self) -> Flow {
        if self.builder.is_full() {
            match self.flush() {
                Ok(true) => {}
                Ok(false) => return Flow::Stop,
                Err(e) => {
                    self.error = Some(e);
                    return Flow::Stop;
                }
            }
        }
        Flow::Continue
    }
}

/// The error for a payload over the scan's `logsql.max_message_bytes` (at
/// most 2^31 - 1, the longest value an Arrow view addresses), if `msg`'s is.
fn payload_over_cap(plan: &ScanPlan, file: &str, msg: &Message<'_>) -> Option<DataFusionError> {
    let cap = plan.selection.limits.message_cap();
    let len = msg.data.len() as u64;
    (len > cap).then(|| {
        DataFusionError::Execution(format!(
            "{file}: the message on {} at log_time {} holds {len} payload bytes, over the \
             {cap}-byte limit (logsql.max_message_bytes; at most 2147483647)",
            msg.channel.topic, msg.log_time
        ))
    })
}

impl logsql_readers::model::MessageReceiver for BatchCollector<BatchBuilder> {
    fn message(&mut self, msg: Message<'_>) -> Flow {
        if let Some(e) = payload_over_cap(&self.plan, self.builder.file(), &msg) {
            self.error = Some(e);
            return Flow::Stop;
        }
        if let Err(e) = self.builder.append(&msg) {
            self.error = Some(e);
            return Flow::Stop;
        }
        self.after_append()
    }
}

impl RowBuffer for DecodedBatchBuilder {
    fn is_empty(&self) -> bool {
        DecodedBatchBuilder::is_empty(self)
    }
    fn holds_share(&self, parts: usize) -> bool {
        DecodedBatchBuilder::holds_share(self, parts)
    }
    fn finish(&mut self) -> Result<RecordBatch> {
        DecodedBatchBuilder::finish(self)
    }
}

impl logsql_readers::model::MessageReceiver for BatchCollector<DecodedBatchBuilder> {
    fn message(&mut self, msg: Message<'_>) -> Flow {
        if let Some(e) = payload_over_cap(&self.plan, self.builder.file(), &msg) {
            self.error = Some(e);
            return Flow::Stop;
        }
        if let Err(e) = self.builder.append(&msg) {
            self.error = Some(e);
            return Flow::Stop;
        }
        self.after_append()
    }
}

impl RowReceiver for BatchCollector<TableBatchBuilder> {
    fn row(&mut self, cells: &[Value<'_>]) -> Flow {
        self.builder.append(cells);
        self.after_append()
    }
}

#[cfg(test)]
mod tests {
    use super::dealt_position;

    /// The chunks each of `parts` equal byte ranges of a `size`-byte file
    /// reads, by their dealt positions.
    fn dealt(n: usize, parts: u64, size: u64) -> Vec<Vec<usize>> {
        let step = size.div_ceil(parts);
        (0..parts)
            .map(|p| {
                let range = p * step..((p + 1) * step).min(size);
                (0..n)
                    .filter(|&i| range.contains(&dealt_position(i, n, size)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn chunks_are_dealt_out_in_turn_and_each_range_keeps_file_order() {
        assert_eq!(dealt(8, 2, 1000), [vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
        assert_eq!(
            dealt(8, 4, 1000),
            [vec![0, 4], vec![2, 6], vec![1, 5], vec![3, 7]]
        );
        // Not a power of two: every chunk once, the halves within one.
        let halves = dealt(5, 2, 3_331_829);
        assert_eq!(halves, [vec![0, 2, 4], vec![1, 3]]);
        for (n, parts, size) in [(1, 1, 10), (3, 16, 7), (1000, 3, 1 << 40), (37, 5, 999)] {
            let mut all: Vec<usize> = dealt(n, parts, size).concat();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..n).collect::<Vec<_>>(),
                "{n} chunks, {parts} ranges"
            );
        }
        assert_eq!(dealt_position(0, 1, 100), 0);
        assert_eq!(dealt_position(3, 4, 0), 0);
    }
}
