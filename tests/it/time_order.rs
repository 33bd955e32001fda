//! Scans that declare `log_time` order (`engine::time_order`): the declared
//! order is true for every fixture of every format, at 1, 2 and 16
//! partitions, under projections (without `log_time` too), time and topic
//! filters and limits; the plan has no sort where a file's index proves its
//! order and keeps one where it does not; `ORDER BY log_time LIMIT n` reads
//! about one chunk per partition; `ORDER BY log_time DESC LIMIT n` reads the
//! newest chunks only, and run-time (dynamic) filters prune chunks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Int64Type, TimestampNanosecondType};
use datafusion::physical_plan::{
    ExecutionPlan, ExecutionPlanProperties, execute_stream_partitioned,
};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::TryStreamExt;
use logsql_readers::io::FileReader;

use crate::fixtures;
use crate::sql::{analyze, error, metric, query, text};

const S: u64 = 1_000_000_000;
const T0: u64 = 1_700_000_000 * S;

/// A context with `partitions` target partitions that splits every file into
/// byte ranges (DataFusion splits only files of 10 MiB and more by default,
/// and only when their statistics state more rows than a batch holds: batches
/// of 16 rows here) and only warns of damage (the damaged fixtures still give
/// their rows).
async fn ctx(partitions: usize) -> SessionContext {
    let config = SessionConfig::new()
        .with_target_partitions(partitions)
        .with_batch_size(16)
        .set_usize("datafusion.optimizer.repartition_file_min_size", 0);
    let ctx = logsql::session_context_with_config(config);
    ctx.sql("SET logsql.on_error = 'warn'").await.unwrap();
    ctx
}

/// Whether the file's index proves it in time order (the scan declares it).
fn in_time_order(path: &Path) -> Option<bool> {
    let file = FileReader::open(path).ok()?;
    let format = logsql_readers::formats::detect(&file).ok()?;
    let summary = format.summary(&file).ok()?;
    Some(logsql::file_in_time_order(format.as_ref(), &summary))
}

/// The physical plan of `sql`.
async fn plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .create_physical_plan()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The scan node (`DataSourceExec`) of `plan`.
fn scan_of(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    if plan.name() == "DataSourceExec" {
        return plan;
    }
    let child = plan.children().first().copied().cloned();
    scan_of(child.unwrap_or_else(|| panic!("no scan in {plan:?}")))
}

/// `(topic, log_time)` rows of batches whose first two columns are a topic
/// and `log_time` (a timestamp or a BIGINT).
fn rows(batches: &[RecordBatch]) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for b in batches {
        let topics = b.column(0).as_string::<i32>();
        let c = b.column(1);
        for i in 0..b.num_rows() {
            let t = match c.as_primitive_opt::<TimestampNanosecondType>() {
                Some(a) => a.value(i),
                None => c.as_primitive::<Int64Type>().value(i),
            };
            out.push((topics.value(i).to_string(), t));
        }
    }
    out
}

/// The topics of a one-column result.
fn topics(batches: &[RecordBatch]) -> Vec<String> {
    batches
        .iter()
        .flat_map(|b| {
            let a = b.column(0).as_string::<i32>();
            (0..b.num_rows())
                .map(|i| a.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn is_sorted_by_time(rows: &[(String, i64)]) -> bool {
    rows.windows(2).all(|w| w[0].1 <= w[1].1)
}

/// `rows` as a multiset.
fn bag(rows: &[(String, i64)]) -> BTreeMap<(String, i64), usize> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(r.clone()).or_insert(0) += 1;
    }
    m
}

/// Checks that `got` (topics in query order) is `reference` (sorted by time)
/// up to the order of rows of equal time.
fn same_up_to_ties(got: &[String], reference: &[(String, i64)], what: &str) {
    assert_eq!(got.len(), reference.len(), "{what}: row count");
    let mut i = 0;
    while i < reference.len() {
        let j = i + reference[i..]
            .iter()
            .take_while(|r| r.1 == reference[i].1)
            .count();
        let mut want: Vec<&str> = reference[i..j].iter().map(|r| r.0.as_str()).collect();
        let mut have: Vec<&str> = got[i..j].iter().map(String::as_str).collect();
        want.sort_unstable();
        have.sort_unstable();
        assert_eq!(
            have, want,
            "{what}: rows {i}..{j} (time {})",
            reference[i].1
        );
        i = j;
    }
}

/// Every log file of `tests/data` and of the shared fixtures of every format
/// (`None` when the fixtures are absent: the test is skipped).
fn log_files() -> Option<Vec<PathBuf>> {
    let mut roots = vec![PathBuf::from("tests/data")];
    for format in ["mcap", "rosbag", "ros2", "apollo", "bddf", "carla"] {
        roots.push(fixtures::dir(format)?);
    }
    let mut files = Vec::new();
    while let Some(dir) = roots.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                roots.push(path);
            } else if in_time_order(&path).is_some() {
                files.push(path);
            }
        }
    }
    files.sort();
    Some(files)
}

