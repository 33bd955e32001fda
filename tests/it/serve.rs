//! `logsql serve`, driven by a real Postgres client (`psql`) over loopback:
//! answers equal the CLI's for the same queries on the same files, psql's
//! catalog commands list the `--table` tables, and what a shared server must
//! not do (read outside its roots, write without `--allow-write`, change the
//! session, admit a wrong password, or a plain connection in TLS-only mode)
//! is refused with a clear error while the server goes on.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const PSQL: &str = "/usr/bin/psql";

/// psql, or `None` (with the reason printed) when it is not installed; with
/// `LOGSQL_REQUIRE_FIXTURES=1` its absence fails the test.
pub(crate) fn psql_available() -> bool {
    if Path::new(PSQL).exists() {
        return true;
    }
    if std::env::var("LOGSQL_REQUIRE_FIXTURES").as_deref() == Ok("1") {
        panic!("{PSQL} is required (LOGSQL_REQUIRE_FIXTURES=1) but missing");
    }
    eprintln!("skipped: {PSQL} is not installed (Debian's postgresql-client)");
    false
}

pub(crate) fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.mcap")
}

/// A `logsql serve` process on a free loopback port, stopped when dropped.
pub(crate) struct Server {
    child: Child,
    port: u16,
    /// The Flight SQL port, when started with `--flight`.
    #[cfg_attr(not(feature = "flight"), allow(dead_code))]
    pub(crate) flight_port: Option<u16>,
    user: String,
    password: Option<String>,
    /// psql's `sslmode`.
    sslmode: &'static str,
}

