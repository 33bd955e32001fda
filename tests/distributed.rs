//! Distributed execution (feature `distributed`): two workers on loopback run
//! the scans of fleet queries and must return exactly what one process
//! returns; the plan codec must survive a byte round trip with every option.
//!
//! `cargo test --features distributed --test distributed` (CI runs it).
//! The coordinator has no local worker: every scan task is encoded, sent to a
//! worker over gRPC and decoded there from bytes.

use logsql_fixtures as fixtures;
#[path = "../benches/support/gen.rs"]
mod gen_support;

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_distributed::{
    DistributedExec, DistributedExt, DistributedMetricsFormat, explain_analyze,
};
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use logsql::DataRoots;
use logsql::distributed::{
    ClusterAuth, LogsqlCodec, StaticWorkers, Token, WorkerOptions, coordinator_state_builder,
    serve_listener,
};

const HOUR: u64 = 3_600_000_000_000;

/// The token the tests' workers and coordinators share.
const TOKEN: &str = "test-token-0123456789";

fn auth() -> ClusterAuth {
    ClusterAuth {
        token: Some(Token::new(TOKEN).unwrap()),
        ..ClusterAuth::default()
    }
}

/// Starts `n` workers on 127.0.0.1 (ephemeral ports) that take the test
/// token and read anything (`/` is their data root), and returns their addresses.
async fn start_workers(n: usize) -> Vec<String> {
    start_workers_with(n, &["/"]).await
}

/// [`start_workers`] with other data roots.
async fn start_workers_with(n: usize, roots: &[&str]) -> Vec<String> {
    start_workers_limited(n, roots, None).await
}

/// [`start_workers_with`], each query's part on a worker limited to
/// `memory_limit` bytes.
async fn start_workers_limited(
    n: usize,
    roots: &[&str],
    memory_limit: Option<usize>,
) -> Vec<String> {
    let options = WorkerOptions {
        auth: auth(),
        roots: DataRoots::parse(roots).unwrap(),
        insecure: false,
        memory_limit,
    };
    let mut addresses = Vec::new();
    for _ in 0..n {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        addresses.push(listener.local_addr().unwrap().to_string());
        let options = options.clone();
        tokio::spawn(async move {
            serve_listener(listener, options)
                .await
                .expect("worker serves");
        });
    }
    addresses
}

/// A coordinator for `workers` that splits every scan into small byte ranges
/// (64 KiB a partition), so each file is cut across tasks and workers.
fn coordinator(workers: &[String]) -> SessionContext {
    coordinator_with(workers, auth())
}

/// [`coordinator`] authenticating with `auth`.
fn coordinator_with(workers: &[String], auth: ClusterAuth) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(3);
    let state = coordinator_state_builder(config, StaticWorkers::parse(workers).unwrap(), auth)
        .unwrap()
        .with_distributed_file_scan_config_bytes_per_partition(64 * 1024)
        .unwrap()
        .build();
    let ctx = SessionContext::new_with_state(state);
    logsql::register(&ctx).unwrap();
    ctx
}

/// `sql`'s result as a table, or its error as text.
async fn run(ctx: &SessionContext, sql: &str) -> String {
    let result = async { ctx.sql(sql).await?.collect().await }.await;
    match result {
        Ok(batches) => pretty_format_batches(&batches).unwrap().to_string(),
        Err(e) => format!("error: {e}"),
    }
}

/// Six 10-second generated recordings an hour apart under hive directories
/// (`fleet/robot=r{1,2}/date=...`), and a copy of real fixtures of every format in
/// `mixed/` (none are in the repo; the copies live in the temp dir).
fn fleet(dir: &Path) -> bool {
    for i in 0..6u64 {
        let sub = dir.join(format!(
            "fleet/robot=r{}/date=2026-05-0{}",
            i % 2 + 1,
            i / 3 + 1
        ));
        std::fs::create_dir_all(&sub).unwrap();
        let opts = gen_support::Options {
            seconds: 10,
            image_bytes: 1000,
            chunk_size: 65536,
            start: gen_support::START_NS + i * HOUR,
            ..Default::default()
        };
        gen_support::generate(&sub.join(format!("run{i}.mcap")), &opts).unwrap();
    }
    let mixed = dir.join("mixed");
    std::fs::create_dir_all(&mixed).unwrap();
    for (format, file) in [
        ("mcap", "samples/compressed.mcap"),
        ("mcap", "decode/json.mcap"),
        ("mcap", "decode/protobuf.mcap"),
        ("rosbag", "robot_localization-test1.bag"),
        ("apollo", "generated/small.record"),
        ("bddf", "basic.bddf"),
        ("carla", "synth_0916_basic.log"),
    ] {
        let Some(path) = fixtures::file(format, file) else {
            return false;
        };
        let name = file.replace('/', "_");
        std::fs::copy(path, mixed.join(name)).unwrap();
    }
    true
}