/// The checks of one file at one partition count; `reference` is every
/// readable row, sorted by time (stably).
async fn check_file(path: &Path, ordered: bool, reference: &[(String, i64)], partitions: usize) {
    let f = path.display().to_string().replace('\'', "''");
    let what = |q: &str| format!("{f}, {partitions} partitions, {q}");
    let ctx = ctx(partitions).await;

    // The plan sorts exactly when the file is not provably in order.
    let sorted_sql = format!("SELECT topic, log_time FROM '{f}' ORDER BY log_time");
    let explain = text(&ctx, &format!("EXPLAIN {sorted_sql}")).await;
    assert_eq!(
        explain.contains("SortExec"),
        !ordered,
        "{}\n{explain}",
        what("EXPLAIN")
    );

    // Each partition of a declared scan comes out in order (the scan under
    // the merge or sort of an ORDER BY, run partition by partition).
    let scan_sql = format!("{sorted_sql} (scan)");
    let scan = scan_of(plan(&ctx, &sorted_sql).await);
    let declared = scan
        .output_ordering()
        .map(|o| o.to_string())
        .unwrap_or_default();
    assert_eq!(
        declared,
        if ordered { "log_time@1 ASC" } else { "" },
        "{}",
        what(&scan_sql)
    );
    let streams = execute_stream_partitioned(scan, ctx.task_ctx()).unwrap();
    let mut all = Vec::new();
    for (p, stream) in streams.into_iter().enumerate() {
        let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
        let part = rows(&batches);
        if ordered {
            assert!(
                is_sorted_by_time(&part),
                "{} partition {p}",
                what(&scan_sql)
            );
        }
        all.extend(part);
    }
    assert_eq!(bag(&all), bag(reference), "{}", what(&scan_sql));

    // ORDER BY log_time: sorted, every row.
    let got = rows(&query(&ctx, &sorted_sql).await);
    assert!(is_sorted_by_time(&got), "{}", what(&sorted_sql));
    assert_eq!(bag(&got), bag(reference), "{}", what(&sorted_sql));

    // A projection without log_time, ordered by it.
    let q = format!("SELECT topic FROM '{f}' ORDER BY log_time");
    same_up_to_ties(&topics(&query(&ctx, &q).await), reference, &what(&q));

    // The first rows.
    let q = format!(
        "SELECT topic, CAST(log_time AS BIGINT) AS t FROM '{f}' ORDER BY log_time LIMIT 10"
    );
    let got = rows(&query(&ctx, &q).await);
    let want: Vec<i64> = reference.iter().take(10).map(|r| r.1).collect();
    assert_eq!(
        got.iter().map(|r| r.1).collect::<Vec<_>>(),
        want,
        "{}",
        what(&q)
    );

    // The last rows, newest first (chunks read newest first, pruned by the
    // TopK's bound as it tightens: `newest_first`); ties by topic.
    let q = format!(
        "SELECT topic, CAST(log_time AS BIGINT) AS t FROM '{f}' \
         ORDER BY log_time DESC, topic LIMIT 7"
    );
    let got = rows(&query(&ctx, &q).await);
    let mut newest = reference.to_vec();
    newest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    newest.truncate(7);
    assert_eq!(got, newest, "{}", what(&q));

    let (Some(first), Some(last)) = (reference.first(), reference.last()) else {
        return;
    };
    // A time window (the middle third) and a topic (the last message's).
    let (lo, hi) = (
        first.1 + (last.1 - first.1) / 3,
        first.1 + 2 * (last.1 - first.1) / 3,
    );
    let q = format!(
        "SELECT topic FROM '{f}' WHERE log_time BETWEEN to_timestamp_nanos({lo}) \
         AND to_timestamp_nanos({hi}) ORDER BY log_time"
    );
    let window: Vec<(String, i64)> = reference
        .iter()
        .filter(|r| (lo..=hi).contains(&r.1))
        .cloned()
        .collect();
    same_up_to_ties(&topics(&query(&ctx, &q).await), &window, &what(&q));
    let topic = last.0.replace('\'', "''");
    let q = format!(
        "SELECT topic, log_time FROM '{f}' WHERE topic = '{topic}' ORDER BY log_time LIMIT 5"
    );
    let got: Vec<i64> = rows(&query(&ctx, &q).await).iter().map(|r| r.1).collect();
    let want: Vec<i64> = reference
        .iter()
        .filter(|r| r.0 == last.0)
        .take(5)
        .map(|r| r.1)
        .collect();
    assert_eq!(got, want, "{}", what(&q));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_comes_out_in_its_declared_order() {
    let Some(files) = log_files() else {
        return;
    };
    let reader = ctx(1).await;
    let (mut ordered_files, mut unordered_files) = (0, 0);
    for path in &files {
        let f = path.display().to_string().replace('\'', "''");
        let ordered = in_time_order(path).unwrap();
        // Every readable row, in any order (files too damaged to plan are skipped).
        let Ok(df) = reader
            .sql(&format!("SELECT topic, log_time FROM '{f}'"))
            .await
        else {
            continue;
        };
        let Ok(batches) = df.collect().await else {
            continue;
        };
        let mut reference = rows(&batches);
        reference.sort_by_key(|r| r.1);
        if ordered {
            ordered_files += 1;
        } else {
            unordered_files += 1;
        }
        for partitions in [1, 2, 16] {
            check_file(path, ordered, &reference, partitions).await;
        }
    }
    eprintln!("{ordered_files} files in time order, {unordered_files} not");
    // The repository's own files: MCAP, bag, BDDF and CARLA in order.
    assert!(ordered_files >= 4 && unordered_files >= 1);
}

/// A scan in declared time order deals a file's chunks out to its byte
/// ranges in turn: at 2 partitions, each partition of the demo MCAP holds
/// rows from both halves of the recording, in order, and the rows of a
/// time window come from both partitions, so an order-preserving merge
/// (`ORDER BY log_time`, ASOF JOIN) reads both at once. No partition takes
/// another's ranges (DataFusion's work stealing is off for such a scan).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_ordered_scan_deals_chunks_to_its_partitions_in_turn() {
    let ctx = ctx(2).await;
    let f = "tests/data/demo.mcap";
    let reference = rows(&query(&ctx, &format!("SELECT topic, log_time FROM '{f}'")).await);
    let (t0, t1) = (
        reference.iter().map(|r| r.1).min().unwrap(),
        reference.iter().map(|r| r.1).max().unwrap(),
    );
    let mid = t0 + (t1 - t0) / 2;
    for (sql, window) in [
        (
            format!("SELECT topic, log_time FROM '{f}' ORDER BY log_time"),
            None,
        ),
        (
            format!(
                "SELECT topic, log_time FROM '{f}' WHERE log_time >= to_timestamp_nanos({}) AND log_time < to_timestamp_nanos({}) ORDER BY log_time",
                mid - (t1 - t0) / 5,
                mid + (t1 - t0) / 5
            ),
            Some(()),
        ),
    ] {
        let scan = scan_of(plan(&ctx, &sql).await);
        assert_eq!(scan.output_partitioning().partition_count(), 2, "{sql}");
        let streams = execute_stream_partitioned(scan, ctx.task_ctx()).unwrap();
        let mut parts = Vec::new();
        for stream in streams {
            let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
            parts.push(rows(&batches));
        }
        for part in &parts {
            assert!(is_sorted_by_time(part), "{sql}");
            assert!(!part.is_empty(), "{sql}: an empty partition");
            if window.is_none() {
                // Rows from both halves of the recording in each partition.
                assert!(part.first().unwrap().1 < mid, "{sql}");
                assert!(part.last().unwrap().1 > mid, "{sql}");
            }
        }
        // Chunks alternate: the partitions' time spans interleave.
        let (a, b) = (&parts[0], &parts[1]);
        assert!(a.first().unwrap().1 < b.last().unwrap().1, "{sql}");
        assert!(b.first().unwrap().1 < a.last().unwrap().1, "{sql}");
        if window.is_none() {
            let mut all = parts.concat();
            all.sort_by_key(|r| r.1);
            assert_eq!(bag(&all), bag(&reference), "{sql}");
        }
    }
}

