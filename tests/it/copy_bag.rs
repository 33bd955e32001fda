//! Writing ROS bags from SQL: `COPY (...) TO 'x.bag'` (or `STORED AS BAG`)
//! and `COPY (...) TO 'dir/' STORED AS DB3` from real recordings, read back
//! by logsql message for message (topic, log time, payload) with their
//! connection headers and topics; options; rows the formats cannot hold
//! refused with the output, row and topic named, leaving nothing behind.

use std::path::Path;

use datafusion::prelude::SessionContext;

use crate::fixtures;
use crate::sql::{error, ints, query, text};

/// Every message of `f`: topic, log time (ns) and payload digest, sorted.
const MESSAGES: &str = "SELECT topic, CAST(log_time AS BIGINT) AS t, md5(data) AS h \
     FROM '{f}' ORDER BY topic, t, h";

/// The connection headers of the channels with messages, one per topic and
/// type (a bag's several publishers of one topic become one connection).
const CONNECTIONS: &str = "SELECT topic, message_type, message_encoding, md5(schema) AS s, \
     metadata['md5sum'] AS md5sum, metadata['callerid'] IS NOT NULL AS has_callerid \
     FROM (SELECT *, row_number() OVER (PARTITION BY topic, message_type ORDER BY file, channel_id) AS rn \
     FROM channels('{f}')) \
     WHERE rn = 1 AND topic IN (SELECT topic FROM topics('{f}') WHERE message_count > 0) \
     ORDER BY topic, message_type";

/// The ROS 2 topics with messages: type, encoding, QoS profiles, definition.
const TOPICS: &str = "SELECT topic, message_type, message_encoding, \
     metadata['offered_qos_profiles'] AS qos, schema_encoding, md5(schema) AS s \
     FROM (SELECT *, row_number() OVER (PARTITION BY topic, message_type ORDER BY file, channel_id) AS rn \
     FROM channels('{f}')) \
     WHERE rn = 1 AND topic IN (SELECT topic FROM topics('{f}') WHERE message_count > 0) \
     ORDER BY topic, message_type";

async fn of(ctx: &SessionContext, sql: &str, f: &Path) -> String {
    text(ctx, &sql.replace("{f}", &f.display().to_string())).await
}

/// Runs `COPY (SELECT * FROM 'src') TO 'out' {tail}` and returns the rows written.
async fn copy(ctx: &SessionContext, src: &Path, out: &str, tail: &str) -> i64 {
    let sql = format!(
        "COPY (SELECT * FROM '{}' ORDER BY log_time) TO '{out}' {tail}",
        src.display()
    );
    ints(ctx, &sql).await[0]
}

fn count(ctx_rows: &str) -> usize {
    // Rows of a pretty table: its lines between the header and the last rule.
    ctx_rows.lines().count().saturating_sub(4)
}

#[tokio::test]
async fn copy_to_bag_keeps_every_message_and_connection_header_of_ros1_bags() {
    let mut sources = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.bag")];
    if let Some(dir) = fixtures::dir("rosbag") {
        for name in [
            "robot_localization-test1.bag",
            "embag-test.bag",
            "rosbagjs-example-lz4.bag",
            "rosbagjs-example-unsorted-chunks.bag",
            "webviz-only-a-cube.bag",
        ] {
            sources.push(dir.join(name));
        }
    }
    let ctx = logsql::session_context();
    let tmp = tempfile::tempdir().unwrap();
    for src in &sources {
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let out = tmp.path().join(format!("copy-{name}"));
        let rows = copy(&ctx, src, &out.display().to_string(), "").await;
        let expected = of(&ctx, MESSAGES, src).await;
        assert_eq!(rows as usize, count(&expected), "{name}");
        assert!(rows > 0, "{name}");
        assert!(std::fs::read(&out).unwrap().starts_with(b"#ROSBAG V2.0\n"));
        assert_eq!(of(&ctx, MESSAGES, &out).await, expected, "{name}");
        assert_eq!(
            of(&ctx, CONNECTIONS, &out).await,
            of(&ctx, CONNECTIONS, src).await,
            "{name}"
        );
        // Indexed: the summary states the count (no walk of the file).
        let stated = ints(
            &ctx,
            &format!("SELECT CAST(count(*) AS BIGINT) FROM '{}'", out.display()),
        )
        .await;
        assert_eq!(stated, [rows], "{name}");
    }
    // Any name with STORED AS BAG; chunk_size applies.
    let demo = &sources[0];
    let named = tmp.path().join("demo.out");
    let rows = copy(
        &ctx,
        demo,
        &named.display().to_string(),
        "STORED AS BAG OPTIONS (chunk_size 4096)",
    )
    .await;
    assert_eq!(
        of(&ctx, MESSAGES, &named).await,
        of(&ctx, MESSAGES, demo).await
    );
    let chunks = ints(
        &ctx,
        &format!(
            "SELECT CAST(count(*) AS BIGINT) FROM chunks('{}')",
            named.display()
        ),
    )
    .await;
    let default = ints(
        &ctx,
        &format!(
            "SELECT CAST(count(*) AS BIGINT) FROM chunks('{}')",
            tmp.path().join("copy-demo.bag").display()
        ),
    )
    .await;
    assert!(
        chunks[0] > default[0],
        "{chunks:?} vs {default:?} ({rows} rows)"
    );
}

