//! CARLA recordings through the scan engine: packets as `messages` with the
//! `frame` / `elapsed` extra columns, typed tables as table functions, time
//! pruning over frame chunks (by the scan metrics), truncated files.

use std::path::{Path, PathBuf};

use crate::fixtures;
use crate::sql::{analyze, error, ints, metric, pairs, text};

fn dir() -> Option<PathBuf> {
    fixtures::dir("carla")
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// `Frames: N` and `Duration: D seconds` from CARLA's info text.
fn expected_frames(dir: &Path, name: &str) -> (i64, f64) {
    let text = std::fs::read_to_string(dir.join(format!("expected/{name}.info.txt"))).unwrap();
    let frames = text
        .lines()
        .find_map(|l| l.strip_prefix("Frames: "))
        .unwrap()
        .parse()
        .unwrap();
    let duration = text
        .lines()
        .find_map(|l| l.strip_prefix("Duration: "))
        .unwrap()
        .trim_end_matches(" seconds")
        .parse()
        .unwrap();
    (frames, duration)
}

#[tokio::test]
async fn frames_and_durations_match_carla_info() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    for name in [
        "srunner_0913_DistanceBetweenVehicles",
        "srunner_2020_DistanceToLaneCenter",
        "synth_0910_additional",
        "synth_0914_additional",
        "synth_0915_basic",
        "synth_0916_basic",
        "synth_0916_async_jitter",
        "synth_ue4dev2024_door21",
    ] {
        let f = path(&dir, &format!("{name}.log"));
        let (frames, duration) = expected_frames(&dir, name);
        // One frame_start packet per frame in `messages`, and one row per frame in frames().
        let n = ints(
            &ctx,
            &format!("SELECT count(*) FROM '{f}' WHERE topic = 'frame_start'"),
        )
        .await;
        assert_eq!(n, [frames], "{name}");
        let n = ints(&ctx, &format!("SELECT count(*) FROM frames('{f}')")).await;
        assert_eq!(n, [frames], "{name}");
        let got = text(
            &ctx,
            &format!("SELECT round(max(elapsed), 4) FROM frames('{f}')"),
        )
        .await;
        let got: f64 = got
            .lines()
            .nth(3)
            .unwrap()
            .trim_matches(|c| c == '|' || c == ' ')
            .parse()
            .unwrap();
        assert!((got - duration).abs() < 1e-3, "{name}: {got} vs {duration}");
    }
}

#[tokio::test]
async fn messages_carry_frame_and_elapsed() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "synth_0916_basic.log");
    // Every packet of frame 100 has frame = 100 and the same elapsed time.
    let rows = pairs(
        &ctx,
        &format!(
            "SELECT CAST(count(DISTINCT elapsed) AS VARCHAR), count(*) FROM '{f}' WHERE frame = 100"
        ),
    )
    .await;
    assert_eq!(rows[0].0, "1");
    assert!(rows[0].1 > 10, "{rows:?}");
    // log_time = date + elapsed.
    let n = ints(
        &ctx,
        &format!(
            "SELECT count(*) FROM '{f}' WHERE \
             abs(CAST(log_time AS BIGINT) - (1700000000000000000 + CAST(elapsed * 1e9 AS BIGINT))) > 1"
        ),
    )
    .await;
    assert_eq!(n, [0]);
    // STORED AS CARLA, and the extra columns in the schema.
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE rec STORED AS CARLA LOCATION '{f}'"
    ))
    .await
    .unwrap();
    let n = ints(&ctx, "SELECT count(DISTINCT frame) FROM rec").await;
    assert_eq!(n, [200]);
}