/// Every query of a fleet returns the same result on two workers as in one process.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fleet_queries_on_two_workers_match_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    if !fleet(tmp.path()) {
        return;
    }
    let root = tmp.path().display().to_string();
    let workers = start_workers(2).await;
    let distributed = coordinator(&workers);
    let local = logsql::session_context();
    let window = format!(
        "log_time >= to_timestamp_nanos({}) AND log_time < to_timestamp_nanos({})",
        gen_support::START_NS + 2 * HOUR + 4_000_000_000,
        gen_support::START_NS + 2 * HOUR + 5_000_000_000,
    );
    let queries = [
        // Every message of the generated fleet, with payload hashes.
        format!(
            "SELECT robot, date, topic, count(*) AS n, min(log_time), max(log_time), \
             sum(length(data)) AS bytes, count(DISTINCT md5(data)) AS payloads \
             FROM '{root}/fleet/' GROUP BY robot, date, topic ORDER BY robot, date, topic"
        ),
        // Row by row in a one-second window (pruned on the workers).
        format!(
            "SELECT topic, log_time, sequence, md5(data) AS h FROM '{root}/fleet/' \
             WHERE {window} ORDER BY log_time, topic"
        ),
        // Partition columns and LIMIT.
        format!("SELECT count(*) FROM '{root}/fleet/' WHERE robot = 'r2' AND topic = '/imu'"),
        format!("SELECT count(*) FROM (SELECT * FROM '{root}/fleet/' WHERE topic = '/tf' LIMIT 7)"),
        // Real files of every format in one directory, each read by its own format.
        format!(
            "SELECT file, topic, count(*) AS n, min(log_time), max(log_time), sum(length(data)), \
             count(DISTINCT md5(data)) FROM '{root}/mixed/' GROUP BY file, topic ORDER BY file, topic"
        ),
        // Summary table functions (memory scans, serialized by DataFusion).
        format!("SELECT * FROM topics('{root}/mixed/') ORDER BY topic, message_type"),
        // Decoded topics: ROS1 (compiled on the worker), JSON typed from samples
        // (shipped as a portable schema), protobuf.
        format!(
            "SELECT count(*), sum(linear_acceleration.x), min(orientation.w), max(header.seq) \
             FROM read_topic('{root}/fleet/', '/imu')"
        ),
        format!(
            "SELECT * FROM read_topic('{root}/fleet/robot=r1/date=2026-05-01/run0.mcap', '/diagnostics') \
             ORDER BY log_time LIMIT 5"
        ),
        format!(
            "SELECT * FROM read_topic('{root}/mixed/decode_json.mcap', '/events') ORDER BY log_time"
        ),
        format!(
            "SELECT * FROM read_topic('{root}/mixed/decode_protobuf.mcap', '/fixture/all_types', 'flatten') \
             ORDER BY log_time"
        ),
        // Typed tables.
        format!(
            "SELECT count(*), min(log_time), max(log_time), sum(x), sum(yaw) \
             FROM positions('{root}/mixed/synth_0916_basic.log')"
        ),
        format!("SELECT * FROM series('{root}/mixed/basic.bddf') ORDER BY 1"),
        format!(
            "SELECT count(*), min(log_time), max(log_time), sum(value[1]), sum(value[3]), max(sample) FROM \
             (SELECT * FROM pod('{root}/mixed/basic.bddf', 'imu/accel'))"
        ),
    ];
    for sql in &queries {
        let expected = run(&local, sql).await;
        assert!(!expected.starts_with("error"), "{sql}: {expected}");
        let got = run(&distributed, sql).await;
        assert_eq!(got, expected, "{sql}");
    }

    // The scans did run on the workers: the executed plan is distributed, its
    // scan stage has one task per worker, and the scan metrics the workers sent
    // back add up to every chunk of the six files, each read once.
    let plan = distributed
        .sql(&queries[0])
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    collect(Arc::clone(&plan), distributed.task_ctx())
        .await
        .unwrap();
    let shown = explain_analyze(Arc::clone(&plan), DistributedMetricsFormat::Aggregated)
        .await
        .unwrap();
    assert!(plan.downcast_ref::<DistributedExec>().is_some(), "{shown}");
    assert!(shown.contains("tasks=2"), "{shown}");
    assert!(shown.contains("t1: DataSourceExec"), "{shown}");
    let local_plan = run(&local, &format!("EXPLAIN ANALYZE {}", queries[0])).await;
    for name in ["chunks_total", "chunks_read", "files_total"] {
        assert_eq!(
            scan_metric(&shown, name),
            scan_metric(&local_plan, name),
            "{name}: {shown}\n{local_plan}"
        );
    }
    // 90 chunks, of which the 6 that hold only schema and channel records (the
    // index shows no message in them) are never read.
    assert_eq!(scan_metric(&shown, "chunks_total"), "90", "{shown}");
    assert_eq!(scan_metric(&shown, "chunks_read"), "84", "{shown}");
    assert_eq!(scan_metric(&shown, "messages_read"), "15.66 K", "{shown}");
}

