//! Writing MCAP (`COPY ... TO 'x.mcap'`, `logsql export out.mcap`): every
//! fixture of every format round-trips through an MCAP file to the same
//! `messages` rows, topics, channels and schemas; the conformance suite keeps
//! every message, schema, channel, metadata record and attachment; options,
//! rows without a `file` column, merged inputs, damaged sources and errors
//! during the write.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use datafusion::prelude::SessionContext;

use crate::fixtures;
use crate::sql::{ints, query, text};

/// A session that reads damaged fixtures with a warning (their readable rows
/// are compared).
async fn ctx() -> SessionContext {
    let ctx = logsql::session_context();
    query(&ctx, "SET logsql.on_error = 'warn'").await;
    ctx
}

/// The rows a round trip must keep (payloads by digest). A missing
/// publish_time is written as the log time, a missing sequence as 0.
const ROWS: &str = "SELECT topic, log_time, coalesce(publish_time, log_time) AS p, \
     coalesce(sequence, 0) AS s, message_type, message_encoding, md5(data) AS h \
     FROM '{f}' ORDER BY log_time, topic, s, h, p, message_type, message_encoding";

/// The channels (schemas by digest; "no schema" and a name-only schema
/// alike); without the schema columns for Apollo, whose schemas change form.
/// Channels of one file that share topic, type and encoding (a bag's several
/// publishers of one topic) are written as one, the lowest id's: only that one
/// is compared.
fn channels_sql(schema: bool) -> String {
    let (se, sh) = if schema {
        (
            "nullif(schema_encoding, '')",
            "CASE WHEN schema IS NULL OR length(schema) = 0 THEN NULL ELSE md5(schema) END",
        )
    } else {
        ("NULL", "NULL")
    };
    format!(
        "SELECT topic, message_type, message_encoding, {se} AS se, {sh} AS sh, metadata \
         FROM (SELECT *, row_number() OVER (PARTITION BY topic, message_type, message_encoding \
         ORDER BY channel_id) AS rn FROM channels('{{f}}')) \
         WHERE rn = 1 AND topic IN (SELECT topic FROM topics('{{f}}') WHERE message_count > 0) \
         ORDER BY topic, message_type, message_encoding, se, sh"
    )
}

/// Topics with messages (a channel without messages has no row to write).
const TOPICS: &str = "SELECT * FROM topics('{f}') WHERE message_count > 0 \
     ORDER BY topic, message_type, message_encoding";

const METADATA: &str = "SELECT name, metadata FROM metadata('{f}') ORDER BY name";
const ATTACHMENTS: &str = "SELECT name, media_type, log_time, create_time, data_size \
     FROM attachments('{f}') ORDER BY log_time, name, data_size";

fn sql(template: &str, f: &Path) -> String {
    template.replace("{f}", &f.display().to_string())
}

/// The rendered lines of a query, as a set (channels that differ only in
/// their id become one).
async fn line_set(ctx: &SessionContext, template: &str, f: &Path) -> BTreeSet<String> {
    text(ctx, &sql(template, f))
        .await
        .lines()
        .map(str::to_string)
        .collect()
}

/// `COPY (SELECT * FROM 'src') TO 'out'` with extra `options`; returns the count it reports.
async fn copy(ctx: &SessionContext, src: &Path, out: &Path, options: &str) -> i64 {
    let n = ints(
        ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}' {options}",
            src.display(),
            out.display()
        ),
    )
    .await;
    n[0]
}

/// Every file under `dir` (recursively) that is not documentation or expected output.
fn log_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            if name != "expected" && name != "conformance" {
                log_files(&p, out);
            }
        } else if !["md", "json", "tsv", "txt", "sh", "snap", "binpb", "ts"]
            .iter()
            .any(|e| name.ends_with(&format!(".{e}")))
        {
            out.push(p);
        }
    }
}

