//! Runs every `queries/*.sql` file and compares its output with the `.out` file
//! beside it. The queries read `tests/data/demo.mcap`, which the repo carries, so
//! they need no fixtures. `LOGSQL_BLESS=1 cargo test queries` rewrites the `.out`
//! files after an intended change.

use std::path::{Path, PathBuf};

use datafusion::arrow::util::pretty::pretty_format_batches;

/// Splits a SQL file into statements at `;` that end a line (comments kept out).
fn statements(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in sql.lines() {
        let code = line.trim();
        if code.starts_with("--") || code.is_empty() {
            continue;
        }
        cur.push_str(line);
        cur.push('\n');
        if code.ends_with(';') {
            out.push(cur.trim().trim_end_matches(';').to_string());
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

async fn run_file(path: &Path) -> String {
    let ctx = logsql::session_context();
    let mut out = String::new();
    for stmt in statements(&std::fs::read_to_string(path).unwrap()) {
        let df = ctx
            .sql(&stmt)
            .await
            .unwrap_or_else(|e| panic!("{}: {stmt}: {e}", path.display()));
        let batches = df
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{}: {stmt}: {e}", path.display()));
        if batches.iter().map(|b| b.num_rows()).sum::<usize>() > 0 {
            out.push_str(&pretty_format_batches(&batches).unwrap().to_string());
            out.push('\n');
        }
    }
    out
}

#[tokio::test]
async fn example_queries_give_their_recorded_output() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("queries");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected the example queries in {}",
        dir.display()
    );
    let bless = std::env::var("LOGSQL_BLESS").as_deref() == Ok("1");
    let mut failed = Vec::new();
    for sql in &files {
        let got = run_file(sql).await;
        let expected_path = sql.with_extension("out");
        if bless {
            std::fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if got != expected {
            eprintln!(
                "--- {} expected:\n{expected}\n--- got:\n{got}",
                expected_path.display()
            );
            failed.push(sql.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "queries with different output: {failed:?}"
    );
}
