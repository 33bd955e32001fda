//! The scan loop shared by every format: one file (or one byte range of it),
//! chunk selection, reading, exact filtering, batching and metrics.
//!
//! It runs on a blocking thread and hands batches over through a `Handoff`
//! (a bounded channel), so at most a couple of batches per partition are in
//! memory, and a consumer that stops (a satisfied `LIMIT`) stops the reading.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::cast::as_boolean_array;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column as ColumnExpr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_optimizer::pruning::PruningPredicate;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};

use super::batch::BatchBuilder;
use super::damage::{DamageLog, report};
use super::decoded_batch::DecodedBatchBuilder;
use super::error::df_err;
use super::handoff::Handoff;
use super::newest_first::{self, RuntimePruning};
use super::options::{LogsqlOptions, OnError, VerifyChecksums};
use super::predicate::{self, ChunkStatistics};
use super::summary_rows;
use super::table_batch::TableBatchBuilder;
use super::target::ScanTarget;
use super::time_order::{self, ChunkOrder};
use crate::storage::counting::CountingReader;
use crate::storage::digest::DigestingReader;
use crate::storage::object_io::FileLocation;
use crate::storage::summary_cache::{self, SummaryCache};
use logsql_readers::formats::FormatReader;
use logsql_readers::model::{ChunkMeta, ChunkRead, Flow, Message, Selection};
use logsql_readers::table::{RowSink, Value};

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
    /// Rows answered from the file's stated per-channel counts, without
    /// reading a chunk ([`super::summary_rows`]).
    pub messages_from_summary: Count,
    /// File opens whose summary the session's file-metadata cache held.
    pub summary_cache_hits: Count,
    /// File opens that read the file's summary (then cached).
    pub summary_cache_misses: Count,
    /// Chunks not read because a filter set while the query ran (a TopK's
    /// bound, see [`super::newest_first`]) ruled them out.
    pub chunks_pruned_at_run_time: Count,
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
            messages_from_summary: counter("messages_from_summary"),
            summary_cache_hits: counter("summary_cache_hits"),
            summary_cache_misses: counter("summary_cache_misses"),
            chunks_pruned_at_run_time: counter("chunks_pruned_at_run_time"),
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
            newest_first: false,
            runtime_filters: Vec::new(),
            file_schema: Arc::clone(file_schema),
        })
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

/// Scans one file (or the chunks of it that start inside `range`), handing
/// batches to `handoff`. Blocks: runs on a blocking thread.
pub(crate) fn scan_file(
    plan: &ScanPlan,
    loc: &FileLocation,
    range: Option<Range<u64>>,
    metrics: &ScanMetrics,
    handoff: Handoff<'_>,
) {
    let result = scan_file_inner(plan, loc, range, metrics, handoff);
    if let Err(e) = result {
        match &plan.damage {
            Some(log) => log.defer(e),
            None => {
                handoff.send(Err(e));
            }
        }
    }
}

/// The position in `0..size` that decides which byte range reads chunk `i`
/// of `n` in a scan in declared time order: the centre of slot `i`'s
/// bit-reversal among `2^ceil(log2 n)` equal slots of the file. Consecutive
/// chunks land in different halves (quarters, ...) of the file, so byte
/// ranges that split a file evenly deal its chunks out in turn: each
/// partition still reads its chunks in file (and time) order, and an
/// order-preserving merge of the partitions draws on all of them instead of
/// draining the first half of the file while the second waits.
fn dealt_position(i: usize, n: usize, size: u64) -> u64 {
    if n <= 1 || size == 0 {
        return 0;
    }
    let bits = usize::BITS - (n - 1).leading_zeros();
    let slot = (i as u64).reverse_bits() >> (u64::BITS - bits);
    ((u128::from(2 * slot + 1) * u128::from(size)) >> (bits + 1)) as u64
}

