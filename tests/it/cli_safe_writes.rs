//! Outputs that cannot destroy and data that never names files to open, run
//! through the `logsql` binary with default settings:
//!
//! - every output (`COPY` in each format, `export`, `-o`) goes to an
//!   exclusively created temporary file renamed over the target when
//!   complete: a link planted at the old `<target>.partial` name or at the
//!   target is never written through, a failing statement leaves the old
//!   target byte-identical and no stray file, and two exports to one target
//!   do not share a temporary file;
//! - `COPY ... TO 'x.mcap'` takes channels, schemas, attachments and metadata
//!   only from files the query scanned: a `file` value in a Parquet file that
//!   names a private recording or a URL is never opened.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const DEMO_MCAP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.mcap");

fn logsql_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run logsql")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs logsql in `dir`, asserts success, returns stdout.
fn ok(dir: &Path, args: &[&str]) -> String {
    let out = logsql_in(dir, args);
    assert!(
        out.status.success(),
        "logsql {args:?} failed:\n{}",
        stderr(&out)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Runs logsql in `dir`, asserts exit code 1, returns stderr.
fn fails(dir: &Path, args: &[&str]) -> String {
    let out = logsql_in(dir, args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "logsql {args:?}: {}",
        stderr(&out)
    );
    stderr(&out)
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The one number a `SELECT count(*)`-like query prints as CSV.
fn number(dir: &Path, sql: &str) -> i64 {
    let out = ok(dir, &["--format", "csv", sql]);
    out.lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no number in {out:?} for {sql}"))
}

#[cfg(unix)]
#[test]
fn export_never_writes_through_a_link_at_the_old_partial_name_or_the_target() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    for out in ["out.mcap", "out.parquet"] {
        std::os::unix::fs::symlink(&victim, dir.join(format!("{out}.partial"))).unwrap();
        let said = ok(dir, &["export", DEMO_MCAP, out]);
        assert!(said.starts_with("exported 2610 rows to "), "{said}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "{out}");
        assert_eq!(number(dir, &format!("SELECT count(*) FROM '{out}'")), 2610);
        // The planted link is left alone (and is no longer used at all).
        assert!(
            std::fs::symlink_metadata(dir.join(format!("{out}.partial")))
                .unwrap()
                .is_symlink()
        );
        // A link at the target itself is replaced, not followed.
        std::fs::remove_file(dir.join(out)).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(out)).unwrap();
        ok(dir, &["export", DEMO_MCAP, out]);
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "{out}");
        assert!(
            !std::fs::symlink_metadata(dir.join(out))
                .unwrap()
                .is_symlink()
        );
        assert_eq!(number(dir, &format!("SELECT count(*) FROM '{out}'")), 2610);
    }
    assert_eq!(
        entries(dir),
        [
            "out.mcap",
            "out.mcap.partial",
            "out.parquet",
            "out.parquet.partial",
            "victim"
        ]
    );
}

#[test]
fn two_exports_to_one_target_each_write_their_own_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for out in ["same.mcap", "same.parquet"] {
        let spawn = |topic: &str| {
            Command::new(env!("CARGO_BIN_EXE_logsql"))
                .args(["export", DEMO_MCAP, out, "--topic", topic])
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn logsql")
        };
        let (a, b) = (spawn("/imu"), spawn("/tf"));
        for child in [a, b] {
            let done = child.wait_with_output().unwrap();
            assert!(done.status.success(), "{}", stderr(&done));
        }
        // Whichever finished last, the target is one whole export.
        let topics = ok(
            dir,
            &[
                "--format",
                "csv",
                &format!("SELECT DISTINCT topic, count(*) OVER () AS n FROM '{out}'"),
            ],
        );
        let imu = number(
            dir,
            &format!("SELECT count(*) FROM '{DEMO_MCAP}' WHERE topic = '/imu'"),
        );
        let tf = number(
            dir,
            &format!("SELECT count(*) FROM '{DEMO_MCAP}' WHERE topic = '/tf'"),
        );
        assert!(
            topics == format!("topic,n\n/imu,{imu}\n") || topics == format!("topic,n\n/tf,{tf}\n"),
            "{out}: {topics}"
        );
    }
    assert_eq!(entries(dir), ["same.mcap", "same.parquet"]);
}

