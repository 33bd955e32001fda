//! The DataFusion `FileSource` and `FileOpener` of every log format.
//!
//! DataFusion gives the source its projection and, through the physical filter
//! pushdown rule, the query's filters. Filters over file columns are evaluated
//! exactly by the scan (and so reported as pushed down, which lets `LIMIT` reach
//! the scan); all of them also prune chunks through the file's index.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileOpenFuture, FileOpener, FileScanConfig, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::ObjectStore;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::{
    EquivalenceProperties, PhysicalExpr, PhysicalSortExpr, conjunction,
};
use datafusion::physical_plan::SortOrderPushdownResult;
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, apply_expression_roots};
use futures::StreamExt;

use crate::catalog::CatalogSnapshot;
use crate::scanner::chunk_choice::choose_chunks;
use crate::scanner::damage::DamageLog;
use crate::scanner::file_scan::{FileScan, Opened};
use crate::scanner::options::LogsqlOptions;
use crate::scanner::predicate::{is_exact_pushable, is_runtime_prunable};
use crate::scanner::scan::{ScanMetrics, ScanPlan, ScanRequest};
use crate::scanner::shared_chunks::SharedChunkRegistry;
use crate::scanner::target::ScanTarget;
use crate::storage::object_io::FileLocation;
use crate::storage::summary_cache::SummaryCache;
use logsql_readers::formats::FormatReader;

/// The file source of a log-file table (one format, or auto-detection per file).
///
/// Everything a scan needs at execution time is a field here (the distributed
/// plan codec, `crate::distributed::codec`, carries each one to workers).
#[derive(Clone)]
pub(crate) struct LogSource {
    pub(crate) format: Option<Arc<dyn FormatReader>>,
    table_schema: TableSchema,
    projection: SplitProjection,
    pub(crate) predicate: Option<Arc<dyn PhysicalExpr>>,
    metrics: ExecutionPlanMetricsSet,
    pub(crate) batch_size: usize,
    pub(crate) options: LogsqlOptions,
    /// What the scan reads: `messages`, a typed table or a decoded topic.
    pub(crate) target: ScanTarget,
    /// Listed files the table leaves out (see `LogFileFormat::with_skip`).
    pub(crate) skip: Arc<HashSet<ObjectPath>>,
    /// Where the scan records errors to report at the end of the query
    /// (set by the SQL surface's `DeferScanErrors` rule; not sent to distributed workers).
    damage: Option<Arc<DamageLog>>,
    /// The session's file-metadata cache the scan keeps summaries in (set at
    /// plan time by `LogFileFormat`, on workers by the codec; `None`: not cached).
    pub(crate) summaries: Option<SummaryCache>,
    /// The session's memory pool the scan's chunks count against.
    pub(crate) memory: Option<Arc<dyn MemoryPool>>,
    /// The session's files read by several scans at once (see
    /// [`crate::scanner::shared_chunks`]; set at plan time, on workers by the codec).
    pub(crate) shared: Option<Arc<SharedChunkRegistry>>,
    /// Whether chunks are read newest first: a `log_time DESC` sort was pushed
    /// here (see [`crate::scanner::newest_first`]; not sent to
    /// distributed workers, which read in file order: the sort above is kept).
    newest_first: bool,
    /// Filters set while the query runs (DataFusion's dynamic filters: a
    /// TopK's bound, a join's), kept to skip chunks; their operators still
    /// filter the rows. Not sent to distributed workers.
    runtime_filters: Vec<Arc<dyn PhysicalExpr>>,
    /// The catalog (`logsql.catalog`) a file is looked up in before it is
    /// opened (set at plan time; not sent to distributed workers, which open
    /// their files).
    catalog: Option<Arc<CatalogSnapshot>>,
}

impl LogSource {
    /// A source reading `format` (or detecting it per file when `None`).
    pub(crate) fn new(format: Option<Arc<dyn FormatReader>>, table_schema: TableSchema) -> Self {
        Self {
            format,
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            predicate: None,
            metrics: ExecutionPlanMetricsSet::new(),
            batch_size: 8192,
            options: LogsqlOptions::default(),
            target: ScanTarget::Messages,
            skip: Default::default(),
            damage: None,
            summaries: None,
            memory: None,
            shared: None,
            newest_first: false,
            runtime_filters: Vec::new(),
            catalog: None,
        }
    }

    /// The same source looking files up in `catalog` before opening them.
    pub(crate) fn with_catalog(self, catalog: Option<Arc<CatalogSnapshot>>) -> Self {
        Self { catalog, ..self }
    }

