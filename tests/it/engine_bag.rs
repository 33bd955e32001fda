//! ROS bags through the scan engine: SQL results against the python `rosbags`
//! oracle, `STORED AS BAG`, the summary table functions, chunk pruning by time
//! (by the scan metrics), header-only scans answered from index data, and
//! damaged files.

use std::path::{Path, PathBuf};

use datafusion::prelude::SessionContext;
use serde_json::Value;

use crate::fixtures;
use crate::sql::{analyze, error, ints, metric, pairs, query, text};

fn ctx() -> SessionContext {
    logsql::session_context()
}

fn dir() -> Option<PathBuf> {
    fixtures::dir("rosbag")
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

fn oracle(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("expected/rosbags-summary.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn group_by_topic_matches_the_oracle_for_every_bag() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let mut files = 0;
    for want in oracle(&dir) {
        let Some(topics) = want["topics"].as_object() else {
            continue;
        };
        let f = path(&dir, want["file"].as_str().unwrap());
        let got = pairs(
            &ctx,
            &format!("SELECT topic, count(*) FROM '{f}' GROUP BY topic ORDER BY topic"),
        )
        .await;
        let mut expected: Vec<(String, i64)> = topics
            .iter()
            .map(|(t, v)| (t.clone(), v["count"].as_i64().unwrap()))
            .collect();
        expected.sort();
        assert_eq!(got, expected, "{f}");
        // First/last log time per topic, from a real scan (the filter on the
        // payload forces one).
        for (agg, key) in [("min", "first_ns"), ("max", "last_ns")] {
            let got = pairs(
                &ctx,
                &format!(
                    "SELECT topic, CAST({agg}(log_time) AS BIGINT) FROM '{f}' \
                     WHERE length(data) >= 0 GROUP BY topic ORDER BY topic"
                ),
            )
            .await;
            let mut expected: Vec<(String, i64)> = topics
                .iter()
                .map(|(t, v)| (t.clone(), v[key].as_i64().unwrap()))
                .collect();
            expected.sort();
            assert_eq!(got, expected, "{f} {agg}");
        }
        let n = ints(&ctx, &format!("SELECT count(*) FROM '{f}'")).await;
        assert_eq!(n, vec![want["message_count"].as_i64().unwrap()], "{f}");
        files += 1;
    }
    assert_eq!(files, 15);
}

#[tokio::test]
async fn stored_as_bag_columns_and_table_functions() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let f = path(&dir, "rosbagjs-example.bag");
    query(
        &ctx,
        &format!("CREATE EXTERNAL TABLE ex STORED AS BAG LOCATION '{f}'"),
    )
    .await;
    assert_eq!(ints(&ctx, "SELECT count(*) FROM ex").await, vec![8647]);
    let out = text(
        &ctx,
        "SELECT topic, message_type, message_encoding, count(*) AS n, \
         count(publish_time) AS p, count(sequence) AS s \
         FROM ex WHERE topic IN ('/tf', '/rosout') GROUP BY 1, 2, 3 ORDER BY 1",
    )
    .await;
    assert!(
        out.contains("| /rosout | rosgraph_msgs/Log | ros1             | 10   | 0 | 0 |"),
        "{out}"
    );
    assert!(
        out.contains("| /tf     | tf/tfMessage      | ros1             | 2688 | 0 | 0 |"),
        "{out}"
    );
    // std_msgs/String payloads are the serialized message: u32 length + bytes.
    let u = path(&dir, "rosbagjs-example-unsorted-chunks.bag");
    let out = text(
        &ctx,
        &format!(
            "SELECT CAST(log_time AS BIGINT) AS t, encode(data, 'hex') AS d FROM '{u}' ORDER BY log_time"
        ),
    )
    .await;
    assert!(out.contains("| 1000000000 | 0100000031 |"), "{out}");
    assert!(out.contains("| 3000000000 | 0100000033 |"), "{out}");

    // topics(): several connections on one topic are one topic.
    let out = pairs(
        &ctx,
        &format!("SELECT topic, message_count FROM topics('{f}') ORDER BY topic"),
    )
    .await;
    assert_eq!(out.len(), 9, "{out:?}");
    assert!(out.contains(&("/tf".to_string(), 2688)), "{out:?}");
    assert!(out.contains(&("/rosout".to_string(), 10)), "{out:?}");

    // chunks(): a bz2 bag with 10 chunks.
    let r = path(&dir, "robot_localization-test1.bag");
    let out = text(
        &ctx,
        &format!(
            "SELECT compression, count(*) AS n, CAST(sum(message_count) AS BIGINT) AS m, \
             CAST(sum(uncompressed_size) AS BIGINT) > CAST(sum(compressed_size) AS BIGINT) AS smaller \
             FROM chunks('{r}') GROUP BY compression"
        ),
    )
    .await;
    assert!(
        out.contains("| bz2         | 10 | 16806 | true    |"),
        "{out}"
    );

    // connections(): the ROS view.
    let out = text(
        &ctx,
        &format!(
            "SELECT connection_id, topic, message_type, md5sum, callerid, latching, \
             length(message_definition) AS def FROM connections('{f}') WHERE topic = '/rosout' ORDER BY 1"
        ),
    )
    .await;
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "| 0 | /rosout | rosgraph_msgs/Log | acffd30cd6b6de30f120938c17c593fb | /record_1396293886837508126 | true | 1060 |"
        ),
        "{out}"
    );
    assert_eq!(out.lines().count(), 3 + 4, "{out}");
}

