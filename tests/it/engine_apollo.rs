//! Apollo Cyber RT records through the scan engine: SQL counts and times
//! against the fixture MANIFEST, split recordings as one table, `STORED AS
//! RECORD`, chunk pruning by time (by the scan metrics), crashed recordings.

use std::path::{Path, PathBuf};

use datafusion::prelude::SessionContext;

use crate::fixtures;
use crate::sql::{analyze, error, ints, metric, pairs};

fn dir() -> Option<PathBuf> {
    fixtures::dir("apollo")
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

const POSE: &str = "/apollo/localization/pose";
const CHASSIS: &str = "/apollo/canbus/chassis";
const OBSTACLES: &str = "/apollo/perception/obstacles";

fn counts(pose: i64, chassis: i64, obstacles: i64) -> Vec<(String, i64)> {
    let mut v = vec![
        (CHASSIS.to_string(), chassis),
        (POSE.to_string(), pose),
        (OBSTACLES.to_string(), obstacles),
    ];
    v.retain(|(_, n)| *n > 0);
    v
}

async fn topic_counts(ctx: &SessionContext, from: &str) -> Vec<(String, i64)> {
    pairs(
        ctx,
        &format!("SELECT topic, count(*) FROM {from} GROUP BY topic ORDER BY topic"),
    )
    .await
}

#[tokio::test]
async fn counts_per_channel_match_the_manifest() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    for name in [
        "generated/small.record",
        "generated/legacy_index_positions.record",
        "generated/python_filedesc.record",
        "generated/builtin_schema.record",
    ] {
        let f = path(&dir, name);
        assert_eq!(
            topic_counts(&ctx, &format!("'{f}'")).await,
            counts(600, 600, 35),
            "{name}"
        );
    }
    // A split recording (glob) is one table.
    let glob = path(&dir, "generated/segmented.record.*");
    assert_eq!(
        topic_counts(&ctx, &format!("'{glob}'")).await,
        counts(301 + 301 + 198, 300 + 301 + 199, 5 + 30 + 20)
    );
    // Real files: example (34 messages over 8 channels), the C++ and Python demos.
    let f = path(&dir, "real/example.record.00000");
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{f}'")).await,
        [34]
    );
    let f = path(&dir, "real/mytest.record");
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT CAST(log_time AS BIGINT) AS t FROM '{f}' ORDER BY t")
        )
        .await,
        (0..10).collect::<Vec<i64>>(),
        "times 0..9, the time-0 message included; stale bytes after the index ignored"
    );
    let f = path(&dir, "real/mytest_py.record");
    assert_eq!(
        pairs(
            &ctx,
            &format!("SELECT topic, count(*) FROM '{f}' GROUP BY topic")
        )
        .await,
        [("chatter_py".to_string(), 20)]
    );
}

#[tokio::test]
async fn legacy_index_reads_the_same_messages_as_the_new_one() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    // Every message, in order: topic, time and a digest of the payload.
    let q = |f: String| {
        format!(
            "SELECT topic || ' ' || CAST(CAST(log_time AS BIGINT) AS VARCHAR) || ' ' || md5(data) AS m, \
             count(*) FROM '{f}' GROUP BY m ORDER BY m"
        )
    };
    let a = pairs(&ctx, &q(path(&dir, "generated/small.record"))).await;
    let b = pairs(
        &ctx,
        &q(path(&dir, "generated/legacy_index_positions.record")),
    )
    .await;
    assert_eq!(a.len(), 1235);
    assert_eq!(a, b);
}

