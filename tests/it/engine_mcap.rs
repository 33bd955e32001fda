//! The scan engine over real MCAP files: SQL results, pushdown (by the scan
//! metrics), statistics, table functions, multi-file tables and damaged files.

use datafusion::prelude::{SessionConfig, SessionContext};

use crate::fixtures;
use crate::sql::{analyze, ints, metric, query, text};

fn ctx() -> SessionContext {
    logsql::session_context()
}

fn sample(name: &str) -> Option<String> {
    fixtures::file("mcap", &format!("samples/{name}")).map(|p| p.display().to_string())
}

#[tokio::test]
async fn group_by_topic_counts_every_message() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let ctx = ctx();
    let out = text(
        &ctx,
        &format!("SELECT topic, count(*) AS n FROM '{f}' GROUP BY topic ORDER BY topic"),
    )
    .await;
    assert_eq!(
        out,
        "+--------------+-----+\n| topic        | n   |\n+--------------+-----+\n| /diagnostics | 52  |\n| /tf          | 774 |\n+--------------+-----+"
    );
}

#[tokio::test]
async fn compressed_and_uncompressed_files_hold_the_same_messages() {
    let (Some(a), Some(b)) = (sample("compressed.mcap"), sample("uncompressed.mcap")) else {
        return;
    };
    let ctx = ctx();
    let sql = |f: &str| {
        format!(
            "SELECT topic, log_time, publish_time, sequence, message_type, message_encoding, md5(data) AS h \
             FROM '{f}' ORDER BY log_time, topic, sequence, h"
        )
    };
    let x = text(&ctx, &sql(&a)).await;
    let y = text(&ctx, &sql(&b)).await;
    assert_eq!(x.lines().count(), 826 + 4);
    assert_eq!(x, y);
    // Payload bytes survive untouched: total size and a digest over all of them.
    let total = ints(&ctx, &format!("SELECT sum(length(data)) FROM '{a}'")).await;
    assert_eq!(
        total,
        ints(&ctx, &format!("SELECT sum(length(data)) FROM '{b}'")).await
    );
    assert!(total[0] > 0);
}

#[tokio::test]
async fn count_and_time_bounds_come_from_statistics_without_a_scan() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let ctx = ctx();
    let plan = text(&ctx, &format!("EXPLAIN SELECT count(*) FROM '{f}'")).await;
    assert!(
        !plan.contains("DataSourceExec"),
        "count(*) should be answered from the summary:\n{plan}"
    );
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{f}'")).await,
        vec![826]
    );
    let plan = text(
        &ctx,
        &format!("EXPLAIN SELECT min(log_time), max(log_time) FROM '{f}'"),
    )
    .await;
    assert!(
        !plan.contains("DataSourceExec"),
        "min/max(log_time) should come from the summary:\n{plan}"
    );
    // ... and agree with a real scan.
    let stats = text(
        &ctx,
        &format!("SELECT min(log_time), max(log_time) FROM '{f}'"),
    )
    .await;
    let scanned = text(
        &ctx,
        &format!("SELECT min(log_time), max(log_time) FROM '{f}' WHERE length(data) >= 0"),
    )
    .await;
    assert_eq!(stats, scanned);
}

