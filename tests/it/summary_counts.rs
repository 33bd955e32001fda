//! `SELECT topic, count(*) ... GROUP BY topic` answered from a file's stated
//! per-channel counts (the scan's `messages_from_summary` metric, no chunk
//! read), for every format, at several partition counts; the same counts as
//! the row path (`count(log_time)`, which reads message headers); a `topic`
//! filter stays on the summary, a `log_time` filter and a damaged file read rows.

use std::path::{Path, PathBuf};

use datafusion::prelude::{SessionConfig, SessionContext};

use crate::fixtures;
use crate::sql::{analyze, metric, pairs};

/// A context with `partitions` target partitions that splits every file
/// into byte ranges (DataFusion only splits files of 10 MiB and more by default).
fn ctx_split(partitions: usize) -> SessionContext {
    let config = SessionConfig::new()
        .with_target_partitions(partitions)
        .set_usize("datafusion.optimizer.repartition_file_min_size", 0);
    logsql::session_context_with_config(config)
}

fn demo(ext: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("demo.{ext}"))
}

/// Per-topic counts through the row path (`log_time` is per message).
async fn row_counts(ctx: &SessionContext, from: &str, filter: &str) -> Vec<(String, i64)> {
    pairs(
        ctx,
        &format!(
            "SELECT topic, count(log_time) FROM {from} {filter} GROUP BY topic ORDER BY topic"
        ),
    )
    .await
}

/// Checks that `GROUP BY topic` over `from` (with `filter`) gives the row
/// path's counts at 1, 2 and 7 partitions and reads no chunk; returns the counts.
async fn assert_from_summary(from: &str, filter: &str) -> Vec<(String, i64)> {
    let want = row_counts(&ctx_split(1), from, filter).await;
    let total: i64 = want.iter().map(|(_, n)| n).sum();
    for partitions in [1, 2, 7] {
        let ctx = ctx_split(partitions);
        let sql =
            format!("SELECT topic, count(*) FROM {from} {filter} GROUP BY topic ORDER BY topic");
        let plan = analyze(&ctx, &sql).await;
        assert_eq!(
            pairs(&ctx, &sql).await,
            want,
            "{from} {filter} at {partitions}"
        );
        assert_eq!(metric(&plan, "chunks_read"), 0, "{plan}");
        assert_eq!(metric(&plan, "messages_read"), 0, "{plan}");
        assert_eq!(
            metric(&plan, "messages_from_summary"),
            total as u64,
            "{plan}"
        );
    }
    want
}

#[tokio::test]
async fn demo_files_of_every_format_count_topics_from_the_summary() {
    let want: [(&str, &[(&str, i64)]); 6] = [
        (
            "mcap",
            &[
                ("/camera/compressed", 100),
                ("/diagnostics", 10),
                ("/imu", 2000),
                ("/tf", 500),
            ],
        ),
        (
            "db3",
            &[("/chatter", 20), ("/imu", 200), ("/odom_rate", 20)],
        ),
        ("bag", &[]),
        ("record", &[]),
        ("bddf", &[]),
        ("log", &[]),
    ];
    for (ext, expected) in want {
        let from = format!("'{}'", demo(ext).display());
        let got = assert_from_summary(&from, "").await;
        if !expected.is_empty() {
            let expected: Vec<(String, i64)> =
                expected.iter().map(|&(t, n)| (t.to_string(), n)).collect();
            assert_eq!(got, expected, "{ext}");
        }
        assert!(!got.is_empty(), "{ext}");
    }
}

#[tokio::test]
async fn row_path_reads_messages_for_the_same_counts() {
    let ctx = ctx_split(2);
    let f = demo("mcap");
    let plan = analyze(
        &ctx,
        &format!(
            "SELECT topic, count(log_time) FROM '{}' GROUP BY topic",
            f.display()
        ),
    )
    .await;
    assert_eq!(metric(&plan, "messages_from_summary"), 0, "{plan}");
    assert_eq!(metric(&plan, "messages_read"), 2610, "{plan}");
}

#[tokio::test]
async fn topic_filter_stays_on_the_summary() {
    for ext in ["mcap", "db3"] {
        let from = format!("'{}'", demo(ext).display());
        let got = assert_from_summary(&from, "WHERE topic = '/imu'").await;
        let n = if ext == "mcap" { 2000 } else { 200 };
        assert_eq!(got, [("/imu".to_string(), n)], "{ext}");
    }
    // Other per-channel columns and `file`, with an IN list.
    let from = format!("'{}'", demo("mcap").display());
    let ctx = ctx_split(7);
    let sql = format!(
        "SELECT message_type, count(*) FROM {from} WHERE topic IN ('/imu', '/tf') \
         AND file LIKE '%demo.mcap' AND message_encoding <> '' GROUP BY message_type ORDER BY 1"
    );
    let plan = analyze(&ctx, &sql).await;
    assert_eq!(metric(&plan, "chunks_read"), 0, "{plan}");
    assert_eq!(metric(&plan, "messages_from_summary"), 2500, "{plan}");
    assert_eq!(
        pairs(&ctx, &sql).await,
        [
            ("sensor_msgs/Imu".to_string(), 2000),
            ("tf2_msgs/TFMessage".to_string(), 500)
        ]
    );
}