impl Server {
    /// Starts `logsql serve --pg 127.0.0.1:0 ARGS` and waits for the line
    /// that names its port.
    pub(crate) fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_logsql"))
            .arg("serve")
            .args(["--pg", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start logsql serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut seen = String::new();
        let flight = args.contains(&"--flight");
        let (mut port, mut flight_port) = (None, None);
        while port.is_none() || (flight && flight_port.is_none()) {
            let Some(Ok(line)) = lines.next() else {
                let status = child.wait().expect("wait");
                panic!("logsql serve ended ({status}) before listening:\n{seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            let port_after = |label: &str| {
                let rest = line.split(label).nth(1)?;
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                Some(digits.parse::<u16>().expect("a port"))
            };
            port = port.or(port_after("Postgres wire on 127.0.0.1:"));
            flight_port = flight_port.or(port_after("Arrow Flight SQL on 127.0.0.1:"));
        }
        let port = port.expect("the Postgres port");
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server {
            child,
            port,
            flight_port,
            user: "logsql".to_string(),
            password: None,
            sslmode: "disable",
        }
    }

    /// The Postgres-wire port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// The most memory the server process has held (its peak resident set,
    /// `VmHWM`), where /proc says.
    pub(crate) fn peak_rss(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Runs `sql` through psql (unaligned, no header, `,` between fields).
    pub(crate) fn psql(&self, sql: &str) -> Output {
        self.psql_as(sql, self.password.as_deref())
    }

    fn psql_as(&self, sql: &str, password: Option<&str>) -> Output {
        let mut cmd = self.psql_command();
        cmd.args(["-F", ",", "-c", sql]);
        match password {
            Some(p) => cmd.env("PGPASSWORD", p),
            None => cmd.env_remove("PGPASSWORD"),
        };
        cmd.output().expect("run psql")
    }

    /// psql connecting to this server as its user (with its password and
    /// TLS mode), printing tuples only, unaligned, stopping at the first
    /// error; the caller adds what it runs.
    pub(crate) fn psql_command(&self) -> Command {
        let mut cmd = Command::new(PSQL);
        cmd.args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", &self.user, "-d", "logsql"])
            .env("PGCONNECT_TIMEOUT", "20")
            .env("PGSSLMODE", self.sslmode)
            .stdin(Stdio::null());
        match &self.password {
            Some(p) => cmd.env("PGPASSWORD", p),
            None => cmd.env_remove("PGPASSWORD"),
        };
        cmd
    }

    /// psql's answer to `sql`, which must succeed.
    pub(crate) fn ok(&self, sql: &str) -> String {
        let out = self.psql(sql);
        assert!(
            out.status.success(),
            "psql {sql:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// psql's error for `sql`, which must fail.
    pub(crate) fn err(&self, sql: &str) -> String {
        let out = self.psql(sql);
        assert!(
            !out.status.success(),
            "psql {sql:?} succeeded:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The CLI's CSV answer to `sql`, without its header line.
pub(crate) fn cli_rows(sql: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(["--format", "csv", sql])
        .stdin(Stdio::null())
        .output()
        .expect("run logsql");
    assert!(
        out.status.success(),
        "logsql {sql:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    text.split_once('\n')
        .map(|(_, rows)| rows.to_string())
        .unwrap_or_default()
}

/// A root directory holding a copy of the demo recording.
pub(crate) fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(demo(), dir.path().join("demo.mcap")).expect("copy demo");
    dir
}

#[test]
fn answers_equal_the_clis() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let file = dir.path().join("demo.mcap");
    let f = file.display().to_string();
    let table = format!("demo={f}");
    let server = Server::start(&["--root", dir.path().to_str().unwrap(), "--table", &table]);

    let queries = [
        format!("SELECT topic, count(*) AS n FROM '{f}' GROUP BY topic ORDER BY topic"),
        "SELECT topic, count(*) AS n FROM demo GROUP BY topic ORDER BY topic".to_string(),
        format!("SELECT topic, message_type, message_count FROM topics('{f}') ORDER BY topic"),
        format!(
            "SELECT count(*) AS n, round(avg(linear_acceleration['z']), 6) AS z \
             FROM read_topic('{f}', '/imu')"
        ),
        // Moments.
        format!(
            "SELECT CAST(start_time AS BIGINT) AS s, messages FROM intervals('{f}', '/imu',              'linear_acceleration.z > 9.83', '20 ms', '5 ms') ORDER BY s"
        ),
        // Windows: messages per second of each topic, the busiest seconds.
        format!(
            "SELECT topic, CAST(date_bin(INTERVAL '1 second', log_time) AS BIGINT) AS s, \
             count(*) AS n FROM '{f}' GROUP BY topic, s ORDER BY n DESC, topic, s LIMIT 5"
        ),
        // Both ASOF JOIN spellings.
        format!(
            "SELECT count(*) AS n, count(i.log_time) AS matched \
             FROM (SELECT log_time FROM '{f}' WHERE topic = '/tf') t \
             ASOF JOIN (SELECT log_time FROM '{f}' WHERE topic = '/imu') i \
             MATCH_CONDITION (t.log_time >= i.log_time)"
        ),
        format!(
            "SELECT count(*) AS n, sum(CAST(t.log_time - i.log_time AS BIGINT)) AS lag \
             FROM (SELECT log_time FROM '{f}' WHERE topic = '/tf') t \
             ASOF LEFT JOIN (SELECT log_time FROM '{f}' WHERE topic = '/imu') i \
             ON t.log_time >= i.log_time"
        ),
    ];
    for sql in &queries {
        let over_pg = server.ok(sql);
        let cli = cli_rows(&sql.replace("FROM demo", &format!("FROM '{f}'")));
        assert_eq!(over_pg, cli, "{sql}");
    }
    assert_eq!(
        server.ok("SELECT topic, count(*) AS n FROM demo GROUP BY topic ORDER BY topic"),
        "/camera/compressed,100\n/diagnostics,10\n/imu,2000\n/tf,500\n"
    );
    // Timestamps arrive as `timestamp with time zone`, in UTC.
    assert_eq!(
        server.ok("SELECT min(log_time) FROM demo WHERE topic = '/imu'"),
        "2023-11-14 22:13:20.000000+00\n"
    );
}

#[test]
fn psql_lists_and_describes_the_tables() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let f = dir.path().join("demo.mcap").display().to_string();
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--table",
        &format!("demo={f}"),
        "--table",
        &format!("logs={}", dir.path().display()),
    ]);
    let tables = server.ok("\\dt");
    assert!(tables.contains("public,demo,table"), "{tables}");
    assert!(tables.contains("public,logs,table"), "{tables}");
    let columns = server.ok("\\d demo");
    for column in ["topic", "log_time", "data", "file"] {
        assert!(
            columns
                .lines()
                .any(|l| l.starts_with(&format!("{column},"))),
            "{column} in {columns}"
        );
    }
    let shown = server.ok("SHOW TABLES");
    assert!(shown.contains(",public,demo,"), "{shown}");
    let listed = server.ok("SELECT table_name FROM information_schema.tables \
         WHERE table_schema = 'public' ORDER BY table_name");
    assert_eq!(listed, "demo\nlogs\n");
    assert_eq!(server.ok("SELECT count(*) FROM logs"), "2610\n");
}

#[test]
fn reads_outside_the_roots_are_refused_and_the_server_goes_on() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let inside = dir.path().join("inside");
    std::fs::create_dir(&inside).unwrap();
    std::fs::copy(demo(), inside.join("demo.mcap")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path().join("demo.mcap"), inside.join("link.mcap")).unwrap();
    let server = Server::start(&["--root", inside.to_str().unwrap()]);

    let outside = [
        "/etc/passwd".to_string(),
        dir.path().join("demo.mcap").display().to_string(),
        format!("{}/../demo.mcap", inside.display()),
        inside.join("link.mcap").display().to_string(),
    ];
    for path in &outside {
        let err = server.err(&format!("SELECT count(*) FROM '{path}'"));
        assert!(err.contains("outside the data roots"), "{path}: {err}");
        let err = server.err(&format!("SELECT * FROM topics('{path}')"));
        assert!(err.contains("outside the data roots"), "{path}: {err}");
    }
    // The Postgres parser does not read DataFusion's CREATE EXTERNAL TABLE;
    // other DDL parses, and is refused.
    server.err(&format!(
        "CREATE EXTERNAL TABLE t STORED AS MCAP LOCATION '{}'",
        dir.path().join("demo.mcap").display()
    ));
    let err = server.err("CREATE TABLE t AS SELECT 1 AS a");
    assert!(err.contains("not allowed on a logsql server"), "{err}");
    let err = server.err("CREATE VIEW v AS SELECT 1 AS a");
    assert!(err.contains("not allowed on a logsql server"), "{err}");
    let err = server.err("SELECT * FROM no_such_table");
    assert!(err.contains("not found"), "{err}");
    let err = server.err("SET logsql.msg_path = '/etc'");
    assert!(err.contains("shared by every client"), "{err}");

    let inside_file = inside.join("demo.mcap").display().to_string();
    assert_eq!(
        server.ok(&format!("SELECT count(*) FROM '{inside_file}'")),
        "2610\n"
    );
}

#[test]
fn writes_need_allow_write_and_stay_below_it() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let f = dir.path().join("demo.mcap").display().to_string();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let copy = |target: &Path| {
        format!(
            "COPY (SELECT topic, count(*) AS n FROM '{f}' GROUP BY topic ORDER BY topic) TO '{}'",
            target.display()
        )
    };

    let server = Server::start(&["--root", dir.path().to_str().unwrap()]);
    let target = out_dir.join("counts.csv");
    let err = server.err(&copy(&target));
    assert!(err.contains("writes no files"), "{err}");
    assert!(!target.exists());
    assert_eq!(server.ok("SELECT 1"), "1\n");
    drop(server);

    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--allow-write",
        out_dir.to_str().unwrap(),
    ]);
    let beside = dir.path().join("counts.csv");
    let err = server.err(&copy(&beside));
    assert!(err.contains("outside the data roots"), "{err}");
    assert!(!beside.exists());
    server.ok(&copy(&target));
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "topic,n\n/camera/compressed,100\n/diagnostics,10\n/imu,2000\n/tf,500\n"
    );
}