/// Compares a source and its MCAP copy: rows, topics, channels, metadata and attachments.
/// (A source without rows leaves nothing to name it in the output, so its
/// metadata and attachments are not carried over.)
async fn assert_round_trip(ctx: &SessionContext, src: &Path, out: &Path, rows: i64) {
    let tables: &[&str] = if rows > 0 {
        &[ROWS, TOPICS, METADATA, ATTACHMENTS]
    } else {
        &[ROWS, TOPICS]
    };
    for template in tables {
        assert_eq!(
            text(ctx, &sql(template, src)).await,
            text(ctx, &sql(template, out)).await,
            "{} -> {}: {template}",
            src.display(),
            out.display()
        );
    }
    // Apollo's schemas change form (proto_desc -> FileDescriptorSet): compared by decoding.
    let apollo = src.to_string_lossy().contains(".record");
    if apollo {
        assert_apollo_schemas_decode(ctx, src, out).await;
    }
    let channels = channels_sql(!apollo);
    assert_eq!(
        line_set(ctx, &channels, src).await,
        line_set(ctx, &channels, out).await,
        "{} -> {}: channels",
        src.display(),
        out.display()
    );
}

/// Every Apollo topic with a usable descriptor decodes (`read_topic`) to the
/// same values from the MCAP copy, whose schema is a `FileDescriptorSet`.
async fn assert_apollo_schemas_decode(ctx: &SessionContext, src: &Path, out: &Path) {
    let topics = text(
        ctx,
        &format!(
            "SELECT DISTINCT topic FROM channels('{}') WHERE metadata['descriptor'] = 'proto_desc' \
             AND topic IN (SELECT topic FROM topics('{}') WHERE message_count > 0) ORDER BY topic",
            src.display(),
            src.display()
        ),
    )
    .await;
    for topic in topics.lines().skip(3).filter(|l| l.starts_with('|')) {
        let topic = topic.trim_matches(|c| c == '|' || c == ' ');
        let decoded = |f: &Path| {
            format!(
                "SELECT * EXCEPT (file, publish_time) FROM read_topic('{}', '{topic}', 'flatten') ORDER BY log_time",
                f.display()
            )
        };
        let (a, b) = (
            text(ctx, &decoded(src)).await,
            text(ctx, &decoded(out)).await,
        );
        assert_eq!(a, b, "{} {topic}: decoded", src.display());
        assert!(a.lines().count() > 4, "{topic}: no rows decoded");
    }
}

/// The fixtures of every format and the repository's demo files.
fn all_fixtures() -> Option<Vec<PathBuf>> {
    let mut files = Vec::new();
    for format in ["apollo", "bddf", "carla", "rosbag", "ros2", "mcap"] {
        log_files(&fixtures::dir(format)?, &mut files);
    }
    log_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data"),
        &mut files,
    );
    Some(files)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fixture_round_trips_through_mcap() {
    let Some(files) = all_fixtures() else {
        return;
    };
    let ctx = ctx().await;
    let dir = tempfile::tempdir().unwrap();
    let (mut copied, mut unreadable) = (0, Vec::new());
    for (i, src) in files.iter().enumerate() {
        // Files that are no log at all (bad magic, empty) have nothing to copy.
        let Some(rows) = error_free(&ctx, src).await else {
            unreadable.push(src.file_name().unwrap().to_string_lossy().to_string());
            continue;
        };
        let out = dir.path().join(format!("{i}.mcap"));
        let n = copy(&ctx, src, &out, "").await;
        assert_eq!(n, rows, "{}", src.display());
        assert_round_trip(&ctx, src, &out, rows).await;
        copied += 1;
    }
    // rosbag2 SQLite bags (and their metadata.yaml) are no format logsql reads.
    unreadable.retain(|n| {
        ![".db3", ".db3-shm", ".db3-wal", "metadata.yaml"]
            .iter()
            .any(|e| n.ends_with(e))
    });
    assert_eq!(
        unreadable,
        ["synth_bad_magic.log", "rosbagjs-empty-file.bag"]
    );
    assert!(copied >= 79, "only {copied} fixtures copied");
}