/// The value of metric `name` on the (first) scan line of a rendered plan.
fn scan_metric(plan: &str, name: &str) -> String {
    let key = format!(" {name}=");
    let line = plan
        .lines()
        .find(|l| l.contains(&key) && l.contains("metrics=["))
        .unwrap_or_else(|| panic!("no {name} in:\n{plan}"));
    let rest = &line[line.find(&key).unwrap() + key.len()..];
    rest.split([',', ']']).next().unwrap().trim().to_string()
}

/// `logsql.on_error` reaches the workers: a truncated file fails the query
/// with its name and offset (strict), or yields what one process yields
/// (`warn`, and the default `auto`, for which a cut file is an unfinished
/// recording). A worker's scan reports its error in its own stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn damage_policy_travels_to_the_workers() {
    let Some(src) = fixtures::file("mcap", "samples/compressed.mcap") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(src).unwrap();
    let cut = tmp.path().join("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let sql = format!(
        "SELECT topic, count(*), sum(length(data)) FROM '{}' GROUP BY topic ORDER BY topic",
        cut.display()
    );
    let workers = start_workers(2).await;
    let distributed = coordinator(&workers);
    let local = logsql::session_context();
    let lenient = run(&local, &sql).await;
    assert!(!lenient.starts_with("error"), "{lenient}");
    assert_eq!(run(&distributed, &sql).await, lenient);
    // The worker's error comes back whole: file, byte offset, cause.
    distributed
        .sql("SET logsql.on_error = 'error'")
        .await
        .unwrap();
    let err = run(&distributed, &sql).await;
    assert!(err.starts_with("error"), "{err}");
    assert!(
        err.contains(
            "cut.mcap: truncated mcap file: Chunk record (opcode 0x06) of 1113 bytes \
             extends past the end of the data (385 bytes left) at byte 374331"
        ),
        "{err}"
    );
    for ctx in [&local, &distributed] {
        ctx.sql("SET logsql.on_error = 'warn'").await.unwrap();
    }
    let expected = run(&local, &sql).await;
    assert_eq!(expected, lenient);
    assert_eq!(run(&distributed, &sql).await, expected);
}

/// `test_msgs/msg/BasicTypes.msg`, which the Humble bag `convert_a` uses
/// without storing it (and logsql does not carry).
const BASIC_TYPES_MSG: &str = "bool bool_value\nbyte byte_value\nchar char_value\n\
    float32 float32_value\nfloat64 float64_value\nint8 int8_value\nuint8 uint8_value\n\
    int16 int16_value\nuint16 uint16_value\nint32 int32_value\nuint32 uint32_value\n\
    int64 int64_value\nuint64 uint64_value\n";

/// `plan`'s result as a table, or its error as text.
async fn collect_text(plan: Arc<dyn ExecutionPlan>, ctx: &SessionContext) -> String {
    match collect(plan, ctx.task_ctx()).await {
        Ok(batches) => pretty_format_batches(&batches).unwrap().to_string(),
        Err(e) => format!("error: {e}"),
    }
}

/// `sql` planned in `ctx` (its `read_topic` tables resolved).
async fn physical_plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .create_physical_plan()
        .await
        .unwrap()
}

