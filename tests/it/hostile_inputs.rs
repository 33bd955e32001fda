//! Hostile inputs at the CLI, with default settings: decompression bombs of
//! every codec, a `.db3.zstd` inflating without end, side files that are
//! devices or pipes, SQLite virtual tables posing as rosbag2 tables, and
//! directories whose symbolic links loop. Each run must end within
//! [`TIME_LIMIT`] by itself (no signal), with a clear error naming the file or
//! the right answer, its peak resident memory (`VmHWM` of the child, polled)
//! under [`RSS_LIMIT_KIB`], and nothing left in its `$TMPDIR`.
//!
//! The crafted files are built here: zstd frames of RLE blocks (4 bytes per
//! 128 KiB of output), bzip2 streams of zeros repeated, SQLite databases
//! written with `rusqlite`.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Most resident memory a run may reach, in KiB (1 GiB).
const RSS_LIMIT_KIB: u64 = 1 << 20;
/// Longest a run may take before it counts as a hang.
const TIME_LIMIT: Duration = Duration::from_secs(30);

/// What a run of the CLI gave.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// The peak resident set of process `pid` in KiB, while it runs.
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `logsql ARGS` with `$TMPDIR` a fresh directory, checking memory,
/// time, signals and that the temporary directory ends empty.
fn run(args: &[&str]) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_with_tmpdir(tmp.path(), args);
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "logsql {args:?} left {left:?} in TMPDIR");
    run
}

/// Runs `logsql ARGS` with `$TMPDIR` set to `tmp`, checking memory, time and
/// signals.
fn run_with_tmpdir(tmp: &Path, args: &[&str]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .env("TMPDIR", tmp)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = pipe(Box::new(child.stdout.take().unwrap()));
    let err = pipe(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = vm_hwm_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if peak > RSS_LIMIT_KIB || start.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "logsql {args:?}: {} KiB resident after {:?} (stderr: {})",
                peak,
                start.elapsed(),
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            None,
            "logsql {args:?} was killed: {stderr}"
        );
    }
    assert!(!stderr.contains("panicked"), "logsql {args:?}: {stderr}");
    Run {
        code: status.code(),
        stdout,
        stderr,
    }
}

/// A zstd frame decompressing to `total` zero bytes (a multiple of 128 KiB),
/// made of RLE blocks.
pub fn zstd_zeros(total: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    // Magic, no content size, a 128 KiB window (exponent 7).
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, 7 << 3];
    let blocks = total / BLOCK;
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = ((BLOCK as u32) << 3) | (1 << 1) | last;
        f.extend_from_slice(&header.to_le_bytes()[..3]);
        f.push(0);
    }
    f
}

/// bzip2 streams decompressing to about `total` zero bytes.
fn bz2_zeros(total: u64) -> Vec<u8> {
    const STREAM: u64 = 4 << 20;
    let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    std::io::Write::write_all(&mut enc, &vec![0u8; STREAM as usize]).unwrap();
    let one = enc.finish().unwrap();
    one.repeat((total / STREAM) as usize)
}

/// An MCAP record.
fn mcap_record(out: &mut Vec<u8>, op: u8, content: &[u8]) {
    out.push(op);
    out.extend_from_slice(&(content.len() as u64).to_le_bytes());
    out.extend_from_slice(content);
}

fn mcap_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A Chunk record holding `records`, compressed as `compression` says,
/// declaring `size` uncompressed bytes.
fn mcap_chunk(out: &mut Vec<u8>, compression: &str, size: u64, records: &[u8]) {
    let mut c = Vec::new();
    c.extend_from_slice(&1u64.to_le_bytes());
    c.extend_from_slice(&9u64.to_le_bytes());
    c.extend_from_slice(&size.to_le_bytes());
    c.extend_from_slice(&0u32.to_le_bytes());
    mcap_str(&mut c, compression);
    c.extend_from_slice(&(records.len() as u64).to_le_bytes());
    c.extend_from_slice(records);
    mcap_record(out, 0x06, &c);
}

