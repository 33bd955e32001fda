//! Small SQL helpers shared by the engine tests: run a query, render it, read
//! integer columns and scan metrics from `EXPLAIN ANALYZE`.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt64Type};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;

/// Runs `sql` and collects its batches (panics with the query on error).
pub async fn query(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The error of running `sql` (planning or execution), as text.
pub async fn error(ctx: &SessionContext, sql: &str) -> String {
    match ctx.sql(sql).await {
        Err(e) => e.to_string(),
        Ok(df) => match df.collect().await {
            Err(e) => e.to_string(),
            Ok(b) => panic!(
                "{sql}: expected an error, got\n{}",
                pretty_format_batches(&b).unwrap()
            ),
        },
    }
}

/// The result of `sql` as a pretty table.
pub async fn text(ctx: &SessionContext, sql: &str) -> String {
    pretty_format_batches(&query(ctx, sql).await)
        .unwrap()
        .to_string()
}

/// The rendered plan of `EXPLAIN ANALYZE <sql>` (metrics included).
pub async fn analyze(ctx: &SessionContext, sql: &str) -> String {
    text(ctx, &format!("EXPLAIN ANALYZE {sql}")).await
}

/// A metric of the scan node, summed over partitions, from an EXPLAIN ANALYZE plan.
/// DataFusion prints large counts with a unit (`17.64 K`): those come back
/// approximately (to its printed precision).
pub fn metric(plan: &str, name: &str) -> u64 {
    let key = format!("{name}=");
    let line = plan
        .lines()
        .find(|l| l.contains("DataSourceExec") && l.contains(&key))
        .unwrap_or_else(|| panic!("no {name} in:\n{plan}"));
    let rest = &line[line.find(&key).unwrap() + key.len()..];
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let value: f64 = number
        .parse()
        .unwrap_or_else(|_| panic!("bad {name} in {line}"));
    let unit = rest[number.len()..].trim_start().chars().next();
    let scale = match unit {
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        Some('T') => 1e12,
        _ => 1.0,
    };
    (value * scale).round() as u64
}

/// Single-column i64/u64 values of a query, in row order.
pub async fn ints(ctx: &SessionContext, sql: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for b in query(ctx, sql).await {
        let c = b.column(0);
        for i in 0..c.len() {
            out.push(match c.data_type() {
                DataType::Int64 => c.as_primitive::<Int64Type>().value(i),
                DataType::UInt64 => c.as_primitive::<UInt64Type>().value(i) as i64,
                t => panic!("unexpected type {t}"),
            });
        }
    }
    out
}

/// Rows of two columns (text, integer), e.g. `topic, count(*)`.
pub async fn pairs(ctx: &SessionContext, sql: &str) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for b in query(ctx, sql).await {
        let names = datafusion::arrow::compute::cast(b.column(0), &DataType::Utf8).unwrap();
        let names = names.as_string::<i32>();
        let n = datafusion::arrow::compute::cast(b.column(1), &DataType::Int64).unwrap();
        let n = n.as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            out.push((names.value(i).to_string(), n.value(i)));
        }
    }
    out
}
