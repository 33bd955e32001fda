//! The `logsql` binary, run as a user would: every output format, `info`,
//! `export`, `COPY`, `-f` scripts, stdin scripts, and error exits.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};

use crate::fixtures;

const COUNTS_SQL: &str = "SELECT topic, count(*) AS n FROM '{f}' GROUP BY topic ORDER BY topic";

fn compressed() -> Option<PathBuf> {
    fixtures::file("mcap", "samples/compressed.mcap")
}

pub(crate) fn logsql(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run logsql")
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs logsql and asserts success, returning stdout.
pub(crate) fn ok(args: &[&str]) -> String {
    let out = logsql(args);
    assert!(
        out.status.success(),
        "logsql {args:?} failed ({:?}):\n{}",
        out.status,
        stderr(&out)
    );
    stdout(&out)
}

fn sql_for(template: &str, file: &Path) -> String {
    template.replace("{f}", &file.display().to_string())
}

fn parquet_rows(path: &Path) -> i64 {
    let file = std::fs::File::open(path).expect("open parquet");
    SerializedFileReader::new(file)
        .expect("read parquet")
        .metadata()
        .file_metadata()
        .num_rows()
}

#[test]
fn table_output() {
    let Some(f) = compressed() else { return };
    let out = ok(&[&sql_for(COUNTS_SQL, &f)]);
    assert!(out.contains("| topic        | n   |"), "{out}");
    assert!(out.contains("| /diagnostics | 52  |"), "{out}");
    assert!(out.contains("| /tf          | 774 |"), "{out}");
}

#[test]
fn csv_output() {
    let Some(f) = compressed() else { return };
    let out = ok(&["--format", "csv", &sql_for(COUNTS_SQL, &f)]);
    assert_eq!(out, "topic,n\n/diagnostics,52\n/tf,774\n");
}

#[test]
fn json_output_is_one_array() {
    let Some(f) = compressed() else { return };
    // Many small batches (413 chunks, 1-row batches) still make one array.
    let out = ok(&["--format", "json", &sql_for(COUNTS_SQL, &f)]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(
        v,
        serde_json::json!([{"topic": "/diagnostics", "n": 52}, {"topic": "/tf", "n": 774}])
    );

    let out = ok(&[
        "--format",
        "json",
        "--target-partitions",
        "4",
        &sql_for("SELECT topic FROM '{f}'", &f),
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v.as_array().map(Vec::len), Some(826));
}

#[test]
fn ndjson_output() {
    let Some(f) = compressed() else { return };
    let out = ok(&["--format", "ndjson", &sql_for(COUNTS_SQL, &f)]);
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(
        rows,
        [
            serde_json::json!({"topic": "/diagnostics", "n": 52}),
            serde_json::json!({"topic": "/tf", "n": 774})
        ]
    );
}

#[test]
fn timestamps_print_as_rfc3339_utc() {
    let Some(f) = compressed() else { return };
    let sql = sql_for(
        "SELECT min(log_time) AS first, max(log_time) AS last FROM '{f}'",
        &f,
    );
    let out = ok(&["--format", "csv", &sql]);
    assert_eq!(
        out,
        "first,last\n2017-03-22T02:26:20.103843113Z,2017-03-22T02:26:27.884601617Z\n"
    );
    let out = ok(&["--format", "json", &sql]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["first"], "2017-03-22T02:26:20.103843113Z");
}

#[test]
fn several_statements_print_each_result() {
    let Some(f) = compressed() else { return };
    let sql = sql_for(
        "CREATE EXTERNAL TABLE m STORED AS MCAP LOCATION '{f}'; \
         SELECT count(*) AS n FROM m WHERE topic = '/tf'; SELECT 'a;b' AS s",
        &f,
    );
    assert_eq!(ok(&["--format", "csv", &sql]), "n\n774\ns\na;b\n");
}

#[test]
fn sql_file_runs_every_statement() {
    let Some(f) = compressed() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("counts.sql");
    let text = sql_for(
        "-- Messages per topic; a ';' in a comment does not end the statement.\n\
         SET logsql.on_error = 'warn';\n\
         SELECT topic, count(*) AS n\nFROM '{f}'\nGROUP BY topic\nORDER BY topic;\n\n\
         SELECT count(*) AS chunks FROM chunks('{f}')\n",
        &f,
    );
    std::fs::write(&script, text).unwrap();
    let out = ok(&["--format", "csv", "-f", script.to_str().unwrap()]);
    assert_eq!(out, "topic,n\n/diagnostics,52\n/tf,774\nchunks\n413\n");
}

#[test]
fn stdin_script_when_not_a_terminal() {
    let Some(f) = compressed() else { return };
    let mut child = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(["--format", "csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sql = sql_for(
        "SELECT count(*) AS n FROM '{f}' WHERE topic = '/diagnostics';\n",
        &f,
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "n\n52\n");
}

#[test]
fn info_summarises_the_file() {
    let Some(f) = compressed() else { return };
    let out = ok(&["info", f.to_str().unwrap()]);
    for expected in [
        "format:       mcap",
        "profile:      ros1",
        "messages:     826",
        "start:        2017-03-22T02:26:20.103843113Z (1490149580103843113 ns)",
        "end:          2017-03-22T02:26:27.884601617Z (1490149587884601617 ns)",
        "chunks:       413",
        "zstd: 413 chunks",
        "attachments:  0",
        "metadata:     0",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    let topic_line = |topic: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(topic))
            .unwrap_or_default()
            .to_string()
    };
    let diag = topic_line("/diagnostics");
    assert!(
        diag.contains("diagnostic_msgs/DiagnosticArray") && diag.contains(" 52 "),
        "{out}"
    );
    let tf = topic_line("/tf");
    assert!(
        tf.contains("tf2_msgs/TFMessage") && tf.contains(" 774 ") && tf.contains("Hz"),
        "{out}"
    );
}

#[test]
fn info_reports_recovery_and_damage() {
    let Some(f) = fixtures::file("mcap", "samples/chunk_not_closed.mcap") else {
        return;
    };
    let out = ok(&["info", f.to_str().unwrap()]);
    assert!(
        out.contains("index:        none usable; summary rebuilt by walking the file"),
        "{out}"
    );
    assert!(
        out.contains("damage:") && out.contains("at byte 39"),
        "{out}"
    );
}

/// `-c "SET ..."` before a subcommand sets its options: `info` reads with
/// the session's limits (the chunk of 4,359,411 bytes is over a 10-byte
/// `logsql.max_chunk_bytes`, and the error says which option); any other
/// statement is refused there.
#[test]
fn info_takes_set_statements_for_its_limits() {
    let Some(f) = fixtures::file("mcap", "samples/zstd_chunk_with_padding.mcap") else {
        return;
    };
    let f = f.to_str().unwrap();
    let out = ok(&["info", f]);
    assert!(out.contains("messages:     12"), "{out}");
    let out = ok(&["-c", "SET logsql.max_chunk_bytes = 10", "info", f]);
    assert!(
        out.contains(
            "decompresses to 4359411 bytes, over the 10-byte limit (logsql.max_chunk_bytes)"
        ),
        "{out}"
    );
    let out = logsql(&["-c", "SELECT 1", "info", f]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("with a subcommand, -c takes SET statements only"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn export_writes_parquet_for_one_topic() {
    let Some(f) = compressed() else { return };
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("tf.parquet");
    let out = ok(&[
        "export",
        f.to_str().unwrap(),
        parquet.to_str().unwrap(),
        "--topic",
        "/tf",
    ]);
    assert!(out.starts_with("exported 774 rows to "), "{out}");
    assert_eq!(parquet_rows(&parquet), 774);
    // Nothing but the output (its temporary file was renamed over it).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // Read back through the CLI: the messages columns, topic /tf only.
    let sql = format!(
        "SELECT topic, count(*) AS n, count(DISTINCT file) AS files FROM '{}' GROUP BY topic",
        parquet.display()
    );
    assert_eq!(ok(&["--format", "csv", &sql]), "topic,n,files\n/tf,774,1\n");
}

#[test]
fn export_filters_time_in_every_notation() {
    let Some(f) = compressed() else { return };
    let dir = tempfile::tempdir().unwrap();
    let expected = {
        let sql = sql_for(
            "SELECT count(*) AS n FROM '{f}' WHERE log_time >= '2017-03-22T02:26:21Z' \
             AND log_time < '2017-03-22T02:26:22.5Z'",
            &f,
        );
        ok(&["--format", "csv", &sql])
            .trim_start_matches("n\n")
            .trim()
            .parse::<i64>()
            .unwrap()
    };
    assert!(expected > 0 && expected < 826, "{expected}");
    for (i, (start, end)) in [
        ("2017-03-22T02:26:21Z", "2017-03-22T02:26:22.500Z"),
        ("1490149581000000000ns", "1490149582500000000ns"),
        ("1490149581s", "1490149582500ms"),
        ("1490149581.0", "1490149582.5"),
    ]
    .into_iter()
    .enumerate()
    {
        let parquet = dir.path().join(format!("w{i}.parquet"));
        ok(&[
            "export",
            f.to_str().unwrap(),
            parquet.to_str().unwrap(),
            "--start",
            start,
            "--end",
            end,
        ]);
        assert_eq!(
            parquet_rows(&parquet),
            expected,
            "--start {start} --end {end}"
        );
    }
    let out = logsql(&[
        "export",
        f.to_str().unwrap(),
        "x.parquet",
        "--start",
        "yesterday",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--start: cannot read time 'yesterday'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn copy_to_parquet_through_the_cli() {
    let Some(f) = compressed() else { return };
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("diag.parquet");
    let sql = format!(
        "COPY (SELECT * FROM '{}' WHERE topic = '/diagnostics') TO '{}'",
        f.display(),
        parquet.display()
    );
    assert_eq!(ok(&["--format", "csv", &sql]), "count\n52\n");
    assert_eq!(parquet_rows(&parquet), 52);
}

#[test]
fn bad_file_exits_1_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.mcap");
    std::fs::write(
        &junk,
        b"this is not a log file at all, just some junk bytes",
    )
    .unwrap();
    let name = junk.display().to_string();
    for args in [
        vec![format!("SELECT count(*) FROM '{name}'")],
        vec!["info".to_string(), name.clone()],
        vec![
            "export".to_string(),
            name.clone(),
            dir.path().join("o.parquet").display().to_string(),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = logsql(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with("error: ") && err.contains(&name),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("not a recognised log file") && !err.contains("External error"),
            "{err}"
        );
        assert!(stdout(&out).is_empty());
    }
    assert!(!dir.path().join("o.parquet").exists());
}

#[test]
fn damaged_file_fails_unless_on_error_warn() {
    let Some(f) = fixtures::file("mcap", "samples/chunk_not_closed.mcap") else {
        return;
    };
    let sql = sql_for("SELECT count(*) AS n FROM '{f}'", &f);
    // The default: a recording whose last chunk was never closed is unfinished,
    // not an error: every complete message (none here) and one warning.
    let out = logsql(&["--format", "csv", &sql]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "n\n0\n");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("warning: ")
            && err.contains("chunk_not_closed.mcap: unfinished mcap file")
            && err.contains("readable data ends at byte 39 of 92 (53 bytes dropped"),
        "{err}"
    );
    // Strict: the same rows, then the error.
    let out = logsql(&["--format", "csv", "--on-error", "error", &sql]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "n\n0\n");
    let err = stderr(&out);
    // The engine names the file by its normalised absolute path.
    assert!(
        err.starts_with("error: ") && err.contains("/chunk_not_closed.mcap: truncated mcap file"),
        "{err}"
    );
    assert!(
        err.contains("at byte 39") && !err.contains("External error"),
        "{err}"
    );

    let out = logsql(&["--format", "csv", "--on-error", "warn", &sql]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "n\n0\n");
    assert!(
        stderr(&out).starts_with("warning: ") && stderr(&out).contains("at byte 39"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sql_errors_exit_1() {
    let out = logsql(&["SELEC 1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: sql parser error"),
        "{}",
        stderr(&out)
    );

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.mcap").display().to_string();
    let out = logsql(&[&format!("SELECT * FROM '{missing}'")]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!("error: {missing}: no such file or directory\n")
    );
}

#[test]
fn summary_shortcuts() {
    let Some(f) = compressed() else { return };
    let out = ok(&["topics", f.to_str().unwrap(), "--format", "csv"]);
    assert!(
        out.starts_with("topic,message_type,message_encoding,message_count,start_time,end_time\n"),
        "{out}"
    );
    assert!(out.contains("/tf,tf2_msgs/TFMessage,ros1,774,"), "{out}");
    let out = ok(&["chunks", f.to_str().unwrap(), "--format", "ndjson"]);
    assert_eq!(out.lines().count(), 413);
}

#[test]
fn help_mentions_copy() {
    let out = ok(&["--help"]);
    assert!(out.contains("COPY (SELECT"), "{out}");
    assert!(ok(&["export", "--help"]).contains("COPY (SELECT ...) TO"));
}

#[test]
fn info_of_a_carla_recording_is_carla_s_own_text() {
    let Some(dir) = fixtures::dir("carla") else {
        return;
    };
    for (name, all) in [
        ("synth_0916_basic", false),
        ("srunner_0913_DistanceBetweenVehicles", false),
        ("synth_0916_one_frame", true),
        ("synth_0916_additional", true),
    ] {
        let f = dir.join(format!("{name}.log")).display().to_string();
        let suffix = if all { "info_all" } else { "info" };
        let want =
            std::fs::read_to_string(dir.join(format!("expected/{name}.{suffix}.txt"))).unwrap();
        let mut args = vec!["info", f.as_str()];
        if all {
            args.push("--all");
        }
        assert_eq!(ok(&args), want, "{name} {suffix}");
    }
}

#[test]
fn info_verifies_the_bddf_checksum_and_export_keeps_extra_columns() {
    let Some(dir) = fixtures::dir("bddf") else {
        return;
    };
    let f = dir.join("basic.bddf").display().to_string();
    let text = ok(&["info", &f]);
    assert!(text.contains("checksum:") && text.contains("ok"), "{text}");
    assert!(text.contains("bddf"), "{text}");
    // Export keeps the BDDF extra column (a map) as a Parquet column.
    let tmp = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    let out = tmp.path().join("imu.parquet");
    ok(&["export", &f, out.to_str().unwrap(), "--topic", "imu/accel"]);
    assert_eq!(parquet_rows(&out), 100);
    let file = std::fs::File::open(&out).unwrap();
    let schema = SerializedFileReader::new(file)
        .unwrap()
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.name().to_string())
        .collect::<Vec<_>>();
    assert!(
        schema.contains(&"additional_indexes".to_string()),
        "{schema:?}"
    );
    // --descriptors attaches schemas; a bad path is a clear error.
    let set = dir
        .join("bosdyn_api_descriptors.binpb")
        .display()
        .to_string();
    let sql =
        format!("SELECT count(*) AS n FROM channels('{f}') WHERE schema_encoding = 'protobuf'");
    assert_eq!(
        ok(&["--descriptors", &set, "--format", "csv", &sql]),
        "n\n4\n"
    );
    let out = logsql(&["--descriptors", "/no/such.binpb", "--format", "csv", &sql]);
    assert!(!out.status.success() && stderr(&out).contains("/no/such.binpb"));
}

#[test]
fn apollo_and_carla_export_to_parquet() {
    let (Some(apollo), Some(carla)) = (fixtures::dir("apollo"), fixtures::dir("carla")) else {
        return;
    };
    let tmp = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    let rec = apollo.join("generated/small.record").display().to_string();
    let out = tmp.path().join("pose.parquet");
    ok(&[
        "export",
        &rec,
        out.to_str().unwrap(),
        "--topic",
        "/apollo/localization/pose",
    ]);
    assert_eq!(parquet_rows(&out), 600);
    // A typed table through COPY.
    let log = carla.join("synth_0916_basic.log").display().to_string();
    let out = tmp.path().join("positions.parquet");
    ok(&[&format!(
        "COPY (SELECT * FROM positions('{log}')) TO '{}'",
        out.display()
    )]);
    assert_eq!(parquet_rows(&out), 4812);
}

#[test]
fn export_decode_writes_typed_columns() {
    // The demo file the repo carries: ROS1 /imu (200 Hz), /tf, JSON /diagnostics.
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.mcap");
    let demo = demo.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let imu = dir.path().join("imu.parquet");
    let out = ok(&[
        "export",
        demo,
        imu.to_str().unwrap(),
        "--topic",
        "/imu",
        "--decode",
        "--start",
        "1700000002.0",
        "--end",
        "1700000003.0",
    ]);
    assert!(out.starts_with("exported 200 rows to "), "{out}");
    assert_eq!(parquet_rows(&imu), 200);
    // Nested columns in the Parquet file, same values as read_topic.
    let sql = format!(
        "SELECT count(*) AS n, round(avg(linear_acceleration.z), 3) AS z, min(header.frame_id) AS f FROM '{}'",
        imu.display()
    );
    assert_eq!(
        ok(&["--format", "csv", &sql]),
        "n,z,f\n200,9.807,imu_link\n"
    );

    // --flatten: dotted flat columns.
    let flat = dir.path().join("flat.parquet");
    ok(&[
        "export",
        demo,
        flat.to_str().unwrap(),
        "--topic",
        "/imu",
        "--decode",
        "--flatten",
    ]);
    let sql = format!(
        "SELECT round(avg(\"linear_acceleration.z\"), 3) AS z FROM '{}'",
        flat.display()
    );
    assert_eq!(ok(&["--format", "csv", &sql]), "z\n9.807\n");

    // No --topic: a directory with one file per topic.
    let all = dir.path().join("all");
    let out = ok(&["export", demo, all.to_str().unwrap(), "--decode"]);
    let mut names: Vec<String> = std::fs::read_dir(&all)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "camera.compressed.parquet",
            "diagnostics.parquet",
            "imu.parquet",
            "tf.parquet"
        ],
        "{out}"
    );
    let total: i64 = names.iter().map(|n| parquet_rows(&all.join(n))).sum();
    let messages = ok(&[
        "--format",
        "csv",
        &format!("SELECT count(*) AS n FROM '{demo}'"),
    ]);
    assert_eq!(format!("n\n{total}\n"), messages);

    // --flatten needs --decode.
    let out = logsql(&["export", demo, "x.parquet", "--flatten"]);
    assert!(!out.status.success());
}

/// On Linux the binary is a position-independent executable (ELF type
/// `DYN`), so the kernel randomises its address as for any program that
/// parses untrusted files; and it starts and answers.
#[test]
#[cfg(target_os = "linux")]
fn the_binary_is_position_independent_and_starts() {
    let mut header = [0u8; 18];
    std::io::Read::read_exact(
        &mut std::fs::File::open(env!("CARGO_BIN_EXE_logsql")).expect("open the binary"),
        &mut header,
    )
    .expect("read the binary's ELF header");
    assert_eq!(&header[..4], b"\x7fELF");
    // e_type, little-endian u16 at offset 16: 2 = ET_EXEC, 3 = ET_DYN (PIE).
    assert_eq!(u16::from_le_bytes([header[16], header[17]]), 3);
    assert_eq!(ok(&["--format", "csv", "SELECT 1 AS one"]), "one\n1\n");
}

/// `ORDER BY log_time DESC LIMIT n` from the CLI, default partitions: the
/// newest rows, with most chunks of the demo recording pruned at run time
/// (`chunks_read` and `chunks_pruned_at_run_time` in `EXPLAIN ANALYZE`).
#[test]
fn the_newest_messages_read_the_newest_chunks_only() {
    let sql = "SELECT topic, log_time FROM 'tests/data/demo.mcap' ORDER BY log_time DESC LIMIT 2";
    assert_eq!(
        ok(&["--format", "csv", sql]),
        "topic,log_time\n/imu,2023-11-14T22:13:29.995000000Z\n/imu,2023-11-14T22:13:29.990000000Z\n"
    );
    let plan = ok(&["--format", "csv", &format!("EXPLAIN ANALYZE {sql}")]);
    let metric = |name: &str| -> u64 {
        match crate::sql::text_metrics(&plan, name)[..] {
            [value] => value,
            _ => panic!("not one {name} in:\n{plan}"),
        }
    };
    assert!(plan.contains("chunk_order=newest_first"), "{plan}");
    assert!(metric("chunks_read") <= 6, "{plan}");
    assert_eq!(
        metric("chunks_read") + metric("chunks_pruned_at_run_time"),
        14,
        "{plan}"
    );
}

/// `metadata_cache()` names a local file as the user does: relative to the
/// working directory when it lies below it, else by its absolute path.
#[test]
fn metadata_cache_shows_local_paths_as_the_user_names_them() {
    let root = env!("CARGO_MANIFEST_DIR");
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere.mcap");
    std::fs::copy(format!("{root}/tests/data/demo.mcap"), &elsewhere).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .current_dir(root)
        .args([
            "--format",
            "csv",
            "-c",
            "SELECT count(*) FROM 'tests/data/demo.bag' WHERE length(data) > 0",
            "-c",
            &format!(
                "SELECT count(*) FROM '{}' WHERE length(data) > 0",
                elsewhere.display()
            ),
            "SELECT path FROM metadata_cache() ORDER BY path",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let tail: Vec<&str> = printed.lines().rev().take(2).collect();
    let canonical = elsewhere.canonicalize().unwrap();
    assert!(tail.contains(&"tests/data/demo.bag"), "{printed}");
    assert!(tail.contains(&canonical.to_str().unwrap()), "{printed}");
}
