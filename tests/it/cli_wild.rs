//! Cases met on public recordings, each on a crafted file and through the
//! `logsql` binary with default settings, in table and JSON output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run logsql")
}

/// Runs logsql and asserts success, returning stdout.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "logsql {args:?} failed ({:?}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Runs `sql` in table output and in JSON output: (table text, parsed JSON).
fn table_and_json(sql: &str) -> (String, Value) {
    let table = ok(&[sql]);
    let text = ok(&["--format", "json", sql]);
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (table, v)
}

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("logsql-wild-")
        .tempdir()
        .unwrap()
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// One MCAP channel: topic, schema name, schema encoding, schema text,
/// message encoding and payloads (one message each, 1 ms apart).
struct Channel<'a> {
    topic: &'a str,
    schema_name: &'a str,
    schema_encoding: &'a str,
    schema: &'a [u8],
    message_encoding: &'a str,
    payloads: Vec<Vec<u8>>,
}

/// Writes an MCAP file with `channels`.
fn mcap_file(path: &Path, channels: &[Channel]) -> PathBuf {
    let mut w = mcap::Writer::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    for c in channels {
        let s = w
            .add_schema(c.schema_name, c.schema_encoding, c.schema)
            .unwrap();
        let id = w
            .add_channel(s, c.topic, c.message_encoding, &BTreeMap::new())
            .unwrap();
        for (i, data) in c.payloads.iter().enumerate() {
            let t = 1_700_000_000_000_000_000 + i as u64 * 1_000_000;
            w.write_to_known_channel(
                &mcap::records::MessageHeader {
                    channel_id: id,
                    sequence: i as u32,
                    log_time: t,
                    publish_time: t,
                },
                data,
            )
            .unwrap();
        }
    }
    w.finish().unwrap();
    path.to_path_buf()
}

/// A ROS1 payload: float64 `x`, then float64[] `v`.
fn ros1_floats(x: f64, v: &[f64]) -> Vec<u8> {
    let mut out = x.to_le_bytes().to_vec();
    out.extend((v.len() as u32).to_le_bytes());
    for f in v {
        out.extend(f.to_le_bytes());
    }
    out
}

#[test]
fn json_output_writes_nan_and_infinity_as_tokens_not_null() {
    let dir = tmp();
    let f = mcap_file(
        &dir.path().join("floats.mcap"),
        &[Channel {
            topic: "/odom",
            schema_name: "test_msgs/Floats",
            schema_encoding: "ros1msg",
            schema: b"float64 x\nfloat64[] v\n",
            message_encoding: "ros1",
            payloads: vec![
                ros1_floats(f64::NAN, &[f64::INFINITY, 1.5]),
                ros1_floats(f64::NEG_INFINITY, &[]),
                ros1_floats(0.25, &[f64::NAN]),
            ],
        }],
    );
    let sql = format!(
        "SELECT x, v, CAST(NULL AS DOUBLE) AS n, CAST(x AS REAL) AS r \
         FROM read_topic('{}', '/odom') ORDER BY log_time",
        p(&f)
    );
    let table = ok(&[&sql]);
    assert!(table.contains("| NaN  | [inf, 1.5] |"), "{table}");
    assert!(table.contains("| -inf | []         |"), "{table}");

    // The exact text: bare tokens, never null (null stays SQL NULL).
    let text = ok(&["--format", "json", &sql]);
    assert_eq!(
        text,
        "[{\"x\":NaN,\"v\":[Infinity,1.5],\"n\":null,\"r\":NaN},\
         {\"x\":-Infinity,\"v\":[],\"n\":null,\"r\":-Infinity},\
         {\"x\":0.25,\"v\":[NaN],\"n\":null,\"r\":0.25}]\n"
    );
    let text = ok(&["--format", "ndjson", &sql]);
    assert_eq!(
        text,
        "{\"x\":NaN,\"v\":[Infinity,1.5],\"n\":null,\"r\":NaN}\n\
         {\"x\":-Infinity,\"v\":[],\"n\":null,\"r\":-Infinity}\n\
         {\"x\":0.25,\"v\":[NaN],\"n\":null,\"r\":0.25}\n"
    );
}
