//! Small SQL helpers shared by the engine tests: run a query, render it, read
//! integer columns, and run a plan for its rendering and its scans' metrics.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt64Type};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::{ExecutionPlan, collect};
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

/// An executed plan: its rendering as `EXPLAIN ANALYZE` prints it (the text,
/// through `Deref<Target = str>` and `Display`) and the metrics of its logsql
/// scans, read through the plan's metrics API.
pub struct Analyzed {
    /// The query's result.
    pub batches: Vec<RecordBatch>,
    text: String,
    /// Each metric name's sum over every `DataSourceExec` node and partition.
    metrics: BTreeMap<String, u64>,
}

impl std::ops::Deref for Analyzed {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Analyzed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Runs `sql` to the end and returns its plan with metrics, as `EXPLAIN
/// ANALYZE <sql>` would show it.
pub async fn analyze(ctx: &SessionContext, sql: &str) -> Analyzed {
    let plan = ctx
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .create_physical_plan()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let batches = collect(plan.clone(), ctx.task_ctx())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let text = DisplayableExecutionPlan::with_metrics(plan.as_ref())
        .indent(true)
        .to_string();
    let mut metrics = BTreeMap::new();
    scan_metrics(&plan, &mut metrics);
    Analyzed {
        batches,
        text,
        metrics,
    }
}

/// Adds the metrics of the `DataSourceExec` nodes under `plan` to `sums`.
fn scan_metrics(plan: &Arc<dyn ExecutionPlan>, sums: &mut BTreeMap<String, u64>) {
    if plan.downcast_ref::<DataSourceExec>().is_some()
        && let Some(metrics) = plan.metrics()
    {
        for metric in metrics.iter() {
            let name = metric.value().name().to_string();
            // Saturating: timestamps (ns since 1970) of many partitions overflow a sum.
            let sum = sums.entry(name).or_default();
            *sum = sum.saturating_add(metric.value().as_usize() as u64);
        }
    }
    for child in plan.children() {
        scan_metrics(child, sums);
    }
}

/// A metric of the plan's scans, summed over nodes and partitions (exact:
/// read through the metrics API, not from the rendered text).
pub fn metric(plan: &Analyzed, name: &str) -> u64 {
    *plan
        .metrics
        .get(name)
        .unwrap_or_else(|| panic!("no {name} metric in:\n{plan}"))
}

/// The values of the scan metric `name` in a rendered `EXPLAIN ANALYZE` plan
/// (a table, or the CLI's output), one per log scan line, in plan order: for
/// plans only their text shows (another process, a per-scan breakdown).
pub fn text_metrics(plan: &str, name: &str) -> Vec<u64> {
    let key = format!("{name}=");
    plan.lines()
        .filter(|l| l.contains("DataSourceExec"))
        .filter_map(|l| {
            let rest = &l[l.find(&key)? + key.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
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