#[test]
fn a_failing_query_leaves_the_output_file_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("r.csv"), b"old,rows\n1,2\n").unwrap();
    let err = fails(dir, &["-o", "r.csv", "SELEC x"]);
    assert!(err.contains("SELEC"), "{err}");
    assert_eq!(
        std::fs::read(dir.join("r.csv")).unwrap(),
        b"old,rows\n1,2\n"
    );
    // A failure after the query started (division by zero) too, in any format.
    for format in ["csv", "json", "table"] {
        fails(dir, &["-o", "r.csv", "--format", format, "SELECT 1/0 AS x"]);
        assert_eq!(
            std::fs::read(dir.join("r.csv")).unwrap(),
            b"old,rows\n1,2\n"
        );
    }
    // No file appears for a failing query when there was none.
    fails(dir, &["-o", "new.csv", "SELEC x"]);
    assert_eq!(entries(dir), ["r.csv"]);
    // A successful one replaces the file.
    ok(dir, &["-o", "r.csv", "--format", "csv", "SELECT 2 AS y"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("r.csv")).unwrap(),
        "y\n2\n"
    );
    assert_eq!(entries(dir), ["r.csv"]);
}

#[test]
fn a_failing_copy_leaves_the_old_target_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let old = b"the old target".to_vec();
    let cases = [
        ("e.parquet", "SELECT 1/0 AS x", "Divide by zero"),
        ("e.csv", "SELECT 1/0 AS x", "Divide by zero"),
        ("e.json", "SELECT 1/0 AS x", "Divide by zero"),
        ("e.arrow", "SELECT 1/0 AS x", "Divide by zero"),
        (
            "m.csv",
            "SELECT map(['a'], [1]) AS m",
            "not supported in CSV",
        ),
        (
            "e.mcap",
            "SELECT '/t' AS topic, now() AS log_time, CAST(1/0 AS BYTEA) AS data",
            "Divide by zero",
        ),
    ];
    for (target, query, why) in cases {
        std::fs::write(dir.join(target), &old).unwrap();
        let err = fails(dir, &[&format!("COPY ({query}) TO '{target}'")]);
        assert!(err.contains(why), "{target}: {err}");
        assert_eq!(std::fs::read(dir.join(target)).unwrap(), old, "{target}");
    }
    // A partitioned COPY that fails leaves no directory or file behind.
    let err = fails(
        dir,
        &["COPY (SELECT 1/0 AS x, 'a' AS p) TO 'parts/' STORED AS PARQUET PARTITIONED BY (p)"],
    );
    assert!(err.contains("Divide by zero"), "{err}");
    let mut expected: Vec<&str> = cases.iter().map(|c| c.0).collect();
    expected.sort();
    assert_eq!(entries(dir), expected);
}

#[test]
fn copy_keeps_its_formats_options_and_partitioned_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let rows = "SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'a')) t(x, p)";
    for (target, extra) in [
        ("o.parquet", "OPTIONS (compression 'snappy')"),
        ("o.csv", "OPTIONS (delimiter ';')"),
        ("o.json", ""),
        ("o.arrow", ""),
        ("parts/", "STORED AS PARQUET PARTITIONED BY (p)"),
    ] {
        ok(dir, &[&format!("COPY ({rows}) TO '{target}' {extra}")]);
        assert_eq!(
            number(dir, &format!("SELECT count(*) FROM '{target}'")),
            3,
            "{target}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("o.csv")).unwrap(),
        "x;p\n1;a\n2;b\n3;a\n"
    );
    assert_eq!(entries(&dir.join("parts")), ["p=a", "p=b"]);
    assert_eq!(
        entries(dir),
        ["o.arrow", "o.csv", "o.json", "o.parquet", "parts"]
    );
}

/// Writes a small MCAP file at `path` with one channel on `topic` (a ROS 1
/// `std_msgs/String` schema), an attachment and a metadata record.
fn write_private_mcap(path: &Path, topic: &str) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = mcap::Writer::new(BufWriter::new(file)).unwrap();
    let schema = w
        .add_schema("std_msgs/String", "ros1msg", b"string data")
        .unwrap();
    let channel = w
        .add_channel(
            schema,
            topic,
            "ros1",
            &BTreeMap::from([("owner".to_string(), "alice".to_string())]),
        )
        .unwrap();
    for i in 0..3u64 {
        w.write_to_known_channel(
            &mcap::records::MessageHeader {
                channel_id: channel,
                sequence: i as u32,
                log_time: 1_000_000_000 + i,
                publish_time: 1_000_000_000 + i,
            },
            b"\x05\0\0\0hello",
        )
        .unwrap();
    }
    w.attach(&mcap::Attachment {
        log_time: 1,
        create_time: 1,
        name: "credentials.txt".into(),
        media_type: "text/plain".into(),
        data: Cow::Borrowed(b"TOP SECRET"),
    })
    .unwrap();
    w.write_metadata(&mcap::records::Metadata {
        name: "private".into(),
        metadata: BTreeMap::from([("api_key".to_string(), "hunter2".to_string())]),
    })
    .unwrap();
    w.finish().unwrap();
}

