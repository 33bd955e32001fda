//! Scans that know they are in time order.
//!
//! A file whose chunk index shows its chunks in `log_time` order, without
//! overlap ([`file_in_time_order`]), yields its messages in `log_time` order
//! when each chunk's messages are sorted by `log_time`. For such files the
//! file format declares the ordering `log_time ASC` on the scan
//! ([`declare`]); every partition of the scan reads a contiguous run of
//! chunks (a byte range of one file, or whole files), so DataFusion merges
//! partitions with a `SortPreservingMergeExec` instead of sorting, and
//! `ORDER BY log_time LIMIT n` stops after its first rows (read in one
//! partition, in file order: the `file_order` rule of the SQL surface). A chunk
//! the index shows without messages is not read at all (`holds_no_message`).
//!
//! The scan keeps the promise (`ChunkOrder`, used by the scan loop): it holds
//! each chunk's rows until the chunk ends, sorts them by `log_time` (stably)
//! when they are not already in order, and checks them against the chunk's
//! bounds from the index. A message outside its chunk's stated bounds is
//! corruption of the index (reported under `logsql.on_error`).
//!
//! A scan with a `file` column declares (`file`, `log_time`) first, then
//! `log_time`: an as-of join `ON` the file (a time grid's topics) needs the
//! first, and it holds for a partition reading several files in name order
//! whatever their times.
//!
//! A table of several files declares the order only when every file is in
//! order; DataFusion keeps an order for a partition holding several files only
//! when their statistics (the files' names, and the summaries' time bounds)
//! show them in that order without overlap, and drops it otherwise (then it
//! sorts, as without the declaration). Typed tables and Apollo records never
//! declare an order.

use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, TimestampNanosecondArray};
use datafusion::arrow::compute::interleave_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::ObjectStore;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use std::collections::HashSet;

use super::schema::col;
use crate::storage::object_io::FileLocation;
use logsql_readers::formats::FormatReader;
use logsql_readers::model::{ChunkMeta, Nanos, Summary};

/// Whether reading `summary`'s chunks in file order, each chunk's messages
/// sorted by `log_time`, yields the file's messages in `log_time` order: the
/// format's chunk bounds enclose their messages, every chunk (with messages)
/// states both bounds, and the chunks follow each other in the file without
/// overlapping in time (a chunk may start at the time the previous one ends),
/// each inside the file's stated time range (which DataFusion uses to order
/// the files of a partition). MCAP writers give a chunk of only schema and
/// channel records the times 0..=0, outside the file's range: such a chunk
/// holds no message (`chunk_bounds` makes its range empty, and message
/// scans do not read it: `holds_no_message`). Any other chunk outside the file's range means the
/// file's statistics are wrong (a real rosbag2 MCAP states a first message
/// time of 1 ms for a chunk holding one at 0): no order is declared.
pub fn file_in_time_order(format: &dyn FormatReader, summary: &Summary) -> bool {
    if !format.chunk_times_enclose_messages() {
        return false;
    }
    let mut prev_offset: Option<u64> = None;
    let mut prev_end: Option<i64> = None;
    for chunk in &summary.chunks {
        if prev_offset.is_some_and(|o| o >= chunk.offset) {
            return false;
        }
        prev_offset = Some(chunk.offset);
        if chunk.message_count == Some(0) {
            continue;
        }
        let Some((start, end)) = chunk_bounds(summary, chunk) else {
            return false;
        };
        if start > end {
            // A chunk of records before the first message: no message.
            continue;
        }
        let in_file_range = summary.start_time.is_none_or(|s| ts(s) <= start)
            && summary.end_time.is_none_or(|e| end <= ts(e));
        if !in_file_range {
            return false;
        }
        if prev_end.is_some_and(|p| p > start) {
            return false;
        }
        prev_end = Some(end);
    }
    true
}

/// The `log_time` bounds (inclusive, as Arrow stores them) a message of
/// `chunk` must lie in: the chunk's stated bounds. `None` when the chunk does
/// not state both; an empty range (`start > end`) for a chunk stated as
/// 0..=0 in a file whose messages start later (MCAP writers give a chunk of
/// only schema and channel records these times: it must hold no message).
pub(crate) fn chunk_bounds(summary: &Summary, chunk: &ChunkMeta) -> Option<(i64, i64)> {
    let (start, end) = (chunk.start_time?, chunk.end_time?);
    if (start, end) == (0, 0) && summary.start_time.is_some_and(|s| s > 0) {
        return Some((1, 0));
    }
    Some((ts(start), ts(end)))
}

