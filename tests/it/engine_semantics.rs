//! Query semantics across formats: `LIMIT` without `ORDER BY` returns the
//! first messages in file order (within the chunks of a file in time order:
//! in `log_time` order) at every partition count, `topics()` reports
//! the exact first/last time of every topic, and tables of different formats
//! union with the same columns.

use std::path::{Path, PathBuf};

use datafusion::prelude::{SessionConfig, SessionContext};
use logsql_readers::io::FileReader;
use logsql_readers::model::{Flow, Message, Selection};

use crate::fixtures;
use crate::sql::{pairs, query, text};

/// A context reading with `partitions` target partitions, splitting every
/// file into byte ranges (DataFusion splits only files of 10 MiB and more by
/// default; the fixtures are smaller).
fn ctx_split(partitions: usize) -> SessionContext {
    let config = SessionConfig::new()
        .with_target_partitions(partitions)
        .set_usize("datafusion.optimizer.repartition_file_min_size", 0);
    logsql::session_context_with_config(config)
}

/// Every message of `path` as (topic, log_time), in file order: each chunk of
/// the summary in turn, as the format's reader delivers it; for a file whose
/// index proves it in time order (the scan declares `log_time` order), each
/// chunk's messages sorted by `log_time` (stably), as the scan sends them.
fn file_order(path: &Path) -> Vec<(String, i64)> {
    let file = FileReader::open(path).unwrap();
    let format = logsql_readers::formats::detect(&file).unwrap();
    let summary = format.summary(&file).unwrap();
    let in_time_order = logsql::file_in_time_order(format.as_ref(), &summary);
    let mut out = Vec::new();
    for chunk in &summary.chunks {
        let mut of_chunk = Vec::new();
        let mut sink = |m: Message<'_>| {
            of_chunk.push((m.channel.topic.clone(), m.log_time as i64));
            Flow::Continue
        };
        format
            .read_chunk(&file, &summary, chunk, &Selection::all(), &mut sink)
            .unwrap();
        if in_time_order {
            of_chunk.sort_by_key(|m| m.1);
        }
        out.extend(of_chunk);
    }
    out
}

/// Multi-chunk fixtures of every format (each splits into several ranges).
fn limit_fixtures() -> Option<Vec<PathBuf>> {
    Some(vec![
        fixtures::file("rosbag", "robot_localization-test1.bag")?,
        fixtures::file("rosbag", "embag-test.bag")?,
        PathBuf::from("tests/data/demo.mcap"),
        fixtures::file("bddf", "basic.bddf")?,
        fixtures::file("carla", "srunner_0913_DistanceBetweenVehicles.log")?,
        fixtures::file("apollo", "real/example.record.00000")?,
    ])
}

#[tokio::test]
async fn limit_without_order_by_returns_the_first_messages_in_file_order() {
    let Some(files) = limit_fixtures() else {
        return;
    };
    for path in files {
        let f = path.display().to_string();
        let all = file_order(&path);
        let first: Vec<(String, i64)> = all.iter().take(7).cloned().collect();
        // The topic of the last message: a pushed filter that skips most rows.
        let topic = all.last().unwrap().0.clone();
        let of_topic: Vec<(String, i64)> = all
            .iter()
            .filter(|(t, _)| *t == topic)
            .take(5)
            .cloned()
            .collect();
        assert!(!of_topic.is_empty() && all.len() > 7, "{f}");
        for partitions in [1, 2, 16] {
            let ctx = ctx_split(partitions);
            for _ in 0..3 {
                let got = pairs(
                    &ctx,
                    &format!("SELECT topic, CAST(log_time AS BIGINT) FROM '{f}' LIMIT 7"),
                )
                .await;
                assert_eq!(got, first, "{f}, {partitions} partitions");
                let got = pairs(
                    &ctx,
                    &format!(
                        "SELECT topic, CAST(log_time AS BIGINT) FROM '{f}' \
                         WHERE topic = '{topic}' LIMIT 5"
                    ),
                )
                .await;
                assert_eq!(got, of_topic, "{f}, {partitions} partitions, {topic}");
            }
        }
    }
}

