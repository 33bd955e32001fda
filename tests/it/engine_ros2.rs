//! ROS 2 bags (rosbag2 SQLite) through the scan engine: bag directories,
//! split bags, `STORED AS ROS2`, the `.db3` and MCAP twins of the official
//! test bags, `topics()` / `metadata()`, statistics, pushdown of time and
//! topic filters into SQLite (pages read, by the scan metrics), parallel
//! partitions of one database, decoding and clear errors.

use std::path::PathBuf;

use datafusion::prelude::SessionContext;
use serde_json::Value;

use crate::fixtures;
use crate::ros2_db3::{payload_of, write_bag};
use crate::sql::{analyze, error, ints, metric, pairs, text};

fn ctx() -> SessionContext {
    logsql::session_context()
}

fn dir() -> Option<PathBuf> {
    fixtures::dir("ros2")
}

#[tokio::test]
async fn bag_directories_give_the_sqlite_rows() {
    let Some(dir) = dir() else {
        return;
    };
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let ctx = ctx();
    let mut bags = 0;
    for (bag, want) in expected.as_object().unwrap() {
        let Some(rows) = want.get("sqlite_rows").and_then(Value::as_object) else {
            continue;
        };
        bags += 1;
        let path = format!("{}/", dir.join(bag).display());
        let got = pairs(
            &ctx,
            &format!("SELECT topic, count(*) FROM '{path}' GROUP BY topic ORDER BY topic"),
        )
        .await;
        let want_counts: Vec<(String, i64)> = rows
            .iter()
            .filter(|(_, r)| r["count"].as_i64() != Some(0))
            .map(|(t, r)| (t.clone(), r["count"].as_i64().unwrap()))
            .collect();
        assert_eq!(got, want_counts, "{bag}");
        for (agg, key) in [("min", "first"), ("max", "last")] {
            let got = pairs(
                &ctx,
                &format!(
                    "SELECT topic, {agg}(arrow_cast(log_time, 'Int64')) FROM '{path}' \
                     WHERE length(data) >= 0 GROUP BY topic ORDER BY topic"
                ),
            )
            .await;
            let want: Vec<(String, i64)> = rows
                .iter()
                .filter_map(|(t, r)| Some((t.clone(), r[key].as_i64()?)))
                .collect();
            assert_eq!(got, want, "{bag} {agg}");
        }
    }
    assert_eq!(bags, 10);
}

#[tokio::test]
async fn db3_bags_give_the_same_rows_as_their_mcap_twins() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let rows = |storage: &str, bag: &str| {
        format!(
            "SELECT topic, message_type, message_encoding, arrow_cast(log_time, 'Int64') t, md5(data) h \
             FROM '{}/' ORDER BY topic, t, h",
            dir.join(storage).join(bag).display()
        )
    };
    for bag in ["cdr_test", "convert_a", "convert_b", "talker", "wbag"] {
        let db3 = text(&ctx, &rows("sqlite3", bag)).await;
        let mcap = text(&ctx, &rows("mcap", bag)).await;
        assert_eq!(db3, mcap, "{bag}");
        assert!(db3.lines().count() > 8, "{bag}");
    }
    // Recorded twice (not converted): the same topics and counts, other times.
    let counts = |storage: &str| {
        format!(
            "SELECT topic, count(*) FROM '{}/' GROUP BY topic ORDER BY topic",
            dir.join(storage)
                .join("bag_with_topics_and_service_events")
                .display()
        )
    };
    assert_eq!(
        pairs(&ctx, &counts("sqlite3")).await,
        pairs(&ctx, &counts("mcap")).await
    );
}

