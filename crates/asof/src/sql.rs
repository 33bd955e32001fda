//! The SQL of `ASOF JOIN`.
//!
//! Two spellings plan to the same `AsofJoinNode`:
//!
//! - Snowflake's, which DataFusion's parser reads:
//!   `a ASOF JOIN b MATCH_CONDITION (a.t >= b.t) [ON a.k = b.k AND ...]`,
//!   every left row kept (NULLs when nothing matches);
//! - DuckDB's, `a ASOF [LEFT] JOIN b ON a.k = b.k AND a.t >= b.t`, the one
//!   inequality among the equalities; without `LEFT`, unmatched left rows are
//!   dropped. `rewrite_duckdb` turns it into the first form with a marker
//!   match condition before parsing.
//!
//! Either `ON` may hold one tolerance conjunct, `a.t - b.t <= <bound>` (or
//! `<`, or `b.t - a.t` for `<=`/`<` matches), over the two match columns: it
//! is checked on the chosen match, and a match beyond it becomes NULLs.
//!
//! DataFusion plans joins of a `FROM` list without an extension hook; only a
//! parenthesized join reaches a `RelationPlanner`. So `AsofRelationPlanner`
//! plans `(a ASOF JOIN b ...)`, which plain `ctx.sql()` accepts once
//! [`crate::install`] ran, and [`sql()`] (used by the CLI and Python) first
//! wraps every `ASOF JOIN` in such parentheses, so the unparenthesized
//! spellings work there too.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::common::{Column, DFSchema, Result, plan_datafusion_err, plan_err};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::expr_rewriter::normalize_col;
use datafusion::logical_expr::planner::{
    PlannedRelation, RelationPlanner, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::utils::split_conjunction_owned;
use datafusion::logical_expr::{BinaryExpr, Expr, Extension, LogicalPlan, Operator};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{CopyToSource, CopyToStatement, DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, Ident, Join, JoinConstraint, JoinOperator, Query, SetExpr, TableFactor,
    TableWithJoins, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};

use super::logical::AsofJoinNode;
use super::{AsofJoinType, AsofOp};

/// The match condition [`rewrite_duckdb`] writes for `ASOF LEFT JOIN ... ON`.
const MARK_LEFT: &str = "__logsql_asof_on_left";
/// The match condition [`rewrite_duckdb`] writes for `ASOF JOIN ... ON`.
const MARK_INNER: &str = "__logsql_asof_on_inner";

/// Plans `sql` on `ctx` like `ctx.sql(sql)`, accepting both `ASOF JOIN`
/// spellings anywhere a join may stand (see the [module](self) docs).
/// Statements without the word `ASOF` go to `ctx.sql` unchanged.
/// A statement nesting deeper than [`crate::complexity::MAX_DEPTH`] is
/// refused before it is planned.
pub async fn sql(ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
    crate::complexity::check(sql).map_err(|e| plan_datafusion_err!("{e}"))?;
    if !sql.to_ascii_uppercase().contains("ASOF") {
        return ctx.sql(sql).await;
    }
    let text = rewrite_duckdb(sql);
    let state = ctx.state();
    let dialect = state.config().options().sql_parser.dialect;
    let mut statement = state.sql_to_statement(&text, &dialect)?;
    nest_asof_joins(&mut statement);
    let plan = state.statement_to_plan(statement).await?;
    ctx.execute_logical_plan(plan).await
}

/// `sql` (one or more statements) with every `ASOF JOIN`, in either
/// spelling, written as the parenthesized form plain `ctx.sql()` plans once
/// [`crate::install`] ran: for SQL front ends that parse and plan statements
/// themselves (a Postgres-wire server). Text without the word `ASOF` is
/// returned unchanged.
pub fn normalize(sql: &str) -> Result<String> {
    if !sql.to_ascii_uppercase().contains("ASOF") {
        return Ok(sql.to_string());
    }
    let text = rewrite_duckdb(sql);
    let statements = DFParser::parse_sql_with_dialect(&text, &GenericDialect {})?;
    let texts: Vec<String> = statements
        .into_iter()
        .map(|mut statement| {
            nest_asof_joins(&mut statement);
            match &statement {
                DFStatement::CopyTo(copy) => copy_text(copy),
                _ => statement.to_string(),
            }
        })
        .collect();
    Ok(texts.join(";\n"))
}

/// A `COPY ... TO` statement as text that parses back to it: DataFusion's
/// `Display` leaves the target unquoted (`TO /tmp/out`), which does not.
fn copy_text(copy: &CopyToStatement) -> String {
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut text = format!("COPY {} TO {}", copy.source, quoted(&copy.target));
    if let Some(stored_as) = &copy.stored_as {
        text.push_str(&format!(" STORED AS {stored_as}"));
    }
    if !copy.partitioned_by.is_empty() {
        text.push_str(&format!(
            " PARTITIONED BY ({})",
            copy.partitioned_by.join(", ")
        ));
    }
    if !copy.options.is_empty() {
        let options: Vec<String> = copy
            .options
            .iter()
            .map(|(k, v)| format!("{} {v}", quoted(k)))
            .collect();
        text.push_str(&format!(" OPTIONS ({})", options.join(", ")));
    }
    text
}

/// The byte offset of a tokenizer location in `text` (lines and columns from 1).
fn offset(text: &str, loc: Location) -> usize {
    let mut line_start = 0;
    for _ in 1..loc.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    text[line_start..]
        .char_indices()
        .nth(loc.column.saturating_sub(1) as usize)
        .map_or(text.len(), |(i, _)| line_start + i)
}

/// `sql` with each DuckDB-style `ASOF [LEFT [OUTER]] JOIN b ON ...` written as
/// `ASOF JOIN b MATCH_CONDITION (<marker>) ON ...`; the marker tells the
/// planner to find the inequality in `ON` and whether unmatched rows stay.
/// Text that does not tokenize is returned as is (the parser reports it).
pub(crate) fn rewrite_duckdb(sql: &str) -> String {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location() else {
        return sql.to_string();
    };
    let code: Vec<_> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let kw = |i: usize, k: Keyword| matches!(code.get(i), Some(t) if matches!(&t.token, Token::Word(w) if w.keyword == k && w.quote_style.is_none()));
    // (start, end, replacement), in text order.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if !kw(i, Keyword::ASOF) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let left = kw(j, Keyword::LEFT);
        if left {
            j += 1;
            if kw(j, Keyword::OUTER) {
                j += 1;
            }
        }
        if !kw(j, Keyword::JOIN) {
            i += 1;
            continue;
        }
        // The first ON or MATCH_CONDITION outside parentheses after the joined relation.
        let mut depth = 0i32;
        let mut k = j + 1;
        let mut found = None;
        while k < code.len() {
            match &code[k].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                Token::SemiColon => break,
                _ if depth == 0 && kw(k, Keyword::ON) => {
                    found = Some((k, true));
                    break;
                }
                _ if depth == 0 && kw(k, Keyword::MATCH_CONDITION) => {
                    found = Some((k, false));
                    break;
                }
                _ => {}
            }
            if depth < 0 {
                break;
            }
            k += 1;
        }
        if left {
            // `ASOF LEFT [OUTER] JOIN` -> `ASOF JOIN`.
            let start = offset(sql, code[i + 1].span.start);
            let end = offset(sql, code[j].span.start);
            edits.push((start, end, String::new()));
        }
        if let Some((k, true)) = found {
            let at = offset(sql, code[k].span.start);
            let mark = if left { MARK_LEFT } else { MARK_INNER };
            edits.push((at, at, format!("MATCH_CONDITION ({mark}) ")));
        }
        i = k.max(i + 1);
    }
    let mut out = sql.to_string();
    for (start, end, text) in edits.into_iter().rev() {
        out.replace_range(start..end, &text);
    }
    out
}

