//! The scan of one file (or one byte range of it), as steps its consumer
//! pulls: [`FileScan::open`] reads the summary (through the session's cache)
//! and chooses the chunks ([`super::chunk_choice`]); each
//! [`FileScan::read_next_chunk`] reads one chunk and turns it into batches;
//! [`FileScan::finish`] hands out the rows held back and reports what the end
//! of the file decides (its damage, its whole-file checksum).
//!
//! The steps keep every guarantee of a scan: the pushdown metrics, `log_time`
//! order within each chunk, a `LIMIT` that stops the reading, the damage
//! policy (every readable row is delivered before an error), checksums on
//! the bytes read. Memory holds one chunk's rows, whatever the file's size.

use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};

use super::chunk_choice::choose_chunks;
use super::damage::report;
use super::error::df_err;
use super::newest_first::RuntimePruning;
use super::options::VerifyChecksums;
use super::scan::{Collector, ScanMetrics, ScanPlan};
use super::summary_rows;
use super::time_order;
use crate::storage::counting::CountingReader;
use crate::storage::digest::FileDigestFeed;
use crate::storage::object_io::FileLocation;
use crate::storage::summary_cache::{self, CachedSummary};
use logsql_readers::io::ReadAt;
use logsql_readers::model::ChunkMeta;
use logsql_readers::shared_chunks::{ChunkMemo, ChunkShare};

/// A file being scanned, between its steps.
pub(crate) struct FileScan {
    plan: Arc<ScanPlan>,
    name: String,
    metrics: ScanMetrics,
    /// The file, read with positioned reads (local) or range requests
    /// awaited on a blocking thread (object stores).
    raw: Box<dyn ReadAt>,
    /// Whether reads of `raw` block on the network or a library's own I/O,
    /// so every step that reads runs on the blocking pool.
    blocking: bool,
    cached: CachedSummary,
    /// Whether this byte range holds the file's start: it reports what
    /// concerns the whole file (its damage, its checksum, its pruning).
    owns_start: bool,
    collector: Collector,
    /// Positions in the summary's chunk list still to read, in read order.
    chunks: std::vec::IntoIter<usize>,
    runtime: RuntimePruning,
    /// The whole-file checksum fed by this full pass, if it verifies one.
    digest: Option<FileDigestFeed>,
    /// Set once the reading ends early (a `LIMIT` reached, a reader stopped).
    stopped: bool,
    /// The memory of the chunk being read and of its rows until they are
    /// pulled, counted against the session's pool (see [`ScanPlan::memory`]).
    memory: Option<MemoryReservation>,
    /// This scan's part in the file's shared chunks (see
    /// [`super::shared_chunks`]); dropped with the scan.
    share: Option<ChunkShare>,
}

/// What opening a file gave.
pub(crate) enum Opened {
    /// Chunks to read, step by step.
    Scan(Box<FileScan>),
    /// Everything already read (a whole-file table, rows answered by the
    /// summary, a pruned or unreadable file).
    Done(Vec<RecordBatch>),
}

