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

/// One MCAP channel: topic, schema name, schema encoding (empty: no schema), schema text,
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
        // No schema encoding: schema id 0 (no schema).
        let s = if c.schema_encoding.is_empty() {
            0
        } else {
            w.add_schema(c.schema_name, c.schema_encoding, c.schema)
                .unwrap()
        };
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

/// The keys of every object of a JSON array, in order.
fn keys(v: &Value) -> Vec<Vec<String>> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|row| row.as_object().unwrap().keys().cloned().collect())
        .collect()
}

/// A rosbag2 SQLite database: `ddl` creates the tables, then `topics` rows
/// (id, name, type, serialization format, or `None` in a layout without that
/// column), definitions (type, encoding, text; only with a
/// `message_definitions` table) and messages (topic id, time, payload).
fn db3(
    path: &Path,
    ddl: &str,
    topics: &[(i64, &str, &str, Option<&str>)],
    definitions: &[(&str, &str, &str)],
    messages: &[(i64, i64, Vec<u8>)],
) -> PathBuf {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(ddl).unwrap();
    for (id, name, ty, format) in topics {
        match format {
            Some(f) => conn
                .execute(
                    "INSERT INTO topics(id, name, type, serialization_format, offered_qos_profiles) \
                     VALUES (?1, ?2, ?3, ?4, '')",
                    rusqlite::params![id, name, ty, f],
                )
                .unwrap(),
            None => conn
                .execute(
                    "INSERT INTO topics(id, name, type) VALUES (?1, ?2, ?3)",
                    rusqlite::params![id, name, ty],
                )
                .unwrap(),
        };
    }
    for (ty, enc, text) in definitions {
        conn.execute(
            "INSERT INTO message_definitions(topic_type, encoding, encoded_message_definition, \
             type_description_hash) VALUES (?1, ?2, ?3, '')",
            rusqlite::params![ty, enc, text],
        )
        .unwrap();
    }
    for (i, (topic, t, data)) in messages.iter().enumerate() {
        conn.execute(
            "INSERT INTO messages(id, topic_id, timestamp, data) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![i as i64 + 1, topic, t, data],
        )
        .unwrap();
    }
    path.to_path_buf()
}

/// rosbag2's Humble layout: no `message_definitions`.
const HUMBLE_DDL: &str = "CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
     INSERT INTO schema VALUES (3, 'humble');
     CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL, metadata TEXT NOT NULL);
     CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                         serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
     CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
                           timestamp INTEGER NOT NULL, data BLOB NOT NULL);
     CREATE INDEX timestamp_idx ON messages (timestamp ASC);";

/// rosbag2's layout from Iron on: definitions stored.
const IRON_DDL: &str = "CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
     INSERT INTO schema VALUES (4, 'jazzy');
     CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL, metadata TEXT NOT NULL);
     CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                         serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL,
                         type_description_hash TEXT NOT NULL DEFAULT '');
     CREATE TABLE message_definitions(id INTEGER PRIMARY KEY, topic_type TEXT NOT NULL,
                                      encoding TEXT NOT NULL, encoded_message_definition TEXT NOT NULL,
                                      type_description_hash TEXT NOT NULL);
     CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
                           timestamp INTEGER NOT NULL, data BLOB NOT NULL);
     CREATE INDEX timestamp_idx ON messages (timestamp ASC);";

/// The first rosbag2 layout, as its public test bag has it: `topics` without
/// `serialization_format`, no index, no other table.
const FIRST_DDL: &str = "CREATE TABLE topics(id INTEGER PRIMARY KEY,name TEXT NOT NULL,type TEXT NOT NULL);
     CREATE TABLE messages(id INTEGER PRIMARY KEY,topic_id INTEGER NOT NULL,timestamp INTEGER NOT NULL, data BLOB NOT NULL);";

/// A CDR (little-endian) payload of a message without fields: rosidl gives
/// it one `uint8` member.
const CDR_EMPTY: [u8; 5] = [0, 1, 0, 0, 0];

/// A CDR (little-endian) `std_msgs/msg/String`.
fn cdr_string(s: &str) -> Vec<u8> {
    let mut out = vec![0, 1, 0, 0];
    out.extend((s.len() as u32 + 1).to_le_bytes());
    out.extend(s.as_bytes());
    out.push(0);
    out
}

const T0: i64 = 1_700_000_000_000_000_000;

