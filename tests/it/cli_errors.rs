//! The `logsql` binary's errors, run as processes: remote paths name their
//! cause (connection refused, DNS, HTTP 403/404, missing credentials) and fail
//! in seconds, directories without logs, pipes, unknown export topics,
//! ambiguous times, `info --format json`, and global options a subcommand
//! ignores. Every remote test talks to 127.0.0.1 only (and `.invalid`, which
//! never resolves).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::fixtures;

/// A sanity bound for a command that must fail promptly (never a hang); not a
/// speed assertion.
const BOUND: Duration = Duration::from_secs(30);

const PIPE_ERROR: &str = "is a pipe, not a regular file: logsql needs random access; \
                          save it to a file first";

fn compressed() -> Option<PathBuf> {
    fixtures::file("mcap", "samples/compressed.mcap")
}

/// Runs logsql with `args` and extra environment `env` (`None` removes the
/// variable), without any `AWS_*` or `LOGSQL_REMOTE_*` variable of the test's
/// own environment; kills it and fails the test if it runs past [`BOUND`].
fn run(args: &[&str], env: &[(&str, Option<&str>)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_logsql"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") || k.starts_with("LOGSQL_REMOTE_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut child = cmd.spawn().expect("run logsql");
    let started = Instant::now();
    while child.try_wait().expect("wait for logsql").is_none() {
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("logsql {args:?} still running after {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("logsql output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

/// Asserts exit code 1, nothing on stdout, and exactly `error: <message>` on stderr.
fn fails_with(out: &Output, message: &str) {
    assert_eq!(
        stderr(out),
        format!("error: {message}\n"),
        "exit {:?}",
        out.status
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(out).is_empty(), "{}", stdout(out));
}

/// A loopback port nothing listens on (bound, then released).
fn refused_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A tiny HTTP/1.1 server on 127.0.0.1: `/forbidden.mcap` answers 403,
/// `/compressed.mcap` the fixture (HEAD, GET with `Range`), anything else 404.
/// Serves until the test process ends.
fn serve(file: &Path) -> u16 {
    let body = std::fs::read(file).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let _ = answer(stream, &body);
            });
        }
    });
    port
}

