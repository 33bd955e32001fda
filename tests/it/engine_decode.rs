//! `read_topic` through the engine: decoded columns against the official
//! readers' decoded output (MCAP decode fixtures' `expected.json`), time
//! pushdown by the scan metrics, flattening, Parquet export, schemas merged
//! across files, conflicting schemas, and undecodable messages (error or
//! null row with the raw bytes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Float64Type;
use datafusion::prelude::SessionContext;
use serde_json::Value;

use crate::fixtures;
use crate::sql::{analyze, error, ints, metric, query, text};

fn decode_dir() -> Option<PathBuf> {
    fixtures::dir("mcap").map(|d| d.join("decode"))
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

fn expected(dir: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// One float column of a query, in row order.
async fn floats(ctx: &SessionContext, sql: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for b in query(ctx, sql).await {
        let c = datafusion::arrow::compute::cast(
            b.column(0),
            &datafusion::arrow::datatypes::DataType::Float64,
        )
        .unwrap();
        let c = c.as_primitive::<Float64Type>();
        out.extend((0..c.len()).map(|i| c.value(i)));
    }
    out
}

/// One text column of a query, in row order (null as "NULL").
async fn strings(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in query(ctx, sql).await {
        let c = datafusion::arrow::compute::cast(
            b.column(0),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        let c = c.as_string::<i32>();
        out.extend((0..c.len()).map(|i| {
            if c.is_null(i) {
                "NULL".to_string()
            } else {
                c.value(i).to_string()
            }
        }));
    }
    out
}

fn first_messages<'a>(e: &'a Value, topic: &str) -> &'a Vec<Value> {
    e["topics"][topic]["first_messages"].as_array().unwrap()
}

#[tokio::test]
async fn ros1_imu_fields_match_the_official_decoder() {
    let Some(dir) = decode_dir() else { return };
    let ctx = logsql::session_context();
    let f = p(&dir.join("ros1.mcap"));
    let e = expected(&dir, "ros1");
    let from = format!("read_topic('{f}', '/imu')");
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM {from}")).await,
        [200]
    );
    let first = first_messages(&e, "/imu");
    let xs = floats(
        &ctx,
        &format!("SELECT linear_acceleration.x FROM {from} ORDER BY log_time LIMIT 3"),
    )
    .await;
    let want: Vec<f64> = first
        .iter()
        .map(|m| m["data"]["linear_acceleration"]["x"].as_f64().unwrap())
        .collect();
    assert_eq!(xs, want);
    let frames = strings(
        &ctx,
        &format!("SELECT header.frame_id FROM {from} ORDER BY log_time LIMIT 3"),
    )
    .await;
    let want: Vec<String> = first
        .iter()
        .map(|m| {
            m["data"]["header"]["frame_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(frames, want);
    // The header stamp is a timestamp: seconds and nanoseconds of the official decoder.
    let stamps = ints(
        &ctx,
        &format!("SELECT CAST(header.stamp AS BIGINT) FROM {from} ORDER BY log_time LIMIT 3"),
    )
    .await;
    let want: Vec<i64> = first
        .iter()
        .map(|m| {
            let s = &m["data"]["header"]["stamp"];
            s["sec"].as_i64().unwrap() * 1_000_000_000 + s["nsec"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(stamps, want);
    // log_time is the message's log time.
    let times = ints(
        &ctx,
        &format!("SELECT CAST(log_time AS BIGINT) AS t FROM {from} ORDER BY log_time LIMIT 3"),
    )
    .await;
    let want: Vec<i64> = first
        .iter()
        .map(|m| m["log_time"].as_i64().unwrap())
        .collect();
    assert_eq!(times, want);
    // Fixed-size covariance arrays are fixed-size lists of 9.
    let ty = strings(
        &ctx,
        &format!("SELECT arrow_typeof(orientation_covariance) FROM {from} LIMIT 1"),
    )
    .await;
    assert!(ty[0] == "FixedSizeList(9 x Float64)", "{ty:?}");
}

#[tokio::test]
async fn time_window_is_pushed_into_the_chunk_index() {
    let Some(dir) = decode_dir() else { return };
    let ctx = logsql::session_context();
    let f = p(&dir.join("ros1.mcap"));
    // 1 s of the 10 s file.
    let (lo, hi) = ("2023-11-14T22:13:24Z", "2023-11-14T22:13:25Z");
    let want = ints(
        &ctx,
        &format!(
            "SELECT count(*) FROM '{f}' WHERE topic = '/imu' AND log_time >= '{lo}' AND log_time < '{hi}'"
        ),
    )
    .await;
    let sql = format!(
        "SELECT count(*), avg(angular_velocity.z) FROM read_topic('{f}', '/imu') WHERE log_time >= '{lo}' AND log_time < '{hi}'"
    );
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM read_topic('{f}', '/imu') WHERE log_time >= '{lo}' AND log_time < '{hi}'")).await,
        want
    );
    assert!(want[0] > 0 && want[0] < 200, "{want:?}");
    let plan = analyze(&ctx, &sql).await;
    let (read, total) = (metric(&plan, "chunks_read"), metric(&plan, "chunks_total"));
    assert!(read < total, "chunks read {read} of {total}:\n{plan}");
}

#[tokio::test]
async fn flatten_gives_dotted_columns_with_the_same_values() {
    let Some(dir) = decode_dir() else { return };
    let ctx = logsql::session_context();
    let f = p(&dir.join("ros1.mcap"));
    let nested = floats(
        &ctx,
        &format!("SELECT orientation.w FROM read_topic('{f}', '/imu') ORDER BY log_time"),
    )
    .await;
    let flat = floats(
        &ctx,
        &format!(
            "SELECT \"orientation.w\" FROM read_topic('{f}', '/imu', 'flatten') ORDER BY log_time"
        ),
    )
    .await;
    assert_eq!(nested.len(), 200);
    assert_eq!(nested, flat);
    let cols = text(
        &ctx,
        &format!("DESCRIBE SELECT * FROM read_topic('{f}', '/imu', 'flatten')"),
    )
    .await;
    for c in [
        "header.stamp",
        "header.frame_id",
        "linear_acceleration.x",
        "orientation_covariance",
    ] {
        assert!(cols.contains(c), "{c} missing from\n{cols}");
    }
}

#[tokio::test]
async fn copy_to_parquet_keeps_typed_columns() {
    let Some(dir) = decode_dir() else { return };
    let ctx = logsql::session_context();
    let f = p(&dir.join("ros1.mcap"));
    let out = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    let pq = out.path().join("imu.parquet");
    query(
        &ctx,
        &format!(
            "COPY (SELECT * FROM read_topic('{f}', '/imu')) TO '{}' STORED AS PARQUET",
            pq.display()
        ),
    )
    .await;
    let from_pq = floats(
        &ctx,
        &format!(
            "SELECT linear_acceleration.y FROM '{}' ORDER BY log_time",
            pq.display()
        ),
    )
    .await;
    let direct = floats(
        &ctx,
        &format!("SELECT linear_acceleration.y FROM read_topic('{f}', '/imu') ORDER BY log_time"),
    )
    .await;
    assert_eq!(from_pq.len(), 200);
    assert_eq!(from_pq, direct);
}

#[tokio::test]
async fn every_encoding_decodes_through_sql() {
    let Some(dir) = decode_dir() else { return };
    let ctx = logsql::session_context();
    // (file, topic, count, a column and the expected value of the first message)
    let cases: &[(&str, &str, i64, &str, &[&str])] = &[
        (
            "ros2.mcap",
            "/imu",
            200,
            "header.frame_id",
            &["data", "header", "frame_id"],
        ),
        (
            "protobuf.mcap",
            "/fixture/all_types",
            100,
            "frame_id",
            &["data", "frame_id"],
        ),
        (
            "protobuf.mcap",
            "/fixture/pose",
            200,
            "frame_id",
            &["data", "frame_id"],
        ),
        ("json.mcap", "/state", 200, "NULL", &[]),
        ("json.mcap", "/events", 40, "NULL", &[]),
        (
            "lz4_mixed.mcap",
            "/mixed/imu",
            200,
            "header.frame_id",
            &["data", "header", "frame_id"],
        ),
        ("lz4_mixed.mcap", "/mixed/tf", 100, "NULL", &[]),
        (
            "lz4_mixed.mcap",
            "/mixed/pose",
            200,
            "frame_id",
            &["data", "frame_id"],
        ),
    ];
    for (file, topic, count, column, path) in cases {
        let f = p(&dir.join(file));
        let from = format!("read_topic('{f}', '{topic}')");
        assert_eq!(
            ints(&ctx, &format!("SELECT count(*) FROM {from}")).await,
            [*count],
            "{file} {topic}"
        );
        if path.is_empty() {
            continue;
        }
        let e = expected(&dir, file.trim_end_matches(".mcap"));
        let mut want = &first_messages(&e, topic)[0];
        for k in *path {
            want = &want[*k];
        }
        let got = strings(
            &ctx,
            &format!("SELECT {column} FROM {from} ORDER BY log_time LIMIT 1"),
        )
        .await;
        assert_eq!(got, [want.as_str().unwrap()], "{file} {topic} {column}");
    }
}

#[tokio::test]
async fn a_topic_across_files_and_formats_is_one_table() {
    let Some(dir) = decode_dir() else { return };
    let Some(bag) = fixtures::file("rosbag", "webviz-only-a-cube.bag") else {
        return;
    };
    let tmp = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    std::fs::copy(dir.join("ros1.mcap"), tmp.path().join("a.mcap")).unwrap();
    std::fs::copy(&bag, tmp.path().join("b.bag")).unwrap();
    let ctx = logsql::session_context();
    let d = p(tmp.path());
    let per_file = crate::sql::pairs(
        &ctx,
        &format!(
            "SELECT file, count(*) FROM read_topic('{d}/', '/tf') GROUP BY file ORDER BY file"
        ),
    )
    .await;
    let per_file: BTreeMap<String, i64> = per_file
        .into_iter()
        .map(|(f, n)| {
            (
                Path::new(&f)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                n,
            )
        })
        .collect();
    assert_eq!(
        per_file,
        BTreeMap::from([("a.mcap".into(), 100), ("b.bag".into(), 1)])
    );
    let frames = strings(
        &ctx,
        &format!(
            "SELECT DISTINCT t['header']['frame_id'] FROM (SELECT unnest(transforms) AS t FROM read_topic('{d}/', '/tf')) ORDER BY 1"
        ),
    )
    .await;
    assert!(!frames.is_empty());
}

#[tokio::test]
async fn real_bag_imu_decodes() {
    let Some(bag) = fixtures::file("rosbag", "robot_localization-test1.bag") else {
        return;
    };
    let ctx = logsql::session_context();
    let f = p(&bag);
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT count(*) FROM read_topic('{f}', '/imu/data')")
        )
        .await,
        [11865]
    );
    // The first message, as the python `rosbags` reader decodes it
    // (rosbags-summary.json, first_message_per_connection).
    let mut first = Vec::new();
    for column in [
        "orientation.w",
        "linear_acceleration.y",
        "CAST(header.seq AS DOUBLE)",
        "CAST(CAST(header.stamp AS BIGINT) AS DOUBLE)",
    ] {
        first.extend(
            floats(
                &ctx,
                &format!(
                    "SELECT {column} FROM read_topic('{f}', '/imu/data') ORDER BY log_time LIMIT 1"
                ),
            )
            .await,
        );
    }
    assert_eq!(
        first,
        [
            0.45001884929497193,
            9.608219431498647,
            2127.0,
            1432235497988949113.0
        ]
    );
    // Gravity: the mean acceleration vector of a robot on the ground is ~9.8 m/s².
    let g = floats(
        &ctx,
        &format!(
            "SELECT sqrt(power(avg(linear_acceleration.x), 2) + power(avg(linear_acceleration.y), 2) \
             + power(avg(linear_acceleration.z), 2)) FROM read_topic('{f}', '/imu/data')"
        ),
    )
    .await;
    assert!((g[0] - 9.8).abs() < 0.3, "{g:?}");
}

#[tokio::test]
async fn unknown_topics_and_bad_arguments_are_clear_errors() {
    let Some(dir) = decode_dir() else { return };
    let ctx = logsql::session_context();
    let f = p(&dir.join("ros1.mcap"));
    let e = error(&ctx, &format!("SELECT * FROM read_topic('{f}', '/nope')")).await;
    assert!(
        e.contains("no file there has topic \"/nope\"") && e.contains("/imu"),
        "{e}"
    );
    let e = error(&ctx, &format!("SELECT * FROM read_topic('{f}')")).await;
    assert!(e.contains("read_topic() takes a path"), "{e}");
    // CARLA packets point to the typed tables.
    if let Some(carla) = fixtures::file("carla", "synth_0916_basic.log") {
        let e = error(
            &ctx,
            &format!("SELECT * FROM read_topic('{}', 'position')", p(&carla)),
        )
        .await;
        assert!(
            e.contains("typed tables instead") && e.contains("positions('file')"),
            "{e}"
        );
    }
}

/// An MCAP file with one ros1msg topic whose second message is truncated.
fn file_with_a_bad_message(dir: &Path, name: &str, schema: &str, payloads: &[&[u8]]) -> PathBuf {
    let path = dir.join(name);
    let mut w = mcap::Writer::new(std::io::BufWriter::new(
        std::fs::File::create(&path).unwrap(),
    ))
    .unwrap();
    let s = w
        .add_schema("test_msgs/Thing", "ros1msg", schema.as_bytes())
        .unwrap();
    let c = w
        .add_channel(s, "/thing", "ros1", &BTreeMap::new())
        .unwrap();
    for (i, data) in payloads.iter().enumerate() {
        let t = 1_700_000_000_000_000_000 + i as u64 * 1_000_000;
        w.write_to_known_channel(
            &mcap::records::MessageHeader {
                channel_id: c,
                sequence: i as u32,
                log_time: t,
                publish_time: t,
            },
            data,
        )
        .unwrap();
    }
    w.finish().unwrap();
    path
}

#[tokio::test]
async fn undecodable_messages_fail_or_become_null_rows() {
    let tmp = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    let good: &[u8] = &[5, 0, 0, 0, b'h', b'e', b'l', b'l', b'o', 7, 0, 0, 0];
    let bad: &[u8] = &[9, 0, 0, 0, b'h', b'i'];
    let path = file_with_a_bad_message(
        tmp.path(),
        "bad.mcap",
        "string name\nint32 value\n",
        &[good, bad, good],
    );
    let f = p(&path);
    let ctx = logsql::session_context();
    let e = error(&ctx, &format!("SELECT * FROM read_topic('{f}', '/thing')")).await;
    assert!(
        e.contains("does not decode") && e.contains("/thing") && e.contains("1700000000001000000"),
        "{e}"
    );
    query(&ctx, "SET logsql.decode_errors = 'null'").await;
    let names = strings(
        &ctx,
        &format!("SELECT name FROM read_topic('{f}', '/thing') ORDER BY log_time"),
    )
    .await;
    assert_eq!(names, ["hello", "NULL", "hello"]);
    let raw = strings(
        &ctx,
        &format!(
            "SELECT encode(_raw, 'hex') FROM read_topic('{f}', '/thing') WHERE _error IS NOT NULL"
        ),
    )
    .await;
    assert_eq!(raw, ["090000006869"]);
    let values = ints(
        &ctx,
        &format!(
            "SELECT CAST(value AS BIGINT) FROM read_topic('{f}', '/thing') WHERE _error IS NULL"
        ),
    )
    .await;
    assert_eq!(values, [7, 7]);
}

#[tokio::test]
async fn conflicting_schemas_name_both_definitions() {
    let tmp = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    file_with_a_bad_message(
        tmp.path(),
        "a.mcap",
        "string name\n",
        &[&[1, 0, 0, 0, b'x']],
    );
    file_with_a_bad_message(tmp.path(), "b.mcap", "int32[] name\n", &[&[0, 0, 0, 0]]);
    // Compatible change: a field added, an integer widened.
    let ctx = logsql::session_context();
    let d = p(tmp.path());
    let e = error(&ctx, &format!("SELECT * FROM read_topic('{d}/', '/thing')")).await;
    assert!(
        e.contains("cannot be merged") && e.contains("a.mcap") && e.contains("b.mcap"),
        "{e}"
    );
    let tmp2 = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    file_with_a_bad_message(tmp2.path(), "a.mcap", "int16 v\n", &[&[3, 0]]);
    file_with_a_bad_message(
        tmp2.path(),
        "b.mcap",
        "int32 v\nstring s\n",
        &[&[4, 0, 0, 0, 1, 0, 0, 0, b'z']],
    );
    let d = p(tmp2.path());
    let rows = strings(
        &ctx,
        &format!("SELECT concat(CAST(v AS VARCHAR), '/', coalesce(s, '-')) FROM read_topic('{d}/', '/thing') ORDER BY v"),
    )
    .await;
    assert_eq!(rows, ["3/-", "4/z"]);
}

#[tokio::test]
async fn apollo_channels_decode_from_their_proto_desc() {
    let Some(dir) = fixtures::dir("apollo") else {
        return;
    };
    let ctx = logsql::session_context();
    let g = |n: &str| p(&dir.join("generated").join(n));
    const POSE: &str = "/apollo/localization/pose";
    // Real descriptors (ProtoDesc trees): every pose message, with a header
    // stamped by the publisher 0.4-6.6 ms before the recorder logged it.
    let row = strings(
        &ctx,
        &format!(
            "SELECT concat(CAST(count(*) AS VARCHAR), ' ', min(header.module_name), ' ', \
             CAST(min(CAST(log_time AS BIGINT) - CAST(header.timestamp_sec * 1e9 AS BIGINT)) > 0 AS VARCHAR), ' ', \
             CAST(max(CAST(log_time AS BIGINT) - CAST(header.timestamp_sec * 1e9 AS BIGINT)) < 10000000 AS VARCHAR)) \
             FROM read_topic('{}', '{POSE}')",
            g("small.record")
        ),
    )
    .await;
    assert_eq!(row, ["600 localization true true"]);
    // The pre-2019 index convention reads the same values.
    let avg = |f: String| {
        let ctx = &ctx;
        async move {
            floats(
                ctx,
                &format!("SELECT avg(pose.position.x) FROM read_topic('{f}', '{POSE}')"),
            )
            .await
        }
    };
    assert_eq!(
        avg(g("small.record")).await,
        avg(g("legacy_index_positions.record")).await
    );
    // A split recording is one table.
    assert_eq!(
        ints(
            &ctx,
            &format!(
                "SELECT count(*) FROM read_topic('{}', '{POSE}')",
                g("segmented.record.*")
            )
        )
        .await,
        [800]
    );
    // A bare FileDescriptorProto without its imports: fields of missing types
    // stay raw bytes, the rest decodes.
    assert_eq!(
        strings(
            &ctx,
            &format!(
                "SELECT DISTINCT arrow_typeof(pose) FROM read_topic('{}', '{POSE}')",
                g("python_filedesc.record")
            )
        )
        .await,
        ["Binary"]
    );
    // The real file: chassis messages from SimControl.
    let real = p(&dir.join("real/example.record.00000"));
    assert_eq!(
        strings(
            &ctx,
            &format!(
                "SELECT concat(CAST(count(*) AS VARCHAR), ' ', min(header.module_name)) FROM read_topic('{real}', '/apollo/canbus/chassis')"
            )
        )
        .await,
        ["15 SimControl"]
    );
    // A garbage proto_desc is a clear error that says how to supply a schema.
    let e = error(
        &ctx,
        &format!(
            "SELECT * FROM read_topic('{}', 'chatter')",
            p(&dir.join("real/mytest.record"))
        ),
    )
    .await;
    assert!(
        e.contains("no usable proto_desc") && e.contains("logsql.descriptor_set"),
        "{e}"
    );
}

#[tokio::test]
async fn bddf_protobuf_series_decode_with_a_user_descriptor_set() {
    let Some(dir) = fixtures::dir("bddf") else {
        return;
    };
    let ctx = logsql::session_context();
    let f = p(&dir.join("basic.bddf"));
    let e = error(
        &ctx,
        &format!("SELECT * FROM read_topic('{f}', 'bosdyn.api.RobotId')"),
    )
    .await;
    assert!(e.contains("cannot decode"), "{e}");
    query(
        &ctx,
        &format!(
            "SET logsql.descriptor_set = '{}'",
            p(&dir.join("bosdyn_api_descriptors.binpb"))
        ),
    )
    .await;
    // Values the official writer stored (expected.json: annotations and series times).
    assert_eq!(
        strings(
            &ctx,
            &format!(
                "SELECT concat(nickname, ' ', serial_number) FROM read_topic('{f}', 'bosdyn.api.RobotId')"
            )
        )
        .await,
        ["spot-test-1 BD-10000001"]
    );
    assert_eq!(
        ints(
            &ctx,
            &format!(
                "SELECT count(*) FROM read_topic('{f}', 'bosdyn.api.RobotState') WHERE battery_states IS NOT NULL"
            )
        )
        .await,
        [500]
    );
    assert_eq!(
        ints(
            &ctx,
            &format!(
                "SELECT min(CAST(kinematic_state.acquisition_timestamp AS BIGINT)) FROM read_topic('{f}', 'bosdyn.api.RobotState')"
            )
        )
        .await,
        [1_700_000_000_000_000_000]
    );
}
