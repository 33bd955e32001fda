//! Physical planning of `AsofJoinNode`: the `AsofExtensionPlanner` and
//! the `AsofQueryPlanner` that [`crate::install`] installs.
//!
//! The query planner wraps the session's previous one: plans without an as-of
//! join go to it unchanged; plans with one are planned by DataFusion's default
//! planner with the as-of extension. On a datafusion-distributed coordinator
//! that means a query with an `ASOF JOIN` runs entirely on the coordinator
//! (its plan is never shipped to workers, whose codec does not know the node).

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};

use super::exec::AsofJoinExec;
use super::logical::AsofJoinNode;

/// Plans [`AsofJoinNode`] as [`AsofJoinExec`].
#[derive(Debug, Default)]
pub(crate) struct AsofExtensionPlanner;

#[async_trait]
impl ExtensionPlanner for AsofExtensionPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
        planning_ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(node) = node.as_any().downcast_ref::<AsofJoinNode>() else {
            return Ok(None);
        };
        let ([ll, lr], [pl, pr]) = (logical_inputs, physical_inputs) else {
            return Err(DataFusionError::Internal(
                "AsofJoin takes two inputs".into(),
            ));
        };
        let phys = |e: &datafusion::logical_expr::Expr, s: &DFSchema| {
            planner.create_physical_expr(e, s, session, planning_ctx)
        };
        let (ls, rs) = (ll.schema().as_ref(), lr.schema().as_ref());
        let on = node
            .on()
            .iter()
            .map(|(l, r)| Ok((phys(l, ls)?, phys(r, rs)?)))
            .collect::<Result<Vec<_>>>()?;
        let time = (phys(&node.time().0, ls)?, phys(&node.time().1, rs)?);
        let schema = UserDefinedLogicalNodeCore::schema(node);
        let tolerance = node.tolerance().map(|t| phys(t, schema)).transpose()?;
        Ok(Some(Arc::new(AsofJoinExec::try_new(
            Arc::clone(pl),
            Arc::clone(pr),
            on,
            time,
            node.op(),
            node.join_type(),
            tolerance,
            Arc::new(schema.as_arrow().clone()),
        )?)))
    }
}

/// The session's previous query planner, with [`AsofExtensionPlanner`] for
/// plans that hold an as-of join (see the [module](self) docs).
#[derive(Debug)]
pub(crate) struct AsofQueryPlanner {
    prev: Arc<dyn QueryPlanner + Send + Sync>,
}

impl AsofQueryPlanner {
    /// Wraps `prev`.
    pub(crate) fn new(prev: Arc<dyn QueryPlanner + Send + Sync>) -> Self {
        Self { prev }
    }

    /// Whether `planner` is already an [`AsofQueryPlanner`].
    pub(crate) fn is(planner: &Arc<dyn QueryPlanner + Send + Sync>) -> bool {
        let any: &dyn Any = planner.as_ref();
        any.is::<Self>()
    }
}

/// Whether `plan` (or a subquery of it) holds an [`AsofJoinNode`].
fn has_asof(plan: &LogicalPlan) -> bool {
    let mut found = false;
    let _ = plan.apply_with_subqueries(|p| {
        if let LogicalPlan::Extension(e) = p
            && e.node.as_any().is::<AsofJoinNode>()
        {
            found = true;
            return Ok(datafusion::common::tree_node::TreeNodeRecursion::Stop);
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    found
}

#[async_trait]
impl QueryPlanner for AsofQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !has_asof(logical_plan) {
            return self.prev.create_physical_plan(logical_plan, session).await;
        }
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(AsofExtensionPlanner)])
            .create_physical_plan(logical_plan, session)
            .await
    }
}