#[tokio::test]
async fn time_window_reads_only_the_chunks_it_needs() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let ctx = ctx();
    let bounds = ints(
        &ctx,
        &format!("SELECT CAST(min(log_time) AS BIGINT) FROM '{f}' UNION ALL SELECT CAST(max(log_time) AS BIGINT) FROM '{f}'"),
    )
    .await;
    let (lo, hi) = (bounds[0].min(bounds[1]), bounds[0].max(bounds[1]));
    let t0 = lo + (hi - lo) / 2;
    let t1 = t0 + (hi - lo) / 10;
    // Reference: all rows materialised in memory, filtered there.
    let all = query(&ctx, &format!("SELECT topic, log_time FROM '{f}'")).await;
    let mem = datafusion::datasource::MemTable::try_new(all[0].schema(), vec![all]).unwrap();
    ctx.register_table("mem", std::sync::Arc::new(mem)).unwrap();
    let window = format!("CAST(log_time AS BIGINT) BETWEEN {t0} AND {t1}");
    let expected = ints(&ctx, &format!("SELECT count(*) FROM mem WHERE {window}")).await;
    let got = ints(&ctx, &format!("SELECT count(*) FROM '{f}' WHERE {window}")).await;
    assert_eq!(got, expected);
    assert!(expected[0] > 0);
    // Same window written with timestamps.
    let ts = |n: i64| format!("to_timestamp_nanos({n})");
    let got2 = ints(
        &ctx,
        &format!(
            "SELECT count(*) FROM '{f}' WHERE log_time >= {} AND log_time <= {}",
            ts(t0),
            ts(t1)
        ),
    )
    .await;
    assert_eq!(got2, expected);
    let plan = analyze(&ctx, &format!("SELECT count(*) FROM '{f}' WHERE {window}")).await;
    let (total, read) = (metric(&plan, "chunks_total"), metric(&plan, "chunks_read"));
    assert_eq!(total, 413, "{plan}");
    assert!(
        read * 100 <= total * 15,
        "a 10% window read {read} of {total} chunks:\n{plan}"
    );
    assert!(read > 0);
}

#[tokio::test]
async fn topic_filter_prunes_chunks_and_is_exact() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let ctx = ctx();
    for (pred, n) in [
        ("topic = '/diagnostics'", 52),
        ("topic IN ('/diagnostics')", 52),
        ("topic = '/diagnostics' OR topic = '/nope'", 52),
        ("topic IN ('/tf', '/diagnostics', '/a', '/b')", 826),
        ("topic <> '/tf'", 52),
    ] {
        assert_eq!(
            ints(&ctx, &format!("SELECT count(*) FROM '{f}' WHERE {pred}")).await,
            vec![n],
            "{pred}"
        );
    }
    let plan = analyze(
        &ctx,
        &format!("SELECT count(*) FROM '{f}' WHERE topic = '/diagnostics'"),
    )
    .await;
    let (total, read) = (metric(&plan, "chunks_total"), metric(&plan, "chunks_read"));
    assert!(
        read < total / 4,
        "topic pruning read {read} of {total} chunks:\n{plan}"
    );
    assert!(
        !plan.contains("FilterExec"),
        "the filter should be exact in the scan:\n{plan}"
    );
}

#[tokio::test]
async fn limit_reaches_the_scan_and_stops_reading() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let ctx = ctx();
    let batches = query(
        &ctx,
        &format!("SELECT log_time FROM '{f}' WHERE topic = '/tf' LIMIT 3"),
    )
    .await;
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
    let plan = analyze(
        &ctx,
        &format!("SELECT * FROM '{f}' WHERE topic = '/tf' LIMIT 3"),
    )
    .await;
    assert!(plan.contains("limit=3"), "{plan}");
    assert!(metric(&plan, "chunks_read") < 20, "{plan}");
}

#[tokio::test]
async fn header_only_queries_decompress_nothing() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let ctx = ctx();
    let plan = analyze(
        &ctx,
        // `count(log_time)`: a per-message column (`count(*)` per topic is
        // answered from the Statistics record, see `summary_counts`).
        &format!("SELECT topic, count(log_time) FROM '{f}' GROUP BY topic"),
    )
    .await;
    assert_eq!(metric(&plan, "bytes_decompressed"), 0, "{plan}");
    assert_eq!(metric(&plan, "messages_read"), 826, "{plan}");
    let plan = analyze(&ctx, &format!("SELECT sum(length(data)) FROM '{f}'")).await;
    assert!(metric(&plan, "bytes_decompressed") > 0, "{plan}");
}