/// The row count of `src`, or `None` when it cannot be read.
async fn error_free(ctx: &SessionContext, src: &Path) -> Option<i64> {
    let df = ctx
        .sql(&format!("SELECT count(*) FROM '{}'", src.display()))
        .await
        .ok()?;
    let b = df.collect().await.ok()?;
    let c = b[0].column(0);
    Some(
        datafusion::arrow::array::AsArray::as_primitive::<datafusion::arrow::datatypes::Int64Type>(
            c,
        )
        .value(0),
    )
}

/// The messages of an MCAP file as the official `mcap` crate reads them:
/// (topic, log_time, payload length), in file order.
fn official_messages(path: &Path) -> Vec<(String, u64, usize)> {
    let bytes = std::fs::read(path).unwrap();
    mcap::MessageStream::new(&bytes)
        .unwrap()
        .map(|m| {
            let m = m.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (m.channel.topic.clone(), m.log_time, m.data.len())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn conformance_files_keep_every_message_schema_and_channel() {
    let Some(dir) = fixtures::dir("mcap") else {
        return;
    };
    let mut files = Vec::new();
    let mut stack = vec![dir.join("conformance")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "mcap") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert_eq!(files.len(), 416);
    let ctx = ctx().await;
    let out_dir = tempfile::tempdir().unwrap();
    let (mut with_messages, mut messages) = (0, 0);
    for (i, src) in files.iter().enumerate() {
        let rows = error_free(&ctx, src)
            .await
            .unwrap_or_else(|| panic!("{} unreadable", src.display()));
        let out = out_dir.path().join(format!("{i}.mcap"));
        assert_eq!(copy(&ctx, src, &out, "").await, rows);
        assert_round_trip(&ctx, src, &out, rows).await;
        // The official reader sees the same messages.
        let official = official_messages(&out);
        assert_eq!(official.len() as i64, rows, "{}", src.display());
        if rows > 0 {
            with_messages += 1;
            messages += rows;
        }
    }
    // Every variant of OneMessage, TenMessages, OneSchemalessMessage, ... .
    assert_eq!(with_messages, 382);
    assert!(messages >= 382, "{messages}");
}

#[tokio::test]
async fn options_choose_compression_chunk_size_and_summary() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.mcap");
    let ctx = ctx().await;
    let dir = tempfile::tempdir().unwrap();
    let chunks = |f: &Path| {
        format!(
            "SELECT compression, count(*) AS chunks FROM chunks('{}') GROUP BY compression",
            f.display()
        )
    };
    // Default: zstd, 1 MiB chunks, indexed.
    let out = dir.path().join("default.mcap");
    assert_eq!(copy(&ctx, &src, &out, "").await, 2610);
    let t = text(&ctx, &chunks(&out)).await;
    assert!(t.contains("| zstd        | 1      |"), "{t}");
    let bytes = std::fs::read(&out).unwrap();
    let summary = mcap::Summary::read(&bytes).unwrap().expect("a summary");
    assert_eq!(summary.stats.unwrap().message_count, 2610);
    assert_eq!(summary.chunk_indexes.len(), 1);

    // lz4, 64 KiB chunks.
    let out = dir.path().join("lz4.mcap");
    let n = copy(
        &ctx,
        &src,
        &out,
        "STORED AS MCAP OPTIONS ('compression' 'lz4', 'format.chunk_size' '65536')",
    )
    .await;
    assert_eq!(n, 2610);
    let (many, lz4) = (
        ints(
            &ctx,
            &format!("SELECT count(*) FROM chunks('{}')", out.display()),
        )
        .await[0],
        ints(
            &ctx,
            &format!(
                "SELECT count(*) FROM chunks('{}') WHERE compression = 'lz4'",
                out.display()
            ),
        )
        .await[0],
    );
    assert!(many > 3, "{many} chunks");
    assert_eq!(many, lz4);

    // No compression, no summary: readers walk the file.
    let out = dir.path().join("plain.mcap");
    copy(
        &ctx,
        &src,
        &out,
        "OPTIONS (compression 'none', summary 'false')",
    )
    .await;
    let bytes = std::fs::read(&out).unwrap();
    assert!(mcap::Summary::read(&bytes).unwrap().is_none());
    assert_eq!(official_messages(&out).len(), 2610);
    assert_round_trip(&ctx, &src, &out, 2610).await;
    let t = text(&ctx, &chunks(&out)).await;
    assert!(!t.contains("zstd") && !t.contains("lz4"), "{t}");

    // Bad options are refused before anything is written.
    let bad = dir.path().join("bad.mcap");
    let e = crate::sql::error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}' OPTIONS (compression 'brotli')",
            src.display(),
            bad.display()
        ),
    )
    .await;
    assert!(
        e.contains("MCAP compression 'brotli' is not one of zstd, lz4, none"),
        "{e}"
    );
    let e = crate::sql::error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}' OPTIONS (level '3')",
            src.display(),
            bad.display()
        ),
    )
    .await;
    assert!(
        e.contains("unknown option 'format.level' for MCAP output (known: compression, chunk_size, summary)"),
        "{e}"
    );
    let e = crate::sql::error(
        &ctx,
        &format!(
            "COPY (SELECT topic, log_time FROM '{}') TO '{}'",
            src.display(),
            bad.display()
        ),
    )
    .await;
    assert!(
        e.contains("writing MCAP needs the columns topic, log_time and data (missing: data; the query has: topic, log_time)"),
        "{e}"
    );
    assert!(!bad.exists());
    // The formats logsql does not write are read-only (MCAP, ROS1 bags and
    // ROS 2 bags are written: `copy_bag`); STORED AS MCAP writes any name.
    let e = crate::sql::error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}' STORED AS CARLA",
            src.display(),
            dir.path().join("x.log").display()
        ),
    )
    .await;
    assert!(
        e.contains(
            "logsql writes log files as MCAP, ROS1 bag or ROS 2 bag only (carla is read-only)"
        ),
        "{e}"
    );
    assert!(!dir.path().join("x.log").exists());
    let named = dir.path().join("extract.out");
    assert_eq!(copy(&ctx, &src, &named, "STORED AS MCAP").await, 2610);
    assert_eq!(official_messages(&named).len(), 2610);
}

