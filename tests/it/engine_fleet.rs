//! Many files as one table: hive partition columns, whole-file pruning by
//! the summaries' time ranges and topics, mixed formats and non-log files in
//! one directory.
//!
//! The fleet is generated (`benches/support/gen.rs`, the demo recording's
//! generator): six 10-second MCAP recordings an hour apart, two robots, so
//! every count is known exactly; the mixed-format test adds real fixtures.

use std::path::{Path, PathBuf};

use datafusion::prelude::SessionContext;

use crate::fixtures;
use crate::gen_support::{self, START_NS};
use crate::sql::{analyze, ints, metric, text};

/// Messages in one generated 10-second recording (as `tests/data/demo.mcap`).
const PER_FILE: i64 = 2610;
const IMU_PER_FILE: i64 = 2000;
const HOUR: u64 = 3_600_000_000_000;

/// `robot=r{1,2}/date=2026-05-0{1,2}/run{i}.mcap`, file `i` starting `i` hours
/// after [`START_NS`], plus a non-log file in one partition directory.
fn fleet(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![];
    for i in 0..6u64 {
        let sub = dir.join(format!("robot=r{}/date=2026-05-0{}", i % 2 + 1, i / 3 + 1));
        std::fs::create_dir_all(&sub).unwrap();
        let path = sub.join(format!("run{i}.mcap"));
        let opts = gen_support::Options {
            seconds: 10,
            image_bytes: 1000,
            chunk_size: 65536,
            start: START_NS + i * HOUR,
            ..Default::default()
        };
        gen_support::generate(&path, &opts).unwrap();
        files.push(path);
    }
    std::fs::write(
        dir.join("robot=r1/date=2026-05-01/notes.txt"),
        "not a log\n",
    )
    .unwrap();
    files
}

fn ts(nanos: u64) -> String {
    format!("to_timestamp_nanos({nanos})")
}

#[tokio::test]
async fn hive_directories_become_partition_columns() {
    let tmp = tempfile::tempdir().unwrap();
    fleet(tmp.path());
    let dir = format!("{}/", tmp.path().display());
    let ctx = logsql::session_context();
    let out = text(
        &ctx,
        &format!(
            "SELECT robot, date, count(*) AS n FROM '{dir}' GROUP BY robot, date ORDER BY robot, date"
        ),
    )
    .await;
    assert_eq!(
        out,
        "+-------+------------+------+\n\
         | robot | date       | n    |\n\
         +-------+------------+------+\n\
         | r1    | 2026-05-01 | 5220 |\n\
         | r1    | 2026-05-02 | 2610 |\n\
         | r2    | 2026-05-01 | 2610 |\n\
         | r2    | 2026-05-02 | 5220 |\n\
         +-------+------------+------+"
    );
    // A partition filter prunes files before they are opened.
    let sql = format!("SELECT count(*) FROM '{dir}' WHERE robot = 'r2' AND topic = '/imu'");
    assert_eq!(ints(&ctx, &sql).await, [3 * IMU_PER_FILE]);
    let plan = analyze(&ctx, &sql).await;
    assert_eq!(metric(&plan, "files_total"), 3, "{plan}");
    // A glob keeps the partition columns.
    let sql = format!(
        "SELECT count(*) FROM '{}/**/*.mcap' WHERE date = '2026-05-02'",
        tmp.path().display()
    );
    assert_eq!(ints(&ctx, &sql).await, [3 * PER_FILE]);
    // So does a named table (DataFusion infers the partitions of a LOCATION).
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE fleet STORED AS MCAP LOCATION '{dir}'"
    ))
    .await
    .unwrap();
    let sql = "SELECT count(*) FROM fleet WHERE robot = 'r1' AND date = '2026-05-01'";
    assert_eq!(ints(&ctx, sql).await, [2 * PER_FILE]);
}

