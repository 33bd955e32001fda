//! `intervals(source, topic, condition [, max_gap [, min_duration]])`
//! against a reference computed here from `read_topic`'s rows (runs of
//! consecutive true conditions per file in log-time order, merged over gaps
//! of at most `max_gap`, the shorter than `min_duration` dropped), on the
//! demo recording and a directory of generated robot recordings; and
//! through the CLI.

use std::process::{Command, Stdio};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::prelude::SessionContext;

use crate::robot::{RobotOptions, write_robot};
use crate::sql::{error, query};

/// One interval: file, start and end (ns), messages.
type Interval = (String, i64, i64, i64);

/// `(file, t, condition)` of every message of `topic`, in (file, t) order.
async fn rows(
    ctx: &SessionContext,
    path: &str,
    topic: &str,
    condition: &str,
) -> Vec<(String, i64, bool)> {
    let sql = format!(
        "SELECT file, CAST(log_time AS BIGINT) AS t, coalesce(({condition}), false) AS c \
         FROM read_topic('{path}', '{topic}') ORDER BY file, t"
    );
    let mut out = Vec::new();
    for b in query(ctx, &sql).await {
        let (f, t, c) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_boolean(),
        );
        for i in 0..b.num_rows() {
            out.push((f.value(i).to_string(), t.value(i), c.value(i)));
        }
    }
    out
}

/// The definition, as a loop.
fn reference(rows: &[(String, i64, bool)], max_gap: i64, min_duration: i64) -> Vec<Interval> {
    let mut runs: Vec<Interval> = Vec::new();
    let mut open: Option<Interval> = None;
    let mut last_file: Option<&str> = None;
    for (file, t, c) in rows {
        if last_file != Some(file.as_str()) {
            runs.extend(open.take());
            last_file = Some(file);
        }
        match (c, open.as_mut()) {
            (true, Some(run)) => {
                run.2 = *t;
                run.3 += 1;
            }
            (true, None) => open = Some((file.clone(), *t, *t, 1)),
            (false, _) => runs.extend(open.take()),
        }
    }
    runs.extend(open);
    let mut merged: Vec<Interval> = Vec::new();
    for run in runs {
        match merged.last_mut() {
            Some(prev) if prev.0 == run.0 && run.1 - prev.2 <= max_gap => {
                prev.2 = run.2;
                prev.3 += run.3;
            }
            _ => merged.push(run),
        }
    }
    merged.retain(|r| r.2 - r.1 >= min_duration);
    merged.sort();
    merged
}

async fn intervals(ctx: &SessionContext, call: &str) -> Vec<Interval> {
    let sql = format!(
        "SELECT file, topic, CAST(start_time AS BIGINT), CAST(end_time AS BIGINT), duration, messages FROM {call}"
    );
    let mut out = Vec::new();
    for b in query(ctx, &sql).await {
        let f = b.column(0).as_string::<i32>();
        let (lo, hi) = (
            b.column(2).as_primitive::<Int64Type>(),
            b.column(3).as_primitive::<Int64Type>(),
        );
        let d = b.column(4).as_primitive::<Float64Type>();
        let n = b.column(5).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            assert!(!n.is_null(i));
            let seconds = (hi.value(i) - lo.value(i)) as f64 / 1e9;
            assert!((d.value(i) - seconds).abs() < 1e-9, "duration of row {i}");
            out.push((f.value(i).to_string(), lo.value(i), hi.value(i), n.value(i)));
        }
    }
    // Rows come in no particular order.
    out.sort();
    out
}

#[tokio::test]
async fn intervals_are_the_runs_of_a_condition_merged_and_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    for seed in 0..3 {
        let o = RobotOptions {
            seed,
            start_ns: 1_700_000_000_000_000_000 + u64::from(seed) * 100_000_000_000,
            seconds: 3.0,
            ..RobotOptions::default()
        };
        write_robot(&runs.join(format!("r{seed}.mcap")), &o).unwrap();
    }
    let fleet = format!("{}/", runs.display());
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.mcap");
    let ctx = logsql::session_context();
    let cases = [
        (demo, "/imu", "linear_acceleration.z > 9.83"),
        (
            demo,
            "/imu",
            "angular_velocity.x < 0 AND linear_acceleration.z > 9.815",
        ),
        (fleet.as_str(), "/joint_states", "position[1] > 0.5"),
        (fleet.as_str(), "/joint_states", "abs(velocity[3]) < 0.2"),
        (fleet.as_str(), "/cmd", "position[2] > position[1]"),
    ];
    let mut nonempty = 0;
    for (path, topic, condition) in cases {
        let base = rows(&ctx, path, topic, condition).await;
        for (gap, min) in [
            ("0 s", "0 s"),
            ("20 ms", "0 s"),
            ("0 s", "10 ms"),
            ("250 ms", "100 ms"),
        ] {
            let ns = |d: &str| logsql::units::parse_duration(d).unwrap().as_nanos() as i64;
            let want = reference(&base, ns(gap), ns(min));
            let call = format!("intervals('{path}', '{topic}', '{condition}', '{gap}', '{min}')");
            let got = intervals(&ctx, &call).await;
            assert_eq!(got, want, "{call}");
            nonempty += usize::from(!got.is_empty());
        }
        // The defaults: no merging, nothing dropped.
        let call = format!("intervals('{path}', '{topic}', '{condition}')");
        assert_eq!(
            intervals(&ctx, &call).await,
            reference(&base, 0, 0),
            "{call}"
        );
    }
    assert!(nonempty >= 15, "only {nonempty} cases found intervals");
    // Every interval carries its topic; filters and joins apply as to any table.
    let topics = query(
        &ctx,
        &format!(
            "SELECT DISTINCT topic FROM intervals('{fleet}', '/cmd', 'position[2] > position[1]')"
        ),
    )
    .await;
    assert_eq!(topics[0].column(0).as_string::<i32>().value(0), "/cmd");
}