#[tokio::test]
async fn rows_without_a_file_column_get_channels_from_their_own_columns() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.bag");
    let ctx = ctx().await;
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("no_file.parquet");
    query(
        &ctx,
        &format!(
            "COPY (SELECT * EXCEPT (file) FROM '{}') TO '{}'",
            src.display(),
            parquet.display()
        ),
    )
    .await;
    let out = dir.path().join("from_parquet.mcap");
    assert_eq!(copy(&ctx, &parquet, &out, "").await, 625);
    // Same rows and topics; each channel's schema record names the type only.
    assert_eq!(
        text(&ctx, &sql(ROWS, &src)).await,
        text(&ctx, &sql(ROWS, &out)).await
    );
    assert_eq!(
        text(&ctx, &sql(TOPICS, &src)).await,
        text(&ctx, &sql(TOPICS, &out)).await
    );
    assert_eq!(
        text(
            &ctx,
            &format!(
                "SELECT topic, message_type, schema_encoding, length(schema) AS n, cardinality(metadata) AS m \
                 FROM channels('{}') WHERE topic IN ('/imu', '/chatter') ORDER BY topic",
                out.display()
            )
        )
        .await,
        "+----------+-----------------+-----------------+---+---+\n\
         | topic    | message_type    | schema_encoding | n | m |\n\
         +----------+-----------------+-----------------+---+---+\n\
         | /chatter | std_msgs/String |                 | 0 | 0 |\n\
         | /imu     | sensor_msgs/Imu |                 | 0 | 0 |\n\
         +----------+-----------------+-----------------+---+---+"
    );
    // A Parquet export that kept `file` names the bag, but the COPY did not
    // scan it: the bag is not opened, and the channels are the same name-only ones.
    let with_file = dir.path().join("with_file.parquet");
    query(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}'",
            src.display(),
            with_file.display()
        ),
    )
    .await;
    let again = dir.path().join("from_parquet_with_file.mcap");
    assert_eq!(copy(&ctx, &with_file, &again, "").await, 625);
    let channels = |p: &Path| {
        format!(
            "SELECT topic, message_type, schema_encoding, length(schema) AS n, cardinality(metadata) AS m \
             FROM channels('{}') ORDER BY topic",
            p.display()
        )
    };
    assert_eq!(
        text(&ctx, &channels(&out)).await,
        text(&ctx, &channels(&again)).await
    );
}