/// Whether the index proves that `chunk` holds no message, so a message scan
/// need not read it: its stated bounds are empty ([`chunk_bounds`]: the
/// times 0..=0, which MCAP writers give a chunk of only schema and channel
/// records, in a file whose messages start later) and it lists no channel.
/// Such a chunk's Schema and Channel records are not needed either: a chunk
/// is decoded with the summary's channels and its own records only.
///
/// An MCAP chunk index with no `message_index_offsets` alone proves nothing
/// (a writer may leave message indexes out: the chunks still hold messages);
/// the empty time range does, when the file states its first message time.
pub(crate) fn holds_no_message(summary: &Summary, chunk: &ChunkMeta) -> bool {
    chunk_bounds(summary, chunk).is_some_and(|(start, end)| start > end)
        && chunk.channels.as_ref().is_none_or(Vec::is_empty)
}

/// The ordering `log_time ASC` over `schema`, if it has a `log_time` column.
pub(crate) fn log_time_ordering(schema: &SchemaRef) -> Option<LexOrdering> {
    let i = schema.index_of(col::LOG_TIME).ok()?;
    LexOrdering::new([PhysicalSortExpr::new_default(Arc::new(Column::new(
        col::LOG_TIME,
        i,
    )))])
}

/// The orderings a scan in time order declares over `schema`: (`file`,
/// `log_time`) first, then `log_time`. The first is what an as-of join `ON`
/// the file needs (each recording joined on its own), and holds for a
/// partition reading several files in name order whatever their times;
/// DataFusion merges partitions by the first ordering. The second lets
/// `ORDER BY log_time` skip its sort when the files follow each other in time.
fn scan_orderings(schema: &SchemaRef) -> Vec<LexOrdering> {
    let Some(by_time) = log_time_ordering(schema) else {
        return Vec::new();
    };
    let by_file = schema.index_of(col::FILE).ok().and_then(|f| {
        LexOrdering::new([
            PhysicalSortExpr::new_default(Arc::new(Column::new(col::FILE, f))),
            by_time.first().clone(),
        ])
    });
    by_file.into_iter().chain([by_time]).collect()
}

/// Declares `log_time ASC` on `conf` when every file it reads is in time
/// order ([`file_in_time_order`]); files in `skip` are not read and do not
/// count, and files the `catalog` knows are judged by its chunk index. A file whose summary cannot be read leaves the scan undeclared (the
/// scan reports it when it reads the file). Summaries not yet cached are read
/// under the session's size caps `limits`.
pub async fn declare(
    conf: &mut FileScanConfig,
    store: Arc<dyn ObjectStore>,
    summaries: crate::storage::summary_cache::SummaryCache,
    format: Option<Arc<dyn FormatReader>>,
    skip: &HashSet<ObjectPath>,
    limits: logsql_readers::limits::Limits,
    catalog: Option<&crate::catalog::CatalogSnapshot>,
) {
    let orderings = scan_orderings(conf.file_source.table_schema().table_schema());
    if orderings.is_empty() {
        return;
    }
    let url: ObjectStoreUrl = conf.object_store_url.clone();
    let files = conf
        .file_groups
        .iter()
        .flat_map(|g| g.iter())
        .filter(|f| !skip.contains(&f.object_meta.location))
        .map(|f| FileLocation::new(url.clone(), Arc::clone(&store), f));
    let checks = files.map(|loc| {
        let format = format.clone();
        let summaries = Arc::clone(&summaries);
        // A file the catalog knows as it is now: its chunk index is there.
        let known = catalog
            .and_then(|c| c.entry(&loc.display_name(), &loc.meta, format.as_ref()))
            .map(|e| file_in_time_order(e.format.as_ref(), &e.summary));
        async move {
            if let Some(ordered) = known {
                return ordered;
            }
            loc.summary_with_limits(Some(summaries), format, limits)
                .await
                .is_ok_and(|c| file_in_time_order(c.format.as_ref(), &c.summary))
        }
    });
    let ordered = futures::future::join_all(checks).await;
    if !ordered.is_empty() && ordered.iter().all(|o| *o) {
        // DataFusion checks each declared order against the statistics of
        // the files of every partition (`file` and `log_time` bounds; it
        // groups files in path order) and keeps only those they show.
        conf.output_ordering = orderings;
        // Each partition reads exactly its own file group, in order: without
        // this, DataFusion lets an idle partition steal its siblings' unopened
        // files and byte ranges, and a partition would no longer hold its
        // chunks in time order (`FileScanConfigBuilder::build` sets it for an
        // ordering given there; this one is declared after the build).
        conf.preserve_order = true;
    }
}