#[test]
fn a_topic_without_messages_reads_as_an_empty_table_with_its_columns() {
    let dir = tmp();
    let mcap = mcap_file(
        &dir.path().join("quiet.mcap"),
        &[
            Channel {
                topic: "/quiet",
                schema_name: "test_msgs/Floats",
                schema_encoding: "ros1msg",
                schema: b"float64 x\nfloat64[] v\n",
                message_encoding: "ros1",
                payloads: vec![],
            },
            // JSON without a schema: nothing to infer fields from.
            Channel {
                topic: "/quiet_json",
                schema_name: "",
                schema_encoding: "",
                schema: b"",
                message_encoding: "json",
                payloads: vec![],
            },
            Channel {
                topic: "/busy",
                schema_name: "test_msgs/Floats",
                schema_encoding: "ros1msg",
                schema: b"float64 x\nfloat64[] v\n",
                message_encoding: "ros1",
                payloads: vec![ros1_floats(1.0, &[])],
            },
        ],
    );
    let sqlite = db3(
        &dir.path().join("quiet.db3"),
        HUMBLE_DDL,
        &[
            (1, "/quiet", "std_msgs/msg/String", Some("cdr")),
            (2, "/busy", "std_msgs/msg/String", Some("cdr")),
        ],
        &[],
        &[(2, T0, cdr_string("hi"))],
    );
    for (f, fields) in [(&mcap, "| x | v |"), (&sqlite, "| data |")] {
        let sql = format!("SELECT * FROM read_topic('{}', '/quiet')", p(f));
        let (table, v) = table_and_json(&sql);
        assert_eq!(v, json!([]), "{}", p(f));
        assert!(
            table.contains(&format!("| log_time | publish_time {fields} file |")),
            "{table}"
        );
        let (table, _) = table_and_json(&format!(
            "SELECT count(*) AS n FROM read_topic('{}', '/quiet')",
            p(f)
        ));
        assert!(table.contains("| 0 |"), "{table}");
    }
    let sql = format!("SELECT * FROM read_topic('{}', '/quiet_json')", p(&mcap));
    let (table, v) = table_and_json(&sql);
    assert_eq!(v, json!([]));
    // Any JSON: one text column `value`, as for a schema `{"type": "object"}`.
    assert!(
        table.contains("| log_time | publish_time | value | file |"),
        "{table}"
    );
}

#[test]
fn messages_without_fields_give_one_row_each() {
    let dir = tmp();
    let mcap = mcap_file(
        &dir.path().join("empty.mcap"),
        &[
            Channel {
                topic: "/ros2_empty",
                schema_name: "std_msgs/msg/Empty",
                schema_encoding: "ros2msg",
                schema: b"",
                message_encoding: "cdr",
                payloads: vec![CDR_EMPTY.to_vec(); 3],
            },
            Channel {
                topic: "/ros1_empty",
                schema_name: "std_msgs/Empty",
                schema_encoding: "ros1msg",
                schema: b"",
                message_encoding: "ros1",
                payloads: vec![vec![]; 2],
            },
            Channel {
                topic: "/custom_empty",
                schema_name: "my_msgs/msg/Trigger",
                schema_encoding: "ros2msg",
                schema: b"# nothing but a comment\n",
                message_encoding: "cdr",
                payloads: vec![CDR_EMPTY.to_vec()],
            },
        ],
    );
    // Humble: no stored definitions (the bundled, empty, Empty.msg serves);
    // Iron: an empty stored definition of a type logsql does not carry.
    let humble = db3(
        &dir.path().join("humble.db3"),
        HUMBLE_DDL,
        &[(1, "/ros2_empty", "std_msgs/msg/Empty", Some("cdr"))],
        &[],
        &[(1, T0, CDR_EMPTY.to_vec()), (1, T0 + 1, CDR_EMPTY.to_vec())],
    );
    let iron = db3(
        &dir.path().join("iron.db3"),
        IRON_DDL,
        &[(1, "/custom_empty", "my_msgs/msg/Trigger", Some("cdr"))],
        &[("my_msgs/msg/Trigger", "ros2msg", "")],
        &[(1, T0, CDR_EMPTY.to_vec())],
    );
    for (f, topic, n) in [
        (&mcap, "/ros2_empty", 3),
        (&mcap, "/ros1_empty", 2),
        (&mcap, "/custom_empty", 1),
        (&humble, "/ros2_empty", 2),
        (&iron, "/custom_empty", 1),
    ] {
        let sql = format!("SELECT * FROM read_topic('{}', '{topic}')", p(f));
        let (table, v) = table_and_json(&sql);
        assert!(
            table.contains("| log_time ")
                && table.contains("| publish_time ")
                && table.contains("| file "),
            "{table}"
        );
        // (serde_json orders an object's keys by name)
        assert_eq!(
            keys(&v),
            vec![vec!["file", "log_time", "publish_time"]; n],
            "{} {topic}: {v}",
            p(f)
        );
    }
}