/// `read_topic` of ROS 2 bags that store no message definitions (rosbag2
/// before Iron): the definitions planning resolved (the bundled common
/// interfaces, the coordinator's `logsql.msg_path`) travel with the plan, so
/// the workers decode what one process decodes, even where the msg path does
/// not exist (it is deleted here once the queries are planned).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ros2_definitions_resolved_at_planning_travel_to_the_workers() {
    let Some(ros2) = fixtures::dir("ros2") else {
        return;
    };
    let workers = start_workers(2).await;
    let distributed = coordinator(&workers);
    let local = logsql::session_context();
    // wbag: five databases (440 KiB), std_msgs/msg/String from the bundled
    // interfaces, row by row.
    let wbag = format!(
        "SELECT log_time, data FROM read_topic('{}/', 'AAA') ORDER BY log_time, data",
        ros2.join("sqlite3/wbag").display()
    );
    let expected = run(&local, &wbag).await;
    assert_eq!(expected.lines().count(), 804 + 4, "{expected}");
    assert!(
        expected.contains("| 1970-01-01T00:00:00.000001001Z | Hello, world! 1 - 1    |"),
        "{expected}"
    );
    let plan = physical_plan(&distributed, &wbag).await;
    assert!(plan.downcast_ref::<DistributedExec>().is_some());
    let got = collect_text(plan, &distributed).await;
    assert!(got == expected, "got:\n{got}");

    // test_msgs/msg/BasicTypes (not bundled) from the coordinator's msg path,
    // in 16 copies of a 24 KiB database (384 KiB: a scan of several tasks;
    // every message has uint8_value 100, its other fields zero).
    let tmp = tempfile::tempdir().unwrap();
    let bag = tmp.path().join("convert");
    std::fs::create_dir_all(&bag).unwrap();
    let db = ros2.join("sqlite3/convert_a/rewriter_a_0.db3");
    for i in 0..16 {
        std::fs::copy(&db, bag.join(format!("rewriter_a_{i}.db3"))).unwrap();
    }
    let msgs = tmp.path().join("msgs");
    std::fs::create_dir_all(msgs.join("test_msgs/msg")).unwrap();
    std::fs::write(msgs.join("test_msgs/msg/BasicTypes.msg"), BASIC_TYPES_MSG).unwrap();
    let set = format!("SET logsql.msg_path = '{}'", msgs.display());
    let sql = format!(
        "SELECT count(*) AS n, count(DISTINCT file) AS files, min(log_time) AS first, \
         max(log_time) AS last, sum(uint8_value) AS u8, sum(CAST(bool_value AS INT)) AS bools \
         FROM read_topic('{}/', 'b_basictypes')",
        bag.display()
    );
    let mut plans = Vec::new();
    for ctx in [&local, &distributed] {
        ctx.sql(&set).await.unwrap();
        plans.push(physical_plan(ctx, &sql).await);
    }
    assert!(plans[1].downcast_ref::<DistributedExec>().is_some());
    std::fs::remove_dir_all(&msgs).unwrap();
    let expected = collect_text(Arc::clone(&plans[0]), &local).await;
    assert_eq!(
        expected,
        "+-----+-------+--------------------------+--------------------------+-------+-------+
| n   | files | first                    | last                     | u8    | bools |
+-----+-------+--------------------------+--------------------------+-------+-------+
| 800 | 16    | 1970-01-01T00:00:00.001Z | 1970-01-01T00:00:00.099Z | 80000 | 0     |
+-----+-------+--------------------------+--------------------------+-------+-------+"
    );
    assert_eq!(
        collect_text(Arc::clone(&plans[1]), &distributed).await,
        expected
    );
    // The scan stage did run on the workers (two tasks), which found no msg path.
    let shown = explain_analyze(Arc::clone(&plans[1]), DistributedMetricsFormat::Aggregated)
        .await
        .unwrap();
    assert!(shown.contains("tasks=2"), "{shown}");
    assert!(shown.contains("t1: DataSourceExec"), "{shown}");
    assert_eq!(scan_metric(&shown, "chunks_read"), "16", "{shown}");
}

/// Encodes `plan`, decodes it in `worker`, and checks the decoded plan encodes
/// to the same bytes (nothing lost) and returns the same rows.
async fn assert_round_trip(plan: Arc<dyn ExecutionPlan>, coordinator: &SessionContext) {
    let bytes = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &LogsqlCodec)
        .expect("encodes");
    // A fresh session, as on a worker: nothing shared with the coordinator's.
    let worker = logsql::session_context();
    let decoded =
        physical_plan_from_bytes_with_extension_codec(&bytes, &worker.task_ctx(), &LogsqlCodec)
            .expect("decodes");
    let again = physical_plan_to_bytes_with_extension_codec(Arc::clone(&decoded), &LogsqlCodec)
        .expect("re-encodes");
    assert_eq!(bytes, again, "the decoded plan encodes differently");
    assert_eq!(
        displayable(decoded.as_ref()).indent(true).to_string(),
        displayable(plan.as_ref()).indent(true).to_string()
    );
    let expected = collect(plan, coordinator.task_ctx()).await;
    let got = collect(decoded, worker.task_ctx()).await;
    match (expected, got) {
        (Ok(e), Ok(g)) => assert_eq!(
            pretty_format_batches(&g).unwrap().to_string(),
            pretty_format_batches(&e).unwrap().to_string()
        ),
        (Err(e), Err(g)) => assert_eq!(g.to_string(), e.to_string()),
        (e, g) => panic!("coordinator: {e:?}\nworker: {g:?}"),
    }
}

