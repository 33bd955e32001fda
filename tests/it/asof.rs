//! `ASOF JOIN`: both SQL spellings, the operator's semantics (ties, NULLs,
//! tolerance, outer/inner), plans, and real recordings.

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};

/// A logsql context with `target_partitions` partitions.
fn context(target_partitions: usize) -> SessionContext {
    logsql::session_context_with_config(
        SessionConfig::new().with_target_partitions(target_partitions),
    )
}

/// The result of `sql` through [`logsql::sql`], as a pretty table.
async fn text(ctx: &SessionContext, sql: &str) -> String {
    let batches = logsql::sql(ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    pretty_format_batches(&batches).unwrap().to_string()
}

/// The error of `sql` through [`logsql::sql`].
async fn error(ctx: &SessionContext, sql: &str) -> String {
    match logsql::sql(ctx, sql).await {
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

/// Two small tables: `l(k, t, name)` and `r(k, t, v)`.
async fn tables(ctx: &SessionContext) {
    for sql in [
        "CREATE TABLE l(k INT, t BIGINT, name VARCHAR) AS VALUES \
         (1, 10, 'a'), (1, 20, 'b'), (1, 25, 'c'), (2, 10, 'd'), (2, 5, 'e'), (3, 7, 'f'), \
         (NULL, 20, 'g'), (1, NULL, 'h')",
        "CREATE TABLE r(k INT, t BIGINT, v INT) AS VALUES \
         (1, 10, 100), (1, 15, 150), (1, 20, 200), (1, 20, 201), (2, 6, 60), (2, 11, 110), \
         (NULL, 1, 999), (1, NULL, 998)",
    ] {
        ctx.sql(sql).await.unwrap().collect().await.unwrap();
    }
}

/// The expected rows of [`snowflake_spelling_with_keys`]: ties pick the last
/// equal-time row (201), NULL keys and times never match, unmatched rows stay.
const WITH_KEYS: &str = "\
+------+---+----+----+-----+
| name | k | t  | rt | v   |
+------+---+----+----+-----+
| a    | 1 | 10 | 10 | 100 |
| b    | 1 | 20 | 20 | 201 |
| c    | 1 | 25 | 20 | 201 |
| d    | 2 | 10 | 6  | 60  |
| e    | 2 | 5  |    |     |
| f    | 3 | 7  |    |     |
| g    |   | 20 |    |     |
| h    | 1 |    |    |     |
+------+---+----+----+-----+";

#[tokio::test]
async fn all_spellings_agree_on_partitions_1_2_7() {
    for partitions in [1, 2, 7] {
        let ctx = context(partitions);
        tables(&ctx).await;
        let select = "SELECT l.name, l.k, l.t, r.t AS rt, r.v";
        for sql in [
            format!("{select} FROM l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) ON l.k = r.k ORDER BY l.name"),
            // The match condition written the other way round.
            format!("{select} FROM l ASOF JOIN r MATCH_CONDITION (r.t <= l.t) ON r.k = l.k ORDER BY l.name"),
            format!("{select} FROM l ASOF LEFT JOIN r ON l.k = r.k AND l.t >= r.t ORDER BY l.name"),
            format!("{select} FROM l ASOF LEFT JOIN r USING (k) MATCH_CONDITION (l.t >= r.t) ORDER BY l.name")
                .replace("USING (k) MATCH_CONDITION (l.t >= r.t)", "MATCH_CONDITION (l.t >= r.t) USING (k)"),
            // Plain ctx.sql() takes the parenthesized form.
            format!("{select} FROM (l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) ON l.k = r.k) ORDER BY l.name"),
        ] {
            assert_eq!(text(&ctx, &sql).await, WITH_KEYS, "{sql} ({partitions} partitions)");
        }
        let plain = ctx
            .sql(&format!("{select} FROM (l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) ON l.k = r.k) ORDER BY l.name"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        assert_eq!(
            pretty_format_batches(&plain).unwrap().to_string(),
            WITH_KEYS
        );
    }
}

#[tokio::test]
async fn snowflake_spelling_with_keys() {
    let ctx = context(4);
    tables(&ctx).await;
    let got = text(
        &ctx,
        "SELECT l.name, l.k, l.t, r.t AS rt, r.v FROM l ASOF JOIN r \
         MATCH_CONDITION (l.t >= r.t) ON l.k = r.k ORDER BY l.name",
    )
    .await;
    assert_eq!(got, WITH_KEYS);
}

#[tokio::test]
async fn duckdb_inner_spelling_drops_unmatched_rows() {
    let ctx = context(3);
    tables(&ctx).await;
    let got = text(
        &ctx,
        "SELECT l.name, r.v FROM l ASOF JOIN r ON l.k = r.k AND l.t >= r.t ORDER BY l.name",
    )
    .await;
    assert_eq!(
        got,
        "\
+------+-----+
| name | v   |
+------+-----+
| a    | 100 |
| b    | 201 |
| c    | 201 |
| d    | 60  |
+------+-----+"
    );
}

#[tokio::test]
async fn four_operators_without_keys() {
    let ctx = context(2);
    tables(&ctx).await;
    let mut got = Vec::new();
    for op in [">=", ">", "<=", "<"] {
        let sql = format!(
            "SELECT string_agg(l.name || ':' || coalesce(CAST(r.v AS VARCHAR), '-'), ' ' ORDER BY l.name) AS m \
             FROM l ASOF JOIN r MATCH_CONDITION (l.t {op} r.t)"
        );
        let row = text(&ctx, &sql).await.lines().nth(3).unwrap().to_string();
        got.push(format!(
            "{op} {}",
            row.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    // Right times (NULL-key rows take part: there are no keys): 1:999, 6:60, 10:100,
    // 11:110, 15:150, 20:200, 20:201 (ties: the last); the NULL time never matches.
    assert_eq!(
        got,
        [
            ">= | a:100 b:201 c:201 d:100 e:999 f:60 g:201 h:- |",
            "> | a:60 b:150 c:201 d:60 e:999 f:60 g:150 h:- |",
            "<= | a:100 b:201 c:- d:100 e:60 f:100 g:201 h:- |",
            "< | a:110 b:- c:- d:110 e:60 f:100 g:- h:- |",
        ]
    );
}

#[tokio::test]
async fn tolerance_turns_stale_matches_into_nulls() {
    let ctx = context(2);
    tables(&ctx).await;
    let got = text(
        &ctx,
        "SELECT l.name, r.v FROM l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) \
         ON l.k = r.k AND l.t - r.t <= 3 ORDER BY l.name",
    )
    .await;
    // c (25 vs 20) and d (10 vs 6) are beyond 3: NULLs, not dropped rows.
    assert_eq!(
        got,
        "\
+------+-----+
| name | v   |
+------+-----+
| a    | 100 |
| b    | 201 |
| c    |     |
| d    |     |
| e    |     |
| f    |     |
| g    |     |
| h    |     |
+------+-----+"
    );
    // DuckDB's spelling with the tolerance drops them (inner).
    let got = text(
        &ctx,
        "SELECT l.name, r.v FROM l ASOF JOIN r ON l.k = r.k AND r.t <= l.t AND l.t - r.t < 5 ORDER BY l.name",
    )
    .await;
    assert_eq!(
        got,
        "\
+------+-----+
| name | v   |
+------+-----+
| a    | 100 |
| b    | 201 |
| d    | 60  |
+------+-----+"
    );
}

#[tokio::test]
async fn conditions_that_are_not_one_inequality_fail_clearly() {
    let ctx = context(1);
    tables(&ctx).await;
    let cases = [
        (
            "SELECT * FROM l ASOF JOIN r ON l.k = r.k",
            "needs one inequality",
        ),
        (
            "SELECT * FROM l ASOF JOIN r ON l.t >= r.t AND l.k <= r.k",
            "exactly one inequality",
        ),
        (
            "SELECT * FROM l ASOF JOIN r ON l.t >= r.t OR l.k = r.k",
            "is not supported",
        ),
        (
            "SELECT * FROM l ASOF JOIN r MATCH_CONDITION (l.t = r.t)",
            "MATCH_CONDITION takes one comparison",
        ),
        (
            "SELECT * FROM l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) ON l.k >= r.k",
            "takes only equalities",
        ),
        (
            "SELECT * FROM l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) ON k = k",
            "ambiguous",
        ),
        (
            "SELECT * FROM l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) ON l.k - r.k <= 1",
            "must subtract the match times",
        ),
    ];
    for (sql, want) in cases {
        let e = error(&ctx, sql).await;
        assert!(e.contains(want), "{sql}: {e}");
    }
}

#[tokio::test]
async fn keys_and_times_of_different_types_are_coerced() {
    let ctx = context(3);
    for sql in [
        "CREATE TABLE a(k SMALLINT, t TIMESTAMP(3)) AS VALUES \
         (1, TIMESTAMP '2024-01-01 00:00:01.500'), (2, TIMESTAMP '2024-01-01 00:00:03')",
        "CREATE TABLE b(k BIGINT, t TIMESTAMP, x DOUBLE) AS VALUES \
         (1, TIMESTAMP '2024-01-01 00:00:01.499999999', 1.5), (1, TIMESTAMP '2024-01-01 00:00:01.500000001', 2.5), \
         (2, TIMESTAMP '2024-01-01 00:00:02', 3.5)",
        "CREATE TABLE f(t DOUBLE) AS VALUES (0.5), (1.5), (2.25)",
        "CREATE TABLE g(t INT, y INT) AS VALUES (1, 10), (2, 20)",
    ] {
        ctx.sql(sql).await.unwrap().collect().await.unwrap();
    }
    let got = text(
        &ctx,
        "SELECT a.k, b.x FROM a ASOF JOIN b MATCH_CONDITION (a.t >= b.t) ON a.k = b.k ORDER BY a.k",
    )
    .await;
    assert_eq!(
        got,
        "\
+---+-----+
| k | x   |
+---+-----+
| 1 | 1.5 |
| 2 | 3.5 |
+---+-----+"
    );
    let got = text(
        &ctx,
        "SELECT f.t, g.y FROM f ASOF JOIN g MATCH_CONDITION (f.t <= g.t) ORDER BY f.t",
    )
    .await;
    assert_eq!(
        got,
        "\
+------+----+
| t    | y  |
+------+----+
| 0.5  | 10 |
| 1.5  | 20 |
| 2.25 |    |
+------+----+"
    );
}

#[tokio::test]
async fn plans_sort_only_unordered_inputs_and_report_metrics() {
    let ctx = context(2);
    tables(&ctx).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.parquet");
    let path = path.display();
    ctx.sql(&format!("COPY (SELECT * FROM r ORDER BY k, t) TO '{path}'"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE rs(k INT, t BIGINT, v INT) STORED AS PARQUET LOCATION '{path}' \
         WITH ORDER (k ASC NULLS FIRST, t ASC NULLS FIRST)"
    ))
    .await
    .unwrap();
    let sql = "SELECT l.name, rs.v FROM l ASOF JOIN rs MATCH_CONDITION (l.t >= rs.t) ON l.k = rs.k";
    let plan = text(&ctx, &format!("EXPLAIN ANALYZE {sql}")).await;
    let lines: Vec<&str> = plan.lines().collect();
    let join = lines
        .iter()
        .position(|l| l.contains("AsofJoinExec"))
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(lines[join].contains("matched_rows=4"), "{plan}");
    assert!(lines[join].contains("max_buffered_rows="), "{plan}");
    // One sort, of the unordered left side (a memory table); the Parquet file
    // declares its order and gets none.
    assert_eq!(plan.matches("SortExec").count(), 1, "{plan}");
    let sort = lines.iter().position(|l| l.contains("SortExec")).unwrap();
    let parquet = lines
        .iter()
        .position(|l| l.contains("DataSourceExec") && l.contains("parquet"))
        .unwrap();
    assert!(sort < parquet, "{plan}");
}

#[tokio::test]
async fn a_right_run_over_the_memory_limit_fails_clearly() {
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(256 * 1024, 1.0)
        .build_arc()
        .unwrap();
    let ctx =
        SessionContext::new_with_config_rt(SessionConfig::new().with_target_partitions(1), runtime);
    logsql::register(&ctx).unwrap();
    // 100,000 right rows tied at one time: `<=` holds the whole tie run.
    let e = error(
        &ctx,
        "SELECT count(r.value) FROM (SELECT 0 AS t) l ASOF JOIN \
         (SELECT value, 1 AS t FROM generate_series(1, 100000)) r MATCH_CONDITION (l.t <= r.t)",
    )
    .await;
    assert!(
        e.contains("ASOF JOIN: holding") && e.contains("memory limit"),
        "{e}"
    );
}

/// A small deterministic generator (xorshift64*), for the property test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A value below `n`, or NULL one time in `null_in`.
    fn maybe(&mut self, n: u64, null_in: u64) -> Option<i64> {
        (self.below(null_in) != 0).then(|| self.below(n) as i64)
    }
}

/// One generated row: (id, key, time).
type Row = (i64, Option<i64>, Option<i64>);

/// A memory table of `rows` spread over `partitions` partitions in generated
/// (unsorted) order, with keys and times of the given types.
fn mem_table(
    rows: &[Row],
    partitions: usize,
    key_type: datafusion::arrow::datatypes::DataType,
    time_type: datafusion::arrow::datatypes::DataType,
    rng: &mut Rng,
) -> std::sync::Arc<datafusion::datasource::MemTable> {
    use datafusion::arrow::array::{ArrayRef, Int64Array};
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use std::sync::Arc;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k", key_type.clone(), true),
        Field::new("t", time_type.clone(), true),
    ]));
    let mut parts: Vec<Vec<Row>> = vec![Vec::new(); partitions];
    for row in rows {
        parts[rng.below(partitions as u64) as usize].push(*row);
    }
    let batches = parts
        .into_iter()
        .map(|part| {
            // Each partition in up to three batches.
            let mut out = Vec::new();
            for chunk in part.chunks(part.len().div_ceil(3).max(1)) {
                let ids: ArrayRef =
                    Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.0)));
                let ks: ArrayRef = Arc::new(chunk.iter().map(|r| r.1).collect::<Int64Array>());
                let ts: ArrayRef = Arc::new(chunk.iter().map(|r| r.2).collect::<Int64Array>());
                let columns = vec![
                    ids,
                    cast(&ks, &key_type).unwrap(),
                    cast(&ts, &time_type).unwrap(),
                ];
                out.push(RecordBatch::try_new(Arc::clone(&schema), columns).unwrap());
            }
            out
        })
        .collect();
    Arc::new(datafusion::datasource::MemTable::try_new(schema, batches).unwrap())
}

/// A left id and, when it matches, the best right time and the ids at it.
type Expected = (i64, Option<(i64, Vec<i64>)>);

/// The naive as-of match of each left row: the best right time and the ids
/// of the right rows at it (any of them may be the one chosen by tie order).
fn reference(left: &[Row], right: &[Row], op: &str, keys: bool) -> Vec<Expected> {
    left.iter()
        .map(|&(id, k, t)| {
            let Some(t) = t.filter(|_| !keys || k.is_some()) else {
                return (id, None);
            };
            let ok = |rt: i64| match op {
                ">=" => t >= rt,
                ">" => t > rt,
                "<=" => t <= rt,
                _ => t < rt,
            };
            let candidates: Vec<(i64, i64)> = right
                .iter()
                .filter(|r| !keys || (r.1.is_some() && r.1 == k))
                .filter_map(|r| r.2.filter(|&rt| ok(rt)).map(|rt| (rt, r.0)))
                .collect();
            let best = if op.starts_with('>') {
                candidates.iter().map(|c| c.0).max()
            } else {
                candidates.iter().map(|c| c.0).min()
            };
            (
                id,
                best.map(|b| {
                    (
                        b,
                        candidates
                            .iter()
                            .filter(|c| c.0 == b)
                            .map(|c| c.1)
                            .collect(),
                    )
                }),
            )
        })
        .collect()
}

#[tokio::test]
async fn random_inputs_match_a_naive_reference() {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{DataType, Int64Type};
    let mut checked = 0;
    for seed in 1..=24u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (nl, nr) = (rng.below(40) as usize, rng.below(60) as usize);
        // Few keys and times: many duplicates and ties; some NULLs.
        let left: Vec<Row> = (0..nl as i64)
            .map(|i| (i, rng.maybe(3, 8), rng.maybe(20, 8)))
            .collect();
        let right: Vec<Row> = (0..nr as i64)
            .map(|i| (1000 + i, rng.maybe(3, 8), rng.maybe(20, 8)))
            .collect();
        for partitions in [1, 2, 7] {
            let ctx = context(partitions);
            let lt = mem_table(
                &left,
                1 + rng.below(3) as usize,
                DataType::Int32,
                DataType::Int64,
                &mut rng,
            );
            let rt = mem_table(
                &right,
                1 + rng.below(4) as usize,
                DataType::Int64,
                DataType::Int32,
                &mut rng,
            );
            ctx.register_table("l", lt).unwrap();
            ctx.register_table("r", rt).unwrap();
            for op in [">=", ">", "<=", "<"] {
                for keys in [false, true] {
                    let want = reference(&left, &right, op, keys);
                    let on = if keys { " ON l.k = r.k" } else { "" };
                    let duck_on = if keys { "l.k = r.k AND " } else { "" };
                    for (inner, sql) in [
                        (
                            false,
                            format!(
                                "SELECT l.id, r.id, r.t FROM l ASOF JOIN r MATCH_CONDITION (l.t {op} r.t){on}"
                            ),
                        ),
                        (
                            true,
                            format!(
                                "SELECT l.id, r.id, r.t FROM l ASOF JOIN r ON {duck_on}l.t {op} r.t"
                            ),
                        ),
                    ] {
                        let batches = logsql::sql(&ctx, &sql)
                            .await
                            .unwrap()
                            .collect()
                            .await
                            .unwrap();
                        let mut got: Vec<(i64, Option<(i64, i64)>)> = Vec::new();
                        for b in &batches {
                            let (lid, rid) = (
                                b.column(0).as_primitive::<Int64Type>(),
                                b.column(1).as_primitive::<Int64Type>(),
                            );
                            let rtime =
                                datafusion::arrow::compute::cast(b.column(2), &DataType::Int64)
                                    .unwrap();
                            let rtime = rtime.as_primitive::<Int64Type>();
                            for i in 0..b.num_rows() {
                                got.push((
                                    lid.value(i),
                                    rid.is_valid(i).then(|| (rid.value(i), rtime.value(i))),
                                ));
                            }
                        }
                        got.sort_by_key(|g| g.0);
                        let expected: Vec<_> =
                            want.iter().filter(|w| !inner || w.1.is_some()).collect();
                        let context = format!("seed {seed}, {partitions} partitions: {sql}");
                        assert_eq!(got.len(), expected.len(), "{context}");
                        for (g, w) in got.iter().zip(expected) {
                            assert_eq!(g.0, w.0, "{context}");
                            match (&g.1, &w.1) {
                                (None, None) => {}
                                (Some((rid, rtime)), Some((best, ids))) => {
                                    assert_eq!(rtime, best, "{context}: left {}", g.0);
                                    assert!(
                                        ids.contains(rid),
                                        "{context}: left {} got {rid}, ties {ids:?}",
                                        g.0
                                    );
                                }
                                _ => {
                                    panic!("{context}: left {}: got {:?}, want {:?}", g.0, g.1, w.1)
                                }
                            }
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 24 * 3 * 4 * 2 * 2);
}

/// The demo recording `name` of `tests/data`.
fn demo(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Checks `ASOF JOIN` of the relations `left` and `right` (each with a time
/// column `t`, and a key column `k` when `keyed`) against a non-equi
/// `LEFT JOIN` with `max`/`min`, for the four operators; returns the number
/// of left rows and of matched ones for `>=`.
async fn check_against_join(
    ctx: &SessionContext,
    left: &str,
    right: &str,
    keyed: bool,
) -> (usize, usize) {
    let mut counts = (0, 0);
    for (op, flip, agg) in [
        (">=", "<=", "max"),
        (">", "<", "max"),
        ("<=", ">=", "min"),
        ("<", ">", "min"),
    ] {
        let (k, on, key_eq) = if keyed {
            ("l.k, ", " ON l.k = r.k", "l.k = r.k AND ")
        } else {
            ("", "", "")
        };
        let asof = format!(
            "SELECT DISTINCT {k}l.t, r.t AS rt FROM {left} l ASOF JOIN {right} r MATCH_CONDITION (l.t {op} r.t){on} \
             ORDER BY {k}l.t"
        );
        let naive = format!(
            "SELECT {k}l.t, {agg}(r.t) AS rt FROM {left} l LEFT JOIN {right} r ON {key_eq}r.t {flip} l.t \
             GROUP BY {k}l.t ORDER BY {k}l.t"
        );
        let (got, want) = (text(ctx, &asof).await, text(ctx, &naive).await);
        assert_eq!(got, want, "{asof}");
        if op == ">=" {
            let n = format!(
                "SELECT count(*), count(r.t) FROM {left} l ASOF JOIN {right} r MATCH_CONDITION (l.t {op} r.t){on}"
            );
            let batches = logsql::sql(ctx, &n).await.unwrap().collect().await.unwrap();
            use datafusion::arrow::array::AsArray;
            use datafusion::arrow::datatypes::Int64Type;
            let b = &batches[0];
            counts = (
                b.column(0).as_primitive::<Int64Type>().value(0) as usize,
                b.column(1).as_primitive::<Int64Type>().value(0) as usize,
            );
        }
    }
    counts
}

#[tokio::test]
async fn recordings_of_every_format_match_a_naive_join() {
    let ctx = context(4);
    let topic = |file: &str, topic: &str| {
        format!(
            "(SELECT log_time AS t FROM '{}' WHERE topic = '{topic}')",
            demo(file)
        )
    };
    // (file, left topic, right topic, left rows, matched by `>=`)
    let cases = [
        ("demo.mcap", "/imu", "/tf", 2000, 1999),
        ("demo.bag", "/imu", "/odom", 400, 399),
        (
            "demo.record",
            "/apollo/canbus/chassis",
            "/apollo/localization/pose",
            306,
            305,
        ),
        ("demo.bddf", "bosdyn.api.RobotState", "imu/accel", 51, 50),
    ];
    for (file, l, r, rows, matched) in cases {
        let got = check_against_join(&ctx, &topic(file, l), &topic(file, r), false).await;
        assert_eq!(got, (rows, matched), "{file}");
    }
    // read_topic (decoded) on both sides gives the same rows as the messages table.
    let rt = |t: &str| {
        format!(
            "(SELECT log_time AS t FROM read_topic('{}', '{t}'))",
            demo("demo.mcap")
        )
    };
    assert_eq!(
        check_against_join(&ctx, &rt("/imu"), &rt("/tf"), false).await,
        (2000, 1999)
    );
}

#[tokio::test]
async fn typed_tables_join_per_key() {
    let ctx = context(3);
    let positions = format!("positions('{}')", demo("demo.log"));
    // Every 10th frame's actors, 10 ms later, against all positions: each
    // finds its own actor's row of that frame.
    let left = format!(
        "(SELECT actor_id AS k, log_time + INTERVAL '10 milliseconds' AS t, frame FROM {positions} WHERE frame % 10 = 0)"
    );
    let right = format!("(SELECT actor_id AS k, log_time AS t, frame FROM {positions})");
    let (rows, matched) = check_against_join(&ctx, &left, &right, true).await;
    assert_eq!((rows, matched), (117, 117));
    let same = text(
        &ctx,
        &format!(
            "SELECT count(*) AS n FROM {left} l ASOF JOIN {right} r MATCH_CONDITION (l.t >= r.t) \
             ON l.k = r.k WHERE l.frame = r.frame"
        ),
    )
    .await;
    assert!(same.contains("| 117 |"), "{same}");
}

#[tokio::test]
async fn parquet_and_a_generated_grid() {
    let ctx = context(2);
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("tf.parquet");
    ctx.sql(&format!(
        "COPY (SELECT log_time FROM '{}' WHERE topic = '/tf') TO '{}'",
        demo("demo.mcap"),
        parquet.display()
    ))
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    // Resampling /tf on a 100 ms grid (a timestamp without time zone against
    // log_time in UTC), from the recording and from the Parquet copy.
    let grid = "generate_series(TIMESTAMP '2023-11-14T22:13:20Z', TIMESTAMP '2023-11-14T22:13:21Z', \
                INTERVAL '100 milliseconds') g";
    let want = "\
+-------------------------+-------------------------+
| t                       | tf_time                 |
+-------------------------+-------------------------+
| 2023-11-14T22:13:20     |                         |
| 2023-11-14T22:13:20.100 | 2023-11-14T22:13:20.082 |
| 2023-11-14T22:13:20.200 | 2023-11-14T22:13:20.182 |
| 2023-11-14T22:13:20.300 | 2023-11-14T22:13:20.282 |
| 2023-11-14T22:13:20.400 | 2023-11-14T22:13:20.382 |
| 2023-11-14T22:13:20.500 | 2023-11-14T22:13:20.482 |
| 2023-11-14T22:13:20.600 | 2023-11-14T22:13:20.582 |
| 2023-11-14T22:13:20.700 | 2023-11-14T22:13:20.682 |
| 2023-11-14T22:13:20.800 | 2023-11-14T22:13:20.782 |
| 2023-11-14T22:13:20.900 | 2023-11-14T22:13:20.882 |
| 2023-11-14T22:13:21     | 2023-11-14T22:13:20.982 |
+-------------------------+-------------------------+";
    for right in [
        format!("read_topic('{}', '/tf')", demo("demo.mcap")),
        format!("'{}'", parquet.display()),
    ] {
        let sql = format!(
            "SELECT CAST(g.value AS TIMESTAMP(3)) AS t, CAST(tf.log_time AS TIMESTAMP(3)) AS tf_time \
             FROM {grid} ASOF JOIN {right} tf MATCH_CONDITION (g.value >= tf.log_time) ORDER BY t"
        );
        assert_eq!(text(&ctx, &sql).await, want, "{sql}");
    }
    // With a 15 ms tolerance the grid points 18 ms after the last message are NULLs.
    let sql = format!(
        "SELECT count(*) AS n, count(tf.log_time) AS matched FROM {grid} ASOF JOIN read_topic('{}', '/tf') tf \
         MATCH_CONDITION (g.value >= tf.log_time) ON g.value - tf.log_time <= INTERVAL '15 milliseconds'",
        demo("demo.mcap")
    );
    let got = text(&ctx, &sql).await;
    assert!(got.contains("| 11 | 0       |"), "{got}");
}

#[tokio::test]
async fn asof_joins_nest_in_ctes_subqueries_and_join_chains() {
    let ctx = context(2);
    tables(&ctx).await;
    ctx.sql(
        "CREATE TABLE names(name VARCHAR, up VARCHAR) AS VALUES ('a', 'A'), ('b', 'B'), ('c', 'C')",
    )
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    let want = "\
+----+-----+
| up | v   |
+----+-----+
| A  | 100 |
| B  | 201 |
| C  | 201 |
+----+-----+";
    for sql in [
        // A join after the as-of join, and one before it.
        "SELECT n.up, r.v FROM l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) ON l.k = r.k \
         JOIN names n ON n.name = l.name ORDER BY n.up",
        "SELECT n.up, r.v FROM names n JOIN l ON n.name = l.name \
         ASOF JOIN r ON l.k = r.k AND l.t >= r.t ORDER BY n.up",
        // In a CTE and in a derived table, with DuckDB's spelling.
        "WITH j AS (SELECT l.name, r.v FROM l ASOF LEFT JOIN r ON l.k = r.k AND l.t >= r.t) \
         SELECT n.up, j.v FROM j JOIN names n ON n.name = j.name ORDER BY n.up",
        "SELECT n.up, j.v FROM (SELECT l.name, r.v FROM l ASOF JOIN r MATCH_CONDITION (l.t >= r.t) ON l.k = r.k) j \
         JOIN names n ON n.name = j.name ORDER BY n.up",
        // A CTE as an input.
        "WITH rr AS (SELECT * FROM r WHERE v < 900) SELECT n.up, rr.v FROM names n JOIN l ON n.name = l.name \
         ASOF JOIN rr MATCH_CONDITION (l.t >= rr.t) ON l.k = rr.k ORDER BY n.up",
    ] {
        assert_eq!(text(&ctx, sql).await, want, "{sql}");
    }
    // EXPLAIN of either spelling shows the logical node and the operator.
    let plan = text(
        &ctx,
        "EXPLAIN SELECT * FROM l ASOF JOIN r ON l.k = r.k AND l.t > r.t",
    )
    .await;
    assert!(
        plan.contains("AsofJoin: type=Inner, match=(l.t > r.t), on=[l.k = r.k]"),
        "{plan}"
    );
    assert!(plan.contains("AsofJoinExec: join_type=Inner"), "{plan}");
}

#[test]
fn the_cli_takes_both_spellings() {
    let mcap = demo("demo.mcap");
    let sub = |topic: &str| format!("(SELECT log_time FROM '{mcap}' WHERE topic = '{topic}')");
    let run = |join: &str| {
        let sql = format!(
            "SELECT count(*) AS n, count(d.log_time) AS matched, max(d.log_time) AS last FROM {} i {join}",
            sub("/imu")
        );
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_logsql"))
            .args([sql.as_str(), "--format", "csv"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let diag = sub("/diagnostics");
    let left = "n,matched,last\n2000,1999,2023-11-14T22:13:29.003000000Z\n";
    assert_eq!(
        run(&format!(
            "ASOF JOIN {diag} d MATCH_CONDITION (i.log_time >= d.log_time)"
        )),
        left
    );
    assert_eq!(
        run(&format!(
            "ASOF LEFT JOIN {diag} d ON i.log_time >= d.log_time"
        )),
        left
    );
    assert_eq!(
        run(&format!("ASOF JOIN {diag} d ON i.log_time >= d.log_time")),
        "n,matched,last\n1999,1999,2023-11-14T22:13:29.003000000Z\n"
    );
}

/// The `chunks_read` metric of each log scan of `EXPLAIN ANALYZE sql`, in plan
/// order (an as-of join's left input first).
async fn chunks_read(ctx: &SessionContext, sql: &str) -> Vec<u64> {
    let plan = text(ctx, &format!("EXPLAIN ANALYZE {sql}")).await;
    crate::sql::text_metrics(&plan, "chunks_read")
}

/// A context like [`context`] without the rule that moves filters below an
/// as-of join: filters stay above it, as they would without the rule.
fn context_without_push_down(target_partitions: usize) -> SessionContext {
    let ctx = context(target_partitions);
    assert!(ctx.remove_optimizer_rule(logsql_asof::push_down::NAME));
    ctx
}

/// `/imu <join> /tf` of the demo MCAP, decoded, with `where_` (the match
/// condition, `ON`, `WHERE`) after it, ordered by the left time.
fn imu_tf(join: &str, where_: &str) -> String {
    let mcap = demo("demo.mcap");
    format!(
        "SELECT i.log_time, o.log_time AS ot FROM read_topic('{mcap}', '/imu') i {join} \
         read_topic('{mcap}', '/tf') o {where_} ORDER BY i.log_time"
    )
}

const LEFT: &str = "ASOF JOIN";
const LEFT_MATCH: &str = "MATCH_CONDITION (i.log_time >= o.log_time)";
const T25: &str = "'2023-11-14T22:13:25Z'";
const T26: &str = "'2023-11-14T22:13:26Z'";

#[tokio::test]
async fn filters_on_the_left_side_go_below_the_join_and_prune_its_scan() {
    let (ctx, off) = (context(2), context_without_push_down(2));
    let window = format!("i.log_time BETWEEN {T25} AND {T26}");
    let pushed = imu_tf(LEFT, &format!("{LEFT_MATCH} WHERE {window}"));
    // The same filter on a derived table of the left side.
    let mcap = demo("demo.mcap");
    let derived = format!(
        "SELECT i.log_time, o.log_time AS ot FROM \
         (SELECT log_time FROM read_topic('{mcap}', '/imu') WHERE log_time BETWEEN {T25} AND {T26}) i \
         ASOF JOIN read_topic('{mcap}', '/tf') o {LEFT_MATCH} ORDER BY i.log_time"
    );
    let got = text(&ctx, &pushed).await;
    assert_eq!(got, text(&off, &pushed).await);
    assert_eq!(got, text(&ctx, &derived).await);
    // 201 rows (5.000 s ..= 6.000 s at 200 Hz), each matched by the /tf
    // message (50 Hz) at or before it.
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines.len(), 201 + 4, "{got}");
    assert_eq!(
        lines[3],
        "| 2023-11-14T22:13:25Z     | 2023-11-14T22:13:24.982Z |"
    );
    assert_eq!(
        lines[4],
        "| 2023-11-14T22:13:25.005Z | 2023-11-14T22:13:25.002Z |"
    );
    // The filter sits on the left input, and the left scan reads the 3
    // chunks of that second instead of all 15.
    let plan = text(&ctx, &format!("EXPLAIN {pushed}")).await;
    let asof = plan.find("AsofJoin:").unwrap_or_else(|| panic!("{plan}"));
    let filter = plan.find("Filter:").unwrap_or_else(|| panic!("{plan}"));
    assert!(asof < filter, "{plan}");
    assert_eq!(chunks_read(&ctx, &pushed).await[0], 3);
    assert_eq!(chunks_read(&off, &pushed).await[0], 14);

    // DuckDB's inner spelling: left filters go down alike (a left row's match
    // depends on the right input alone), with the same rows.
    let inner = imu_tf(
        "ASOF JOIN",
        "ON i.log_time >= o.log_time WHERE i.log_time < '2023-11-14T22:13:21Z'",
    );
    let got = text(&ctx, &inner).await;
    assert_eq!(got, text(&off, &inner).await);
    // 200 rows in the first second, less the first (no /tf message before it).
    assert_eq!(got.lines().count(), 199 + 4, "{got}");
    assert_eq!(chunks_read(&ctx, &inner).await[0], 2);
    assert_eq!(chunks_read(&off, &inner).await[0], 14);
}

#[tokio::test]
async fn filters_on_the_right_side_stay_above_the_join() {
    let (ctx, off) = (context(2), context_without_push_down(2));
    // The one /imu row without a /tf message at or before it survives a
    // filter on the right side's NULL (filtering the right input first would
    // change matches, not keep this row). The left conjunct goes down.
    let sql = imu_tf(
        LEFT,
        &format!("{LEFT_MATCH} WHERE o.log_time IS NULL AND i.log_time < '2023-11-14T22:13:21Z'"),
    );
    let want = "\
+----------------------+----+
| log_time             | ot |
+----------------------+----+
| 2023-11-14T22:13:20Z |    |
+----------------------+----+";
    assert_eq!(text(&ctx, &sql).await, want);
    assert_eq!(text(&off, &sql).await, want);
    let plan = text(&ctx, &format!("EXPLAIN {sql}")).await;
    let lines: Vec<&str> = plan.lines().collect();
    let at = |s: &str| {
        lines
            .iter()
            .position(|l| l.contains(s))
            .unwrap_or_else(|| panic!("no {s} in {plan}"))
    };
    assert!(at("Filter: o.log_time IS NULL") < at("AsofJoin:"), "{plan}");
    assert!(
        at("AsofJoin:") < at("Filter: read_topic().log_time <"),
        "{plan}"
    );
    assert_eq!(chunks_read(&ctx, &sql).await[0], 2);

    // A condition on a right value, and one over both sides, give the same
    // rows with and without the rule.
    for where_ in [
        format!("o.log_time >= {T25} AND i.log_time < {T26}"),
        format!("i.log_time - o.log_time > INTERVAL '15 milliseconds' AND i.log_time >= {T25}"),
    ] {
        let sql = imu_tf(LEFT, &format!("{LEFT_MATCH} WHERE {where_}"));
        let got = text(&ctx, &sql).await;
        assert_eq!(got, text(&off, &sql).await, "{sql}");
        assert!(got.lines().count() > 4, "{sql}: {got}");
    }
}