    /// The same source recording its errors in `log`, for the query's root to
    /// report once every row was delivered (see [`crate::scanner::damage`]).
    pub(crate) fn with_damage_log(&self, log: Arc<DamageLog>) -> Self {
        Self {
            damage: Some(log),
            ..self.clone()
        }
    }

    /// The same source leaving the files `skip` out.
    pub(crate) fn with_skip(self, skip: Arc<HashSet<ObjectPath>>) -> Self {
        Self { skip, ..self }
    }

    /// The same source keeping file summaries in `cache` (the session's
    /// runtime file-metadata cache, `CacheManager::get_file_metadata_cache`).
    pub(crate) fn with_summary_cache(&self, cache: SummaryCache) -> Self {
        Self {
            summaries: Some(cache),
            ..self.clone()
        }
    }

    /// The same source counting each chunk it decompresses against `pool`
    /// (the session's `RuntimeEnv::memory_pool`).
    pub(crate) fn with_memory_pool(self, pool: Arc<dyn MemoryPool>) -> Self {
        Self {
            memory: Some(pool),
            ..self
        }
    }

    /// The same source sharing decompressed chunks with the other scans of
    /// its files through `registry` (the session's, if it has one).
    pub(crate) fn with_shared_chunks(self, registry: Option<Arc<SharedChunkRegistry>>) -> Self {
        Self {
            shared: registry,
            ..self
        }
    }

    /// The same source reading `target` (a typed table, a decoded topic, or `messages`).
    pub(crate) fn with_target(self, target: ScanTarget) -> Self {
        Self { target, ..self }
    }

    /// The plan of a scan of this source under DataFusion's file scan `config`.
    pub(crate) fn scan_plan(&self, config: &FileScanConfig) -> Result<ScanPlan> {
        let file_schema = self.table_schema.file_schema();
        ScanPlan::new(ScanRequest {
            format: self.format.clone(),
            file_schema,
            output: &self.projection.file_indices,
            predicate: self.predicate.clone(),
            target: self.target.clone(),
            batch_rows: self.batch_size,
            options: &self.options,
            limit: config.limit,
            summaries: self.summaries.clone(),
            memory: self.memory.clone(),
        })?
        .with_damage_log(self.damage.clone())
        .with_shared_chunks(self.shared.clone())
        .with_time_order(
            !config.output_ordering.is_empty() && !self.newest_first,
            file_schema,
        )
        .map(|plan| plan.with_newest_first(self.newest_first, self.runtime_filters.clone()))
    }

    /// Whether the scan's projection holds `log_time` (only then can the
    /// plan above use an order on it: see [`crate::scanner::time_order`]).
    pub(crate) fn projects_log_time(&self) -> bool {
        let file_schema = self.table_schema.file_schema();
        file_schema
            .index_of(crate::scanner::schema::col::LOG_TIME)
            .is_ok_and(|i| self.projection.file_indices.contains(&i))
    }

    /// The same source with session options applied.
    pub(crate) fn with_options(&self, options: LogsqlOptions) -> Self {
        Self {
            options,
            ..self.clone()
        }
    }
}

