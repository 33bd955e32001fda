//! The ROS bag reader on the real fixtures, damaged copies and generated bags.
//!
//! - Every bag in `../shared/fixtures/rosbag/` against the python `rosbags`
//!   oracle (`expected/rosbags-summary.json`): connections, per-topic counts and
//!   first/last times (from the summary *and* from reading every message), the
//!   first message of every connection (length, time, trivially decodable
//!   fields).
//! - The index path, a forced recovery walk (`index_pos` zeroed) and a real
//!   unindexed copy (index section cut off) deliver the same messages.
//! - `expected/time-window-checks.json` through `Selection` + `read_chunk`.
//! - The none/bz2/lz4 copies of rosbagjs-example hold identical messages.
//! - Header-only reads (index data, no decompression) equal full reads; time
//!   windows skip chunks by their index data.
//! - Truncation at every offset and flipped bytes: no panic, a prefix of the
//!   messages, errors naming the file and an offset.
//! - Generated bags: rosbags-style padding and LZ4 frames, bz2, many chunks.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;

use logsql_readers::Error;
use logsql_readers::formats::FormatReader;
use logsql_readers::formats::bag::{BagFormat, BagIndex, PROBE_LIMIT};
use logsql_readers::io::{BytesReader, ReadAt};
use logsql_readers::model::{ChunkRead, Flow, Message, Selection, Summary};
use serde_json::Value;

use crate::bag_writer::{self, Compression};

/// One delivered message: (topic, connection, log time, payload hash, payload length).
type Msg = (String, u64, u64, u64, usize);

fn hash(data: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    data.hash(&mut h);
    h.finish()
}

struct ReadAll {
    messages: Vec<Msg>,
    first_payloads: BTreeMap<u64, Vec<u8>>,
    reads: Vec<ChunkRead>,
    errors: Vec<Error>,
}

fn read_all(file: &dyn ReadAt, summary: &Summary, sel: &Selection) -> ReadAll {
    let mut out = ReadAll {
        messages: Vec::new(),
        first_payloads: BTreeMap::new(),
        reads: Vec::new(),
        errors: Vec::new(),
    };
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            out.messages.push((
                m.channel.topic.clone(),
                m.channel.id,
                m.log_time,
                hash(m.data),
                m.data.len(),
            ));
            out.first_payloads
                .entry(m.channel.id)
                .or_insert_with(|| m.data.to_vec());
            assert!(m.publish_time.is_none() && m.sequence.is_none());
            Flow::Continue
        };
        match BagFormat.read_chunk(file, summary, chunk, sel, &mut receiver) {
            Ok(r) => out.reads.push(r),
            Err(e) => out.errors.push(e),
        }
    }
    out
}

fn fixtures() -> Option<std::path::PathBuf> {
    crate::fixtures::dir("rosbag")
}

fn oracle(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("expected/rosbags-summary.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn load(dir: &Path, name: &str) -> BytesReader {
    let bytes = std::fs::read(dir.join(name)).unwrap();
    BytesReader::new(name, bytes)
}

fn summary_of(file: &dyn ReadAt) -> Summary {
    BagFormat
        .summary(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.name()))
}

fn opt_u64(v: &Value) -> Option<u64> {
    v.as_u64()
}

/// Every `.bag` in the fixture folder, with its oracle entry.
fn bags(dir: &Path) -> Vec<(String, Value)> {
    let oracle = oracle(dir);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bag"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 17, "{names:?}");
    names
        .into_iter()
        .map(|n| {
            let e = oracle
                .iter()
                .find(|e| e["file"] == n.as_str())
                .unwrap_or_else(|| panic!("{n} not in the oracle"))
                .clone();
            (n, e)
        })
        .collect()
}

