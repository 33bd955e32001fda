//! `logsql mcp`, driven as an agent's client drives it: JSON-RPC over the
//! process's stdin and stdout (MCP's stdio transport). Every tool answers
//! with the real values of the demo files, and a hostile agent (writes, DDL,
//! `SET`, several statements, paths outside the root, a result of a billion
//! rows, a query past its time limit) gets errors it can read while the
//! server keeps answering, and nothing is written.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use base64::Engine as _;
use serde_json::{Value, json};

/// A server of MCP and the client side of its transport.
struct Agent {
    child: Child,
    link: Link,
    next: u64,
}

/// How the client reaches the server.
enum Link {
    /// `logsql mcp`: JSON-RPC lines over its stdin and stdout.
    Stdio {
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
    },
    /// `logsql serve --mcp`: each message a POST to `/mcp` (streamable
    /// HTTP), with the bearer token when the server has a password.
    Http { addr: String, token: Option<String> },
}

impl Agent {
    /// `logsql mcp --root ROOT EXTRA...`, initialized.
    fn start(root: &Path, extra: &[&str]) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_logsql"))
            .arg("mcp")
            .arg("--root")
            .arg(root)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Agent {
            child,
            link: Link::Stdio { stdin, stdout },
            next: 1,
        }
        .initialized()
    }

    /// `logsql serve --root ROOT --mcp 127.0.0.1:0 EXTRA...` (in ROOT, so
    /// that relative paths in SQL are the root's as under `logsql mcp`),
    /// initialized over HTTP.
    fn start_http(root: &Path, extra: &[&str], token: Option<&str>) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_logsql"))
            .args([
                "serve",
                "--pg",
                "127.0.0.1:0",
                "--mcp",
                "127.0.0.1:0",
                "--root",
            ])
            .arg(root)
            .args(extra)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("serve said where MCP listens").unwrap();
            if let Some(rest) = line.split("MCP over HTTP on ").nth(1) {
                break rest.trim().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Agent {
            child,
            link: Link::Http {
                addr,
                token: token.map(str::to_string),
            },
            next: 1,
        }
        .initialized()
    }

    fn initialized(mut self) -> Agent {
        let init = self.call(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "logsql-tests", "version": "1"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "logsql", "{init}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        self
    }

    /// Sends a message; over HTTP, returns the status and the JSON-RPC
    /// message of the answer, if one came.
    fn send(&mut self, message: Value) -> Option<Value> {
        match &mut self.link {
            Link::Stdio { stdin, .. } => {
                writeln!(stdin, "{message}").unwrap();
                stdin.flush().unwrap();
                None
            }
            Link::Http { addr, token } => {
                let (status, body) = post(addr, token.as_deref(), &message.to_string());
                assert!(status == 200 || status == 202, "HTTP {status}: {body}");
                (!body.trim().is_empty()).then(|| serde_json::from_str(&body).unwrap())
            }
        }
    }

    /// Sends a request and reads up to its response.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let answer =
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        if let Some(answer) = answer {
            assert_eq!(answer["id"], id, "{answer}");
            return answer;
        }
        let Link::Stdio { stdout, .. } = &mut self.link else {
            panic!("no answer over HTTP to {method}");
        };
        loop {
            let mut line = String::new();
            let n = stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the server ended while {method} was pending");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Calls a tool: whether it failed, and its content.
    fn tool(&mut self, name: &str, arguments: Value) -> (bool, Vec<Value>) {
        let r = self.call("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &r["result"];
        assert!(
            result.is_object(),
            "{name}: a protocol error, not a tool result: {r}"
        );
        let failed = result["isError"].as_bool().unwrap_or(false);
        (
            failed,
            result["content"].as_array().cloned().unwrap_or_default(),
        )
    }

    /// A tool's first text, which must not be an error.
    fn text(&mut self, name: &str, arguments: Value) -> String {
        let (failed, content) = self.tool(name, arguments.clone());
        let text = content[0]["text"].as_str().unwrap_or_default().to_string();
        assert!(!failed, "{name} {arguments}: {text}");
        text
    }

    /// A tool's error text, which it must be.
    fn error(&mut self, name: &str, arguments: Value) -> String {
        let (failed, content) = self.tool(name, arguments.clone());
        let text = content[0]["text"].as_str().unwrap_or_default().to_string();
        assert!(failed, "{name} {arguments} should fail: {text}");
        text
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs `body` to `http://ADDR/mcp` (one connection, closed after the
/// answer); the status and the body (the JSON of an event stream's `data:`
/// line, if the server streamed).
fn post(addr: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        socket,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         {auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut socket, &mut answer).unwrap();
    let (head, rest) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let head = head.to_ascii_lowercase();
    let mut body = match head.contains("transfer-encoding: chunked") {
        true => dechunk(rest),
        false => rest.to_string(),
    };
    if head.contains("content-type: text/event-stream") {
        body = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| !d.is_empty())
            .unwrap_or_default()
            .to_string();
    }
    (status, body)
}

/// A chunked HTTP body's bytes.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}

/// A root holding copies of the demo files.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for f in ["demo.mcap", "demo.bag", "images.mcap"] {
        std::fs::copy(data.join(f), dir.path().join(f)).unwrap();
    }
    dir
}

#[test]
fn every_tool_answers_with_the_recordings_values() {
    every_tool_answers(Agent::start);
}

#[test]
fn every_tool_answers_over_http_beside_the_other_front_ends() {
    every_tool_answers(|root, extra| Agent::start_http(root, extra, None));
}

fn every_tool_answers(start: impl Fn(&Path, &[&str]) -> Agent) {
    let dir = root();
    let mut agent = start(dir.path(), &[]);
    let tools = agent.call("tools/list", json!({}));
    let mut names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "describe_recording",
            "describe_topic",
            "list_recordings",
            "plot",
            "query",
            "sample_frames"
        ]
    );
    let query_tool = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "query")
        .unwrap();
    assert_eq!(
        query_tool["inputSchema"]["required"],
        json!(["sql"]),
        "{query_tool}"
    );

    // The SQL reference, as resources.
    let resources = agent.call("resources/list", json!({}));
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(
        uris.contains(&"logsql://docs/decoded-messages"),
        "{resources}"
    );
    let page = agent.call(
        "resources/read",
        json!({"uri": "logsql://docs/decoded-messages"}),
    );
    let text = page["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("read_topic"), "{page}");
    assert!(uris.contains(&"logsql://docs/moments"), "{resources}");
    let page = agent.call("resources/read", json!({"uri": "logsql://docs/moments"}));
    let text = page["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("intervals(source, topic, condition"),
        "{page}"
    );
    let page = agent.call("resources/read", json!({"uri": "logsql://docs/transforms"}));
    let text = page["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("tf_lookup(file, target_frame"), "{page}");
    let missing = agent.call("resources/read", json!({"uri": "logsql://docs/nope"}));
    assert!(missing["error"].is_object(), "{missing}");

    let list = agent.text("list_recordings", json!({}));
    assert!(list.ends_with("3 recordings"), "{list}");
    assert!(list.contains("demo.mcap (4 topics"), "{list}");
    assert!(list.contains("  /imu (sensor_msgs/Imu)"), "{list}");
    let list = agent.text("list_recordings", json!({"topic": "/odom"}));
    assert!(
        list.contains("demo.bag") && !list.contains("demo.mcap"),
        "{list}"
    );

    let facts: Value =
        serde_json::from_str(&agent.text("describe_recording", json!({"path": "demo.mcap"})))
            .unwrap();
    assert_eq!(facts["format"], "mcap");
    let imu = facts["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["topic"] == "/imu")
        .unwrap();
    assert_eq!(imu["messages"], 2000, "{imu}");
    assert_eq!(imu["message_types"], json!(["sensor_msgs/Imu"]), "{imu}");
    assert!(facts["timeline"]["topics"]["/imu"].is_object(), "{facts}");

    let topic = agent.text(
        "describe_topic",
        json!({"path": "demo.mcap", "topic": "/imu"}),
    );
    assert!(
        topic.contains("| sensor_msgs/Imu | ros1             | 2000"),
        "{topic}"
    );
    assert!(topic.contains("  linear_acceleration: Struct("), "{topic}");
    assert!(topic.contains("3 rows"), "{topic}");
    assert!(
        topic.contains("field statistics over its 2000 messages"),
        "{topic}"
    );
    assert!(topic.contains("  linear_acceleration.z: min "), "{topic}");

    // The counts the engine gives, as a table and as JSON.
    let (failed, content) = agent.tool(
        "query",
        json!({"sql": "SELECT topic, count(*) AS n FROM 'demo.mcap' GROUP BY topic ORDER BY topic"}),
    );
    assert!(!failed, "{content:?}");
    let table = content[0]["text"].as_str().unwrap();
    assert!(table.contains("| /imu               | 2000 |"), "{table}");
    let rows: Value = serde_json::from_str(content[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(rows["row_count"], 4);
    assert_eq!(rows["truncated"], false);
    assert_eq!(rows["rows"][2], json!({"topic": "/imu", "n": 2000}));

    // Frames as PNG images of the size asked.
    let (failed, content) = agent.tool(
        "sample_frames",
        json!({"path": "images.mcap", "topic": "/cam/jpeg", "count": 2, "size": 16}),
    );
    assert!(!failed, "{content:?}");
    let images: Vec<&Value> = content.iter().filter(|c| c["type"] == "image").collect();
    assert!(!images.is_empty(), "{content:?}");
    for image in images {
        assert_eq!(image["mimeType"], "image/png");
        let png = base64::engine::general_purpose::STANDARD
            .decode(image["data"].as_str().unwrap())
            .unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let (w, h) = (
            u32::from_be_bytes(png[16..20].try_into().unwrap()),
            u32::from_be_bytes(png[20..24].try_into().unwrap()),
        );
        // The 32x24 camera, its longer side brought to 16.
        assert_eq!((w, h), (16, 12));
    }

    // A chart of a query, as a PNG of the size asked.
    let (failed, content) = agent.tool(
        "plot",
        json!({"sql": "SELECT log_time, linear_acceleration.z AS z FROM read_topic('demo.mcap', '/imu')",
               "kind": "step", "title": "z", "width": 400, "height": 300}),
    );
    assert!(!failed, "{content:?}");
    assert_eq!(content[0]["text"], "z against log_time: 400 x 300 PNG");
    let png = base64::engine::general_purpose::STANDARD
        .decode(content[1]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 400);
    let err = agent.error("plot", json!({"sql": "SELECT 'a' AS x, 'b' AS y"}));
    assert!(!err.is_empty());
    let err = agent.error("plot", json!({"sql": "COPY (SELECT 1) TO '/tmp/x.csv'"}));
    assert!(
        err.contains("not allowed") || err.contains("writes no files"),
        "{err}"
    );
}

#[test]
fn a_hostile_agent_gets_errors_and_the_server_keeps_answering() {
    a_hostile_agent_gets_errors(Agent::start);
}

#[test]
fn a_hostile_agent_over_http_gets_errors_and_the_server_keeps_answering() {
    a_hostile_agent_gets_errors(|root, extra| Agent::start_http(root, extra, None));
}

fn a_hostile_agent_gets_errors(start: impl Fn(&Path, &[&str]) -> Agent) {
    let dir = root();
    let outside = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.path().join("demo.mcap"),
        outside.path().join("secret.mcap"),
    )
    .unwrap();
    let mut agent = start(dir.path(), &["--query-timeout", "3s"]);
    let written = dir.path().join("out.csv");
    let secret = outside.path().join("secret.mcap");
    let secret = secret.display();
    for sql in [
        format!("COPY (SELECT 1) TO '{}'", written.display()),
        "CREATE TABLE t AS SELECT 1".to_string(),
        "CREATE EXTERNAL TABLE t STORED AS CSV LOCATION '/etc/passwd'".to_string(),
        "SET datafusion.execution.batch_size = 1".to_string(),
        "DROP TABLE IF EXISTS t".to_string(),
        "SELECT 1; SELECT 2".to_string(),
        format!("SELECT count(*) FROM '{secret}'"),
        "SELECT count(*) FROM '../secret.mcap'".to_string(),
        "SELECT * FROM '/etc/passwd'".to_string(),
        "SELECT * FROM topics('/')".to_string(),
        "SELECT * FROM 'http://127.0.0.1:1/x.mcap'".to_string(),
        "INSERT INTO t VALUES (1)".to_string(),
    ] {
        let why = agent.error("query", json!({"sql": sql}));
        assert!(!why.is_empty(), "{sql}");
    }
    for (tool, path) in [
        ("describe_recording", secret.to_string()),
        ("describe_recording", "../secret.mcap".to_string()),
        ("list_recordings", "/".to_string()),
        ("describe_topic", "/etc/passwd".to_string()),
    ] {
        let why = agent.error(tool, json!({"path": path, "topic": "/imu"}));
        assert!(
            why.contains("outside the data roots"),
            "{tool} {path}: {why}"
        );
    }
    // A billion rows come back cut at the rows asked; the query stops.
    let (failed, content) = agent.tool(
        "query",
        json!({"sql": "SELECT * FROM generate_series(1, 1000000000)", "max_rows": 5}),
    );
    assert!(!failed, "{content:?}");
    let table = content[0]["text"].as_str().unwrap();
    assert!(table.contains("5 rows (cut at 5 rows"), "{table}");
    // A cartesian join past the time limit is stopped.
    let why = agent.error(
        "query",
        json!({"sql": "SELECT count(*) FROM generate_series(1, 100000000) a, generate_series(1, 100000000) b"}),
    );
    assert!(why.to_lowercase().contains("time"), "{why}");
    // Unknown columns name the ones there are.
    let why = agent.error("query", json!({"sql": "SELECT nope FROM 'demo.mcap'"}));
    assert!(why.contains("topic"), "{why}");
    // Malformed arguments are an error, not a dead server.
    let r = agent.call(
        "tools/call",
        json!({"name": "query", "arguments": {"sql": 5}}),
    );
    assert!(
        r["error"].is_object() || r["result"]["isError"] == true,
        "{r}"
    );
    // Still answering, and nothing was written.
    let answer = agent.text(
        "query",
        json!({"sql": "SELECT count(*) AS n FROM 'demo.bag'"}),
    );
    assert!(answer.contains("1 row"), "{answer}");
    assert!(!written.exists());
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["demo.bag", "demo.mcap", "images.mcap"]);
}

#[test]
fn mcp_over_http_needs_the_password_as_a_bearer_token() {
    let dir = root();
    let secret = dir.path().join("password");
    crate::serve::write_password(&secret, "correct horse\n");
    let secret = secret.to_str().unwrap().to_string();
    let mut agent = Agent::start_http(
        dir.path(),
        &["--password-file", &secret],
        Some("correct horse"),
    );
    let text = agent.text(
        "query",
        json!({"sql": "SELECT count(*) AS n FROM 'demo.mcap'"}),
    );
    assert!(text.contains("2610"), "{text}");
    let Link::Http { addr, .. } = &agent.link else {
        unreachable!()
    };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    for token in [None, Some("wrong")] {
        let (status, body) = post(addr, token, &list);
        assert_eq!(status, 401, "{token:?}: {body}");
        assert!(body.contains("bearer token"), "{body}");
    }
    // Another path is not the endpoint.
    let mut socket = std::net::TcpStream::connect(addr.as_str()).unwrap();
    write!(
        socket,
        "GET /other HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer correct horse\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut socket, &mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    // A Host that is not this machine's (DNS rebinding) is refused.
    let mut socket = std::net::TcpStream::connect(addr.as_str()).unwrap();
    write!(
        socket,
        "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer correct horse\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{list}",
        list.len()
    )
    .unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut socket, &mut answer).unwrap();
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The agent with the token still gets answers.
    let text = agent.text("query", json!({"sql": "SELECT 1 AS one"}));
    assert!(text.contains('1'), "{text}");
}

#[test]
fn mcp_beyond_loopback_without_a_password_is_refused_at_start() {
    let dir = root();
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args([
            "serve",
            "--pg",
            "127.0.0.1:0",
            "--mcp",
            "0.0.0.0:0",
            "--root",
        ])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("an MCP endpoint beyond this machine needs --password-file"),
        "{err}"
    );
}

#[test]
fn with_allow_write_an_agent_exports_clips_and_datasets() {
    exports(Agent::start);
}

#[test]
fn with_allow_write_over_http_an_agent_exports_clips_and_datasets() {
    exports(|root, extra| Agent::start_http(root, extra, None));
}

/// The CLI's one-line CSV answer to `sql`.
fn cli_row(sql: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(["--format", "csv", sql])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

fn exports(start: impl Fn(&Path, &[&str]) -> Agent) {
    let dir = root();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    std::fs::copy(data.join("robot.mcap"), dir.path().join("robot.mcap")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut agent = start(dir.path(), &["--allow-write", out.path().to_str().unwrap()]);
    let tools = agent.call("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"export_clip") && names.contains(&"export_dataset"),
        "{names:?}"
    );

    // One second of /imu, both ends included, as MCAP; and the same window as a bag.
    let window = json!({"path": "demo.mcap", "start": "2023-11-14T22:13:21Z",
                        "end": "2023-11-14T22:13:22Z", "topics": ["/imu"], "name": "imu-clip"});
    let text = agent.text("export_clip", window.clone());
    assert!(
        text.contains("imu-clip.mcap: 201 messages of demo.mcap"),
        "{text}"
    );
    let clip = out.path().join("imu-clip.mcap");
    assert_eq!(
        cli_row(&format!(
            "SELECT count(*), min(log_time), max(log_time), min(topic), max(message_type) FROM '{}'",
            clip.display()
        )),
        "201,2023-11-14T22:13:21.000000000Z,2023-11-14T22:13:22.000000000Z,/imu,sensor_msgs/Imu"
    );
    let mut bag = window.clone();
    bag["format"] = json!("bag");
    bag["name"] = json!("imu-clip");
    let text = agent.text("export_clip", bag);
    assert!(text.contains("imu-clip.bag: 201 messages"), "{text}");
    // Names, paths and windows it refuses.
    for (change, wanted) in [
        (json!({"name": "../escape"}), "plain file name"),
        (json!({"name": "sub/dir"}), "plain file name"),
        (json!({"name": ".hidden"}), "plain file name"),
        (json!({"name": "imu-clip"}), "exists in the write directory"),
        (
            json!({"path": "/etc/passwd", "name": "x"}),
            "outside the data roots",
        ),
        (
            json!({"end": "2023-11-14T22:13:20Z", "name": "y"}),
            "is before start",
        ),
        (
            json!({"format": "parquet", "name": "z"}),
            "mcap, bag or db3",
        ),
    ] {
        let mut args = window.clone();
        for (k, v) in change.as_object().unwrap() {
            args[k] = v.clone();
        }
        let err = agent.error("export_clip", args.clone());
        assert!(err.contains(wanted), "{args}: {err}");
    }
    assert!(!out.path().join("x.mcap").exists() && !dir.path().join("escape.mcap").exists());

    // A dataset from a spec.
    let spec = "input = \"robot.mcap\"\nfps = 10\ntask = \"reach\"\n\n[features]\n\"observation.state\" = { topic = \"/joint_states\", field = \"position\" }\n";
    let text = agent.text("export_dataset", json!({"spec": spec, "name": "reach"}));
    assert!(text.contains("frames, 1 episodes"), "{text}");
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("reach/meta/info.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(info["total_episodes"], 1);
    let err = agent.error("export_dataset", json!({"spec": "fps = ", "name": "bad"}));
    assert!(!err.is_empty());
    // And it goes on answering.
    let list = agent.text("list_recordings", json!({}));
    assert!(list.contains("robot.mcap"), "{list}");
}

#[test]
fn with_a_catalog_list_recordings_filters_by_device_time_topic_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for (robot, file) in [
        ("r1", "demo.mcap"),
        ("r2", "demo.bag"),
        ("r2", "robot.mcap"),
    ] {
        let d = dir.path().join(format!("robot={robot}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(data.join(file), d.join(file)).unwrap();
    }
    // The catalog is read under the roots too.
    let catalog = dir.path().join("catalog");
    let cat = catalog.to_str().unwrap();
    let indexed = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args([
            "index",
            dir.path().to_str().unwrap(),
            "--catalog",
            cat,
            "--device-key",
            "robot",
        ])
        .output()
        .unwrap();
    assert!(
        indexed.status.success(),
        "{}",
        String::from_utf8_lossy(&indexed.stderr)
    );
    let mut agent = Agent::start(dir.path(), &["--catalog", cat]);
    let all = agent.text("list_recordings", json!({}));
    assert!(all.ends_with("3 recordings (from the catalog)"), "{all}");
    assert!(
        all.contains("demo.mcap (4 topics, 188393 bytes, 2023-11-14T22:13:20"),
        "{all}"
    );
    let r2 = agent.text("list_recordings", json!({"device": "r2"}));
    assert!(
        r2.ends_with("2 recordings (from the catalog)") && !r2.contains("demo.mcap"),
        "{r2}"
    );
    // demo.bag spans 22:13:20 to 22:13:22; demo.mcap to 22:13:29.
    let late = agent.text(
        "list_recordings",
        json!({"start": "2023-11-14T22:13:25Z", "end": "2023-11-14T22:13:26Z"}),
    );
    assert!(
        late.ends_with("1 recordings (from the catalog)") && late.contains("demo.mcap"),
        "{late}"
    );
    let tf = agent.text("list_recordings", json!({"topic": "/tf_static"}));
    assert!(
        tf.ends_with("1 recordings (from the catalog)") && tf.contains("demo.bag"),
        "{tf}"
    );
    let none = agent.text("list_recordings", json!({"metadata": {"no": "such"}}));
    assert!(
        none.ends_with("no recordings found in the catalog"),
        "{none}"
    );
    let err = agent.error("list_recordings", json!({"start": "soon"}));
    assert!(err.contains("start: soon"), "{err}");
    drop(agent);
    // Without a catalog, the catalog's filters say what they need.
    let mut agent = Agent::start(dir.path(), &[]);
    let err = agent.error("list_recordings", json!({"device": "r1"}));
    assert!(err.contains("--catalog CAT"), "{err}");
}