/// The limited scan reads the whole file in one partition; a full scan of the
/// same file keeps its byte-range partitions (it stays parallel).
#[tokio::test]
async fn only_limited_scans_give_up_byte_range_partitions() {
    let Some(bag) = fixtures::file("rosbag", "robot_localization-test1.bag") else {
        return;
    };
    let f = bag.display().to_string();
    let ctx = ctx_split(4);
    let plan = text(&ctx, &format!("EXPLAIN SELECT log_time FROM '{f}' LIMIT 3")).await;
    assert!(plan.contains("file_groups={1 group: [["), "{plan}");
    assert!(!plan.contains(".bag:0.."), "{plan}");
    let plan = text(
        &ctx,
        &format!("EXPLAIN SELECT topic, count(*) FROM '{f}' WHERE length(data) > 0 GROUP BY topic"),
    )
    .await;
    assert!(plan.contains("file_groups={4 groups: [["), "{plan}");
    // With ORDER BY, the sort decides the order: the scan stays parallel.
    let plan = text(
        &ctx,
        &format!("EXPLAIN SELECT topic FROM '{f}' ORDER BY topic LIMIT 3"),
    )
    .await;
    assert!(plan.contains("SortExec"), "{plan}");
    assert!(plan.contains("file_groups={4 groups: [["), "{plan}");
    // ORDER BY log_time of a file in declared time order needs no sort: the
    // merge's first rows are the file's first, read in one partition.
    let plan = text(
        &ctx,
        &format!("EXPLAIN SELECT log_time FROM '{f}' ORDER BY log_time LIMIT 3"),
    )
    .await;
    assert!(!plan.contains("SortExec"), "{plan}");
    assert!(plan.contains("file_groups={1 group: [["), "{plan}");
}

/// On a directory, a limited scan reads the files in path order, each in file
/// order, when the query has a filter. Without one, DataFusion lists only
/// enough files to cover the limit (by their statistics, whichever summary is
/// read first): the rows are then the first of one file, in file order.
#[tokio::test]
async fn limit_on_a_directory_reads_files_in_path_order() {
    let (Some(a), Some(b)) = (
        fixtures::file("rosbag", "robot_localization-test2.bag"),
        fixtures::file("rosbag", "robot_localization-test1.bag"),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&a, tmp.path().join("a.bag")).unwrap();
    std::os::unix::fs::symlink(&b, tmp.path().join("b.bag")).unwrap();
    let (in_a, in_b) = (file_order(&a), file_order(&b));
    let want: Vec<(String, i64)> = in_a.iter().chain(in_b.iter().take(3)).cloned().collect();
    let dir = format!("{}/", tmp.path().display());
    let n = want.len();
    for partitions in [1, 2, 16] {
        let ctx = ctx_split(partitions);
        let got = pairs(
            &ctx,
            &format!(
                "SELECT topic, CAST(log_time AS BIGINT) FROM '{dir}' WHERE topic <> '' LIMIT {n}"
            ),
        )
        .await;
        assert_eq!(got, want, "{partitions} partitions");
        let got = pairs(
            &ctx,
            &format!("SELECT topic, CAST(log_time AS BIGINT) FROM '{dir}' LIMIT 5"),
        )
        .await;
        assert!(
            got.as_slice() == &in_a[..5] || got.as_slice() == &in_b[..5],
            "{partitions} partitions: {got:?}"
        );
    }
    // The whole directory still counts every message of both files.
    let ctx = ctx_split(2);
    let batches = query(&ctx, &format!("SELECT count(*) FROM '{dir}'")).await;
    let total = datafusion::arrow::array::AsArray::as_primitive::<
        datafusion::arrow::datatypes::Int64Type,
    >(batches[0].column(0))
    .value(0);
    assert_eq!(total as usize, in_a.len() + in_b.len());
}

/// One fixture of each of the five formats.
fn one_of_each_format() -> Option<Vec<PathBuf>> {
    Some(vec![
        PathBuf::from("tests/data/demo.mcap"),
        fixtures::file("rosbag", "robot_localization-test1.bag")?,
        fixtures::file("bddf", "additional_indexes.bddf")?,
        fixtures::file("carla", "synth_0915_basic.log")?,
        fixtures::file("apollo", "generated/small.record")?,
    ])
}

