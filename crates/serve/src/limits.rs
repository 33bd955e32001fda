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
//! The query runs in a task of its own, which ends at the query's deadline
//! (the server's `--query-timeout`, or the client's shorter
//! `statement_timeout`) whether or not anyone reads its rows: a client that
//! stops reading, or leaves a cursor open, holds its slot no longer.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
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
use tokio::sync::Semaphore;

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

impl QueryLimits {
    /// The memory a query may hold at once, if limited.
    pub fn memory_limit(&self) -> Option<usize> {
        self.memory_limit
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
        let deadline = Deadline::starting_now(limits.timeout);
        // Every operator checks the deadline as its batches pass.
        let (input, context) = match &deadline {
            Some(d) => (deadline::everywhere(input)?, with_deadline(&context, *d)),
            None => (input, context),
        };
        // The query runs in a task of its own, handing its batches over one
        // at a time; the task ends at the deadline whether or not the client
        // reads (its stream, memory and slot dropped with it), and ends at
        // once when the client's stream is dropped.
        let (batches, received) = tokio::sync::mpsc::channel(1);
        let over = Arc::new(std::sync::Mutex::new(None));
        let task = {
            let over = Arc::clone(&over);
            SpawnedTask::spawn(async move {
                let waiting = std::sync::atomic::AtomicBool::new(true);
                let run = run(&limits, input, partition, context, &batches, &waiting);
                let Some(d) = deadline else {
                    return run.await;
                };
                if tokio::time::timeout_at(d.at, run).await.is_err() {
                    let waiting = waiting.load(std::sync::atomic::Ordering::Relaxed);
                    let error = timed_out(&limits, &d, waiting);
                    *over.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
                }
            })
        };
        // The batches, then the timeout's error if the task ended at it.
        let stream = futures::stream::unfold(Some((received, task, over)), |state| async move {
            let (mut received, task, over) = state?;
            match received.recv().await {
                Some(item) => Some((item, Some((received, task, over)))),
                None => {
                    let error = over.lock().unwrap_or_else(|e| e.into_inner()).take();
                    error.map(|e| (Err(e), None))
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// Runs a query's plan in one of the server's slots, sending its batches
/// (and its error, if it fails) until it ends or nobody receives them;
/// `waiting` is cleared once the query has a slot.
async fn run(
    limits: &QueryLimits,
    input: Arc<dyn ExecutionPlan>,
    partition: usize,
    context: Arc<TaskContext>,
    batches: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    waiting: &std::sync::atomic::AtomicBool,
) {
    let _permit = match Arc::clone(&limits.slots).acquire_owned().await {
        Ok(permit) => permit,
        Err(e) => {
            let _ = batches
                .send(Err(DataFusionError::External(Box::new(e))))
                .await;
            return;
        }
    };
    waiting.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut stream = match input.execute(partition, context) {
        Ok(stream) => stream,
        Err(e) => {
            let _ = batches.send(Err(e)).await;
            return;
        }
    };
    loop {
        let item = tokio::select! {
            biased;
            _ = batches.closed() => return,
            item = stream.next() => item,
        };
        let Some(item) = item else { return };
        let failed = item.is_err();
        if batches.send(item).await.is_err() || failed {
            return;
        }
    }
}

/// `context` with a memory pool of its own of `limit` bytes: the query's
/// operators spill or fail when they would hold more.
fn with_memory_limit(context: &Arc<TaskContext>, limit: usize) -> Arc<TaskContext> {
    logsql::with_runtime(
        context,
        logsql::with_memory_limit(&context.runtime_env(), limit),
    )
}