#[tokio::test]
async fn split_recordings_merge_into_one_file_in_log_time_order() {
    let Some(dir) = fixtures::dir("apollo") else {
        return;
    };
    let glob = dir.join("generated/segmented.record.*");
    let ctx = ctx().await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("merged.mcap");
    let total = ints(&ctx, &format!("SELECT count(*) FROM '{}'", glob.display())).await[0];
    let n = ints(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}' ORDER BY log_time) TO '{}'",
            glob.display(),
            out.display()
        ),
    )
    .await[0];
    assert_eq!(n, total);
    assert!(total > 900, "{total}");
    let msgs = official_messages(&out);
    assert_eq!(msgs.len() as i64, total);
    assert!(msgs.windows(2).all(|w| w[0].1 <= w[1].1), "log_time order");
    // The segments re-declare the same channels: one channel per topic.
    let channels = ints(
        &ctx,
        &format!(
            "SELECT count(*) - count(DISTINCT topic) FROM channels('{}')",
            out.display()
        ),
    )
    .await[0];
    assert_eq!(channels, 0);
    assert_eq!(
        text(&ctx, &sql(ROWS, &glob)).await,
        text(&ctx, &sql(ROWS, &out)).await
    );
}

#[tokio::test]
async fn an_error_during_the_write_leaves_no_file_under_the_target_name() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.mcap");
    let ctx = ctx().await;
    query(&ctx, "SET datafusion.execution.batch_size = 100").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("incident.mcap");
    // A previous file under the name survives a failed COPY untouched.
    std::fs::write(&out, b"previous").unwrap();
    // Rows after the first second have no topic: the writer fails mid-file.
    let e = crate::sql::error(
        &ctx,
        &format!(
            "COPY (SELECT CASE WHEN log_time < '2023-11-14T22:13:21Z' THEN topic END AS topic, \
             log_time, data FROM '{}' ORDER BY log_time) TO '{}'",
            src.display(),
            out.display()
        ),
    )
    .await;
    assert!(e.contains("has a null topic"), "{e}");
    assert!(
        e.contains(&format!("writing MCAP {}: row ", out.display())),
        "{e}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names, ["incident.mcap"], "no partial file is left");
    // A directory target is refused.
    let e = crate::sql::error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}/' STORED AS MCAP",
            src.display(),
            dir.path().display()
        ),
    )
    .await;
    assert!(e.contains("MCAP is written to one file"), "{e}");
}

#[tokio::test]
async fn a_damaged_source_gives_a_complete_file_then_the_error() {
    let Some(src) = fixtures::file("apollo", "generated/crash_torn_tail.record") else {
        return;
    };
    let ctx = logsql::session_context();
    query(&ctx, "SET logsql.on_error = 'error'").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("torn.mcap");
    let e = crate::sql::error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}'",
            src.display(),
            out.display()
        ),
    )
    .await;
    assert!(
        e.contains("CHUNK_BODY section of 122782 bytes is torn"),
        "{e}"
    );
    assert!(
        e.contains("COPY wrote 401 rows to a complete, valid output"),
        "{e}"
    );
    assert_eq!(official_messages(&out).len(), 401);
    assert_round_trip(&crate::mcap_writer::ctx().await, &src, &out, 401).await;
}

