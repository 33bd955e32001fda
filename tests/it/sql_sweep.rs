//! A deterministic sweep over SQL text as a hostile client (or a fuzzer)
//! sends it: seed statements (the ones that once ended a server, and
//! ordinary ones over a recording) cut, spliced and salted with the tokens
//! that matter (`||`, `INTO`, `UNION ALL`, huge counts, unclosed quotes and
//! comments, NUL), each through what a server does before it runs a
//! statement: the complexity check, the statement guard, planning with
//! constant folding, and the physical planner with the plan guard. Every
//! one must end in a plan or an error: no panic, no abort. (libFuzzer's
//! targets in tests/fuzz build without DataFusion; this sweep is the SQL
//! side's.)

use std::panic::AssertUnwindSafe;

use datafusion::prelude::SessionConfig;
use futures::FutureExt;
use logsql_serve::{Policy, ServeConfig, ServeSession};

use crate::gen_support::Rng;
use crate::serve::root;

/// Statements the mutations start from.
const SEEDS: &[&str] = &[
    "SELECT topic, count(*) AS n FROM 'ROOT/demo.mcap' GROUP BY topic ORDER BY n DESC",
    "SELECT length(repeat('x', 1000)) || 'y' FROM 'ROOT/demo.mcap' LIMIT 3",
    "SELECT 42 AS x INTO t",
    "SELECT * FROM topics('ROOT/') WHERE message_count > 10",
    "SELECT a.log_time FROM 'ROOT/demo.mcap' a ASOF JOIN 'ROOT/demo.mcap' b \
     MATCH_CONDITION (a.log_time >= b.log_time) ON a.topic = b.topic LIMIT 1",
    "SELECT cardinality(range(1, 10)), array_repeat(1, 3), lpad('a', 5, 'b')",
    "WITH t AS (SELECT 1 AS a UNION ALL SELECT 2) SELECT sum(a) FROM t",
    "SELECT 1+1+1+1+1+1+1+1",
    "EXPLAIN SELECT * FROM 'ROOT/demo.mcap' WHERE log_time > now() - INTERVAL '1 hour'",
    "SELECT regexp_replace(topic, '(.)', '\\1\\1', 'g') FROM 'ROOT/demo.mcap' LIMIT 1",
];

/// Tokens spliced into the statements.
const TOKENS: &[&str] = &[
    "(",
    ")",
    "||",
    " INTO t ",
    " UNION ALL SELECT 1 ",
    "repeat('x', 4000000000)",
    ", 9223372036854775807",
    "'",
    "\"",
    "--",
    "/*",
    "\0",
    " ORDER BY 1 ",
    "*",
    ",",
    " ASOF JOIN ",
    "generate_series(1, 100000000000)",
    "NULL",
    "::int",
    "[1,2]",
    " CREATE TABLE x AS ",
    " SET datafusion.execution.batch_size = 1; ",
    "range(",
    "arrow_cast('x', 'LargeUtf8')",
    "-",
    "1e308",
    "'ROOT/../../etc/passwd'",
];

/// A value below `n` (the suite's seeded generator).
fn below(rng: &mut Rng, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

/// A char boundary at or before `at` in `s`.
fn boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// One to three edits of `sql`: a cut, a token spliced in, a slice doubled.
fn mutate(sql: &str, rng: &mut Rng) -> String {
    let mut s = sql.to_string();
    for _ in 0..=below(rng, 3) {
        let at = boundary(&s, below(rng, s.len() + 1));
        match below(rng, 4) {
            0 => s.truncate(at),
            1 | 2 => s.insert_str(at, TOKENS[below(rng, TOKENS.len())]),
            _ => {
                let end = boundary(&s, at + below(rng, 40));
                let slice = s[at..end].to_string();
                s.insert_str(end, &slice);
            }
        }
    }
    s
}

/// Everything a server does to `sql` before running it; a refusal or a
/// planning error is fine.
async fn plan(session: &ServeSession, sql: &str) {
    let Ok(sql) = session.vet(sql) else { return };
    let state = session.state();
    let Ok(plan) = state.create_logical_plan(&sql).await else {
        return;
    };
    if session.sql_options().verify_plan(&plan).is_err() {
        return;
    }
    if let Ok(plan) = state.optimize(&plan) {
        let _ = state.create_physical_plan(&plan).await;
    }
}

#[test]
fn mutated_statements_plan_or_fail_and_never_panic() {
    // The stacks a server plans on.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(logsql::complexity::PLANNING_STACK)
        .enable_all()
        .build()
        .unwrap()
        .block_on(sweep());
}

async fn sweep() {
    let dir = root();
    let root = dir.path().display().to_string();
    let config = ServeConfig {
        roots: vec![root.clone()],
        ..ServeConfig::default()
    };
    let policy = Policy::new(&config).unwrap();
    let ctx = logsql::session_context_with_config(
        policy.session_config(SessionConfig::new().with_information_schema(true)),
    );
    let session = policy.session(ctx).await.unwrap();
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut panics = Vec::new();
    let rounds = 150;
    for seed in SEEDS {
        let seed = seed.replace("ROOT", &root);
        for _ in 0..rounds {
            let sql = mutate(&seed, &mut rng);
            let planned = AssertUnwindSafe(plan(&session, &sql)).catch_unwind().await;
            if let Err(panic) = planned {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panics.push(format!("{sql:?}: {why}"));
            }
        }
    }
    assert!(
        panics.is_empty(),
        "{} of {} statements panicked:\n{}",
        panics.len(),
        SEEDS.len() * rounds,
        panics.join("\n")
    );
}
