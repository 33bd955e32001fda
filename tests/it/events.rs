//! The events table as users meet it: `logsql events add | list | export |
//! import`, `INSERT INTO events SELECT ... FROM intervals(...)`, the table
//! read by a new process, joined to a catalog's `recordings`, and an append
//! killed while it writes.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::cli::{logsql, ok, stderr};

const ROBOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/robot.mcap");

/// `logsql --events DIR --format csv SQL`'s output.
fn csv(dir: &Path, sql: &str) -> String {
    ok(&[
        "--events",
        &dir.display().to_string(),
        "--format",
        "csv",
        sql,
    ])
}

#[test]
fn events_from_insert_and_add_survive_a_new_process_and_round_trip_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("events");
    let d = dir.display().to_string();
    // No directory yet: an empty table, not an error.
    assert_eq!(csv(&dir, "SELECT count(*) AS n FROM events"), "n\n0\n");
    ok(&[
        "--events",
        &d,
        "events",
        "add",
        "--type",
        "hard_brake",
        "--start",
        "2023-11-14T22:13:20.5Z",
        "--end",
        "2023-11-14T22:13:21Z",
        "--device",
        "r7",
        "-p",
        "speed=3.2",
        "-p",
        "site=lab",
        "--id",
        "brake-1",
    ]);
    let inserted = csv(
        &dir,
        &format!(
            "INSERT INTO events (device, recording, start_time, end_time, type, properties) \
             SELECT 'r7', file, start_time, end_time, 'arm_up', \
                    MAP {{'messages': CAST(messages AS VARCHAR)}} \
             FROM intervals('{ROBOT}', '/joint_states', 'position[1] > 0.5', '200 ms', '100 ms')"
        ),
    );
    assert_eq!(inserted, "count\n1\n");
    // A new process sees both, with the values given and the ones filled in.
    assert_eq!(
        csv(
            &dir,
            "SELECT id = 'brake-1' AS given_id, length(id) AS id_len, device, recording, \
             start_time, end_time, type, properties['messages'] AS messages, \
             properties['speed'] AS speed, created_at > TIMESTAMP '2024-01-01' AS created \
             FROM events ORDER BY start_time"
        ),
        format!(
            "given_id,id_len,device,recording,start_time,end_time,type,messages,speed,created\n\
             true,7,r7,,2023-11-14T22:13:20.500000000Z,2023-11-14T22:13:21.000000000Z,\
             hard_brake,,3.2,true\n\
             false,36,r7,{ROBOT},2023-11-14T22:13:20.750000000Z,\
             2023-11-14T22:13:22.000000000Z,arm_up,126,,true\n"
        )
    );
    // JSON lines out, into another directory, and out again: the same lines.
    let exported = ok(&["--events", &d, "events", "export"]);
    assert_eq!(exported.lines().count(), 2, "{exported}");
    let first: serde_json::Value = serde_json::from_str(exported.lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], "brake-1");
    assert_eq!(first["deviceName"], "r7");
    assert_eq!(first["start"], "2023-11-14T22:13:20.500Z");
    assert_eq!(first["end"], "2023-11-14T22:13:21Z");
    assert_eq!(first["metadata"]["speed"], "3.2");
    assert_eq!(first["type"], "hard_brake");
    let file = tmp.path().join("events.jsonl");
    ok(&[
        "--events",
        &d,
        "events",
        "export",
        "-o",
        &file.display().to_string(),
    ]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), exported);
    let copy = tmp.path().join("copy").display().to_string();
    ok(&[
        "--events",
        &copy,
        "events",
        "import",
        &file.display().to_string(),
    ]);
    assert_eq!(ok(&["--events", &copy, "events", "export"]), exported);
    // Foxglove's create-an-event bodies: type and recording in metadata.
    let bodies = ok(&["--events", &d, "events", "export", "--foxglove"]);
    let body: serde_json::Value = serde_json::from_str(bodies.lines().nth(1).unwrap()).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "deviceName": "r7",
            "start": "2023-11-14T22:13:20.750Z",
            "end": "2023-11-14T22:13:22Z",
            "metadata": {"messages": "126", "recording": ROBOT, "type": "arm_up"},
        })
    );
    // `events('DIR')` reads any directory of events.
    assert_eq!(
        ok(&[
            "--format",
            "csv",
            &format!("SELECT count(*) AS n FROM events('{copy}')"),
        ]),
        "n\n2\n"
    );
}