/// The rows of one chunk, held until the chunk ends (a scan in declared time
/// order): then sorted by `log_time` if needed and checked against the
/// chunk's bounds.
#[derive(Debug)]
pub(crate) struct ChunkOrder {
    /// Position of `log_time` in the batches.
    column: usize,
    /// The chunk's rows so far (unfiltered).
    batches: Vec<RecordBatch>,
}

impl ChunkOrder {
    /// Holds rows whose `log_time` is column `column`.
    pub(crate) fn new(column: usize) -> Self {
        Self {
            column,
            batches: Vec::new(),
        }
    }

    /// Holds one batch of the current chunk.
    pub(crate) fn push(&mut self, batch: RecordBatch) {
        if batch.num_rows() > 0 {
            self.batches.push(batch);
        }
    }

    /// Ends the current chunk: its rows in `log_time` order (stable: rows of
    /// equal time keep the order the reader gave them), as batches of at most
    /// `max_rows` rows, and the first time outside the chunk's bounds, if any.
    pub(crate) fn finish(
        &mut self,
        (lo, hi): (i64, i64),
        max_rows: usize,
    ) -> Result<(Vec<RecordBatch>, Option<i64>)> {
        let batches = std::mem::take(&mut self.batches);
        let mut times: Vec<i64> = Vec::new();
        for b in &batches {
            let array = b
                .column(self.column)
                .as_any()
                .downcast_ref::<TimestampNanosecondArray>()
                .ok_or_else(|| {
                    DataFusionError::Internal("log_time is not a nanosecond timestamp".into())
                })?;
            times.extend(array.values().iter().copied());
        }
        let outside = times.iter().copied().find(|t| *t < lo || *t > hi);
        if times.is_sorted() {
            return Ok((batches, outside));
        }
        // (batch, row) of every row in time order (stable): the rows are
        // copied once, straight into the output batches.
        let mut order: Vec<(i64, (usize, usize))> = times
            .iter()
            .copied()
            .zip(
                batches
                    .iter()
                    .enumerate()
                    .flat_map(|(b, batch)| (0..batch.num_rows()).map(move |r| (b, r))),
            )
            .collect();
        order.sort_by_key(|(t, _)| *t);
        let order: Vec<(usize, usize)> = order.into_iter().map(|(_, i)| i).collect();
        let refs: Vec<&RecordBatch> = batches.iter().collect();
        let out = order
            .chunks(max_rows.max(1))
            .map(|part| interleave_record_batch(&refs, part))
            .collect::<std::result::Result<_, _>>()?;
        Ok((out, outside))
    }
}