/// Checks the fields of a first message that need no schema to decode.
fn check_decoded(name: &str, msg: &Value, data: &[u8]) {
    let u32_at = |p: usize| u32::from_le_bytes(data[p..p + 4].try_into().unwrap());
    let obj = msg.as_object().unwrap();
    if let Some(h) = obj.get("header") {
        // std_msgs/Header first: seq, stamp (sec, nsec), frame_id.
        assert_eq!(u64::from(u32_at(0)), h["seq"].as_u64().unwrap(), "{name}");
        assert_eq!(
            u64::from(u32_at(4)),
            h["stamp"]["sec"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            u64::from(u32_at(8)),
            h["stamp"]["nanosec"].as_u64().unwrap(),
            "{name}"
        );
        let len = u32_at(12) as usize;
        assert_eq!(
            std::str::from_utf8(&data[16..16 + len]).unwrap(),
            h["frame_id"].as_str().unwrap(),
            "{name}"
        );
    } else if obj.len() == 1
        && let Some(s) = obj.get("data").and_then(|d| d.as_str())
    {
        // std_msgs/String.
        assert_eq!(u32_at(0) as usize, s.len(), "{name}");
        assert_eq!(&data[4..], s.as_bytes(), "{name}");
    } else if obj.len() == 1
        && let Some(t) = obj.get("transforms").and_then(|d| d.as_array())
    {
        assert_eq!(u32_at(0) as usize, t.len(), "{name}");
    } else if let (Some(l), Some(a)) = (obj.get("linear"), obj.get("angular")) {
        // geometry_msgs/Twist: six float64.
        let f = |i: usize| f64::from_le_bytes(data[i * 8..i * 8 + 8].try_into().unwrap());
        let v = [&l["x"], &l["y"], &l["z"], &a["x"], &a["y"], &a["z"]];
        for (i, want) in v.iter().enumerate() {
            // serde_json parses floats to within an ulp or so.
            let want = want.as_f64().unwrap();
            assert!(
                (f(i) - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{name} field {i}"
            );
        }
    } else if obj.len() == 3 && obj.contains_key("r") && obj.contains_key("g") {
        // turtlesim/Color: three uint8.
        assert_eq!(u64::from(data[0]), obj["r"].as_u64().unwrap(), "{name}");
        assert_eq!(u64::from(data[1]), obj["g"].as_u64().unwrap(), "{name}");
        assert_eq!(u64::from(data[2]), obj["b"].as_u64().unwrap(), "{name}");
    }
}

#[test]
fn every_fixture_matches_the_rosbags_oracle() {
    let Some(dir) = fixtures() else {
        return;
    };
    let mut checked_payloads = 0;
    for (name, want) in bags(&dir) {
        let file = load(&dir, &name);
        if want.get("error").is_some() {
            // The 0-byte file: a clear error, no panic.
            let e = BagFormat.summary(&file).unwrap_err();
            assert!(
                e.to_string().contains(&name) && e.to_string().contains("empty"),
                "{e}"
            );
            assert_eq!(e.offset(), Some(0));
            continue;
        }
        if want.get("rosbags_error").is_some() {
            // Header claims 600 chunks and an index at EOF: an empty summary
            // whose damage names the file and the offset.
            let s = summary_of(&file);
            assert!(s.chunks.is_empty() && s.channels.is_empty(), "{name}");
            let d = s.damage.as_ref().expect("damage reported");
            assert!(matches!(d, Error::Truncated { .. }), "{d}");
            assert_eq!(d.offset(), Some(90), "{d}");
            assert!(
                d.to_string().contains(&name) && d.to_string().contains("600"),
                "{d}"
            );
            continue;
        }
        let s = summary_of(&file);
        assert!(s.damage.is_none(), "{name}: {:?}", s.damage);
        assert!(s.indexed, "{name}");
        assert_eq!(s.format, "bag");
        assert_eq!(s.message_count, opt_u64(&want["message_count"]), "{name}");
        assert_eq!(s.start_time, opt_u64(&want["start_ns"]), "{name}");
        assert_eq!(s.end_time, opt_u64(&want["end_ns_inclusive"]), "{name}");
        let hdr = &want["records"]["bag_header"];
        assert_eq!(s.chunks.len() as u64, hdr["chunk_count"].as_u64().unwrap());
        // Connections.
        let conns = want["connections"].as_array().unwrap();
        assert_eq!(s.channels.len(), conns.len(), "{name}");
        for c in conns {
            let id = c["id"].as_u64().unwrap();
            let ch = &s.channels[&id];
            assert_eq!(ch.topic, c["topic"].as_str().unwrap(), "{name}");
            assert_eq!(ch.message_type.as_deref(), c["type"].as_str(), "{name}");
            assert_eq!(ch.message_encoding, "ros1");
            assert_eq!(ch.schema_encoding.as_deref(), Some("ros1msg"));
            assert_eq!(
                ch.metadata.get("md5sum").map(String::as_str),
                c["md5"].as_str()
            );
            assert_eq!(
                ch.metadata.get("callerid").map(String::as_str),
                c["callerid"].as_str(),
                "{name}"
            );
            assert_eq!(
                ch.metadata
                    .get("latching")
                    .map(|l| l.parse::<u64>().unwrap()),
                c["latching"].as_u64(),
                "{name}"
            );
            let def = std::str::from_utf8(ch.schema.as_deref().unwrap()).unwrap();
            assert_eq!(
                def.chars().count() as u64,
                c["message_definition_chars"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(
                s.channel_message_counts.as_ref().unwrap()[&id],
                c["count"].as_u64().unwrap(),
                "{name} conn {id}"
            );
        }
        // Per-topic counts from the summary.
        let topics = want["topics"].as_object().unwrap();
        let counts = s.topic_message_counts().unwrap();
        assert_eq!(counts.len(), topics.len(), "{name}");
        for (t, v) in topics {
            assert_eq!(
                counts[t.as_str()],
                v["count"].as_u64().unwrap(),
                "{name} {t}"
            );
        }
        // ... and from reading every message.
        let all = read_all(&file, &s, &Selection::all());
        assert!(all.errors.is_empty(), "{name}: {:?}", all.errors);
        assert_eq!(
            all.messages.len() as u64,
            s.message_count.unwrap(),
            "{name}"
        );
        let mut per: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
        for (topic, _, t, _, _) in &all.messages {
            let e = per.entry(topic).or_insert((0, u64::MAX, 0));
            e.0 += 1;
            e.1 = e.1.min(*t);
            e.2 = e.2.max(*t);
        }
        for (t, v) in topics {
            let (n, first, last) = per[t.as_str()];
            assert_eq!(n, v["count"].as_u64().unwrap(), "{name} {t}");
            assert_eq!(first, v["first_ns"].as_u64().unwrap(), "{name} {t}");
            assert_eq!(last, v["last_ns"].as_u64().unwrap(), "{name} {t}");
        }
        // The first message of every connection: time, length, decodable fields.
        // rosbags' "first" is the earliest in time order (ties: file order).
        let firsts = want["first_message_per_connection"].as_object().unwrap();
        for (id, f) in firsts {
            let id: u64 = id.parse().unwrap();
            let first_time = all
                .messages
                .iter()
                .filter(|m| m.1 == id)
                .map(|m| m.2)
                .min()
                .unwrap();
            assert_eq!(
                first_time,
                f["log_time_ns"].as_u64().unwrap(),
                "{name} {id}"
            );
            let m = all
                .messages
                .iter()
                .find(|m| m.1 == id && m.2 == first_time)
                .unwrap();
            assert_eq!(m.4 as u64, f["raw_len"].as_u64().unwrap(), "{name} {id}");
            let payload =
                if all.first_payloads[&id].len() == m.4 && hash(&all.first_payloads[&id]) == m.3 {
                    all.first_payloads[&id].clone()
                } else {
                    read_payload(&file, &s, id, first_time)
                };
            check_decoded(&name, &f["message"], &payload);
            checked_payloads += 1;
        }
    }
    assert!(checked_payloads >= 40, "{checked_payloads}");
}

/// The payload of the first message of connection `id` at `time`.
fn read_payload(file: &dyn ReadAt, s: &Summary, id: u64, time: u64) -> Vec<u8> {
    let mut out = None;
    for chunk in &s.chunks {
        let mut receiver = |m: Message<'_>| {
            if m.channel.id == id && m.log_time == time && out.is_none() {
                out = Some(m.data.to_vec());
            }
            Flow::Continue
        };
        BagFormat
            .read_chunk(file, s, chunk, &Selection::all(), &mut receiver)
            .unwrap();
    }
    out.unwrap()
}

/// A copy of `bytes` whose bag header says `index_pos` = 0 (forces the walk).
fn zero_index_pos(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let at = find(&b[..4200.min(b.len())], b"index_pos=").unwrap() + 10;
    b[at..at + 8].copy_from_slice(&[0; 8]);
    b
}

fn index_pos(bytes: &[u8]) -> u64 {
    let at = find(&bytes[..4200.min(bytes.len())], b"index_pos=").unwrap() + 10;
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn index_path_and_recovery_walks_agree() {
    let Some(dir) = fixtures() else {
        return;
    };
    for (name, want) in bags(&dir) {
        if want.get("connections").is_none() || want["message_count"] == 0 {
            continue;
        }
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        let file = BytesReader::new(name.as_str(), bytes.clone());
        let s = summary_of(&file);
        let indexed = read_all(&file, &s, &Selection::all()).messages;

        // Forced walk: index_pos 0, the index section still at the end.
        let walked_file = BytesReader::new(name.as_str(), zero_index_pos(&bytes));
        let w = summary_of(&walked_file);
        assert!(!w.indexed && w.damage.is_none(), "{name}: {:?}", w.damage);
        assert_eq!(w.chunks.len(), s.chunks.len(), "{name}");
        assert_eq!(w.channels, s.channels, "{name}");
        assert_eq!(w.message_count, s.message_count, "{name}");
        assert_eq!(w.channel_message_counts, s.channel_message_counts, "{name}");
        assert_eq!(
            (w.start_time, w.end_time),
            (s.start_time, s.end_time),
            "{name}"
        );
        for (a, b) in w.chunks.iter().zip(&s.chunks) {
            assert_eq!(
                (
                    a.offset,
                    a.length,
                    a.start_time,
                    a.end_time,
                    a.message_count,
                    &a.compression
                ),
                (
                    b.offset,
                    b.length,
                    b.start_time,
                    b.end_time,
                    b.message_count,
                    &b.compression
                ),
                "{name}"
            );
        }
        assert_eq!(
            read_all(&walked_file, &w, &Selection::all()).messages,
            indexed,
            "{name}"
        );

        // A real unindexed recording: no index section at all. Connections are
        // found inside the chunks; counts and times come from index data and
        // the last chunk is counted by decompressing it.
        let cut = zero_index_pos(&bytes[..index_pos(&bytes) as usize]);
        let unindexed = BytesReader::new(name.as_str(), cut);
        let u = summary_of(&unindexed);
        assert!(!u.indexed && u.damage.is_none(), "{name}: {:?}", u.damage);
        assert_eq!(u.channels.len(), s.channels.len(), "{name}");
        for (id, ch) in &s.channels {
            assert_eq!(u.channels[id].topic, ch.topic, "{name}");
            assert_eq!(u.channels[id].schema, ch.schema, "{name}");
        }
        assert_eq!(u.message_count, s.message_count, "{name}");
        assert_eq!(u.channel_message_counts, s.channel_message_counts, "{name}");
        assert_eq!(
            (u.start_time, u.end_time),
            (s.start_time, s.end_time),
            "{name}"
        );
        assert_eq!(
            read_all(&unindexed, &u, &Selection::all()).messages,
            indexed,
            "{name}"
        );
        assert!(
            u.properties
                .iter()
                .any(|(k, v)| k == "index" && v.contains("unindexed"))
        );
    }
}

/// Reads with `sel` and counts the delivered messages that the engine would
/// keep (readers may deliver more than asked).
fn count_selected(file: &dyn ReadAt, s: &Summary, sel: &Selection) -> (u64, Vec<ChunkRead>) {
    let all = read_all(file, s, sel);
    assert!(all.errors.is_empty(), "{:?}", all.errors);
    let n = all
        .messages
        .iter()
        .filter(|m| sel.wants_time(m.2) && sel.wants_topic(&m.0))
        .count() as u64;
    (n, all.reads)
}

#[test]
fn time_window_checks_match() {
    let Some(dir) = fixtures() else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("expected/time-window-checks.json")).unwrap();
    let checks: Value = serde_json::from_str(&text).unwrap();
    let mut done = 0;
    for c in checks["checks"].as_array().unwrap() {
        let mut files = vec![c["file"].as_str().unwrap().to_string()];
        for f in c["also"].as_array().into_iter().flatten() {
            files.push(f.as_str().unwrap().to_string());
        }
        for name in files {
            let file = load(&dir, &name);
            let s = summary_of(&file);
            let topics: Option<HashSet<String>> = c["topics"]
                .as_array()
                .map(|t| t.iter().map(|x| x.as_str().unwrap().to_string()).collect());
            let lo = c["start_ns"].as_u64().unwrap_or(0);
            // [start, end) → the inclusive envelope [start, end - 1].
            let hi = c["end_ns"]
                .as_u64()
                .map_or(u64::MAX, |e| e.saturating_sub(1));
            let window = (!(c["start_ns"].is_null() && c["end_ns"].is_null())).then_some((lo, hi));
            for payload in [true, false] {
                let sel = Selection {
                    time: window,
                    topics: topics.clone(),
                    payload,
                    full_header: false,
                    ..Default::default()
                };
                if let Some(n) = c["expected_count"].as_u64() {
                    let (got, _) = count_selected(&file, &s, &sel);
                    assert_eq!(got, n, "{name} {c}");
                    done += 1;
                }
                if let Some(by_topic) = c["expected_counts_by_topic"].as_object() {
                    for (t, n) in by_topic {
                        let sel = Selection {
                            topics: Some([t.clone()].into()),
                            ..sel.clone()
                        };
                        let (got, _) = count_selected(&file, &s, &sel);
                        assert_eq!(got, n.as_u64().unwrap(), "{name} {t}");
                        done += 1;
                    }
                }
            }
            if let Some(first) = c["first_log_time_ns"].as_u64() {
                // geometry_msgs/Twist: linear.x is the first float64.
                let sel = Selection {
                    topics: topics.clone(),
                    ..Selection::all()
                };
                let all = read_all(&file, &s, &sel);
                let m = all
                    .messages
                    .iter()
                    .filter(|m| sel.wants_topic(&m.0))
                    .min_by_key(|m| m.2)
                    .unwrap();
                assert_eq!(m.2, first, "{name}");
                let data = &all.first_payloads[&m.1];
                let x = f64::from_le_bytes(data[..8].try_into().unwrap());
                assert_eq!(x, c["first_message"]["linear"]["x"].as_f64().unwrap());
                done += 1;
            }
            if let Some(size) = c["chunk_uncompressed_size"].as_u64() {
                let f = load(&dir, c["file_for_note"].as_str().unwrap());
                let s = summary_of(&f);
                assert_eq!(s.chunks[0].uncompressed_size, Some(size));
                assert_eq!(s.chunks[0].compression, "lz4");
                done += 1;
            }
            if let Some(times) = c["time_ordered_log_times_ns"].as_array() {
                let all = read_all(&file, &s, &Selection::all());
                let mut got: Vec<(u64, Vec<u8>)> = Vec::new();
                for chunk in &s.chunks {
                    let mut receiver = |m: Message<'_>| {
                        got.push((m.log_time, m.data[4..].to_vec()));
                        Flow::Continue
                    };
                    BagFormat
                        .read_chunk(&file, &s, chunk, &Selection::all(), &mut receiver)
                        .unwrap();
                }
                // File order is 2, 3, 1; sorted by time it is 1, 2, 3.
                assert_eq!(
                    all.messages.iter().map(|m| m.2).collect::<Vec<_>>(),
                    vec![2_000_000_000, 3_000_000_000, 1_000_000_000]
                );
                got.sort();
                let data = c["time_ordered_data"].as_array().unwrap();
                for ((t, d), (wt, wd)) in got.iter().zip(times.iter().zip(data)) {
                    assert_eq!(*t, wt.as_u64().unwrap());
                    assert_eq!(d.as_slice(), wd.as_str().unwrap().as_bytes());
                }
                assert_eq!(
                    (s.start_time, s.end_time),
                    (Some(1_000_000_000), Some(3_000_000_000))
                );
                done += 1;
            }
            if let Some(n) = c["expected_count_rosbags"].as_u64() {
                // Time 0 is returned, also when asked for explicitly.
                let (got, _) = count_selected(&file, &s, &Selection::all());
                assert_eq!(got, n, "{name}");
                let (zero, _) = count_selected(
                    &file,
                    &s,
                    &Selection {
                        time: Some((0, 0)),
                        ..Selection::all()
                    },
                );
                assert_eq!(zero, 1, "{name}");
                done += 1;
            }
        }
    }
    assert!(done >= 30, "{done} checks ran");
}

#[test]
fn compressed_copies_hold_identical_messages() {
    let Some(dir) = fixtures() else {
        return;
    };
    let mut seqs = Vec::new();
    for name in [
        "rosbagjs-example.bag",
        "rosbagjs-example-bz2.bag",
        "rosbagjs-example-lz4.bag",
    ] {
        let file = load(&dir, name);
        let s = summary_of(&file);
        let all = read_all(&file, &s, &Selection::all());
        assert!(all.errors.is_empty());
        // Connection ids differ between the copies (12 vs 9): compare by topic.
        let mut msgs: Vec<(String, u64, u64, usize)> = all
            .messages
            .into_iter()
            .map(|(t, _, time, h, len)| (t, time, h, len))
            .collect();
        msgs.sort();
        assert_eq!(msgs.len(), 8647);
        let decompressed: u64 = all.reads.iter().map(|r| r.bytes_decompressed).sum();
        if name.contains("lz4") {
            assert_eq!(decompressed, 743_449);
        } else if name.contains("bz2") {
            assert!(decompressed > 700_000);
        } else {
            assert_eq!(decompressed, 0);
        }
        seqs.push(msgs);
    }
    assert_eq!(seqs[0], seqs[1]);
    assert_eq!(seqs[0], seqs[2]);
}

#[test]
fn header_only_reads_use_index_data_and_match_full_reads() {
    let Some(dir) = fixtures() else {
        return;
    };
    for (name, want) in bags(&dir) {
        if want.get("connections").is_none() {
            continue;
        }
        let file = load(&dir, &name);
        let s = summary_of(&file);
        let full = read_all(&file, &s, &Selection::all());
        let sel = Selection {
            payload: false,
            ..Selection::default()
        };
        let fast = read_all(&file, &s, &sel);
        assert!(fast.errors.is_empty(), "{name}");
        let key = |m: &Msg| (m.1, m.2);
        assert_eq!(
            fast.messages.iter().map(key).collect::<Vec<_>>(),
            full.messages.iter().map(key).collect::<Vec<_>>(),
            "{name}: same (connection, time) sequence, file order"
        );
        assert!(fast.messages.iter().all(|m| m.4 == 0));
        // Nothing was decompressed: the index data answered.
        assert_eq!(
            fast.reads.iter().map(|r| r.bytes_decompressed).sum::<u64>(),
            0,
            "{name}"
        );
        // Asking for payloads without full headers decompresses.
        let sel = Selection {
            payload: true,
            ..Selection::default()
        };
        let with_payload = read_all(&file, &s, &sel);
        assert_eq!(with_payload.messages, full.messages, "{name}");
    }
}

#[test]
fn time_windows_skip_chunks_by_their_index_data() {
    let Some(dir) = fixtures() else {
        return;
    };
    // rosbagjs-example-bz2: one chunk over the whole recording. A window in a
    // gap between two messages, or one holding only other topics' messages,
    // skips the chunk without decompressing it.
    let file = load(&dir, "rosbagjs-example-bz2.bag");
    let s = summary_of(&file);
    assert_eq!(s.chunks.len(), 1);
    let all = read_all(&file, &s, &Selection::all()).messages;
    let mut times: Vec<u64> = all.iter().map(|m| m.2).collect();
    times.sort();
    let gap = times.windows(2).find(|w| w[1] - w[0] > 2).unwrap();
    let read = |sel: &Selection| {
        let mut n = 0;
        let r = BagFormat
            .read_chunk(&file, &s, &s.chunks[0], sel, &mut |m: Message<'_>| {
                n += u64::from(sel.wants_time(m.log_time) && sel.wants_topic(&m.channel.topic));
                Flow::Continue
            })
            .unwrap();
        (r, n)
    };
    let (r, n) = read(&Selection {
        time: Some((gap[0] + 1, gap[1] - 1)),
        ..Selection::all()
    });
    assert!(r.skipped && n == 0 && r.bytes_decompressed == 0, "{r:?}");
    let tf_static = all.iter().find(|m| m.0 == "/tf_static").unwrap();
    let only = |topic: &str| Selection {
        time: Some((tf_static.2, tf_static.2)),
        topics: Some([topic.to_string()].into()),
        ..Selection::all()
    };
    let (r, n) = read(&only("/turtle1/pose"));
    let at_that_time = all
        .iter()
        .filter(|m| m.0 == "/turtle1/pose" && m.2 == tf_static.2)
        .count();
    assert_eq!(
        (r.skipped, n),
        (at_that_time == 0, at_that_time as u64),
        "{r:?}"
    );
    let (r, n) = read(&only("/tf_static"));
    assert!(!r.skipped && n == 1 && r.bytes_decompressed > 0, "{r:?}");

    // robot_localization-test1 (bz2, 10 chunks): a 1 s window reads at most 2 chunks
    // and counts exactly what a full read filtered in memory gives.
    let file = load(&dir, "robot_localization-test1.bag");
    let s = summary_of(&file);
    let all = read_all(&file, &s, &Selection::all()).messages;
    let t0 = s.start_time.unwrap() + 100_000_000_000;
    let sel = Selection {
        time: Some((t0, t0 + 999_999_999)),
        topics: Some(["/fix".to_string()].into()),
        ..Selection::all()
    };
    let kept: Vec<_> = s
        .chunks
        .iter()
        .filter(|c| c.start_time.unwrap() <= t0 + 999_999_999 && c.end_time.unwrap() >= t0)
        .cloned()
        .collect();
    assert!(kept.len() <= 2);
    let mut s2 = s.clone();
    s2.chunks = kept;
    let (got, _) = count_selected(&file, &s2, &sel);
    let expected = all
        .iter()
        .filter(|m| m.0 == "/fix" && m.2 >= t0 && m.2 <= t0 + 999_999_999)
        .count() as u64;
    assert_eq!(got, expected);
    assert!(expected > 0);
}

#[test]
fn limit_stops_inside_a_chunk() {
    let Some(file) = crate::fixtures::file("rosbag", "rosbagjs-example-bz2.bag") else {
        return;
    };
    let bytes = std::fs::read(file).unwrap();
    let file = BytesReader::new("x.bag", bytes);
    let s = summary_of(&file);
    let mut n = 0;
    let r = BagFormat
        .read_chunk(
            &file,
            &s,
            &s.chunks[0],
            &Selection::all(),
            &mut |_: Message<'_>| {
                n += 1;
                if n == 5 { Flow::Stop } else { Flow::Continue }
            },
        )
        .unwrap();
    assert!(r.stopped && n == 5);
}