#[tokio::test]
async fn a_time_window_prunes_chunks_and_counts_exactly() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let f = path(&dir, "robot_localization-test1.bag");
    let (lo, hi) = (1_432_235_675_913_245_305i64, 1_432_235_715_443_956_919i64);
    let window =
        format!("log_time >= to_timestamp_nanos({lo}) AND log_time < to_timestamp_nanos({hi})");
    let got = pairs(
        &ctx,
        &format!("SELECT topic, count(*) FROM '{f}' WHERE {window} GROUP BY topic ORDER BY topic"),
    )
    .await;
    assert_eq!(
        got,
        vec![
            ("/fix".to_string(), 99),
            ("/husky_velocity_controller/odom".to_string(), 394),
            ("/imu/data".to_string(), 1186),
        ]
    );
    // With payloads: only the chunks overlapping the window are decompressed.
    let sql = format!("SELECT count(*), sum(length(data)) FROM '{f}' WHERE {window}");
    let plan = analyze(&ctx, &sql).await;
    let (total, read) = (metric(&plan, "chunks_total"), metric(&plan, "chunks_read"));
    assert_eq!(total, 10, "{plan}");
    assert!(
        read > 0 && read <= 3,
        "read {read} of {total} chunks:\n{plan}"
    );
    assert!(metric(&plan, "bytes_decompressed") > 0, "{plan}");
    // Without payloads the index data answers: nothing is decompressed (bz2!).
    let plan = analyze(
        &ctx,
        &format!("SELECT topic, count(*) FROM '{f}' WHERE {window} GROUP BY topic"),
    )
    .await;
    assert_eq!(metric(&plan, "bytes_decompressed"), 0, "{plan}");
    assert!(metric(&plan, "chunks_read") <= 3, "{plan}");

    // Topic filters prune by the chunk infos' per-connection counts.
    let e = path(&dir, "embag-test.bag");
    let plan = analyze(
        &ctx,
        &format!("SELECT count(*), sum(length(data)) FROM '{e}' WHERE topic = '/base_scan'"),
    )
    .await;
    assert_eq!(metric(&plan, "chunks_total"), 6, "{plan}");
    assert_eq!(metric(&plan, "chunks_read"), 1, "{plan}");
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT count(*) FROM '{e}' WHERE topic = '/base_scan' AND length(data) > 0")
        )
        .await,
        vec![5]
    );
    // A window between messages: no chunk is read, no row invented.
    let plan = analyze(
        &ctx,
        &format!(
            "SELECT count(*) FROM '{e}' WHERE length(data) > 0 AND log_time >= to_timestamp_nanos(1604515193646261398) \
             AND log_time < to_timestamp_nanos(1604515194405125161)"
        ),
    )
    .await;
    assert_eq!(metric(&plan, "chunks_read"), 0, "{plan}");
}