/// Every kind of logsql scan, with every option off its default, survives
/// encoding and decoding exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_codec_carries_every_scan_and_option() {
    let Some(json) = fixtures::file("mcap", "decode/json.mcap") else {
        return;
    };
    let Some(bddf) = fixtures::file("bddf", "basic.bddf") else {
        return;
    };
    let Some(descriptors) = fixtures::file("bddf", "bosdyn_api_descriptors.binpb") else {
        return;
    };
    let Some(ros2) = fixtures::dir("ros2") else {
        return;
    };
    let carla = fixtures::file("carla", "synth_0916_basic.log").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // A msg path for the one type the Humble bag convert_a uses that logsql
    // does not carry.
    let msgs = tmp.path().join("msgs");
    std::fs::create_dir_all(msgs.join("test_msgs/msg")).unwrap();
    std::fs::write(msgs.join("test_msgs/msg/BasicTypes.msg"), BASIC_TYPES_MSG).unwrap();
    let demo = tmp.path().join("robot=r9/demo.mcap");
    std::fs::create_dir_all(demo.parent().unwrap()).unwrap();
    gen_support::generate(
        &demo,
        &gen_support::Options {
            seconds: 4,
            image_bytes: 500,
            chunk_size: 32768,
            ..Default::default()
        },
    )
    .unwrap();
    let ctx = logsql::session_context();
    for set in [
        "SET logsql.on_error = 'warn'",
        "SET logsql.batch_bytes = 4096",
        "SET logsql.verify_checksums = false",
        "SET logsql.decode_errors = 'null'",
        &format!("SET logsql.descriptor_set = '{}'", descriptors.display()),
        &format!("SET logsql.msg_path = '{}'", msgs.display()),
    ] {
        ctx.sql(set).await.unwrap();
    }
    let root = tmp.path().display();
    let queries = [
        format!(
            "SELECT robot, topic, log_time, md5(data) FROM '{root}/' \
             WHERE topic IN ('/tf', '/imu') AND log_time < to_timestamp_nanos({}) ORDER BY log_time LIMIT 50",
            gen_support::START_NS + 1_000_000_000
        ),
        format!("SELECT * FROM read_topic('{}', '/events')", json.display()),
        format!("SELECT * FROM read_topic('{root}/', '/imu', 'flatten') WHERE \"header.seq\" < 10"),
        format!(
            "SELECT * FROM read_topic('{}', 'bosdyn.api.RobotState') LIMIT 20",
            bddf.display()
        ),
        format!(
            "SELECT * FROM positions('{}') WHERE frame < 20",
            carla.display()
        ),
        // ROS 2 bags without stored definitions: the bundled std_msgs/String
        // for five databases, and a definition from the msg path.
        format!(
            "SELECT * FROM read_topic('{}/', 'AAA') ORDER BY log_time, data",
            ros2.join("sqlite3/wbag").display()
        ),
        format!(
            "SELECT * FROM read_topic('{}/', 'b_basictypes') LIMIT 3",
            ros2.join("sqlite3/convert_a").display()
        ),
        format!("SELECT * FROM series('{}')", bddf.display()),
        format!("SELECT * FROM '{}'", bddf.display()),
    ];
    for sql in &queries {
        let plan = ctx
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .create_physical_plan()
            .await
            .unwrap();
        assert_round_trip(plan, &ctx).await;
    }
}