impl FileScan {
    /// Opens `loc` (the chunks of it that start inside `range`) for `plan`:
    /// reads its summary, through the session's cache, and chooses its
    /// chunks. Blocks: runs on the blocking pool.
    pub(crate) fn open(
        plan: Arc<ScanPlan>,
        loc: &FileLocation,
        range: Option<Range<u64>>,
        metrics: ScanMetrics,
    ) -> Result<Opened> {
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
            &plan.selection.limits,
        );
        metrics.bytes_read.add(file.take_count() as usize);
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
                return Ok(Opened::Done(Vec::new()));
            }
            Err(e) => return Err(df_err(e)),
        };
        let summary = Arc::clone(&cached.summary);
        let format = Arc::clone(&cached.format);
        let choice = choose_chunks(&plan, &summary, range.as_ref(), loc.meta.size, &name);
        metrics.chunks_total.add(choice.in_range);
        if owns_start {
            metrics.files_total.add(1);
            metrics.files_pruned.add(usize::from(choice.file_pruned));
        }
        let mut collector = Collector::new(&plan, &format, &name, loc.cache_key())?;
        if let (Some(spec), Collector::Rows(rows)) = (plan.target.table(), &mut collector)
            && !spec.def.per_chunk
        {
            // A whole-file table: its rows come from the summary and the
            // file's index, read at once by the partition owning the start.
            if owns_start {
                let read = spec
                    .table
                    .read_file(&file, &summary, spec.arg.as_deref(), rows);
                metrics.bytes_read.add(file.take_count() as usize);
                if let Some(e) = rows.error.take() {
                    return Err(e);
                }
                let outcome = match read {
                    Err(e) => report(plan.on_error, e, plan.damage.as_deref()),
                    Ok(()) => Ok(()),
                };
                rows.flush()?;
                outcome?;
            }
            return Ok(Opened::Done(collector.take_batches()));
        }
        if choice.answered_by_summary {
            // Only per-channel columns, and exact per-channel counts in the
            // summary: the partition owning the file's start emits the rows.
            if let (Collector::Messages(s), Some(counts), true, false) = (
                &mut collector,
                summary_rows::exact_counts(&summary),
                owns_start,
                choice.file_pruned,
            ) {
                let rows = summary_rows::emit(&summary, counts, choice.wanted_channels.as_ref(), s);
                metrics.messages_from_summary.add(rows as usize);
                if let Some(e) = s.error.take() {
                    return Err(e);
                }
                s.flush()?;
            }
            return Ok(Opened::Done(collector.take_batches()));
        }
        // A scan that reads every chunk of the whole file verifies the file's
        // whole-file checksum in the same pass (`verify_checksums = 'auto'`):
        // the partition owning the file's start feeds the digest with the
        // chunks it reads and, when the file is split into byte ranges, reads
        // the bytes of the other ranges once more for the digest
        // (`bytes_verified`), since a digest is fed in file order.
        let full_pass = plan.verify == VerifyChecksums::Auto
            && owns_start
            && plan.selection.payload
            && plan.limit.is_none()
            && plan.target.table().is_none()
            && choice.wanted_channels.is_none()
            && summary.damage.is_none()
            && !choice.file_pruned
            && choice.keeps_every_chunk
            // The digest is fed in file order, from every chunk.
            && !plan.newest_first
            && plan.runtime_filters.is_empty()
            && !cached.is_verified();
        let digest = full_pass
            .then(|| format.file_digest(&file, &summary))
            .flatten()
            .map(|d| FileDigestFeed::new(d, &metrics.bytes_verified));
        metrics.bytes_read.add(file.take_count() as usize);
        let runtime = RuntimePruning::new(&plan.runtime_filters, &plan.file_schema);
        let blocking = !loc.local || format.reads_by_path();
        let share = plan
            .shared
            .as_ref()
            .filter(|_| plan.shared_limit > 0 && !choice.chunks.is_empty())
            .map(|registry| {
                let offsets = choice.chunks.iter().map(|&i| summary.chunks[i].offset);
                registry.join(loc.cache_key(), offsets, plan.shared_limit)
            });
        let memory = plan
            .memory
            .as_ref()
            .map(|pool| MemoryConsumer::new(format!("logsql scan of {name}")).register(pool));
        Ok(Opened::Scan(Box::new(Self {
            name,
            metrics,
            raw,
            blocking,
            cached,
            owns_start,
            collector,
            chunks: choice.chunks.into_iter(),
            runtime,
            digest,
            stopped: false,
            memory,
            share,
            plan,
        })))
    }

    /// Whether the steps that read must run on the blocking pool (an object
    /// store's range requests, SQLite's reads); a local file's chunks are
    /// read with positioned reads by the task that decodes them.
    pub(crate) fn blocks(&self) -> bool {
        self.blocking
    }

    /// The file's name, as errors show it.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Reads the next chunk to read, if any, into batches
    /// ([`FileScan::take_batches`]). `Ok(false)`: no chunk is left, or the
    /// reading stopped; [`FileScan::finish`] comes next.
    ///
    /// A damaged chunk goes to the damage policy: reported (the chunks after
    /// it are read) or the error that ends the scan, after the rows before
    /// the damage.
    pub(crate) fn read_next_chunk(&mut self) -> Result<bool> {
        let summary = Arc::clone(&self.cached.summary);
        let chunk = loop {
            if self.stopped || self.collector.done() {
                return Ok(false);
            }
            let Some(i) = self.chunks.next() else {
                return Ok(false);
            };
            let chunk = &summary.chunks[i];
            if !self.runtime.is_empty() && !self.runtime.admits(chunk, &summary, &self.name) {
                self.metrics.chunks_pruned_at_run_time.add(1);
                self.passed(chunk);
                continue;
            }
            break chunk;
        };
        self.reserve(chunk)?;
        let plan = Arc::clone(&self.plan);
        let format = Arc::clone(&self.cached.format);
        let shared = self.share.as_ref().map(|s| s as &dyn ChunkMemo);
        let file = CountingReader::new(self.raw.as_ref()).sharing(shared);
        let digesting = self
            .digest
            .as_ref()
            .map(|d| d.reader(&file, self.raw.as_ref()));
        let reader: &dyn ReadAt = match &digesting {
            Some(d) => d,
            None => &file,
        };
        let read = self
            .collector
            .read_chunk(format.as_ref(), reader, &summary, chunk, &plan);
        self.metrics.bytes_read.add(file.take_count() as usize);
        self.passed(chunk);
        match &read {
            Ok(r) => {
                self.metrics.chunks_read.add(usize::from(!r.skipped));
                self.metrics
                    .bytes_decompressed
                    .add(r.bytes_decompressed as usize);
                self.metrics.messages_read.add(r.messages as usize);
                if r.from_index {
                    self.metrics.messages_from_index.add(r.messages as usize);
                }
            }
            Err(_) => self.metrics.chunks_read.add(1),
        }
        if let Some(e) = self.collector.take_error() {
            return Err(e);
        }
        // A scan in time order hands the chunk's rows out now, sorted; a
        // message outside the chunk's stated bounds breaks the declared order.
        let bounds = time_order::chunk_bounds(&summary, chunk).unwrap_or((i64::MIN, i64::MAX));
        if let Some(time) = self.collector.end_chunk(bounds)? {
            let e = time_order::out_of_bounds(&self.name, format.name(), chunk, bounds, time);
            self.report_or_defer(e)?;
        }
        match read {
            Ok(r) => {
                // Under a LIMIT, check after every chunk whether enough rows
                // passed; with runtime filters, hand each chunk's rows out at
                // once so that their operators tighten them before the next
                // chunk. Otherwise a batch a quarter full ends with the
                // chunk: the next chunk is then read into the buffers this
                // batch frees once consumed, rather than into new ones.
                let send = plan.limit.is_some()
                    || !self.runtime.is_empty()
                    || self.collector.is_quarter_full();
                let flushed = send && !self.collector.flush()?;
                if r.stopped || flushed || self.collector.done() {
                    self.stopped = true;
                }
            }
            Err(e) => self.report_or_defer(e)?,
        }
        Ok(true)
    }

    /// This scan is done with `chunk`: the other scans of the file no longer
    /// keep its bytes for it.
    fn passed(&self, chunk: &ChunkMeta) {
        if let Some(share) = &self.share {
            share.passed(chunk.offset);
            self.metrics.chunks_shared.add(share.take_hits());
        }
    }

    /// Applies the damage policy to `e`: a warning, an error recorded for the
    /// end of the query (the rows after it are still delivered), or the
    /// error that ends this scan.
    fn report_or_defer(&mut self, e: logsql_readers::Error) -> Result<()> {
        let Err(e) = report(self.plan.on_error, e, self.plan.damage.as_deref()) else {
            return Ok(());
        };
        match &self.plan.damage {
            Some(log) => {
                log.defer(e);
                Ok(())
            }
            None => {
                // The rows before the damage go out first.
                self.collector.flush()?;
                self.stopped = true;
                Err(e)
            }
        }
    }

    /// Ends the scan: hands out the rows held back and, when the whole file
    /// was read, reports its damage and verifies its whole-file checksum
    /// (which may read the bytes this scan did not: under `blocks()`, run on
    /// the blocking pool).
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.collector.flush()?;
        if !self.owns_start || self.collector.done() {
            return Ok(());
        }
        if let Some(damage) = &self.cached.summary.damage {
            report(
                self.plan.on_error,
                damage.clone(),
                self.plan.damage.as_deref(),
            )?;
        }
        let verified = match self.digest.take() {
            Some(d) => d.finish(self.raw.as_ref()).map(|outcome| {
                let mismatch = outcome.err();
                self.cached.record_verification(mismatch.clone());
                mismatch
            }),
            None if self.plan.verify == VerifyChecksums::Always => {
                Some(summary_cache::verification(
                    &self.cached,
                    self.raw.as_ref(),
                    &self.metrics.bytes_verified,
                ))
            }
            None => None,
        };
        if let Some(Some(e)) = verified {
            report(self.plan.on_error, e, self.plan.damage.as_deref())?;
        }
        Ok(())
    }

    /// Counts `chunk` against the session's memory pool in place of the
    /// chunk before (whose rows have all been pulled: no chunk is read before
    /// then). The chunk's decompressed size is the estimate (its stored size
    /// when the index does not say); a pool that cannot give it fails the
    /// query naming the file, the chunk and the bytes asked for.
    fn reserve(&mut self, chunk: &ChunkMeta) -> Result<()> {
        let Some(reservation) = &mut self.memory else {
            return Ok(());
        };
        let bytes = chunk
            .uncompressed_size
            .unwrap_or(chunk.length)
            .max(chunk.compressed_size);
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        reservation.try_resize(bytes).map_err(|e| {
            DataFusionError::ResourcesExhausted(format!(
                "{}: the chunk at byte {} needs {bytes} bytes of memory: {}",
                self.name,
                chunk.offset,
                e.strip_backtrace()
            ))
        })
    }

    /// The batches made since the last call.
    pub(crate) fn take_batches(&mut self) -> Vec<RecordBatch> {
        self.collector.take_batches()
    }

    /// Where an error that ends a scan under `plan` goes: recorded for the
    /// end of the query (`None`, see [`super::damage`]), or returned to end
    /// the scan's stream. Memory the session's pool cannot give is not
    /// damage: it ends the query at once, whatever the damage policy.
    pub(crate) fn route_error(plan: &ScanPlan, e: DataFusionError) -> Option<DataFusionError> {
        if matches!(e, DataFusionError::ResourcesExhausted(_)) {
            return Some(e);
        }
        match &plan.damage {
            Some(log) => {
                log.defer(e);
                None
            }
            None => Some(e),
        }
    }
}