#[tokio::test]
async fn a_time_window_opens_only_the_files_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    fleet(tmp.path());
    let dir = format!("{}/", tmp.path().display());
    let ctx = logsql::session_context();
    // One second of the third recording's ten.
    let (lo, hi) = (
        START_NS + 2 * HOUR + 4_000_000_000,
        START_NS + 2 * HOUR + 5_000_000_000,
    );
    let sql = format!(
        "SELECT count(*) FROM '{dir}' WHERE log_time >= {} AND log_time < {} AND topic = '/imu'",
        ts(lo),
        ts(hi)
    );
    assert_eq!(ints(&ctx, &sql).await, [200]);
    let plan = analyze(&ctx, &sql).await;
    assert_eq!(metric(&plan, "files_total"), 6, "{plan}");
    assert_eq!(metric(&plan, "files_pruned"), 5, "{plan}");
    // Only the window's chunks of that file are read.
    let chunks_read = metric(&plan, "chunks_read");
    assert!((1..=3).contains(&chunks_read), "{plan}");
    // A topic no file has prunes every file, even without a time filter.
    let sql = format!("SELECT count(*) FROM '{dir}' WHERE topic = '/nowhere'");
    assert_eq!(ints(&ctx, &sql).await, [0]);
    let plan = analyze(&ctx, &sql).await;
    assert_eq!(metric(&plan, "files_pruned"), 6, "{plan}");
    assert_eq!(metric(&plan, "chunks_read"), 0, "{plan}");
}

#[tokio::test]
async fn read_topic_over_a_fleet_keeps_the_partition_columns() {
    let tmp = tempfile::tempdir().unwrap();
    fleet(tmp.path());
    let dir = format!("{}/", tmp.path().display());
    let ctx = logsql::session_context();
    let out = text(
        &ctx,
        &format!(
            "SELECT robot, count(*) AS n, count(DISTINCT file) AS files \
             FROM read_topic('{dir}', '/imu') GROUP BY robot ORDER BY robot"
        ),
    )
    .await;
    assert_eq!(
        out,
        "+-------+------+-------+\n\
         | robot | n    | files |\n\
         +-------+------+-------+\n\
         | r1    | 6000 | 3     |\n\
         | r2    | 6000 | 3     |\n\
         +-------+------+-------+"
    );
}

#[tokio::test]
async fn mixed_formats_under_hive_directories() {
    let (Some(mcap), Some(bag)) = (
        fixtures::file("mcap", "samples/compressed.mcap"),
        fixtures::file("rosbag", "rosbagjs-example-bz2.bag"),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for (robot, src) in [("a", &mcap), ("b", &bag)] {
        let sub = tmp.path().join(format!("robot={robot}"));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::copy(src, sub.join(src.file_name().unwrap())).unwrap();
    }
    let ctx = SessionContext::new();
    logsql::register(&ctx).unwrap();
    let dir = format!("{}/", tmp.path().display());
    let per_file = |f: &Path| {
        let ctx = logsql::session_context();
        let f = f.display().to_string();
        async move { ints(&ctx, &format!("SELECT count(*) FROM '{f}'")).await[0] }
    };
    let (na, nb) = (per_file(&mcap).await, per_file(&bag).await);
    assert_eq!(na, 826, "compressed.mcap holds 826 messages");
    for (robot, n) in [("a", na), ("b", nb)] {
        let sql = format!("SELECT count(*) FROM '{dir}' WHERE robot = '{robot}'");
        assert_eq!(ints(&ctx, &sql).await, [n], "{sql}");
    }
    let sql = format!("SELECT count(DISTINCT file) FROM '{dir}'");
    assert_eq!(ints(&ctx, &sql).await, [2]);
}

#[tokio::test]
async fn a_session_sees_recordings_written_and_deleted_after_its_first_query() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let demo = fixtures::test_data("demo.mcap");
    std::fs::copy(&demo, dir.join("a.mcap")).unwrap();
    let ctx = logsql::session_context();
    let files = format!("SELECT count(DISTINCT file) FROM '{}/'", dir.display());
    assert_eq!(ints(&ctx, &files).await, [1]);
    std::fs::copy(&demo, dir.join("b.mcap")).unwrap();
    assert_eq!(ints(&ctx, &files).await, [2]);
    std::fs::remove_file(dir.join("a.mcap")).unwrap();
    assert_eq!(ints(&ctx, &files).await, [1]);
}
