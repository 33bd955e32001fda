//! File summaries in the session's runtime file-metadata cache: a second
//! query reads no summary, the cache's memory limit evicts (results stay
//! right), sessions do not share entries, and a file rewritten in place is
//! read again. Runs on the committed `tests/data/` files.

use std::path::{Path, PathBuf};

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::UInt64Type;
use datafusion::prelude::SessionContext;

use crate::sql::{analyze, ints, metric, query};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// `metadata_cache()` as (file name, format, memory bytes, hits), by path.
async fn entries(ctx: &SessionContext) -> Vec<(String, String, u64, u64)> {
    let batches: Vec<RecordBatch> = query(
        ctx,
        "SELECT path, format, memory_bytes, hits FROM metadata_cache() ORDER BY path",
    )
    .await;
    let mut out = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            let path = b.column(0).as_string::<i32>().value(i);
            out.push((
                path.rsplit('/').next().unwrap_or(path).to_string(),
                b.column(1).as_string::<i32>().value(i).to_string(),
                b.column(2).as_primitive::<UInt64Type>().value(i),
                b.column(3).as_primitive::<UInt64Type>().value(i),
            ));
        }
    }
    out
}

/// A query that scans every chunk of `path` (no statistics answer it).
fn scan_all(path: &Path) -> String {
    format!(
        "SELECT count(*) FROM '{}' WHERE length(data) >= 0",
        path.display()
    )
}

#[tokio::test]
async fn a_second_query_reads_no_summary_and_every_table_shares_the_entry() {
    let mcap = data("demo.mcap");
    let ctx = logsql::session_context();
    assert!(entries(&ctx).await.is_empty());
    let first = analyze(&ctx, &scan_all(&mcap)).await;
    assert_eq!(ints(&ctx, &scan_all(&mcap)).await, vec![2610]);
    // Planning read the summary (statistics); the scan found it in the cache.
    assert_eq!(metric(&first, "summary_cache_misses"), 0, "{first}");
    assert_eq!(metric(&first, "summary_cache_hits"), 1, "{first}");
    let cached = entries(&ctx).await;
    assert_eq!(cached.len(), 1, "{cached:?}");
    let (name, format, bytes, hits) = &cached[0];
    assert_eq!((name.as_str(), format.as_str()), ("demo.mcap", "mcap"));
    // 15 chunks and 4 channels with their schemas: kilobytes, not bytes or megabytes.
    assert!((4_000..200_000).contains(bytes), "{bytes}");
    let second = analyze(&ctx, &scan_all(&mcap)).await;
    assert_eq!(metric(&second, "summary_cache_misses"), 0, "{second}");
    assert_eq!(metric(&second, "summary_cache_hits"), 1, "{second}");
    // The same chunks read, and no summary bytes on top.
    assert_eq!(
        metric(&second, "bytes_read"),
        metric(&first, "bytes_read"),
        "{second}"
    );
    let after = entries(&ctx).await;
    assert!(after[0].3 > *hits, "{after:?} after {cached:?}");

    // A table of the same session over the same file uses the same entry.
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE demo STORED AS MCAP LOCATION '{}'",
        mcap.display()
    ))
    .await
    .unwrap();
    let table = analyze(&ctx, "SELECT count(*) FROM demo WHERE length(data) >= 0").await;
    assert_eq!(metric(&table, "summary_cache_misses"), 0, "{table}");
    assert_eq!(entries(&ctx).await.len(), 1);
}

#[tokio::test]
async fn the_memory_limit_evicts_and_results_stay_right() {
    let (mcap, bag) = (data("demo.mcap"), data("demo.bag"));
    let ctx = logsql::session_context();
    // Room for one summary (each is ~13 KB), not two: the older one goes.
    ctx.sql("SET datafusion.runtime.metadata_cache_limit = '20K'")
        .await
        .unwrap();
    assert_eq!(ints(&ctx, &scan_all(&mcap)).await, vec![2610]);
    assert_eq!(ints(&ctx, &scan_all(&bag)).await, vec![625]);
    let names: Vec<String> = entries(&ctx).await.into_iter().map(|e| e.0).collect();
    assert_eq!(names, vec!["demo.bag"]);

    // Room for none: every file open reads the summary, the results are the same.
    ctx.sql("SET datafusion.runtime.metadata_cache_limit = '1K'")
        .await
        .unwrap();
    assert!(entries(&ctx).await.is_empty());
    let plan = analyze(&ctx, &scan_all(&mcap)).await;
    assert_eq!(ints(&ctx, &scan_all(&mcap)).await, vec![2610]);
    assert_eq!(metric(&plan, "summary_cache_hits"), 0, "{plan}");
    assert_eq!(metric(&plan, "summary_cache_misses"), 1, "{plan}");
    assert!(entries(&ctx).await.is_empty());

    // Back to the default (50M): cached again.
    ctx.sql("RESET datafusion.runtime.metadata_cache_limit")
        .await
        .unwrap();
    let plan = analyze(&ctx, &scan_all(&mcap)).await;
    assert_eq!(metric(&plan, "summary_cache_hits"), 1, "{plan}");
    assert_eq!(entries(&ctx).await.len(), 1);
}

