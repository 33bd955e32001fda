//! Copies of a query's [`TaskContext`] with one part changed: the session
//! configuration (a frame sink's small batches) or the runtime (a staged
//! COPY's object stores, the server's per-query memory pool). DataFusion's
//! own `with_session_config` and `with_runtime` take the context by value,
//! and an operator holds it behind an `Arc`.

use std::sync::Arc;

use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{GreedyMemoryPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::SessionConfig;

/// `context` with its session configuration replaced by `config`.
pub fn with_config(context: &TaskContext, config: SessionConfig) -> Arc<TaskContext> {
    copy(context, config, context.runtime_env())
}

/// `runtime` with a memory pool of its own of `limit` bytes (what one query
/// may hold at once: its operators spill or fail past it), its object stores
/// and caches the same.
pub fn with_memory_limit(runtime: &RuntimeEnv, limit: usize) -> Arc<RuntimeEnv> {
    let mut runtime = runtime.clone();
    runtime.memory_pool = Arc::new(TrackConsumersPool::new(
        GreedyMemoryPool::new(limit),
        std::num::NonZeroUsize::new(3).expect("3 is not zero"),
    ));
    Arc::new(runtime)
}

/// `context` with its runtime replaced by `runtime`.
pub fn with_runtime(context: &TaskContext, runtime: Arc<RuntimeEnv>) -> Arc<TaskContext> {
    copy(context, context.session_config().clone(), runtime)
}

fn copy(
    context: &TaskContext,
    config: SessionConfig,
    runtime: Arc<RuntimeEnv>,
) -> Arc<TaskContext> {
    Arc::new(TaskContext::new(
        context.task_id(),
        context.session_id(),
        config,
        context.scalar_functions().clone(),
        context.higher_order_functions().clone(),
        context.aggregate_functions().clone(),
        context.window_functions().clone(),
        runtime,
    ))
}