/// Wraps each `ASOF JOIN` of `statement` in parentheses, with what it joins
/// to its left, so the [`AsofRelationPlanner`] sees it as a nested join.
pub(crate) fn nest_asof_joins(statement: &mut DFStatement) {
    match statement {
        DFStatement::Statement(s) => {
            let _ = s.visit(&mut Nester);
        }
        DFStatement::Explain(e) => nest_asof_joins(&mut e.statement),
        DFStatement::CopyTo(c) => {
            if let CopyToSource::Query(q) = &mut c.source {
                let _ = q.visit(&mut Nester);
            }
        }
        _ => {}
    }
}

fn is_asof(join: &Join) -> bool {
    matches!(join.join_operator, JoinOperator::AsOf { .. })
}

/// `t` with each `ASOF JOIN` only ever the last join of a nested join:
/// `a J1 b ASOF JOIN c J2 d` becomes `(a J1 b ASOF JOIN c) J2 d`. With `all`,
/// no `ASOF JOIN` is left at this level at all. Nested joins inside are
/// rewritten alike.
fn nest(t: TableWithJoins, all: bool) -> TableWithJoins {
    let n = t.joins.len();
    let mut relation = nest_factor(t.relation);
    let mut pending: Vec<Join> = Vec::with_capacity(n);
    for (i, join) in t.joins.into_iter().enumerate() {
        let wrap = is_asof(&join) && (all || i + 1 < n);
        pending.push(Join {
            relation: nest_factor(join.relation),
            ..join
        });
        if wrap {
            relation = TableFactor::NestedJoin {
                table_with_joins: Box::new(TableWithJoins {
                    relation,
                    joins: std::mem::take(&mut pending),
                }),
                alias: None,
            };
        }
    }
    TableWithJoins {
        relation,
        joins: pending,
    }
}