#[tokio::test]
async fn stored_as_ros2_split_bags_and_directories_without_metadata() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let sq = dir.join("sqlite3");
    // The -wal and -shm files beside talker.db3 are left out, not refused.
    for (name, bag, n) in [
        ("t", "talker", 20),
        ("w", "wbag", 6074),
        ("m", "multiple_files_no_metadata", 3177),
    ] {
        ctx.sql(&format!(
            "CREATE EXTERNAL TABLE {name} STORED AS ROS2 LOCATION '{}/'",
            sq.join(bag).display()
        ))
        .await
        .unwrap();
        assert_eq!(
            ints(
                &ctx,
                &format!("SELECT count(*) FROM {name} WHERE length(data) >= 0")
            )
            .await,
            vec![n],
            "{bag}"
        );
    }
    // Each file of a split bag is read once: every file's rows, by file.
    assert_eq!(
        pairs(
            &ctx,
            "SELECT regexp_replace(file, '.*/', '') f, count(*) FROM w GROUP BY f ORDER BY f"
        )
        .await,
        vec![
            ("wbag_0.db3".to_string(), 1246),
            ("wbag_1.db3".to_string(), 1240),
            ("wbag_2.db3".to_string(), 1240),
            ("wbag_3.db3".to_string(), 1240),
            ("wbag_4.db3".to_string(), 1108),
        ]
    );
    // A glob of files.
    assert_eq!(
        ints(
            &ctx,
            &format!(
                "SELECT count(*) FROM '{}/wbag_[01].db3'",
                sq.join("wbag").display()
            )
        )
        .await,
        vec![2486]
    );
    // An empty bag with WAL files: no rows, its two topics.
    let empty = format!("{}/", sq.join("empty_bag").display());
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{empty}'")).await,
        vec![0]
    );
    assert_eq!(
        pairs(
            &ctx,
            &format!("SELECT topic, message_count FROM topics('{empty}') ORDER BY topic")
        )
        .await,
        vec![
            ("/parameter_events".to_string(), 0),
            ("/rosout".to_string(), 0)
        ]
    );
}

/// A directory of bag directories (as `ros2 bag record` leaves them) names
/// every bag below it, with no setting: each bag's rows by file, the same as
/// the bag read alone, in SQL, in `time_grid` (an episode per file) and in a
/// glob across the bag directories.
#[tokio::test]
async fn a_directory_of_bags_reads_every_bag_below_it() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let sq = dir.join("sqlite3");
    let all = format!("{}/", sq.display());
    let by_file = |table: String| {
        format!(
            "SELECT regexp_replace(file, '.*/sqlite3/', '') f, count(*) FROM {table} \
             WHERE length(data) >= 0 GROUP BY f ORDER BY f"
        )
    };
    let got = pairs(&ctx, &by_file(format!("'{all}'"))).await;
    for (bag, files) in [
        ("talker", 1),
        ("wbag", 5),
        ("multiple_files_no_metadata", 3),
    ] {
        let alone = pairs(&ctx, &by_file(format!("'{}/'", sq.join(bag).display()))).await;
        assert_eq!(alone.len(), files, "{bag}: {alone:?}");
        for row in &alone {
            assert!(got.contains(row), "{bag}: {row:?} not in {got:?}");
        }
    }
    let glob = pairs(&ctx, &by_file(format!("'{all}*/wbag_*.db3'"))).await;
    assert_eq!(glob.len(), 5, "{glob:?}");
    assert!(glob.iter().all(|row| got.contains(row)), "{glob:?}");
    let episodes = ints(
        &ctx,
        &format!("SELECT count(DISTINCT episode_index) FROM time_grid('{all}', 10)"),
    )
    .await;
    let files_with_messages = got.iter().filter(|(_, n)| *n > 0).count() as i64;
    assert_eq!(episodes, vec![files_with_messages]);
    // DataFusion's own default lists the directory's own files: none here.
    ctx.sql("SET datafusion.execution.listing_table_ignore_subdirectory = true")
        .await
        .unwrap();
    let e = error(&ctx, &format!("SELECT count(*) FROM '{all}'")).await;
    assert!(e.contains("no log files"), "{e}");
}