#[tokio::test]
async fn bad_arguments_say_what_intervals_takes() {
    let ctx = logsql::session_context();
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.mcap");
    for (call, says) in [
        (
            format!("intervals('{demo}', '/imu')"),
            "intervals() takes a path",
        ),
        (
            format!("intervals('{demo}', '/imu', 'x > 1) AS c FROM t --')"),
            "is not one SQL expression",
        ),
        (
            format!("intervals('{demo}', '/imu', 'x > 1; DROP TABLE t')"),
            "is not one SQL expression",
        ),
        (
            format!("intervals('{demo}', '/imu', 'linear_acceleration.z > 1', 'soon')"),
            "max_gap: 'soon' is not a duration",
        ),
        (
            format!("intervals('{demo}', '/imu', 'no_such_field > 1')"),
            "no_such_field",
        ),
    ] {
        let e = error(&ctx, &format!("SELECT * FROM {call}")).await;
        assert!(e.contains(says), "{call}: {e}");
    }
}

#[test]
fn intervals_through_the_cli() {
    let demo = "tests/data/robot.mcap";
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "--format",
            "csv",
            &format!(
                "SELECT topic, start_time, end_time, duration, messages FROM intervals('{demo}', '/joint_states', 'position[1] > 0.5', '200 ms', '100 ms')"
            ),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "topic,start_time,end_time,duration,messages\n\
         /joint_states,2023-11-14T22:13:20.750000000Z,2023-11-14T22:13:22.000000000Z,1.25,126\n"
    );
}

/// `(topic, log_time, md5(data))` of `sql`'s rows, in order.
async fn messages(ctx: &SessionContext, sql: &str) -> Vec<(String, i64, String)> {
    let mut out = Vec::new();
    for b in query(ctx, sql).await {
        let (topic, t, h) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_string::<i32>(),
        );
        for i in 0..b.num_rows() {
            out.push((
                topic.value(i).to_string(),
                t.value(i),
                h.value(i).to_string(),
            ));
        }
    }
    out
}

