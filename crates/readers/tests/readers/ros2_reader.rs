//! The ROS 2 (rosbag2 SQLite) reader without the engine: every fixture bag
//! against `expected.json`'s `sqlite_rows` (the databases' own rows), schema
//! versions, bags written here (per-message and whole-file zstd, no timestamp
//! index, a database that is not a bag), and truncation / corruption sweeps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use logsql_readers::formats::FormatReader;
use logsql_readers::formats::ros2::Ros2Format;
use logsql_readers::io::{BytesReader, FileReader, ReadAt};
use logsql_readers::model::{Flow, Message, Selection};
use md5::{Digest, Md5};
use serde_json::Value;

use crate::fixtures;
use crate::ros2_db3::{fill_bag, payload_of, write_bag};

/// One message as the tests compare it: topic, log time, payload.
type Row = (String, u64, Vec<u8>);

/// Every message of `file` (all chunks in order), or the first error.
pub fn read_all(file: &dyn ReadAt) -> Result<Vec<Row>, logsql_readers::Error> {
    let f = Ros2Format;
    let summary = f.summary(file)?;
    let mut out = Vec::new();
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            out.push((m.channel.topic.clone(), m.log_time, m.data.to_vec()));
            Flow::Continue
        };
        f.read_chunk(file, &summary, chunk, &Selection::all(), &mut receiver)?;
    }
    Ok(out)
}

/// Per topic: type, serialization format, count, first and last time, and
/// the md5 of the per-message md5s.
type TopicFacts = (String, String, u64, Option<u64>, Option<u64>, Md5);

fn expected(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The `.db3` files of a bag directory, in name order.
fn db3_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "db3"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_fixture_bag_equals_the_sqlite_rows() {
    let Some(dir) = fixtures::dir("ros2") else {
        return;
    };
    let expected = expected(&dir);
    let mut bags = 0;
    for (bag, want) in expected.as_object().unwrap() {
        let Some(rows) = want.get("sqlite_rows").and_then(Value::as_object) else {
            continue;
        };
        bags += 1;
        // Per topic: type, serialization format, count, first, last, md5 of
        // the per-message md5s (file by file, each by timestamp then id).
        let mut got: BTreeMap<String, TopicFacts> = BTreeMap::new();
        for path in db3_files(&dir.join(bag)) {
            let file = FileReader::open(&path).unwrap();
            let summary = Ros2Format.summary(&file).unwrap();
            for ch in summary.channels.values() {
                got.entry(ch.topic.clone()).or_insert_with(|| {
                    (
                        ch.message_type.clone().unwrap(),
                        ch.message_encoding.clone(),
                        0,
                        None,
                        None,
                        Md5::new(),
                    )
                });
            }
            for (topic, time, data) in read_all(&file).unwrap() {
                let e = got.get_mut(&topic).unwrap();
                e.2 += 1;
                e.3 = Some(e.3.map_or(time, |t| t.min(time)));
                e.4 = Some(e.4.map_or(time, |t| t.max(time)));
                e.5.update(Md5::digest(&data));
            }
        }
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            rows.keys().collect::<Vec<_>>(),
            "{bag}"
        );
        for (topic, (ty, fmt, n, first, last, md5)) in got {
            let w = &rows[&topic];
            assert_eq!(ty, w["type"].as_str().unwrap(), "{bag} {topic}");
            assert_eq!(
                fmt,
                w["serialization_format"].as_str().unwrap(),
                "{bag} {topic}"
            );
            assert_eq!(n, w["count"].as_u64().unwrap(), "{bag} {topic}");
            assert_eq!(first, w["first"].as_u64(), "{bag} {topic}");
            assert_eq!(last, w["last"].as_u64(), "{bag} {topic}");
            assert_eq!(
                format!("{:x}", md5.finalize()),
                w["md5_of_md5s_by_time_then_id"].as_str().unwrap(),
                "{bag} {topic}"
            );
        }
    }
    assert_eq!(bags, 10);
}