/// The column names of `SELECT * FROM <from>`.
async fn columns(ctx: &SessionContext, from: &str) -> Vec<String> {
    let df = ctx.sql(&format!("SELECT * FROM {from}")).await.unwrap();
    df.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

/// `SELECT * ... UNION ALL SELECT * ...` over files of all five formats: every
/// file keeps its rows, and the extra columns are filled for their own format
/// only.
#[tokio::test]
async fn tables_of_all_five_formats_union() {
    let Some(files) = one_of_each_format() else {
        return;
    };
    let ctx = logsql::session_context();
    let union = files
        .iter()
        .map(|f| format!("SELECT * FROM '{}'", f.display()))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let got = text(
        &ctx,
        &format!(
            "SELECT regexp_replace(file, '.*/', '') AS name, count(*) AS n, count(frame) AS frames, \
             count(elapsed) AS elapsed, count(additional_indexes) AS indexed \
             FROM ({union}) GROUP BY file ORDER BY name"
        ),
    )
    .await;
    assert_eq!(
        got,
        "+------------------------------+-------+--------+---------+---------+\n\
         | name                         | n     | frames | elapsed | indexed |\n\
         +------------------------------+-------+--------+---------+---------+\n\
         | additional_indexes.bddf      | 333   | 0      | 0       | 272     |\n\
         | demo.mcap                    | 2610  | 0      | 0       | 0       |\n\
         | robot_localization-test1.bag | 16806 | 0      | 0       | 0       |\n\
         | small.record                 | 1235  | 0      | 0       | 0       |\n\
         | synth_0915_basic.log         | 2800  | 2800   | 2800    | 0       |\n\
         +------------------------------+-------+--------+---------+---------+"
    );
    // Each count is the file's own.
    for f in &files {
        let alone = pairs(
            &ctx,
            &format!("SELECT file, count(*) FROM '{}' GROUP BY file", f.display()),
        )
        .await;
        let name = f.file_name().unwrap().to_str().unwrap();
        let line = got
            .lines()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .unwrap();
        assert!(
            line.contains(&format!("| {} ", alone[0].1)),
            "{line}: {alone:?}"
        );
    }
}

/// A file alone, a union of single files and a directory mixing the five
/// formats have the same columns: the common ones, then every format's extras.
#[tokio::test]
async fn every_messages_table_has_the_same_columns() {
    let Some(files) = one_of_each_format() else {
        return;
    };
    let ctx = logsql::session_context();
    let want: Vec<String> = [
        "topic",
        "log_time",
        "publish_time",
        "sequence",
        "message_type",
        "message_encoding",
        "data",
        "file",
        "additional_indexes",
        "frame",
        "elapsed",
    ]
    .map(String::from)
    .to_vec();
    for f in &files {
        assert_eq!(columns(&ctx, &format!("'{}'", f.display())).await, want);
    }
    let tmp = tempfile::tempdir().unwrap();
    for f in &files {
        let abs = std::fs::canonicalize(f).unwrap();
        std::os::unix::fs::symlink(&abs, tmp.path().join(f.file_name().unwrap())).unwrap();
    }
    let dir = format!("'{}/'", tmp.path().display());
    assert_eq!(columns(&ctx, &dir).await, want);
    let union = format!(
        "(SELECT * FROM '{}' UNION ALL SELECT * FROM '{}')",
        files[0].display(),
        files[3].display()
    );
    assert_eq!(columns(&ctx, &union).await, want);
    // The directory reads every file's rows.
    let n = pairs(
        &ctx,
        &format!("SELECT 'all', count(*) FROM {dir} WHERE frame IS NULL OR frame > 0"),
    )
    .await;
    assert_eq!(
        n,
        vec![("all".to_string(), 2610 + 16806 + 333 + 2800 + 1235)]
    );
    // `CREATE EXTERNAL TABLE ... STORED AS <FORMAT>` gives the same columns.
    query(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE runs STORED AS MCAP LOCATION '{}'",
            files[0].display()
        ),
    )
    .await;
    assert_eq!(columns(&ctx, "runs").await, want);
}

/// The log files of a fixture folder (recursively), in path order.
fn fixture_files(format: &str, ext: &[&str]) -> Option<Vec<PathBuf>> {
    fn walk(dir: &Path, ext: &[&str], out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, ext, out);
            } else if ext
                .iter()
                .any(|x| p.file_name().unwrap().to_str().unwrap().contains(x))
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&fixtures::dir(format)?, ext, &mut out);
    out.sort();
    Some(out)
}