#[tokio::test]
async fn clips_hold_every_message_of_each_padded_moment() {
    let dir = tempfile::tempdir().unwrap();
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.mcap");
    let out = dir.path().join("clips");
    let cond = "linear_acceleration.z > 9.83";
    let run = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args([
            "clips",
            demo,
            "--topic",
            "/imu",
            "--when",
            cond,
            "--max-gap",
            "20 ms",
            "--min-duration",
            "5 ms",
            "--before",
            "100 ms",
            "--after",
            "100 ms",
            "-o",
        ])
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let said = String::from_utf8(run.stdout).unwrap();
    // The windows: the moments padded by 100 ms, merged where they overlap.
    let ctx = logsql::session_context();
    let mut moments = intervals(
        &ctx,
        &format!("intervals('{demo}', '/imu', '{cond}', '20 ms', '5 ms')"),
    )
    .await;
    moments.sort_by_key(|m| m.1);
    let mut windows: Vec<(i64, i64)> = Vec::new();
    for (_, lo, hi, _) in &moments {
        let (lo, hi) = (lo - 100_000_000, hi + 100_000_000);
        match windows.last_mut() {
            Some(w) if lo <= w.1 => w.1 = w.1.max(hi),
            _ => windows.push((lo, hi)),
        }
    }
    assert!(
        windows.len() > 5 && windows.len() < moments.len(),
        "{windows:?}"
    );
    let mut total = 0;
    for (k, (lo, hi)) in windows.iter().enumerate() {
        let clip = out.join(format!("demo_{k:03}.mcap"));
        let got = messages(
            &ctx,
            &format!(
                "SELECT topic, CAST(log_time AS BIGINT) AS t, arrow_cast(md5(data), 'Utf8') AS h FROM '{}' ORDER BY t, topic",
                clip.display()
            ),
        )
        .await;
        let want = messages(
            &ctx,
            &format!(
                "SELECT topic, CAST(log_time AS BIGINT) AS t, arrow_cast(md5(data), 'Utf8') AS h FROM '{demo}' \
                 WHERE CAST(log_time AS BIGINT) BETWEEN {lo} AND {hi} ORDER BY t, topic"
            ),
        )
        .await;
        assert_eq!(got, want, "{}", clip.display());
        total += got.len();
        // The clip keeps the recording's schemas, metadata and attachment,
        // and says where it came from and which moments it holds.
        let kept = query(
            &ctx,
            &format!(
                "SELECT (SELECT count(*) FROM metadata('{c}') WHERE name <> 'logsql.clip') AS m, \
                 (SELECT count(*) FROM attachments('{c}')) AS a",
                c = clip.display()
            ),
        )
        .await;
        assert_eq!(kept[0].column(0).as_primitive::<Int64Type>().value(0), 1);
        assert_eq!(kept[0].column(1).as_primitive::<Int64Type>().value(0), 1);
        let record = query(
            &ctx,
            &format!(
                "SELECT metadata['source'], metadata['start'], metadata['end'], metadata['moments'], \
                 metadata['condition'], metadata['before'] \
                 FROM metadata('{}') WHERE name = 'logsql.clip'",
                clip.display()
            ),
        )
        .await;
        let text = |i: usize| record[0].column(i).as_string::<i32>().value(0).to_string();
        let rfc = logsql::units::rfc3339;
        let held: Vec<String> = moments
            .iter()
            .filter(|m| m.1 - 100_000_000 >= *lo && m.2 + 100_000_000 <= *hi)
            .map(|m| format!("{}/{}", rfc(m.1), rfc(m.2)))
            .collect();
        assert_eq!(
            (text(0), text(1), text(2), text(3), text(4), text(5)),
            (
                demo.to_string(),
                rfc(*lo),
                rfc(*hi),
                held.join(","),
                cond.to_string(),
                "100 ms".to_string()
            )
        );
    }
    assert!(!out.join(format!("demo_{:03}.mcap", windows.len())).exists());
    assert!(
        said.contains(&format!(
            "{} clips of {} moments, {total} messages",
            windows.len(),
            moments.len()
        )),
        "{said}"
    );
}

#[tokio::test]
async fn clip_writes_one_window_end_included_as_mcap_or_bag() {
    let dir = tempfile::tempdir().unwrap();
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.mcap");
    let ctx = logsql::session_context();
    // 22:13:21 to 22:13:22.005: the window ends on an /imu message.
    let (lo, hi) = (1_700_000_001_000_000_000i64, 1_700_000_002_005_000_000i64);
    let want = messages(
        &ctx,
        &format!(
            "SELECT topic, CAST(log_time AS BIGINT) AS t, arrow_cast(md5(data), 'Utf8') AS h FROM '{demo}' \
             WHERE topic IN ('/imu', '/tf') AND CAST(log_time AS BIGINT) BETWEEN {lo} AND {hi} ORDER BY t, topic"
        ),
    )
    .await;
    assert_eq!(
        want.last().map(|m| m.1),
        Some(hi),
        "the last message is at --end"
    );
    for name in ["one.mcap", "one.bag"] {
        let out = dir.path().join(name);
        let run = Command::new(env!("CARGO_BIN_EXE_logsql"))
            .args([
                "clip",
                demo,
                "--start",
                "2023-11-14T22:13:21Z",
                "--end",
                "2023-11-14T22:13:22.005Z",
                "--topics",
                "/imu",
                "--topics",
                "/tf",
                "-o",
            ])
            .arg(&out)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let said = String::from_utf8(run.stdout).unwrap();
        assert!(
            said.contains(&format!(": {} messages of ", want.len())),
            "{said}"
        );
        // What the scan read, as the line ends: "...; 25.85 KiB read (26474 bytes)".
        // One second of a ten-second recording reads the chunks of that
        // second, not the file.
        let read: u64 = said
            .trim_end()
            .strip_suffix(" bytes)")
            .and_then(|s| s.rsplit_once('(').map(|(_, n)| n))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no bytes read in {said}"));
        let size = std::fs::metadata(demo).unwrap().len();
        assert!(read > 0 && read < size / 3, "{read} of {size}: {said}");
        let got = messages(
            &ctx,
            &format!(
                "SELECT topic, CAST(log_time AS BIGINT) AS t, arrow_cast(md5(data), 'Utf8') AS h FROM '{}' ORDER BY t, topic",
                out.display()
            ),
        )
        .await;
        assert_eq!(got, want, "{name}");
    }
}