#[test]
fn schema_versions_and_metadata_are_read() {
    let Some(dir) = fixtures::dir("ros2") else {
        return;
    };
    let open = |p: &str| FileReader::open(dir.join("sqlite3").join(p)).unwrap();
    let prop = |s: &logsql_readers::model::Summary, k: &str| {
        s.properties
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    // Schema version 4 (Iron+): schema table, message definitions, QoS column.
    let talker = Ros2Format.summary(&open("talker/talker.db3")).unwrap();
    assert_eq!(prop(&talker, "schema_version").as_deref(), Some("4"));
    assert_eq!(prop(&talker, "ros_distro").as_deref(), Some("rolling"));
    assert_eq!(prop(&talker, "timestamp_index").as_deref(), Some("true"));
    let topic = talker
        .channels
        .values()
        .find(|c| c.topic == "/topic")
        .unwrap();
    assert_eq!(topic.schema_encoding.as_deref(), Some("ros2msg"));
    assert_eq!(topic.schema.as_deref(), Some(&b"string data"[..]));
    assert!(topic.metadata["offered_qos_profiles"].starts_with("- history: 3\n"));
    assert_eq!(talker.message_count, Some(20));
    assert_eq!(talker.start_time, Some(1585866235112411371));
    assert_eq!(talker.end_time, Some(1585866239643508139));
    // metadata.yaml counts match the database: exact per-topic counts.
    let counts = talker.topic_message_counts().unwrap();
    assert_eq!(counts["/topic"], 10);
    assert_eq!(counts["/parameter_events"], 0);
    let bag = &talker.metadata[0];
    assert_eq!(bag.name, "rosbag2");
    assert_eq!(bag.metadata["duration_ns"], "4531096768");
    assert_eq!(bag.metadata["starting_time_ns"], "1585866235112411371");
    assert_eq!(bag.metadata["compression_mode"], "");
    assert_eq!(talker.metadata.len(), 4, "the bag and its three topics");
    // The older layout: topics and messages only, no definitions.
    let wbag0 = Ros2Format.summary(&open("wbag/wbag_0.db3")).unwrap();
    assert_eq!(prop(&wbag0, "schema_version"), None);
    assert!(wbag0.channels.values().all(|c| c.schema.is_none()));
    assert_eq!(wbag0.message_count, Some(1246));
    // A split bag: metadata.yaml's per-topic counts are the bag's, not the
    // file's, so SQLite counts the file's own; the bag's facts go with the
    // first file only.
    let counts = wbag0.topic_message_counts().unwrap();
    assert_eq!(counts["AAA"], 174);
    assert_eq!(counts["HHH"], 148);
    assert_eq!(counts.values().sum::<u64>(), 1246);
    assert!(
        prop(&wbag0, "topic_counts").is_some_and(|p| p.starts_with("counted by SQLite (")),
        "{:?}",
        wbag0.properties
    );
    assert_eq!(
        prop(&talker, "topic_counts").as_deref(),
        Some("metadata.yaml")
    );
    assert_eq!(wbag0.metadata[0].metadata["message_count"], "6074");
    let wbag1 = Ros2Format.summary(&open("wbag/wbag_1.db3")).unwrap();
    assert!(wbag1.metadata.is_empty());
    // metadata.yaml says `wrong_format`, the database `cdr`: both are kept.
    let wrong = Ros2Format
        .summary(&open("wrong_rmw_test/wrong_rmw_test_0.db3"))
        .unwrap();
    let ch = wrong.channels.values().next().unwrap();
    assert_eq!(ch.message_encoding, "cdr");
    assert_eq!(ch.metadata["metadata_serialization_format"], "wrong_format");
    let err = logsql_decode::decoder_of(ch, &Ros2Format.schema_of(ch))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("metadata.yaml gives serialization format \"wrong_format\""),
        "{err}"
    );
    // An empty bag with (empty) WAL and SHM files beside it.
    let empty = Ros2Format
        .summary(&open("empty_bag/empty_bag_0.db3"))
        .unwrap();
    assert_eq!(empty.message_count, Some(0));
    assert!(empty.chunks.is_empty());
    assert_eq!(empty.channels.len(), 2);
}

#[test]
fn written_bags_with_and_without_index_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    for (index, compress) in [(true, false), (false, false), (true, true)] {
        let sub = dir.path().join(format!("b_{index}_{compress}"));
        std::fs::create_dir(&sub).unwrap();
        let path = sub.join("b_0.db3");
        write_bag(&path, 500, 64, index, compress);
        if compress {
            std::fs::write(
                sub.join("metadata.yaml"),
                "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n  relative_file_paths: [b_0.db3]\n  compression_format: zstd\n  compression_mode: MESSAGE\n",
            )
            .unwrap();
        }
        let file = FileReader::open(&path).unwrap();
        let rows = read_all(&file).unwrap();
        assert_eq!(rows.len(), 500, "{index} {compress}");
        for (i, (topic, time, data)) in rows.iter().enumerate() {
            let i = i as i64;
            assert_eq!(topic, if i % 2 == 0 { "/imu" } else { "/gps" });
            assert_eq!(*time, 1_000_000_000 + i as u64 * 1_000_000);
            assert_eq!(data, &payload_of(i, 64), "{index} {compress} row {i}");
        }
        let summary = Ros2Format.summary(&file).unwrap();
        // Chunks by time (with the index: time bounds known) or by row id.
        assert_eq!(summary.chunks[0].start_time.is_some(), index);
        assert_eq!(
            summary.chunks[0].compression,
            if compress { "zstd" } else { "" }
        );
    }
}

