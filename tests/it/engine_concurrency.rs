//! Concurrent queries on one `SessionContext`: eight queries over the same
//! files (every format; `messages`, `read_topic` and typed tables), started
//! together on tokio tasks, return exactly what each returns when run alone.
//!
//! Shared state that concurrency could break: the context's registered file
//! formats and table functions, the per-file summary cache, the per-thread
//! chunk buffers (`formats::chunk_io`) and zstd contexts, decoder caches.
//! Results are compared as rendered tables of ordered rows (integer
//! aggregates and `ORDER BY` over every output column, so the comparison is
//! exact and does not depend on partition order).

use std::path::Path;

use datafusion::prelude::SessionContext;

use crate::fixtures;
use crate::sql::text;

/// The queries: the demo MCAP file (always present) plus one or more over
/// each shared fixture format when `../shared/fixtures` is there.
fn queries() -> Vec<String> {
    let demo = "tests/data/demo.mcap";
    let mut q = vec![
        format!(
            "SELECT topic, count(*) AS n, sum(length(data)) AS bytes FROM '{demo}' \
             GROUP BY topic ORDER BY topic"
        ),
        format!(
            "SELECT CAST(log_time AS BIGINT) AS t, md5(data) AS h FROM '{demo}' \
             WHERE topic = '/tf' ORDER BY t, h"
        ),
        format!(
            "SELECT count(*) AS n, CAST(min(log_time) AS BIGINT) AS lo, \
             CAST(max(log_time) AS BIGINT) AS hi FROM read_topic('{demo}', '/imu')"
        ),
    ];
    let p = |f: &Path| f.display().to_string();
    if let Some(bag) = fixtures::file("rosbag", "robot_localization-test1.bag") {
        let f = p(&bag);
        q.push(format!(
            "SELECT topic, count(*) AS n, sum(length(data)) AS bytes FROM '{f}' \
             GROUP BY topic ORDER BY topic"
        ));
        q.push(format!(
            "SELECT CAST(log_time AS BIGINT) AS t, CAST(orientation.w * 1e9 AS BIGINT) AS w \
             FROM read_topic('{f}', '/imu/data') ORDER BY t, w LIMIT 500"
        ));
    }
    if let Some(dir) = fixtures::dir("apollo") {
        let f = p(&dir.join("generated/small.record"));
        q.push(format!(
            "SELECT topic, count(*) AS n, sum(length(data)) AS bytes FROM '{f}' \
             GROUP BY topic ORDER BY topic"
        ));
    }
    if let Some(dir) = fixtures::dir("bddf") {
        let f = p(&dir.join("basic.bddf"));
        q.push(format!(
            "SELECT topic, count(*) AS n, sum(length(data)) AS bytes FROM '{f}' \
             GROUP BY topic ORDER BY topic"
        ));
    }
    if let Some(dir) = fixtures::dir("carla") {
        let f = p(&dir.join("srunner_0913_DistanceBetweenVehicles.log"));
        q.push(format!(
            // A float sum depends on the order partial sums meet (it differs in
            // the last bits between runs): rounded, not truncated, to compare.
            "SELECT actor_id, count(*) AS n, CAST(round(sum(x) * 1000) AS BIGINT) AS sx \
             FROM positions('{f}') GROUP BY actor_id ORDER BY actor_id"
        ));
        q.push(format!(
            "SELECT topic, count(*) AS n, sum(length(data)) AS bytes FROM '{f}' \
             GROUP BY topic ORDER BY topic"
        ));
    }
    q
}

/// Runs every query `copies` times at once on `ctx`, each on its own task.
async fn run_together(ctx: &SessionContext, queries: &[String], copies: usize) -> Vec<String> {
    let tasks: Vec<_> = (0..copies)
        .flat_map(|_| queries.iter().cloned())
        .map(|sql| {
            let ctx = ctx.clone();
            tokio::spawn(async move { text(&ctx, &sql).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in futures::future::join_all(tasks).await {
        out.push(t.expect("query task"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_queries_return_what_each_returns_alone() {
    let queries = queries();
    assert!(queries.len() >= 3);
    // Alone: each on a fresh context, one at a time.
    let mut alone = Vec::new();
    for sql in &queries {
        alone.push(text(&logsql::session_context(), sql).await);
    }
    for (sql, result) in queries.iter().zip(&alone) {
        assert!(result.lines().count() > 4, "{sql}: empty result\n{result}");
    }
    // Together on one shared context: first with cold summary caches (the
    // first queries of each file race to read its summary), then warm, and
    // with each query twice in flight (16 with every fixture present).
    let ctx = logsql::session_context();
    for (round, copies) in [(0, 1), (1, 1), (2, 2)] {
        let together = run_together(&ctx, &queries, copies).await;
        assert_eq!(together.len(), queries.len() * copies);
        for (i, result) in together.iter().enumerate() {
            let k = i % queries.len();
            assert_eq!(
                result, &alone[k],
                "round {round}: query {k} differs when run concurrently: {}",
                queries[k]
            );
        }
    }
}

/// Eight copies of a full scan of one file at once (one file, one summary,
/// every task reading the same chunks): the per-thread buffers and the
/// shared summary must not mix results.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_scans_of_one_file_agree() {
    let sql = "SELECT topic, count(*) AS n, sum(length(data)) AS bytes, \
               count(DISTINCT md5(data)) AS distinct_payloads FROM 'tests/data/demo.mcap' \
               GROUP BY topic ORDER BY topic"
        .to_string();
    let alone = text(&logsql::session_context(), &sql).await;
    let ctx = logsql::session_context();
    let together = run_together(&ctx, std::slice::from_ref(&sql), 8).await;
    for result in together {
        assert_eq!(result, alone);
    }
}
