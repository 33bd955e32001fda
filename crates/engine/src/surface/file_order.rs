//! `LIMIT` without `ORDER BY` reads log tables in file order.
//!
//! DataFusion splits a large file into byte ranges, one partition each, and a
//! `LIMIT` above them takes whichever partition answers first: the rows differ
//! from run to run. `FileOrderUnderLimit` is a physical optimizer rule that
//! runs after DataFusion's (after `LimitPushdown`): under a limit whose input
//! keeps row order (projections, filters, batch coalescing, the limit nodes
//! themselves), a log-table scan is read in one partition, its files in path
//! order and each file whole, in file order. Round-robin repartitions under
//! such a limit, or between it and the root of the plan, are removed, since
//! they interleave batches. Scans without a limit keep their partitions, so
//! full scans stay parallel.
//!
//! A scan in declared `log_time` order ([`crate::scanner::time_order`]) keeps it: its
//! byte ranges merge back into whole files, read in time order, and a scan
//! whose files would lose the order in one partition is left as it is.
//!
//! The same holds under `ORDER BY log_time LIMIT n` of such a scan (a
//! `SortPreservingMergeExec` with a fetch over an order-keeping chain): each
//! byte range would read its own first chunk for the merge to pick from,
//! although the first range's rows come first; one partition in file order
//! reads only the chunks the first `n` rows lie in. (A selective filter then
//! scans in one partition rather than in parallel: less work, not always
//! sooner.)
//!
//! Which files a limited scan of a directory holds is DataFusion's choice:
//! without a filter, its listing table keeps only enough files to cover the
//! limit by their statistics, taking them as their summaries arrive.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::{GlobalLimitExec, LocalLimitExec};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{
    ExecutionPlan, ExecutionPlanProperties, Partitioning, replace_children_if_necessary,
};

use crate::datasource::source::LogSource;

/// The rule's name, as `EXPLAIN VERBOSE` shows it.
pub const NAME: &str = "logsql_file_order_under_limit";

/// Reads log-table scans under a `LIMIT` (without `ORDER BY`) in one partition,
/// in file order (see the module comment).
#[derive(Debug, Default)]
pub(crate) struct FileOrderUnderLimit;

