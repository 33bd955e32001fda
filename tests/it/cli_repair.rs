//! `logsql doctor` and `logsql recover` at the CLI, on damaged copies made
//! here the ways recordings really break: cut at an offset, a zeroed page,
//! flipped bytes in chunk data and in the index, an unclosed recording.
//! `doctor` must name each injected problem (kind and byte offset) and call
//! a clean file healthy; `recover`'s output, read back with the strict
//! policy, must hold exactly the messages logsql reads from the damaged
//! input under `warn` (topic, time, payload hash), in time order, with the
//! input left untouched.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use logsql_readers::formats::mcap::reader::RecordReader;
use logsql_readers::formats::mcap::records::Record;
use logsql_readers::formats::ros2::bag_meta::BagMetadata;
use logsql_readers::io::FileReader;
use serde_json::Value;

use crate::fixtures;

/// Runs the CLI: (exit code, stdout, stderr).
fn logsql(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn demo(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A damaged copy of `source` at `dir/name`, `damage` applied to its bytes.
fn damaged(dir: &Path, source: &Path, name: &str, damage: impl Fn(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(source).unwrap();
    damage(&mut bytes);
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn cut(at: usize) -> impl Fn(&mut Vec<u8>) {
    move |b| b.truncate(at)
}

fn zero(at: usize, len: usize) -> impl Fn(&mut Vec<u8>) {
    move |b| b[at..at + len].fill(0)
}

fn flip(at: usize, len: usize) -> impl Fn(&mut Vec<u8>) {
    move |b| b[at..at + len].iter_mut().for_each(|x| *x ^= 0xff)
}

/// demo.mcap's first ChunkIndex record of a chunk with messages, with its
/// `message_start_time` moved 1 ms later and the summary CRC cleared (0: not
/// computed), so the summary is used and disagrees with the chunk.
fn shift_chunk_index(b: &mut [u8]) {
    let n = b.len();
    let summary_start = u64::from_le_bytes(b[n - 28..n - 20].try_into().unwrap()) as usize;
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let mut p = summary_start;
    while b[p] != 0x08 || u64_at(b, p + 9) == 0 {
        p += 9 + u64_at(b, p + 1) as usize;
    }
    let field = p + 9;
    let t = u64_at(b, field) + 1_000_000;
    b[field..field + 8].copy_from_slice(&t.to_le_bytes());
    b[n - 12..n - 8].fill(0);
}

/// `doctor --format json` of one file: (exit code, its report).
fn doctor(path: &Path) -> (i32, Value) {
    let (code, stdout, stderr) = logsql(&["doctor", "--format", "json", path.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {stdout} {stderr}", path.display()));
    (code, v[0].clone())
}

/// Whether `report` names a problem of `kind` (at `offset`, when given).
fn names(report: &Value, kind: &str, offset: Option<u64>) -> bool {
    report["problems"].as_array().unwrap().iter().any(|p| {
        p["kind"] == kind
            && p["severity"] == "problem"
            && offset.is_none_or(|o| p["offset"].as_u64() == Some(o))
    })
}

#[test]
fn doctor_calls_clean_files_healthy() {
    for name in [
        "demo.mcap",
        "demo.bag",
        "demo.record",
        "demo.bddf",
        "demo.log",
    ] {
        let (code, report) = doctor(&demo(name));
        assert_eq!(
            (code, report["status"].as_str()),
            (0, Some("healthy")),
            "{name}: {report:#}"
        );
        assert!(report["messages"].as_u64().unwrap() > 0, "{name}");
        assert_eq!(report["lost"], serde_json::json!([]), "{name}");
    }
    // A ROS 2 bag directory with its metadata.yaml.
    let Some(talker) = fixtures::dir("ros2") else {
        return;
    };
    let (code, stdout, _) = logsql(&["doctor", talker.join("sqlite3/talker").to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("20 messages read (index states 20): healthy"),
        "{stdout}"
    );
}

#[test]
fn doctor_names_each_injected_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let mcap = demo("demo.mcap");
    let bag = demo("demo.bag");
    type Case = (PathBuf, &'static [(&'static str, Option<u64>)]);
    let cases: Vec<Case> = vec![
        (
            damaged(t, &mcap, "cut.mcap", cut(126_000)),
            &[("truncated-tail", Some(120_142)), ("missing-index", None)],
        ),
        (
            damaged(t, &mcap, "flipped-chunk.mcap", flip(81_400, 4)),
            &[("checksum", Some(81_181))],
        ),
        (
            damaged(t, &mcap, "zeroed-summary.mcap", zero(181_530, 4096)),
            &[("invalid-index", Some(179_530)), ("unknown-record", None)],
        ),
        (
            damaged(t, &mcap, "shifted-index.mcap", |b| shift_chunk_index(b)),
            &[("index-mismatch", None), ("time-outside-chunk", None)],
        ),
        (
            damaged(t, &bag, "cut.bag", cut(60_000)),
            &[("truncated-tail", Some(59_877)), ("missing-index", None)],
        ),
        (
            damaged(t, &bag, "zeroed.bag", zero(20_000, 4096)),
            &[("corrupt", None)],
        ),
        (
            damaged(t, &bag, "recording.bag.active", |_| {}),
            &[("unclosed-recording", None)],
        ),
        (
            damaged(t, &demo("demo.record"), "zeroed.record", zero(50_000, 4096)),
            &[("corrupt", Some(50_119))],
        ),
        (
            damaged(t, &demo("demo.bddf"), "flipped.bddf", flip(50_000, 1)),
            &[("checksum", None)],
        ),
        (
            damaged(t, &demo("demo.bddf"), "cut.bddf", cut(60_000)),
            &[("truncated-tail", None)],
        ),
    ];
    for (path, wanted) in &cases {
        let (code, report) = doctor(path);
        assert_eq!(code, 1, "{}: {report:#}", path.display());
        for (kind, offset) in *wanted {
            assert!(
                names(&report, kind, *offset),
                "{}: no {kind} at {offset:?} in {report:#}",
                path.display()
            );
        }
    }
    // The flipped chunk: its range and the messages its index counted are lost.
    let (_, report) = doctor(&t.join("flipped-chunk.mcap"));
    assert_eq!(
        report["lost"],
        serde_json::json!([{"start": 81_181, "end": 91_318, "what": "chunk 7", "messages": 195}])
    );
    assert_eq!(report["messages"], 2415);
    // Text output says the same, one line per problem.
    let (code, stdout, _) = logsql(&["doctor", t.join("cut.mcap").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("problem truncated-tail at byte 120142"),
        "{stdout}"
    );
    assert!(
        stdout.contains("lost: bytes 120142..126000 (the end of the file)"),
        "{stdout}"
    );
    // A file no format reads: unreadable, exit status 2.
    let junk = t.join("junk.mcap");
    std::fs::write(&junk, b"not a log").unwrap();
    let (code, report) = doctor(&junk);
    assert_eq!((code, report["status"].as_str()), (2, Some("unreadable")));
}

#[test]
fn doctor_names_unclosed_ros2_and_apollo_recordings() {
    let tmp = tempfile::tempdir().unwrap();
    // A .db3 alone: no metadata.yaml beside it.
    let db3 = tmp.path().join("alone.db3");
    std::fs::copy(demo("demo.db3"), &db3).unwrap();
    let (code, report) = doctor(&db3);
    assert_eq!(code, 1);
    assert!(names(&report, "unclosed-recording", None), "{report:#}");
    assert!(
        report["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("metadata.yaml")
    );
    // A record the recorder never closed.
    let Some(torn) = fixtures::file("apollo", "generated/crash_torn_tail.record") else {
        return;
    };
    let (code, report) = doctor(&torn);
    assert_eq!(code, 1);
    assert!(names(&report, "unclosed-recording", None), "{report:#}");
    assert!(
        names(&report, "truncated-tail", Some(106_102)),
        "{report:#}"
    );
}

/// Every message of `path` as sorted CSV lines: topic, log time, payload hash.
fn messages(path: &Path, policy: &str) -> Vec<String> {
    let sql = format!(
        "SELECT topic, CAST(log_time AS BIGINT) AS t, encode(sha256(data), 'hex') AS h \
         FROM '{}' ORDER BY topic, t, h",
        path.display()
    );
    let (code, stdout, stderr) = logsql(&["--on-error", policy, "--format", "csv", &sql]);
    assert_eq!(code, 0, "{}: {stderr}", path.display());
    stdout.lines().skip(1).map(str::to_string).collect()
}

/// The log times of `mcap`'s messages in file order.
fn file_order_times(mcap: &Path) -> Vec<u64> {
    let file = FileReader::open(mcap).unwrap();
    let mut reader = RecordReader::new(&file).unwrap();
    let mut times = Vec::new();
    while let Some(item) = reader.next_record().unwrap() {
        if let Record::Message(m) = item.record {
            times.push(m.header.log_time);
        }
    }
    times
}

#[test]
fn recover_writes_what_the_damaged_input_reads_as_a_valid_sorted_mcap() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let mcap = demo("demo.mcap");
    let bag = demo("demo.bag");
    let mut inputs = vec![
        damaged(t, &mcap, "cut.mcap", cut(126_000)),
        damaged(t, &mcap, "flipped-chunk.mcap", flip(81_400, 4)),
        damaged(t, &mcap, "zeroed-summary.mcap", zero(181_530, 4096)),
        damaged(t, &bag, "cut.bag", cut(60_000)),
        damaged(t, &bag, "zeroed.bag", zero(20_000, 4096)),
        damaged(t, &demo("demo.record"), "zeroed.record", zero(50_000, 4096)),
        damaged(t, &demo("demo.bddf"), "cut.bddf", cut(60_000)),
        damaged(t, &demo("demo.log"), "cut.log", cut(60_000)),
        damaged(t, &demo("demo.db3"), "alone.db3", |_| {}),
    ];
    if let Some(torn) = fixtures::file("apollo", "generated/crash_torn_tail.record") {
        inputs.push(torn);
    }
    if let Some(unsorted) = fixtures::file("rosbag", "rosbagjs-example-unsorted-chunks.bag") {
        inputs.push(unsorted);
    }
    for input in &inputs {
        let before = std::fs::read(input).unwrap();
        let out = t.join(format!(
            "recovered-{}.mcap",
            input.file_name().unwrap().to_string_lossy()
        ));
        let (code, stdout, stderr) =
            logsql(&["recover", input.to_str().unwrap(), out.to_str().unwrap()]);
        assert_eq!(code, 0, "{}: {stdout} {stderr}", input.display());
        assert!(stdout.contains("recovered "), "{stdout}");
        assert_eq!(
            std::fs::read(input).unwrap(),
            before,
            "{}: input changed",
            input.display()
        );
        let expected = messages(input, "warn");
        assert!(!expected.is_empty(), "{}", input.display());
        assert_eq!(messages(&out, "error"), expected, "{}", input.display());
        let times = file_order_times(&out);
        assert_eq!(times.len(), expected.len());
        assert!(times.is_sorted(), "{}: not in time order", out.display());
        let (code, report) = doctor(&out);
        assert_eq!(code, 0, "{}: {report:#}", out.display());
        // Channels keep their message types and encodings.
        let channels = |p: &Path| {
            let sql = format!(
                "SELECT DISTINCT topic, message_type, message_encoding FROM '{}' ORDER BY topic",
                p.display()
            );
            logsql(&["--on-error", "warn", "--format", "csv", &sql]).1
        };
        assert_eq!(channels(&out), channels(input), "{}", input.display());
    }
    // Metadata and attachments of an MCAP input come along.
    let out = t.join("recovered-flipped-chunk.mcap.mcap");
    for table in ["metadata", "attachments"] {
        let sql = format!("SELECT name FROM {table}('{}')", out.display());
        let (_, stdout, _) = logsql(&["--format", "csv", &sql]);
        assert!(stdout.lines().count() > 1, "{table}: {stdout}");
    }
}

#[test]
fn recover_never_writes_its_input_nor_a_partial_output() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.mcap");
    std::fs::copy(demo("demo.mcap"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let (code, _, stderr) = logsql(&["recover", input.to_str().unwrap(), input.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("recover never writes its input"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&input).unwrap(), before);
    // Nothing readable: exit status 2 and no output at all.
    let junk = tmp.path().join("junk.mcap");
    std::fs::write(&junk, b"not a log").unwrap();
    let out = tmp.path().join("out.mcap");
    let (code, stdout, _) = logsql(&["recover", junk.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.contains("unreadable"), "{stdout}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        2,
        "only the inputs remain"
    );
}

/// A writable copy of the directory `from` at `to` (files only).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            let bytes = std::fs::read(entry.path()).unwrap();
            std::fs::write(to.join(entry.file_name()), bytes).unwrap();
        }
    }
}

/// The channels of `path` as a reader lists them, one JSON line per (topic,
/// type), the first file's lowest channel id where several share them:
/// encodings, schema hash and the metadata a bag keeps (connection header
/// fields, QoS profiles).
fn channel_lines(path: &Path) -> Vec<String> {
    let meta: Vec<String> = [
        "md5sum",
        "callerid",
        "latching",
        "offered_qos_profiles",
        "type_description_hash",
    ]
    .iter()
    .map(|k| format!("metadata['{k}'] AS {k}"))
    .collect();
    let sql = format!(
        "SELECT DISTINCT ON (topic, message_type) topic, message_type, message_encoding, \
         schema_encoding, encode(sha256(schema), 'hex') AS schema, {} \
         FROM channels('{}') ORDER BY topic, message_type, file, channel_id",
        meta.join(", "),
        path.display()
    );
    let (code, stdout, stderr) = logsql(&["--on-error", "warn", "--format", "ndjson", &sql]);
    assert_eq!(code, 0, "{}: {stderr}", path.display());
    stdout.lines().map(str::to_string).collect()
}

/// Every message of the bag `path` in file order: (topic, log time).
fn bag_file_order(path: &Path) -> Vec<(String, u64)> {
    use logsql_readers::formats::FormatReader;
    use logsql_readers::formats::bag::BagFormat;
    use logsql_readers::model::{Flow, Message, Selection};
    let file = FileReader::open(path).unwrap();
    let summary = BagFormat.summary(&file).unwrap();
    assert!(summary.indexed, "{}: not indexed", path.display());
    let mut got = Vec::new();
    for chunk in &summary.chunks {
        let mut sink = |m: Message<'_>| {
            got.push((m.channel.topic.clone(), m.log_time));
            Flow::Continue
        };
        BagFormat
            .read_chunk(&file, &summary, chunk, &Selection::all(), &mut sink)
            .unwrap();
    }
    got
}

#[test]
fn recover_to_bag_writes_an_indexed_bag_of_what_the_damaged_bag_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let bag = demo("demo.bag");
    // (input, whether `--to bag` is given: otherwise the `.bag` name says it)
    let mut inputs = vec![
        (damaged(t, &bag, "cut.bag", cut(60_000)), false),
        (damaged(t, &bag, "recording.bag.active", cut(90_000)), true),
        (damaged(t, &bag, "zeroed.bag", zero(20_000, 4096)), false),
    ];
    if let Some(dir) = fixtures::dir("rosbag") {
        let f = |name: &str| dir.join(name);
        inputs.extend([
            // bz2 chunks; a flipped byte makes chunk 4 undecodable.
            (
                damaged(
                    t,
                    &f("robot_localization-test1.bag"),
                    "flipped.bag",
                    flip(700_000, 4),
                ),
                false,
            ),
            (
                damaged(t, &f("embag-test.bag"), "lz4.bag.active", cut(2_000_000)),
                true,
            ),
            (f("rosbagjs-example-unsorted-chunks.bag"), false),
        ]);
    }
    // An MCAP of ROS1 messages (the ros1 profile) holds connection headers too.
    let ros1_mcap = t.join("ros1.mcap");
    let (code, _, stderr) = logsql(&[
        "recover",
        bag.to_str().unwrap(),
        ros1_mcap.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    inputs.push((ros1_mcap, false));
    for (input, explicit) in &inputs {
        let before = std::fs::read(input).unwrap();
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let out = if *explicit {
            t.join(format!("recovered-{name}.out"))
        } else {
            t.join(format!("recovered-{name}.bag"))
        };
        let mut args = vec!["recover", input.to_str().unwrap(), out.to_str().unwrap()];
        if *explicit {
            args.extend(["--to", "bag"]);
        }
        let (code, stdout, stderr) = logsql(&args);
        assert_eq!(code, 0, "{name}: {stdout} {stderr}");
        assert!(stdout.contains("recovered "), "{stdout}");
        assert_eq!(
            std::fs::read(input).unwrap(),
            before,
            "{name}: input changed"
        );
        assert!(std::fs::read(&out).unwrap().starts_with(b"#ROSBAG V2.0\n"));
        let expected = messages(input, "warn");
        assert!(!expected.is_empty(), "{name}");
        assert_eq!(messages(&out, "error"), expected, "{name}");
        let (code, report) = doctor(&out);
        assert_eq!(code, 0, "{name}: {report:#}");
        assert_eq!(report["indexed_messages"], expected.len(), "{name}");
        let order = bag_file_order(&out);
        assert_eq!(order.len(), expected.len());
        assert!(
            order.iter().map(|m| m.1).is_sorted(),
            "{name}: not in time order"
        );
        // Connection headers (type, md5sum, definition, callerid, latching) kept.
        assert_eq!(channel_lines(&out), channel_lines(input), "{name}");
    }
    // No stray temporary file beside the outputs.
    assert!(
        std::fs::read_dir(t).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
}

#[test]
fn recover_to_bag_leaves_out_messages_whose_connection_record_was_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // Bytes flipped in the first chunk's connection records, the index cut off.
    let input = damaged(t, &demo("demo.bag"), "lost-connections.bag", |b| {
        flip(4300, 4)(b);
        b.truncate(60_000);
    });
    let all = messages(&input, "warn");
    let keep: Vec<String> = all
        .iter()
        .filter(|m| !m.starts_with(','))
        .cloned()
        .collect();
    assert!(!keep.is_empty() && keep.len() < all.len());
    let out = t.join("out.bag");
    let (code, stdout, stderr) =
        logsql(&["recover", input.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    let left = all.len() - keep.len();
    assert!(
        stdout.contains(&format!(
            "left out {left} messages without a topic and type"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("recovered {} messages", keep.len())),
        "{stdout}"
    );
    assert_eq!(messages(&out, "error"), keep);
    assert_eq!(doctor(&out).0, 0);
}

#[test]
fn recover_to_db3_writes_a_ros2_bag_directory_of_what_the_damaged_bag_reads() {
    let Some(ros2) = fixtures::dir("ros2") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let sqlite = ros2.join("sqlite3");
    // The recorder never checkpointed: the messages are in talker.db3-wal.
    copy_dir(&sqlite.join("talker"), &t.join("talker"));
    // No metadata.yaml: three databases of one recording.
    copy_dir(
        &sqlite.join("multiple_files_no_metadata"),
        &t.join("no_metadata"),
    );
    // A split bag without its metadata.yaml, its last database cut.
    copy_dir(&sqlite.join("wbag"), &t.join("cut"));
    std::fs::remove_file(t.join("cut/metadata.yaml")).unwrap();
    let last = t.join("cut/wbag_4.db3");
    let len = std::fs::metadata(&last).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&last)
        .unwrap()
        .set_len(len * 2 / 3)
        .unwrap();
    // A lone database copied out of its bag.
    std::fs::create_dir(t.join("alone")).unwrap();
    std::fs::copy(
        sqlite.join("cdr_test/cdr_test_0.db3"),
        t.join("alone/a.db3"),
    )
    .unwrap();
    // A ROS 2 bag recorded with MCAP storage.
    copy_dir(&ros2.join("mcap/cdr_test"), &t.join("mcap_storage"));
    let inputs = [
        t.join("talker"),
        t.join("no_metadata"),
        t.join("cut"),
        t.join("alone/a.db3"),
        t.join("mcap_storage"),
    ];
    for input in &inputs {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let files = |p: &Path| -> Vec<(String, Vec<u8>)> {
            let dir = if p.is_dir() { p } else { p.parent().unwrap() };
            let mut v: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    let bytes = std::fs::read(e.path()).unwrap();
                    (e.file_name().to_string_lossy().into_owned(), bytes)
                })
                .collect();
            v.sort();
            v
        };
        let before = files(input);
        let out = t.join(format!("recovered-{name}"));
        let (code, stdout, stderr) = logsql(&[
            "recover",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "--to",
            "db3",
        ]);
        assert_eq!(code, 0, "{name}: {stdout} {stderr}");
        assert_eq!(files(input), before, "{name}: input changed");
        let expected = messages(input, "warn");
        assert!(!expected.is_empty(), "{name}");
        assert_eq!(messages(&out, "error"), expected, "{name}");
        // One database and its metadata.yaml; doctor calls it healthy.
        let db = format!("recovered-{name}_0.db3");
        let listed: Vec<String> = files(&out).into_iter().map(|f| f.0).collect();
        assert_eq!(listed, ["metadata.yaml".to_string(), db.clone()], "{name}");
        let (code, stdout, _) = logsql(&["doctor", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {stdout}");
        assert!(stdout.contains("healthy"), "{stdout}");
        let yaml = std::fs::read_to_string(out.join("metadata.yaml")).unwrap();
        let meta = BagMetadata::parse(&yaml).unwrap();
        assert_eq!(meta.storage_identifier, "sqlite3");
        assert_eq!(meta.relative_file_paths, std::slice::from_ref(&db));
        assert_eq!(meta.message_count, Some(expected.len() as u64), "{name}");
        let counted: u64 = meta.topics.iter().filter_map(|t| t.message_count).sum();
        assert_eq!(counted, expected.len() as u64);
        assert_eq!(meta.compression_mode, "");
        assert_eq!(meta.files[0].message_count, meta.message_count);
        // Topics keep their types, definitions and QoS profiles.
        assert_eq!(channel_lines(&out), channel_lines(input), "{name}");
    }
    // No temporary directory is left beside the outputs.
    assert!(
        std::fs::read_dir(t).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
    // The talker's QoS profiles are those of its topics table.
    let yaml = std::fs::read_to_string(t.join("recovered-talker/metadata.yaml")).unwrap();
    assert!(yaml.contains("sec: 2147483647"), "{yaml}");
    // An existing directory with files in it is never replaced.
    let (code, _, stderr) = logsql(&[
        "recover",
        t.join("talker").to_str().unwrap(),
        t.join("cut").to_str().unwrap(),
        "--to",
        "db3",
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("not an empty directory"), "{stderr}");
    assert!(t.join("cut/wbag_0.db3").is_file());
}

#[test]
fn recover_to_refuses_inputs_the_format_cannot_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // MCAP with json and protobuf channels: no ROS1 connection headers.
    let out = t.join("out.bag");
    let (code, _, stderr) = logsql(&[
        "recover",
        demo("demo.mcap").to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("cannot recover --to bag"), "{stderr}");
    assert!(stderr.contains("ros1"), "{stderr}");
    // A ROS1 bag is not a ROS 2 bag.
    let (code, _, stderr) = logsql(&[
        "recover",
        demo("demo.bag").to_str().unwrap(),
        t.join("ros2").to_str().unwrap(),
        "--to",
        "db3",
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("cannot recover --to db3"), "{stderr}");
    assert!(stderr.contains("cdr"), "{stderr}");
    assert_eq!(std::fs::read_dir(t).unwrap().count(), 0, "nothing written");
}
