//! [`FillEventsExec`]: the rows of an append to the events table, completed.
//! A row's missing `id` becomes a new UUID, its missing `end_time` its
//! `start_time`, its missing `created_at` the time of the append; a row
//! without a `start_time` fails the append (nothing of it is published)
//! with an error saying which row.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, RecordBatch, StringArray, TimestampNanosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{SchemaRef, TimestampNanosecondType};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;

use super::schema::{col, events_schema};

/// Completes the rows of its input (of the events table's columns); see the
/// module documentation.
#[derive(Debug)]
pub(crate) struct FillEventsExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
    /// The append's time, nanoseconds since the epoch.
    now: i64,
}

impl FillEventsExec {
    /// The node over `input`.
    pub(crate) fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
            .unwrap_or_default();
        Self::at(input, now)
    }

    fn at(input: Arc<dyn ExecutionPlan>, now: i64) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(events_schema()),
            input.output_partitioning().clone(),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self {
            input,
            properties,
            now,
        }
    }
}

/// `batch` (of the events columns) completed; `seen`: rows before it.
fn fill(batch: &RecordBatch, schema: &SchemaRef, now: i64, seen: usize) -> Result<RecordBatch> {
    let column = |name: &str| -> Result<ArrayRef> {
        let field = schema.field_with_name(name)?;
        let c = batch
            .column_by_name(name)
            .ok_or_else(|| DataFusionError::Internal(format!("events append: no {name}")))?;
        Ok(cast(c, field.data_type())?)
    };
    let start = column(col::START_TIME)?;
    let start = start.as_primitive::<TimestampNanosecondType>();
    if let Some(row) = (0..start.len()).find(|&i| start.is_null(i)) {
        return Err(DataFusionError::Execution(format!(
            "events: row {} of the append has no start_time (every event needs one)",
            seen + row + 1
        )));
    }
    let id = column(col::ID)?;
    let id: StringArray = id
        .as_string::<i32>()
        .iter()
        .map(|v| Some(v.map_or_else(|| uuid::Uuid::new_v4().to_string(), ToString::to_string)))
        .collect();
    let end = column(col::END_TIME)?;
    let end: TimestampNanosecondArray = end
        .as_primitive::<TimestampNanosecondType>()
        .iter()
        .zip(start.iter())
        .map(|(e, s)| e.or(s))
        .collect();
    let created = column(col::CREATED_AT)?;
    let created: TimestampNanosecondArray = created
        .as_primitive::<TimestampNanosecondType>()
        .iter()
        .map(|c| Some(c.unwrap_or(now)))
        .collect();
    let columns = schema
        .fields()
        .iter()
        .map(|f| match f.name().as_str() {
            col::ID => Ok(Arc::new(id.clone()) as ArrayRef),
            col::END_TIME => Ok(Arc::new(end.clone().with_timezone("UTC")) as ArrayRef),
            col::CREATED_AT => Ok(Arc::new(created.clone().with_timezone("UTC")) as ArrayRef),
            name => column(name),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

impl DisplayAs for FillEventsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FillEventsExec")
    }
}

impl ExecutionPlan for FillEventsExec {
    fn name(&self) -> &str {
        "FillEventsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
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
        let input = crate::scanner::unary::only_child(children, "FillEventsExec")?;
        Ok(Arc::new(Self::at(input, self.now)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let schema = events_schema();
        let now = self.now;
        let mut seen = 0;
        let input = self.input.execute(partition, context)?;
        let out = Arc::clone(&schema);
        let stream = input.map(move |batch| {
            let batch = batch?;
            let filled = fill(&batch, &out, now, seen)?;
            seen += batch.num_rows();
            Ok(filled)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}