#[test]
fn bad_appends_are_refused_whole_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("events").display().to_string();
    let fails = |args: &[&str], says: &str| {
        let out = logsql(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    };
    fails(
        &["events", "list"],
        "logsql events needs a place for them: --events DIR",
    );
    fails(
        &[
            "--events",
            &d,
            "INSERT INTO events (device, start_time) VALUES ('a', TIMESTAMP '2024-01-01'), ('b', NULL)",
        ],
        "row 2 of the append has no start_time",
    );
    fails(
        &[
            "--events",
            &d,
            "INSERT OVERWRITE events SELECT * FROM events",
        ],
        "events are only appended",
    );
    fails(
        &["--events", &d, "events", "add", "--start", "yesterday"],
        "--start: ",
    );
    fails(
        &[
            "--events", &d, "events", "add", "--start", "2s", "--end", "1s",
        ],
        "--end 1s is before --start 2s",
    );
    let file = tmp.path().join("bad.jsonl");
    std::fs::write(
        &file,
        "{\"start\":\"2024-01-01T00:00:00Z\"}\n{\"deviceName\":\"r1\"}\n",
    )
    .unwrap();
    fails(
        &[
            "--events",
            &d,
            "events",
            "import",
            &file.display().to_string(),
        ],
        "bad.jsonl:2: no start",
    );
    // Nothing of a refused append was kept.
    assert_eq!(
        csv(Path::new(&d), "SELECT count(*) AS n FROM events"),
        "n\n0\n"
    );
}

#[test]
fn a_killed_append_loses_no_earlier_event() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("events");
    let d = dir.display().to_string();
    for (i, kind) in ["a", "b", "c"].iter().enumerate() {
        ok(&[
            "--events",
            &d,
            "events",
            "add",
            "--type",
            kind,
            "--start",
            &format!("{}s", 1_700_000_000 + i),
        ]);
    }
    let bulk = "INSERT INTO events (start_time, type) \
                SELECT to_timestamp_nanos(value), 'bulk' FROM generate_series(1, 4000000)";
    for delay_ms in [10, 50, 200, 600] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_logsql"))
            .args(["--events", &d, bulk])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        // The directory still reads, and the earlier events are all there.
        assert_eq!(
            csv(
                &dir,
                "SELECT type, count(*) AS n FROM events WHERE type <> 'bulk' \
                 GROUP BY type ORDER BY type"
            ),
            "type,n\na,1\nb,1\nc,1\n",
            "killed after {delay_ms} ms"
        );
    }
}

#[test]
fn a_catalogs_events_join_its_recordings_and_survive_its_refreshes() {
    let tmp = tempfile::tempdir().unwrap();
    let fleet = tmp.path().join("fleet");
    std::fs::create_dir(&fleet).unwrap();
    let run = fleet.join("robot.mcap");
    std::fs::copy(ROBOT, &run).unwrap();
    let cat = tmp.path().join("cat").display().to_string();
    let run = run.display().to_string();
    // Events first: the catalog directory holds only `events/` ...
    ok(&[
        "--catalog",
        &cat,
        "INSERT INTO events (recording, start_time, end_time, type) \
         VALUES ('elsewhere.mcap', TIMESTAMP '2024-01-01', NULL, 'manual')",
    ]);
    // ... and `logsql index` makes it a catalog around them.
    ok(&["index", &fleet.display().to_string(), "--catalog", &cat]);
    ok(&[
        "--catalog",
        &cat,
        &format!(
            "INSERT INTO events (recording, start_time, end_time, type) \
             SELECT file, start_time, end_time, 'arm_up' \
             FROM intervals('{run}', '/joint_states', 'position[1] > 0.5', '200 ms', '100 ms')"
        ),
    ]);
    ok(&["index", &fleet.display().to_string(), "--catalog", &cat]);
    assert_eq!(
        ok(&[
            "--catalog",
            &cat,
            "--format",
            "csv",
            "SELECT e.type, r.format, r.message_count > 0 AS has_messages, count(*) AS n \
             FROM events e LEFT JOIN recordings r ON e.recording = r.location \
             GROUP BY 1, 2, 3 ORDER BY 1",
        ]),
        "type,format,has_messages,n\narm_up,mcap,true,1\nmanual,,,1\n"
    );
}