#[test]
fn a_wrong_password_is_refused() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let secret = dir.path().join("password");
    write_password(&secret, "correct horse\n");
    let mut server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--password-file",
        secret.to_str().unwrap(),
    ]);
    let started = std::time::Instant::now();
    let out = server.psql_as("SELECT 1", Some("wrong"));
    assert!(!out.status.success());
    // A failed login is answered after a delay (a second).
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    let wrong_password = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        wrong_password.contains("FATAL:  password authentication failed for user \"logsql\""),
        "{wrong_password}"
    );
    let out = server.psql_as("SELECT 1", None);
    assert!(!out.status.success());

    server.password = Some("correct horse".to_string());
    assert_eq!(server.ok("SELECT 1"), "1\n");
    // An unknown user is refused as a wrong password is: the same words,
    // after the same exchange (a password is asked for either way).
    server.user = "postgres".to_string();
    let unknown_user = server.err("SELECT 1");
    assert_eq!(
        unknown_user.replace("\"postgres\"", "\"logsql\""),
        wrong_password,
        "{unknown_user}"
    );
    // Another client is served meanwhile.
    server.user = "logsql".to_string();
    assert_eq!(server.ok("SELECT 1"), "1\n");
}

#[test]
fn a_password_file_others_may_read_is_refused() {
    let dir = root();
    let secret = dir.path().join("password");
    std::fs::write(&secret, "correct horse\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
            .args([
                "serve",
                "--root",
                dir.path().to_str().unwrap(),
                "--pg",
                "127.0.0.1:0",
            ])
            .arg("--password-file")
            .arg(&secret)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("the password file may be read or written by other users (mode 0644)")
                && err.contains("chmod 600"),
            "{err}"
        );
    }
}