#[test]
fn copy_to_mcap_opens_only_the_files_the_query_scanned() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("secret")).unwrap();
    let private = dir.join("secret/private.mcap");
    write_private_mcap(&private, "/private");
    // The private file's own copy carries its attachment, metadata and schema.
    ok(
        dir,
        &["COPY (SELECT * FROM 'secret/private.mcap') TO 'own.mcap'"],
    );
    assert_eq!(
        number(dir, "SELECT count(*) FROM attachments('own.mcap')"),
        1
    );
    assert_eq!(number(dir, "SELECT count(*) FROM metadata('own.mcap')"), 1);
    // A Parquet file whose `file` column names the private file (as a shared
    // export would) ...
    ok(
        dir,
        &["COPY (SELECT * FROM 'secret/private.mcap') TO 'shared.parquet'"],
    );
    let named = ok(
        dir,
        &[
            "--format",
            "csv",
            "SELECT DISTINCT file FROM 'shared.parquet'",
        ],
    );
    assert!(named.contains("secret/private.mcap"), "{named}");
    std::fs::remove_file(dir.join("own.mcap")).unwrap();
    // ... gives channels from its own columns only: no schema, metadata or attachments.
    ok(
        dir,
        &["COPY (SELECT * FROM 'shared.parquet') TO 'out.mcap'"],
    );
    assert_eq!(number(dir, "SELECT count(*) FROM 'out.mcap'"), 3);
    assert_eq!(
        number(dir, "SELECT count(*) FROM attachments('out.mcap')"),
        0
    );
    assert_eq!(number(dir, "SELECT count(*) FROM metadata('out.mcap')"), 0);
    let channels = ok(
        dir,
        &[
            "--format",
            "csv",
            "SELECT topic, message_type, schema_encoding, length(schema) AS n, cardinality(metadata) AS m FROM channels('out.mcap')",
        ],
    );
    assert_eq!(
        channels,
        "topic,message_type,schema_encoding,n,m\n/private,std_msgs/String,,0,0\n"
    );
    let bytes = std::fs::read(dir.join("out.mcap")).unwrap();
    for secret in [&b"TOP SECRET"[..], b"hunter2", b"alice", b"string data"] {
        assert!(!bytes.windows(secret.len()).any(|w| w == secret));
    }
}

#[test]
fn copy_to_mcap_never_fetches_a_url_a_file_value_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_private_mcap(&dir.join("src.mcap"), "/t");
    // Something listening where the URL points: any fetch would connect.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/recording.mcap", listener.local_addr().unwrap());
    ok(
        dir,
        &[&format!(
            "COPY (SELECT topic, log_time, data, message_type, message_encoding, '{url}' AS file FROM 'src.mcap') TO 'url.parquet'"
        )],
    );
    ok(dir, &["COPY (SELECT * FROM 'url.parquet') TO 'out.mcap'"]);
    assert_eq!(number(dir, "SELECT count(*) FROM 'out.mcap'"), 3);
    assert_eq!(
        listener.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the URL in the file column was fetched"
    );
}

/// A recording whose topic name holds terminal control sequences: OSC 52
/// (clipboard write), a window title, clear screen, a C1 CSI and DEL.
pub fn hostile_topic() -> &'static str {
    "/x\u{1b}]52;c;aGk=\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{7f}"
}

/// Writes `dir/hostile.mcap` (see [`hostile_topic`]) and returns its path.
pub fn write_hostile_mcap(dir: &Path) -> PathBuf {
    let path = dir.join("hostile.mcap");
    write_private_mcap(&path, hostile_topic());
    path
}

#[cfg(unix)]
#[test]
fn plot_replaces_a_link_at_its_output_and_a_failing_plot_keeps_the_old_image() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("imu.svg")).unwrap();
    let imu =
        format!("SELECT log_time, linear_acceleration FROM read_topic('{DEMO_MCAP}', '/imu')");
    ok(dir, &["plot", &imu, "-o", "imu.svg"]);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(
        !std::fs::symlink_metadata(dir.join("imu.svg"))
            .unwrap()
            .is_symlink()
    );
    let image = std::fs::read(dir.join("imu.svg")).unwrap();
    assert!(
        image.starts_with(b"<svg"),
        "{:?}",
        &image[..20.min(image.len())]
    );
    fails(dir, &["plot", "SELECT 1/0 AS x, 1 AS y", "-o", "imu.svg"]);
    assert_eq!(std::fs::read(dir.join("imu.svg")).unwrap(), image);
    assert_eq!(entries(dir), ["imu.svg", "victim"]);
}
