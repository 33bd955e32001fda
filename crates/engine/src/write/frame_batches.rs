//! Small batches for the writers of camera frames (the MP4 and LeRobot
//! sinks): the plan under such a sink runs with batches of at most
//! [`FRAME_BATCH_ROWS`] rows, whatever `datafusion.execution.batch_size`
//! says.
//!
//! Why: DataFusion's merge of time-ordered partitions (and a sort, a
//! repartition or a filter) fills a whole batch before passing it on, and
//! each image row holds the chunk its bytes lie in. At the default 8192 rows
//! a minute of 640x480 JPEG frames waited in the merge (280 MB of peak
//! memory, growing with the recording); 32 rows hold about a second of
//! camera, 110 MB whatever the length.
//!
//! How: operators read their batch size either when planned (a filter's) or
//! from the [`TaskContext`] they are executed with (a merge's, a sort's, a
//! repartition's, a join's). The rule [`FrameBatches`] puts a
//! [`FrameBatchesExec`] directly under every frame sink, and lowers the
//! planned batch size of the filters below it; the node executes its input
//! with a task context whose batch size is [`FRAME_BATCH_ROWS`] (or the
//! session's, when smaller). It also leaves out the round-robin
//! repartitions of one partition below it (see [`FrameBatchesExec::over`]).
//! Nothing else changes: the node passes its input's partitions, order and
//! rows through. [`under_frames`] does the
//! same for a plan whose stream a writer consumes directly (`logsql
//! dataset`).

use std::fmt;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
    replace_children_if_necessary,
};
use datafusion::physical_plan::{ExecutionPlanProperties, Partitioning};

use super::lerobot::LeRobotSink;
use super::mp4::VideoSink;
use crate::atomic_write::sink::AtomicSink;

/// Rows per batch under a sink of camera frames: about a second of a 30 fps
/// camera.
pub const FRAME_BATCH_ROWS: usize = 32;

/// Whether a sink writes camera frames (and so wants small batches), also
/// when the sink is staged ([`AtomicSink`]).
fn writes_frames(sink: &dyn DataSink) -> bool {
    let sink = match sink.downcast_ref::<AtomicSink>() {
        Some(staged) => match staged.inner() {
            Ok(inner) => inner,
            Err(_) => return false,
        },
        None => sink,
    };
    sink.is::<VideoSink>() || sink.is::<LeRobotSink>()
}

/// The physical optimizer rule giving frame sinks small batches (see the
/// module documentation). Registered by [`crate::register`], before the rule
/// that stages a `COPY`'s files (which wraps the sink).
#[derive(Debug, Default)]
pub(crate) struct FrameBatches;