/// A time in nanoseconds as Arrow's `log_time` stores it (saturating past 2262).
fn ts(v: Nanos) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The corruption error of a chunk holding a message at `time` outside the
/// bounds `(lo, hi)` its index and the file's time range state.
pub(crate) fn out_of_bounds(
    file: &str,
    format: &'static str,
    chunk: &ChunkMeta,
    (lo, hi): (i64, i64),
    time: i64,
) -> logsql_readers::Error {
    let stated = if lo > hi {
        "no message (its time range lies outside the file's)".to_string()
    } else {
        format!("log times {lo}..={hi} ns")
    };
    logsql_readers::Error::Corrupt {
        file: file.to_string(),
        format,
        offset: chunk.offset,
        message: format!(
            "the file's index states {stated} for this chunk, but it holds a message logged at \
             {time} ns (the scan declared time order from the index: rows of this file may be out of order)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use logsql_readers::formats::{apollo::ApolloFormat, bag::BagFormat};

    fn chunk(offset: u64, start: u64, end: u64) -> ChunkMeta {
        ChunkMeta {
            index: 0,
            offset,
            length: 10,
            start_time: Some(start),
            end_time: Some(end),
            message_count: Some(1),
            channels: None,
            compression: String::new(),
            compressed_size: 10,
            uncompressed_size: None,
        }
    }

    fn summary(chunks: Vec<ChunkMeta>) -> Summary {
        Summary {
            start_time: chunks.iter().filter_map(|c| c.start_time).min(),
            end_time: chunks.iter().filter_map(|c| c.end_time).max(),
            chunks,
            ..Summary::default()
        }
    }

    #[test]
    fn chunks_in_order_without_overlap_are_in_time_order() {
        let bag = BagFormat;
        // Touching bounds (20, 20) are in order.
        let s = summary(vec![chunk(0, 10, 20), chunk(10, 20, 30), chunk(20, 31, 40)]);
        assert!(file_in_time_order(&bag, &s));
        // Overlap: 25 > 21.
        let s = summary(vec![chunk(0, 10, 25), chunk(10, 21, 30)]);
        assert!(!file_in_time_order(&bag, &s));
        // Out of order.
        let s = summary(vec![chunk(0, 30, 40), chunk(10, 10, 20)]);
        assert!(!file_in_time_order(&bag, &s));
        // An unknown bound.
        let mut c = chunk(10, 20, 30);
        c.end_time = None;
        assert!(!file_in_time_order(
            &bag,
            &summary(vec![chunk(0, 10, 20), c])
        ));
        // An empty chunk (time 0..0) does not count.
        let mut empty = chunk(10, 0, 0);
        empty.message_count = Some(0);
        let s = summary(vec![chunk(0, 10, 20), empty, chunk(20, 30, 40)]);
        assert!(file_in_time_order(&bag, &s));
        // A chunk of only records before the first message (MCAP: times
        // 0..=0) is left out: it must hold no message.
        let mut s = summary(vec![chunk(0, 0, 0), chunk(10, 20, 30), chunk(20, 30, 40)]);
        s.start_time = Some(20);
        assert!(file_in_time_order(&bag, &s));
        assert_eq!(chunk_bounds(&s, &s.chunks[0]), Some((1, 0)));
        assert_eq!(chunk_bounds(&s, &s.chunks[1]), Some((20, 30)));
        // It holds no message (a scan skips it) unless it lists a channel.
        s.chunks[0].channels = None;
        assert!(holds_no_message(&s, &s.chunks[0]));
        assert!(!holds_no_message(&s, &s.chunks[1]));
        s.chunks[0].channels = Some(vec![1]);
        assert!(!holds_no_message(&s, &s.chunks[0]));
        s.chunks[0].channels = Some(vec![]);
        assert!(holds_no_message(&s, &s.chunks[0]));
        // In a file whose messages start at 0, times 0..=0 are a real range.
        s.start_time = Some(0);
        assert!(!holds_no_message(&s, &s.chunks[0]));
        // A chunk outside the file's stated range: the statistics are wrong,
        // no order is declared (a rosbag2 MCAP: first message 1 ms, chunk 0..).
        let mut s = summary(vec![chunk(0, 0, 100)]);
        s.start_time = Some(1);
        assert!(!file_in_time_order(&bag, &s));
        assert_eq!(chunk_bounds(&s, &s.chunks[0]), Some((0, 100)));
        s.start_time = Some(0);
        s.end_time = Some(99);
        assert!(!file_in_time_order(&bag, &s));
        s.end_time = Some(100);
        assert!(file_in_time_order(&bag, &s));
        // Chunks listed out of file order.
        let s = summary(vec![chunk(10, 10, 20), chunk(0, 20, 30)]);
        assert!(!file_in_time_order(&bag, &s));
        // No chunks: in order.
        assert!(file_in_time_order(&bag, &summary(vec![])));
        // A format whose bounds are hints never is.
        let s = summary(vec![chunk(0, 10, 20)]);
        assert!(!file_in_time_order(&ApolloFormat, &s));
    }

    #[test]
    fn a_chunk_is_sorted_stably_and_checked_against_its_bounds() {
        use datafusion::arrow::array::UInt32Array as U;
        use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
        let schema = Arc::new(Schema::new(vec![
            Field::new(
                "log_time",
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                false,
            ),
            Field::new("n", DataType::UInt32, false),
        ]));
        let batch = |t: Vec<i64>, n: Vec<u32>| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(TimestampNanosecondArray::from(t).with_timezone("UTC")),
                    Arc::new(U::from(n)),
                ],
            )
            .unwrap()
        };
        let mut order = ChunkOrder::new(0);
        order.push(batch(vec![5, 3, 5], vec![0, 1, 2]));
        order.push(batch(vec![1, 3], vec![3, 4]));
        let (out, outside) = order.finish((1, 5), 2).unwrap();
        assert_eq!(outside, None);
        let rows: Vec<(i64, u32)> = out
            .iter()
            .flat_map(|b| {
                let t = b
                    .column(0)
                    .as_any()
                    .downcast_ref::<TimestampNanosecondArray>()
                    .unwrap();
                let n = b.column(1).as_any().downcast_ref::<U>().unwrap();
                (0..b.num_rows())
                    .map(|i| (t.value(i), n.value(i)))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(rows, vec![(1, 3), (3, 1), (3, 4), (5, 0), (5, 2)]);
        assert_eq!(
            out.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            vec![2, 2, 1]
        );
        // Sorted rows pass through as they came; a time past the bound is named.
        order.push(batch(vec![1, 7], vec![0, 1]));
        let (out, outside) = order.finish((1, 5), 2).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(outside, Some(7));
    }
}
