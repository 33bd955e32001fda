//! `logsql check` and `check_recordings()` on the demo recordings, through
//! the CLI (text, JSON, JUnit, exit statuses) and SQL. Generated recordings
//! with known faults, and the JUnit XML read by a JUnit parser, are
//! tests/interop/check_interop.py.

use std::process::{Command, Output, Stdio};

use datafusion::arrow::array::AsArray;

use crate::sql::{error, query};

const DEMO_OK: &str = r#"
[recording]
required_topics = ["/imu", "/tf"]
min_duration = "9s"

[topics."/imu"]
rate = 200
max_gap = "10ms"
min_messages = 2000
monotonic_stamps = true
max_stamp_skew = "1ms"

[topics."/tf"]
rate = 50
rate_tolerance = 0.05
"#;

fn check(args: &[&str], expect: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("EXPECT.toml");
    std::fs::write(&path, expect).unwrap();
    Command::new(env!("CARGO_BIN_EXE_logsql"))
        .arg("check")
        .args(args)
        .arg("--expect")
        .arg(&path)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn the_demo_passes_and_each_fault_is_named() {
    let ok = check(&["tests/data/demo.mcap"], DEMO_OK);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}{}",
        stdout(&ok),
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(
        stdout(&ok),
        "PASS tests/data/demo.mcap (12 checks)\n1 recording: 1 passed, 0 failed, 0 unreadable\n"
    );
    // The same expectations, stricter: each broken one named with what was found.
    let strict = DEMO_OK
        .replace("rate = 200", "rate = 250")
        .replace("min_duration = \"9s\"", "min_duration = \"20s\"")
        .replace("\"/imu\", \"/tf\"]", "\"/imu\", \"/tf\", \"/lidar\"]");
    let bad = check(&["tests/data/demo.mcap"], &strict);
    assert_eq!(bad.status.code(), Some(1));
    let text = stdout(&bad);
    assert!(
        text.starts_with("FAIL tests/data/demo.mcap (3 of 13 checks failed)\n"),
        "{text}"
    );
    assert!(
        text.contains("  FAIL required_topic /lidar: topic /lidar has no messages\n"),
        "{text}"
    );
    assert!(text.contains("  FAIL min_duration: the recording lasts 9.995 s (first to last message), shorter than 20 s\n"), "{text}");
    assert!(
        text.contains("  FAIL rate /imu: /imu runs at 200.00 Hz (-20.0%), expected 250 Hz ± 10%\n"),
        "{text}"
    );
    // JSON: every check with its value; an unreadable file is status 2.
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.mcap");
    std::fs::write(&junk, b"not a recording").unwrap();
    let both = check(
        &[
            "tests/data/demo.mcap",
            junk.to_str().unwrap(),
            "--format",
            "json",
        ],
        DEMO_OK,
    );
    assert_eq!(both.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_str(&stdout(&both)).unwrap();
    assert_eq!(v[0]["verdict"], "pass");
    assert_eq!(v[0]["checks"].as_array().unwrap().len(), 12);
    let rate = v[0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "rate" && c["topic"] == "/imu")
        .unwrap();
    assert_eq!(rate["value"], "200.00 Hz");
    assert_eq!(v[1]["verdict"], "unreadable");
    assert!(
        v[1]["error"]
            .as_str()
            .unwrap()
            .contains("not a recognised log file"),
        "{v}"
    );
    // JUnit: a suite per recording, a failure per failed check.
    let junit = check(&["tests/data/demo.mcap", "--format", "junit"], &strict);
    let xml = stdout(&junit);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"logsql check\" tests=\"13\" failures=\"3\" errors=\"0\">"), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 3, "{xml}");
    assert!(xml.contains("± 10%"), "{xml}");
}

#[test]
fn bad_expectations_say_what_is_wrong() {
    let out = check(
        &["tests/data/demo.mcap"],
        "[topics.\"/imu\"]\nrate = 200\nmax_gap = \"a while\"\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("EXPECT.toml: [topics.\"/imu\"] max_gap:"),
        "{err}"
    );
    let out = check(&["tests/data/demo.mcap"], "[recordings]\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown field `recordings`"));
    let out = check(&["tests/data/demo.mcap", "--format", "csv"], DEMO_OK);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not csv"));
    // --format junit is check's only.
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(["--format", "junit", "SELECT 1"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format junit is for logsql check"));
}

#[tokio::test]
async fn the_same_checks_from_sql() {
    let ctx = logsql::session_context();
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let sql = format!(
        "SELECT check, topic, passed, value FROM check_recordings('{data}/demo.mcap', '{}') ORDER BY check, topic",
        DEMO_OK.replace('\'', "''")
    );
    let b = query(&ctx, &sql).await;
    let b = &b[0];
    assert_eq!(b.num_rows(), 12);
    assert_eq!(b.column(2).as_boolean().true_count(), 12);
    let checks = b.column(0).as_string::<i32>();
    assert_eq!(checks.value(0), "health");
    // Per recording of a directory, failures with their detail.
    let sql = format!(
        "SELECT file, verdict, count(*) FILTER (WHERE NOT passed) FROM check_recordings('{data}/', '[topics.\"/imu\"]\nmin_messages = 1') GROUP BY ALL ORDER BY file"
    );
    let b = query(&ctx, &sql).await;
    let verdicts: Vec<String> = (0..b[0].num_rows())
        .map(|i| {
            format!(
                "{} {}",
                b[0].column(0)
                    .as_string::<i32>()
                    .value(i)
                    .rsplit('/')
                    .next()
                    .unwrap(),
                b[0].column(1).as_string::<i32>().value(i)
            )
        })
        .collect();
    assert!(
        verdicts.contains(&"demo.mcap pass".to_string()),
        "{verdicts:?}"
    );
    assert!(
        verdicts.contains(&"robot.mcap fail".to_string()),
        "{verdicts:?}"
    );
    let err = error(&ctx, "SELECT * FROM check_recordings('x.mcap', 'rate = ')").await;
    assert!(
        err.contains("check_recordings(): the expectations:"),
        "{err}"
    );
    let err = error(&ctx, "SELECT * FROM check_recordings('x.mcap')").await;
    assert!(err.contains("takes a path"), "{err}");
}