/// Worker processes, killed when dropped.
struct Processes(Vec<std::process::Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The CLI as deployed: two `logsql worker` processes, and `logsql --workers`
/// coordinating a query over a directory of real files of every format.
#[test]
fn cli_workers_in_separate_processes() {
    let tmp = tempfile::tempdir().unwrap();
    if !fleet(tmp.path()) {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_logsql");
    let mut addresses = Vec::new();
    let mut workers = Processes(Vec::new());
    for _ in 0..2 {
        // A free port: bind, note it, release it for the worker.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let address = format!("127.0.0.1:{port}");
        let child = std::process::Command::new(bin)
            .args(["worker", "--listen", &address, "--data-root"])
            .arg(tmp.path())
            .env("LOGSQL_WORKER_TOKEN", TOKEN)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        workers.0.push(child);
        addresses.push(address);
    }
    for address in &addresses {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(address).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "worker {address} did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let root = tmp.path().display();
    let sql = format!(
        "SELECT file, topic, count(*) AS n, sum(length(data)) AS bytes, min(log_time) AS first \
         FROM '{root}/mixed/' GROUP BY file, topic ORDER BY file, topic; \
         SELECT robot, count(*) FROM read_topic('{root}/fleet/', '/imu') GROUP BY robot ORDER BY robot"
    );
    // 64 KiB of file a partition: these small files still make several tasks
    // (single-task stages run on the coordinator itself).
    let split = "SET distributed.file_scan_config_bytes_per_partition = 65536";
    let run = |extra: &[&str], sql: &str| {
        let out = std::process::Command::new(bin)
            .args(extra)
            .args(["--format", "csv", sql])
            .env("LOGSQL_WORKER_TOKEN", TOKEN)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let local = run(&[], &sql);
    assert!(local.contains("r1,6000\nr2,6000"), "{local}");
    let workers_arg = addresses.join(",");
    let sql_split = format!("{split}; {sql}");
    assert_eq!(run(&["--workers", &workers_arg], &sql_split), local);
    // The token in a file does the same; without a token the workers refuse.
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let token_arg = token_file.to_str().unwrap();
    let out = std::process::Command::new(bin)
        .args(["--workers", &workers_arg, "--worker-token-file", token_arg])
        .args(["--format", "csv", &sql_split])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), local);
    let out = std::process::Command::new(bin)
        .args(["--workers", &workers_arg, &sql_split])
        .env_remove("LOGSQL_WORKER_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing or wrong token"), "{stderr}");
    // COPY through the workers: written on the coordinator, whole or not at
    // all (a failing query leaves the old file and no stray one).
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let target = out_dir.join("imu.parquet");
    let copy = |select: &str| {
        format!(
            "{split}; COPY ({select} FROM '{root}/fleet/' WHERE topic = '/imu') TO '{}'",
            target.display()
        )
    };
    let counted = run(
        &["--workers", &workers_arg],
        &copy("SELECT robot, log_time, length(data) AS n"),
    );
    assert_eq!(counted, "count\n12000\n");
    let written = std::fs::read(&target).unwrap();
    let back = run(&[], &format!("SELECT count(*) FROM '{}'", target.display()));
    assert_eq!(back, "count(*)\n12000\n");
    let out = std::process::Command::new(bin)
        .args(["--workers", &workers_arg])
        .arg(copy("SELECT robot, 1 / (length(data) - length(data)) AS x"))
        .env("LOGSQL_WORKER_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(std::fs::read(&target).unwrap(), written);
    let names: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["imu.parquet"]);
    // The work does go to the workers: with none listening, the query fails.
    drop(workers);
    let out = std::process::Command::new(bin)
        .args(["--workers", &workers_arg, &sql_split])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error:"), "{stderr}");
}

/// A cluster's certificates, written as PEM files into `dir`: a CA, a worker
/// certificate for 127.0.0.1 and a client certificate, each with its key.
fn certificates(dir: &Path) -> [std::path::PathBuf; 5] {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf = |names: &[&str]| {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (worker_cert, worker_key) = leaf(&["127.0.0.1", "localhost"]);
    let (client_cert, client_key) = leaf(&["coordinator"]);
    let files = [
        ("ca.pem", ca.pem()),
        ("worker.pem", worker_cert),
        ("worker.key", worker_key),
        ("client.pem", client_cert),
        ("client.key", client_key),
    ];
    files.map(|(name, text)| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    })
}

/// A worker answers only peers with the token: a coordinator without it, or
/// with another, is refused before any plan is decoded, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_refuse_peers_without_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    if !fleet(tmp.path()) {
        return;
    }
    let workers = start_workers(2).await;
    let sql = format!(
        "SELECT topic, count(*) AS n FROM '{}/fleet/' GROUP BY topic ORDER BY topic",
        tmp.path().display()
    );
    let good = run(&coordinator(&workers), &sql).await;
    assert!(good.contains("/imu"), "{good}");
    let wrong = ClusterAuth {
        token: Some(Token::new("another-token-0123456789").unwrap()),
        ..ClusterAuth::default()
    };
    for auth in [ClusterAuth::default(), wrong] {
        let refused = run(&coordinator_with(&workers, auth), &sql).await;
        assert!(refused.starts_with("error:"), "{refused}");
        assert!(refused.contains("missing or wrong token"), "{refused}");
    }
}

/// A worker runs logsql's scans of files below its data roots only: a file
/// outside them, a link out of them and a scan of another format are refused
/// on the worker, naming what was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_read_only_logs_below_their_data_roots() {
    let tmp = tempfile::tempdir().unwrap();
    let inside = tmp.path().join("inside");
    let outside = tmp.path().join("outside");
    for dir in [&inside, &outside] {
        std::fs::create_dir_all(dir).unwrap();
        let opts = gen_support::Options {
            seconds: 10,
            image_bytes: 1000,
            chunk_size: 65536,
            ..Default::default()
        };
        gen_support::generate(&dir.join("run.mcap"), &opts).unwrap();
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.join("run.mcap"), inside.join("link.mcap")).unwrap();
    let local = logsql::session_context();
    // Parquet files large enough for the distributed planner to send their
    // scan to the workers (a single-task stage would run on the coordinator).
    let parquet = inside.join("parquet");
    std::fs::create_dir(&parquet).unwrap();
    for i in 0..4 {
        local
            .sql(&format!(
                "COPY (SELECT topic, log_time, data FROM '{}') TO '{}' \
                 OPTIONS ('format.max_row_group_size' '500')",
                inside.join("run.mcap").display(),
                parquet.join(format!("{i}.parquet")).display()
            ))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
    }

    let workers = start_workers_with(2, &[inside.to_str().unwrap()]).await;
    let ctx = coordinator(&workers);
    let count = |path: &Path| {
        format!(
            "SELECT topic, count(*) AS n FROM '{}' GROUP BY topic ORDER BY topic",
            path.display()
        )
    };
    let sql = count(&inside.join("run.mcap"));
    assert_eq!(run(&ctx, &sql).await, run(&local, &sql).await);
    for (path, why) in [
        (outside.join("run.mcap"), "outside the data roots"),
        #[cfg(unix)]
        (inside.join("link.mcap"), "outside the data roots"),
    ] {
        let refused = run(&ctx, &count(&path)).await;
        assert!(refused.contains(why), "{}: {refused}", path.display());
    }
    let refused = run(&ctx, &count(&parquet.join(""))).await;
    assert!(refused.contains("plan refused"), "{refused}");
    assert!(
        refused.contains("only logsql's scans may run here"),
        "{refused}"
    );
}