/// An unindexed MCAP file: a chunk of one message, then one chunk for each
/// of `bombs` (compressed records, declared size), then another good chunk.
fn mcap_with_bombs(bombs: &[(Vec<u8>, u64)]) -> Vec<u8> {
    let mut f = b"\x89MCAP0\r\n".to_vec();
    let mut header = Vec::new();
    mcap_str(&mut header, "");
    mcap_str(&mut header, "hostile");
    mcap_record(&mut f, 0x01, &header);
    let mut channel = Vec::new();
    channel.extend_from_slice(&1u16.to_le_bytes());
    channel.extend_from_slice(&0u16.to_le_bytes());
    mcap_str(&mut channel, "/good");
    mcap_str(&mut channel, "json");
    channel.extend_from_slice(&0u32.to_le_bytes());
    mcap_record(&mut f, 0x04, &channel);
    let message = |t: u64| {
        let mut m = Vec::new();
        m.extend_from_slice(&1u16.to_le_bytes());
        m.extend_from_slice(&0u32.to_le_bytes());
        m.extend_from_slice(&t.to_le_bytes());
        m.extend_from_slice(&t.to_le_bytes());
        m.extend_from_slice(b"{\"ok\":1}");
        let mut r = Vec::new();
        mcap_record(&mut r, 0x05, &m);
        r
    };
    let first = message(1);
    mcap_chunk(&mut f, "", first.len() as u64, &first);
    for (bomb, declared) in bombs {
        mcap_chunk(&mut f, "zstd", *declared, bomb);
    }
    let last = message(9);
    mcap_chunk(&mut f, "", last.len() as u64, &last);
    mcap_record(&mut f, 0x0F, &0u32.to_le_bytes());
    mcap_record(&mut f, 0x02, &[0u8; 20]);
    f.extend_from_slice(b"\x89MCAP0\r\n");
    f
}

/// A ROS1 bag record.
fn bag_record(out: &mut Vec<u8>, fields: &[(&str, &[u8])], data: &[u8]) {
    let mut header = Vec::new();
    for (name, value) in fields {
        header.extend_from_slice(&((name.len() + 1 + value.len()) as u32).to_le_bytes());
        header.extend_from_slice(name.as_bytes());
        header.push(b'=');
        header.extend_from_slice(value);
    }
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
}

/// Whether stderr names the file, an offset and the chunk limit.
fn names_the_limit(stderr: &str, file: &str) {
    assert!(stderr.contains(file), "{stderr}");
    assert!(stderr.contains("at byte"), "{stderr}");
    assert!(
        stderr.contains("logsql.max_chunk_bytes") || stderr.contains("expected"),
        "{stderr}"
    );
}

#[test]
fn an_mcap_zstd_bomb_is_an_error_and_the_other_chunks_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.mcap");
    // Declares 4 GiB (as the frame gives); and one declaring 1 MiB that lies.
    let bomb = zstd_zeros(4 << 30);
    std::fs::write(
        &path,
        mcap_with_bombs(&[(bomb.clone(), 4 << 30), (bomb, 1 << 20)]),
    )
    .unwrap();
    let p = path.to_str().unwrap();
    let sql = format!("SELECT length(data) AS n FROM '{p}' ORDER BY log_time");
    let r = run(&["--format", "csv", &sql]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    names_the_limit(&r.stderr, "bomb.mcap");
    assert!(r.stderr.contains("268435456"), "{}", r.stderr);
    // Under `warn` the two good chunks' rows are the answer.
    let r = run(&["--format", "csv", "--on-error", "warn", &sql]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().skip(1).collect::<Vec<_>>(), ["8", "8"]);
}

#[test]
fn a_bz2_bag_bomb_is_an_error_and_never_a_negative_length() {
    use crate::bag_writer::{Conn, Spec, write};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.bag");
    let conn = Conn::new(0, "/good", "std_msgs/String");
    let mut spec = Spec::new(
        vec![conn],
        vec![(0, 1_000_000_000, b"\x02\0\0\0ok".to_vec())],
    );
    spec.unindexed = true;
    let mut bag = write(&spec);
    let bomb = bz2_zeros(4 << 30);
    for declared in [u32::MAX, 1 << 20] {
        bag_record(
            &mut bag,
            &[
                ("op", &[0x05]),
                ("compression", b"bz2"),
                ("size", &declared.to_le_bytes()),
            ],
            &bomb,
        );
    }
    std::fs::write(&path, bag).unwrap();
    let p = path.to_str().unwrap();
    let sql = format!("SELECT count(*) AS n, sum(length(data)) AS bytes FROM '{p}'");
    let r = run(&["--format", "csv", &sql]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    names_the_limit(&r.stderr, "bomb.bag");
    let r = run(&["--format", "csv", "--on-error", "warn", &sql]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().nth(1), Some("1,6"), "{}", r.stderr);
}

/// A rosbag2 directory: `good` ordinary messages, then `bombs` whose zstd
/// frames decompress to 1 GiB each, `compression_mode: message`.
fn ros2_message_bombs(dir: &Path, good: i64, bombs: i64) -> std::path::PathBuf {
    let path = dir.join("b_0.db3");
    crate::ros2_db3::write_bag(&path, good, 32, true, true);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let bomb = zstd_zeros(1 << 30);
    for i in 0..bombs {
        conn.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, ?1, ?2)",
            rusqlite::params![2_000_000_000 + i, bomb],
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("metadata.yaml"),
        "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n  relative_file_paths: [b_0.db3]\n  compression_format: zstd\n  compression_mode: MESSAGE\n",
    )
    .unwrap();
    path
}