fn scan_file_inner(
    plan: &ScanPlan,
    loc: &FileLocation,
    range: Option<Range<u64>>,
    metrics: &ScanMetrics,
    handoff: Handoff<'_>,
) -> Result<()> {
    let name = loc.display_name();
    let raw = loc.open().map_err(df_err)?;
    let file = CountingReader::new(raw.as_ref());
    let owns_start = range.as_ref().is_none_or(|r| r.start == 0);
    let loaded = summary_cache::get_or_load(
        plan.summaries.as_deref(),
        &loc.store_id(),
        &loc.meta,
        plan.format.as_ref(),
        &file,
    );
    let cached = match loaded {
        Ok((cached, hit)) => {
            let counter = match hit {
                true => &metrics.summary_cache_hits,
                false => &metrics.summary_cache_misses,
            };
            counter.add(1);
            cached
        }
        // A file too damaged to have a summary (or a log file's name over
        // bytes no format recognises) has no readable message: the policy
        // decides (once per file, by the partition owning its start).
        Err(e) if e.is_unreadable() => {
            if owns_start {
                report(plan.on_error, e, plan.damage.as_deref())?;
            }
            return Ok(());
        }
        Err(e) => return Err(df_err(e)),
    };
    let summary = &cached.summary;
    // Which chunks this byte range reads: those whose offset it holds, or,
    // in declared time order, those whose dealt position it holds
    // ([`dealt_position`]), so that every partition holds chunks from the
    // whole span and a merge of the partitions keeps them all busy.
    let dealt = plan.time_order.is_some();
    let n = summary.chunks.len();
    let owned: Vec<bool> = summary
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            range.as_ref().is_none_or(|r| {
                r.contains(&match dealt {
                    true => dealt_position(i, n, loc.meta.size),
                    false => c.offset,
                })
            })
        })
        .collect();
    let in_range: Vec<&ChunkMeta> = summary
        .chunks
        .iter()
        .zip(&owned)
        .filter(|(_, o)| **o)
        .map(|(c, _)| c)
        .collect();
    metrics.chunks_total.add(in_range.len());
    // Channels of the selected topics, to skip chunks that list none of them.
    let wanted_channels: Option<HashSet<u64>> = plan.selection.topics.as_ref().map(|topics| {
        summary
            .channels
            .values()
            .filter(|c| topics.contains(&c.topic))
            .map(|c| c.id)
            .collect()
    });
    // Pruning by the summary: every chunk of the file against the predicate
    // (time bounds, topics). A file with none of the selected topics, or none
    // of whose chunks can match, is pruned whole: it reads nothing.
    let keep_all: Vec<bool> = match &plan.pruning {
        Some(p) => {
            let all: Vec<&ChunkMeta> = summary.chunks.iter().collect();
            p.prune(&ChunkStatistics::new(all, &summary.channels, &name))
                .unwrap_or_else(|_| vec![true; summary.chunks.len()])
        }
        None => vec![true; summary.chunks.len()],
    };
    // The summary's channel list is trusted to be complete only for an
    // undamaged file whose chunks list no channel it lacks.
    let channels_complete = summary.damage.is_none()
        && !summary.channels.is_empty()
        && summary.chunks.iter().all(|c| {
            c.channels
                .as_ref()
                .is_none_or(|ids| ids.iter().all(|id| summary.channels.contains_key(id)))
        });
    let file_pruned = (channels_complete
        && wanted_channels.as_ref().is_some_and(HashSet::is_empty))
        || (!keep_all.is_empty() && keep_all.iter().all(|k| !k));
    if owns_start {
        metrics.files_total.add(1);
        metrics.files_pruned.add(usize::from(file_pruned));
    }
    let keep: Vec<bool> = summary
        .chunks
        .iter()
        .zip(&keep_all)
        .zip(&owned)
        .filter(|(_, o)| **o)
        .map(|((_, k), _)| *k && !file_pruned)
        .collect();

    let format = &cached.format;
    let mut sink = match &plan.target {
        ScanTarget::Table(spec) => Sink::Rows(BatchSink::new(
            plan,
            TableBatchBuilder::new(
                Arc::clone(&plan.read_schema),
                &spec.def,
                name.as_str().into(),
                plan.batch_rows,
            )?,
            handoff,
        )),
        ScanTarget::Decoded(spec) => Sink::Decoded(BatchSink::new(
            plan,
            DecodedBatchBuilder::new(
                Arc::clone(spec),
                Arc::clone(&plan.read_schema),
                Arc::clone(format),
                loc.cache_key(),
                name.as_str().into(),
                plan.batch_rows,
                plan.batch_bytes,
            )?,
            handoff,
        )),
        ScanTarget::Messages => Sink::Messages(BatchSink::new(
            plan,
            BatchBuilder::new(
                Arc::clone(&plan.read_schema),
                name.as_str().into(),
                format.extra_columns(),
                plan.batch_rows,
                plan.batch_bytes,
            )?,
            handoff,
        )),
    };
    let mut outcome = Ok(());
    let whole_file_table = plan.target.table().filter(|t| !t.def.per_chunk);
    if let (Some(spec), Sink::Rows(sink)) = (whole_file_table, &mut sink) {
        if owns_start {
            let read = spec
                .table
                .read_file(&file, summary, spec.arg.as_deref(), sink);
            metrics.bytes_read.add(file.take_count() as usize);
            if let Some(e) = sink.error.take() {
                return Err(e);
            }
            if let Err(e) = read {
                outcome = report(plan.on_error, e, plan.damage.as_deref());
            }
            sink.flush()?;
        }
        outcome?;
        return Ok(());
    }
    // A scan that reads every chunk of the whole file verifies the file's
    // whole-file checksum in the same pass (`verify_checksums = 'auto'`): the
    // partition owning the file's start feeds the digest with the chunks it
    // reads and, when the file is split into byte ranges, reads the bytes of
    // the other ranges once more for the digest (`bytes_verified`), since a
    // digest is fed in file order. The other partitions read their chunks
    // meanwhile.
    let full_pass = plan.verify == VerifyChecksums::Auto
        && owns_start
        && plan.selection.payload
        && plan.limit.is_none()
        && plan.target.table().is_none()
        && wanted_channels.is_none()
        && summary.damage.is_none()
        && !file_pruned
        && keep_all.iter().all(|k| *k)
        // The digest is fed in file order, from every chunk.
        && !plan.newest_first
        && plan.runtime_filters.is_empty()
        && !cached.is_verified();
    let digest = full_pass
        .then(|| format.file_digest(&file, summary))
        .flatten()
        .map(|d| DigestingReader::new(&file, raw.as_ref(), d, &metrics.bytes_verified));
    let reader: &dyn logsql_readers::io::ReadAt = match &digest {
        Some(d) => d,
        None => &file,
    };
    // Only per-channel columns, and exact per-channel counts in the summary:
    // the partition owning the file's start emits the rows, no chunk is read.
    let from_summary = match &mut sink {
        Sink::Messages(s) if summary_rows::columns_per_channel(&plan.read_schema) => {
            summary_rows::exact_counts(summary).map(|counts| (s, counts))
        }
        _ => None,
    };
    let answered = from_summary.is_some();
    if let Some((s, counts)) = from_summary
        && owns_start
        && !file_pruned
    {
        let rows = summary_rows::emit(summary, counts, wanted_channels.as_ref(), s);
        metrics.messages_from_summary.add(rows as usize);
        if let Some(e) = s.error.take() {
            return Err(e);
        }
    }
    let chunks: Vec<&ChunkMeta> = in_range
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k && !answered)
        .map(|(c, _)| *c)
        .collect();
    let mut runtime = RuntimePruning::new(&plan.runtime_filters, &plan.file_schema);
    for chunk in newest_first::read_order(chunks, plan.newest_first) {
        if let (Some(wanted), Some(listed)) = (&wanted_channels, &chunk.channels)
            && !listed.iter().any(|c| wanted.contains(c))
        {
            continue;
        }
        // A chunk the index shows without messages (MCAP's first chunk of
        // schema and channel records) is not read for messages.
        if plan.target.table().is_none() && time_order::holds_no_message(summary, chunk) {
            continue;
        }
        if !runtime.is_empty() && !runtime.admits(chunk, summary, &name) {
            metrics.chunks_pruned_at_run_time.add(1);
            continue;
        }
        let read = sink.read_chunk(format.as_ref(), reader, summary, chunk, plan);
        metrics.bytes_read.add(file.take_count() as usize);
        // Counted before the rows are sent: a consumer that has what it
        // needs may end the query (and print the metrics) at once.
        match &read {
            Ok(r) => {
                metrics.chunks_read.add(usize::from(!r.skipped));
                metrics
                    .bytes_decompressed
                    .add(r.bytes_decompressed as usize);
                metrics.messages_read.add(r.messages as usize);
            }
            Err(_) => metrics.chunks_read.add(1),
        }
        if let Some(e) = sink.take_error() {
            return Err(e);
        }
        // A scan in time order sends the chunk's rows now, sorted; a message
        // outside the chunk's stated bounds breaks the declared order.
        let bounds = time_order::chunk_bounds(summary, chunk).unwrap_or((i64::MIN, i64::MAX));
        if let Some(time) = sink.end_chunk(bounds)? {
            let e = time_order::out_of_bounds(&name, format.name(), chunk, bounds, time);
            if let Err(e) = report(plan.on_error, e, plan.damage.as_deref()) {
                match &plan.damage {
                    Some(log) => log.defer(e),
                    None => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
        }
        match read {
            Ok(r) => {
                // Under a LIMIT, check after every chunk whether enough rows
                // passed; with runtime filters, send each chunk's rows at once
                // so that their operators tighten them before the next chunk.
                // Otherwise a batch a quarter full ends with the chunk: the
                // next chunk is then read into the buffers this batch frees
                // once consumed, rather than into new ones.
                let send = plan.limit.is_some() || !runtime.is_empty() || sink.is_quarter_full();
                let flushed = send && !sink.flush()?;
                if r.stopped || flushed || sink.done() {
                    break;
                }
            }
            Err(e) => {
                if let Err(e) = report(plan.on_error, e, plan.damage.as_deref()) {
                    match &plan.damage {
                        // The query fails at its end: the chunks after this
                        // one are readable and still delivered.
                        Some(log) => log.defer(e),
                        None => {
                            outcome = Err(e);
                            break;
                        }
                    }
                }
            }
        }
    }
    metrics.bytes_read.add(file.take_count() as usize);
    sink.flush()?;
    let done = sink.done();
    outcome?;
    if owns_start && !done {
        if let Some(damage) = &summary.damage {
            report(plan.on_error, damage.clone(), plan.damage.as_deref())?;
        }
        let verified =
            match digest {
                Some(d) => d.finish().map(|outcome| {
                    let mismatch = outcome.err();
                    cached.record_verification(mismatch.clone());
                    mismatch
                }),
                None if plan.verify == VerifyChecksums::Always => Some(
                    summary_cache::verification(&cached, raw.as_ref(), &metrics.bytes_verified),
                ),
                None => None,
            };
        if let Some(Some(e)) = verified {
            report(plan.on_error, e, plan.damage.as_deref())?;
        }
    }
    Ok(())
}

/// What a [`BatchSink`] buffers rows in.
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

/// The one sink a scan fills: `messages` rows, typed-table rows or decoded rows.
enum Sink<'a> {
    Messages(BatchSink<'a, BatchBuilder>),
    Rows(BatchSink<'a, TableBatchBuilder>),
    Decoded(BatchSink<'a, DecodedBatchBuilder>),
}

impl Sink<'_> {
    /// Reads one chunk into this sink.
    fn read_chunk(
        &mut self,
        format: &dyn FormatReader,
        file: &dyn logsql_readers::io::ReadAt,
        summary: &logsql_readers::model::Summary,
        chunk: &ChunkMeta,
        plan: &ScanPlan,
    ) -> logsql_readers::Result<ChunkRead> {
        match self {
            Sink::Messages(s) => format.read_chunk(file, summary, chunk, &plan.selection, s),
            Sink::Decoded(s) => format.read_chunk(file, summary, chunk, &plan.selection, s),
            Sink::Rows(s) => {
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

    /// The error a sink met while taking rows, if any.
    fn take_error(&mut self) -> Option<DataFusionError> {
        match self {
            Sink::Messages(s) => s.error.take(),
            Sink::Rows(s) => s.error.take(),
            Sink::Decoded(s) => s.error.take(),
        }
    }

    fn end_chunk(&mut self, bounds: (i64, i64)) -> Result<Option<i64>> {
        match self {
            Sink::Messages(s) => s.end_chunk(bounds),
            Sink::Rows(s) => s.end_chunk(bounds),
            Sink::Decoded(s) => s.end_chunk(bounds),
        }
    }

    /// Whether the buffered rows are worth sending at the end of a chunk.
    fn is_quarter_full(&self) -> bool {
        match self {
            Sink::Messages(s) => s.is_quarter_full(),
            Sink::Rows(s) => s.is_quarter_full(),
            Sink::Decoded(s) => s.is_quarter_full(),
        }
    }

    fn flush(&mut self) -> Result<bool> {
        match self {
            Sink::Messages(s) => s.flush(),
            Sink::Rows(s) => s.flush(),
            Sink::Decoded(s) => s.flush(),
        }
    }

    fn done(&self) -> bool {
        match self {
            Sink::Messages(s) => s.done(),
            Sink::Rows(s) => s.done(),
            Sink::Decoded(s) => s.done(),
        }
    }
}

/// The sink of a scan (messages or typed rows): builds, filters and sends batches.
struct BatchSink<'a, B> {
    plan: &'a ScanPlan,
    builder: B,
    handoff: Handoff<'a>,
    remaining: Option<usize>,
    error: Option<DataFusionError>,
    /// In a scan in declared time order: the current chunk's rows, held until
    /// the chunk ends.
    order: Option<ChunkOrder>,
}

impl<'a, B: RowBuffer> BatchSink<'a, B> {
    fn new(plan: &'a ScanPlan, builder: B, handoff: Handoff<'a>) -> Self {
        Self {
            plan,
            builder,
            handoff,
            remaining: plan.limit,
            error: None,
            order: plan.time_order.map(ChunkOrder::new),
        }
    }

    fn done(&self) -> bool {
        self.remaining == Some(0) || self.handoff.is_closed()
    }

    /// Whether the buffered rows are worth sending at the end of a chunk
    /// ([`RowBuffer::is_quarter_full`]).
    fn is_quarter_full(&self) -> bool {
        self.builder.is_quarter_full()
    }

    /// Filters and projects the buffered rows and sends them (in a scan in
    /// time order: holds them until the chunk ends). Returns false when the
    /// consumer is gone or the limit is reached.
    fn flush(&mut self) -> Result<bool> {
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

    /// Filters and projects `batch` and sends it. Returns false when the
    /// consumer is gone or the limit is reached.
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
        if batch.num_rows() > 0 && !self.handoff.send(Ok(batch)) {
            return Ok(false);
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

impl logsql_readers::model::MessageSink for BatchSink<'_, BatchBuilder> {
    fn message(&mut self, msg: Message<'_>) -> Flow {
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

impl logsql_readers::model::MessageSink for BatchSink<'_, DecodedBatchBuilder> {
    fn message(&mut self, msg: Message<'_>) -> Flow {
        if let Err(e) = self.builder.append(&msg) {
            self.error = Some(e);
            return Flow::Stop;
        }
        self.after_append()
    }
}

impl RowSink for BatchSink<'_, TableBatchBuilder> {
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