fn nest_factor(factor: TableFactor) -> TableFactor {
    match factor {
        TableFactor::NestedJoin {
            table_with_joins,
            alias,
        } => TableFactor::NestedJoin {
            table_with_joins: Box::new(nest(*table_with_joins, false)),
            alias,
        },
        other => other,
    }
}

/// The visitor behind [`nest_asof_joins`]: rewrites the `FROM` list of each
/// query (after its subqueries).
struct Nester;

impl VisitorMut for Nester {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        fn body(set: &mut SetExpr) {
            match set {
                SetExpr::Select(select) => {
                    select.from = std::mem::take(&mut select.from)
                        .into_iter()
                        .map(|t| nest(t, true))
                        .collect();
                }
                SetExpr::SetOperation { left, right, .. } => {
                    body(left);
                    body(right);
                }
                _ => {}
            }
        }
        body(&mut query.body);
        ControlFlow::Continue(())
    }
}

/// Plans a parenthesized join whose last join is an `ASOF JOIN` into an
/// [`AsofJoinNode`]; installed by [`crate::install`].
#[derive(Debug, Default)]
pub(crate) struct AsofRelationPlanner;

impl RelationPlanner for AsofRelationPlanner {
    fn plan_relation(
        &self,
        relation: TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<RelationPlanning> {
        let TableFactor::NestedJoin {
            mut table_with_joins,
            alias,
        } = relation
        else {
            return Ok(RelationPlanning::Original(Box::new(relation)));
        };
        if !table_with_joins.joins.last().is_some_and(is_asof) {
            return Ok(RelationPlanning::Original(Box::new(
                TableFactor::NestedJoin {
                    table_with_joins,
                    alias,
                },
            )));
        }
        let Some(join) = table_with_joins.joins.pop() else {
            return plan_err!("ASOF JOIN without a joined relation");
        };
        let left_factor = if table_with_joins.joins.is_empty() {
            table_with_joins.relation
        } else {
            TableFactor::NestedJoin {
                table_with_joins,
                alias: None,
            }
        };
        let left = context.plan(left_factor)?;
        let right = context.plan(join.relation)?;
        let JoinOperator::AsOf {
            match_condition,
            constraint,
        } = join.join_operator
        else {
            return plan_err!("ASOF JOIN expected");
        };
        let node = plan_asof(context, left, right, match_condition, constraint)?;
        let plan = LogicalPlan::Extension(Extension {
            node: Arc::new(node),
        });
        Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(
            plan, alias,
        ))))
    }
}