#[test]
fn ros2_per_message_zstd_bombs_stop_at_the_message_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = ros2_message_bombs(dir.path(), 10, 8);
    let p = path.to_str().unwrap();
    let sql = format!("SELECT count(*) AS n, sum(length(data)) AS bytes FROM '{p}'");
    let r = run(&["--format", "csv", &sql]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("b_0.db3"), "{}", r.stderr);
    assert!(
        r.stderr.contains("logsql.max_message_bytes"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("log_time 2000000000"), "{}", r.stderr);
}

#[test]
fn eight_bomb_files_in_one_directory_stay_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = zstd_zeros(1 << 30);
    for i in 0..8 {
        std::fs::write(
            dir.path().join(format!("bomb_{i}.mcap")),
            // Each declares what it holds: 1 GiB, over the limit.
            mcap_with_bombs(&[(bomb.clone(), 1 << 30)]),
        )
        .unwrap();
    }
    let d = dir.path().to_str().unwrap();
    let sql = format!("SELECT count(*) AS n FROM '{d}' WHERE length(data) > 0");
    let r = run(&["--format", "csv", &sql]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("bomb_"), "{}", r.stderr);
    let r = run(&["--format", "csv", "--on-error", "warn", &sql]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().nth(1), Some("16"), "{}", r.stderr);
}

/// Chunks under the per-chunk cap still count against the session's memory
/// pool: with `datafusion.runtime.memory_limit` below a chunk's decompressed
/// size the query fails at once, naming the file, the chunk and the bytes
/// (whatever the damage policy: memory is not damage), and a limit above it
/// gives the answer.
#[test]
fn decompressed_chunks_count_against_the_session_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 100 MiB of zeros: empty records (opcode 0, length 0) and a short
    // tail, damage that `--on-error warn` below reads past.
    let size: u64 = 100 << 20;
    let chunk = zstd_zeros(size);
    for i in 0..4 {
        std::fs::write(
            dir.path().join(format!("big_{i}.mcap")),
            mcap_with_bombs(&[(chunk.clone(), size)]),
        )
        .unwrap();
    }
    let d = dir.path().to_str().unwrap();
    let sql = format!("SELECT count(*) AS n FROM '{d}' WHERE length(data) > 0");
    for policy in ["error", "warn"] {
        let r = run(&[
            "--format",
            "csv",
            "--on-error",
            policy,
            "-c",
            "SET datafusion.runtime.memory_limit = '64M'",
            &sql,
        ]);
        assert_eq!(r.code, Some(1), "{policy}: {}", r.stderr);
        assert!(r.stderr.contains("Resources exhausted"), "{}", r.stderr);
        assert!(r.stderr.contains("big_"), "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("needs {size} bytes of memory")),
            "{}",
            r.stderr
        );
    }
    let r = run(&[
        "--format",
        "csv",
        "--on-error",
        "warn",
        "-c",
        "SET datafusion.runtime.memory_limit = '900M'",
        &sql,
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().nth(1), Some("8"), "{}", r.stderr);
}

#[test]
fn a_db3_zstd_bomb_is_capped_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b_0.db3.zstd");
    // A valid SQLite header then zeros: it would inflate to 64 GiB.
    let mut head = Vec::new();
    let first = zstd::bulk::compress(b"SQLite format 3\0", 1).unwrap();
    head.extend_from_slice(&first);
    head.extend_from_slice(&zstd_zeros(64 << 30));
    std::fs::write(&path, head).unwrap();
    let p = path.to_str().unwrap();
    let r = run(&["--format", "csv", &format!("SELECT count(*) FROM '{p}'")]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("b_0.db3.zstd"), "{}", r.stderr);
    assert!(r.stderr.contains("logsql.max_chunk_bytes"), "{}", r.stderr);
}

