//! The operations the CLI and the Python bindings share (`logsql::ops`), held
//! to what the CLI prints: `info`'s facts (and its JSON) for a file that
//! states no per-topic counts, `doctor` on a directory holding a link to
//! itself, and queries written one after the other as one log (`export`,
//! `recover`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use logsql::ops::info::{self, Gather};
use serde_json::Value;

use crate::fixtures;

/// An MCAP file with a summary (channels, chunk indexes) but no statistics
/// record and no message indexes: it states no message counts, per topic or
/// in all (the summary alone answered `None` for its messages).
const UNCOUNTED: &str = "conformance/TenMessages/TenMessages-ch-chx-pad-rch-rsh-sum.mcap";

/// `logsql ARGS`: exit status, stdout, stderr; killed (and the test failed)
/// after a minute.
fn logsql(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "logsql {args:?} did not end within a minute; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn info_facts_count_a_file_that_states_no_counts_as_the_cli_does() {
    let Some(path) = fixtures::file("mcap", UNCOUNTED) else {
        return;
    };
    let path = path.to_str().unwrap().to_string();
    let ctx = logsql::session_context();
    let state = ctx.state();
    let mut files = info::files(&state, std::slice::from_ref(&path))
        .await
        .unwrap();
    assert_eq!(files.len(), 1);
    let file = files.remove(0);
    assert_eq!(file.name, path);
    let (loc, cached) = file.read.unwrap();
    // The file states no counts: they are counted from message headers.
    assert_eq!(cached.summary.channel_message_counts, None);
    assert_eq!(cached.summary.message_count, None);
    let limits = logsql::LogsqlOptions::from_config(state.config_options()).limits();
    let (facts, times) = tokio::task::spawn_blocking(move || {
        info::gather(&loc, &cached, Gather::default(), limits).unwrap()
    })
    .await
    .unwrap();
    assert!(times.is_none());
    assert_eq!(facts.format, "mcap");
    assert_eq!(facts.messages, Some(10));
    assert!(facts.count_note.is_some());
    assert_eq!(facts.read_error, None);
    let counts: Vec<(&str, Option<u64>)> = facts
        .topics
        .iter()
        .map(|(topic, row)| (topic.as_str(), row.count))
        .collect();
    assert_eq!(counts, [("example", Some(10))]);
    let (start, end) = (facts.start.unwrap(), facts.end.unwrap());
    assert_eq!((start, end), (0, 9));

    // The CLI's JSON states the same facts.
    let (code, stdout, stderr) = logsql(&["info", "--format", "json", &path]);
    assert_eq!(code, Some(0), "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let cli = &json[0];
    assert_eq!(cli["messages"], 10, "{cli}");
    assert_eq!(cli["messages_counted_from_headers"], true, "{cli}");
    assert_eq!(cli["start_ns"], start, "{cli}");
    assert_eq!(cli["end_ns"], end, "{cli}");
    assert_eq!(cli["duration_ns"], end - start, "{cli}");
    assert_eq!(cli["topics"][0]["topic"], "example", "{cli}");
    assert_eq!(cli["topics"][0]["messages"], 10, "{cli}");
    assert_eq!(cli["chunks"], facts.chunks, "{cli}");
    // Without checksums and timelines, the library's JSON is the CLI's.
    let args = [
        "--no-verify",
        "info",
        "--no-timeline",
        "--format",
        "json",
        &path,
    ];
    let (code, stdout, stderr) = logsql(&args);
    assert_eq!(code, Some(0), "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(logsql::ops::info_json::facts(&facts), json[0]);
    // And the text says where the counts came from.
    let (code, text, stderr) = logsql(&["info", &path]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(text.contains("counted from message headers"), "{text}");
}

#[cfg(unix)]
#[test]
fn doctor_on_a_directory_linking_to_itself_ends_and_names_the_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("runs");
    std::fs::create_dir_all(dir.join("day1")).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.mcap");
    std::fs::copy(&demo, dir.join("day1/a.mcap")).unwrap();
    std::fs::copy(&demo, dir.join("b.mcap")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("self")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("day1/up")).unwrap();

    // The library: each file once, in name order, the loops named.
    let expanded = logsql::ops::doctor::expand(&[dir.display().to_string()]).unwrap();
    assert_eq!(
        expanded.files,
        [dir.join("b.mcap"), dir.join("day1/a.mcap")],
        "{:?}",
        expanded.warnings
    );
    for link in [dir.join("self"), dir.join("day1/up")] {
        let named = format!(
            "{}: a symbolic link to {}, a directory it is in (a loop); not followed",
            link.display(),
            dir.display()
        );
        assert!(
            expanded.warnings.contains(&named),
            "{named} in {:?}",
            expanded.warnings
        );
    }

    // The command ends, checks each file once and says so on stderr.
    let (code, stdout, stderr) = logsql(&["doctor", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with(&format!("{}: mcap file", dir.join("b.mcap").display())),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with(&format!("{}: mcap file", dir.join("day1/a.mcap").display())),
        "{stdout}"
    );
    assert!(lines.iter().all(|l| l.ends_with(": healthy")), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "{}: a symbolic link to {}, a directory it is in (a loop); not followed",
            dir.join("self").display(),
            dir.display()
        )),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn recover_of_a_directory_with_two_links_to_itself_recovers_each_message_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("runs");
    std::fs::create_dir_all(&dir).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.mcap");
    std::fs::copy(&demo, dir.join("a.mcap")).unwrap();
    std::os::unix::fs::symlink(".", dir.join("a")).unwrap();
    std::os::unix::fs::symlink(".", dir.join("b")).unwrap();
    let count = |path: &Path| {
        let (code, out, err) = logsql(&[
            "--format",
            "csv",
            &format!("SELECT count(*) AS n FROM '{}'", path.display()),
        ]);
        assert_eq!(code, Some(0), "{err}");
        out.lines().nth(1).unwrap().parse::<u64>().unwrap()
    };
    let messages = count(&demo);
    assert!(messages > 0);
    let out = tmp.path().join("out.mcap");
    let (code, stdout, stderr) = logsql(&["recover", dir.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    // doctor's part of the report names the one file once.
    let checked: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(": mcap file"))
        .collect();
    assert_eq!(checked.len(), 1, "{stdout}");
    assert_eq!(count(&out), messages, "{stdout}{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn queries_written_one_after_the_other_make_one_log_as_export_writes_it() {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Int64Type;
    use logsql::ops::export::{export_sql, write_log_of};
    use logsql::write::sink::LogWrite;

    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.mcap");
    let input = demo.to_str().unwrap();
    let ctx = logsql::session_context();
    let ints = |sql: String| {
        let ctx = ctx.clone();
        async move {
            let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
            let mut v = Vec::new();
            for b in &batches {
                for c in b.columns() {
                    v.extend(c.as_primitive::<Int64Type>().iter().flatten());
                }
            }
            v
        }
    };
    let facts = ints(format!(
        "SELECT CAST(min(log_time) AS BIGINT), CAST(max(log_time) AS BIGINT), count(*), \
         CAST(sum(length(data)) AS BIGINT) FROM '{input}'"
    ))
    .await;
    let [first, last, count, bytes] = facts[..] else {
        panic!("{facts:?}")
    };
    // The messages before the middle of the recording, then the others.
    let mid = first + (last - first) / 2;
    let ordered =
        |start, end| export_sql(input, &Default::default(), start, end) + " ORDER BY log_time";
    let sqls = [ordered(None, Some(mid)), ordered(Some(mid), None)];
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("both.mcap");
    let write = LogWrite::default();
    let driven = write_log_of(&ctx, input, &sqls, &out, &write, &|_| {})
        .await
        .unwrap();
    assert!(driven.stream_error.is_none());
    assert_eq!(driven.report.rows as i64, count);
    let out = out.to_str().unwrap();
    let back = ints(format!(
        "SELECT count(*), CAST(sum(length(data)) AS BIGINT) FROM '{out}'"
    ))
    .await;
    assert_eq!(back, [count, bytes]);
    let times = ints(format!("SELECT CAST(log_time AS BIGINT) FROM '{out}'")).await;
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in log_time order");

    // `logsql export` writes the same messages.
    let cli = tmp.path().join("cli.mcap");
    let (code, _, stderr) = logsql(&["export", input, cli.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let cli = cli.to_str().unwrap();
    let same = ints(format!(
        "SELECT count(*) FROM (SELECT log_time, topic, data FROM '{cli}' \
         EXCEPT ALL SELECT log_time, topic, data FROM '{out}')"
    ))
    .await;
    assert_eq!(same, [0]);
}
