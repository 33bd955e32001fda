//! `intervals(source, topic, condition [, max_gap [, min_duration]])`: the
//! stretches of a topic where a condition over its decoded fields holds.
//!
//! Per recording (`file`), in log-time order, each run of consecutive
//! messages whose condition is true (NULL counts as false) is an interval
//! from its first message's `log_time` to its last's; two intervals of a
//! recording whose gap (the next start minus the previous end) is at most
//! `max_gap` merge (default `0`: no merging); intervals shorter than
//! `min_duration` are dropped (default `0`). Columns: `file`, `topic`,
//! `start_time`, `end_time`, `duration` (seconds) and `messages`, in no
//! particular order (`ORDER BY file, start_time` gives time order).
//!
//! The table is a view: the gaps-and-islands query over
//! [`read_topic`](super::read_topic) that a user would otherwise write by
//! hand (window functions partitioned by `file` and ordered by `log_time`),
//! so every scan pushdown, limit and plan check applies to it. The condition
//! is parsed as one SQL expression (nothing after it), and embedded as that.

use std::sync::Arc;

use datafusion::catalog::view::ViewTable;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::table_functions::{literal_text, plan_on_thread, sql_literal};
use crate::units::parse_duration;

/// Registers `intervals`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udtf("intervals", Arc::new(IntervalsFunction));
}

const USAGE: &str = "intervals() takes a path (file, directory or glob), a topic, a condition over the topic's fields and optionally a largest gap to merge over and a shortest duration to keep, e.g. intervals('fleet/', '/odom', 'twist.twist.linear.x > 2.0', '200 ms', '1 s')";

#[derive(Debug)]
struct IntervalsFunction;

impl TableFunctionImpl for IntervalsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let texts: Vec<Option<String>> = args.exprs().iter().map(literal_text).collect();
        let (path, topic, condition, rest) = match texts.as_slice() {
            [Some(p), Some(t), Some(c), rest @ ..] if rest.len() <= 2 => (p, t, c, rest),
            _ => return Err(DataFusionError::Plan(USAGE.into())),
        };
        let ns = |i: usize, name: &str| -> Result<i64> {
            match rest.get(i) {
                None => Ok(0),
                Some(None) => Err(DataFusionError::Plan(format!(
                    "intervals(): {name} must be text such as '200 ms'; {USAGE}"
                ))),
                Some(Some(text)) => {
                    let d = parse_duration(text)
                        .map_err(|e| DataFusionError::Plan(format!("intervals(): {name}: {e}")))?;
                    i64::try_from(d.as_nanos()).map_err(|_| {
                        DataFusionError::Plan(format!("intervals(): {name} '{text}' is too long"))
                    })
                }
            }
        };
        let spec = Spec {
            path: path.clone(),
            topic: topic.clone(),
            condition: one_expression(condition)?,
            max_gap_ns: ns(0, "max_gap")?,
            min_duration_ns: ns(1, "min_duration")?,
        };
        let what = format!("intervals('{path}', '{topic}', ...)");
        plan_on_thread(&args, &what.clone(), |state| async move {
            let plan = state.create_logical_plan(&spec.sql()).await?;
            Ok(Arc::new(ViewTable::new(plan, Some(what))) as Arc<dyn TableProvider>)
        })
    }
}

/// `condition` parsed as one SQL expression and printed back, or why not.
fn one_expression(condition: &str) -> Result<String> {
    let bad = |e: String| {
        DataFusionError::Plan(format!(
            "intervals(): the condition {condition:?} is not one SQL expression ({e}); {USAGE}"
        ))
    };
    let mut parser = Parser::new(&GenericDialect {})
        .try_with_sql(condition)
        .map_err(|e| bad(e.to_string()))?;
    let expr = parser.parse_expr().map_err(|e| bad(e.to_string()))?;
    match parser.next_token().token {
        Token::EOF => Ok(expr.to_string()),
        t => Err(bad(format!("{t} after the expression"))),
    }
}

/// One call of `intervals`.
#[derive(Debug, Clone, PartialEq)]
struct Spec {
    path: String,
    topic: String,
    /// One expression, printed by the SQL parser.
    condition: String,
    max_gap_ns: i64,
    min_duration_ns: i64,
}

impl Spec {
    /// The gaps-and-islands query: runs of true conditions per file, then
    /// runs merged over gaps of at most `max_gap`, then the short ones left
    /// out. A run is found from its edges: one pass of window functions over
    /// the messages marks each run's first and last message (and numbers the
    /// messages), and only those edge rows go on, so the work past the scan is
    /// one sort and one window pass over the topic, and the rest is over two
    /// rows per run (numbering the runs with a running count over every
    /// message, as the hand-written form does, took three times the
    /// compute past the scan).
    fn sql(&self) -> String {
        let (path, topic, condition) = (
            sql_literal(&self.path),
            sql_literal(&self.topic),
            &self.condition,
        );
        let (gap, min) = (self.max_gap_ns, self.min_duration_ns);
        format!(
            "WITH m AS (
  SELECT file, CAST(log_time AS BIGINT) AS t, coalesce(({condition}), false) AS c
  FROM read_topic({path}, {topic})
),
edges AS (
  SELECT file, t,
         c AND NOT coalesce(lag(c) OVER (PARTITION BY file ORDER BY t), false) AS s,
         c AND NOT coalesce(lead(c) OVER (PARTITION BY file ORDER BY t), false) AS e,
         CAST(row_number() OVER (PARTITION BY file ORDER BY t) AS BIGINT) AS rn
  FROM m
),
islands AS (
  SELECT file, lo, hi, n FROM (
    SELECT file, s, t AS lo,
           CASE WHEN e THEN t ELSE lead(t) OVER (PARTITION BY file ORDER BY rn) END AS hi,
           CASE WHEN e THEN 1 ELSE lead(rn) OVER (PARTITION BY file ORDER BY rn) - rn + 1 END AS n
    FROM edges WHERE s OR e
  ) WHERE s
),
gaps AS (
  SELECT file, lo, hi, n, lo - lag(hi) OVER (PARTITION BY file ORDER BY lo) AS gap
  FROM islands
),
groups AS (
  SELECT file, lo, hi, n,
         sum(CASE WHEN coalesce(gap <= {gap}, false) THEN 0 ELSE 1 END)
           OVER (PARTITION BY file ORDER BY lo ROWS UNBOUNDED PRECEDING) AS g
  FROM gaps
)
SELECT file, {topic} AS topic,
       arrow_cast(min(lo), 'Timestamp(Nanosecond, Some(\"UTC\"))') AS start_time,
       arrow_cast(max(hi), 'Timestamp(Nanosecond, Some(\"UTC\"))') AS end_time,
       CAST(max(hi) - min(lo) AS DOUBLE) / 1e9 AS duration,
       CAST(sum(n) AS BIGINT) AS messages
FROM groups
GROUP BY file, g
HAVING max(hi) - min(lo) >= {min}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_is_one_expression() {
        assert_eq!(
            one_expression("twist.twist.linear.x > 2.0").unwrap(),
            "twist.twist.linear.x > 2.0"
        );
        for bad in ["x > 1) AS c FROM t --", "x > 1; DROP TABLE t", "", "x >"] {
            let e = one_expression(bad).unwrap_err().to_string();
            assert!(e.contains("is not one SQL expression"), "{bad}: {e}");
        }
    }
}