/// The demo recordings of `tests/data`: which declare their order (the bag's
/// chunks overlap, the Apollo record's bounds are only hints), the plan of
/// `ORDER BY log_time LIMIT 3`, and the first rows (of `read_topic` too).
#[tokio::test]
async fn the_demo_files_declare_their_order_except_bag_and_apollo() {
    let ctx = ctx(4).await;
    for (file, ordered) in [
        ("demo.mcap", true),
        // Its chunks overlap by microseconds (4 of 17).
        ("demo.bag", false),
        ("demo.bddf", true),
        ("demo.log", true),
        ("demo.record", false),
    ] {
        let path = Path::new("tests/data").join(file);
        assert_eq!(in_time_order(&path), Some(ordered), "{file}");
        let sql = format!(
            "SELECT topic, log_time FROM '{}' ORDER BY log_time LIMIT 3",
            path.display()
        );
        let explain = text(&ctx, &format!("EXPLAIN {sql}")).await;
        assert_eq!(explain.contains("SortExec"), !ordered, "{file}\n{explain}");
        assert_eq!(
            explain.contains("output_ordering=[log_time@1 ASC]"),
            ordered,
            "{file}\n{explain}"
        );
    }
    // `read_topic` declares the order like `messages`.
    let sql = "SELECT CAST(log_time AS BIGINT) AS t, header.seq AS seq \
               FROM read_topic('tests/data/demo.mcap', '/imu') ORDER BY log_time LIMIT 3";
    let explain = text(&ctx, &format!("EXPLAIN {sql}")).await;
    assert!(!explain.contains("SortExec"), "{explain}");
    assert!(
        explain.contains("output_ordering=[log_time@2 ASC], file_type=read_topic"),
        "{explain}"
    );
    assert_eq!(
        text(&ctx, sql).await,
        "+---------------------+-----+\n\
         | t                   | seq |\n\
         +---------------------+-----+\n\
         | 1700000000000000000 | 0   |\n\
         | 1700000000005000000 | 1   |\n\
         | 1700000000010000000 | 2   |\n\
         +---------------------+-----+"
    );
    // Without log_time in the output (the scan still reads it to sort).
    let sql = "SELECT CAST(header.seq AS BIGINT) AS seq FROM read_topic('tests/data/demo.mcap', '/imu') \
               ORDER BY log_time LIMIT 3";
    let explain = text(&ctx, &format!("EXPLAIN {sql}")).await;
    assert!(!explain.contains("SortExec"), "{explain}");
    assert_eq!(crate::sql::ints(&ctx, sql).await, [0, 1, 2], "{explain}");
    let got = text(
        &ctx,
        "SELECT topic, CAST(log_time AS BIGINT) AS t FROM 'tests/data/demo.mcap' ORDER BY log_time LIMIT 5",
    )
    .await;
    assert_eq!(
        got,
        "+--------------------+---------------------+\n\
         | topic              | t                   |\n\
         +--------------------+---------------------+\n\
         | /imu               | 1700000000000000000 |\n\
         | /camera/compressed | 1700000000001000000 |\n\
         | /tf                | 1700000000002000000 |\n\
         | /diagnostics       | 1700000000003000000 |\n\
         | /imu               | 1700000000005000000 |\n\
         +--------------------+---------------------+"
    );
}