/// Reads a possibly damaged file: summary (or its error) and every chunk in
/// order until the first error. Returns the messages and the errors.
fn read_damaged(file: &BytesReader) -> (Vec<Msg>, Vec<Error>) {
    let s = match BagFormat.summary(file) {
        Ok(s) => s,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let mut errors = Vec::new();
    let mut messages = Vec::new();
    for chunk in &s.chunks {
        let mut receiver = |m: Message<'_>| {
            messages.push((
                m.channel.topic.clone(),
                m.channel.id,
                m.log_time,
                hash(m.data),
                m.data.len(),
            ));
            Flow::Continue
        };
        if let Err(e) = BagFormat.read_chunk(file, &s, chunk, &Selection::all(), &mut receiver) {
            errors.push(e);
            break;
        }
    }
    // The header-only path must not panic either.
    let _ = read_all(
        file,
        &s,
        &Selection {
            payload: false,
            ..Selection::default()
        },
    );
    errors.extend(s.damage);
    (messages, errors)
}

fn check_error_names_file(e: &Error, name: &str, size: u64) {
    let text = e.to_string();
    assert!(text.contains(name), "{text}");
    let off = e.offset().unwrap_or_else(|| panic!("no offset in {text}"));
    assert!(off <= size, "{text}");
    assert!(text.contains(&off.to_string()), "{text}");
}

