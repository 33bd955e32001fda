//! `AsofJoinNode`: the logical plan node of an as-of join.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use datafusion::common::{DFSchema, DFSchemaRef, Result, plan_err};
use datafusion::logical_expr::type_coercion::binary::comparison_coercion;
use datafusion::logical_expr::{
    Expr, ExprSchemable, JoinType, LogicalPlan, UserDefinedLogicalNodeCore, build_join_schema,
};

use super::{AsofJoinType, AsofOp};

/// An as-of join of `left` with `right` (see the [module](super) docs).
///
/// Each key pair and the time pair are coerced to one type per pair when
/// built, so both sides hash and order alike. The output is the left columns
/// then the right ones, the right ones nullable.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AsofJoinNode {
    left: Arc<LogicalPlan>,
    right: Arc<LogicalPlan>,
    on: Vec<(Expr, Expr)>,
    time: (Expr, Expr),
    op: AsofOp,
    join_type: AsofJoinType,
    tolerance: Option<Expr>,
    schema: DFSchemaRef,
}

impl PartialOrd for AsofJoinNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        // The schema follows from the rest.
        (
            &self.left,
            &self.right,
            &self.on,
            &self.time,
            self.op,
            self.join_type,
            &self.tolerance,
        )
            .partial_cmp(&(
                &other.left,
                &other.right,
                &other.on,
                &other.time,
                other.op,
                other.join_type,
                &other.tolerance,
            ))
    }
}

impl AsofJoinNode {
    /// The join of `left` and `right` where `time.0 <op> time.1` picks the
    /// match among right rows with equal `on` keys. `tolerance` is a boolean
    /// over the output row, checked on the chosen match.
    pub(crate) fn try_new(
        left: LogicalPlan,
        right: LogicalPlan,
        on: Vec<(Expr, Expr)>,
        time: (Expr, Expr),
        op: AsofOp,
        join_type: AsofJoinType,
        tolerance: Option<Expr>,
    ) -> Result<Self> {
        let (ls, rs) = (left.schema(), right.schema());
        let on = on
            .into_iter()
            .map(|(l, r)| coerce_pair(l, r, ls, rs, "key"))
            .collect::<Result<Vec<_>>>()?;
        let time = coerce_pair(time.0, time.1, ls, rs, "time")?;
        let schema = Arc::new(build_join_schema(ls, rs, &JoinType::Left)?);
        if let Some(t) = &tolerance {
            let ty = t.get_type(schema.as_ref())?;
            if !ty.is_null() && ty != datafusion::arrow::datatypes::DataType::Boolean {
                return plan_err!("ASOF JOIN: the tolerance {t} is not a condition ({ty})");
            }
        }
        Ok(Self {
            left: Arc::new(left),
            right: Arc::new(right),
            on,
            time,
            op,
            join_type,
            tolerance,
            schema,
        })
    }

    /// The equality keys (left, right).
    pub(crate) fn on(&self) -> &[(Expr, Expr)] {
        &self.on
    }

    /// The times (left, right).
    pub(crate) fn time(&self) -> &(Expr, Expr) {
        &self.time
    }

    /// The match comparison, `left <op> right`.
    pub(crate) fn op(&self) -> AsofOp {
        self.op
    }

    /// Which left rows are kept.
    pub(crate) fn join_type(&self) -> AsofJoinType {
        self.join_type
    }

    /// The condition a match must meet, over the output row.
    pub(crate) fn tolerance(&self) -> Option<&Expr> {
        self.tolerance.as_ref()
    }
}

/// `l` and `r` cast to the type both compare as, when they differ.
fn coerce_pair(l: Expr, r: Expr, ls: &DFSchema, rs: &DFSchema, what: &str) -> Result<(Expr, Expr)> {
    let (lt, rt) = (l.get_type(ls)?, r.get_type(rs)?);
    if lt == rt {
        return Ok((l, r));
    }
    let Some(common) = comparison_coercion(&lt, &rt) else {
        return plan_err!("ASOF JOIN: the {what} {l} ({lt}) cannot be compared with {r} ({rt})");
    };
    let l = if lt == common {
        l
    } else {
        l.cast_to(&common, ls)?
    };
    let r = if rt == common {
        r
    } else {
        r.cast_to(&common, rs)?
    };
    Ok((l, r))
}

impl UserDefinedLogicalNodeCore for AsofJoinNode {
    fn name(&self) -> &str {
        "AsofJoin"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.left, &self.right]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        let mut exprs: Vec<Expr> = self
            .on
            .iter()
            .flat_map(|(l, r)| [l.clone(), r.clone()])
            .collect();
        exprs.push(self.time.0.clone());
        exprs.push(self.time.1.clone());
        exprs.extend(self.tolerance.clone());
        exprs
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "AsofJoin: type={}, match=({} {} {})",
            self.join_type, self.time.0, self.op, self.time.1
        )?;
        if !self.on.is_empty() {
            let on: Vec<String> = self.on.iter().map(|(l, r)| format!("{l} = {r}")).collect();
            write!(f, ", on=[{}]", on.join(", "))?;
        }
        if let Some(t) = &self.tolerance {
            write!(f, ", tolerance={t}")?;
        }
        Ok(())
    }

    fn with_exprs_and_inputs(&self, exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> Result<Self> {
        let [left, right] = <[LogicalPlan; 2]>::try_from(inputs).map_err(|_| {
            datafusion::error::DataFusionError::Internal("AsofJoin takes two inputs".into())
        })?;
        let keys = self.on.len();
        let want = 2 * keys + 2 + usize::from(self.tolerance.is_some());
        if exprs.len() != want {
            return plan_err!(
                "AsofJoin: {} expressions given, {want} expected",
                exprs.len()
            );
        }
        let mut it = exprs.into_iter();
        let mut on = Vec::with_capacity(keys);
        for _ in 0..keys {
            let (l, r) = (it.next(), it.next());
            on.extend(l.zip(r));
        }
        let time = it.next().zip(it.next());
        let Some(time) = time else {
            return plan_err!("AsofJoin: missing time expressions");
        };
        Self::try_new(left, right, on, time, self.op, self.join_type, it.next())
    }

    fn necessary_children_exprs(&self, output_columns: &[usize]) -> Option<Vec<Vec<usize>>> {
        let left_len = self.left.schema().fields().len();
        let (l, r): (Vec<usize>, Vec<usize>) = output_columns.iter().partition(|&&i| i < left_len);
        Some(vec![l, r.into_iter().map(|i| i - left_len).collect()])
    }
}
