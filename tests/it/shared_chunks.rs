//! Decompressed chunks shared by the scans of one file in one query: an ASOF
//! JOIN of two topics of a recording decompresses each chunk about once, its
//! rows are those of the same query without sharing, `EXPLAIN ANALYZE`
//! counts the chunks handed over (`chunks_shared`), a file scanned once keeps
//! nothing, and nothing stays kept after the query. On the committed demo
//! MCAP, a recording from the MCAP project's samples (zstd) and a ROS1 bag
//! recorded by `rosbag` (bz2).

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use logsql::SharedChunkRegistry;

use crate::fixtures;
use crate::sql::{analyze, metric, query};

/// Each row of `left` with the latest `right` message at or before it, both
/// with their payloads (so both scans decompress).
fn join(file: &str, left: &str, right: &str) -> String {
    format!(
        "SELECT l.log_time, length(l.data) AS l_len, r.log_time AS r_time, md5(r.data) AS r_md5 \
         FROM ((SELECT * FROM '{file}' WHERE topic = '{left}') l \
         ASOF JOIN (SELECT * FROM '{file}' WHERE topic = '{right}') r \
         MATCH_CONDITION (l.log_time >= r.log_time)) \
         ORDER BY l.log_time"
    )
}

fn kept(ctx: &SessionContext) -> usize {
    SharedChunkRegistry::of(ctx.state().config())
        .expect("logsql sessions have a registry")
        .kept_bytes()
}

/// Runs `sql` with and without sharing: the rows are the same, and sharing
/// hands chunks over and decompresses fewer bytes. Returns the chunks shared.
async fn shares(sql: &str) -> u64 {
    let ctx = logsql::session_context();
    let plan = analyze(&ctx, sql).await;
    let rows = pretty_format_batches(&query(&ctx, sql).await)
        .unwrap()
        .to_string();
    assert_eq!(kept(&ctx), 0, "nothing is kept after the query");

    let off = logsql::session_context();
    query(&off, "SET logsql.shared_chunk_bytes = 0").await;
    let plain = analyze(&off, sql).await;
    let plain_rows = pretty_format_batches(&query(&off, sql).await)
        .unwrap()
        .to_string();
    assert_eq!(rows, plain_rows, "{sql}");
    assert!(rows.lines().count() > 10, "{rows}");
    assert_eq!(metric(&plain, "chunks_shared"), 0, "{plain}");

    let shared = metric(&plan, "chunks_shared");
    assert!(shared > 0, "{plan}");
    assert!(
        metric(&plan, "bytes_decompressed") < metric(&plain, "bytes_decompressed"),
        "{plan}\n{plain}"
    );
    shared
}

#[tokio::test]
async fn two_topics_of_the_demo_recording_decompress_each_chunk_once() {
    let f = "tests/data/demo.mcap";
    let sql = join(f, "/tf", "/imu");
    shares(&sql).await;
    // Every chunk holds both topics: the two scans decompress about what one
    // scan of every chunk does.
    let ctx = logsql::session_context();
    let joined = metric(&analyze(&ctx, &sql).await, "bytes_decompressed");
    let once = analyze(&ctx, &format!("SELECT sum(length(data)) FROM '{f}'")).await;
    let once = metric(&once, "bytes_decompressed");
    assert!(joined * 10 <= once * 11, "{joined} bytes, against {once}");
}

#[tokio::test]
async fn a_file_scanned_once_keeps_nothing() {
    let ctx = logsql::session_context();
    let plan = analyze(
        &ctx,
        "SELECT topic, sum(length(data)) FROM 'tests/data/demo.mcap' GROUP BY topic",
    )
    .await;
    assert_eq!(metric(&plan, "chunks_shared"), 0, "{plan}");
    assert_eq!(kept(&ctx), 0);
}

#[tokio::test]
async fn a_recording_from_the_mcap_samples_shares_its_zstd_chunks() {
    let Some(f) = fixtures::file("mcap", "samples/compressed.mcap") else {
        return;
    };
    shares(&join(&f.display().to_string(), "/tf", "/diagnostics")).await;
}

#[tokio::test]
async fn a_rosbag_recording_shares_its_bz2_chunks() {
    let Some(f) = fixtures::file("rosbag", "robot_localization-test1.bag") else {
        return;
    };
    shares(&join(
        &f.display().to_string(),
        "/imu/data",
        "/husky_velocity_controller/odom",
    ))
    .await;
}

#[test]
fn the_cli_shows_the_chunks_shared() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_logsql"))
        .arg(format!(
            "EXPLAIN ANALYZE {}",
            join("tests/data/demo.mcap", "/tf", "/imu")
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let shared = crate::sql::text_metrics(&text, "chunks_shared");
    assert_eq!(shared.len(), 2, "{text}");
    assert!(shared.iter().sum::<u64>() > 0, "{text}");
}