#[test]
fn truncation_at_every_offset_keeps_a_readable_prefix() {
    let Some(dir) = fixtures() else {
        return;
    };
    for name in [
        "rosbagjs-example-unsorted-chunks.bag",
        "embag-test_2.bag",
        "rosbagpandas-rosout.bag",
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let full = read_damaged(&BytesReader::new(name, bytes.clone()));
        assert!(full.1.is_empty());
        let mut seen_some = 0;
        for cut in 0..bytes.len() {
            let file = BytesReader::new(name, bytes[..cut].to_vec());
            let (msgs, errors) = read_damaged(&file);
            assert_eq!(&full.0[..msgs.len()], &msgs[..], "{name} cut at {cut}");
            assert!(!errors.is_empty(), "{name} cut at {cut}: no error");
            for e in &errors {
                check_error_names_file(e, name, bytes.len() as u64);
            }
            if !msgs.is_empty() {
                seen_some += 1;
            }
        }
        assert!(seen_some > 0, "{name}: no cut kept any message");
    }
}

#[test]
fn flipped_bytes_never_panic() {
    let Some(dir) = fixtures() else {
        return;
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for name in [
        "rosbagjs-example-unsorted-chunks.bag",
        "webviz-only-a-cube.bag",
        "rosbagpandas-rosout.bag",
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        for _ in 0..600 {
            let mut b = bytes.clone();
            for _ in 0..1 + rnd() % 4 {
                let at = (rnd() as usize) % b.len();
                b[at] = match rnd() % 4 {
                    0 => 0xff,
                    1 => 0,
                    _ => rnd() as u8,
                };
            }
            let (_, errors) = read_damaged(&BytesReader::new(name, b));
            for e in &errors {
                assert!(e.to_string().contains(name), "{e}");
            }
        }
    }
}

#[test]
fn hostile_lengths_are_errors_not_allocations() {
    // Bag header and one record with u32::MAX lengths.
    let mut b = b"#ROSBAG V2.0\n".to_vec();
    let mut h = Vec::new();
    logsql_readers::formats::bag::records::encode_field(&mut h, b"op", &[3]);
    logsql_readers::formats::bag::records::encode_field(&mut h, b"index_pos", &0u64.to_le_bytes());
    logsql_readers::formats::bag::records::encode_field(&mut h, b"conn_count", &0u32.to_le_bytes());
    logsql_readers::formats::bag::records::encode_field(
        &mut h,
        b"chunk_count",
        &0u32.to_le_bytes(),
    );
    b.extend_from_slice(&(h.len() as u32).to_le_bytes());
    b.extend_from_slice(&h);
    b.extend_from_slice(&0u32.to_le_bytes());
    let good = b.clone();
    for tail in [
        u32::MAX.to_le_bytes().to_vec(),
        [&[20, 0, 0, 0][..], &[0; 20], &u32::MAX.to_le_bytes()].concat(),
    ] {
        let mut b = good.clone();
        b.extend(tail);
        let file = BytesReader::new("hostile.bag", b);
        let s = BagFormat.summary(&file).unwrap();
        assert!(s.chunks.is_empty());
        let d = s.damage.unwrap();
        assert!(d.to_string().contains("hostile.bag"), "{d}");
    }
    // Wrong versions and other files.
    for (bytes, what) in [
        (&b"#ROSRECORD V1.2\n"[..], "V1.2"),
        (&b"#ROSBAG V2.0"[..], "too short"),
        (&b"hello world, not a bag"[..], "not a ROS bag"),
    ] {
        let e = BagFormat
            .summary(&BytesReader::new("x.bag", bytes.to_vec()))
            .unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
    }
}

#[test]
fn no_messages_bag_is_an_empty_summary() {
    let Some(dir) = fixtures() else {
        return;
    };
    let s = summary_of(&load(&dir, "rosbagjs-no-messages.bag"));
    assert!(s.chunks.is_empty() && s.channels.is_empty() && s.damage.is_none());
    assert_eq!(s.message_count, Some(0));
    assert_eq!((s.start_time, s.end_time), (None, None));
}

// ---- generated bags ----

fn generated(spec: &bag_writer::Spec) -> (BytesReader, Summary) {
    let bytes = bag_writer::write(spec);
    let file = BytesReader::new("gen.bag", bytes);
    let s = summary_of(&file);
    (file, s)
}

#[test]
fn generated_bags_in_every_compression_and_padding_read_back() {
    let base = bag_writer::demo(3000, Compression::None);
    let mut reference: Option<Vec<Msg>> = None;
    for (compression, rosbags) in [
        (Compression::None, false),
        (Compression::None, true),
        (Compression::Bz2, false),
        (Compression::Lz4Ros, false),
        (Compression::Lz4Linked, true),
    ] {
        let mut spec = base.clone();
        spec.compression = compression;
        spec.rosbags_padding = rosbags;
        let (file, s) = generated(&spec);
        assert!(s.indexed && s.damage.is_none());
        assert!(s.chunks.len() > 20, "{}", s.chunks.len());
        assert_eq!(s.message_count, Some(3000));
        assert_eq!(s.start_time, Some(0), "a message at time 0");
        assert_eq!(s.channels.len(), 4);
        assert_eq!(s.topic_message_counts().unwrap().len(), 3);
        let all = read_all(&file, &s, &Selection::all());
        assert!(all.errors.is_empty(), "{:?}", all.errors);
        let want: Vec<Msg> = spec
            .messages
            .iter()
            .map(|(c, t, d)| {
                let topic = spec
                    .conns
                    .iter()
                    .find(|x| x.id == *c)
                    .unwrap()
                    .topic
                    .clone();
                (topic, u64::from(*c), *t, hash(d), d.len())
            })
            .collect();
        assert_eq!(all.messages, want, "{compression:?}");
        if let Some(r) = &reference {
            assert_eq!(r, &all.messages);
        }
        reference = Some(all.messages);
        // Summary I/O: the index section plus one small read per chunk header.
        // (Many chunk-level checks are in the fixture tests.)
        let idx = s.private::<BagIndex>().unwrap();
        assert_eq!(idx.chunks.len(), s.chunks.len());
    }
}

#[test]
fn many_chunks_are_not_probed_one_by_one() {
    // More chunks than PROBE_LIMIT: only the first chunk header is read, the
    // others are presumed to share its compression, and reads still work.
    let mut spec = bag_writer::demo(PROBE_LIMIT * 2 + 10, Compression::Lz4Ros);
    spec.chunk_threshold = 1;
    spec.messages.iter_mut().for_each(|m| m.2.truncate(50));
    let (file, s) = generated(&spec);
    assert_eq!(s.chunks.len(), PROBE_LIMIT * 2 + 10);
    assert!(s.chunks.iter().all(|c| c.compression == "lz4"));
    assert!(s.chunks[1].uncompressed_size.is_none());
    let note = &s
        .properties
        .iter()
        .find(|p| p.0 == "chunk_compression")
        .unwrap()
        .1;
    assert!(note.contains("presumed"), "{note}");
    let all = read_all(&file, &s, &Selection::all());
    assert!(all.errors.is_empty());
    assert_eq!(all.messages.len(), spec.messages.len());
    let fast = read_all(
        &file,
        &s,
        &Selection {
            payload: false,
            ..Selection::default()
        },
    );
    assert_eq!(fast.messages.len(), spec.messages.len());
    assert_eq!(
        fast.reads.iter().map(|r| r.bytes_decompressed).sum::<u64>(),
        0
    );
}

#[test]
fn unindexed_generated_bag_with_a_torn_last_chunk() {
    let mut spec = bag_writer::demo(2000, Compression::Bz2);
    spec.unindexed = true;
    let bytes = bag_writer::write(&spec);
    let file = BytesReader::new("killed.bag", bytes.clone());
    let s = summary_of(&file);
    assert!(!s.indexed && s.damage.is_none());
    assert_eq!(s.message_count, Some(2000));
    let all = read_all(&file, &s, &Selection::all());
    assert_eq!(all.messages.len(), 2000);
    // Tear the file in the middle of the last chunk: everything before it is read.
    let last = s.chunks.last().unwrap();
    let cut = (last.offset + last.length / 2) as usize;
    let file = BytesReader::new("killed.bag", bytes[..cut].to_vec());
    let t = summary_of(&file);
    assert_eq!(t.chunks.len(), s.chunks.len() - 1);
    let d = t.damage.as_ref().unwrap();
    assert_eq!(d.offset(), Some(last.offset), "{d}");
    assert!(matches!(d, Error::Truncated { .. }));
    let part = read_all(&file, &t, &Selection::all());
    assert!(part.errors.is_empty());
    assert_eq!(&all.messages[..part.messages.len()], &part.messages[..]);
    assert_eq!(part.messages.len() as u64, t.message_count.unwrap());
}

#[test]
fn unindexed_bag_whose_connection_records_precede_their_messages_chunks() {
    // The camera's connection record is written in the middle of the
    // recording, its first message only chunks later: discovery looks back
    // from the first chunk using it.
    let mut spec = bag_writer::demo(400, Compression::Lz4Linked);
    spec.unindexed = true;
    spec.chunk_threshold = 2000;
    // The camera connection (id 5) first publishes late.
    spec.messages.retain(|m| m.0 != 5);
    let t = spec.messages.last().unwrap().1;
    for i in 0..5 {
        spec.messages.push((5, t + i, vec![i as u8; 3000]));
    }
    spec.announce = vec![(spec.messages.len() - 40, 5)];
    let bytes = bag_writer::write(&spec);
    let file = BytesReader::new("late.bag", bytes);
    let s = summary_of(&file);
    assert!(!s.indexed && s.damage.is_none());
    assert!(s.chunks.len() > 10);
    assert_eq!(s.channels.len(), 4);
    assert_eq!(s.channels[&5].topic, "/camera");
    assert!(s.channels.values().all(|c| c.schema.is_some()));
    let all = read_all(&file, &s, &Selection::all());
    assert!(all.errors.is_empty());
    assert_eq!(all.messages.len(), spec.messages.len());
    assert!(all.messages.iter().all(|m| !m.0.is_empty()));
}