/// Mutual TLS: workers serve TLS with a certificate the cluster CA signed and
/// take only clients whose certificate it signed; they reach each other the
/// same way. A coordinator without a client certificate is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_over_mutual_tls() {
    use logsql::distributed::TlsFiles;
    let tmp = tempfile::tempdir().unwrap();
    if !fleet(tmp.path()) {
        return;
    }
    let [ca, worker_cert, worker_key, client_cert, client_key] = certificates(tmp.path());
    let options = WorkerOptions {
        auth: ClusterAuth {
            token: None,
            tls: TlsFiles::load(Some(&ca), Some(&worker_cert), Some(&worker_key)).unwrap(),
        },
        roots: DataRoots::parse(&[tmp.path().to_str().unwrap()]).unwrap(),
        insecure: false,
        memory_limit: None,
    };
    let mut workers = Vec::new();
    for _ in 0..2 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        workers.push(format!("https://{}", listener.local_addr().unwrap()));
        let options = options.clone();
        tokio::spawn(async move { serve_listener(listener, options).await.unwrap() });
    }
    let sql = format!(
        "SELECT topic, count(*) AS n FROM '{}/fleet/' GROUP BY topic ORDER BY topic",
        tmp.path().display()
    );
    let client = ClusterAuth {
        token: None,
        tls: TlsFiles::load(Some(&ca), Some(&client_cert), Some(&client_key)).unwrap(),
    };
    let local = run(&logsql::session_context(), &sql).await;
    assert_eq!(run(&coordinator_with(&workers, client), &sql).await, local);

    let no_cert = ClusterAuth {
        token: None,
        tls: TlsFiles::load(Some(&ca), None, None).unwrap(),
    };
    let refused = run(&coordinator_with(&workers, no_cert), &sql).await;
    assert!(refused.starts_with("error:"), "{refused}");
}

/// `logsql worker` does not start open to anyone by accident: without a
/// token or mutual TLS it refuses and says how to give one, unless told
/// `--insecure`; a short token is refused too.
#[test]
fn cli_worker_refuses_to_start_without_authentication() {
    let bin = env!("CARGO_BIN_EXE_logsql");
    // A worker reads below the roots it is given: none is no default.
    let out = std::process::Command::new(bin)
        .args(["worker", "--listen", "127.0.0.1:0"])
        .env("LOGSQL_WORKER_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--data-root"), "{stderr}");
    let out = std::process::Command::new(bin)
        .args(["worker", "--listen", "127.0.0.1:0", "--data-root", "."])
        .env_remove("LOGSQL_WORKER_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a worker authenticates its peers"),
        "{stderr}"
    );
    assert!(stderr.contains("--token-file"), "{stderr}");
    let out = std::process::Command::new(bin)
        .args(["worker", "--listen", "127.0.0.1:0", "--data-root", "."])
        .env("LOGSQL_WORKER_TOKEN", "short")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("at least 16 characters"), "{stderr}");
    let out = std::process::Command::new(bin)
        .args([
            "worker",
            "--listen",
            "127.0.0.1:0",
            "--data-root",
            "/no/such/dir",
        ])
        .env("LOGSQL_WORKER_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("data root /no/such/dir"), "{stderr}");
}

