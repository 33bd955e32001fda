//! The query timeout at every operator of a served plan. [`LimitedExec`]'s
//! own timer cannot fire while the runtime's threads are held by operators
//! that make batch after batch from memory without waiting on anything (a
//! cross join's output, a generator): a task yields only where it waits. So
//! every operator's stream is wrapped ([`DeadlineExec`]): each batch it
//! hands on is checked against the query's deadline, carried in the query's
//! task context ([`Deadline`]), and spends the task's cooperative budget, so
//! a busy query yields to timers and to other clients' queries. A query past
//! its time fails at its next batch, wherever it is in the plan, and its
//! stream ends, which stops it.
//!
//! [`LimitedExec`]: crate::LimitedExec

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::StreamExt;
use tokio::time::Instant;

/// When a query's time is up, its limit and whose limit it is (for the
/// message).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    pub at: Instant,
    pub limit: Duration,
    /// Whether the limit is the client's own `statement_timeout` (shorter
    /// than the server's).
    pub client: bool,
}

impl Deadline {
    /// The deadline of a query starting now: the sooner of the server's
    /// `timeout` and the client's `statement_timeout` (set around the
    /// statement with [`with_statement_timeout`]), if either is set.
    pub(crate) fn starting_now(timeout: Option<Duration>) -> Option<Self> {
        let client = STATEMENT_TIMEOUT.try_with(|t| *t).ok();
        let (limit, client) = match (timeout, client) {
            (Some(server), Some(client)) if client < server => (client, true),
            (Some(server), _) => (server, false),
            (None, Some(client)) => (client, true),
            (None, None) => return None,
        };
        Some(Self {
            at: Instant::now() + limit,
            limit,
            client,
        })
    }

    /// The error of a query past it (`waiting`: what it was waiting for).
    pub(crate) fn passed(&self, waiting: &str) -> DataFusionError {
        DataFusionError::Execution(match self.client {
            true => format!(
                "canceling statement due to statement timeout: it ran longer than the \
                 statement_timeout of {:?}{waiting}",
                self.limit
            ),
            false => format!(
                "query cancelled: it ran longer than the server's query timeout of {:?}{waiting}",
                self.limit
            ),
        })
    }
}

tokio::task_local! {
    /// The `statement_timeout` of the client whose statement runs.
    static STATEMENT_TIMEOUT: Duration;
}

/// Runs `statement` (the planning and execution of one client's statement)
/// with the client's `statement_timeout`: the queries it starts end at it,
/// their execution included, unless the server's timeout comes first.
pub(crate) async fn with_statement_timeout<F: Future>(
    timeout: Option<Duration>,
    statement: F,
) -> F::Output {
    match timeout {
        Some(timeout) => STATEMENT_TIMEOUT.scope(timeout, statement).await,
        None => statement.await,
    }
}

/// `context` carrying `deadline` for the [`DeadlineExec`]s of its plan.
pub(crate) fn with_deadline(context: &Arc<TaskContext>, deadline: Deadline) -> Arc<TaskContext> {
    let config = context
        .session_config()
        .clone()
        .with_extension(Arc::new(deadline));
    logsql::with_config(context, config)
}

/// `plan` with every operator under a [`DeadlineExec`].
pub(crate) fn everywhere(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        if node.is::<DeadlineExec>() {
            return Ok(Transformed::no(node));
        }
        Ok(Transformed::yes(Arc::new(DeadlineExec::new(node)) as _))
    })
    .map(|t| t.data)
}

/// An operator whose batches are checked against the query's deadline (see
/// the module documentation). Put over every operator when a query starts
/// ([`LimitedExec`](crate::LimitedExec)'s `execute`), so `EXPLAIN` shows the
/// plan without it and `EXPLAIN ANALYZE` with it.
#[derive(Debug)]
pub struct DeadlineExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl DeadlineExec {
    fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        let properties = Arc::clone(input.properties());
        Self { input, properties }
    }
}

impl DisplayAs for DeadlineExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeadlineExec")
    }
}

impl ExecutionPlan for DeadlineExec {
    fn name(&self) -> &str {
        "DeadlineExec"
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
        let input = logsql::only_child(children, "DeadlineExec")?;
        Ok(Arc::new(Self::new(input)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let deadline = context.session_config().get_extension::<Deadline>();
        let stream = self.input.execute(partition, context)?;
        let Some(deadline) = deadline else {
            return Ok(stream);
        };
        let schema = stream.schema();
        let checked = stream.scan(false, move |over, item| {
            let item = match (*over, item) {
                (true, _) => None,
                (false, Ok(_)) if Instant::now() >= deadline.at => {
                    *over = true;
                    Some(Err(deadline.passed("")))
                }
                (false, item) => Some(item),
            };
            std::future::ready(item)
        });
        Ok(make_cooperative(Box::pin(RecordBatchStreamAdapter::new(
            schema, checked,
        ))))
    }
}