/// Which input an expression reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
    /// Columns of both sides.
    Both,
    /// No columns.
    None,
}

fn side(e: &Expr, left: &DFSchema, right: &DFSchema) -> Result<Side> {
    let mut l = false;
    let mut r = false;
    for c in e.column_refs() {
        match (left.has_column(c), right.has_column(c)) {
            (true, true) => {
                return plan_err!(
                    "ASOF JOIN: column {c} is ambiguous (both sides have it): qualify it with the table name or alias"
                );
            }
            (true, false) => l = true,
            (false, true) => r = true,
            (false, false) => return plan_err!("ASOF JOIN: no column {c} on either side"),
        }
    }
    Ok(match (l, r) {
        (true, true) => Side::Both,
        (true, false) => Side::Left,
        (false, true) => Side::Right,
        (false, false) => Side::None,
    })
}

/// What one `ON` (or match) conjunct is.
enum Conjunct {
    /// `left = right`.
    Key(Expr, Expr),
    /// `left <op> right`.
    Match(Expr, AsofOp, Expr),
    /// `x - y <= bound` over a left and a right expression (x, y in any order).
    Tolerance(Expr, Expr, Expr),
}

fn classify(e: Expr, left: &DFSchema, right: &DFSchema) -> Result<Conjunct> {
    let unsupported = |e: &Expr| {
        plan_datafusion_err!(
            "ASOF JOIN: the condition {e} is not supported: ON takes equalities between a left \
             and a right expression, one inequality (>=, >, <=, <) between a left and a right \
             time when there is no MATCH_CONDITION, and at most one tolerance \
             `left.t - right.t <= bound` (or `right.t - left.t <= bound`)"
        )
    };
    let Expr::BinaryExpr(BinaryExpr {
        left: a,
        op,
        right: b,
    }) = &e
    else {
        return Err(unsupported(&e));
    };
    let (sa, sb) = (side(a, left, right)?, side(b, left, right)?);
    match (op, sa, sb) {
        (Operator::Eq, Side::Left, Side::Right) => Ok(Conjunct::Key(*a.clone(), *b.clone())),
        (Operator::Eq, Side::Right, Side::Left) => Ok(Conjunct::Key(*b.clone(), *a.clone())),
        (op, Side::Left, Side::Right) if AsofOp::from_operator(*op).is_some() => {
            Ok(Conjunct::Match(
                *a.clone(),
                AsofOp::from_operator(*op).unwrap_or(AsofOp::GtEq),
                *b.clone(),
            ))
        }
        (op, Side::Right, Side::Left) if AsofOp::from_operator(*op).is_some() => {
            Ok(Conjunct::Match(
                *b.clone(),
                AsofOp::from_operator(*op).unwrap_or(AsofOp::GtEq).swap(),
                *a.clone(),
            ))
        }
        (Operator::LtEq | Operator::Lt, Side::Both, Side::None)
        | (Operator::GtEq | Operator::Gt, Side::None, Side::Both) => {
            let diff = if sa == Side::Both { a } else { b };
            let Expr::BinaryExpr(BinaryExpr {
                left: x,
                op: Operator::Minus,
                right: y,
            }) = diff.as_ref()
            else {
                return Err(unsupported(&e));
            };
            match (side(x, left, right)?, side(y, left, right)?) {
                (Side::Left, Side::Right) => {
                    Ok(Conjunct::Tolerance(*x.clone(), *y.clone(), e.clone()))
                }
                (Side::Right, Side::Left) => {
                    Ok(Conjunct::Tolerance(*y.clone(), *x.clone(), e.clone()))
                }
                _ => Err(unsupported(&e)),
            }
        }
        _ => Err(unsupported(&e)),
    }
}

