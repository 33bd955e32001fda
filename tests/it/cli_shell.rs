//! The `logsql` command line as datafusion-cli / psql users expect it: `-c`,
//! `-o`, `-q`, `--max-rows`, whole EXPLAIN plans, CSV refusing nested columns,
//! fixed-width timestamps, the hint for a path given as SQL; and the
//! interactive shell through a pseudo-terminal (Ctrl-C cancelling a query,
//! history written per statement, `\d`, `\timing`, tab completion, typed-ahead
//! statements).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use rexpect::session::PtySession;

/// The demo recording (2,610 messages in 15 chunks), relative to the repository root.
const DEMO: &str = "tests/data/demo.mcap";

/// A `logsql` command run from the repository root.
fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_logsql"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// Runs logsql with stdin closed.
fn run(args: &[&str]) -> Output {
    command(args)
        .stdin(Stdio::null())
        .output()
        .expect("run logsql")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs logsql, asserts success and returns stdout.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "logsql {args:?}: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn a_path_instead_of_sql_hints_at_info() {
    let out = run(&[DEMO]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        "error: 'tests/data/demo.mcap' is a file, not SQL: try logsql info tests/data/demo.mcap \
         or logsql \"SELECT * FROM 'tests/data/demo.mcap' LIMIT 10\"\n"
    );
    let out = run(&["tests/data"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .starts_with("error: 'tests/data' is a directory, not SQL: try logsql info tests/data"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["-c", "missing/run.bag"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: 'missing/run.bag' looks like a file name, not SQL"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn commands_run_in_order_and_output_goes_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.csv");
    let out = run(&[
        "--format",
        "csv",
        "-c",
        "SELECT 1 AS a",
        "--command",
        "SELECT 2 AS b; SELECT 3 AS c",
        "-o",
        file.to_str().unwrap(),
        "SELECT 4 AS d",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(text(&out.stderr), "");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "a\n1\nb\n2\nc\n3\nd\n4\n"
    );
}

#[test]
fn max_rows_shows_the_first_rows_and_counts_all() {
    let sql = "SELECT value FROM generate_series(1, 100000) ORDER BY value";
    let out = ok(&[sql]);
    let lines: Vec<&str> = out.lines().collect();
    // Border, header, border, 40 rows, border, footer.
    assert_eq!(lines.len(), 45, "{out}");
    // Columns are as wide as the rows shown.
    assert_eq!(lines[3], "| 1     |");
    assert_eq!(lines[42], "| 40    |");
    assert_eq!(lines[44], "100000 rows (40 shown)");
    let out = ok(&["--max-rows", "2", sql]);
    assert!(
        out.ends_with("| 1     |\n| 2     |\n+-------+\n100000 rows (2 shown)\n"),
        "{out}"
    );
    for all in ["0", "inf"] {
        let out = ok(&["--max-rows", all, sql]);
        assert_eq!(out.lines().count(), 100_004, "--max-rows {all}");
        assert!(!out.contains("shown"));
    }
    // Only table output is cut.
    let out = ok(&["--format", "csv", sql]);
    assert_eq!(out.lines().count(), 100_001);
    // No footer when every row is shown.
    assert_eq!(
        ok(&["SELECT 1 AS one"]),
        "+-----+\n| one |\n+-----+\n| 1   |\n+-----+\n"
    );
}

#[test]
fn explain_analyze_prints_whole_plans() {
    let out = ok(&[&format!(
        "EXPLAIN ANALYZE SELECT count(*) FROM '{DEMO}' WHERE topic = '/imu'"
    )]);
    assert!(!out.contains('…'), "{out}");
    let scan = out
        .lines()
        .find(|l| l.contains("DataSourceExec"))
        .unwrap_or_else(|| panic!("no scan line:\n{out}"));
    // Answered from the summary's per-channel counts: no chunk read.
    assert!(
        scan.contains("chunks_read=0, chunks_shared=0, chunks_total=15"),
        "{scan}"
    );
    assert!(scan.contains("messages_from_summary=2.00 K"), "{scan}");
    assert!(scan.trim_end().ends_with("] |"), "{scan}");
    let out = ok(&[&format!(
        "EXPLAIN SELECT topic FROM '{DEMO}' WHERE topic = '/tf'"
    )]);
    assert!(out.contains("predicate=topic@0 = /tf"), "{out}");
}

#[test]
fn every_format_prints_the_rows_before_a_damaged_file_s_error() {
    // The demo cut at 3/4: 1,939 messages are readable before the cut chunk.
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.mcap");
    let data = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(DEMO)).unwrap();
    std::fs::write(&cut, &data[..data.len() * 3 / 4]).unwrap();
    let sql = format!("SELECT topic, log_time FROM '{}'", cut.display());
    for format in ["table", "csv", "json", "ndjson"] {
        let out = run(&[
            "--on-error",
            "error",
            "--target-partitions",
            "1",
            "--format",
            format,
            &sql,
        ]);
        assert_eq!(out.status.code(), Some(1), "{format}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with(&format!("error: {}: truncated mcap file", cut.display())),
            "{format}: {err}"
        );
        let stdout = text(&out.stdout);
        let rows = match format {
            "table" => {
                assert!(stdout.ends_with("+\n1939 rows (40 shown)\n"), "{stdout}");
                stdout.lines().filter(|l| l.starts_with("| /")).count()
            }
            "csv" => stdout.lines().count() - 1,
            "json" => serde_json::from_str::<serde_json::Value>(&stdout)
                .expect("stdout is valid JSON")
                .as_array()
                .map_or(0, Vec::len),
            _ => stdout.lines().count(),
        };
        let want = if format == "table" { 40 } else { 1939 };
        assert_eq!(rows, want, "{format}");
    }
}

#[test]
fn csv_with_a_nested_column_fails_before_any_output() {
    let out = run(&[
        "--format",
        "csv",
        &format!("SELECT header, log_time FROM read_topic('{DEMO}', '/imu') LIMIT 1"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        "error: column 'header' is a struct, which CSV cannot hold: select its fields \
         (read_topic(..., 'flatten') gives flat dotted columns) or use --format json / ndjson\n"
    );
    let out = ok(&[
        "--format",
        "csv",
        &format!("SELECT \"header.seq\" FROM read_topic('{DEMO}', '/imu', 'flatten') LIMIT 2"),
    ]);
    assert_eq!(out, "header.seq\n0\n1\n");
}

#[test]
fn timestamps_keep_nine_fractional_digits_in_every_format() {
    let sql = format!("SELECT log_time FROM '{DEMO}' ORDER BY log_time LIMIT 2");
    assert_eq!(
        ok(&["--format", "csv", &sql]),
        "log_time\n2023-11-14T22:13:20.000000000Z\n2023-11-14T22:13:20.001000000Z\n"
    );
    assert_eq!(
        ok(&["--format", "ndjson", &sql]),
        "{\"log_time\":\"2023-11-14T22:13:20.000000000Z\"}\n\
         {\"log_time\":\"2023-11-14T22:13:20.001000000Z\"}\n"
    );
    assert_eq!(
        ok(&["--format", "json", &sql]),
        "[{\"log_time\":\"2023-11-14T22:13:20.000000000Z\"},\
         {\"log_time\":\"2023-11-14T22:13:20.001000000Z\"}]\n"
    );
    assert!(ok(&[&sql]).contains("| 2023-11-14T22:13:20.000000000Z |"));
    // Other units keep their own width; nested timestamps have their unit's width too.
    assert_eq!(
        ok(&[
            "--format",
            "csv",
            "SELECT arrow_cast(0, 'Timestamp(Millisecond, Some(\"UTC\"))') AS ms, \
             arrow_cast(0, 'Timestamp(Second, None)') AS s"
        ]),
        "ms,s\n1970-01-01T00:00:00.000Z,1970-01-01T00:00:00\n"
    );
    let out = ok(&[
        "--max-width",
        "0",
        &format!("SELECT header FROM read_topic('{DEMO}', '/imu') LIMIT 1"),
    ]);
    assert!(
        out.contains("{seq: 0, stamp: 2023-11-14T22:13:20.000000000Z, frame_id: imu_link}"),
        "{out}"
    );
    let out = ok(&[
        "--format",
        "ndjson",
        &format!("SELECT header FROM read_topic('{DEMO}', '/imu') LIMIT 2"),
    ]);
    assert_eq!(
        out,
        "{\"header\":{\"seq\":0,\"stamp\":\"2023-11-14T22:13:20.000000000Z\",\"frame_id\":\"imu_link\"}}\n\
         {\"header\":{\"seq\":1,\"stamp\":\"2023-11-14T22:13:20.005000000Z\",\"frame_id\":\"imu_link\"}}\n"
    );
}

/// `logsql ARGS` in a pseudo-terminal with `HOME` at `home`.
fn pty(home: &Path, args: &[&str]) -> PtySession {
    let mut cmd = command(args);
    cmd.env("HOME", home).env("TERM", "xterm");
    rexpect::session::spawn_command(cmd, Some(60_000)).expect("spawn logsql in a pty")
}

/// The shell, at its first prompt.
fn shell(home: &Path) -> PtySession {
    let mut s = pty(home, &[]);
    s.exp_string("\\? for help, \\q to quit.").unwrap();
    s.exp_string("logsql> ").unwrap();
    s
}

/// Leaves the shell with `\q` and waits for it to end. (A Ctrl-D typed before
/// the prompt shows is lost: the terminal is not in raw mode then.)
fn leave(mut s: PtySession) {
    s.send_line("\\q").unwrap();
    s.exp_eof().unwrap();
}

#[test]
fn ctrl_c_cancels_the_running_query_and_the_shell_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let mut s = shell(home.path());
    s.send_line("SELECT sum(value) AS total FROM generate_series(1, 100000000000);")
        .unwrap();
    // Ctrl-C once the statement runs: rustyline has left raw mode (it turns
    // bracketed paste off then), and the statement has had time to start.
    s.exp_string("\x1b[?2004l").unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    s.send_control('c').unwrap();
    s.exp_string("error: query cancelled (Ctrl-C)").unwrap();
    s.exp_string("logsql> ").unwrap();
    s.send_line("SELECT 7 AS seven;").unwrap();
    s.exp_string("| 7     |").unwrap();
    s.exp_string("1 row in ").unwrap();
    // Ctrl-C at the prompt drops the line being typed.
    s.exp_string("logsql> ").unwrap();
    s.send("SELECT 'dropped'").unwrap();
    s.flush().unwrap();
    s.exp_string("SELECT 'dropped'").unwrap();
    s.send_control('c').unwrap();
    // (Input typed after Ctrl-C but before the new prompt is dropped with the line.)
    s.exp_string("logsql> ").unwrap();
    s.send_line("SELECT 8 AS eight;").unwrap();
    let before = s.exp_string("| 8     |").unwrap();
    assert!(!before.contains("| dropped"), "{before}");
    leave(s);
}

#[test]
fn history_is_written_as_each_statement_runs() {
    let home = tempfile::tempdir().unwrap();
    let history = home.path().join(".logsql_history");
    let mut s = shell(home.path());
    s.send_line("SELECT 41 + 1 AS answer;").unwrap();
    s.exp_string("| 42     |").unwrap();
    s.exp_string("logsql> ").unwrap();
    let text = std::fs::read_to_string(&history).expect("history written while the shell runs");
    assert!(
        text.lines().any(|l| l == "SELECT 41 + 1 AS answer;"),
        "{text}"
    );
    s.send_line("\\timing").unwrap();
    s.exp_string("Timing is off.").unwrap();
    s.exp_string("logsql> ").unwrap();
    let text = std::fs::read_to_string(&history).unwrap();
    // rustyline's history file escapes backslashes.
    assert!(text.lines().any(|l| l == "\\\\timing"), "{text}");
    // Killed, not left: the entries are already in the file.
    s.process_mut()
        .kill(rexpect::process::Signal::SIGKILL)
        .unwrap();
    let text = std::fs::read_to_string(&history).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>(),
        ["SELECT 41 + 1 AS answer;", "\\\\timing"]
    );
}

#[test]
fn describe_tables_and_toggle_timing() {
    let home = tempfile::tempdir().unwrap();
    let mut s = shell(home.path());
    s.send_line(&format!(
        "CREATE EXTERNAL TABLE demo STORED AS MCAP LOCATION '{DEMO}';"
    ))
    .unwrap();
    s.exp_string("logsql> ").unwrap();
    s.send_line("\\d").unwrap();
    s.exp_string("| schema | name | type       |").unwrap();
    s.exp_string("| public | demo | BASE TABLE |").unwrap();
    s.send_line("\\d demo").unwrap();
    // (column widths follow the longest type: match the cells, not the padding)
    s.exp_regex(r"\| column_name +\| data_type +\| is_nullable \|")
        .unwrap();
    s.exp_regex(r#"\| log_time +\| Timestamp\(ns, "UTC"\) +\| NO +\|"#)
        .unwrap();
    s.send_line(&format!("\\d '{DEMO}'")).unwrap();
    s.exp_regex(r"\| topic +\| Utf8 +\| NO +\|").unwrap();
    s.send_line(&format!("\\d read_topic('{DEMO}', '/imu')"))
        .unwrap();
    s.exp_string("| linear_acceleration ").unwrap();
    s.exp_string("logsql> ").unwrap();
    s.send_line("SELECT 1 AS a;").unwrap();
    s.exp_string("1 row in ").unwrap();
    s.send_line("\\timing").unwrap();
    s.exp_string("Timing is off.").unwrap();
    s.send_line("SELECT 2 AS b;").unwrap();
    s.exp_string("| 2 |").unwrap();
    s.send_line("\\timing").unwrap();
    let between = s.exp_string("Timing is on.").unwrap();
    assert!(!between.contains("row in"), "{between}");
    s.send_line("SELECT 3 AS c;").unwrap();
    s.exp_string("| 3 |").unwrap();
    s.exp_string("1 row in ").unwrap();
    leave(s);
}

#[test]
fn tab_completes_paths_table_functions_and_keywords() {
    let home = tempfile::tempdir().unwrap();
    let mut s = shell(home.path());
    // A path inside quotes.
    s.send("SELECT count(*) AS n FROM 'tests/data/demo.m")
        .unwrap();
    s.send("\t").unwrap();
    s.send_line("';").unwrap();
    s.exp_string("| 2610 |").unwrap();
    s.exp_string("logsql> ").unwrap();
    // A table function, read from the session.
    s.send("sel").unwrap();
    s.send("\t").unwrap();
    s.send(" count(*) AS n FROM chun").unwrap();
    s.send("\t").unwrap();
    s.send_line(&format!("'{DEMO}');")).unwrap();
    s.exp_string("| 15 |").unwrap();
    leave(s);
}

#[test]
fn typed_ahead_statements_all_run_in_order() {
    let home = tempfile::tempdir().unwrap();
    let mut s = shell(home.path());
    // Two statements on one line, then a multi-line statement and another
    // statement sent at once (each line arrives separately), typed while the
    // first ones run.
    s.send("SELECT 1 AS a; SELECT 2 AS b;\nSELECT\n3 AS c;\nSELECT sum(value) AS d FROM generate_series(1, 4);\n")
        .unwrap();
    s.exp_string("| a |").unwrap();
    s.exp_string("| 1 |").unwrap();
    s.exp_string("| b |").unwrap();
    s.exp_string("| c |").unwrap();
    s.exp_string("| 3 |").unwrap();
    s.exp_string("| d  |").unwrap();
    s.exp_string("| 10 |").unwrap();
    leave(s);
}

#[test]
fn quiet_shell_has_no_banner_and_no_timing() {
    let home = tempfile::tempdir().unwrap();
    let mut s = pty(home.path(), &["-q"]);
    let banner = s.exp_string("logsql> ").unwrap();
    assert!(!banner.contains("help"), "{banner}");
    s.send_line("SELECT 5 AS e;").unwrap();
    s.exp_string("| 5 |").unwrap();
    s.send_line("SELECT 6 AS f;").unwrap();
    let between = s.exp_string("| 6 |").unwrap();
    assert!(!between.contains("row in"), "{between}");
    leave(s);
}

#[test]
fn command_line_sql_shows_its_time_only_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let mut s = pty(home.path(), &["-c", "SELECT 1 AS a"]);
    s.exp_string("| 1 |").unwrap();
    s.exp_string("1 row in ").unwrap();
    s.exp_eof().unwrap();
    let mut s = pty(home.path(), &["-q", "-c", "SELECT 1 AS a"]);
    let all = s.exp_eof().unwrap();
    assert!(all.contains("| 1 |") && !all.contains("row in"), "{all}");
    // Piped: results only (as every other test here checks).
    assert_eq!(text(&run(&["-c", "SELECT 1 AS a"]).stderr), "");
}