/// Real bags: one recorded in order, and rosbag.js's example whose chunks
/// are written out of time order (the plan sorts it).
#[tokio::test]
async fn a_bag_with_unsorted_chunks_is_sorted_and_one_in_order_is_not() {
    let (Some(sorted), Some(unsorted)) = (
        fixtures::file("rosbag", "robot_localization-test1.bag"),
        fixtures::file("rosbag", "rosbagjs-example-unsorted-chunks.bag"),
    ) else {
        return;
    };
    let ctx = ctx(2).await;
    for (path, ordered) in [(sorted, true), (unsorted, false)] {
        assert_eq!(in_time_order(&path), Some(ordered));
        let f = path.display();
        let explain = text(
            &ctx,
            &format!("EXPLAIN SELECT log_time FROM '{f}' ORDER BY log_time"),
        )
        .await;
        assert_eq!(explain.contains("SortExec"), !ordered, "{explain}");
        let times: Vec<i64> = query(
            &ctx,
            &format!("SELECT log_time FROM '{f}' ORDER BY log_time"),
        )
        .await
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_primitive::<TimestampNanosecondType>()
                .values()
                .to_vec()
        })
        .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{f}");
        let count: Vec<i64> = crate::sql::ints(&ctx, &format!("SELECT count(*) FROM '{f}'")).await;
        assert_eq!(times.len() as i64, count[0], "{f}");
    }
}