#[tokio::test]
async fn topics_metadata_and_statistics() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let talker = format!("{}/", dir.join("sqlite3/talker").display());
    assert_eq!(
        text(&ctx, &format!("SELECT * FROM topics('{talker}')")).await,
        "+-------------------+-----------------------------------+------------------+---------------+--------------------------------+--------------------------------+
| topic             | message_type                      | message_encoding | message_count | start_time                     | end_time                       |
+-------------------+-----------------------------------+------------------+---------------+--------------------------------+--------------------------------+
| /parameter_events | rcl_interfaces/msg/ParameterEvent | cdr              | 0             |                                |                                |
| /rosout           | rcl_interfaces/msg/Log            | cdr              | 10            | 2020-04-02T22:23:55.112411371Z | 2020-04-02T22:23:59.612761798Z |
| /topic            | std_msgs/msg/String               | cdr              | 10            | 2020-04-02T22:23:55.112609068Z | 2020-04-02T22:23:59.643508139Z |
+-------------------+-----------------------------------+------------------+---------------+--------------------------------+--------------------------------+"
    );
    assert_eq!(
        text(
            &ctx,
            &format!(
                "SELECT metadata['duration_ns'] d, metadata['starting_time_ns'] s, metadata['version'] v, \
                 metadata['compression_mode'] c FROM metadata('{talker}') WHERE name = 'rosbag2'"
            )
        )
        .await,
        "+------------+---------------------+---+---+
| d          | s                   | v | c |
+------------+---------------------+---+---+
| 4531096768 | 1585866235112411371 | 4 |   |
+------------+---------------------+---+---+"
    );
    assert_eq!(
        text(
            &ctx,
            &format!(
                "SELECT metadata['topic'] t, split_part(metadata['offered_qos_profiles'], '\n', 1) q \
                 FROM metadata('{talker}') WHERE name = 'rosbag2.topic' ORDER BY t"
            )
        )
        .await,
        "+-------------------+--------------+
| t                 | q            |
+-------------------+--------------+
| /parameter_events | - history: 3 |
| /rosout           | - history: 3 |
| /topic            | - history: 3 |
+-------------------+--------------+"
    );
    // count(*) comes from the summary: no scan at all.
    let plan = text(&ctx, &format!("EXPLAIN SELECT count(*) FROM '{talker}'")).await;
    assert!(!plan.contains("DataSourceExec"), "{plan}");
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{talker}'")).await,
        vec![20]
    );
}

#[tokio::test]
async fn time_and_topic_filters_read_about_their_share_of_the_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big_0.db3");
    // 12,000 messages of 1 KB, 1 ms apart: about 13 MB, three chunks.
    write_bag(&path, 12_000, 1000, true, false);
    let size = std::fs::metadata(&path).unwrap().len();
    let ctx = ctx();
    let bag = format!("{}/", dir.path().display());
    let chunks = ints(&ctx, &format!("SELECT count(*) FROM chunks('{bag}')")).await;
    assert_eq!(chunks, vec![3]);
    // A 1% window (120 ms) on one topic: 60 rows, about 1% of the pages.
    let window = "log_time >= arrow_cast(6000000000, 'Timestamp(Nanosecond, Some(\"UTC\"))') \
                  AND log_time < arrow_cast(6120000000, 'Timestamp(Nanosecond, Some(\"UTC\"))')";
    let sql = format!("SELECT sum(length(data)) FROM '{bag}' WHERE topic = '/imu' AND {window}");
    let plan = analyze(&ctx, &sql).await;
    assert_eq!(metric(&plan, "output_rows"), 60, "{plan}");
    assert_eq!(metric(&plan, "messages_read"), 60, "{plan}");
    assert_eq!(metric(&plan, "chunks_read"), 1, "{plan}");
    let read = metric(&plan, "bytes_read");
    assert!(
        read * 100 < size * 3,
        "read {read} of {size} bytes:\n{plan}"
    );
    assert_eq!(ints(&ctx, &sql).await, vec![60_000]);
    // A full scan reads every page once, over the partitions.
    let plan = analyze(&ctx, &format!("SELECT sum(length(data)) FROM '{bag}'")).await;
    let read = metric(&plan, "bytes_read");
    assert!(
        read >= size * 9 / 10,
        "read {read} of {size} bytes:\n{plan}"
    );
    assert_eq!(metric(&plan, "chunks_read"), 3, "{plan}");
    // The rows equal what was written, in order.
    let got = ints(
        &ctx,
        &format!("SELECT arrow_cast(log_time, 'Int64') FROM '{bag}' WHERE topic = '/gps' ORDER BY log_time LIMIT 3"),
    )
    .await;
    assert_eq!(got, vec![1_001_000_000, 1_003_000_000, 1_005_000_000]);
    assert_eq!(
        ints(
            &ctx,
            &format!(
                "SELECT count(*) FROM '{bag}' WHERE data = X'{}'",
                hex(&payload_of(11_999, 1000))
            )
        )
        .await,
        vec![1]
    );
}