/// `topics()` gives every topic's exact count and first/last `log_time`: the
/// same as `GROUP BY topic` over the messages, for every fixture of every
/// format (damaged ones with `on_error = 'warn'`, both sides then seeing the
/// readable part).
#[tokio::test]
async fn topics_times_are_exact_for_every_fixture() {
    let sets = [
        ("rosbag", &[".bag"][..]),
        ("mcap", &["samples/", ".mcap"][..]),
        ("bddf", &[".bddf"][..]),
        ("carla", &[".log"][..]),
        ("apollo", &[".record"][..]),
    ];
    let ctx = logsql::session_context();
    query(&ctx, "SET logsql.on_error = 'warn'").await;
    let mut compared = 0;
    for (format, ext) in sets {
        let Some(mut files) = fixture_files(format, ext) else {
            return;
        };
        if format == "mcap" {
            files.retain(|p| p.to_str().unwrap().contains("/samples/"));
        }
        files.push(PathBuf::from("tests/data/demo.mcap"));
        for f in files {
            let f = f.display().to_string();
            let exact = format!(
                "SELECT topic, count(*) AS n, min(log_time) AS lo, max(log_time) AS hi \
                 FROM '{f}' GROUP BY topic ORDER BY topic"
            );
            let topics = format!(
                "SELECT topic, CAST(message_count AS BIGINT) AS n, start_time AS lo, end_time AS hi \
                 FROM topics('{f}') WHERE message_count > 0 ORDER BY topic"
            );
            let want = match ctx.sql(&exact).await {
                Ok(df) => df.collect().await,
                Err(e) => Err(e),
            };
            let Ok(want) = want else {
                // Not a readable log (an empty file, bad magic): topics() fails too.
                let err = crate::sql::error(&ctx, &topics).await;
                assert!(err.contains(f.rsplit('/').next().unwrap()), "{f}: {err}");
                continue;
            };
            let want = datafusion::arrow::util::pretty::pretty_format_batches(&want)
                .unwrap()
                .to_string();
            assert_eq!(text(&ctx, &topics).await, want, "{f}");
            compared += 1;
        }
    }
    assert!(compared >= 40, "{compared}");
}

/// A bag's `topics()` times come from its index data, without decompressing
/// a chunk: with the compressed bytes of its chunk destroyed (the index data
/// after it intact), a bag still gives every topic's exact times, while a
/// scan of its payloads fails.
#[tokio::test]
async fn bag_topics_times_come_from_index_data_alone() {
    let Some(bag) = fixtures::file("rosbag", "rosbagjs-example-bz2.bag") else {
        return;
    };
    let f = bag.display().to_string();
    let ctx = logsql::session_context();
    let exact = text(
        &ctx,
        &format!(
            "SELECT topic, count(*) AS n, min(log_time) AS lo, max(log_time) AS hi \
             FROM '{f}' GROUP BY topic ORDER BY topic"
        ),
    )
    .await;
    let chunk = pairs(
        &ctx,
        &format!("SELECT compression, CAST(offset + length / 2 AS BIGINT) FROM chunks('{f}')"),
    )
    .await;
    assert_eq!(chunk.len(), 1, "{chunk:?}");
    let mut bytes = std::fs::read(&bag).unwrap();
    let mid = chunk[0].1 as usize;
    bytes[mid - 512..mid + 512].fill(0x5a);
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken.bag");
    std::fs::write(&broken, &bytes).unwrap();
    let b = broken.display().to_string();
    let ctx = logsql::session_context();
    let topics = text(
        &ctx,
        &format!(
            "SELECT topic, CAST(message_count AS BIGINT) AS n, start_time AS lo, end_time AS hi \
             FROM topics('{b}') ORDER BY topic"
        ),
    )
    .await;
    assert_eq!(topics, exact);
    assert!(exact.contains("| /tf "), "{exact}");
    let err = crate::sql::error(&ctx, &format!("SELECT sum(length(data)) FROM '{b}'")).await;
    assert!(err.contains("broken.bag"), "{err}");
}

/// The CLI, at its default partition count and at 16 with every file split,
/// prints the first messages in file order (CSV, exact text).
#[test]
fn cli_limit_prints_the_first_messages_in_file_order() {
    let Some(bag) = fixtures::file("rosbag", "robot_localization-test1.bag") else {
        return;
    };
    let f = bag.display().to_string();
    let fix: Vec<i64> = file_order(&bag)
        .into_iter()
        .filter(|(t, _)| t == "/fix")
        .map(|(_, t)| t)
        .take(2)
        .collect();
    let want = format!(
        "topic,t\n/imu/data,{}\n/husky_velocity_controller/odom,{}\n/fix,{}\ntopic,t\n/fix,{}\n/fix,{}\n",
        1432235498025043042i64, 1432235498028275834i64, 1432235498039331631i64, fix[0], fix[1]
    );
    let sql = format!(
        "SET datafusion.optimizer.repartition_file_min_size = 0; \
         SELECT topic, CAST(log_time AS BIGINT) AS t FROM '{f}' LIMIT 3; \
         SELECT topic, CAST(log_time AS BIGINT) AS t FROM '{f}' WHERE topic = '/fix' LIMIT 2"
    );
    for args in [&[][..], &["--target-partitions", "16"][..]] {
        for _ in 0..3 {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_logsql"))
                .args(args)
                .args(["--format", "csv", &sql])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            assert_eq!(String::from_utf8(out.stdout).unwrap(), want, "{args:?}");
        }
    }
}
