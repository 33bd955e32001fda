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

/// A `logsql mcp` process and the client side of its stdio.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
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
        let mut agent = Agent {
            child,
            stdin,
            stdout,
            next: 1,
        };
        let init = agent.call(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "logsql-tests", "version": "1"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "logsql", "{init}");
        agent.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        agent
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines up to its response.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
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
    let dir = root();
    let mut agent = Agent::start(dir.path(), &[]);
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
}

#[test]
fn a_hostile_agent_gets_errors_and_the_server_keeps_answering() {
    let dir = root();
    let outside = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.path().join("demo.mcap"),
        outside.path().join("secret.mcap"),
    )
    .unwrap();
    let mut agent = Agent::start(dir.path(), &["--query-timeout", "3s"]);
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