#[tokio::test]
async fn one_file_split_across_partitions_reads_each_message_once() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let config = SessionConfig::new()
        .with_target_partitions(4)
        .set_usize("datafusion.optimizer.repartition_file_min_size", 1);
    let ctx = logsql::session_context_with_config(config);
    let sql = format!(
        "SELECT count(*), count(DISTINCT log_time), sum(length(data)) FROM '{f}' WHERE length(data) >= 0"
    );
    let plan = analyze(&ctx, &sql).await;
    assert!(
        plan.contains("file_groups={4 groups"),
        "expected a split scan:\n{plan}"
    );
    assert_eq!(metric(&plan, "chunks_total"), 413, "{plan}");
    let split = text(&ctx, &sql).await;
    assert_eq!(split, text(&self::ctx(), &sql).await);
    assert!(split.contains("| 826 "), "{split}");
}

#[tokio::test]
async fn summary_table_functions() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let ctx = ctx();
    let out = text(&ctx, &format!("SELECT topic, message_type, message_encoding, message_count FROM topics('{f}') ORDER BY topic")).await;
    assert!(
        out.contains(
            "| /diagnostics | diagnostic_msgs/DiagnosticArray | ros1             | 52            |"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "| /tf          | tf2_msgs/TFMessage              | ros1             | 774           |"
        ),
        "{out}"
    );
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM chunks('{f}')")).await,
        vec![413]
    );
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT CAST(sum(message_count) AS BIGINT) FROM chunks('{f}')")
        )
        .await,
        vec![826]
    );
    let comp = text(
        &ctx,
        &format!("SELECT DISTINCT compression FROM chunks('{f}')"),
    )
    .await;
    assert!(comp.contains("zstd"), "{comp}");
    // topics() times bound the real ones.
    let t = text(&ctx, &format!(
        "SELECT t.topic FROM topics('{f}') t JOIN (SELECT topic, min(log_time) lo, max(log_time) hi FROM '{f}' GROUP BY topic) m \
         ON t.topic = m.topic WHERE t.start_time <= m.lo AND t.end_time >= m.hi ORDER BY 1"
    )).await;
    assert!(t.contains("/diagnostics") && t.contains("/tf"), "{t}");
}

#[tokio::test]
async fn attachments_and_metadata_functions() {
    let Some(dir) = fixtures::dir("mcap") else {
        return;
    };
    let ctx = ctx();
    let a = dir
        .join("conformance/OneAttachment/OneAttachment-ax.mcap")
        .display()
        .to_string();
    let out = text(&ctx, &format!("SELECT name, media_type, CAST(log_time AS BIGINT) AS t, data_size FROM attachments('{a}')")).await;
    assert!(
        out.contains("| myFile | application/octet-stream | 2 | 3         |"),
        "{out}"
    );
    let m = dir
        .join("conformance/OneMetadata/OneMetadata-mdx.mcap")
        .display()
        .to_string();
    let out = text(
        &ctx,
        &format!("SELECT name, metadata['foo'] AS foo FROM metadata('{m}')"),
    )
    .await;
    assert!(out.contains("| myMetadata | bar |"), "{out}");
}

#[tokio::test]
async fn directories_globs_and_external_tables() {
    let Some(dir) = fixtures::dir("mcap") else {
        return;
    };
    let ten = dir.join("conformance/TenMessages");
    let ctx = ctx();
    // A glob over 154 files, each with 10 messages.
    let glob = format!("{}/*.mcap", ten.display());
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{glob}'")).await,
        vec![1540]
    );
    assert_eq!(
        ints(&ctx, &format!("SELECT count(DISTINCT file) FROM '{glob}'")).await,
        vec![154]
    );
    // A directory that also holds .json files: only the log files are read.
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{}/'", ten.display())).await,
        vec![1540]
    );
    // CREATE EXTERNAL TABLE over a glob, and over one file.
    query(
        &ctx,
        &format!("CREATE EXTERNAL TABLE ten STORED AS MCAP LOCATION '{glob}'"),
    )
    .await;
    assert_eq!(
        ints(&ctx, "SELECT count(*) FROM ten WHERE sequence >= 5").await,
        vec![770]
    );
    let one = ten
        .join("TenMessages-ch-chx-mx-rch-rsh-st-sum.mcap")
        .display()
        .to_string();
    query(
        &ctx,
        &format!("CREATE EXTERNAL TABLE one STORED AS MCAP LOCATION '{one}'"),
    )
    .await;
    let out = text(
        &ctx,
        "SELECT CAST(log_time AS BIGINT) AS t, sequence FROM one ORDER BY t, sequence",
    )
    .await;
    let times: Vec<&str> = out
        .lines()
        .skip(3)
        .filter(|l| l.starts_with("| "))
        .collect();
    assert_eq!(times.len(), 10, "{out}");
    assert_eq!(
        ints(&ctx, "SELECT CAST(sum(sequence) AS BIGINT) FROM one").await,
        vec![45]
    );
}

