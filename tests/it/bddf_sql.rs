//! The BDDF fixtures (`../shared/fixtures/bddf/`) through the scan engine
//! (SQL): row counts per topic, the `series` and `pod` table functions, time
//! windows reading only their blocks, truncated files and SHA1 mismatches. The
//! reader itself is tested on the same files in the readers crate
//! (`crates/readers/tests/readers/bddf_reader.rs`).

use std::path::PathBuf;

use crate::sql::{analyze, error, ints, metric, query};

fn dir() -> Option<PathBuf> {
    crate::fixtures::dir("bddf")
}

fn path(name: &str) -> Option<String> {
    Some(dir()?.join(name).display().to_string())
}

#[tokio::test]
async fn messages_series_and_pod_tables() {
    let Some(basic) = path("basic.bddf") else {
        return;
    };
    let ctx = logsql::session_context();
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT count(*) FROM '{basic}' GROUP BY topic ORDER BY topic")
        )
        .await,
        [13, 3, 4, 1, 500, 100]
    );
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM series('{basic}')")).await,
        [6]
    );
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT count(*) FROM pod('{basic}', 'imu/accel')")
        )
        .await,
        [1000]
    );
    // int32 cell voltages: the exact sum from the official reader.
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT CAST(sum(value) AS BIGINT) FROM pod('{basic}', '3')")
        )
        .await,
        [778085]
    );
    let err = error(
        &ctx,
        &format!("SELECT * FROM pod('{basic}', 'bosdyn.api.RobotState')"),
    )
    .await;
    assert!(err.contains("not a POD series"), "{err}");
    let Some(aix) = path("additional_indexes.bddf") else {
        return;
    };
    // Additional indexes as a map column: sequence numbers 0..249 of RobotState.
    assert_eq!(
        ints(
            &ctx,
            &format!(
                "SELECT sum(additional_indexes['sequence']) FROM '{aix}' WHERE topic = 'bosdyn.api.RobotState'"
            )
        )
        .await,
        [(0..250).sum::<i64>()]
    );
}

#[tokio::test]
async fn time_window_reads_only_the_window() {
    let Some(f) = path("long_sparse.bddf") else {
        return;
    };
    let ctx = logsql::session_context();
    let sql = format!(
        "SELECT length(data) FROM '{f}' WHERE log_time BETWEEN to_timestamp_nanos(1700000100000000000) \
         AND to_timestamp_nanos(1700000130000000000)"
    );
    let plan = analyze(&ctx, &sql).await;
    // The whole 625 kB file is one chunk: inside it only the blocks in the
    // window are read (binary search per series), not the file.
    assert!(metric(&plan, "bytes_read") < 100_000, "{plan}");
    // 30 s: IMU 2 blocks/s, RobotState 0.5 Hz, int32 blocks, one comment, events.
    let n = query(&ctx, &sql)
        .await
        .iter()
        .map(|b| b.num_rows())
        .sum::<usize>();
    assert_eq!(n, 79);
}

#[tokio::test]
async fn truncated_file_reports_the_cut() {
    let Some(f) = path("truncated.mid-block.bddf") else {
        return;
    };
    let ctx = logsql::session_context();
    // The default (`auto`): a cut file is an unfinished recording, every
    // complete block is read and the query succeeds.
    let all = format!("SELECT count(*) FROM '{f}' WHERE length(data) >= 0");
    assert_eq!(ints(&ctx, &all).await, [116]);
    query(&ctx, "SET logsql.on_error = 'error'").await;
    let err = error(&ctx, &format!("SELECT length(data) FROM '{f}'")).await;
    assert!(
        err.contains("truncated") && err.contains("truncated.mid-block.bddf"),
        "{err}"
    );
    query(&ctx, "SET logsql.on_error = 'warn'").await;
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT count(*) FROM '{f}' WHERE length(data) >= 0")
        )
        .await,
        [116]
    );
}

#[tokio::test]
async fn sha1_mismatch_is_reported() {
    let Some(dir) = dir() else { return };
    let mut bytes = std::fs::read(dir.join("grpc.bddf")).unwrap();
    bytes[50_000] ^= 1;
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("flipped.bddf");
    std::fs::write(&f, bytes).unwrap();
    let ctx = logsql::session_context();
    let err = error(
        &ctx,
        &format!(
            "SELECT count(*) FROM '{}' WHERE length(data) >= 0",
            f.display()
        ),
    )
    .await;
    assert!(
        err.contains("checksum mismatch") && err.contains("sha1"),
        "{err}"
    );
}