#[test]
fn the_first_rosbag2_layout_reads_as_cdr() {
    let dir = tmp();
    let f = db3(
        &dir.path().join("first.db3"),
        FIRST_DDL,
        &[(1, "/chatter", "std_msgs/String", None)],
        &[],
        &[
            (1, T0, cdr_string("hello")),
            (1, T0 + 5, cdr_string("world")),
        ],
    );
    let (table, v) = table_and_json(&format!(
        "SELECT topic, message_encoding, count(*) AS n FROM '{}' GROUP BY ALL",
        p(&f)
    ));
    assert!(
        table.contains("| /chatter | cdr              | 2 |"),
        "{table}"
    );
    assert_eq!(
        v,
        json!([{"topic": "/chatter", "message_encoding": "cdr", "n": 2}])
    );
    let (table, v) = table_and_json(&format!(
        "SELECT data FROM read_topic('{}', '/chatter') ORDER BY log_time",
        p(&f)
    ));
    assert!(
        table.contains("| hello |") && table.contains("| world |"),
        "{table}"
    );
    assert_eq!(v, json!([{"data": "hello"}, {"data": "world"}]));

    // A complete bag without a time index is not "rebuilt by a recovery walk".
    let info = ok(&["info", &p(&f)]);
    assert!(
        info.lines().any(|l| l.starts_with("index:")
            && l.ends_with(" none: the database has no index on messages.timestamp; summary read from its tables")),
        "{info}"
    );
    assert!(!info.contains("recovery walk"), "{info}");
    let v: Value = serde_json::from_str(&ok(&["info", "--format", "json", &p(&f)])).unwrap();
    assert_eq!(
        v[0]["index"],
        "none: the database has no index on messages.timestamp; summary read from its tables"
    );
}

#[test]
fn the_public_first_layout_bag_reads_message_for_message() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/public/rosbag2-first-layout");
    let sql = format!(
        "SELECT topic, message_type, message_encoding, count(*) AS n, \
         CAST(min(log_time) AS BIGINT) AS first FROM '{}' GROUP BY ALL ORDER BY topic",
        p(&dir)
    );
    let (table, v) = table_and_json(&sql);
    assert!(
        table.contains("| /array_topic | test_msgs/StaticArrayPrimitives | cdr"),
        "{table}"
    );
    assert_eq!(
        v,
        json!([
            {"topic": "/array_topic", "message_type": "test_msgs/StaticArrayPrimitives",
             "message_encoding": "cdr", "n": 4, "first": 1537282604241440135_i64},
            {"topic": "/test_topic", "message_type": "test_msgs/Primitives",
             "message_encoding": "cdr", "n": 3, "first": 1537282604242366735_i64},
        ])
    );
    // The file alone reads the same.
    let (_, v2) = table_and_json(&sql.replace(&p(&dir), &p(&dir.join("test.db3"))));
    assert_eq!(v, v2);
    let info = ok(&["info", &p(&dir.join("test.db3"))]);
    assert!(
        !info.contains("recovery walk") && !info.contains("corrupt"),
        "{info}"
    );
}

#[test]
fn info_counts_zero_for_the_topics_of_an_unclosed_record_without_chunks() {
    let Some(src) = crate::fixtures::file("apollo", "generated/crash_incomplete.record") else {
        return;
    };
    // The header and the channel sections: what the recorder had flushed
    // before its first chunk.
    let bytes = std::fs::read(&src).unwrap();
    let mut at = 16 + 2048;
    while at + 16 <= bytes.len() {
        let kind = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let size = i64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        if kind != 4 {
            break;
        }
        at += 16 + size;
    }
    let dir = tmp();
    let f = dir.path().join("channels_only.record");
    std::fs::write(&f, &bytes[..at]).unwrap();
    let info = ok(&["info", &p(&f)]);
    let rows: Vec<&str> = info.lines().filter(|l| l.contains("/apollo/")).collect();
    assert_eq!(rows.len(), 2, "{info}");
    for row in rows {
        assert!(row.contains(" 0 ") && !row.contains('?'), "{info}");
    }
    let v: Value = serde_json::from_str(&ok(&["info", "--format", "json", &p(&f)])).unwrap();
    assert_eq!(v[0]["messages"], 0, "{v}");
    let topics = v[0]["topics"].as_array().unwrap();
    assert_eq!(topics.len(), 2, "{v}");
    assert!(topics.iter().all(|t| t["messages"] == 0), "{v}");
}