#[tokio::test]
async fn every_conformance_file_with_messages_reads_through_sql() {
    let Some(dir) = fixtures::dir("mcap") else {
        return;
    };
    let ctx = ctx();
    let mut checked = 0;
    for base in ["OneMessage", "OneSchemalessMessage", "TenMessages"] {
        let want = if base == "TenMessages" { 10 } else { 1 };
        for entry in std::fs::read_dir(dir.join("conformance").join(base)).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_none_or(|e| e != "mcap") {
                continue;
            }
            let f = p.display().to_string();
            let n = ints(
                &ctx,
                &format!("SELECT count(*) FROM '{f}' WHERE length(data) = 3"),
            )
            .await;
            assert_eq!(n, vec![want], "{f}");
            let s = text(
                &ctx,
                &format!("SELECT DISTINCT topic, message_encoding FROM '{f}'"),
            )
            .await;
            assert!(s.contains("example"), "{f}: {s}");
            checked += 1;
        }
    }
    assert_eq!(checked, 154 + 74 + 154);
}

#[tokio::test]
async fn unknown_and_damaged_files_give_clear_errors() {
    let Some(f) = sample("compressed.mcap") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let junk = tmp.path().join("junk.mcap");
    std::fs::write(&junk, b"this is not a log file at all").unwrap();
    let ctx = ctx();
    let err = ctx
        .sql(&format!("SELECT * FROM '{}'", junk.display()))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let err = if err.is_empty() {
        ctx.sql(&format!("SELECT * FROM '{}'", junk.display()))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap_err()
            .to_string()
    } else {
        err
    };
    assert!(err.contains("junk.mcap"), "{err}");

    // Truncated in the middle of the data section: the readable prefix, then an error naming file and offset.
    let bytes = std::fs::read(&f).unwrap();
    let cut = tmp.path().join("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let c = cut.display().to_string();
    // The default (`auto`) reads the prefix of an unfinished recording; strict
    // (`error`) fails after it.
    let lenient = ints(&ctx, &format!("SELECT count(*) FROM '{c}'")).await[0];
    query(&ctx, "SET logsql.on_error = 'error'").await;
    let err = ctx
        .sql(&format!("SELECT count(*) FROM '{c}'"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cut.mcap") && err.contains("byte"), "{err}");
    query(&ctx, "SET logsql.on_error = 'warn'").await;
    let n = ints(&ctx, &format!("SELECT count(*) FROM '{c}'")).await[0];
    assert!(n > 300 && n < 826, "read {n} messages from half a file");
    assert_eq!(lenient, n);
    // Nothing invented: every message read from the cut file is in the full file.
    let missing = ints(
        &ctx,
        &format!(
            "SELECT count(*) FROM (SELECT topic, log_time, md5(data) FROM '{c}' EXCEPT SELECT topic, log_time, md5(data) FROM '{f}')"
        ),
    )
    .await;
    assert_eq!(missing, vec![0]);
}

/// The demo recording the repo carries (no fixtures needed).
const DEMO: &str = "tests/data/demo.mcap";

#[tokio::test]
async fn message_indexes_skip_chunks_with_nothing_in_the_window() {
    let ctx = ctx();
    // /diagnostics is at 1 Hz (x.003 s). The window (2.003 s, 2.9 s) overlaps the chunk
    // holding the 2.003 s message, but holds no /diagnostics message at all.
    let t = |ms: i64| format!("to_timestamp_millis({})", 1_700_000_000_000 + ms);
    let sql = |lo: i64, hi: i64| {
        format!(
            "SELECT count(*) AS n, sum(length(data)) AS b FROM '{DEMO}' \
             WHERE topic = '/diagnostics' AND log_time > {} AND log_time < {}",
            t(lo),
            t(hi)
        )
    };
    let plan = analyze(&ctx, &sql(2003, 2900)).await;
    assert_eq!(metric(&plan, "chunks_read"), 0, "{plan}");
    assert_eq!(metric(&plan, "bytes_decompressed"), 0, "{plan}");
    assert_eq!(ints(&ctx, &sql(2003, 2900)).await, vec![0]);
    // One millisecond earlier, the 2.003 s message is in: its chunk is read.
    let plan = analyze(&ctx, &sql(2002, 2900)).await;
    assert_eq!(metric(&plan, "chunks_read"), 1, "{plan}");
    assert_eq!(ints(&ctx, &sql(2002, 2900)).await, vec![1]);
}

#[tokio::test]
async fn demo_file_full_scan_matches_its_summary() {
    let ctx = ctx();
    let counts = text(
        &ctx,
        &format!("SELECT topic, count(*) AS n FROM '{DEMO}' WHERE length(data) > 0 GROUP BY topic ORDER BY topic"),
    )
    .await;
    let summary = text(
        &ctx,
        &format!(
            "SELECT topic, CAST(message_count AS BIGINT) AS n FROM topics('{DEMO}') ORDER BY topic"
        ),
    )
    .await;
    assert_eq!(counts, summary);
    assert!(counts.contains("| /imu               | 2000 |"), "{counts}");
}

/// A batch of the scan ends with a chunk once it holds a quarter of its row or
/// byte bound, so that the chunk buffers it holds come back for the next
/// chunk once it is consumed; a batch below that spans chunks, so small
/// chunks do not make small batches. Seen in the batches a query returns.
#[tokio::test]
async fn batches_end_with_a_chunk_once_a_quarter_full() {
    let ctx = logsql::session_context_with_config(SessionConfig::new().with_target_partitions(1));
    let per_chunk = ints(
        &ctx,
        &format!(
            "SELECT CAST(message_count AS BIGINT) FROM chunks('{DEMO}') \
             WHERE message_count > 0 ORDER BY chunk_index"
        ),
    )
    .await;
    assert_eq!(per_chunk.len(), 14, "{per_chunk:?}");
    assert_eq!(per_chunk.iter().sum::<i64>(), 2610);
    let batch_rows = |batches: Vec<datafusion::arrow::record_batch::RecordBatch>| {
        batches
            .iter()
            .map(|b| b.num_rows() as i64)
            .collect::<Vec<_>>()
    };
    let sql = format!("SELECT log_time, data FROM '{DEMO}'");
    // A scan in declared time order sends every chunk's rows at its end
    // anyway: this is about the others.
    query(&ctx, "SET logsql.time_order = false").await;
    // Each chunk holds about 60 KB of payloads: over a quarter of 128 KiB,
    // under the whole, so every batch is one chunk's messages.
    query(&ctx, "SET logsql.batch_bytes = 131072").await;
    assert_eq!(batch_rows(query(&ctx, &sql).await), per_chunk);
    // With the default bound (2 MiB, a quarter is 512 KiB; 8192 rows, a
    // quarter is 2048), a batch takes several chunks and ends with one.
    query(&ctx, "SET logsql.batch_bytes = 2097152").await;
    let got = batch_rows(query(&ctx, &sql).await);
    assert!(got.len() > 1 && got.len() < per_chunk.len(), "{got:?}");
    let chunk_ends: Vec<i64> = per_chunk
        .iter()
        .scan(0, |end, n| {
            *end += n;
            Some(*end)
        })
        .collect();
    let mut end = 0;
    for n in got {
        end += n;
        assert!(
            chunk_ends.contains(&end),
            "a batch ends at row {end}, inside a chunk"
        );
    }
}

#[tokio::test]
async fn channels_and_connections_functions() {
    let ctx = ctx();
    let out = text(
        &ctx,
        &format!(
            "SELECT topic, message_type, message_encoding, schema_encoding, length(schema) > 0 AS has_schema \
             FROM channels('{DEMO}') ORDER BY topic"
        ),
    )
    .await;
    assert!(
        out.contains("| /imu               | sensor_msgs/Imu             | ros1             | ros1msg         | true       |"),
        "{out}"
    );
    assert!(
        out.contains("| /diagnostics       | logsql_demo/Diagnostics     | json             | jsonschema      | true       |"),
        "{out}"
    );
    // The ROS view: the full message definition as text.
    let def = text(
        &ctx,
        &format!(
            "SELECT topic, strpos(message_definition, 'geometry_msgs/Vector3 linear_acceleration') > 0 AS ok \
             FROM connections('{DEMO}') WHERE topic = '/imu'"
        ),
    )
    .await;
    assert!(def.contains("| /imu  | true |"), "{def}");
}

#[tokio::test]
async fn topics_of_a_damaged_file_follow_on_error() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(DEMO).unwrap();
    let cut = tmp.path().join("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let c = cut.display().to_string();
    let ctx = ctx();
    query(&ctx, "SET logsql.on_error = 'error'").await;
    let sql = format!("SELECT topic, message_count FROM topics('{c}') ORDER BY topic");
    let err = ctx
        .sql(&sql)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cut.mcap") && err.contains("byte"), "{err}");
    query(&ctx, "SET logsql.on_error = 'warn'").await;
    let n: i64 = ints(
        &ctx,
        &format!("SELECT CAST(sum(message_count) AS BIGINT) FROM topics('{c}')"),
    )
    .await[0];
    let scanned = ints(&ctx, &format!("SELECT count(*) FROM '{c}'")).await[0];
    assert_eq!(n, scanned);
    assert!(n > 1000 && n < 2610, "{n}");
}

/// topics() times are each topic's exact first and last message time (from
/// the message indexes of the chunks that decide them), never widened by a
/// chunk that holds no messages: the demo file's first chunk has only schema
/// and channel records (index times 0..0, no message indexes).
#[tokio::test]
async fn topics_times_ignore_chunks_without_messages() {
    let ctx = ctx();
    let first_chunk = text(
        &ctx,
        &format!(
            "SELECT CAST(start_time AS BIGINT) AS s, CAST(end_time AS BIGINT) AS e, message_count \
             FROM chunks('{DEMO}') WHERE chunk_index = 0"
        ),
    )
    .await;
    assert!(first_chunk.contains("| 0 | 0 |"), "{first_chunk}");
    let out = text(
        &ctx,
        &format!(
            "SELECT t.topic, t.start_time, m.lo, t.end_time, m.hi FROM topics('{DEMO}') t \
             JOIN (SELECT topic, min(log_time) lo, max(log_time) hi FROM '{DEMO}' GROUP BY topic) m \
             ON t.topic = m.topic ORDER BY 1"
        ),
    )
    .await;
    assert_eq!(
        out,
        "+--------------------+--------------------------+--------------------------+--------------------------+--------------------------+\n\
         | topic              | start_time               | lo                       | end_time                 | hi                       |\n\
         +--------------------+--------------------------+--------------------------+--------------------------+--------------------------+\n\
         | /camera/compressed | 2023-11-14T22:13:20.001Z | 2023-11-14T22:13:20.001Z | 2023-11-14T22:13:29.901Z | 2023-11-14T22:13:29.901Z |\n\
         | /diagnostics       | 2023-11-14T22:13:20.003Z | 2023-11-14T22:13:20.003Z | 2023-11-14T22:13:29.003Z | 2023-11-14T22:13:29.003Z |\n\
         | /imu               | 2023-11-14T22:13:20Z     | 2023-11-14T22:13:20Z     | 2023-11-14T22:13:29.995Z | 2023-11-14T22:13:29.995Z |\n\
         | /tf                | 2023-11-14T22:13:20.002Z | 2023-11-14T22:13:20.002Z | 2023-11-14T22:13:29.982Z | 2023-11-14T22:13:29.982Z |\n\
         +--------------------+--------------------------+--------------------------+--------------------------+--------------------------+"
    );
}
