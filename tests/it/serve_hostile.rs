//! `logsql serve` against a hostile client, with the real `psql`: statements
//! that used to end the server (a stack overflow, a failed allocation), that
//! changed what other clients see (`SELECT ... INTO`), that read around the
//! roots (a link to a file outside them), and clients that held query slots
//! forever. After each, another client's `SELECT 1` is answered.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::serve::{Server, demo, psql_available, root};

/// Another client is answered at once, so the server is up and not stalled.
fn still_serves(server: &Server) {
    let started = Instant::now();
    assert_eq!(server.ok("SELECT 1"), "1\n");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "SELECT 1 took {:?}",
        started.elapsed()
    );
}

#[test]
fn statements_that_aborted_the_server_fail_alone() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let limit: u64 = 256 << 20;
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--memory-limit",
        "256MiB",
    ]);
    for terms in [5_000, 200_000] {
        let sum = vec!["1"; terms].join("+");
        let err = server.err_of_long(&format!("SELECT {sum}"));
        assert!(
            err.contains("statement too complex"),
            "{terms} terms: {err}"
        );
        still_serves(&server);
    }
    let unions = vec!["SELECT 1"; 5_000].join(" UNION ALL ");
    let err = server.err_of_long(&unions);
    assert!(err.contains("set operations"), "{err}");
    for sql in [
        "SELECT length(repeat(arrow_cast('x', 'LargeUtf8'), 1000000000000))",
        "SELECT length(repeat('x', 2000000000))",
        "SELECT length(lpad('x', 2000000000))",
        "SELECT cardinality(range(1, 10000000000))",
        "SELECT cardinality(array_repeat(1, 1000000000))",
    ] {
        let err = server.err(sql);
        assert!(err.contains("logsql.max_value_bytes"), "{sql}: {err}");
        still_serves(&server);
    }
    // Below the cap the functions answer as before.
    assert_eq!(server.ok("SELECT length(repeat('ab', 1000))"), "2000\n");
    // Refused before anything was allocated: the server's peak memory stays
    // within its limit and a margin for the process itself (the debug
    // build's code, the session, the runtime's threads).
    if let Some(peak) = server.peak_rss() {
        let margin: u64 = 256 << 20;
        assert!(
            peak < limit + margin,
            "peak resident memory {} MiB, over the 256 MiB limit and a 256 MiB margin",
            peak >> 20
        );
    }
}

