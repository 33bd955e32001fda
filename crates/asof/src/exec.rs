//! [`AsofJoinExec`]: the streaming as-of join operator.
//!
//! It requires both inputs sorted by (keys, time) ascending, NULLs first, and
//! hash-partitioned on the keys (one partition when there are none, or when
//! both inputs are already in that order: then DataFusion merges their
//! partitions in order instead of sorting), so DataFusion adds sorts and
//! repartitions only where the inputs are not already so; each partition is one merge pass (`super::matcher`). The
//! output keeps the left input's order and partitioning.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, new_null_array};
use datafusion::arrow::compute::{filter_record_batch, interleave};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::cast::as_boolean_array;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::physical_expr::{
    EquivalenceProperties, LexRequirement, OrderingRequirements, PhysicalExpr,
    PhysicalSortRequirement,
};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, RecordOutput,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties,
    InputDistributionRequirements, Partitioning, PlanProperties, SendableRecordBatchStream,
    apply_expression_roots,
};
use futures::StreamExt;

use super::matcher::{Encoders, Matcher, Pos, RightBuffer, SideExprs};
use super::{AsofJoinType, AsofOp};

/// The as-of join of `left` with `right` (see the [module](super) docs).
#[derive(Debug)]
pub struct AsofJoinExec {
    left: Arc<dyn ExecutionPlan>,
    right: Arc<dyn ExecutionPlan>,
    /// Equality keys (left, right), of equal types.
    on: Vec<(Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>)>,
    /// The times (left, right), of equal types.
    time: (Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>),
    op: AsofOp,
    join_type: AsofJoinType,
    /// A boolean over the output row, checked on each match: false or NULL
    /// turns the match into NULLs.
    tolerance: Option<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl AsofJoinExec {
    /// The join of `left` and `right` on `on` and `time` compared with `op`;
    /// `schema` is the left columns then the right ones.
    #[allow(clippy::too_many_arguments)]
    pub fn try_new(
        left: Arc<dyn ExecutionPlan>,
        right: Arc<dyn ExecutionPlan>,
        on: Vec<(Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>)>,
        time: (Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>),
        op: AsofOp,
        join_type: AsofJoinType,
        tolerance: Option<Arc<dyn PhysicalExpr>>,
        schema: SchemaRef,
    ) -> Result<Self> {
        let expected = left.schema().fields().len() + right.schema().fields().len();
        if schema.fields().len() != expected {
            return Err(DataFusionError::Internal(format!(
                "AsofJoinExec: output schema has {} columns, inputs {expected}",
                schema.fields().len()
            )));
        }
        // Left columns come first, at their input indices: the left ordering
        // and partitioning hold for the output too.
        // Every ordering of the left input holds (a time grid is ordered by
        // its recording and by its episode at once).
        let mut eq = EquivalenceProperties::new(Arc::clone(&schema));
        eq.add_orderings(left.equivalence_properties().oeq_class().iter().cloned());
        let properties = PlanProperties::new(
            eq,
            left.output_partitioning().clone(),
            EmissionType::Incremental,
            if left.boundedness().is_unbounded() || right.boundedness().is_unbounded() {
                Boundedness::Unbounded {
                    requires_infinite_memory: false,
                }
            } else {
                Boundedness::Bounded
            },
        );
        Ok(Self {
            left,
            right,
            on,
            time,
            op,
            join_type,
            tolerance,
            schema,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The match comparison (`left <op> right`).
    pub fn op(&self) -> AsofOp {
        self.op
    }

    fn side(&self, left: bool) -> SideExprs {
        let pick = |p: &(Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>)| {
            Arc::clone(if left { &p.0 } else { &p.1 })
        };
        SideExprs {
            keys: self.on.iter().map(pick).collect(),
            time: pick(&self.time),
        }
    }

    /// Whether a side's input is already in (keys, time) order, and not
    /// hash-partitioned: a hash-partitioned input is what the key
    /// partitioning gives (then sorted), and the answer must not change once
    /// DataFusion has met the requirement it gave.
    fn ordered(&self, left: bool) -> bool {
        let input = if left { &self.left } else { &self.right };
        if matches!(input.output_partitioning(), Partitioning::Hash(..)) {
            return false;
        }
        let Some(required) = self.requirement(left) else {
            return false;
        };
        input
            .equivalence_properties()
            .ordering_satisfy_requirement(required.into_single())
            .unwrap_or(false)
    }

    fn requirement(&self, left: bool) -> Option<OrderingRequirements> {
        let side = self.side(left);
        let reqs = side
            .keys
            .into_iter()
            .chain(std::iter::once(side.time))
            .map(|e| PhysicalSortRequirement::new(e, Some(Default::default())));
        LexRequirement::new(reqs).map(OrderingRequirements::new)
    }
}

impl DisplayAs for AsofJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "AsofJoinExec: join_type={}, match=({} {} {})",
            self.join_type, self.time.0, self.op, self.time.1
        )?;
        if !self.on.is_empty() {
            let on: Vec<String> = self.on.iter().map(|(l, r)| format!("({l}, {r})")).collect();
            write!(f, ", on=[{}]", on.join(", "))?;
        }
        if let Some(t) = &self.tolerance {
            write!(f, ", tolerance={t}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for AsofJoinExec {
    fn name(&self) -> &str {
        "AsofJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        if self.on.is_empty() {
            return InputDistributionRequirements::new(vec![
                Distribution::SinglePartition,
                Distribution::SinglePartition,
            ]);
        }
        // Inputs already in (keys, time) order in each partition (scans of
        // files in time order, a time grid) are merged into one partition,
        // which keeps that order with a bounded merge; hash partitioning
        // would lose it and sort each partition in memory (for a camera
        // topic: every image, with the chunks they view).
        if self.ordered(true) && self.ordered(false) {
            return InputDistributionRequirements::new(vec![
                Distribution::SinglePartition,
                Distribution::SinglePartition,
            ]);
        }
        let side = |left: bool| Distribution::KeyPartitioned(self.side(left).keys);
        InputDistributionRequirements::co_partitioned(vec![side(true), side(false)])
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        vec![self.requirement(true), self.requirement(false)]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true, false]
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.left, &self.right]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        let keys = self.on.iter().flat_map(|(l, r)| [l, r]);
        let time = [&self.time.0, &self.time.1];
        apply_expression_roots(keys.chain(time).chain(self.tolerance.iter()), f)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [left, right] = <[_; 2]>::try_from(children).map_err(|_| {
            DataFusionError::Internal("AsofJoinExec takes exactly two children".into())
        })?;
        Ok(Arc::new(Self::try_new(
            left,
            right,
            self.on.clone(),
            self.time.clone(),
            self.op,
            self.join_type,
            self.tolerance.clone(),
            Arc::clone(&self.schema),
        )?))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (nl, nr) = (
            self.left.output_partitioning().partition_count(),
            self.right.output_partitioning().partition_count(),
        );
        if nl != nr {
            return Err(DataFusionError::Internal(format!(
                "AsofJoinExec: inputs have {nl} and {nr} partitions"
            )));
        }
        let left = self.left.execute(partition, Arc::clone(&context))?;
        let right = self.right.execute(partition, Arc::clone(&context))?;
        let key_types = self
            .on
            .iter()
            .map(|(l, _)| l.data_type(&self.left.schema()))
            .collect::<Result<Vec<_>>>()?;
        let time_type = self.time.0.data_type(&self.left.schema())?;
        let reservation = MemoryConsumer::new(format!("AsofJoinExec[{partition}]"))
            .register(context.memory_pool());
        let max_rows = MetricBuilder::new(&self.metrics).gauge("max_buffered_rows", partition);
        let matcher = Matcher::new(
            self.op,
            Encoders::new(&key_types, &time_type)?,
            self.side(true),
            RightBuffer::new(right, self.side(false), reservation, max_rows),
        );
        let state = StreamState {
            left,
            matcher,
            schema: Arc::clone(&self.schema),
            join_type: self.join_type,
            tolerance: self.tolerance.clone(),
            baseline: BaselineMetrics::new(&self.metrics, partition),
            matched: MetricBuilder::new(&self.metrics).counter("matched_rows", partition),
        };
        let stream = futures::stream::unfold(Some(state), |state| async move {
            let mut state = state?;
            match state.left.next().await {
                None => None,
                Some(Err(e)) => Some((Err(e), None)),
                Some(Ok(batch)) => match state.join_batch(&batch).await {
                    Ok(out) => Some((Ok(out), Some(state))),
                    Err(e) => Some((Err(e), None)),
                },
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }
}

/// One partition's stream state.
struct StreamState {
    left: SendableRecordBatchStream,
    matcher: Matcher,
    schema: SchemaRef,
    join_type: AsofJoinType,
    tolerance: Option<Arc<dyn PhysicalExpr>>,
    baseline: BaselineMetrics,
    matched: Count,
}

impl StreamState {
    /// The output rows of one left batch.
    async fn join_batch(&mut self, left: &RecordBatch) -> Result<RecordBatch> {
        let mut matches = self.matcher.match_batch(left).await?;
        let _timer = self.baseline.elapsed_compute().timer();
        let mut out = self.assemble(left, &matches)?;
        if let Some(tolerance) = &self.tolerance {
            let ok = tolerance.evaluate(&out)?.into_array(out.num_rows())?;
            let ok = as_boolean_array(&ok)?;
            let mut stale = false;
            for (i, m) in matches.iter_mut().enumerate() {
                if m.is_some() && !(ok.is_valid(i) && ok.value(i)) {
                    *m = None;
                    stale = true;
                }
            }
            if stale {
                out = self.assemble(left, &matches)?;
            }
        }
        self.matcher.release();
        let matched = matches.iter().filter(|m| m.is_some()).count();
        self.matched.add(matched);
        if self.join_type == AsofJoinType::Inner && matched < matches.len() {
            let keep: BooleanArray = matches.iter().map(|m| Some(m.is_some())).collect();
            out = filter_record_batch(&out, &keep)?;
        }
        (&out).record_output(&self.baseline);
        Ok(out)
    }

    /// The left columns, then the right columns of each row's match (NULLs when none).
    fn assemble(&self, left: &RecordBatch, matches: &[Option<Pos>]) -> Result<RecordBatch> {
        let right = &self.matcher.right;
        // The buffered batches referenced, in id order, then a one-row NULL batch.
        let mut ids: Vec<usize> = matches.iter().flatten().map(|p| p.0).collect();
        ids.sort_unstable();
        ids.dedup();
        let null_source = ids.len();
        let indices: Vec<(usize, usize)> = matches
            .iter()
            .map(|m| match m {
                Some((id, row)) => (ids.binary_search(id).unwrap_or(null_source), *row),
                None => (null_source, 0),
            })
            .collect();
        let left_width = left.num_columns();
        let mut columns: Vec<ArrayRef> = left.columns().to_vec();
        for (c, field) in self.schema.fields().iter().enumerate().skip(left_width) {
            let rc = c - left_width;
            let nulls = new_null_array(field.data_type(), 1);
            let mut sources: Vec<&dyn Array> = ids
                .iter()
                .map(|id| right.batch(*id).column(rc).as_ref())
                .collect();
            sources.push(nulls.as_ref());
            columns.push(interleave(&sources, &indices)?);
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}