/// A rosbag2 database of ten messages compressed whole (`b_0.db3.zstd`) in `dir`.
fn db3_zstd(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("b_0.db3");
    crate::ros2_db3::write_bag(&db, 10, 16, true, false);
    let zst = dir.join("b_0.db3.zstd");
    std::fs::write(
        &zst,
        zstd::encode_all(&std::fs::read(&db).unwrap()[..], 3).unwrap(),
    )
    .unwrap();
    std::fs::remove_file(&db).unwrap();
    zst
}

#[test]
fn the_session_chunk_limit_governs_the_summary_of_a_db3_zstd() {
    let dir = tempfile::tempdir().unwrap();
    let zst = db3_zstd(dir.path());
    let sql = format!("SELECT count(*) AS n FROM '{}'", zst.display());
    // The summary decompresses the database: over 4096 bytes, the cap set.
    let r = run(&[
        "--format",
        "csv",
        "-c",
        &format!("SET logsql.max_chunk_bytes = 4096; {sql}"),
    ]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("b_0.db3.zstd"), "{}", r.stderr);
    assert!(r.stderr.contains("more than 4096 bytes"), "{}", r.stderr);
    assert!(r.stderr.contains("logsql.max_chunk_bytes"), "{}", r.stderr);
    // The default cap (and any cap the database fits under) reads it.
    let r = run(&["--format", "csv", &sql]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().nth(1), Some("10"), "{}", r.stderr);
    let r = run(&[
        "--format",
        "csv",
        "-c",
        &format!("SET logsql.max_chunk_bytes = 1048576; {sql}"),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().nth(1), Some("10"), "{}", r.stderr);
}

#[test]
fn stale_temporary_directories_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let zst = db3_zstd(dir.path());
    // A stale directory is made first.
    let tmp = tempfile::tempdir().unwrap();
    let stale = tmp.path().join(format!("logsql-{}", (1u32 << 22) + 5));
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("ros2-x.db3"), b"old").unwrap();
    let sql = format!("SELECT count(*) AS n FROM '{}'", zst.display());
    let out = run_with_tmpdir(tmp.path(), &["--format", "csv", &sql]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.lines().nth(1), Some("10"));
    assert!(!stale.exists(), "the stale directory is removed");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn stale_temporary_directories_are_removed_when_logsql_starts() {
    let tmp = tempfile::tempdir().unwrap();
    // Of a process that ended (a pid above the kernel's maximum, 2^22)...
    let stale = tmp.path().join(format!("logsql-{}", (1u32 << 22) + 9));
    std::fs::create_dir_all(stale.join("sub")).unwrap();
    std::fs::write(stale.join("ros2-x.db3"), b"old").unwrap();
    // ... of a process that runs (this one), and not logsql's at all.
    let running = tmp.path().join(format!("logsql-{}", std::process::id()));
    let other = tmp.path().join("logsql-notes");
    for keep in [&running, &other] {
        std::fs::create_dir_all(keep).unwrap();
    }
    let out = run_with_tmpdir(tmp.path(), &["--format", "csv", "SELECT 1 AS one"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!stale.exists(), "the stale directory is removed");
    assert!(running.exists() && other.exists());
}

#[cfg(unix)]
#[test]
fn metadata_yaml_that_is_a_device_or_a_pipe_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("b_0.db3");
    crate::ros2_db3::write_bag(&db, 10, 16, true, false);
    let p = db.to_str().unwrap();
    let sql = format!("SELECT count(*) AS n FROM '{p}'");
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("metadata.yaml")).unwrap();
    let r = run(&["--format", "csv", &sql]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().nth(1), Some("10"));
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    std::fs::remove_file(dir.path().join("metadata.yaml")).unwrap();
    let fifo = Command::new("mkfifo")
        .arg(dir.path().join("metadata.yaml"))
        .status();
    if fifo.is_ok_and(|s| s.success()) {
        let r = run(&["--format", "csv", &sql]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.stdout.lines().nth(1), Some("10"));
    }
}

#[test]
fn sqlite_virtual_tables_are_not_read_as_rosbag2_tables() {
    for module in ["fts5", "fts4"] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("b_0.db3");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
               serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
             INSERT INTO topics VALUES (1, '/a', 'std_msgs/msg/String', 'cdr', '');
             CREATE VIRTUAL TABLE messages USING {module}(id, topic_id, timestamp, data);
             INSERT INTO messages VALUES (1, 1, 5, 'x');"
        ))
        .unwrap();
        drop(conn);
        let p = db.to_str().unwrap();
        let r = run(&["--format", "csv", &format!("SELECT count(*) FROM '{p}'")]);
        assert_eq!(r.code, Some(1), "{module}: {}", r.stderr);
        assert!(r.stderr.contains("b_0.db3"), "{}", r.stderr);
        assert!(r.stderr.contains("virtual table"), "{}", r.stderr);
    }
}