#[test]
fn a_client_cannot_make_tables_the_others_see() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let server = Server::start(&["--root", dir.path().to_str().unwrap()]);
    let future = dir.path().join("future.mcap").display().to_string();
    for sql in [
        "SELECT 42 AS x INTO t".to_string(),
        format!("SELECT 'forged' AS topic INTO \"{future}\""),
        "SELECT * INTO big FROM generate_series(1, 30000000)".to_string(),
    ] {
        let err = server.err(&sql);
        assert!(
            err.contains("SELECT ... INTO is not allowed"),
            "{sql}: {err}"
        );
    }
    let err = server.err("SELECT * FROM t");
    assert!(err.contains("not found"), "{err}");
    // The recording arrives: every client reads it, not a forged table.
    std::fs::copy(demo(), &future).unwrap();
    assert_eq!(
        server.ok(&format!("SELECT count(*) FROM '{future}'")),
        "2610\n"
    );
    // Nor can a client list the files the others read.
    let err = server.err("SELECT path FROM metadata_cache()");
    assert!(
        err.contains("metadata_cache() is not available on a logsql server"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_link_inside_a_root_shows_nothing_outside_it() {
    if !psql_available() {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.csv");
    std::fs::write(&secret, "secret_column,password\n1,hunter2\n").unwrap();
    let recording = outside.path().join("secret.mcap");
    std::fs::copy(demo(), &recording).unwrap();
    let dir = root();
    let d = dir.path().join("d");
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::symlink(&secret, d.join("leak.csv")).unwrap();
    let r = dir.path().join("r");
    std::fs::create_dir(&r).unwrap();
    std::os::unix::fs::symlink(&recording, r.join("leak.mcap")).unwrap();
    let server = Server::start(&["--root", dir.path().to_str().unwrap()]);
    // From here on, any open of the outside files is an event.
    #[cfg(target_os = "linux")]
    let watched = Watched::new(&[&secret, &recording]);
    let listed = format!("{}/", d.display());
    let recordings = format!("{}/", r.display());
    for sql in [
        format!("SELECT * FROM '{listed}' LIMIT 0"),
        format!("DESCRIBE '{listed}'"),
        format!("EXPLAIN SELECT * FROM '{listed}'"),
        format!("SELECT * FROM '{}'", d.join("leak.csv").display()),
        format!("SELECT count(*) FROM '{recordings}'"),
        format!("SELECT * FROM topics('{recordings}')"),
        format!("SELECT * FROM '{}' LIMIT 1", r.join("leak.mcap").display()),
        format!("SELECT * FROM intervals('{recordings}', '/imu', 'linear_acceleration.z > 0')"),
        // A condition reading outside through a subquery.
        format!(
            "SELECT * FROM intervals('{}', '/imu', 'linear_acceleration.z > (SELECT count(*) FROM ''{}'')')",
            dir.path().join("demo.mcap").display(),
            d.join("leak.csv").display()
        ),
    ] {
        let out = server.psql(&sql);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{sql} succeeded: {text}");
        assert!(text.contains("outside the data roots"), "{sql}: {text}");
        assert!(
            !text.contains("secret_column") && !text.contains("hunter2"),
            "{sql} showed the outside file: {text}"
        );
    }
    #[cfg(target_os = "linux")]
    assert_eq!(
        watched.opened(),
        Vec::<String>::new(),
        "files outside the root were opened"
    );
    still_serves(&server);
}

/// Files watched for opens (inotify), by anyone.
#[cfg(target_os = "linux")]
struct Watched {
    inotify: inotify::Inotify,
    names: std::collections::HashMap<inotify::WatchDescriptor, String>,
}

#[cfg(target_os = "linux")]
impl Watched {
    fn new(paths: &[&std::path::Path]) -> Self {
        let inotify = inotify::Inotify::init().expect("inotify");
        let mut names = std::collections::HashMap::new();
        for path in paths {
            let wd = inotify
                .watches()
                .add(path, inotify::WatchMask::OPEN)
                .expect("watch");
            names.insert(wd, path.display().to_string());
        }
        Self { inotify, names }
    }

    /// The watched files opened since they were watched.
    fn opened(mut self) -> Vec<String> {
        let mut buffer = [0u8; 4096];
        let mut opened = Vec::new();
        loop {
            match self.inotify.read_events(&mut buffer) {
                Ok(events) => {
                    let before = opened.len();
                    opened.extend(events.map(|e| self.names[&e.wd].clone()));
                    if opened.len() == before {
                        return opened;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return opened,
                Err(e) => panic!("reading inotify events: {e}"),
            }
        }
    }
}

#[test]
fn statement_timeout_ends_the_execution_too() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let server = Server::start(&["--root", dir.path().to_str().unwrap()]);
    let f = dir.path().join("demo.mcap").display().to_string();
    // The server's own timeout is its default (minutes); the client's ends it.
    // Two statements, as psql sends two -c: the setting holds for the second.
    let out = server
        .psql_command()
        .args(["-c", "SET statement_timeout = '1s'"])
        .args([
            "-c",
            &format!(
                "SELECT count(*) FROM '{f}' a, '{f}' b, '{f}' c \
                 WHERE a.sequence + b.sequence + c.sequence >= 0"
            ),
        ])
        .output()
        .expect("run psql");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the cross join finished");
    assert!(err.contains("statement timeout"), "{err}");
    still_serves(&server);
}

#[test]
fn a_client_that_stops_reading_frees_its_slot_at_the_timeout() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--max-queries",
        "1",
        "--query-timeout",
        "3s",
    ]);
    let f = dir.path().join("demo.mcap").display().to_string();
    // One client opens a cursor over a cross join, fetches one row and then
    // sits in its transaction (psql runs `sleep` between statements).
    let mut holder = server.psql_script();
    let script = format!(
        "BEGIN;\nDECLARE c CURSOR FOR SELECT a.sequence FROM '{f}' a, '{f}' b;\n\
         FETCH 1 FROM c;\n\\! sleep 15\nCOMMIT;\n"
    );
    holder
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    // Past the holder's timeout, its slot is free for everyone else.
    std::thread::sleep(Duration::from_secs(5));
    still_serves(&server);
    let _ = holder.kill();
    let _ = holder.wait();
}

#[test]
fn a_client_that_leaves_during_its_query_frees_its_slot_at_once() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--max-queries",
        "1",
        "--query-timeout",
        "5min",
    ]);
    // A query that would compute for hours and send nothing until done...
    let mut leaver = server.psql_script();
    leaver
        .stdin
        .take()
        .unwrap()
        .write_all(b"SELECT count(*) FROM generate_series(1, 9223372036854775807);\n")
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // ...and its client gone: the one slot is free for the next client.
    let _ = leaver.kill();
    let _ = leaver.wait();
    still_serves(&server);
}