#[tokio::test]
async fn limit_stops_the_summary_rows() {
    let ctx = ctx_split(2);
    let sql = format!("SELECT topic FROM '{}' LIMIT 7", demo("mcap").display());
    let plan = analyze(&ctx, &sql).await;
    let rows: usize = plan.batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 7);
    assert_eq!(metric(&plan, "chunks_read"), 0, "{plan}");
}

#[tokio::test]
async fn log_time_filter_reads_rows() {
    for ext in ["mcap", "db3", "bag"] {
        let f = demo(ext);
        let ctx = ctx_split(2);
        let sql = format!(
            "SELECT topic, count(*) FROM '{}' WHERE log_time >= to_timestamp(0) GROUP BY topic ORDER BY topic",
            f.display()
        );
        let plan = analyze(&ctx, &sql).await;
        assert_eq!(metric(&plan, "messages_from_summary"), 0, "{plan}");
        assert!(metric(&plan, "messages_read") > 0, "{plan}");
        let all = row_counts(&ctx, &format!("'{}'", f.display()), "").await;
        assert_eq!(pairs(&ctx, &sql).await, all, "{ext}");
    }
}

#[tokio::test]
async fn truncated_copy_reads_rows() {
    let dir = tempfile::tempdir().unwrap();
    for ext in ["mcap", "bag"] {
        let bytes = std::fs::read(demo(ext)).unwrap();
        let cut = dir.path().join(format!("cut.{ext}"));
        std::fs::write(&cut, &bytes[..bytes.len() * 3 / 4]).unwrap();
        let ctx = ctx_split(2);
        ctx.sql("SET logsql.on_error = 'warn'").await.unwrap();
        let from = format!("'{}'", cut.display());
        let sql = format!("SELECT topic, count(*) FROM {from} GROUP BY topic ORDER BY topic");
        let plan = analyze(&ctx, &sql).await;
        assert_eq!(metric(&plan, "messages_from_summary"), 0, "{ext}: {plan}");
        let got = pairs(&ctx, &sql).await;
        assert_eq!(got, row_counts(&ctx, &from, "").await, "{ext}");
        let total: i64 = got.iter().map(|(_, n)| n).sum();
        let full: i64 = row_counts(&ctx, &format!("'{}'", demo(ext).display()), "")
            .await
            .iter()
            .map(|(_, n)| n)
            .sum();
        assert!(total > 0 && total < full, "{ext}: {total} of {full}");
    }
}

#[tokio::test]
async fn mcap_conformance_files_with_and_without_statistics() {
    let Some(dir) = fixtures::dir("mcap") else {
        return;
    };
    let ctx = ctx_split(2);
    let (mut with_stats, mut without) = (0, 0);
    for name in ["TenMessages", "OneMessage"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("conformance").join(name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "mcap"))
            .collect();
        files.sort();
        for f in files {
            let from = format!("'{}'", f.display());
            let sql = format!("SELECT topic, count(*) FROM {from} GROUP BY topic ORDER BY topic");
            let plan = analyze(&ctx, &sql).await;
            let want = row_counts(&ctx, &from, "").await;
            let total: i64 = want.iter().map(|(_, n)| n).sum();
            assert_eq!(total, if name == "OneMessage" { 1 } else { 10 }, "{from}");
            assert_eq!(pairs(&ctx, &sql).await, want, "{from}");
            let stem = f.file_stem().unwrap().to_string_lossy().to_string();
            let stated = stem.split('-').any(|p| p == "st") && stem.ends_with("-sum");
            let from_summary = metric(&plan, "messages_from_summary");
            if stated {
                assert_eq!(from_summary, total as u64, "{from}: {plan}");
                assert_eq!(metric(&plan, "chunks_read"), 0, "{from}: {plan}");
                with_stats += 1;
            } else {
                if !stem.split('-').any(|p| p == "st") {
                    assert_eq!(from_summary, 0, "{from}: {plan}");
                }
                without += 1;
            }
        }
    }
    assert!(with_stats > 10 && without > 10, "{with_stats} {without}");
}

#[tokio::test]
async fn mcap_samples_and_ros2_bags_match_the_row_path() {
    if let Some(dir) = fixtures::dir("mcap") {
        for s in ["compressed.mcap", "uncompressed.mcap"] {
            let from = format!("'{}'", dir.join("samples").join(s).display());
            assert_from_summary(&from, "").await;
        }
    }
    let Some(dir) = fixtures::dir("ros2") else {
        return;
    };
    let ctx = ctx_split(3);
    let mut answered = 0;
    for e in std::fs::read_dir(dir.join("sqlite3")).unwrap() {
        let bag = e.unwrap().path();
        let from = format!("'{}/'", bag.display());
        let sql = format!("SELECT topic, count(*) FROM {from} GROUP BY topic ORDER BY topic");
        let plan = analyze(&ctx, &sql).await;
        assert_eq!(
            pairs(&ctx, &sql).await,
            row_counts(&ctx, &from, "").await,
            "{from}"
        );
        if metric(&plan, "messages_from_summary") > 0 {
            assert_eq!(metric(&plan, "chunks_read"), 0, "{from}: {plan}");
            answered += 1;
        }
    }
    assert!(answered >= 5, "{answered}");
}