/// `ORDER BY log_time LIMIT 10` on the demo MCAP (15 chunks, the first holding
/// only schema and channel records, which is not read) reads one chunk at
/// every partition count: the file is read in one partition, in order (before,
/// one chunk per byte range; without the declared order all 15).
#[tokio::test]
async fn order_by_log_time_limit_reads_one_chunk() {
    // The last count is the default (the machine's cores).
    let default = SessionConfig::new().target_partitions();
    for (partitions, chunks) in [(1, 1), (2, 1), (4, 1), (16, 1), (default, 1)] {
        let ctx = ctx(partitions).await;
        let plan = analyze(
            &ctx,
            "SELECT topic, log_time FROM 'tests/data/demo.mcap' ORDER BY log_time LIMIT 10",
        )
        .await;
        assert!(!plan.contains("SortExec"), "{plan}");
        assert_eq!(metric(&plan, "chunks_total"), 15, "{plan}");
        assert_eq!(metric(&plan, "chunks_read"), chunks, "{partitions}: {plan}");
        assert_eq!(metric(&plan, "output_rows"), 10, "{plan}");
        assert!(
            plan.to_string().contains("file_groups={1 group: [["),
            "{plan}"
        );
    }
    // A projection without log_time claims no order; the time-ordered rows
    // still come back.
    let ctx = ctx(2).await;
    let scan = plan(&ctx, "SELECT topic FROM 'tests/data/demo.mcap'").await;
    assert!(scan.output_ordering().is_none());
    let got = topics(
        &query(
            &ctx,
            "SELECT topic FROM 'tests/data/demo.mcap' ORDER BY log_time LIMIT 4",
        )
        .await,
    );
    assert_eq!(got, ["/imu", "/camera/compressed", "/tf", "/diagnostics"]);
}

/// `ORDER BY log_time DESC LIMIT n` reads the newest chunks first and skips
/// the others once the TopK's bound rules them out, at every partition count
/// (the sort stays above the scan); the same with a topic filter. With the
/// sort pushdown off, every chunk is read: same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_by_log_time_desc_limit_reads_the_newest_chunks() {
    let sql = "SELECT topic, log_time FROM 'tests/data/demo.mcap' ORDER BY log_time DESC LIMIT 3";
    let default = SessionConfig::new().target_partitions();
    let mut results = Vec::new();
    for partitions in [1, 2, 16, default] {
        let ctx = ctx(partitions).await;
        let explain = text(&ctx, &format!("EXPLAIN {sql}")).await;
        assert!(explain.contains("chunk_order=newest_first"), "{explain}");
        assert!(
            explain.contains("run_time_pruning=[DynamicFilter"),
            "{explain}"
        );
        let plan = analyze(&ctx, sql).await;
        assert!(plan.contains("SortExec: TopK(fetch=3)"), "{plan}");
        assert_eq!(metric(&plan, "chunks_total"), 15, "{plan}");
        let read = metric(&plan, "chunks_read");
        // The newest chunk of each byte range, plus those read while the
        // TopK took the first rows (batches are sent chunk by chunk). At 16
        // partitions (16 ranges of about one chunk each here) every range
        // reads its newest chunk before the TopK has a bound.
        if partitions <= 2 {
            assert!(
                read <= 6,
                "{partitions} partitions: {read} chunks read\n{plan}"
            );
        }
        assert_eq!(
            metric(&plan, "chunks_pruned_at_run_time") + read,
            15 - 1, // the first chunk holds no message (schemas and channels only)
            "{plan}"
        );
        results.push(text(&ctx, sql).await);
    }
    assert!(results.iter().all(|r| r == &results[0]), "{results:?}");
    assert!(
        results[0].contains("2023-11-14T22:13:29.995"),
        "{}",
        results[0]
    );

    // Without the sort pushdown, chunks are read oldest first: more of them
    // (only those of an older byte range may be pruned once a newer range gave
    // the TopK its rows), the same rows come back.
    let ctx = ctx(2).await;
    ctx.sql("SET datafusion.optimizer.enable_sort_pushdown = false")
        .await
        .unwrap();
    let plan = analyze(&ctx, sql).await;
    assert!(!plan.contains("newest_first"), "{plan}");
    assert!(metric(&plan, "chunks_read") >= 7, "{plan}");
    assert_eq!(text(&ctx, sql).await, results[0]);

    // A topic filter: still the newest chunks only, the newest /tf rows
    // (the same as with every chunk read, in the context above).
    let q = "SELECT topic, log_time FROM 'tests/data/demo.mcap' WHERE topic = '/tf' \
             ORDER BY log_time DESC LIMIT 2";
    let everything = text(&ctx, q).await;
    let ctx = self::ctx(2).await;
    let plan = analyze(&ctx, q).await;
    assert!(metric(&plan, "chunks_read") <= 6, "{plan}");
    assert_eq!(text(&ctx, q).await, everything);
    assert!(everything.contains("| /tf   |"), "{everything}");
}

