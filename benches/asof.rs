//! `ASOF JOIN` benchmarks on generated in-memory tables.
//!
//! ```text
//! cargo bench --bench asof
//! LOGSQL_ASOF_LEFT=10000000 LOGSQL_ASOF_RIGHT=1000000 cargo bench --bench asof
//! ```
//!
//! Left `l(t, k)` and right `r(t, k, v)`: times strictly increasing with jitter
//! (left every 100 units, right every `100 * LEFT / RIGHT`), `k` one of 16 keys.
//! Groups: `sorted` (both tables declare their (k, t) or t order: no sort in
//! the plan) and `unsorted` (DataFusion sorts both sides first), each with
//! and without the key. The comparison with DuckDB on Parquet is
//! `benches/asof_compare.py`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{SortExpr, col};
use datafusion::prelude::{SessionConfig, SessionContext};

fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// `n` rows `(t, k[, v])` in (k, t) order when `by_key`, else in t order,
/// in batches of 8192; times `i * step + jitter`.
fn table(n: usize, step: i64, value: bool, by_key: bool) -> (Arc<Schema>, Vec<RecordBatch>) {
    let mut rows: Vec<(i64, i64)> = (0..n as i64)
        .map(|i| (i * step + (i * 7919) % step.max(1), (i * 2654435761) % 16))
        .collect();
    if by_key {
        rows.sort_by_key(|r| (r.1, r.0));
    }
    let mut fields = vec![
        Field::new("t", DataType::Int64, false),
        Field::new("k", DataType::Int64, false),
    ];
    if value {
        fields.push(Field::new("v", DataType::Int64, false));
    }
    let schema = Arc::new(Schema::new(fields));
    let batches = rows
        .chunks(8192)
        .map(|c| {
            let mut cols: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from_iter_values(c.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter_values(c.iter().map(|r| r.1))),
            ];
            if value {
                cols.push(Arc::new(Int64Array::from_iter_values(
                    c.iter().map(|r| r.0 / 3),
                )));
            }
            RecordBatch::try_new(Arc::clone(&schema), cols).unwrap()
        })
        .collect();
    (schema, batches)
}

fn context(left: usize, right: usize, sorted: bool, by_key: bool) -> SessionContext {
    let ctx = logsql::session_context_with_config(SessionConfig::new());
    let step = (100 * left / right.max(1)) as i64;
    for (name, n, step, value) in [("l", left, 100, false), ("r", right, step, true)] {
        let (schema, batches) = table(n, step, value, by_key);
        let mut t = MemTable::try_new(schema, vec![batches]).unwrap();
        if sorted {
            let order: Vec<SortExpr> = if by_key {
                vec![col("k").sort(true, true), col("t").sort(true, true)]
            } else {
                vec![col("t").sort(true, true)]
            };
            t = t.with_sort_order(vec![order]);
        }
        ctx.register_table(name, Arc::new(t)).unwrap();
    }
    ctx
}

fn bench(c: &mut Criterion) {
    let (left, right) = (
        size("LOGSQL_ASOF_LEFT", 1_000_000),
        size("LOGSQL_ASOF_RIGHT", 100_000),
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    for sorted in [true, false] {
        let mut group = c.benchmark_group(if sorted { "sorted" } else { "unsorted" });
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(10));
        for keyed in [false, true] {
            let ctx = context(left, right, sorted, keyed);
            let on = if keyed { " ON l.k = r.k" } else { "" };
            let sql = format!(
                "SELECT count(*), count(r.v), sum(r.v) FROM l ASOF JOIN r MATCH_CONDITION (l.t >= r.t){on}"
            );
            let name = format!("{left}x{right}{}", if keyed { "_keyed" } else { "" });
            group.bench_function(name, |b| {
                b.iter(|| {
                    rt.block_on(async {
                        black_box(
                            logsql::sql(&ctx, &sql)
                                .await
                                .unwrap()
                                .collect()
                                .await
                                .unwrap(),
                        )
                    })
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