impl PhysicalOptimizerRule for FileOrderUnderLimit {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        rewrite(plan, false, true)
    }

    fn name(&self) -> &str {
        NAME
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether `plan` passes its input's rows through in order, partition by
/// partition (or merges partitions without reordering inside each).
fn keeps_order(plan: &dyn ExecutionPlan) -> bool {
    plan.downcast_ref::<ProjectionExec>().is_some()
        || plan.downcast_ref::<FilterExec>().is_some()
        || plan.downcast_ref::<CoalescePartitionsExec>().is_some()
        || plan.downcast_ref::<GlobalLimitExec>().is_some()
        || plan.downcast_ref::<LocalLimitExec>().is_some()
        || plan.name() == "CoalesceBatchesExec"
}

/// Whether `plan` merges sorted partitions into its first rows
/// (`ORDER BY ... LIMIT n`): scans in declared order below it are read in one
/// partition when that keeps their order ([`in_file_order`]).
fn merge_with_fetch(plan: &dyn ExecutionPlan) -> bool {
    plan.downcast_ref::<SortPreservingMergeExec>()
        .is_some_and(|m| m.fetch().is_some())
}

/// Whether `plan` is a round-robin repartition (it interleaves batches).
fn round_robin(plan: &dyn ExecutionPlan) -> Option<&Arc<dyn ExecutionPlan>> {
    plan.downcast_ref::<RepartitionExec>()
        .filter(|r| matches!(r.partitioning(), Partitioning::RoundRobinBatch(_)))
        .map(|r| r.input())
}

/// Whether an order-keeping chain below `plan` (itself included) holds a limit.
fn limit_below(plan: &dyn ExecutionPlan) -> bool {
    if let Some(input) = round_robin(plan) {
        return limit_below(input.as_ref());
    }
    keeps_order(plan)
        && (plan.fetch().is_some() || plan.children().iter().any(|c| limit_below(c.as_ref())))
}

/// Rewrites `plan`. `limited`: an order-keeping chain from a limit (or from a
/// merge with a fetch) leads to it; `top`: an order-keeping chain from the plan's root leads to it (its
/// rows reach the user in the order it produces them).
fn rewrite(
    plan: Arc<dyn ExecutionPlan>,
    limited: bool,
    top: bool,
) -> Result<Arc<dyn ExecutionPlan>> {
    if limited && let Some(scan) = in_file_order(plan.as_ref()) {
        return Ok(scan);
    }
    if let Some(input) = round_robin(plan.as_ref())
        && (limited || top && limit_below(input.as_ref()))
    {
        return rewrite(Arc::clone(input), limited, top);
    }
    let keeps = keeps_order(plan.as_ref());
    let below = keeps && (limited || plan.fetch().is_some()) || merge_with_fetch(plan.as_ref());
    let children = plan
        .children()
        .into_iter()
        .map(|c| rewrite(Arc::clone(c), below, top && keeps))
        .collect::<Result<Vec<_>>>()?;
    replace_children_if_necessary(plan, children)
}

/// `plan` as a one-partition scan in file order, if it is a log-table scan
/// not already read that way (several partitions, or files out of path order:
/// DataFusion sorts the files by path only when it splits them into groups).
fn in_file_order(plan: &dyn ExecutionPlan) -> Option<Arc<dyn ExecutionPlan>> {
    let (conf, _) = plan
        .downcast_ref::<DataSourceExec>()?
        .downcast_to_file_source::<LogSource>()?;
    let files = whole_files(conf.file_groups.iter().flat_map(|g| g.iter().cloned()));
    let key = |f: &PartitionedFile| {
        (
            f.object_meta.location.clone(),
            f.range.as_ref().map(|r| (r.start, r.end)),
        )
    };
    if let [group] = conf.file_groups.as_slice()
        && group.iter().map(key).eq(files.iter().map(key))
    {
        return None;
    }
    let conf: FileScanConfig = FileScanConfigBuilder::from(conf.clone())
        .with_file_groups(vec![FileGroup::new(files)])
        .build();
    let scan: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(conf);
    // A scan in declared time order ([`crate::scanner::time_order`]) stays in it: the
    // plan above may rely on it (a sort it made unnecessary). Byte ranges of
    // one file merge back into it in order; files whose time ranges overlap,
    // or whose path order is not their time order, stay as they are.
    if plan.output_ordering().is_some()
        && scan.output_ordering().map(|o| o.to_string())
            != plan.output_ordering().map(|o| o.to_string())
    {
        return None;
    }
    Some(scan)
}

/// The files of byte-range partitions in path order, each file's ranges
/// merged back into the whole file when they cover it (else kept, in order).
fn whole_files(files: impl Iterator<Item = PartitionedFile>) -> Vec<PartitionedFile> {
    let mut files: Vec<PartitionedFile> = files.collect();
    let start = |f: &PartitionedFile| f.range.as_ref().map_or(0, |r| r.start);
    files.sort_by(|a, b| {
        a.object_meta
            .location
            .cmp(&b.object_meta.location)
            .then(start(a).cmp(&start(b)))
    });
    let mut out: Vec<PartitionedFile> = Vec::with_capacity(files.len());
    for group in files.chunk_by(|a, b| a.object_meta.location == b.object_meta.location) {
        let size = group[0].object_meta.size;
        let mut end = 0u64;
        let contiguous = group.iter().all(|f| match &f.range {
            Some(r) if u64::try_from(r.start).ok() == Some(end) => {
                end = u64::try_from(r.end).unwrap_or(0);
                true
            }
            _ => false,
        });
        if contiguous && end == size {
            let mut whole = group[0].clone();
            whole.range = None;
            out.push(whole);
        } else {
            out.extend(group.iter().cloned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, size: u64, range: Option<(i64, i64)>) -> PartitionedFile {
        let mut f = PartitionedFile::new(path, size);
        if let Some((a, b)) = range {
            f = f.with_range(a, b);
        }
        f
    }

    #[test]
    fn ranges_covering_a_file_merge_back_into_it() {
        let files = whole_files(
            vec![
                file("b.bag", 100, Some((50, 100))),
                file("a.bag", 10, None),
                file("b.bag", 100, Some((0, 50))),
                // c's ranges do not cover the file: kept, in order.
                file("c.bag", 100, Some((40, 100))),
                file("c.bag", 100, Some((0, 30))),
            ]
            .into_iter(),
        );
        let shown: Vec<(String, Option<(i64, i64)>)> = files
            .iter()
            .map(|f| {
                (
                    f.object_meta.location.to_string(),
                    f.range.as_ref().map(|r| (r.start, r.end)),
                )
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                ("a.bag".to_string(), None),
                ("b.bag".to_string(), None),
                ("c.bag".to_string(), Some((0, 30))),
                ("c.bag".to_string(), Some((40, 100))),
            ]
        );
    }
}