/// Answers the requests of one connection.
fn answer(stream: TcpStream, body: &[u8]) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut request = String::new();
        if reader.read_line(&mut request)? == 0 {
            return Ok(());
        }
        let mut range = None;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            match name.to_ascii_lowercase().as_str() {
                "range" => range = Some(value.trim().to_string()),
                "content-length" => length = value.trim().parse().unwrap_or(0),
                _ => {}
            }
        }
        let mut discard = vec![0; length];
        reader.read_exact(&mut discard)?;
        let mut parts = request.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let (status, bytes, content_range) = match path {
            "/forbidden.mcap" => ("403 Forbidden", &b"denied"[..], None),
            "/compressed.mcap" => match range.as_deref().and_then(|r| byte_range(r, body.len())) {
                Some((a, b)) => (
                    "206 Partial Content",
                    &body[a..b],
                    Some(format!("bytes {a}-{}/{}", b - 1, body.len())),
                ),
                None => ("200 OK", body, None),
            },
            _ => ("404 Not Found", &b"no such file"[..], None),
        };
        let mut head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\
             Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\nAccept-Ranges: bytes\r\n",
            bytes.len()
        );
        if let Some(cr) = content_range {
            head.push_str(&format!("Content-Range: {cr}\r\n"));
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        if method != "HEAD" {
            out.write_all(bytes)?;
        }
        out.flush()?;
    }
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` as a half-open range within `len`.
fn byte_range(header: &str, len: usize) -> Option<(usize, usize)> {
    let spec = header.strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let range = match (a.parse::<usize>().ok(), b.parse::<usize>().ok()) {
        (Some(a), Some(b)) => (a, (b + 1).min(len)),
        (Some(a), None) => (a, len),
        (None, Some(n)) => (len.saturating_sub(n), len),
        (None, None) => return None,
    };
    (range.0 < range.1).then_some(range)
}

#[test]
fn refused_connection_is_named_promptly() {
    let port = refused_port();
    let url = format!("http://127.0.0.1:{port}/x.mcap");
    let started = Instant::now();
    let out = run(&[&format!("SELECT count(*) FROM '{url}'")], &[]);
    fails_with(
        &out,
        &format!("{url}: connection refused (nothing listens at this address)"),
    );
    assert!(started.elapsed() < BOUND);
    // `info` takes URLs, with the same message.
    let out = run(&["info", &url], &[]);
    fails_with(
        &out,
        &format!("{url}: connection refused (nothing listens at this address)"),
    );
}

#[test]
fn unresolvable_host_is_a_dns_failure() {
    let url = "http://nonexistent.invalid/x.mcap";
    let out = run(&[&format!("SELECT count(*) FROM '{url}'")], &[]);
    fails_with(
        &out,
        &format!("{url}: cannot resolve the host name (DNS lookup failed)"),
    );
}

#[test]
fn http_403_404_and_a_served_file() {
    let Some(f) = compressed() else { return };
    let port = serve(&f);
    let base = format!("http://127.0.0.1:{port}");
    let out = run(
        &[&format!("SELECT count(*) FROM '{base}/forbidden.mcap'")],
        &[],
    );
    fails_with(
        &out,
        &format!("{base}/forbidden.mcap: access denied (HTTP 403): check the credentials"),
    );
    let out = run(
        &[&format!("SELECT count(*) FROM '{base}/missing.mcap'")],
        &[],
    );
    fails_with(&out, &format!("{base}/missing.mcap: not found (HTTP 404)"));
    let out = run(&["info", &format!("{base}/missing.mcap")], &[]);
    fails_with(&out, &format!("{base}/missing.mcap: not found (HTTP 404)"));

    // The file itself is read with range requests: queries and `info` work.
    let url = format!("{base}/compressed.mcap");
    let out = run(
        &[
            "--format",
            "csv",
            &format!("SELECT topic, count(*) AS n FROM '{url}' GROUP BY topic ORDER BY topic"),
        ],
        &[],
    );
    assert_eq!(
        stdout(&out),
        "topic,n\n/diagnostics,52\n/tf,774\n",
        "{}",
        stderr(&out)
    );
    let remote = run(&["info", &url], &[]);
    let local = run(&["info", f.to_str().unwrap()], &[]);
    assert_eq!(remote.status.code(), Some(0), "{}", stderr(&remote));
    let (remote, local) = (stdout(&remote), stdout(&local));
    assert!(
        remote.starts_with(&format!("file:         {url}\n")),
        "{remote}"
    );
    // Everything but the file line is the same as the local file's summary.
    let tail = |s: &str| s.split_once('\n').unwrap().1.to_string();
    assert_eq!(tail(&remote), tail(&local));
    assert!(remote.contains("messages:     826\n"), "{remote}");
}

#[test]
fn s3_without_credentials_says_where_it_looked() {
    let endpoint = format!("http://127.0.0.1:{}", refused_port());
    let env = [
        ("AWS_EC2_METADATA_DISABLED", Some("true")),
        ("AWS_ENDPOINT", Some(endpoint.as_str())),
        ("AWS_ALLOW_HTTP", Some("true")),
        ("AWS_REGION", Some("us-east-1")),
    ];
    let out = run(&["SELECT count(*) FROM 's3://bucket/x.mcap'"], &env);
    fails_with(
        &out,
        "s3://bucket/x.mcap: no AWS credentials found: looked for AWS_ACCESS_KEY_ID/\
         AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN and \
         AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/_FULL_URI in the environment (profile files \
         such as ~/.aws/credentials are not read: export the keys, or set \
         AWS_SKIP_SIGNATURE=true for a public bucket); the instance metadata service is \
         disabled (AWS_EC2_METADATA_DISABLED)",
    );
    // Without AWS_EC2_METADATA_DISABLED the instance metadata service is asked
    // (here a refused loopback port standing for it).
    let metadata = format!("http://127.0.0.1:{}", refused_port());
    let mut asked = env.to_vec();
    asked[0] = ("AWS_METADATA_ENDPOINT", Some(metadata.as_str()));
    let out = run(&["SELECT count(*) FROM 's3://bucket/x.mcap'"], &asked);
    fails_with(
        &out,
        "s3://bucket/x.mcap: no AWS credentials found: looked for AWS_ACCESS_KEY_ID/\
         AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN and \
         AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/_FULL_URI in the environment (profile files \
         such as ~/.aws/credentials are not read: export the keys, or set \
         AWS_SKIP_SIGNATURE=true for a public bucket); the instance metadata service \
         (AWS_METADATA_ENDPOINT, default http://169.254.169.254; AWS_EC2_METADATA_DISABLED=true \
         skips it) failed: connection refused (nothing listens at this address)",
    );
    // With credentials, the refused endpoint is the cause.
    let mut env = env.to_vec();
    env.extend([
        ("AWS_ACCESS_KEY_ID", Some("test")),
        ("AWS_SECRET_ACCESS_KEY", Some("test")),
    ]);
    let out = run(&["SELECT count(*) FROM 's3://bucket/x.mcap'"], &env);
    fails_with(
        &out,
        "s3://bucket/x.mcap: connection refused (nothing listens at this address)",
    );
    let out = run(&["info", "s3://bucket/x.mcap"], &env);
    fails_with(
        &out,
        "s3://bucket/x.mcap: connection refused (nothing listens at this address)",
    );
}

#[test]
fn remote_limits_are_checked() {
    let url = format!("http://127.0.0.1:{}/x.mcap", refused_port());
    let sql = format!("SELECT count(*) FROM '{url}'");
    let out = run(&[&sql], &[("LOGSQL_REMOTE_RETRIES", Some("many"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "LOGSQL_REMOTE_RETRIES=\"many\": expected a whole number of retries (0: none)"
        ),
        "{}",
        stderr(&out)
    );
    let out = run(&[&sql], &[("LOGSQL_REMOTE_TIMEOUT", Some("0"))]);
    assert!(
        stderr(&out)
            .contains("LOGSQL_REMOTE_TIMEOUT=\"0\": expected a number of seconds greater than 0"),
        "{}",
        stderr(&out)
    );
    // Valid limits: the cause again.
    let out = run(
        &[&sql],
        &[
            ("LOGSQL_REMOTE_RETRIES", Some("0")),
            ("LOGSQL_REMOTE_TIMEOUT", Some("1.5")),
        ],
    );
    fails_with(
        &out,
        &format!("{url}: connection refused (nothing listens at this address)"),
    );
}

#[test]
fn a_server_that_never_answers_times_out() {
    // Accepts connections and reads requests, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().flatten() {
            open.push(stream);
        }
    });
    let url = format!("http://127.0.0.1:{port}/x.mcap");
    let env = [
        ("LOGSQL_REMOTE_RETRIES", Some("0")),
        ("LOGSQL_REMOTE_REQUEST_TIMEOUT", Some("1")),
    ];
    let out = run(&[&format!("SELECT count(*) FROM '{url}'")], &env);
    fails_with(
        &out,
        &format!(
            "{url}: timed out (connections wait 5s and requests 1s, with 0 retries: \
             LOGSQL_REMOTE_TIMEOUT, LOGSQL_REMOTE_REQUEST_TIMEOUT, LOGSQL_REMOTE_RETRIES)"
        ),
    );
}

#[test]
fn directories_without_logs_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("emptydir");
    let named = dir.path().join("x.mcap");
    let notes = dir.path().join("notes");
    for d in [&empty, &named, &notes] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(notes.join("readme.txt"), "not a log").unwrap();
    for d in [&empty, &named, &notes] {
        for path in [d.display().to_string(), format!("{}/", d.display())] {
            let out = run(&[&format!("SELECT count(*) FROM '{path}'")], &[]);
            fails_with(&out, &format!("{path}: no log files in this directory"));
            let out = run(&["info", &path], &[]);
            fails_with(&out, &format!("{path}: no log files in this directory"));
        }
    }
}

#[test]
fn info_lists_directories_and_globs_as_queries_do() {
    let Some(f) = compressed() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::copy(&f, dir.path().join("sub/run[1].mcap")).unwrap();
    let d = dir.path().display().to_string();
    // A file whose name looks like a pattern names itself; a glob matches.
    for path in [format!("{d}/sub/run[1].mcap"), format!("{d}/sub/*.mcap")] {
        let out = run(&["info", "--format", "ndjson", &path], &[]);
        let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(v["file"], format!("{d}/sub/run[1].mcap"));
        assert_eq!(v["messages"], 826);
    }
    // A damaged file of a directory is reported, and the others still printed.
    std::fs::write(dir.path().join("junk.mcap"), b"not a log file").unwrap();
    let out = run(&["info", "--format", "ndjson", "--no-timeline", &d], &[]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["messages"], 826);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{d}/junk.mcap: not a recognised log file"))
            && err.ends_with(&format!("1 of 2 files could not be read: {d}/junk.mcap\n")),
        "{err}"
    );
}

#[test]
fn pipes_and_devices_are_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("run.mcap");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo unavailable");
        return;
    }
    // Nothing ever writes to the pipe: opening it would block forever.
    let p = fifo.display().to_string();
    for args in [
        vec![format!("SELECT count(*) FROM '{p}'")],
        vec![format!("SELECT * FROM topics('{p}')")],
        vec![format!("SELECT count(*) FROM read_topic('{p}', '/tf')")],
        vec!["info".to_string(), p.clone()],
        vec![
            "export".to_string(),
            p.clone(),
            dir.path().join("o.parquet").display().to_string(),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args, &[]);
        fails_with(&out, &format!("{p} {PIPE_ERROR}"));
    }
    assert!(!dir.path().join("o.parquet").exists());
    // In a directory, a pipe is not a log file: skipped, never opened.
    if let Some(f) = compressed() {
        std::fs::copy(&f, dir.path().join("compressed.mcap")).unwrap();
        let d = format!("{}/", dir.path().display());
        let out = run(
            &[
                "--format",
                "csv",
                &format!("SELECT count(*) AS n FROM '{d}'"),
            ],
            &[],
        );
        assert_eq!(stdout(&out), "n\n826\n", "{}", stderr(&out));
        let out = run(&["info", "--format", "ndjson", &d], &[]);
        let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(v["messages"], 826);
    }
    let out = run(&["SELECT count(*) FROM '/dev/null'"], &[]);
    fails_with(
        &out,
        "/dev/null is a character device, not a regular file: logsql needs random access; \
         save it to a file first",
    );
}

#[test]
fn export_refuses_unknown_topics_and_bare_integer_times() {
    let Some(f) = compressed() else { return };
    let f = f.display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.parquet");
    let t = target.to_str().unwrap();
    let out = run(
        &["export", &f, t, "--topic", "/nope", "--topic", "/tf"],
        &[],
    );
    fails_with(
        &out,
        &format!("--topic /nope: no such topic in {f}; its topics: /diagnostics, /tf"),
    );
    let out = run(&["export", &f, t, "--topic", "/nope", "--decode"], &[]);
    fails_with(
        &out,
        &format!("--topic /nope: no such topic in {f}; its topics: /diagnostics, /tf"),
    );
    let out = run(&["export", &f, t, "--start", "1490149581"], &[]);
    fails_with(
        &out,
        "--start: time '1490149581' has no unit: as seconds it is 2017-03-22T02:26:21Z, as \
         nanoseconds 1970-01-01T00:00:01.490149581Z; write 1490149581s or 1490149581ns \
         (or ms, us), or an RFC 3339 time",
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // With its unit, the same number is a time: the window's messages are written.
    let out = run(
        &[
            "export",
            &f,
            t,
            "--start",
            "1490149581s",
            "--end",
            "1490149582s",
        ],
        &[],
    );
    assert!(
        stdout(&out).starts_with("exported 106 rows to "),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn info_prints_json() {
    let Some(f) = compressed() else { return };
    let f = f.display().to_string();
    let out = run(&["info", "--format", "json", &f], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let files = v.as_array().expect("one array");
    assert_eq!(files.len(), 1);
    let s = &files[0];
    assert_eq!(s["file"], f.as_str());
    assert_eq!(s["format"], "mcap");
    assert_eq!(s["size_bytes"], 562_088);
    assert_eq!(s["messages"], 826);
    assert_eq!(s["start"], "2017-03-22T02:26:20.103843113Z");
    assert_eq!(s["start_ns"], 1_490_149_580_103_843_113u64);
    assert_eq!(s["end"], "2017-03-22T02:26:27.884601617Z");
    assert_eq!(s["end_ns"], 1_490_149_587_884_601_617u64);
    assert_eq!(s["duration_ns"], 7_780_758_504u64);
    assert_eq!(s["chunks"], 413);
    assert_eq!(s["indexed"], true);
    assert_eq!(s["index"], "read from the file's index (summary)");
    assert_eq!(s["damage"], serde_json::Value::Null);
    assert_eq!(
        s["compression"],
        serde_json::json!([{"codec": "zstd", "chunks": 413, "compressed_bytes": 470_222,
                            "uncompressed_bytes": 1_969_384}])
    );
    assert_eq!(s["properties"]["profile"], "ros1");
    let topics = s["topics"].as_array().unwrap();
    let names: Vec<&str> = topics
        .iter()
        .map(|t| t["topic"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["/diagnostics", "/tf"]);
    assert_eq!(topics[1]["messages"], 774);
    assert_eq!(
        topics[1]["message_types"],
        serde_json::json!(["tf2_msgs/TFMessage"])
    );
    assert_eq!(topics[1]["encodings"], serde_json::json!(["ros1"]));
    let hz = topics[1]["frequency_hz"].as_f64().unwrap();
    assert!((hz - 99.476).abs() < 0.001, "{hz}");

    // ndjson: one object per line, one line per file.
    let out = run(&["info", "--format", "ndjson", &f, &f], &[]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["messages"], 826);
    }
    let out = run(&["info", "--format", "csv", &f], &[]);
    fails_with(
        &out,
        "info prints text (--format table), json or ndjson, not csv",
    );
}

#[test]
fn global_options_a_subcommand_ignores_are_errors() {
    let Some(f) = compressed() else { return };
    let f = f.display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.parquet");
    let t = target.to_str().unwrap();
    for (args, flag, sub, reads) in [
        (
            vec!["info", "--on-error", "warn", &f],
            "--on-error",
            "info",
            "--format, --no-verify",
        ),
        (
            vec!["--target-partitions", "2", "info", &f],
            "--target-partitions",
            "info",
            "--format, --no-verify",
        ),
        (
            vec!["export", &f, t, "--format", "csv"],
            "--format",
            "export",
            "--on-error, --target-partitions, --descriptors, --msg-path, --no-verify, --catalog, --events",
        ),
        (
            vec!["--max-width", "10", "export", &f, t],
            "--max-width",
            "export",
            "--on-error, --target-partitions, --descriptors, --msg-path, --no-verify, --catalog, --events",
        ),
    ] {
        let out = run(&args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!(
                "error: {flag} does not apply to `logsql {sub}` (of the global options it \
                 reads only {reads})\n"
            )),
            "{args:?}: {err}"
        );
        assert!(stdout(&out).is_empty());
    }
    assert!(!target.exists());
    // The options each one reads are accepted.
    let out = run(&["--no-verify", "info", "--format", "json", &f], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(
        &[
            "export",
            &f,
            t,
            "--on-error",
            "warn",
            "--target-partitions",
            "1",
            "--topic",
            "/tf",
        ],
        &[],
    );
    assert!(
        stdout(&out).starts_with("exported 774 rows to "),
        "{}",
        stderr(&out)
    );
    let out = run(&["topics", &f, "--format", "csv", "--max-width", "8"], &[]);
    assert!(stdout(&out).starts_with("topic,"), "{}", stderr(&out));
}

#[test]
fn statements_too_deep_or_values_too_large_fail_without_aborting() {
    let sum = vec!["1"; 5000].join("+");
    let out = run(&[&format!("SELECT {sum} AS n")], &[]);
    fails_with(
        &out,
        "Error during planning: statement too complex: an expression nests more than 1000 \
         levels deep (write long lists as IN (...), or split the statement)",
    );
    // Just under the limit, the statement is planned and answered.
    let sum = vec!["1"; 999].join("+");
    let out = run(&["--format", "csv", &format!("SELECT {sum} AS n")], &[]);
    assert_eq!(stdout(&out), "n\n999\n", "{}", stderr(&out));
    let out = run(
        &["SELECT length(repeat(arrow_cast('x', 'LargeUtf8'), 1000000000000)) AS n"],
        &[],
    );
    fails_with(
        &out,
        "Resources exhausted: repeat: the value would hold 931.3 GiB, more than the 1.0 GiB one \
         value may hold (logsql.max_value_bytes)",
    );
    // The cap is a session option.
    let out = run(
        &[
            "-c",
            "SET logsql.max_value_bytes = 1000",
            "SELECT length(repeat('x', 2000)) AS n",
        ],
        &[],
    );
    assert!(
        stderr(&out).contains("repeat: the value would hold"),
        "{}",
        stderr(&out)
    );
    // The operator `||` is under the cap too, on strings (a chain of them
    // doubled a value at every step) and on arrays (planned by DataFusion
    // as its built-in array_concat).
    let capped = |sql: &str| run(&["-c", "SET logsql.max_value_bytes = 1000000", sql], &[]);
    let csv = |sql: &str| {
        let set = "SET logsql.max_value_bytes = 1000000";
        run(&["-c", set, "--format", "csv", sql], &[])
    };
    let out = capped("SELECT length(repeat('x', 600000) || repeat('y', 600000)) AS n");
    fails_with(
        &out,
        "Resources exhausted: ||: the value would hold 1.1 MiB, more than the 976.6 KiB one \
         value may hold (logsql.max_value_bytes)",
    );
    let wide = "array_repeat(repeat('x', 1000), 600)";
    let out = capped(&format!("SELECT cardinality({wide} || {wide}) AS n"));
    assert!(
        stderr(&out).contains("array_concat: the value would hold"),
        "{}",
        stderr(&out)
    );
    // Under the cap, `||` answers as before: NULL on either side is NULL,
    // numbers are cast, names are the operator's.
    let out = csv(
        "SELECT 'a' || 'b' AS ab, 'a' || NULL IS NULL AS null_side, 'n' || 1 AS cast, \
         length(repeat('x', 400000) || repeat('y', 400000)) AS n",
    );
    assert_eq!(
        stdout(&out),
        "ab,null_side,cast,n\nab,true,n1,800000\n",
        "{}",
        stderr(&out)
    );
    let out = csv("SELECT 'a' || 'b'");
    assert_eq!(
        stdout(&out),
        "\"Utf8(\"\"a\"\") || Utf8(\"\"b\"\")\"\nab\n",
        "{}",
        stderr(&out)
    );
}