#[test]
fn message_fields_named_like_logsql_columns_become_data_dot_names_in_every_format() {
    let dir = tmp();
    // ROS1 in MCAP: string file, int32 log_time, int32 x.
    let mut ros1 = Vec::new();
    ros1.extend(3u32.to_le_bytes());
    ros1.extend(b"a.b");
    ros1.extend(7i32.to_le_bytes());
    ros1.extend(1i32.to_le_bytes());
    let mcap = mcap_file(
        &dir.path().join("clash.mcap"),
        &[Channel {
            topic: "/clash",
            schema_name: "my_msgs/Clash",
            schema_encoding: "ros1msg",
            schema: b"string file\nint32 log_time\nint32 x\n",
            message_encoding: "ros1",
            payloads: vec![ros1],
        }],
    );
    // CDR in a .db3 with its definition stored.
    let mut cdr = vec![0, 1, 0, 0];
    cdr.extend(4u32.to_le_bytes());
    cdr.extend(b"a.b\0");
    cdr.extend(7i32.to_le_bytes());
    cdr.extend(1i32.to_le_bytes());
    let sqlite = db3(
        &dir.path().join("clash.db3"),
        IRON_DDL,
        &[(1, "/clash", "my_msgs/msg/Clash", Some("cdr"))],
        &[(
            "my_msgs/msg/Clash",
            "ros2msg",
            "string file\nint32 log_time\nint32 x\n",
        )],
        &[(1, T0, cdr)],
    );
    for f in [&mcap, &sqlite] {
        let sql = format!("SELECT * FROM read_topic('{}', '/clash')", p(f));
        let out = run(&[&sql]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let table = String::from_utf8(out.stdout).unwrap();
        let header: Vec<&str> = table
            .lines()
            .nth(1)
            .unwrap()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(
            header,
            [
                "",
                "log_time",
                "publish_time",
                "data.file",
                "data.log_time",
                "x",
                "file",
                ""
            ],
            "{table}"
        );
        // Not silent: a warning names each renamed field.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("message field 'file' is column \"data.file\", message field 'log_time' is column \"data.log_time\""),
            "{err}"
        );
        let text = ok(&["--format", "json", &sql]);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v[0]["data.file"], "a.b", "{text}");
        assert_eq!(v[0]["data.log_time"], 7, "{text}");
        assert_eq!(v[0]["file"], p(f), "{text}");
    }
}

#[test]
fn json_schema_fields_of_one_of_constants_take_the_constants_type() {
    let dir = tmp();
    // As depthai writes them: an enum as `oneOf` of titled constants.
    let schema = br#"{"type": "object", "properties": {
        "type": {"oneOf": [{"const": 1, "title": "RGB"}, {"const": 2, "title": "MONO"}]},
        "scale": {"anyOf": [{"const": 1}, {"const": 2.5}, {"type": "null"}]},
        "mode": {"oneOf": [{"const": "fast"}, {"const": "slow"}]},
        "mixed": {"oneOf": [{"const": 1}, {"const": "x"}]}
    }}"#;
    let f = mcap_file(
        &dir.path().join("consts.mcap"),
        &[Channel {
            topic: "/frames",
            schema_name: "dai.ImgFrame",
            schema_encoding: "jsonschema",
            schema,
            message_encoding: "json",
            payloads: vec![
                br#"{"type": 1, "scale": 2.5, "mode": "fast", "mixed": 1}"#.to_vec(),
                br#"{"type": 2, "scale": 1, "mode": "slow", "mixed": "x"}"#.to_vec(),
            ],
        }],
    );
    let sql = format!(
        "SELECT type, scale, mode, mixed, arrow_typeof(type) AS t, arrow_typeof(scale) AS s \
         FROM read_topic('{}', '/frames') ORDER BY log_time",
        p(&f)
    );
    let (table, v) = table_and_json(&sql);
    assert!(
        table.contains("| 1    | 2.5   | fast | 1     | Int64 | Float64 |"),
        "{table}"
    );
    assert_eq!(
        v,
        json!([
            {"type": 1, "scale": 2.5, "mode": "fast", "mixed": "1", "t": "Int64", "s": "Float64"},
            {"type": 2, "scale": 1.0, "mode": "slow", "mixed": "\"x\"", "t": "Int64", "s": "Float64"},
        ])
    );
}