#[test]
fn a_database_compressed_whole_is_read_through_a_temporary_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b_0.db3");
    write_bag(&path, 100, 32, true, false);
    let raw = std::fs::read(&path).unwrap();
    let packed = zstd::bulk::compress(&raw, 3).unwrap();
    let zpath = dir.path().join("b_0.db3.zstd");
    std::fs::write(&zpath, &packed).unwrap();
    // A zstd frame is a bag only under its rosbag2 name.
    assert!(!Ros2Format.sniff(&packed[..16]));
    assert!(Ros2Format.sniff_named("b_0.db3.zstd", &packed[..16]));
    assert!(logsql_readers::formats::sniff_named("x.csv.zst", &packed[..16]).is_none());
    let rows = read_all(&FileReader::open(&zpath).unwrap()).unwrap();
    assert_eq!(rows.len(), 100);
    assert_eq!(rows[99].2, payload_of(99, 32));
    // A file held in memory (a remote object): the same rows from a copy.
    let mem = BytesReader::new("mem.db3", raw);
    let summary = Ros2Format.summary(&mem).unwrap();
    assert!(
        summary
            .properties
            .contains(&("read_from".into(), "temporary copy".into()))
    );
    assert_eq!(read_all(&mem).unwrap().len(), 100);
}

#[test]
fn a_database_that_is_not_a_bag_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db3");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE users(id INTEGER, name TEXT);")
        .unwrap();
    drop(conn);
    let err = Ros2Format
        .summary(&FileReader::open(&path).unwrap())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "{}: corrupt ros2 data at byte 0: an SQLite database but not a rosbag2 bag: no table topics, messages (tables: users)",
            path.display()
        )
    );
}

/// Truncations and byte flips of real bags: never a panic; every error names
/// the file; a cut after the last page reads every row.
#[test]
fn truncation_and_corruption_sweep() {
    let Some(dir) = fixtures::dir("ros2") else {
        return;
    };
    for bag in [
        "sqlite3/talker/talker.db3",
        "sqlite3/cdr_test/cdr_test_0.db3",
        "sqlite3/wbag/wbag_4.db3",
    ] {
        let bytes = std::fs::read(dir.join(bag)).unwrap();
        let full = read_all(&BytesReader::new("full.db3", bytes.clone())).unwrap();
        assert!(!full.is_empty());
        let mut errors = 0;
        let step = (bytes.len() / 64).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let name = format!("cut{cut}.db3");
            match read_all(&BytesReader::new(name.clone(), bytes[..cut].to_vec())) {
                Ok(rows) => assert!(rows.len() <= full.len(), "{bag} cut at {cut}"),
                Err(e) => {
                    errors += 1;
                    assert!(e.to_string().contains(&name), "{bag} cut at {cut}: {e}");
                }
            }
        }
        assert!(errors > 0, "{bag}: no cut was noticed");
        for at in (0..bytes.len()).step_by(step / 2 + 1) {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            let name = format!("flip{at}.db3");
            if let Err(e) = read_all(&BytesReader::new(name.clone(), damaged)) {
                assert!(e.to_string().contains(&name), "{bag} flip at {at}: {e}");
            }
        }
    }
}

/// A recording cut by a crash: every row is still in the `-wal` file beside
/// the database (no checkpoint ran). SQLite applies it.
#[test]
fn a_write_ahead_log_beside_the_database_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let cut = dir.path().join("cut");
    std::fs::create_dir_all(&live).unwrap();
    std::fs::create_dir_all(&cut).unwrap();
    let path = live.join("w_0.db3");
    // The files are copied while the writer is still open: its close would
    // fold the log into the database (a checkpoint) and delete it.
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.pragma_update(None, "journal_mode", "wal").unwrap();
    holder.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    fill_bag(&holder, 100, 16, true, false);
    let wal_len = std::fs::metadata(live.join("w_0.db3-wal")).unwrap().len();
    assert!(wal_len > 0);
    for name in ["w_0.db3", "w_0.db3-wal"] {
        std::fs::copy(live.join(name), cut.join(name)).unwrap();
    }
    drop(holder);
    let rows = read_all(&FileReader::open(cut.join("w_0.db3")).unwrap()).unwrap();
    assert_eq!(rows.len(), 100);
    assert_eq!(rows[99].2, payload_of(99, 16));
    // The database file alone does not hold them.
    let alone = dir.path().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(cut.join("w_0.db3"), alone.join("w_0.db3")).unwrap();
    let without = read_all(&FileReader::open(alone.join("w_0.db3")).unwrap());
    assert!(
        without.as_ref().map_or(true, |r| r.len() < 100),
        "{without:?}"
    );
}