/// Per-topic counts come from the bag's metadata, or else from one SQLite
/// `GROUP BY topic_id` in the summary, and each topic's first and last time
/// from two seeks on the timestamp index: `topics()` and `logsql info` read no
/// message rows through the engine.
#[tokio::test]
async fn topic_counts_come_from_the_database_not_from_the_messages() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.db3");
    let ctx = ctx();
    // demo.db3 has no metadata.yaml, and its stored metadata no topic counts.
    assert_eq!(
        text(
            &ctx,
            &format!("SELECT topic, message_count, start_time, end_time FROM topics('{demo}')")
        )
        .await,
        "+------------+---------------+--------------------------+--------------------------+
| topic      | message_count | start_time               | end_time                 |
+------------+---------------+--------------------------+--------------------------+
| /chatter   | 20            | 2023-11-14T22:13:20.003Z | 2023-11-14T22:13:21.903Z |
| /imu       | 200           | 2023-11-14T22:13:20Z     | 2023-11-14T22:13:21.990Z |
| /odom_rate | 20            | 2023-11-14T22:13:20.007Z | 2023-11-14T22:13:21.909Z |
+------------+---------------+--------------------------+--------------------------+"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(["info", demo])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(
        info.contains("topic_counts:    counted by SQLite (20 pages read)\n"),
        "{info}"
    );
    assert!(!info.contains("counted from message headers"), "{info}");
    for line in [
        "  /chatter    std_msgs/msg/String   cdr             20   10.05 Hz\n",
        "  /imu        sensor_msgs/msg/Imu   cdr            200  100.50 Hz\n",
        "  /odom_rate  std_msgs/msg/Float64  cdr             20   10.05 Hz\n",
    ] {
        assert!(info.contains(line), "{line:?} in\n{info}");
    }

    let Some(dir) = dir() else {
        return;
    };
    // A split bag: each database's own counts (metadata.yaml's are the bag's).
    let wbag = format!("{}/", dir.join("sqlite3/wbag").display());
    assert_eq!(
        pairs(
            &ctx,
            &format!("SELECT topic, message_count FROM topics('{wbag}') ORDER BY topic")
        )
        .await
        .iter()
        .map(|(t, n)| format!("{t}={n}"))
        .collect::<Vec<_>>()
        .join(" "),
        "AAA=804 BBB=742 CCC=742 DDD=753 EEE=804 FFF=772 GGG=731 HHH=726"
    );
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT sum(message_count) FROM topics('{wbag}')")
        )
        .await,
        vec![6074]
    );
    assert_eq!(
        ints(
            &ctx,
            &format!(
                "SELECT arrow_cast(start_time, 'Int64') FROM topics('{wbag}') WHERE topic = 'EEE' \
                 UNION ALL SELECT arrow_cast(min(log_time), 'Int64') FROM '{wbag}' WHERE topic = 'EEE'"
            )
        )
        .await,
        vec![1000, 1000]
    );
    // A directory without metadata.yaml.
    let nometa = dir.join("sqlite3/multiple_files_no_metadata/multiple_files_1.db3");
    assert_eq!(
        ints(
            &ctx,
            &format!("SELECT message_count FROM topics('{}')", nometa.display())
        )
        .await,
        vec![1324]
    );
}

