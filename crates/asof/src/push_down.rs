//! `AsofPushDownFilter`: filters on the left (preserved) side of an as-of
//! join go below it, so the left input's scan prunes chunks and files.
//!
//! DataFusion's own `PushDownFilter` cannot do this for an extension node: it
//! pushes a predicate into *every* input of the node, and only by unqualified
//! column names, so the `AsofJoinNode` keeps its default (every predicate
//! that names a column stays above) and this rule, which runs right after
//! `PushDownFilter`, moves the left-only conjuncts of a filter directly above
//! the join into its left input. `PushDownFilter` takes them further down on
//! the optimizer's next pass (into the scan).
//!
//! Why it is exact: each left row's output row (its match, or NULLs, or for
//! DuckDB's inner `ASOF JOIN` no row) depends only on that row and the right
//! input, never on the other left rows; so dropping left rows before the join
//! drops exactly their output rows. Predicates naming a right column stay
//! above for both join types: filtering right rows first would change which
//! row is the best match (and, for `ASOF LEFT JOIN`, a left row whose right
//! side is NULL must still reach `WHERE r.x IS NULL`). No bound is derived for
//! the right side from a left time range: the match of the first left row may
//! lie any distance before it. Volatile predicates and subqueries stay above.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::utils::{conjunction, split_conjunction_owned};
use datafusion::logical_expr::{Expr, Extension, Filter, LogicalPlan, UserDefinedLogicalNodeCore};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

use super::logical::AsofJoinNode;

/// The rule's name, as `EXPLAIN VERBOSE` shows it.
pub const NAME: &str = "logsql_asof_push_down_filter";

/// Moves left-only conjuncts of a filter above an [`AsofJoinNode`] into the
/// join's left input (see the [module](self) docs).
#[derive(Debug, Default)]
pub(crate) struct AsofPushDownFilter;

/// Whether `e` may be evaluated on the left input instead of the join output:
/// every column it names is a left column (and not a right one), and it is
/// neither volatile nor holds a subquery.
fn left_only(e: &Expr, left: &DFSchema, right: &DFSchema) -> bool {
    let subquery = e
        .exists(|x| {
            Ok(matches!(
                x,
                Expr::Exists(_)
                    | Expr::InSubquery(_)
                    | Expr::ScalarSubquery(_)
                    | Expr::OuterReferenceColumn(..)
            ))
        })
        .unwrap_or(true);
    !subquery
        && !e.is_volatile()
        && e.column_refs()
            .iter()
            .all(|c| left.has_column(c) && !right.has_column(c))
}

impl OptimizerRule for AsofPushDownFilter {
    fn name(&self) -> &str {
        NAME
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Filter(filter) = &plan else {
            return Ok(Transformed::no(plan));
        };
        let LogicalPlan::Extension(ext) = filter.input.as_ref() else {
            return Ok(Transformed::no(plan));
        };
        let Some(node) = ext.node.as_any().downcast_ref::<AsofJoinNode>() else {
            return Ok(Transformed::no(plan));
        };
        let [left, right] = node.inputs()[..] else {
            return Ok(Transformed::no(plan));
        };
        let (ls, rs) = (left.schema().as_ref(), right.schema().as_ref());
        let (push, keep): (Vec<Expr>, Vec<Expr>) =
            split_conjunction_owned(filter.predicate.clone())
                .into_iter()
                .partition(|e| left_only(e, ls, rs));
        let Some(pushed) = conjunction(push) else {
            return Ok(Transformed::no(plan));
        };
        let left = LogicalPlan::Filter(Filter::try_new(pushed, Arc::new(left.clone()))?);
        let join = node.with_exprs_and_inputs(node.expressions(), vec![left, right.clone()])?;
        let join = LogicalPlan::Extension(Extension {
            node: Arc::new(join),
        });
        Ok(Transformed::yes(match conjunction(keep) {
            Some(rest) => LogicalPlan::Filter(Filter::try_new(rest, Arc::new(join))?),
            None => join,
        }))
    }
}