#[test]
fn a_query_over_its_time_is_cancelled() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--query-timeout",
        "1s",
    ]);
    let f = dir.path().join("demo.mcap").display().to_string();
    // Three copies of the recording crossed: 17 billion rows, far beyond a second.
    let err = server.err(&format!(
        "SELECT count(*) FROM '{f}' a, '{f}' b, '{f}' c \
         WHERE a.sequence + b.sequence + c.sequence >= 0"
    ));
    assert!(err.contains("query timeout"), "{err}");
}

#[test]
fn tls_only_refuses_plain_connections() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !made.is_ok_and(|s| s.success()) {
        if std::env::var("LOGSQL_REQUIRE_FIXTURES").as_deref() == Ok("1") {
            panic!("openssl is required (LOGSQL_REQUIRE_FIXTURES=1) to make a test certificate");
        }
        eprintln!("skipped: openssl could not make a test certificate");
        return;
    }
    let secret = dir.path().join("password");
    write_password(&secret, "s3cret\n");
    let mut server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--password-file",
        secret.to_str().unwrap(),
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--tls-only",
    ]);
    server.password = Some("s3cret".to_string());
    let err = server.err("SELECT 1");
    assert!(err.contains("accepts TLS connections only"), "{err}");
    server.sslmode = "require";
    let f = dir.path().join("demo.mcap").display().to_string();
    assert_eq!(server.ok(&format!("SELECT count(*) FROM '{f}'")), "2610\n");
}

#[test]
fn nested_columns_arrive_as_json_text() {
    if !psql_available() {
        return;
    }
    let dir = root();
    let f = dir.path().join("demo.mcap").display().to_string();
    let server = Server::start(&["--root", dir.path().to_str().unwrap()]);
    for column in ["linear_acceleration", "orientation_covariance", "header"] {
        let sql = format!(
            "SELECT {column} FROM read_topic('{f}', '/imu') ORDER BY log_time LIMIT 3 OFFSET 7"
        );
        let over_pg: Vec<serde_json::Value> = server
            .ok(&sql)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
            .args(["--format", "ndjson", &sql])
            .output()
            .expect("run logsql");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cli: Vec<serde_json::Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()[column].clone())
            .collect();
        assert_eq!(over_pg.len(), 3, "{column}");
        if column == "header" {
            // Times inside a struct are RFC 3339 text in both; compare the rest.
            for (pg, cli) in over_pg.iter().zip(&cli) {
                assert_eq!(pg["seq"], cli["seq"]);
                assert_eq!(pg["frame_id"], cli["frame_id"]);
                assert!(
                    pg["stamp"]
                        .as_str()
                        .unwrap()
                        .starts_with("2023-11-14T22:13:2"),
                    "{pg}"
                );
            }
        } else {
            assert_eq!(over_pg, cli, "{column}");
        }
    }
    // Flat columns keep their types next to a nested one.
    let row = server.ok(&format!(
        "SELECT header['seq'] AS seq, linear_acceleration FROM read_topic('{f}', '/imu') ORDER BY log_time LIMIT 1"
    ));
    assert!(row.starts_with("0,{\"x\":"), "{row}");
}

/// Writes a password file as `serve` takes one: its owner's only.
pub(crate) fn write_password(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}