impl FileSource for LogSource {
    fn create_file_opener(
        &self,
        store: Arc<dyn ObjectStore>,
        config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let file_schema = self.table_schema.file_schema();
        let plan = self.scan_plan(config)?;
        let opener = LogOpener {
            plan: Arc::new(plan),
            store,
            store_url: config.object_store_url.clone(),
            metrics: ScanMetrics::new(&self.metrics, partition),
            skip: Arc::clone(&self.skip),
            catalog: self.catalog.clone(),
        };
        ProjectionOpener::try_new(self.projection.clone(), Arc::new(opener), file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(Self {
            batch_size,
            ..self.clone()
        })
    }

    fn filter(&self) -> Option<Arc<dyn PhysicalExpr>> {
        self.predicate.clone()
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        match &self.target {
            ScanTarget::Table(t) => t.name(),
            ScanTarget::Decoded(_) => "read_topic",
            ScanTarget::Messages => self.format.as_ref().map_or("log", |f| f.name()),
        }
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        if !matches!(t, DisplayFormatType::Default | DisplayFormatType::Verbose) {
            return Ok(());
        }
        if let Some(p) = &self.predicate {
            write!(f, ", predicate={p}")?;
        }
        if self.newest_first {
            write!(f, ", chunk_order=newest_first")?;
        }
        if !self.runtime_filters.is_empty() {
            let filters: Vec<String> = self.runtime_filters.iter().map(|e| e.to_string()).collect();
            write!(f, ", run_time_pruning=[{}]", filters.join(", "))?;
        }
        Ok(())
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        let file_schema = self.table_schema.file_schema();
        let verdicts: Vec<PushedDown> = filters
            .iter()
            .map(|f| {
                if is_exact_pushable(f, file_schema) {
                    PushedDown::Yes
                } else {
                    PushedDown::No
                }
            })
            .collect();
        let accepted: Vec<Arc<dyn PhysicalExpr>> = filters
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| matches!(v, PushedDown::Yes))
            .map(|(f, _)| Arc::clone(f))
            .collect();
        // Runtime filters stay with their operators (`No`), and the scan
        // keeps a handle on them to skip chunks as they tighten.
        let runtime: Vec<Arc<dyn PhysicalExpr>> = filters
            .iter()
            .filter(|f| is_runtime_prunable(f, file_schema))
            .cloned()
            .collect();
        if accepted.is_empty() && runtime.is_empty() {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(
                verdicts,
            ));
        }
        let mut source = self.clone();
        source.runtime_filters.extend(runtime);
        if !accepted.is_empty() {
            source.predicate = Some(conjunction(self.predicate.iter().cloned().chain(accepted)));
        }
        Ok(
            FilterPushdownPropagation::with_parent_pushdown_result(verdicts)
                .with_updated_node(Arc::new(source) as Arc<dyn FileSource>),
        )
    }

    /// `log_time DESC` (first sort key) is taken inexactly: the scan reads
    /// its chunks newest first, and the sort above stays (see
    /// [`crate::scanner::newest_first`]). Typed tables keep their order.
    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
        _eq_properties: &EquivalenceProperties,
    ) -> Result<SortOrderPushdownResult<Arc<dyn FileSource>>> {
        let newest_first = order.first().is_some_and(|key| {
            key.options.descending
                && key
                    .expr
                    .downcast_ref::<Column>()
                    .is_some_and(|c| c.name() == crate::scanner::schema::col::LOG_TIME)
        });
        if !newest_first || self.target.table().is_some() {
            return Ok(SortOrderPushdownResult::Unsupported);
        }
        Ok(SortOrderPushdownResult::Inexact {
            inner: Arc::new(Self {
                newest_first: true,
                ..self.clone()
            }),
        })
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        source.projection = SplitProjection::new(
            self.table_schema.file_schema(),
            &source.projection.source.try_merge(projection)?,
        );
        Ok(Some(Arc::new(source)))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        if apply_expression_roots(self.projection.source.iter(), &mut *f)?
            == TreeNodeRecursion::Stop
        {
            return Ok(TreeNodeRecursion::Stop);
        }
        if let Some(p) = &self.predicate
            && f(p)? == TreeNodeRecursion::Stop
        {
            return Ok(TreeNodeRecursion::Stop);
        }
        apply_expression_roots(self.runtime_filters.iter(), f)
    }
}

/// Opens one file (or byte range) of a scan as a stream its consumer pulls
/// chunk by chunk ([`FileScan`]): opening reads the summary on the blocking
/// pool; each pull reads the next chunk into batches, on the consumer's task
/// for a local file (positioned reads, then CPU work), on the blocking pool
/// when reads block (an object store's range requests, SQLite). No chunk is
/// read before the batches of the one before are taken, so a satisfied
/// `LIMIT` or a cancelled query stops the reading.
///
/// This is a [`FileOpener`] with a stream per file rather than DataFusion's
/// morsel API (`FileSource::create_morselizer`): the projection of partition
/// columns and `input_file_name()` that [`ProjectionOpener`] applies per file
/// is offered to openers only (a morselizer would repeat it), and the file
/// stream polls an opener's stream as it does a morsel's.
struct LogOpener {
    plan: Arc<ScanPlan>,
    store: Arc<dyn ObjectStore>,
    store_url: ObjectStoreUrl,
    metrics: ScanMetrics,
    skip: Arc<HashSet<ObjectPath>>,
    catalog: Option<Arc<CatalogSnapshot>>,
}

impl LogOpener {
    /// Whether the catalog rules the file out unopened: it knows the file as
    /// it is now, and the scan's predicate and topics exclude every chunk of
    /// it (the same choice the file's own summary would make). Counted once
    /// per file, by the byte range owning its start.
    fn pruned_by_catalog(&self, loc: &FileLocation, range: Option<&std::ops::Range<u64>>) -> bool {
        let Some(catalog) = &self.catalog else {
            return false;
        };
        if self.plan.target.table().is_some() {
            return false;
        }
        let owns_start = range.is_none_or(|r| r.start == 0);
        let name = loc.display_name();
        let Some(entry) = catalog.entry(&name, &loc.meta, self.plan.format.as_ref()) else {
            if owns_start {
                self.metrics.files_unknown_to_catalog.add(1);
            }
            return false;
        };
        let choice = choose_chunks(&self.plan, &entry.summary, None, loc.meta.size, &name);
        // A recording without a message gives no row to any scan.
        let empty = entry.summary.message_count == Some(0)
            && entry
                .summary
                .chunks
                .iter()
                .all(|c| c.message_count == Some(0));
        let pruned = choice.file_pruned || empty;
        if !pruned {
            log::debug!("{name}: the catalog does not rule it out");
        }
        if pruned && owns_start {
            self.metrics.files_total.add(1);
            self.metrics.files_pruned.add(1);
            self.metrics.files_pruned_by_catalog.add(1);
        }
        pruned
    }
}