/// A hash join's run-time filter (its build side's key bounds) prunes the
/// probe side's chunks the same way: one /imu message's time reads one chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_s_key_bounds_prune_chunks_at_run_time() {
    let sql = "SELECT m.topic, CAST(m.log_time AS BIGINT) AS t FROM 'tests/data/demo.mcap' m \
               JOIN (SELECT to_timestamp_nanos(1700000009995000000) AS t) v ON m.log_time = v.t";
    for partitions in [1, 2] {
        let ctx = ctx(partitions).await;
        let plan = analyze(&ctx, sql).await;
        assert!(plan.contains("HashJoinExec"), "{plan}");
        assert_eq!(
            metric(&plan, "chunks_read"),
            1,
            "{partitions} partitions:\n{plan}"
        );
        assert_eq!(metric(&plan, "chunks_pruned_at_run_time"), 13, "{plan}");
        assert_eq!(
            rows(&query(&ctx, sql).await),
            [("/imu".to_string(), 1_700_000_009_995_000_000)]
        );
    }
}

/// The root that reports damage (`DamageReportExec`) passes the scan's order
/// through, and `LIMIT` without `ORDER BY` (read in one partition, in file
/// order) keeps the declared order.
#[tokio::test]
async fn the_damage_root_and_file_order_keep_the_declared_order() {
    let ctx = ctx(4).await;
    let sql = "SELECT log_time, topic FROM 'tests/data/demo.mcap' ORDER BY log_time";
    let root = plan(&ctx, sql).await;
    assert_eq!(root.name(), "DamageReportExec");
    assert_eq!(root.children()[0].name(), "SortPreservingMergeExec");
    assert_eq!(
        root.output_ordering().map(|o| o.to_string()).as_deref(),
        Some("log_time@0 ASC")
    );
    let scan = scan_of(root);
    assert_eq!(scan.output_partitioning().partition_count(), 4);
    assert_eq!(
        scan.output_ordering().map(|o| o.to_string()).as_deref(),
        Some("log_time@0 ASC")
    );
    let limited = text(
        &ctx,
        "EXPLAIN SELECT log_time, topic FROM 'tests/data/demo.mcap' LIMIT 5",
    )
    .await;
    assert!(
        limited.contains("file_groups={1 group:")
            && limited.contains("output_ordering=[log_time@1 ASC]"),
        "{limited}"
    );
}

