//! What logsql's plan nodes of one input share.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlan;

/// The one child `with_new_children` gives a node of one input (`node`
/// names it in the error when there is not exactly one).
pub fn only_child(
    mut children: Vec<Arc<dyn ExecutionPlan>>,
    node: &str,
) -> Result<Arc<dyn ExecutionPlan>> {
    match (children.pop(), children.is_empty()) {
        (Some(input), true) => Ok(input),
        _ => Err(DataFusionError::Internal(format!(
            "{node} takes exactly one child"
        ))),
    }
}