#[test]
fn export_writes_mcap_with_filters_and_options() {
    use std::process::Command;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.bag");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("window.mcap");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_logsql"))
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&[
        "export",
        src.to_str().unwrap(),
        out.to_str().unwrap(),
        "--topic",
        "/imu",
        "--topic",
        "/odom",
        "--start",
        "2023-11-14T22:13:20.5Z",
        "--end",
        "2023-11-14T22:13:21.5Z",
        "--compression",
        "lz4",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout.starts_with(&format!("exported 250 rows to {} (", out.display())),
        "{stdout}"
    );
    let msgs = official_messages(&out);
    assert_eq!(msgs.len(), 250);
    assert!(msgs.windows(2).all(|w| w[0].1 <= w[1].1), "log_time order");
    let topics: BTreeSet<&str> = msgs.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(topics, BTreeSet::from(["/imu", "/odom"]));
    assert!(
        msgs.iter()
            .all(|m| (1_700_000_000_500_000_000..1_700_000_001_500_000_000).contains(&m.1))
    );
    let bytes = std::fs::read(&out).unwrap();
    let summary = mcap::Summary::read(&bytes).unwrap().unwrap();
    assert!(summary.chunk_indexes.iter().all(|c| c.compression == "lz4"));
    // MCAP-only flags on Parquet output, and --decode to MCAP, are refused.
    let o = run(&[
        "export",
        src.to_str().unwrap(),
        dir.path().join("x.parquet").to_str().unwrap(),
        "--no-summary",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--no-summary applies to MCAP output (an OUTPUT ending in .mcap)")
    );
    let o = run(&[
        "export",
        src.to_str().unwrap(),
        out.to_str().unwrap(),
        "--decode",
        "--topic",
        "/imu",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--decode writes Parquet"));
}

#[tokio::test]
async fn bddf_series_get_protobuf_schemas_from_a_descriptor_set() {
    let (Some(src), Some(set)) = (
        fixtures::file("bddf", "basic.bddf"),
        fixtures::file("bddf", "bosdyn_api_descriptors.binpb"),
    ) else {
        return;
    };
    let ctx = ctx().await;
    query(
        &ctx,
        &format!("SET logsql.descriptor_set = '{}'", set.display()),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("basic.mcap");
    let rows = error_free(&ctx, &src).await.unwrap();
    assert_eq!(copy(&ctx, &src, &out, "").await, rows);
    // Every protobuf series' schema is a FileDescriptorSet; the copy decodes
    // (read_topic) to the same values as the source.
    let t = text(
        &ctx,
        &format!(
            "SELECT count(*) AS n, count(*) FILTER (WHERE schema_encoding = 'protobuf' AND length(schema) > 0) AS with_schema \
             FROM channels('{}') WHERE message_encoding = 'protobuf'",
            out.display()
        ),
    )
    .await;
    let n: Vec<&str> = t
        .lines()
        .nth(3)
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(n[1], n[2], "{t}");
    assert_ne!(n[1], "0", "{t}");
    let topic = text(
        &ctx,
        &format!(
            "SELECT topic FROM channels('{}') WHERE message_encoding = 'protobuf' ORDER BY topic LIMIT 1",
            out.display()
        ),
    )
    .await;
    let topic = topic
        .lines()
        .nth(3)
        .unwrap()
        .trim_matches(|c| c == '|' || c == ' ');
    let decoded = |f: &Path| {
        format!(
            "SELECT * EXCEPT (file, publish_time) FROM read_topic('{}', '{topic}', 'flatten') ORDER BY log_time",
            f.display()
        )
    };
    let a = text(&ctx, &decoded(&src)).await;
    assert_eq!(a, text(&ctx, &decoded(&out)).await);
    assert!(a.lines().count() > 4, "{a}");
}

#[tokio::test]
async fn copy_to_an_object_store_uploads_the_finished_file() {
    use datafusion::object_store::memory::InMemory;
    use datafusion::object_store::{ObjectStoreExt, path::Path as ObjectPath};
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.bag");
    let ctx = ctx().await;
    let store = std::sync::Arc::new(InMemory::new());
    let url = url::Url::parse("memory://bucket").unwrap();
    ctx.register_object_store(&url, store.clone());
    let n = ints(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO 'memory://bucket/runs/demo.mcap'",
            src.display()
        ),
    )
    .await;
    assert_eq!(n, [625]);
    let bytes = store
        .get(&ObjectPath::from("runs/demo.mcap"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("demo.mcap");
    std::fs::write(&local, &bytes).unwrap();
    assert_round_trip(&ctx, &src, &local, 625).await;
}