/// One MCAP message per `(channel, log_time)` in the order given; `flush`
/// marks where a chunk ends.
enum Write {
    Message(&'static str, u64),
    EndChunk,
}

/// Writes an uncompressed MCAP of `writes` (topics `/a` and `/b`).
fn write_mcap(path: &Path, writes: &[Write]) {
    let opts = mcap::WriteOptions::new()
        .compression(None)
        .chunk_size(None)
        .calculate_summary_section_crc(false);
    let mut w = opts
        .create(std::io::BufWriter::new(
            std::fs::File::create(path).unwrap(),
        ))
        .unwrap();
    let a = w.add_channel(0, "/a", "json", &BTreeMap::new()).unwrap();
    let b = w.add_channel(0, "/b", "json", &BTreeMap::new()).unwrap();
    for (i, write) in writes.iter().enumerate() {
        match write {
            Write::Message(topic, t) => w
                .write_to_known_channel(
                    &mcap::records::MessageHeader {
                        channel_id: if *topic == "/a" { a } else { b },
                        sequence: i as u32,
                        log_time: T0 + t,
                        publish_time: T0 + t,
                    },
                    b"{}",
                )
                .unwrap(),
            Write::EndChunk => w.flush().unwrap(),
        }
    }
    w.finish().unwrap();
}

/// Chunks in order whose messages are not (as recorders write them when
/// publishers' clocks differ): the scan sorts each chunk; chunks that overlap
/// in time: the plan sorts.
#[tokio::test]
async fn unordered_chunks_are_sorted_and_overlapping_chunks_are_not_declared() {
    use Write::{EndChunk, Message as M};
    let tmp = tempfile::tempdir().unwrap();
    let inside = tmp.path().join("inside.mcap");
    write_mcap(
        &inside,
        &[
            M("/a", 30),
            M("/b", 10),
            M("/a", 20),
            M("/b", 20),
            EndChunk,
            M("/a", 40),
            M("/b", 35),
            EndChunk,
            M("/a", 50),
        ],
    );
    let overlapping = tmp.path().join("overlapping.mcap");
    write_mcap(
        &overlapping,
        &[M("/a", 10), M("/a", 30), EndChunk, M("/b", 20), M("/b", 40)],
    );
    assert_eq!(in_time_order(&inside), Some(true));
    assert_eq!(in_time_order(&overlapping), Some(false));
    for partitions in [1, 2, 16] {
        let ctx = ctx(partitions).await;
        let f = inside.display();
        let got = rows(
            &query(
                &ctx,
                &format!("SELECT topic, CAST(log_time AS BIGINT) - {T0} AS t FROM '{f}' ORDER BY log_time"),
            )
            .await,
        );
        // Equal times keep the file's order (/a then /b at 20).
        let want = [
            ("/b", 10),
            ("/a", 20),
            ("/b", 20),
            ("/a", 30),
            ("/b", 35),
            ("/a", 40),
            ("/a", 50),
        ];
        let want: Vec<(String, i64)> = want.iter().map(|(t, v)| (t.to_string(), *v)).collect();
        assert_eq!(got, want, "{partitions}");
        // Without ORDER BY, in one partition: the same order.
        let got = rows(
            &query(
                &ctx,
                &format!("SELECT topic, CAST(log_time AS BIGINT) - {T0} AS t FROM '{f}' LIMIT 7"),
            )
            .await,
        );
        assert_eq!(got, want, "{partitions}");
        let explain = text(
            &ctx,
            &format!("EXPLAIN SELECT log_time FROM '{f}' ORDER BY log_time"),
        )
        .await;
        assert!(!explain.contains("SortExec"), "{explain}");

        let f = overlapping.display();
        let explain = text(
            &ctx,
            &format!("EXPLAIN SELECT log_time FROM '{f}' ORDER BY log_time"),
        )
        .await;
        assert!(explain.contains("SortExec"), "{explain}");
        assert!(!explain.contains("output_ordering"), "{explain}");
        let got: Vec<i64> = rows(
            &query(
                &ctx,
                &format!("SELECT topic, CAST(log_time AS BIGINT) - {T0} AS t FROM '{f}' ORDER BY log_time"),
            )
            .await,
        )
        .iter()
        .map(|r| r.1)
        .collect();
        assert_eq!(got, [10, 20, 30, 40]);
    }
}

/// A directory: each file in order; two files whose times do not overlap
/// keep the order in one partition (DataFusion checks the files' time
/// statistics), two that overlap are sorted.
#[tokio::test]
async fn directories_declare_the_order_per_file_and_keep_it_where_files_do_not_overlap() {
    use Write::{EndChunk, Message as M};
    let tmp = tempfile::tempdir().unwrap();
    let apart = tmp.path().join("apart");
    let overlap = tmp.path().join("overlap");
    std::fs::create_dir_all(&apart).unwrap();
    std::fs::create_dir_all(&overlap).unwrap();
    write_mcap(&apart.join("1.mcap"), &[M("/a", 10), EndChunk, M("/b", 20)]);
    write_mcap(&apart.join("2.mcap"), &[M("/a", 30), EndChunk, M("/b", 40)]);
    write_mcap(
        &overlap.join("1.mcap"),
        &[M("/a", 10), EndChunk, M("/b", 30)],
    );
    write_mcap(
        &overlap.join("2.mcap"),
        &[M("/a", 20), EndChunk, M("/b", 40)],
    );
    for (dir, sorted_in_one_partition) in [(&apart, false), (&overlap, true)] {
        for partitions in [1, 2, 16] {
            let ctx = ctx(partitions).await;
            let sql = format!(
                "SELECT topic, CAST(log_time AS BIGINT) - {T0} AS t FROM '{}/' ORDER BY log_time",
                dir.display()
            );
            let explain = text(&ctx, &format!("EXPLAIN {sql}")).await;
            assert_eq!(
                explain.contains("SortExec"),
                partitions == 1 && sorted_in_one_partition,
                "{partitions}: {explain}"
            );
            let got: Vec<i64> = rows(&query(&ctx, &sql).await).iter().map(|r| r.1).collect();
            assert_eq!(got, [10, 20, 30, 40], "{} {partitions}", dir.display());
        }
    }
}

/// Files listed in another order than their times: DataFusion reads them in
/// time order for `ORDER BY log_time` (by their statistics, no sort), and the
/// rule that reads limited scans in file order leaves that order alone (an
/// OFFSET puts a limit above the scan).
#[tokio::test]
async fn limited_scans_keep_the_time_order_of_files_listed_out_of_it() {
    use Write::{EndChunk, Message as M};
    let tmp = tempfile::tempdir().unwrap();
    write_mcap(
        &tmp.path().join("a.mcap"),
        &[M("/a", 30), EndChunk, M("/b", 40)],
    );
    write_mcap(
        &tmp.path().join("b.mcap"),
        &[M("/a", 10), EndChunk, M("/b", 20)],
    );
    let ctx = ctx(1).await;
    let sql = format!(
        "SELECT topic, log_time FROM '{}/' ORDER BY log_time LIMIT 3 OFFSET 1",
        tmp.path().display()
    );
    let explain = text(&ctx, &format!("EXPLAIN {sql}")).await;
    assert!(!explain.contains("SortExec"), "{explain}");
    assert!(
        explain.contains("GlobalLimitExec: skip=1, fetch=3"),
        "{explain}"
    );
    assert!(explain.contains("b.mcap, "), "{explain}");
    let got: Vec<i64> = rows(&query(&ctx, &sql).await)
        .iter()
        .map(|r| r.1 - T0 as i64)
        .collect();
    assert_eq!(got, [20, 30, 40]);
}

/// An index that states a chunk ends before one of its messages: the scan
/// (which declared the order from that index) reports the file as corrupt,
/// after the rows.
#[tokio::test]
async fn a_chunk_index_that_lies_about_its_times_is_corruption() {
    use Write::{EndChunk, Message as M};
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("lies.mcap");
    write_mcap(
        &path,
        &[M("/a", 10), M("/a", 20), EndChunk, M("/a", 50), M("/a", 60)],
    );
    // The summary's chunk index of the second chunk: message_start_time 50,
    // message_end_time 60 (the last occurrence; the first is the Chunk
    // record's own header). Make it end at 55.
    let mut bytes = std::fs::read(&path).unwrap();
    let pattern: Vec<u8> = [(T0 + 50).to_le_bytes(), (T0 + 60).to_le_bytes()].concat();
    let at = bytes
        .windows(16)
        .rposition(|w| w == pattern.as_slice())
        .unwrap();
    bytes[at + 8..at + 16].copy_from_slice(&(T0 + 55).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(in_time_order(&path), Some(true));
    let f = path.display();
    let ctx = logsql::session_context();
    let e = error(
        &ctx,
        &format!("SELECT log_time FROM '{f}' ORDER BY log_time"),
    )
    .await;
    assert!(
        e.contains(&format!(
            "corrupt mcap data at byte {}: the file's index states log times {}..={} ns for this chunk, \
             but it holds a message logged at {} ns",
            chunk_offset(&path, 1),
            T0 + 50,
            T0 + 55,
            T0 + 60
        )),
        "{e}"
    );
    assert!(e.contains("the query returned 4 rows"), "{e}");
    // A scan that does not read log_time does not sort or check.
    let got = text(
        &ctx,
        &format!("SELECT count(*) AS n FROM '{f}' WHERE topic = '/a'"),
    )
    .await;
    assert!(got.contains("| 4 |"), "{got}");
}

/// Offset of chunk `i` of an MCAP file.
fn chunk_offset(path: &Path, i: usize) -> u64 {
    let file = FileReader::open(path).unwrap();
    let format = logsql_readers::formats::detect(&file).unwrap();
    format.summary(&file).unwrap().chunks[i].offset
}

#[tokio::test]
async fn set_time_order_false_turns_the_declaration_off() {
    let ctx = ctx(2).await;
    let sql = "EXPLAIN SELECT log_time, topic FROM 'tests/data/demo.mcap' ORDER BY log_time";
    let declared = text(&ctx, sql).await;
    assert!(!declared.contains("SortExec"), "{declared}");
    assert!(declared.contains("output_ordering=[log_time"), "{declared}");
    ctx.sql("SET logsql.time_order = false").await.unwrap();
    let sorted = text(&ctx, sql).await;
    assert!(sorted.contains("SortExec"), "{sorted}");
    assert!(!sorted.contains("output_ordering=[log_time"), "{sorted}");
    let rows = query(
        &ctx,
        "SELECT count(*) FROM (SELECT log_time FROM 'tests/data/demo.mcap' ORDER BY log_time)",
    )
    .await;
    assert_eq!(rows[0].column(0).as_primitive::<Int64Type>().value(0), 2610);
}
