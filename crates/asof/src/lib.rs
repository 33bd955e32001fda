//! # logsql-asof
//!
//! `ASOF JOIN` for Apache DataFusion: for each row of the left input, the best
//! row of the right input at (or before, or after) its time, per equality key.
//! Format-free: it depends on DataFusion only, and [`install`] adds it to any
//! `SessionState`.
//!
//! - [`complexity`]: how deep a statement may nest before it is planned;
//! - [`logical`]: the logical node `AsofJoinNode` (a `UserDefinedLogicalNodeCore`)
//!   and the type coercion of its keys and times;
//! - [`sql`](mod@sql): the SQL spellings (`MATCH_CONDITION`, DuckDB's `ON`), planned by a
//!   `RelationPlanner`, and [`sql()`](sql::sql), which accepts every spelling;
//! - [`planner`]: the `ExtensionPlanner` and the `QueryPlanner` that installs it;
//! - [`exec`], `matcher`: the streaming physical operator [`AsofJoinExec`];
//! - [`push_down`]: the logical optimizer rule that moves filters on the left
//!   side below the join.
//!
//! Semantics (shared by every spelling): each left row appears once (or, for
//! DuckDB's `ASOF JOIN` without `LEFT`, only when matched), with the right row
//! of equal keys whose time is the closest on the side the operator points to:
//! `l >= r` / `l > r` the latest right time at or before (strictly before) the
//! left time, `l <= r` / `l < r` the earliest at or after (strictly after).
//! Among right rows with the same keys and best time, the one that comes last
//! in the right input's order wins. NULL keys and NULL times never match. An
//! optional tolerance is checked on the chosen match; a match beyond it
//! becomes NULLs.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod complexity;
pub mod exec;
pub mod logical;
pub(crate) mod matcher;
pub mod planner;
pub mod push_down;
pub mod sql;

use std::fmt;

use datafusion::logical_expr::Operator;

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::SessionState;

pub use exec::AsofJoinExec;
pub use sql::sql;

/// The comparison of an as-of match, written `left <op> right`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AsofOp {
    /// `left >= right`: the latest right time at or before the left time.
    GtEq,
    /// `left > right`: the latest right time strictly before the left time.
    Gt,
    /// `left <= right`: the earliest right time at or after the left time.
    LtEq,
    /// `left < right`: the earliest right time strictly after the left time.
    Lt,
}

impl AsofOp {
    /// The operator for a SQL comparison `left <op> right`, if it is one of the four.
    pub(crate) fn from_operator(op: Operator) -> Option<Self> {
        match op {
            Operator::GtEq => Some(Self::GtEq),
            Operator::Gt => Some(Self::Gt),
            Operator::LtEq => Some(Self::LtEq),
            Operator::Lt => Some(Self::Lt),
            _ => None,
        }
    }

    /// The same condition with its sides swapped (`a >= b` is `b <= a`).
    pub fn swap(self) -> Self {
        match self {
            Self::GtEq => Self::LtEq,
            Self::Gt => Self::Lt,
            Self::LtEq => Self::GtEq,
            Self::Lt => Self::Gt,
        }
    }

    /// Whether matches lie at or before the left time (`>=`, `>`).
    pub(crate) fn is_backward(self) -> bool {
        matches!(self, Self::GtEq | Self::Gt)
    }

    /// Whether a right time equal to the left time matches (`>=`, `<=`).
    pub(crate) fn is_inclusive(self) -> bool {
        matches!(self, Self::GtEq | Self::LtEq)
    }
}

impl fmt::Display for AsofOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::GtEq => ">=",
            Self::Gt => ">",
            Self::LtEq => "<=",
            Self::Lt => "<",
        })
    }
}

/// Which left rows an as-of join keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AsofJoinType {
    /// Every left row, with NULLs when nothing matches (`MATCH_CONDITION`, DuckDB's `ASOF LEFT JOIN`).
    Left,
    /// Only matched left rows (DuckDB's `ASOF JOIN`).
    Inner,
}

impl fmt::Display for AsofJoinType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Left => "Left",
            Self::Inner => "Inner",
        })
    }
}

/// Installs `ASOF JOIN` on `state` unless present: the
/// `sql::AsofRelationPlanner`, the `planner::AsofQueryPlanner` wrapped
/// around the current query planner, and the logical optimizer rule
/// `push_down::AsofPushDownFilter` right after DataFusion's
/// `push_down_filter` (at the end when that is absent). Returns the state to use.
pub fn install(mut state: SessionState) -> Result<SessionState> {
    let named = |p: &dyn std::fmt::Debug| format!("{p:?}") == "AsofRelationPlanner";
    if !state.relation_planners().iter().any(|p| named(p.as_ref())) {
        state.register_relation_planner(Arc::new(sql::AsofRelationPlanner))?;
    }
    let has_planner = planner::AsofQueryPlanner::is(state.query_planner());
    let has_rule = state
        .optimizers()
        .iter()
        .any(|r| r.name() == push_down::NAME);
    if has_planner && has_rule {
        return Ok(state);
    }
    let session_id = state.session_id().to_string();
    let mut builder = datafusion::execution::SessionStateBuilder::new_from_existing(state.clone())
        .with_session_id(session_id);
    if !has_planner {
        let prev = Arc::clone(state.query_planner());
        builder = builder.with_query_planner(Arc::new(planner::AsofQueryPlanner::new(prev)));
    }
    if !has_rule {
        let mut rules = state.optimizers().to_vec();
        let at = rules
            .iter()
            .position(|r| r.name() == "push_down_filter")
            .map_or(rules.len(), |i| i + 1);
        rules.insert(at, Arc::new(push_down::AsofPushDownFilter));
        builder = builder.with_optimizer_rules(rules);
    }
    Ok(builder.build())
}