/// Blobs larger than a page overflow to pages SQLite reads past its cache:
/// the scan's `bytes_read` counts them too.
#[tokio::test]
async fn a_full_scan_of_large_messages_counts_their_overflow_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("images_0.db3");
    // 600 messages of 20 KB: five overflow pages each.
    write_bag(&path, 600, 20_000, true, false);
    let size = std::fs::metadata(&path).unwrap().len();
    let ctx = ctx();
    let bag = format!("{}/", dir.path().display());
    let plan = analyze(&ctx, &format!("SELECT sum(length(data)) FROM '{bag}'")).await;
    let read = metric(&plan, "bytes_read");
    // (Each chunk's connection reads the b-trees' upper pages again.)
    assert!(
        read >= size * 9 / 10 && read <= size * 11 / 10,
        "read {read} of {size} bytes:\n{plan}"
    );
    // Without `data`, the rows' leaf pages (each holding up to a page of its
    // row's blob) and the index, but no overflow page.
    let plan = analyze(
        &ctx,
        // `count(log_time)`: a per-message column, so rows are read (a
        // bare `count(*)` per topic is answered from the summary's counts).
        &format!("SELECT count(log_time) FROM '{bag}' WHERE topic = '/imu'"),
    )
    .await;
    let read = metric(&plan, "bytes_read");
    assert!(read * 4 < size, "read {read} of {size} bytes:\n{plan}");
    assert_eq!(metric(&plan, "messages_read"), 300, "{plan}");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test]
async fn read_topic_decodes_with_the_bags_definitions() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let talker = format!("{}/", dir.join("sqlite3/talker").display());
    assert_eq!(
        text(
            &ctx,
            &format!("SELECT data FROM read_topic('{talker}', '/topic') ORDER BY log_time LIMIT 2")
        )
        .await,
        "+-----------------+
| data            |
+-----------------+
| Hello, world! 0 |
| Hello, world! 1 |
+-----------------+"
    );
    let cdr = format!("{}/", dir.join("sqlite3/cdr_test").display());
    assert_eq!(
        text(
            &ctx,
            &format!("SELECT string_values, int32_values_default FROM read_topic('{cdr}', '/array_topic') LIMIT 1")
        )
        .await,
        "+--------------------------------------------------+------------------------------+
| string_values                                    | int32_values_default         |
+--------------------------------------------------+------------------------------+
| [Complex Hello1, Complex Hello2, Complex Hello3] | [0, 2147483647, -2147483648] |
+--------------------------------------------------+------------------------------+"
    );
    let wrong = format!("{}/", dir.join("sqlite3/wrong_rmw_test").display());
    let err = error(
        &ctx,
        &format!("SELECT * FROM read_topic('{wrong}', '/test_topic')"),
    )
    .await;
    assert!(
        err.contains("metadata.yaml gives serialization format \"wrong_format\", the database \"cdr\": not decoded"),
        "{err}"
    );
}

#[tokio::test]
async fn a_database_that_is_not_a_bag_fails_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db3");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE users(id INTEGER);")
        .unwrap();
    let err = error(
        &ctx(),
        &format!("SELECT count(*) FROM '{}'", path.display()),
    )
    .await;
    assert!(
        err.contains(&format!(
            "{}: corrupt ros2 data at byte 0: an SQLite database but not a rosbag2 bag: no table topics, messages (tables: users)",
            path.display()
        )),
        "{err}"
    );
}