/// Where links `a -> .` and `b -> .` loop beside a real file of two
/// messages, SQL and `logsql info` read the file and name each link in a warning.
#[cfg(unix)]
#[test]
fn a_directory_whose_links_loop_is_read_with_a_warning_per_link() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.mcap"), mcap_with_bombs(&[])).unwrap();
    std::os::unix::fs::symlink(".", dir.path().join("a")).unwrap();
    std::os::unix::fs::symlink(".", dir.path().join("b")).unwrap();
    let d = dir.path().to_str().unwrap();
    let warned = |stderr: &str| {
        for link in ["a", "b"] {
            let w = format!("{d}/{link}: a symbolic link to {d}, a directory it is in (a loop)");
            assert_eq!(stderr.matches(&w).count(), 1, "{stderr}");
        }
    };
    for sql in [
        format!("SELECT count(*) AS n FROM '{d}/'"),
        format!("SELECT count(*) AS n FROM '{d}/**/*.mcap'"),
        format!(
            "SET datafusion.execution.listing_table_ignore_subdirectory = false; \
             SELECT count(*) AS n FROM '{d}'"
        ),
    ] {
        let r = run(&["--format", "csv", "-c", &sql]);
        assert_eq!(r.code, Some(0), "{sql}: {}", r.stderr);
        assert_eq!(r.stdout.lines().nth(1), Some("2"), "{sql}: {}", r.stderr);
        warned(&r.stderr);
    }
    let r = run(&["info", d]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("run.mcap"), "{}", r.stdout);
    assert!(!r.stdout.contains("/a/"), "{}", r.stdout);
    warned(&r.stderr);
}

/// Directories that each link twice to the next (2^40 paths) are walked
/// once each: no hang, no warning (nothing is lost), every file once.
#[cfg(unix)]
#[test]
fn links_that_fan_out_are_walked_once() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..=40 {
        let sub = dir.path().join(format!("d{i:02}"));
        std::fs::create_dir(&sub).unwrap();
        if i < 40 {
            let next = format!("../d{:02}", i + 1);
            std::os::unix::fs::symlink(&next, sub.join("x")).unwrap();
            std::os::unix::fs::symlink(&next, sub.join("y")).unwrap();
        }
    }
    std::fs::write(dir.path().join("d40/run.mcap"), mcap_with_bombs(&[])).unwrap();
    let d = dir.path().to_str().unwrap();
    let sql = format!(
        "SET datafusion.execution.listing_table_ignore_subdirectory = false; \
         SELECT count(*) AS n FROM '{d}'"
    );
    let r = run(&["--format", "csv", "-c", &sql]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().nth(1), Some("2"), "{}", r.stderr);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let r = run(&["info", d]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.matches("run.mcap").count(), 1, "{}", r.stdout);
}

/// Directories deeper than the walk's limit (32 below the one named) are
/// left out, with a warning naming the first of them.
#[test]
fn a_walk_stops_at_the_depth_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut deep = dir.path().to_path_buf();
    for i in 0..40 {
        deep.push(format!("l{i}"));
        std::fs::create_dir(&deep).unwrap();
        if i == 31 || i == 32 {
            std::fs::write(deep.join("run.mcap"), mcap_with_bombs(&[])).unwrap();
        }
    }
    let d = dir.path().to_str().unwrap();
    let first_left_out = dir.path().join(
        (0..=32)
            .map(|i| format!("l{i}"))
            .collect::<Vec<_>>()
            .join("/"),
    );
    let warning = format!(
        "{}: more than 32 directories below {d}; its files are left out",
        first_left_out.display()
    );
    let sql = format!(
        "SET datafusion.execution.listing_table_ignore_subdirectory = false; \
         SELECT count(*) AS n FROM '{d}'"
    );
    let r = run(&["--format", "csv", "-c", &sql]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().nth(1), Some("2"), "{}", r.stderr);
    assert_eq!(r.stderr.matches(&warning).count(), 1, "{}", r.stderr);
    let r = run(&["info", d]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.matches("run.mcap").count(), 1, "{}", r.stdout);
    assert!(r.stderr.contains(&warning), "{}", r.stderr);
}