/// The plan codec on damaged bytes: the encoded plans of real queries
/// (logsql's scans with predicates, options and typed tables, `read_topic`,
/// the damage report), cut at many lengths and with seeded byte flips and
/// overwrites, decode to a plan or an error, and logsql's own code never
/// panics. (A deterministic sweep: the codec needs DataFusion, which the
/// libFuzzer targets leave out.)
///
/// DataFusion 55's own decoders do panic on some damaged nodes (an
/// `AggregateExec` whose grouping sets name no group expression calls
/// `chunks(0)`). Those panics are located in DataFusion's sources, outside
/// logsql, and are printed rather than failed; on a worker such a panic ends
/// the task of that one request (tokio catches it), not the process. The plan bytes hold the files' absolute
/// paths, so which rounds reach such a node depends on where the clone is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_codec_survives_damaged_plans() {
    use datafusion_proto::bytes::{
        physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
    };
    use logsql::distributed::LogsqlCodec;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    let ctx = logsql::session_context();
    let task = ctx.task_ctx();
    let queries = [
        "SELECT topic, count(*) FROM 'tests/data/demo.mcap' WHERE log_time >= to_timestamp(1700000002) AND topic LIKE '/i%' GROUP BY topic",
        "SELECT * FROM 'tests/data/demo.bag' WHERE length(data) > 100 LIMIT 5",
        "SELECT file, log_time FROM read_topic('tests/data/demo.db3', '/imu')",
        "SELECT count(*) FROM positions('tests/data/demo.log')",
        "SELECT topic, log_time FROM 'tests/data/demo.record' WHERE log_time < to_timestamp(1700000003) LIMIT 3",
    ];
    // Where the last panic on this thread happened (the hook runs before
    // unwinding); panics while decoding are not printed.
    thread_local! {
        static DECODING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        static PANICKED_AT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    let previous = std::sync::Arc::new(std::panic::take_hook());
    let chained = std::sync::Arc::clone(&previous);
    std::panic::set_hook(Box::new(move |info| {
        if DECODING.get() {
            let at = info.location().map(|l| l.to_string()).unwrap_or_default();
            PANICKED_AT.replace(at);
        } else {
            chained(info);
        }
    }));
    let mut upstream_panics = Vec::new();
    let mut decode = |bytes: &[u8], what: &str| {
        DECODING.set(true);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            physical_plan_from_bytes_with_extension_codec(bytes, &task, &LogsqlCodec).is_ok()
        }));
        DECODING.set(false);
        if outcome.is_err() {
            let at = PANICKED_AT.take();
            // The workspace's own files have relative locations; DataFusion's
            // (the cargo registry) and the standard library's are absolute.
            assert!(
                at.starts_with('/'),
                "decoding panicked in logsql at {at}: {what}"
            );
            upstream_panics.push(format!("{at} ({what})"));
        }
    };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for sql in queries {
        let plan = ctx
            .sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let bytes = physical_plan_to_bytes_with_extension_codec(plan, &LogsqlCodec).unwrap();
        assert!(
            physical_plan_from_bytes_with_extension_codec(&bytes, &task, &LogsqlCodec).is_ok(),
            "{sql}: the plan does not decode back"
        );
        let step = (bytes.len() / 300).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            decode(&bytes[..cut], &format!("{sql}: cut at {cut}"));
        }
        for round in 0..400 {
            let mut damaged = bytes.to_vec();
            for _ in 0..=(next() % 4) {
                let at = (next() % damaged.len() as u64) as usize;
                damaged[at] = match round % 3 {
                    0 => damaged[at] ^ (1 << (next() % 8)),
                    1 => 0xff,
                    _ => next() as u8,
                };
            }
            decode(&damaged, &format!("{sql}: mutation round {round}"));
        }
    }
    let _ = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| previous(info)));
    for panic in &upstream_panics {
        println!("DataFusion's decoder panicked at {panic}");
    }
}

/// A worker's `--memory-limit` holds for each query's part there: a value
/// a function makes on the worker past the limit is refused there (the
/// limit is also the worker's cap on one value), and the query fails with
/// that error, not the worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_workers_memory_limit_holds_for_the_values_its_queries_make() {
    let tmp = tempfile::tempdir().unwrap();
    if !fleet(tmp.path()) {
        return;
    }
    let root = tmp.path().to_str().unwrap();
    let workers = start_workers_limited(2, &[root], Some(1 << 20)).await;
    let ctx = coordinator(&workers);
    let fleet = format!("{root}/fleet/");
    let small = run(
        &ctx,
        &format!("SELECT sum(length(repeat(topic, 10))) > 0 AS ok FROM '{fleet}'"),
    )
    .await;
    assert!(small.contains("true"), "{small}");
    let big = run(
        &ctx,
        &format!("SELECT sum(length(repeat(topic, 1000000))) FROM '{fleet}'"),
    )
    .await;
    assert!(
        big.starts_with("error:") && big.contains("logsql.max_value_bytes"),
        "{big}"
    );
    // The workers still answer.
    let again = run(&ctx, &format!("SELECT count(*) > 0 AS ok FROM '{fleet}'")).await;
    assert!(again.contains("true"), "{again}");
}