#[test]
fn sockets_that_never_log_in_or_sit_idle_free_their_connection_slots() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--max-connections",
        "2",
        "--login-timeout",
        "1s",
        "--idle-timeout",
        "5s",
    ]);
    let addr = format!("127.0.0.1:{}", server.port());
    // Two sockets that connect and say nothing hold both slots: a client is
    // refused while they are open...
    let silent: Vec<std::net::TcpStream> = (0..2)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let refused = server.psql("SELECT 1");
    assert!(!refused.status.success());
    // ...until the login timeout closes them (a read sees the end).
    for mut socket in silent {
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut byte = [0u8; 1];
        let read = std::io::Read::read(&mut socket, &mut byte);
        assert!(matches!(read, Ok(0)), "{read:?}");
    }
    still_serves(&server);
    // Two clients logged in and idle hold both slots until the idle
    // timeout.
    let idle: Vec<std::process::Child> = (0..2)
        .map(|_| {
            let mut holder = server.psql_script_answering();
            holder
                .stdin
                .take()
                .unwrap()
                .write_all(b"SELECT 1;\n\\! sleep 30\nSELECT 2;\n")
                .unwrap();
            // Logged in and answered: from here it sits idle.
            let mut first = String::new();
            let mut out = std::io::BufReader::new(holder.stdout.take().unwrap());
            std::io::BufRead::read_line(&mut out, &mut first).unwrap();
            assert_eq!(first, "1\n");
            holder
        })
        .collect();
    assert!(!server.psql("SELECT 1").status.success());
    std::thread::sleep(Duration::from_secs(6));
    still_serves(&server);
    for mut holder in idle {
        let _ = holder.kill();
        let _ = holder.wait();
    }
}

impl Server {
    /// psql's error for a statement too long for a command line (read from
    /// a file), which must fail.
    fn err_of_long(&self, sql: &str) -> String {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), format!("{sql};\n")).unwrap();
        let out = self
            .psql_command()
            .arg("-f")
            .arg(file.path())
            .output()
            .expect("run psql");
        assert!(
            !out.status.success(),
            "{} bytes of SQL succeeded",
            sql.len()
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// [`Server::psql_script`] with its answers on a pipe.
    fn psql_script_answering(&self) -> std::process::Child {
        self.psql_reading(Stdio::piped())
    }

    /// A psql reading its statements from stdin (stdout and stderr dropped).
    fn psql_script(&self) -> std::process::Child {
        self.psql_reading(Stdio::null())
    }

    fn psql_reading(&self, stdout: Stdio) -> std::process::Child {
        self.psql_command()
            .arg("-q")
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(Stdio::null())
            .spawn()
            .expect("run psql")
    }
}