#[tokio::test]
async fn columns_are_as_documented() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "generated/small.record");
    let rows = pairs(
        &ctx,
        &format!(
            "SELECT message_type || '|' || message_encoding, count(*) FROM '{f}' \
             WHERE publish_time IS NULL AND sequence IS NULL GROUP BY 1 ORDER BY 1"
        ),
    )
    .await;
    assert_eq!(
        rows,
        [
            ("apollo.canbus.Chassis|protobuf".to_string(), 600),
            (
                "apollo.localization.LocalizationEstimate|protobuf".to_string(),
                600
            ),
            (
                "apollo.perception.PerceptionObstacles|protobuf".to_string(),
                35
            ),
        ]
    );
    // channels(): one row per channel, with the descriptor facts in its metadata.
    let n = ints(
        &ctx,
        &format!("SELECT count(*) FROM channels('{f}') WHERE schema_encoding = 'protobuf'"),
    )
    .await;
    assert_eq!(n, [3]);
}

#[tokio::test]
async fn stored_as_record_reads_a_directory_of_segments() {
    let Some(dir) = dir() else {
        return;
    };
    let tmp = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    for i in 0..3 {
        let name = format!("segmented.record.0000{i}");
        std::fs::copy(dir.join("generated").join(&name), tmp.path().join(&name)).unwrap();
    }
    let ctx = logsql::session_context();
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE drive STORED AS RECORD LOCATION '{}/'",
        tmp.path().display()
    ))
    .await
    .unwrap();
    assert_eq!(ints(&ctx, "SELECT count(*) FROM drive").await, [1655]);
    // Exact statistics from the indexes answer count(*) without a scan.
    let plan = crate::sql::text(&ctx, "EXPLAIN SELECT count(*) FROM drive").await;
    assert!(!plan.contains("DataSourceExec"), "{plan}");
}

#[tokio::test]
async fn time_predicates_prune_chunks_and_filter_exactly() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "generated/small.record");
    // 3 chunks of 2 s from 1700000000 s; a window inside the second chunk.
    let lo = 1_700_000_002_500_000_000i64;
    let hi = 1_700_000_003_000_000_000i64;
    let sql = format!(
        "SELECT count(*) FROM '{f}' WHERE topic = '{POSE}' AND \
         log_time BETWEEN to_timestamp_nanos({lo}) AND to_timestamp_nanos({hi})"
    );
    let n = ints(&ctx, &sql).await[0];
    let full = ints(
        &ctx,
        &format!(
            "SELECT count(*) FROM (SELECT topic, log_time FROM '{f}' ORDER BY log_time) \
             WHERE topic = '{POSE}' AND CAST(log_time AS BIGINT) BETWEEN {lo} AND {hi}"
        ),
    )
    .await[0];
    assert_eq!(n, full);
    assert!((45..=55).contains(&n), "{n}");
    let plan = analyze(&ctx, &sql).await;
    assert_eq!(metric(&plan, "chunks_total"), 3, "{plan}");
    assert_eq!(metric(&plan, "chunks_read"), 1, "{plan}");
}

#[tokio::test]
async fn crashed_recordings_return_every_complete_message_then_fail() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "generated/crash_incomplete.record");
    ctx.sql("SET logsql.on_error = 'warn'").await.unwrap();
    assert_eq!(
        topic_counts(&ctx, &format!("'{f}'")).await,
        counts(401, 401, 15)
    );
    let torn = path(&dir, "generated/crash_torn_tail.record");
    assert_eq!(
        topic_counts(&ctx, &format!("'{torn}'")).await,
        counts(201, 200, 0)
    );
    // The default (`auto`): an unfinished recording gives every complete
    // message and succeeds (with a warning); `error` makes it strict.
    let default = logsql::session_context();
    assert_eq!(
        topic_counts(&default, &format!("'{torn}'")).await,
        counts(201, 200, 0)
    );
    let strict = logsql::session_context();
    strict.sql("SET logsql.on_error = 'error'").await.unwrap();
    let e = error(
        &strict,
        &format!("SELECT count(*) FROM '{torn}' WHERE length(data) > 0"),
    )
    .await;
    assert!(
        e.contains("crash_torn_tail.record") && e.contains("106102"),
        "{e}"
    );
}
