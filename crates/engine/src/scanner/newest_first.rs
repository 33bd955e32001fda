//! Scans for "the newest messages": `ORDER BY log_time DESC LIMIT n`.
//!
//! DataFusion answers such a query with a `SortExec` keeping the top `n` rows
//! (TopK). Two of its hooks let the scan read only the end of a recording:
//!
//! - the sort is pushed to the scan (`FileSource::try_pushdown_sort`); the scan
//!   accepts `log_time DESC` inexactly: it reads each byte range's chunks in
//!   descending order of their end time (`read_order`), each chunk's rows
//!   still in file order, and the `SortExec` stays above it;
//! - the TopK's dynamic filter (`log_time > t`, tightened as better rows
//!   arrive) is pushed to the scan, which keeps it to skip the chunks it rules
//!   out (`RuntimePruning`) before reading them. The rows themselves are
//!   still filtered by the TopK, so the filter is not reported as applied.
//!
//! After the newest chunk or two, the filter's bound lies above every other
//! chunk's end time and the rest of the file is not read (`chunks_read` and
//! `chunks_pruned_at_run_time` in `EXPLAIN ANALYZE`). Every other runtime
//! filter that names only file columns (a hash join's bounds, an aggregate's)
//! prunes the same way, in any read order.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::snapshot_generation;
use datafusion::physical_optimizer::pruning::PruningPredicate;

use super::predicate::{self, ChunkStatistics};
use logsql_readers::model::{ChunkMeta, Summary};

/// The order a scan reads `chunks` (positions in `summary.chunks`, in file
/// order) in: file order, or, newest first, by descending end time (chunks
/// whose times the index does not state first, as they may hold anything;
/// ties in file order).
pub(crate) fn read_order(
    summary: &Summary,
    mut chunks: Vec<usize>,
    newest_first: bool,
) -> Vec<usize> {
    if newest_first {
        chunks.sort_by_key(|&i| std::cmp::Reverse(summary.chunks[i].end_time.unwrap_or(u64::MAX)));
    }
    chunks
}

/// Chunk pruning by filters whose value changes while the query runs
/// (DataFusion's dynamic filters), rebuilt whenever a filter changed.
#[derive(Debug)]
pub(crate) struct RuntimePruning {
    schema: SchemaRef,
    filters: Vec<Filter>,
}

#[derive(Debug)]
struct Filter {
    expr: Arc<dyn PhysicalExpr>,
    /// The predicate built from the filter's value at `generation`, if any
    /// pruning follows from it.
    built: Option<(u64, Option<Arc<PruningPredicate>>)>,
}

impl RuntimePruning {
    /// Pruning by `filters`, expressions over `schema` (the file schema).
    pub(crate) fn new(filters: &[Arc<dyn PhysicalExpr>], schema: &SchemaRef) -> Self {
        Self {
            schema: Arc::clone(schema),
            filters: filters
                .iter()
                .map(|f| Filter {
                    expr: Arc::clone(f),
                    built: None,
                })
                .collect(),
        }
    }

    /// Whether there is nothing to prune with.
    pub(crate) fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Whether `chunk` of `summary` (file `name`) may hold a row the filters,
    /// as they stand now, let through.
    pub(crate) fn admits(&mut self, chunk: &ChunkMeta, summary: &Summary, name: &str) -> bool {
        let stats = ChunkStatistics::new(vec![chunk], &summary.channels, name);
        for f in &mut self.filters {
            let generation = snapshot_generation(&f.expr);
            let stale = f.built.as_ref().is_none_or(|(g, _)| *g != generation);
            if stale {
                f.built = Some((
                    generation,
                    predicate::pruning_predicate(&f.expr, &self.schema),
                ));
            }
            let Some((_, Some(p))) = &f.built else {
                continue;
            };
            if p.prune(&stats)
                .is_ok_and(|keep| keep.first() == Some(&false))
            {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(index: usize, end: Option<u64>) -> ChunkMeta {
        ChunkMeta {
            index,
            offset: index as u64 * 100,
            length: 100,
            start_time: end.map(|e| e.saturating_sub(10)),
            end_time: end,
            message_count: None,
            channels: None,
            compression: String::new(),
            compressed_size: 100,
            uncompressed_size: None,
        }
    }

    #[test]
    fn newest_first_reads_by_descending_end_time_unknown_times_first() {
        let summary = Summary {
            chunks: vec![
                chunk(0, Some(10)),
                chunk(1, Some(30)),
                chunk(2, None),
                chunk(3, Some(20)),
                chunk(4, Some(30)),
            ],
            ..Summary::default()
        };
        let order = |newest| read_order(&summary, (0..5).collect(), newest);
        assert_eq!(order(false), vec![0, 1, 2, 3, 4]);
        assert_eq!(order(true), vec![2, 1, 4, 3, 0]);
    }
}