#[tokio::test]
async fn sessions_do_not_share_entries() {
    let mcap = data("demo.mcap");
    let a = logsql::session_context();
    let b = logsql::session_context();
    assert_eq!(ints(&a, &scan_all(&mcap)).await, vec![2610]);
    assert_eq!(entries(&a).await.len(), 1);
    assert!(entries(&b).await.is_empty());
    assert_eq!(ints(&b, &scan_all(&mcap)).await, vec![2610]);
    assert_eq!(entries(&b).await.len(), 1);
    // Each session's LRU is its own: B's limit does not evict A's entry.
    b.sql("SET datafusion.runtime.metadata_cache_limit = '1K'")
        .await
        .unwrap();
    assert!(entries(&b).await.is_empty());
    assert_eq!(entries(&a).await.len(), 1);
}

#[tokio::test]
async fn a_file_rewritten_in_place_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("run");
    std::fs::copy(data("demo.mcap"), &file).unwrap();
    let ctx = logsql::session_context();
    let count = format!("SELECT count(*) FROM '{}'", file.display());
    assert_eq!(ints(&ctx, &count).await, vec![2610]);
    assert_eq!(ints(&ctx, &scan_all(&file)).await, vec![2610]);
    assert_eq!(entries(&ctx).await[0].1, "mcap");
    // Other bytes under the same path (new size and modification time).
    std::fs::copy(data("demo.bag"), &file).unwrap();
    assert_eq!(ints(&ctx, &count).await, vec![625]);
    assert_eq!(ints(&ctx, &scan_all(&file)).await, vec![625]);
    let now = entries(&ctx).await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].1, "bag", "{now:?}");
}

#[tokio::test]
async fn setting_a_runtime_option_keeps_logsql_length() {
    // `SET datafusion.runtime.*` rebuilds the session state from its
    // functions; DataFusion's `character_length` must not take `length` back
    // (it casts payload bytes to text and fails on non-UTF-8 ones).
    let mcap = data("demo.mcap");
    let ctx = logsql::session_context();
    let sql = format!(
        "SELECT sum(length(data)), character_length('héllo'), char_length('ab') FROM '{}'",
        mcap.display()
    );
    let before = crate::sql::text(&ctx, &sql).await;
    assert!(before.contains("| 804595 "), "{before}");
    for _ in 0..4 {
        ctx.sql("SET datafusion.runtime.metadata_cache_limit = '10M'")
            .await
            .unwrap();
        assert_eq!(crate::sql::text(&ctx, &sql).await, before);
    }
}

#[tokio::test]
async fn an_embedding_application_sizes_the_cache_with_its_runtime() {
    use std::sync::Arc;

    use datafusion::execution::cache::cache_manager::CacheManagerConfig;
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::prelude::SessionConfig;

    let (mcap, bag) = (data("demo.mcap"), data("demo.bag"));
    // 20 KiB: one summary fits, not two.
    let runtime = RuntimeEnvBuilder::new()
        .with_cache_manager(CacheManagerConfig::default().with_metadata_cache_limit(20 << 10))
        .build_arc()
        .unwrap();
    let ctx = SessionContext::new_with_config_rt(
        SessionConfig::new().with_information_schema(true),
        Arc::clone(&runtime),
    );
    logsql::register(&ctx).unwrap();
    let limit = crate::sql::text(&ctx, "SHOW datafusion.runtime.metadata_cache_limit").await;
    assert!(limit.contains("| 20K "), "{limit}");
    assert_eq!(ints(&ctx, &scan_all(&mcap)).await, vec![2610]);
    assert_eq!(ints(&ctx, &scan_all(&bag)).await, vec![625]);
    let names: Vec<String> = entries(&ctx).await.into_iter().map(|e| e.0).collect();
    assert_eq!(names, vec!["demo.bag"]);
    // The entries are the runtime's: the application sees them there too.
    let cache = runtime.cache_manager.get_file_metadata_cache();
    assert_eq!(cache.len(), 1);
}