#[tokio::test]
async fn the_three_compressions_give_the_same_rows() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let sql = |name: &str| {
        format!(
            "SELECT topic, CAST(log_time AS BIGINT) AS t, md5(data) AS h FROM '{}' ORDER BY t, topic, h",
            path(&dir, name)
        )
    };
    let none = text(&ctx, &sql("rosbagjs-example.bag")).await;
    assert_eq!(none.lines().count(), 8647 + 4);
    assert_eq!(none, text(&ctx, &sql("rosbagjs-example-bz2.bag")).await);
    assert_eq!(none, text(&ctx, &sql("rosbagjs-example-lz4.bag")).await);
}

#[tokio::test]
async fn damaged_bags_give_clear_errors() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    // Strict: any damage fails the query (the default, `auto`, only warns of an
    // unfinished recording; checked at the end).
    query(&ctx, "SET logsql.on_error = 'error'").await;
    let e = path(&dir, "rosbagjs-empty-file.bag");
    let err = error(&ctx, &format!("SELECT count(*) FROM '{e}'")).await;
    assert!(err.contains("rosbagjs-empty-file.bag"), "{err}");
    let err = error(
        &ctx,
        &format!("SELECT count(*) FROM '{e}' WHERE length(data) > 0"),
    )
    .await;
    assert!(err.contains("rosbagjs-empty-file.bag"), "{err}");

    let d = path(&dir, "rosbag-rs-dummy-truncated.bag");
    let err = error(&ctx, &format!("SELECT * FROM '{d}'")).await;
    assert!(
        err.contains("rosbag-rs-dummy-truncated.bag")
            && err.contains("byte 90")
            && err.contains("600"),
        "{err}"
    );

    let n = path(&dir, "rosbagjs-no-messages.bag");
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{n}'")).await,
        vec![0]
    );
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT count(*) FROM '{n}' WHERE length(data) > 0")
        )
        .await,
        vec![0]
    );

    // A bz2 bag cut in half: the chunks before the cut, then an error naming
    // the file and the offset; with on_error = 'warn', just the prefix.
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(dir.join("robot_localization-test1.bag")).unwrap();
    let cut = tmp.path().join("cut.bag");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let c = cut.display().to_string();
    let err = error(&ctx, &format!("SELECT count(*) FROM '{c}'")).await;
    assert!(err.contains("cut.bag") && err.contains("byte"), "{err}");
    query(&ctx, "SET logsql.on_error = 'warn'").await;
    let n = ints(
        &ctx,
        &format!("SELECT count(*) FROM '{c}' WHERE length(data) > 0"),
    )
    .await[0];
    assert!(n > 3000 && n < 16806, "{n}");
    let lenient = self::ctx();
    let q = format!("SELECT count(*) FROM '{c}' WHERE length(data) > 0");
    assert_eq!(
        ints(&lenient, &q).await,
        [n],
        "the default reads the same prefix"
    );
    let full = path(&dir, "robot_localization-test1.bag");
    let extra = ints(
        &ctx,
        &format!(
            "SELECT count(*) FROM (SELECT topic, log_time, md5(data) FROM '{c}' \
             EXCEPT SELECT topic, log_time, md5(data) FROM '{full}')"
        ),
    )
    .await;
    assert_eq!(extra, vec![0]);
}
