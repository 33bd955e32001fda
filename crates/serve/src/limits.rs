//! What every query a server runs is held to, as the last physical optimizer
//! rule of its session ([`ServeRule`]): the plan guard (files read only below
//! the data roots, writes only where allowed), then a root node
//! ([`LimitedExec`]) that runs the plan in one of a bounded number of slots,
//! within a time limit and a memory limit of its own.
//!
//! Every query reaches execution through the physical planner, whichever
//! protocol or statement form brought it, so nothing runs around the rule. A
//! query that ends early (an error, a timeout, a client that cancels or goes
//! away) drops its stream: its scans stop and its memory and slot are freed.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{GreedyMemoryPool, TrackConsumersPool};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;
use logsql::PlanGuard;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::deadline::{self, Deadline, with_deadline};

/// The limits of a server's queries.
#[derive(Debug)]
pub struct QueryLimits {
    /// One permit per query allowed to run at once.
    slots: Arc<Semaphore>,
    /// The number of slots, for messages.
    max_queries: usize,
    /// How long a query may take, waiting for a slot included.
    timeout: Option<Duration>,
    /// The memory a query may hold at once.
    memory_limit: Option<usize>,
}

impl QueryLimits {
    /// Limits of `max_queries` queries at once, each within `timeout` and
    /// `memory_limit`.
    pub fn new(max_queries: usize, timeout: Option<Duration>, memory_limit: Option<usize>) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max_queries)),
            max_queries,
            timeout,
            memory_limit,
        }
    }
}

/// The physical optimizer rule that checks a plan with the server's
/// [`PlanGuard`] and puts it under a [`LimitedExec`].
#[derive(Debug)]
pub struct ServeRule {
    guard: PlanGuard,
    limits: Arc<QueryLimits>,
}

impl ServeRule {
    /// The rule of a server with `guard` and `limits`.
    pub fn new(guard: PlanGuard, limits: Arc<QueryLimits>) -> Self {
        Self { guard, limits }
    }
}

impl PhysicalOptimizerRule for ServeRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.guard.check(&plan)?;
        if plan.is::<LimitedExec>() {
            return Ok(plan);
        }
        // One stream per query, so one slot: the partitions are merged here
        // (as executing the plan would have merged them).
        let input: Arc<dyn ExecutionPlan> = if plan.output_partitioning().partition_count() > 1 {
            Arc::new(CoalescePartitionsExec::new(plan))
        } else {
            plan
        };
        Ok(Arc::new(LimitedExec::new(input, Arc::clone(&self.limits))))
    }

    fn name(&self) -> &str {
        "logsql serve: plan check"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The root of every query a server runs: waits for a slot, then streams its
/// input within the time and memory limits (see the module documentation).
#[derive(Debug)]
pub struct LimitedExec {
    input: Arc<dyn ExecutionPlan>,
    limits: Arc<QueryLimits>,
    properties: Arc<PlanProperties>,
}

impl LimitedExec {
    fn new(input: Arc<dyn ExecutionPlan>, limits: Arc<QueryLimits>) -> Self {
        let properties = Arc::clone(input.properties());
        Self {
            input,
            limits,
            properties,
        }
    }
}

impl DisplayAs for LimitedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LimitedExec")
    }
}

/// A query that outlived `deadline` (`waiting`: still waiting for a slot).
fn timed_out(limits: &QueryLimits, deadline: &Deadline, waiting: bool) -> DataFusionError {
    let what = match waiting {
        true => format!(
            " waiting for one of the server's {} query slots (--max-queries)",
            limits.max_queries
        ),
        false => String::new(),
    };
    deadline.passed(&what)
}

impl ExecutionPlan for LimitedExec {
    fn name(&self) -> &str {
        "LimitedExec"
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
        let input = logsql::only_child(children, "LimitedExec")?;
        Ok(Arc::new(Self::new(input, Arc::clone(&self.limits))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let limits = Arc::clone(&self.limits);
        let input = Arc::clone(&self.input);
        let schema = self.input.schema();
        let context = match limits.memory_limit {
            Some(limit) => with_memory_limit(&context, limit),
            None => context,
        };
        let deadline = limits.timeout.map(|limit| Deadline {
            at: Instant::now() + limit,
            limit,
        });
        // Every operator checks the deadline as its batches pass.
        let (input, context) = match &deadline {
            Some(d) => (deadline::everywhere(input)?, with_deadline(&context, *d)),
            None => (input, context),
        };

        /// Where a query is: waiting for a slot, running, or over.
        enum Step {
            Waiting(Arc<dyn ExecutionPlan>, Arc<TaskContext>),
            Running(SendableRecordBatchStream, OwnedSemaphorePermit),
            Done,
        }
        let stream = futures::stream::unfold(Step::Waiting(input, context), move |step| {
            let limits = Arc::clone(&limits);
            async move {
                let waiting = matches!(step, Step::Waiting(..));
                let next = async {
                    let (mut stream, permit) = match step {
                        Step::Done => return None,
                        Step::Running(stream, permit) => (stream, permit),
                        Step::Waiting(input, context) => {
                            let permit = match Arc::clone(&limits.slots).acquire_owned().await {
                                Ok(permit) => permit,
                                Err(e) => {
                                    return Some((
                                        Err(DataFusionError::External(Box::new(e))),
                                        Step::Done,
                                    ));
                                }
                            };
                            match input.execute(partition, context) {
                                Ok(stream) => (stream, permit),
                                Err(e) => return Some((Err(e), Step::Done)),
                            }
                        }
                    };
                    match stream.next().await {
                        Some(Ok(batch)) => Some((Ok(batch), Step::Running(stream, permit))),
                        Some(Err(e)) => Some((Err(e), Step::Done)),
                        None => None,
                    }
                };
                match deadline {
                    None => next.await,
                    Some(d) => match tokio::time::timeout_at(d.at, next).await {
                        Ok(item) => item,
                        Err(_) => Some((Err(timed_out(&limits, &d, waiting)), Step::Done)),
                    },
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// `context` with a memory pool of its own of `limit` bytes: the query's
/// operators spill or fail when they would hold more.
fn with_memory_limit(context: &Arc<TaskContext>, limit: usize) -> Arc<TaskContext> {
    let mut runtime = (*context.runtime_env()).clone();
    runtime.memory_pool = Arc::new(TrackConsumersPool::new(
        GreedyMemoryPool::new(limit),
        std::num::NonZeroUsize::new(3).expect("3 is not zero"),
    ));
    logsql::with_runtime(context, Arc::new(runtime))
}