/// The [`AsofJoinNode`] of `left ASOF JOIN right MATCH_CONDITION (m) constraint`.
fn plan_asof(
    context: &mut dyn RelationPlannerContext,
    left: LogicalPlan,
    right: LogicalPlan,
    match_condition: SqlExpr,
    constraint: JoinConstraint,
) -> Result<AsofJoinNode> {
    let marker = match &match_condition {
        SqlExpr::Identifier(Ident { value, .. }) if value == MARK_LEFT => Some(AsofJoinType::Left),
        SqlExpr::Identifier(Ident { value, .. }) if value == MARK_INNER => {
            Some(AsofJoinType::Inner)
        }
        _ => None,
    };
    let (ls, rs) = (left.schema().clone(), right.schema().clone());
    let joined = ls.join(&rs)?;
    let mut conjuncts = Vec::new();
    match constraint {
        JoinConstraint::None => {}
        JoinConstraint::On(e) => {
            conjuncts.extend(split_conjunction_owned(context.sql_to_expr(e, &joined)?));
        }
        JoinConstraint::Using(names) => {
            for name in names {
                let ident = match name.0.as_slice() {
                    [part] => part.as_ident().cloned(),
                    _ => None,
                };
                let Some(ident) = ident else {
                    return plan_err!("ASOF JOIN: USING takes plain column names, not {name}");
                };
                let column = context.normalize_ident(ident);
                let l = normalize_col(Expr::Column(Column::from_name(&column)), &left)?;
                let r = normalize_col(Expr::Column(Column::from_name(&column)), &right)?;
                conjuncts.push(l.eq(r));
            }
        }
        JoinConstraint::Natural => return plan_err!("ASOF JOIN does not take NATURAL"),
    }
    let mut matches = Vec::new();
    if marker.is_none() {
        let m = context.sql_to_expr(match_condition, &joined)?;
        match classify(m, &ls, &rs)? {
            Conjunct::Match(l, op, r) => matches.push((l, op, r)),
            _ => {
                return plan_err!(
                    "ASOF JOIN: MATCH_CONDITION takes one comparison (>=, >, <=, <) between a left and a right time"
                );
            }
        }
    }
    let mut keys = Vec::new();
    let mut tolerance = None;
    for c in conjuncts {
        match classify(c, &ls, &rs)? {
            Conjunct::Key(l, r) => keys.push((normalize_col(l, &left)?, normalize_col(r, &right)?)),
            Conjunct::Match(l, op, r) if marker.is_some() => matches.push((l, op, r)),
            Conjunct::Match(l, op, r) => {
                return plan_err!(
                    "ASOF JOIN: the ON of a MATCH_CONDITION join takes only equalities (and a tolerance), not {l} {op} {r}"
                );
            }
            Conjunct::Tolerance(l, r, e) => {
                if tolerance.is_some() {
                    return plan_err!("ASOF JOIN takes at most one tolerance condition");
                }
                tolerance = Some((l, r, e));
            }
        }
    }
    let (lt, op, rt) = match matches.len() {
        1 => matches.remove(0),
        0 => {
            return plan_err!(
                "ASOF JOIN ... ON needs one inequality (>=, >, <=, <) between a left and a right time, beside the equalities"
            );
        }
        n => {
            return plan_err!(
                "ASOF JOIN ... ON takes exactly one inequality between a left and a right time, found {n}"
            );
        }
    };
    let (lt, rt) = (normalize_col(lt, &left)?, normalize_col(rt, &right)?);
    let tolerance = match tolerance {
        None => None,
        Some((tl, tr, e)) => {
            let (tl, tr) = (normalize_col(tl, &left)?, normalize_col(tr, &right)?);
            if tl != lt || tr != rt {
                return plan_err!(
                    "ASOF JOIN: the tolerance {e} must subtract the match times {lt} and {rt}"
                );
            }
            Some(normalize_col(
                e,
                &LogicalPlan::EmptyRelation(datafusion::logical_expr::EmptyRelation {
                    produce_one_row: false,
                    schema: Arc::new(joined.clone()),
                }),
            )?)
        }
    };
    AsofJoinNode::try_new(
        left,
        right,
        keys,
        (lt, rt),
        op,
        marker.unwrap_or(AsofJoinType::Left),
        tolerance,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_normalized_copy_parses_back_with_its_target() {
        let sql = "COPY (SELECT * FROM a ASOF JOIN b MATCH_CONDITION (a.t >= b.t)) \
                   TO '/tmp/it''s out' STORED AS LEROBOT OPTIONS (fps '10')";
        let text = normalize(sql).unwrap();
        assert!(
            text.contains("TO '/tmp/it''s out' STORED AS LEROBOT OPTIONS ('fps' '10')"),
            "{text}"
        );
        let back = DFParser::parse_sql_with_dialect(&text, &GenericDialect {}).unwrap();
        let DFStatement::CopyTo(copy) = &back[0] else {
            panic!("{text}");
        };
        assert_eq!(copy.target, "/tmp/it's out");
    }

    #[test]
    fn duckdb_spelling_gets_a_marker_match_condition() {
        assert_eq!(
            rewrite_duckdb("SELECT * FROM a ASOF JOIN b ON a.t >= b.t"),
            format!("SELECT * FROM a ASOF JOIN b MATCH_CONDITION ({MARK_INNER}) ON a.t >= b.t")
        );
        assert_eq!(
            rewrite_duckdb(
                "SELECT * FROM a asof left outer join (SELECT * FROM c JOIN d ON c.x = d.x) b\n  ON a.t >= b.t"
            ),
            format!(
                "SELECT * FROM a asof join (SELECT * FROM c JOIN d ON c.x = d.x) b\n  MATCH_CONDITION ({MARK_LEFT}) ON a.t >= b.t"
            )
        );
        // Two joins; the second already in Snowflake's spelling.
        assert_eq!(
            rewrite_duckdb(
                "SELECT 'ASOF JOIN x ON' FROM a ASOF LEFT JOIN b ON a.t >= b.t -- ASOF JOIN\n\
                 ASOF JOIN c MATCH_CONDITION (a.t <= c.t) ON a.k = c.k"
            ),
            format!(
                "SELECT 'ASOF JOIN x ON' FROM a ASOF JOIN b MATCH_CONDITION ({MARK_LEFT}) ON a.t >= b.t -- ASOF JOIN\n\
                 ASOF JOIN c MATCH_CONDITION (a.t <= c.t) ON a.k = c.k"
            )
        );
        // Not a join, or not SQL that tokenizes: unchanged.
        for sql in ["SELECT asof FROM t", "SELECT 'unterminated"] {
            assert_eq!(rewrite_duckdb(sql), sql);
        }
    }

    #[test]
    fn asof_joins_are_nested_so_only_the_last_join_of_a_nest_is_asof() {
        let state = datafusion::prelude::SessionContext::new().state();
        let dialect = datafusion::config::Dialect::Generic;
        let sql = "SELECT * FROM a JOIN b ON a.x = b.x ASOF JOIN c MATCH_CONDITION (a.t >= c.t) \
                   JOIN d ON a.y = d.y ASOF JOIN e MATCH_CONDITION (a.t <= e.t)";
        let mut statement = state.sql_to_statement(sql, &dialect).unwrap();
        nest_asof_joins(&mut statement);
        assert_eq!(
            statement.to_string(),
            "SELECT * FROM ((a JOIN b ON a.x = b.x ASOF JOIN c MATCH_CONDITION (a.t >= c.t)) \
             JOIN d ON a.y = d.y ASOF JOIN e MATCH_CONDITION (a.t <= e.t))"
        );
    }
}
