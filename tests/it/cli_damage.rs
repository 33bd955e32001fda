//! Damaged files at the CLI, as a user meets them: the rows printed in every
//! output format and at every partition count are exactly what the byte-level
//! reader recovers, and the error (when the policy makes one) comes after them
//! on stderr with exit code 1.

use std::process::{Command, Stdio};

use logsql_readers::formats;
use logsql_readers::io::BytesReader;

use crate::engine_damage::reader_prefix;
use crate::fixtures;

/// Rows printed on stdout in `format`: for `table`, the sum of the `n` column of
/// a per-topic count (a table prints every row of a small result).
fn printed_rows(format: &str, stdout: &str) -> usize {
    match format {
        "ndjson" => stdout.lines().filter(|l| !l.trim().is_empty()).count(),
        "csv" => stdout.lines().count().saturating_sub(1),
        "json" => {
            let v: serde_json::Value = serde_json::from_str(stdout.trim())
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"));
            v.as_array().expect("a JSON array").len()
        }
        "table" => stdout
            .lines()
            .filter(|l| l.starts_with("| /") || l.starts_with("| "))
            .skip(1)
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                cells[2]
                    .parse::<usize>()
                    .unwrap_or_else(|_| panic!("bad row {l}"))
            })
            .sum(),
        other => panic!("{other}"),
    }
}

#[test]
fn cut_files_print_the_readers_prefix_in_every_format() {
    let files = [
        ("mcap", "samples/compressed.mcap", 3, 4),
        ("rosbag", "robot_localization-test1.bag", 1, 2),
        // A recording whose recorder crashed (no index, last section torn).
        ("apollo", "generated/crash_torn_tail.record", 1, 1),
    ];
    let tmp = tempfile::tempdir().unwrap();
    for (dir, relative, num, den) in files {
        let Some(path) = fixtures::file(dir, relative) else {
            return;
        };
        let bytes = std::fs::read(&path).unwrap();
        let cut = bytes.len() * num / den;
        let file = tmp.path().join(format!(
            "cut-{}",
            path.file_name().unwrap().to_string_lossy()
        ));
        std::fs::write(&file, &bytes[..cut]).unwrap();
        let name = file.display().to_string();
        let format = formats::detect(&BytesReader::new("probe", bytes.clone())).unwrap();
        let (expected, damage) = reader_prefix(format.as_ref(), &name, &bytes[..cut]);
        assert_eq!(
            damage,
            Some(true),
            "{relative}: a cut file is an unfinished recording"
        );
        assert!(!expected.is_empty(), "{relative}");
        for partitions in ["1", "2", "8"] {
            for out_format in ["table", "csv", "json", "ndjson"] {
                let sql = if out_format == "table" {
                    format!("SELECT topic, count(*) AS n FROM '{name}' GROUP BY topic")
                } else {
                    format!("SELECT topic, log_time FROM '{name}'")
                };
                for policy in ["auto", "error"] {
                    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
                        .args(["--target-partitions", partitions, "--format", out_format])
                        .args(["--on-error", policy, &sql])
                        .stdin(Stdio::null())
                        .output()
                        .unwrap();
                    let stdout = String::from_utf8(out.stdout).unwrap();
                    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                    let what = format!(
                        "{relative} cut at {cut}, {partitions} partitions, --format {out_format}, on_error {policy}"
                    );
                    assert_eq!(
                        printed_rows(out_format, &stdout),
                        expected.len(),
                        "{what}: {stderr}"
                    );
                    if policy == "auto" {
                        assert!(out.status.success(), "{what}: {stderr}");
                        assert_eq!(stderr.matches("warning: ").count(), 1, "{what}: {stderr}");
                        assert!(
                            stderr.contains("unfinished") && stderr.contains(&name),
                            "{what}: {stderr}"
                        );
                    } else {
                        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
                        assert!(
                            stderr.starts_with("error: ") && stderr.contains(&name),
                            "{what}: {stderr}"
                        );
                        assert!(!stderr.contains("warning"), "{what}: {stderr}");
                    }
                }
            }
        }
    }
}

/// Under `--on-error warn` the CLI's `count(*)` is the rows `SELECT *`
/// prints, in every output format, on a recording with a chunk that no
/// longer decompresses (its message index still lists its messages).
#[test]
fn counts_under_warn_are_the_rows_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.mcap")).unwrap();
    // Inside chunk 7's compressed bytes (at 81,181): it no longer decompresses.
    for b in &mut bytes[89_000..89_004] {
        *b ^= 0xff;
    }
    let file = tmp.path().join("flipped.mcap");
    std::fs::write(&file, &bytes).unwrap();
    let f = file.display().to_string();
    let run = |format: &str, sql: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
            .args(["--on-error", "warn", "--format", format, sql])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let rows = printed_rows(
        "csv",
        &run("csv", &format!("SELECT topic, log_time FROM '{f}'")),
    );
    assert!(
        rows > 0 && rows < 2610,
        "the damaged chunk loses messages: {rows}"
    );
    for sql in [
        format!("SELECT count(*) AS n FROM '{f}'"),
        format!("SELECT count(log_time) AS n FROM '{f}'"),
    ] {
        assert_eq!(run("csv", &sql), format!("n\n{rows}\n"), "{sql}");
        assert_eq!(
            run("json", &sql).trim(),
            format!("[{{\"n\":{rows}}}]"),
            "{sql}"
        );
        assert!(run("table", &sql).contains(&format!("| {rows} ")), "{sql}");
    }
    let per_topic = run(
        "table",
        &format!("SELECT topic, count(*) AS n FROM '{f}' GROUP BY topic ORDER BY topic"),
    );
    assert_eq!(printed_rows("table", &per_topic), rows, "{per_topic}");
}