#[tokio::test]
async fn humble_bags_decode_with_the_bundled_interfaces_and_a_msg_path() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = ctx();
    let decoded = |storage: &str, bag: &str, topic: &str| {
        format!(
            "SELECT * EXCEPT (file, publish_time) FROM read_topic('{}/', '{topic}') ORDER BY 1, 2",
            dir.join(storage).join(bag).display()
        )
    };
    // (MCAP stores a publish time, rosbag2 SQLite none.)
    // wbag (no message_definitions): std_msgs/msg/String from the bundled
    // interfaces decodes as the MCAP twin (which stores its schema) does.
    let db3 = text(&ctx, &decoded("sqlite3", "wbag", "AAA")).await;
    assert_eq!(db3, text(&ctx, &decoded("mcap", "wbag", "AAA")).await);
    assert_eq!(db3.lines().count(), 804 + 4);
    assert!(db3.contains("| Hello, world! 1 - 1 "), "{db3}");
    // test_msgs is not bundled: the error names the type and the way out.
    let convert_a = format!("{}/", dir.join("sqlite3/convert_a").display());
    let err = error(
        &ctx,
        &format!("SELECT * FROM read_topic('{convert_a}', 'b_basictypes')"),
    )
    .await;
    assert!(
        err.contains("no message definition for test_msgs/msg/BasicTypes: the bag stores none (rosbag2 before Iron), logsql.msg_path is not set"),
        "{err}"
    );
    // With the type's .msg in a msg path: the same values as the MCAP twin.
    let msgs = tempfile::tempdir().unwrap();
    let pkg = msgs.path().join("test_msgs/msg");
    std::fs::create_dir_all(&pkg).unwrap();
    let def: String = rusqlite::Connection::open(dir.join("sqlite3/cdr_test/cdr_test_0.db3"))
        .unwrap()
        .query_row(
            "SELECT encoded_message_definition FROM message_definitions WHERE topic_type = 'test_msgs/msg/BasicTypes'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    std::fs::write(pkg.join("BasicTypes.msg"), def).unwrap();
    ctx.sql(&format!(
        "SET logsql.msg_path = '{}'",
        msgs.path().display()
    ))
    .await
    .unwrap();
    let db3 = text(&ctx, &decoded("sqlite3", "convert_a", "b_basictypes")).await;
    assert_eq!(
        db3,
        text(&ctx, &decoded("mcap", "convert_a", "b_basictypes")).await
    );
    assert_eq!(db3.lines().count(), 50 + 4);
}

/// The CLI: `--msg-path` sets `logsql.msg_path`; `info` on a bag database.
#[test]
fn cli_msg_path_and_info() {
    use std::process::Command;
    let Some(dir) = dir() else {
        return;
    };
    let msgs = tempfile::tempdir().unwrap();
    let pkg = msgs.path().join("test_msgs/msg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("BasicTypes.msg"),
        "bool bool_value\nbyte byte_value\nchar char_value\nfloat32 float32_value\nfloat64 float64_value\n\
         int8 int8_value\nuint8 uint8_value\nint16 int16_value\nuint16 uint16_value\nint32 int32_value\n\
         uint32 uint32_value\nint64 int64_value\nuint64 uint64_value\n",
    )
    .unwrap();
    let bag = format!("{}/", dir.join("sqlite3/convert_a").display());
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(["--msg-path", msgs.path().to_str().unwrap(), "--format", "csv", "-q"])
        .arg(format!(
            "SELECT count(*) AS n, min(uint8_value) AS lo, max(uint8_value) AS hi FROM read_topic('{bag}', 'b_basictypes')"
        ))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "n,lo,hi\n50,100,100\n"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args([
            "info",
            dir.join("sqlite3/talker/talker.db3").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "format:          ros2\n",
        "schema_version:  4\n",
        "ros_distro:      rolling\n",
        "timestamp_index: true\n",
        "messages:        20\n",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
}