#[tokio::test]
async fn copy_to_a_db3_directory_keeps_every_message_and_topic_of_ros2_recordings() {
    let mut sources = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.db3")];
    if let Some(ros2) = fixtures::dir("ros2") {
        sources.extend([
            // ROS 2 CDR in MCAP (rosbag2's MCAP storage).
            ros2.join("mcap/talker/talker.mcap"),
            ros2.join("mcap/cdr_test/cdr_test_0.mcap"),
            // rosbag2's SQLite storage.
            ros2.join("sqlite3/cdr_test"),
        ]);
    }
    let ctx = logsql::session_context();
    let tmp = tempfile::tempdir().unwrap();
    for src in &sources {
        let name = src.file_stem().unwrap().to_string_lossy().into_owned();
        let out = tmp.path().join(format!("copy-{name}"));
        let rows = copy(&ctx, src, &format!("{}/", out.display()), "STORED AS DB3").await;
        let expected = of(&ctx, MESSAGES, src).await;
        assert!(rows > 0, "{name}");
        assert_eq!(rows as usize, count(&expected), "{name}");
        // One database named for the directory and its metadata.yaml.
        let mut listed: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        listed.sort();
        assert_eq!(
            listed,
            [format!("copy-{name}_0.db3"), "metadata.yaml".to_string()],
            "{name}"
        );
        assert_eq!(of(&ctx, MESSAGES, &out).await, expected, "{name}");
        assert_eq!(
            of(&ctx, TOPICS, &out).await,
            of(&ctx, TOPICS, src).await,
            "{name}"
        );
    }
    // No temporary directory is left beside the outputs.
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
    // A directory that holds files is never replaced.
    let taken = tmp.path().join("copy-demo");
    let e = error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}/' STORED AS DB3",
            sources[0].display(),
            taken.display()
        ),
    )
    .await;
    assert!(e.contains("not an empty directory"), "{e}");
    // A database name is not a bag directory.
    let e = error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}'",
            sources[0].display(),
            tmp.path().join("x.db3").display()
        ),
    )
    .await;
    assert!(e.contains("a ROS 2 bag is a directory"), "{e}");
    assert!(!tmp.path().join("x.db3").exists());
}

#[tokio::test]
async fn rows_a_bag_cannot_hold_are_refused_naming_the_output_row_and_topic() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let ctx = logsql::session_context();
    let tmp = tempfile::tempdir().unwrap();
    // Rows of a file this query did not read (a Parquet copy): no connection header.
    let parquet = tmp.path().join("demo.parquet");
    query(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}'",
            data.join("demo.bag").display(),
            parquet.display()
        ),
    )
    .await;
    let out = tmp.path().join("y.bag");
    let e = error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}' ORDER BY log_time) TO '{}'",
            parquet.display(),
            out.display()
        ),
    )
    .await;
    assert!(
        e.contains(&format!(
            "writing ROS1 bag {}: row 1 (topic ",
            out.display()
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "has no ROS1 connection header: it comes from {}, which the query did not read",
            data.join("demo.bag").display()
        )),
        "{e}"
    );
    // JSON messages are not ROS1's.
    let e = error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}' WHERE topic = '/diagnostics') TO '{}'",
            data.join("demo.mcap").display(),
            out.display()
        ),
    )
    .await;
    assert!(
        e.contains(&format!(
            "writing ROS1 bag {}: row 1 (topic \"/diagnostics\") cannot be written: topic \"/diagnostics\" holds \"json\" messages: a ROS1 bag stores only ros1 messages",
            out.display()
        )),
        "{e}"
    );
    // A ros1 MCAP channel that states no md5sum gets the one ROS computes
    // from its definition (sensor_msgs/Imu's and tf2_msgs/TFMessage's).
    // (Written to a directory of its own: `tmp` must end up holding nothing new.)
    let written = tempfile::tempdir().unwrap();
    let mcap_out = written.path().join("from-mcap.bag");
    let rows = ints(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}' WHERE topic IN ('/imu', '/tf')) TO '{}'",
            data.join("demo.mcap").display(),
            mcap_out.display()
        ),
    )
    .await;
    assert_eq!(rows, [2500]);
    assert_eq!(
        of(
            &ctx,
            "SELECT topic, metadata['md5sum'] AS md5sum FROM channels('{f}') ORDER BY topic",
            &mcap_out
        )
        .await,
        "+-------+----------------------------------+\n\
         | topic | md5sum                           |\n\
         +-------+----------------------------------+\n\
         | /imu  | 6a62c6daae103f4ff57a132d6f95cec2 |\n\
         | /tf   | 94810edda583a504dfda3829e70d7eec |\n\
         +-------+----------------------------------+"
    );
    // ROS1 messages are not a ROS 2 bag's.
    let e = error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}/' STORED AS DB3",
            data.join("demo.bag").display(),
            tmp.path().join("z").display()
        ),
    )
    .await;
    assert!(e.contains("a ROS 2 bag holds cdr messages"), "{e}");
    // Unknown options are refused naming the known ones; columns are checked.
    let e = error(
        &ctx,
        &format!(
            "COPY (SELECT * FROM '{}') TO '{}' OPTIONS (level 3)",
            data.join("demo.bag").display(),
            out.display()
        ),
    )
    .await;
    assert!(
        e.contains(
            "unknown option 'format.level' for ROS1 bag output (known: chunk_size, compression)"
        ),
        "{e}"
    );
    let e = error(
        &ctx,
        &format!(
            "COPY (SELECT topic, log_time FROM '{}') TO '{}'",
            data.join("demo.bag").display(),
            out.display()
        ),
    )
    .await;
    assert!(
        e.contains("writing ROS1 bag needs the columns topic, log_time and data (missing: data"),
        "{e}"
    );
    // Nothing was left behind.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["demo.parquet"]);
}