impl PhysicalOptimizerRule for FrameBatches {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let rows = FRAME_BATCH_ROWS.min(config.execution.batch_size.get());
        plan.transform_up(|node| {
            let Some(exec) = node.downcast_ref::<DataSinkExec>() else {
                return Ok(Transformed::no(node));
            };
            if !writes_frames(exec.sink()) || exec.input().is::<FrameBatchesExec>() {
                return Ok(Transformed::no(node));
            }
            let input = FrameBatchesExec::over(Arc::clone(exec.input()), rows)?;
            Ok(Transformed::yes(replace_children_if_necessary(
                Arc::clone(&node),
                vec![input],
            )?))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "logsql_frame_batches"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` run with batches of at most [`FRAME_BATCH_ROWS`] rows (or
/// `batch_size`, when smaller): for a query whose stream a writer of camera
/// frames consumes without a sink (`logsql dataset`).
pub fn under_frames(
    plan: Arc<dyn ExecutionPlan>,
    batch_size: usize,
) -> Result<Arc<dyn ExecutionPlan>> {
    FrameBatchesExec::over(plan, FRAME_BATCH_ROWS.min(batch_size))
}

/// Executes its input with batches of at most `rows` rows (see the module
/// documentation); passes its input's partitions, order and rows through.
#[derive(Debug)]
pub struct FrameBatchesExec {
    input: Arc<dyn ExecutionPlan>,
    rows: usize,
}

impl FrameBatchesExec {
    /// The node over `input`, whose filters' planned batch sizes are lowered
    /// to `rows` first, and whose round-robin repartitions of one partition
    /// are left out.
    ///
    /// DataFusion spreads the rows of a one-partition operator (the windows
    /// that number episodes) over the cores round robin, and merges them
    /// back before the sink. The repartition queues rows without bound while
    /// the sink (encoding video) is the slower side: 580 MB instead of 260 MB
    /// for a 120 s camera recording. And the merge back, where the sink asks
    /// for no order (LeRobot's `presorted`), interleaves the rows. Without
    /// it the operators above run on the one partition, in order. Leaving
    /// it out keeps the plan valid: a round-robin repartition satisfies no
    /// distribution or order a parent requires, so whatever the parent
    /// needs from it (one partition, a hash distribution, an order) a node
    /// between them provides.
    fn over(input: Arc<dyn ExecutionPlan>, rows: usize) -> Result<Arc<dyn ExecutionPlan>> {
        let rows = rows.max(1);
        let input = input
            .transform_up(|node| {
                if let Some(repartition) = node.downcast_ref::<RepartitionExec>()
                    && matches!(repartition.partitioning(), Partitioning::RoundRobinBatch(_))
                    && repartition.input().output_partitioning().partition_count() == 1
                {
                    return Ok(Transformed::yes(Arc::clone(repartition.input())));
                }
                let Some(filter) = node.downcast_ref::<FilterExec>() else {
                    return Ok(Transformed::no(node));
                };
                if filter.batch_size() <= rows {
                    return Ok(Transformed::no(node));
                }
                let small = filter.with_batch_size(rows)?;
                Ok(Transformed::yes(Arc::new(small) as Arc<dyn ExecutionPlan>))
            })?
            .data;
        Ok(Arc::new(Self { input, rows }))
    }

    /// The most rows a batch of the input holds.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// `context` with the batch size lowered to `rows` (when it is larger).
    fn small_batches(&self, context: Arc<TaskContext>) -> Result<Arc<TaskContext>> {
        if context.session_config().batch_size() <= self.rows {
            return Ok(context);
        }
        let config = context.session_config().clone().with_batch_size(self.rows);
        Ok(crate::task::with_config(&context, config))
    }
}

impl DisplayAs for FrameBatchesExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => write!(f, "rows={}", self.rows),
            _ => write!(f, "FrameBatchesExec: rows={}", self.rows),
        }
    }
}

impl ExecutionPlan for FrameBatchesExec {
    fn name(&self) -> &str {
        "FrameBatchesExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self {
            input: crate::scanner::unary::only_child(children, "FrameBatchesExec")?,
            rows: self.rows,
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let context = self.small_batches(context)?;
        self.input.execute(partition, context)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::memory::MemorySourceConfig;
    use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
    use datafusion::physical_plan::expressions::{Column, lit};
    use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
    use datafusion::physical_plan::{collect, displayable};

    use super::*;

    /// A merge of two time-ordered partitions of 1000 rows each.
    fn merge() -> Arc<dyn ExecutionPlan> {
        let schema = Arc::new(Schema::new(vec![Field::new("t", DataType::Int64, false)]));
        let part = |start: i64| {
            let times = Int64Array::from_iter_values((0..1000).map(|i| start + 2 * i));
            vec![RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(times)]).unwrap()]
        };
        let scan = MemorySourceConfig::try_new_exec(&[part(0), part(1)], schema, None).unwrap();
        let order =
            LexOrdering::new([PhysicalSortExpr::new_default(Arc::new(Column::new("t", 0)))])
                .unwrap();
        Arc::new(SortPreservingMergeExec::new(order, scan))
    }

    fn rows_of(batches: &[RecordBatch]) -> Vec<usize> {
        batches.iter().map(RecordBatch::num_rows).collect()
    }

    #[tokio::test]
    async fn the_merge_under_the_node_gives_small_batches() {
        // The session's 8192 rows: one batch of every row.
        let context = Arc::new(TaskContext::default());
        let whole = collect(merge(), Arc::clone(&context)).await.unwrap();
        assert_eq!(rows_of(&whole), [2000]);
        // Under the node: batches of 32 rows, the same rows in order.
        let small = collect(under_frames(merge(), 8192).unwrap(), Arc::clone(&context))
            .await
            .unwrap();
        let sizes = rows_of(&small);
        assert!(sizes.iter().all(|&n| n <= FRAME_BATCH_ROWS), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 2000);
        let times: Vec<i64> = small
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(times, (0..2000).collect::<Vec<i64>>());
        // A smaller session batch size is kept.
        let eight = collect(under_frames(merge(), 8).unwrap(), context)
            .await
            .unwrap();
        assert!(rows_of(&eight).iter().all(|&n| n <= 8));
    }

    #[test]
    fn filters_below_the_node_are_planned_with_small_batches() {
        let filter = Arc::new(FilterExec::try_new(lit(true), merge()).unwrap());
        assert!(filter.batch_size() > FRAME_BATCH_ROWS);
        let plan = under_frames(filter, 8192).unwrap();
        let shown = displayable(plan.as_ref()).indent(false).to_string();
        assert!(
            shown.starts_with("FrameBatchesExec: rows=32\n  FilterExec"),
            "{shown}"
        );
        let node = plan.downcast_ref::<FrameBatchesExec>().unwrap();
        let below = node.children()[0].downcast_ref::<FilterExec>().unwrap();
        assert_eq!(below.batch_size(), FRAME_BATCH_ROWS);
    }
}