impl FileOpener for LogOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let companion = self.plan.format.as_ref().is_some_and(|f| {
            logsql_readers::formats::is_companion(f.as_ref(), file.object_meta.location.as_ref())
        });
        if self.skip.contains(&file.object_meta.location) || companion {
            return Ok(Box::pin(async { Ok(futures::stream::empty().boxed()) }));
        }
        let plan = Arc::clone(&self.plan);
        let loc = FileLocation::new(self.store_url.clone(), Arc::clone(&self.store), &file);
        let range = file
            .range
            .as_ref()
            .map(|r| r.start.max(0) as u64..r.end.max(0) as u64);
        if self.pruned_by_catalog(&loc, range.as_ref()) {
            return Ok(Box::pin(async { Ok(futures::stream::empty().boxed()) }));
        }
        let metrics = self.metrics.clone();
        Ok(Box::pin(async move {
            let name = loc.display_name();
            let opening = Arc::clone(&plan);
            let opened =
                blocking(&name, move || FileScan::open(opening, &loc, range, metrics)).await;
            let mut pull = Pull {
                plan,
                scan: None,
                ready: VecDeque::new(),
                error: None,
            };
            match opened {
                Ok(Opened::Scan(scan)) => pull.scan = Some(scan),
                Ok(Opened::Done(batches)) => pull.ready.extend(batches),
                Err(e) => pull.error = FileScan::route_error(&pull.plan, e),
            }
            Ok(futures::stream::unfold(pull, Pull::next).boxed())
        }))
    }
}

/// The state of one file's stream between pulls.
struct Pull {
    plan: Arc<ScanPlan>,
    /// The scan, until it ended.
    scan: Option<Box<FileScan>>,
    /// Batches read and not yet pulled.
    ready: VecDeque<RecordBatch>,
    /// The error that ends the stream once `ready` is empty.
    error: Option<DataFusionError>,
}

impl Pull {
    /// The next batch, reading the next chunk when none is ready.
    async fn next(mut self) -> Option<(Result<RecordBatch>, Self)> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                return Some((Ok(batch), self));
            }
            if let Some(e) = self.error.take() {
                return Some((Err(e), self));
            }
            let mut scan = self.scan.take()?;
            let (mut scan, step) = if scan.blocks() {
                let name = scan.name().to_string();
                match blocking(&name, move || {
                    let step = step(&mut scan);
                    Ok((scan, step))
                })
                .await
                {
                    Ok(done) => done,
                    Err(e) => {
                        self.error = Some(e);
                        continue;
                    }
                }
            } else {
                match std::panic::catch_unwind(AssertUnwindSafe(|| step(&mut scan))) {
                    Ok(step) => (scan, step),
                    Err(panic) => {
                        self.error = Some(panicked(scan.name(), panic.as_ref()));
                        continue;
                    }
                }
            };
            self.ready.extend(scan.take_batches());
            match step {
                Ok(true) => self.scan = Some(scan),
                Ok(false) => {}
                Err(e) => self.error = FileScan::route_error(&self.plan, e),
            }
        }
    }
}

/// One step of `scan`: the next chunk, or the end. `Ok(false)`: it ended.
fn step(scan: &mut FileScan) -> Result<bool> {
    if scan.read_next_chunk()? {
        return Ok(true);
    }
    scan.finish()?;
    Ok(false)
}

/// Runs `f`, which blocks, on the blocking pool; a panic in it becomes the
/// error of a scan of `file`.
async fn blocking<T: Send + 'static>(
    file: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => Err(panicked(file, panic.as_ref())),
            Err(e) => Err(DataFusionError::External(Box::new(e))),
        },
    }
}

/// The error of a scan of `file` that panicked with `panic`.
fn panicked(file: &str, panic: &(dyn std::any::Any + Send)) -> DataFusionError {
    let msg = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    DataFusionError::Internal(format!("logsql reader panicked on {file}: {msg}"))
}