/// A directory with a readable MCAP file (3 messages on `/odom`), one named
/// like a log file whose bytes follow no format, one cut in its bag header,
/// and a text file that is no log file.
fn directory_with_damaged_files() -> tempfile::TempDir {
    let dir = tmp();
    mcap_file(
        &dir.path().join("a.mcap"),
        &[Channel {
            topic: "/odom",
            schema_name: "test_msgs/Floats",
            schema_encoding: "ros1msg",
            schema: b"float64 x\nfloat64[] v\n",
            message_encoding: "ros1",
            payloads: (0..3).map(|i| ros1_floats(f64::from(i), &[])).collect(),
        }],
    );
    std::fs::write(
        dir.path().join("b.mcap"),
        b"these bytes follow no log format",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        b"not a log file, and not named so",
    )
    .unwrap();
    dir
}

#[test]
fn a_damaged_file_in_a_directory_or_glob_is_reported_by_the_error_policy() {
    let dir = directory_with_damaged_files();
    let d = format!("{}/", p(dir.path()));
    let damage = "b.mcap: not a recognised log file";
    for from in [format!("'{d}'"), format!("'{d}*.mcap'")] {
        for sql in [
            format!("SELECT count(*) AS n FROM {from}"),
            format!("SELECT count(*) AS n FROM read_topic({from}, '/odom')"),
        ] {
            // Default: the readable rows, then an error naming the file and the damage.
            for format in ["table", "json"] {
                let out = run(&["--format", format, &sql]);
                let (stdout, stderr) = (
                    String::from_utf8(out.stdout).unwrap(),
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                );
                assert_eq!(out.status.code(), Some(1), "{sql}: {stdout} {stderr}");
                assert!(
                    stderr.starts_with("error: ") && stderr.contains(damage),
                    "{sql}: {stderr}"
                );
                match format {
                    "json" => assert_eq!(
                        serde_json::from_str::<Value>(&stdout).unwrap(),
                        json!([{"n": 3}]),
                        "{sql}"
                    ),
                    _ => assert!(stdout.contains("| 3 |"), "{sql}: {stdout}"),
                }
            }
            // `--on-error warn`: the rows and a warning naming it.
            let out = run(&["--on-error", "warn", "--format", "json", &sql]);
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "{sql}: {stderr}");
            assert!(
                stderr.starts_with("warning: ") && stderr.contains(damage),
                "{stderr}"
            );
            let v: Value = serde_json::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
            assert_eq!(v, json!([{"n": 3}]), "{sql}");
        }
    }

    // topics() names the damage, rather than "no log file found there".
    let sql = format!("SELECT topic, message_count FROM topics('{d}')");
    let out = run(&[&sql]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(damage) && !stderr.contains("no log file"),
        "{stderr}"
    );
    let out = run(&["--on-error", "warn", "--format", "json", &sql]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(damage));
    let v: Value = serde_json::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(v, json!([{"topic": "/odom", "message_count": 3}]));
    let out = run(&["--on-error", "warn", &sql]);
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("| /odom | 3 ")
    );

    // Only the damaged file: its damage, not "no log file found there".
    std::fs::remove_file(dir.path().join("a.mcap")).unwrap();
    for sql in [
        format!("SELECT count(*) FROM '{d}'"),
        format!("SELECT * FROM topics('{d}')"),
    ] {
        let out = run(&[&sql]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(damage) && !stderr.contains("no log file"),
            "{sql}: {stderr}"
        );
    }
}

#[test]
fn a_file_cut_in_its_header_in_a_directory_follows_the_policy_too() {
    let dir = directory_with_damaged_files();
    std::fs::remove_file(dir.path().join("b.mcap")).unwrap();
    // A bag cut inside its header record: an unfinished recording.
    std::fs::write(dir.path().join("c.bag"), b"#ROSBAG V2.0\n\x45\x00\x00\x00").unwrap();
    let d = format!("{}/", p(dir.path()));
    let sql = format!("SELECT count(*) AS n FROM '{d}'");
    // Unfinished: a warning by default, as for the file alone; strict: the rows, then the error.
    let out = run(&["--format", "json", &sql]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.starts_with("warning: ") && stderr.contains("c.bag"),
        "{stderr}"
    );
    let v: Value = serde_json::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(v, json!([{"n": 3}]));
    let out = run(&["--on-error", "error", &sql]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stdout).unwrap().contains("| 3 |"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("c.bag"));
}