#[tokio::test]
async fn actors_and_positions_tables() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "srunner_0913_DistanceBetweenVehicles.log");
    // 181 actors added (MANIFEST), 3 destroyed, 5 with a parent.
    let n = ints(
        &ctx,
        &format!(
            "SELECT count(*) FROM actors('{f}') UNION ALL \
             SELECT count(destroy_frame) FROM actors('{f}') UNION ALL \
             SELECT count(parent_id) FROM actors('{f}')"
        ),
    )
    .await;
    let mut n = n;
    n.sort();
    assert_eq!(n, [3, 5, 181]);
    let n = ints(
        &ctx,
        &format!("SELECT count(*) FROM actors('{f}') WHERE actor_type = 1"),
    )
    .await;
    assert_eq!(n, [2], "2 vehicles");
    // Positions of the vehicles, joined with the actor table.
    let n = ints(
        &ctx,
        &format!(
            "SELECT count(DISTINCT p.actor_id) FROM positions('{f}') p \
             JOIN actors('{f}') a ON p.actor_id = a.actor_id WHERE a.actor_type = 1"
        ),
    )
    .await;
    assert_eq!(n, [2]);
}

#[tokio::test]
async fn a_time_window_reads_only_the_frames_inside() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "srunner_0913_DistanceBetweenVehicles.log");
    let all = ints(&ctx, &format!("SELECT count(*) FROM positions('{f}')")).await[0];
    // A window of ~10% of the 24.7 s recording, by log_time.
    let t0 = ints(
        &ctx,
        &format!("SELECT CAST(min(log_time) AS BIGINT) FROM frames('{f}')"),
    )
    .await[0];
    let lo = t0 + 10_000_000_000 - (t0 % 1_000_000_000);
    let window = format!(
        "log_time >= to_timestamp_nanos({lo}) AND log_time < to_timestamp_nanos({})",
        lo + 2_500_000_000
    );
    let q = format!("SELECT count(*) FROM positions('{f}') WHERE {window}");
    let n = ints(&ctx, &q).await[0];
    assert!(n > 0 && n < all, "{n} of {all}");
    let plan = analyze(&ctx, &q).await;
    let size = std::fs::metadata(dir.join("srunner_0913_DistanceBetweenVehicles.log"))
        .unwrap()
        .len();
    let read = metric(&plan, "bytes_read");
    assert!(
        read * 100 <= size * 15,
        "read {read} of {size} bytes:\n{plan}"
    );
    assert!(
        metric(&plan, "chunks_read") < metric(&plan, "chunks_total"),
        "{plan}"
    );
}

#[tokio::test]
async fn truncated_and_bad_files() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "synth_0916_truncated.log");
    // The default (`auto`): a cut recording is unfinished, every complete
    // packet is read.
    let n = ints(&ctx, &format!("SELECT count(*) FROM '{f}'")).await;
    assert_eq!(n, [2980], "every complete packet, up to the cut");
    ctx.sql("SET logsql.on_error = 'error'").await.unwrap();
    let e = error(&ctx, &format!("SELECT count(*) FROM frames('{f}')")).await;
    assert!(
        e.contains("synth_0916_truncated.log") && e.contains("byte"),
        "{e}"
    );
    ctx.sql("SET logsql.on_error = 'warn'").await.unwrap();
    let n = ints(
        &ctx,
        &format!("SELECT count(*) FROM '{f}' WHERE topic = 'frame_start'"),
    )
    .await;
    assert_eq!(
        n,
        [199],
        "199 frames (the last one cut before its FrameEnd)"
    );
    let n = ints(&ctx, &format!("SELECT count(*) FROM '{f}'")).await;
    assert_eq!(n, [2980], "every complete packet, up to the cut");
    let bad = path(&dir, "synth_bad_magic.log");
    let e = error(&ctx, &format!("SELECT count(*) FROM '{bad}'")).await;
    assert!(e.contains("synth_bad_magic.log"), "{e}");
    let empty = path(&dir, "synth_header_only.log");
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{empty}'")).await,
        [0]
    );
}

#[tokio::test]
async fn typed_tables_lists_every_column_with_its_unit() {
    let ctx = logsql::session_context();
    let rows = crate::sql::pairs(
        &ctx,
        "SELECT column_name || ': ' || doc, ordinal_position FROM typed_tables() \
         WHERE table_name = 'positions' AND column_name IN ('x', 'yaw') ORDER BY ordinal_position",
    )
    .await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].0.contains("metres") && rows[1].0.contains("degrees"),
        "{rows:?}"
    );
    let n = ints(
        &ctx,
        "SELECT count(DISTINCT table_name) FROM typed_tables() WHERE format = 'carla'",
    )
    .await;
    assert_eq!(n, [21]);
}
