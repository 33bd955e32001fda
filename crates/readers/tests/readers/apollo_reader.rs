//! The Apollo Cyber RT record reader on the fixtures in `../shared/fixtures/apollo/`.
//!
//! Expected values were computed independently of this reader by a small
//! python section walker over the official message definitions (the pip
//! `cyber_record` 0.1.13 package's `record_pb2`): walk the sections from byte
//! 2064, stop at INDEX / a torn or unknown section, parse every ChunkBody and,
//! in file order, count messages per channel, take min/max `time`, SHA1 the
//! concatenated `content` per channel, and SHA1 `name + b"\0" + u64le(time) +
//! content` over all messages. Message counts of the complete files agree with
//! `cyber_record.Record(path).read_messages()`; per-channel counts and times
//! agree with the fixtures' MANIFEST.md. Decoded field values come from
//! `cyber_record` as well.
//!
//! - every fixture: channels, types, descriptor kinds, per-channel counts,
//!   time ranges and payload hashes, from the summary and from reading;
//! - legacy (section END) index positions read exactly like `small.record`;
//! - crashed recordings (no index; torn last body) recover what the MANIFEST says;
//! - stale bytes after the index (`mytest.record`), time-0 messages, garbage descriptors;
//! - descriptor pools decode real fields (ProtoDesc trees, the 160-node
//!   planning tree, a bare FileDescriptorProto without its imports);
//! - selections (topics, exact time windows, no payload), sniffing;
//! - truncation and byte-flip sweeps: no panic, prefixes, errors naming file and offset.

use std::collections::BTreeMap;

use logsql_readers::Error;
use logsql_readers::formats::FormatReader;
use logsql_readers::formats::apollo::{ApolloFormat, descriptor_pool};
use logsql_readers::io::{BytesReader, ReadAt};
use logsql_readers::model::{Channel, Flow, Message, Selection, Summary};
use prost_reflect::{DynamicMessage, Value};
use sha1::{Digest, Sha1};

/// One delivered message: (topic, channel id, time, payload).
type Msg = (String, u64, u64, Vec<u8>);

fn load(rel: &str) -> Option<BytesReader> {
    let path = crate::fixtures::file("apollo", rel)?;
    Some(BytesReader::new(rel, std::fs::read(path).unwrap()))
}

fn summary_of(file: &dyn ReadAt) -> Summary {
    ApolloFormat
        .summary(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.name()))
}

/// Every message of every chunk under `sel`, and the errors.
fn read_all(file: &dyn ReadAt, s: &Summary, sel: &Selection) -> (Vec<Msg>, Vec<Error>) {
    let mut msgs = Vec::new();
    let mut errors = Vec::new();
    for chunk in &s.chunks {
        let mut receiver = |m: Message<'_>| {
            assert!(m.publish_time.is_none() && m.sequence.is_none());
            msgs.push((
                m.channel.topic.clone(),
                m.channel.id,
                m.log_time,
                m.data.to_vec(),
            ));
            Flow::Continue
        };
        if let Err(e) = ApolloFormat.read_chunk(file, s, chunk, sel, &mut receiver) {
            errors.push(e);
        }
    }
    (msgs, errors)
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn all_hash(msgs: &[Msg]) -> String {
    let mut h = Sha1::new();
    for (topic, _, t, data) in msgs {
        h.update(topic.as_bytes());
        h.update([0]);
        h.update(t.to_le_bytes());
        h.update(data);
    }
    hex(&h.finalize())
}

/// Per topic: (count, min time, max time, SHA1 of the concatenated payloads).
fn per_topic(msgs: &[Msg]) -> BTreeMap<String, (u64, u64, u64, String)> {
    let mut acc: BTreeMap<String, (u64, u64, u64, Sha1)> = BTreeMap::new();
    for (topic, _, t, data) in msgs {
        let e = acc
            .entry(topic.clone())
            .or_insert((0, u64::MAX, 0, Sha1::new()));
        e.0 += 1;
        e.1 = e.1.min(*t);
        e.2 = e.2.max(*t);
        e.3.update(data);
    }
    acc.into_iter()
        .map(|(k, (n, lo, hi, h))| (k, (n, lo, hi, hex(&h.finalize()))))
        .collect()
}

/// Expected per-channel values (see the module doc for how they were obtained).
struct Expect {
    file: &'static str,
    total: u64,
    all_sha1: &'static str,
    /// (topic, count, first time, last time, payload SHA1).
    topics: &'static [(&'static str, u64, u64, u64, &'static str)],
}

const POSE: &str = "/apollo/localization/pose";
const CHASSIS: &str = "/apollo/canbus/chassis";
const OBSTACLES: &str = "/apollo/perception/obstacles";

const SMALL_TOPICS: &[(&str, u64, u64, u64, &str)] = &[
    (
        POSE,
        600,
        1700000000001736025,
        1700000005993405364,
        "d60314325f279e0101e3a7e7b6217e4a349a7e67",
    ),
    (
        CHASSIS,
        600,
        1700000000005298236,
        1700000005999685200,
        "393f1fa07741b6c19e726e022dc3fde175c3832a",
    ),
    (
        OBSTACLES,
        35,
        1700000002531728051,
        1700000005931749585,
        "330c6711707217040afdea407a830c0c297f0fa9",
    ),
];
const SMALL_ALL: &str = "898861f7c139e435ba2a67b33cf88c86f1b35612";

const EXPECT: &[Expect] = &[
    Expect {
        file: "generated/small.record",
        total: 1235,
        all_sha1: SMALL_ALL,
        topics: SMALL_TOPICS,
    },
    Expect {
        file: "generated/legacy_index_positions.record",
        total: 1235,
        all_sha1: SMALL_ALL,
        topics: SMALL_TOPICS,
    },
    Expect {
        file: "generated/python_filedesc.record",
        total: 1235,
        all_sha1: SMALL_ALL,
        topics: SMALL_TOPICS,
    },
    Expect {
        file: "generated/builtin_schema.record",
        total: 1235,
        all_sha1: SMALL_ALL,
        topics: SMALL_TOPICS,
    },
    Expect {
        file: "generated/crash_incomplete.record",
        total: 817,
        all_sha1: "430686d0d1ebceddc9a0a01718243573769a55ce",
        topics: &[
            (
                POSE,
                401,
                1700000000001736025,
                1700000004001977722,
                "d9366ca489a33c311d79051d83e1ae2f6afc1777",
            ),
            (
                CHASSIS,
                401,
                1700000000005298236,
                1700000004008356382,
                "d62a270c342916cbfa1feffcf86648e95356dc35",
            ),
            (
                OBSTACLES,
                15,
                1700000002531728051,
                1700000003931620156,
                "0c4fc57ebab05aebe2717d1ba05977059f6714e3",
            ),
        ],
    },
    Expect {
        file: "generated/crash_torn_tail.record",
        total: 401,
        all_sha1: "1420447ef46bf4e2e93320dd3207883abe3e21fd",
        topics: &[
            (
                POSE,
                201,
                1700000000001736025,
                1700000002004599771,
                "5745185eb3733aa2392fbf6dfa2abc52b318169c",
            ),
            (
                CHASSIS,
                200,
                1700000000005298236,
                1700000001995253461,
                "067ff9580348ed3b743ecbc3ba576f69cf50bc64",
            ),
        ],
    },
    Expect {
        file: "generated/segmented.record.00000",
        total: 606,
        all_sha1: "daec94e9941778063e7da99c57315ad12fa6965d",
        topics: &[
            (
                POSE,
                301,
                1700000000001736025,
                1700000003002196201,
                "e8076d379b3568ba256b92dfb5bcb96044da6502",
            ),
            (
                CHASSIS,
                300,
                1700000000005532568,
                1700000002995631272,
                "fbc020a0f5aead7bec8c57a18745b271b022538b",
            ),
            (
                OBSTACLES,
                5,
                1700000002533850315,
                1700000002931768936,
                "66c83f9cd7a6020f5b74e18bcad5b9c7bacc668e",
            ),
        ],
    },
    Expect {
        file: "generated/segmented.record.00001",
        total: 632,
        all_sha1: "d72f2efd785396ca74b10d519a5b2ee7ce00b721",
        topics: &[
            (
                CHASSIS,
                301,
                1700000003005307310,
                1700000006005236995,
                "1570f50a0f386315ab147e4488fa073aa6268b74",
            ),
            (
                POSE,
                301,
                1700000003012058037,
                1700000006014639632,
                "d98780dc3f583e3b2d90b3bf97e2ba33b13669b8",
            ),
            (
                OBSTACLES,
                30,
                1700000003031959665,
                1700000005932123164,
                "1870f0f7714aa2eb80b9f07dc9b8c18a084d9d8d",
            ),
        ],
    },
    Expect {
        file: "generated/segmented.record.00002",
        total: 417,
        all_sha1: "33c68a2f344b82a69e5e9c1fe44b280cb412774c",
        topics: &[
            (
                CHASSIS,
                199,
                1700000006015557866,
                1700000007995934537,
                "fa611c38edcb602a22b91127ef71dcd7b2cc93d5",
            ),
            (
                POSE,
                198,
                1700000006021718357,
                1700000007991853461,
                "d81da3d8d4c2ca0b256bee73317e6dd3b3cc2da8",
            ),
            (
                OBSTACLES,
                20,
                1700000006031883092,
                1700000007932101198,
                "a4e32236cee44e75424411b2de8f446874f153c7",
            ),
        ],
    },
    Expect {
        file: "real/example.record.00000",
        total: 34,
        all_sha1: "5a716e585c7c6dd4790d82f393e9781b1c0e35ad",
        topics: &[
            (
                POSE,
                15,
                1627031535114943571,
                1627031535253911410,
                "4783eed1308070986d9c84c1aaf03162db9d958a",
            ),
            (
                "/apollo/canbus/chassis",
                15,
                1627031535114957982,
                1627031535253680838,
                "56d0343b5452605b9cb0b6984531705fd08a5856",
            ),
            (
                "/apollo/prediction",
                2,
                1627031535143534986,
                1627031535243420467,
                "019569b7a0cb351b008bd02ac5dba8bcf597c7c9",
            ),
            (
                "/apollo/routing_response_history",
                1,
                1627031535161239805,
                1627031535161239805,
                "faf04cdf0f0ad5926bddcbc5705ded51f23c7b15",
            ),
            (
                "/apollo/planning",
                1,
                1627031535161390153,
                1627031535161390153,
                "bbc5dba23113b41816bb9789a9e45f2c8e0e5159",
            ),
        ],
    },
    Expect {
        file: "real/mytest.record",
        total: 10,
        all_sha1: "1a9c8a8f1905b3842ab4a6cfe32cc6240d86b87e",
        topics: &[(
            "chatter",
            10,
            0,
            9,
            "5fb16cf03b282c5af6fe8f65d74d6da0c8585c0e",
        )],
    },
    Expect {
        file: "real/mytest_py.record",
        total: 20,
        all_sha1: "33ec9d71388715322c322484dba9d0b7e7a93d4a",
        topics: &[(
            "chatter_py",
            20,
            0,
            19,
            "c22eca806c31727d4e2f93ac173a8fe75ad39602",
        )],
    },
];

fn prop<'a>(s: &'a Summary, key: &str) -> Option<&'a str> {
    s.properties
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn channel<'a>(s: &'a Summary, topic: &str) -> &'a Channel {
    s.channels
        .values()
        .find(|c| c.topic == topic)
        .unwrap_or_else(|| panic!("no channel {topic}"))
}

#[test]
fn every_fixture_matches_the_independent_walk() {
    if crate::fixtures::dir("apollo").is_none() {
        return;
    }
    for want in EXPECT {
        let file = load(want.file).unwrap();
        assert!(
            ApolloFormat.sniff(&(&file as &dyn ReadAt).read_upto(0, 64).unwrap()),
            "{}",
            want.file
        );
        let s = summary_of(&file);
        assert_eq!(s.format, "record");
        let crashed = want.file.contains("crash");
        assert_eq!(s.indexed, !crashed, "{}", want.file);
        if want.file.contains("torn") {
            assert!(s.damage.is_some(), "{}", want.file);
        } else {
            assert!(s.damage.is_none(), "{}: {:?}", want.file, s.damage);
        }
        for ch in s.channels.values() {
            assert_eq!(ch.message_encoding, "protobuf");
            assert_eq!(ch.schema_encoding.as_deref(), Some("protobuf"));
            assert!(ch.metadata.contains_key("descriptor"));
        }
        if !crashed {
            assert_eq!(s.message_count, Some(want.total), "{}", want.file);
            let counts = s.topic_message_counts().unwrap();
            for (topic, n, ..) in want.topics {
                assert_eq!(counts[topic], *n, "{} {topic}", want.file);
            }
            // Demo files count time from 0 (the writer's "unset" sentinel
            // hides it from the chunk's begin_time): no file start time.
            let first = want.topics.iter().map(|t| t.2).min().unwrap();
            let want_start = (first > 1_000_000_000_000_000_000).then_some(first);
            assert_eq!(s.start_time, want_start, "{}", want.file);
            assert_eq!(
                s.end_time,
                want.topics.iter().map(|t| t.3).max(),
                "{}",
                want.file
            );
        }
        let (msgs, errors) = read_all(&file, &s, &Selection::all());
        assert!(errors.is_empty(), "{}: {errors:?}", want.file);
        assert_eq!(msgs.len() as u64, want.total, "{}", want.file);
        assert_eq!(all_hash(&msgs), want.all_sha1, "{}", want.file);
        let got = per_topic(&msgs);
        assert_eq!(got.len(), want.topics.len(), "{}", want.file);
        for (topic, n, lo, hi, sha) in want.topics {
            assert_eq!(
                got[*topic],
                (*n, *lo, *hi, sha.to_string()),
                "{} {topic}",
                want.file
            );
        }
        // Per-chunk counts add up, and every message lies in a chunk's declared end time.
        for c in &s.chunks {
            assert!(c.channels.is_none() && c.compression.is_empty());
        }
        let chunk_total: Option<u64> = s.chunks.iter().map(|c| c.message_count).sum();
        assert_eq!(chunk_total, Some(want.total), "{}", want.file);
        for c in &s.chunks {
            let mut n = 0;
            let mut receiver = |m: Message<'_>| {
                n += 1;
                assert!(
                    c.start_time.unwrap() <= m.log_time && m.log_time <= c.end_time.unwrap(),
                    "{}: message at {} outside chunk {c:?}",
                    want.file,
                    m.log_time
                );
                Flow::Continue
            };
            ApolloFormat
                .read_chunk(&file, &s, c, &Selection::all(), &mut receiver)
                .unwrap();
            assert_eq!(Some(n), c.message_count, "{}", want.file);
        }
    }
}

#[test]
fn generated_files_have_the_manifest_channels_and_layout() {
    let Some(file) = load("generated/small.record") else {
        return;
    };
    let s = summary_of(&file);
    let names: Vec<(&str, Option<&str>)> = s
        .channels
        .values()
        .map(|c| (c.topic.as_str(), c.message_type.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            (POSE, Some("apollo.localization.LocalizationEstimate")),
            (CHASSIS, Some("apollo.canbus.Chassis")),
            (OBSTACLES, Some("apollo.perception.PerceptionObstacles")),
        ]
    );
    // Chunks = body sections, with the index's time ranges and counts.
    let chunks: Vec<_> = s
        .chunks
        .iter()
        .map(|c| {
            (
                c.offset,
                c.length,
                c.start_time,
                c.end_time,
                c.message_count,
            )
        })
        .collect();
    assert_eq!(
        chunks,
        [
            (
                17788,
                16 + 77421,
                Some(1700000000001736025),
                Some(1700000002004599771),
                Some(401)
            ),
            (
                106102,
                16 + 122782,
                Some(1700000002005532568),
                Some(1700000004008356382),
                Some(416)
            ),
            (
                228943,
                16 + 137373,
                Some(1700000004012102201),
                Some(1700000005999685200),
                Some(418)
            ),
        ]
    );
    for (k, v) in [
        ("version", "1.0"),
        ("compress", "none"),
        ("chunk_interval", "2000000000"),
        ("segment_interval", "0"),
        ("index_position", "366332"),
        ("record_size", "393016"),
        ("is_complete", "true"),
        ("chunk_number", "3"),
        ("channel_number", "3"),
        ("message_number", "1235"),
        ("begin_time", "1700000000001736025"),
        ("end_time", "1700000005999685200"),
        ("index", "section start positions"),
    ] {
        assert_eq!(prop(&s, k), Some(v), "{k}");
    }
    assert_eq!(prop(&s, "trailing_bytes"), None);
    for c in s.channels.values() {
        assert_eq!(c.metadata["descriptor"], "proto_desc", "{}", c.topic);
    }
}

#[test]
fn legacy_index_positions_read_like_small_message_for_message() {
    let (Some(small), Some(legacy)) = (
        load("generated/small.record"),
        load("generated/legacy_index_positions.record"),
    ) else {
        return;
    };
    let a = summary_of(&small);
    let b = summary_of(&legacy);
    assert!(b.indexed && b.damage.is_none());
    assert!(prop(&b, "index").unwrap().contains("END"), "{b:?}");
    assert_eq!(a.channels, b.channels);
    assert_eq!(a.chunks, b.chunks);
    assert_eq!(a.channel_message_counts, b.channel_message_counts);
    let (ma, _) = read_all(&small, &a, &Selection::all());
    let (mb, eb) = read_all(&legacy, &b, &Selection::all());
    assert!(eb.is_empty(), "{eb:?}");
    assert_eq!(ma, mb);
}

#[test]
fn crashed_recordings_recover_every_complete_chunk() {
    let (Some(inc), Some(torn)) = (
        load("generated/crash_incomplete.record"),
        load("generated/crash_torn_tail.record"),
    ) else {
        return;
    };
    // Not closed, not torn: everything flushed is there, no damage, and the
    // properties say it was not closed.
    let s = summary_of(&inc);
    assert!(!s.indexed && s.damage.is_none());
    assert_eq!(prop(&s, "is_complete"), Some("false"));
    assert!(prop(&s, "index").unwrap().contains("not closed"));
    assert_eq!(s.channels.len(), 3);
    assert_eq!(channel(&s, OBSTACLES).metadata["descriptor"], "proto_desc");
    assert_eq!(s.chunks.len(), 2);
    assert_eq!(s.message_count, Some(817));
    assert_eq!(s.channel_message_counts, None);
    assert_eq!(
        (s.start_time, s.end_time),
        (Some(1700000000001736025), Some(1700000004008356382))
    );

    // Torn: one readable chunk, damage naming the torn body at 106102.
    let s = summary_of(&torn);
    assert!(!s.indexed);
    assert_eq!(s.chunks.len(), 1);
    assert_eq!(s.message_count, Some(401));
    assert_eq!(
        s.channels.len(),
        3,
        "channel sections before the tear count"
    );
    let d = s.damage.as_ref().unwrap();
    assert!(matches!(d, Error::Truncated { .. }), "{d}");
    assert_eq!(d.offset(), Some(106102));
    let text = d.to_string();
    assert!(
        text.contains("crash_torn_tail.record")
            && text.contains("incomplete")
            && text.contains("122782"),
        "{text}"
    );
}

#[test]
fn stale_trailing_bytes_time_zero_and_garbage_descriptors() {
    let Some(file) = load("real/mytest.record") else {
        return;
    };
    let s = summary_of(&file);
    assert_eq!(file.size(), 6096);
    assert_eq!(prop(&s, "record_size"), Some("2676"));
    assert!(
        prop(&s, "trailing_bytes")
            .unwrap()
            .starts_with("3420 stale bytes"),
        "{:?}",
        s.properties
    );
    let ch = channel(&s, "chatter");
    assert_eq!(
        ch.message_type.as_deref(),
        Some("apollo.cyber.demo_base_proto.Student")
    );
    assert_eq!(ch.schema.as_deref(), Some(&b"test ...."[..]));
    assert_eq!(ch.metadata["descriptor"], "unusable");
    assert!(descriptor_pool(ch).unwrap().is_none());
    // The chunk says [1, 9], but a message has time 0: read_chunk filters
    // each message exactly, so a window [0, 0] on that chunk finds it.
    // ... so the chunk's lower bound is 0 (the writer's own clock), not 1.
    assert_eq!(prop(&s, "begin_time"), Some("1"));
    assert_eq!(
        (s.chunks[0].start_time, s.chunks[0].end_time),
        (Some(0), Some(9))
    );
    assert_eq!((s.start_time, s.end_time), (None, Some(9)));
    let sel = Selection {
        time: Some((0, 0)),
        ..Selection::all()
    };
    let (msgs, errors) = read_all(&file, &s, &sel);
    assert!(errors.is_empty());
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].2, 0);

    let Some(py) = load("real/mytest_py.record") else {
        return;
    };
    let s = summary_of(&py);
    assert_eq!(prop(&s, "trailing_bytes"), None);
    let ch = channel(&s, "chatter_py");
    assert_eq!(ch.metadata["descriptor"], "unusable");
    assert!(descriptor_pool(ch).unwrap().is_none());
}

/// A `proto_desc` whose file has a syntax prost-reflect does not know
/// (`editions`, here as a bare FileDescriptorProto) is a descriptor error
/// naming the channel and file; prost-reflect 0.16 panicked on it (found by
/// the `protobuf` fuzz target, same path).
#[test]
fn unknown_descriptor_syntax_is_an_error_not_a_panic() {
    // FileDescriptorProto { name: "a.proto", message_type: [{ name: "M" }], syntax: "editions" }
    let mut desc = vec![0x0a, 0x07];
    desc.extend(b"a.proto");
    desc.extend([0x22, 0x03, 0x0a, 0x01, b'M', 0x62, 0x08]);
    desc.extend(b"editions");
    let ch = Channel {
        id: 0,
        topic: "/t".into(),
        message_type: Some("M".into()),
        message_encoding: "protobuf".into(),
        schema_encoding: Some("protobuf".into()),
        schema: Some(desc.into()),
        metadata: Default::default(),
    };
    let e = descriptor_pool(&ch).unwrap_err().to_string();
    assert!(
        e.contains("/t") && e.contains("\"a.proto\"") && e.contains("\"editions\""),
        "{e}"
    );
    let e = logsql_decode::decoder_of(&ch, &ApolloFormat.schema_of(&ch))
        .unwrap_err()
        .to_string();
    assert!(e.contains("editions"), "{e}");
}

#[test]
fn the_real_example_has_every_declared_channel() {
    let Some(file) = load("real/example.record.00000") else {
        return;
    };
    let s = summary_of(&file);
    let want = [
        ("/apollo/planning", "apollo.planning.ADCTrajectory", 1),
        (
            "/apollo/routing_request",
            "apollo.routing.RoutingRequest",
            0,
        ),
        ("/apollo/monitor", "apollo.common.monitor.MonitorMessage", 0),
        (
            "/apollo/routing_response",
            "apollo.routing.RoutingResponse",
            0,
        ),
        (
            "/apollo/routing_response_history",
            "apollo.routing.RoutingResponse",
            1,
        ),
        (POSE, "apollo.localization.LocalizationEstimate", 15),
        (CHASSIS, "apollo.canbus.Chassis", 15),
        (
            "/apollo/prediction",
            "apollo.prediction.PredictionObstacles",
            2,
        ),
    ];
    let counts = s.channel_message_counts.as_ref().unwrap();
    let got: Vec<(&str, &str, u64)> = s
        .channels
        .values()
        .map(|c| {
            (
                c.topic.as_str(),
                c.message_type.as_deref().unwrap(),
                counts[&c.id],
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(s.chunks.len(), 1);
    assert_eq!(
        (s.chunks[0].offset, s.chunks[0].length),
        (232002, 16 + 27035)
    );
    for c in s.channels.values() {
        assert_eq!(c.metadata["descriptor"], "proto_desc");
        // Every channel's tree builds a pool resolving its type (planning:
        // 160 nodes, 41 distinct files).
        let pool = descriptor_pool(c).unwrap().unwrap();
        assert!(
            pool.get_message_by_name(c.message_type.as_deref().unwrap())
                .is_some()
        );
    }
}

/// The first payload of `topic`.
fn first_payload(file: &dyn ReadAt, s: &Summary, topic: &str) -> Vec<u8> {
    let sel = Selection {
        topics: Some([topic.to_string()].into()),
        ..Selection::all()
    };
    let (msgs, _) = read_all(file, s, &sel);
    msgs.into_iter().next().unwrap().3
}

fn decode(ch: &Channel, data: &[u8]) -> DynamicMessage {
    let pool = descriptor_pool(ch)
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("a pool");
    let desc = pool
        .get_message_by_name(ch.message_type.as_deref().unwrap())
        .unwrap();
    DynamicMessage::decode(desc, data).unwrap()
}

fn field<'a>(m: &'a DynamicMessage, path: &[&str]) -> std::borrow::Cow<'a, Value> {
    let (last, init) = path.split_last().unwrap();
    let mut cur = m.clone();
    for p in init {
        cur = cur
            .get_field_by_name(p)
            .unwrap()
            .as_message()
            .unwrap()
            .clone();
    }
    std::borrow::Cow::Owned(cur.get_field_by_name(last).unwrap().into_owned())
}

#[test]
fn descriptor_pools_decode_real_fields() {
    if crate::fixtures::dir("apollo").is_none() {
        return;
    }
    // Values from cyber_record: first pose of small.record has position.x
    // 587024.4468247734 and header.sequence_num 1; first chassis speed_mps
    // 8.00281906; first obstacle id 100. example.record: first pose x
    // 315323.4458883505, sequence_num 76636; planning sequence_num 4517 with
    // 94 trajectory points.
    for rel in [
        "generated/small.record",
        "generated/builtin_schema.record",
        "generated/crash_incomplete.record",
    ] {
        let file = load(rel).unwrap();
        let s = summary_of(&file);
        let pose = channel(&s, POSE);
        let m = decode(pose, &first_payload(&file, &s, POSE));
        assert_eq!(
            field(&m, &["pose", "position", "x"]).as_f64(),
            Some(587024.4468247734),
            "{rel}"
        );
        assert_eq!(
            field(&m, &["header", "sequence_num"]).as_u32(),
            Some(1),
            "{rel}"
        );
        let chassis = channel(&s, CHASSIS);
        let m = decode(chassis, &first_payload(&file, &s, CHASSIS));
        assert_eq!(field(&m, &["speed_mps"]).as_f32(), Some(8.002_819), "{rel}");
        let obst = channel(&s, OBSTACLES);
        let m = decode(obst, &first_payload(&file, &s, OBSTACLES));
        let list = m.get_field_by_name("perception_obstacle").unwrap();
        let first = list.as_list().unwrap()[0].as_message().unwrap().clone();
        assert_eq!(field(&first, &["id"]).as_i32(), Some(100), "{rel}");
    }

    let file = load("real/example.record.00000").unwrap();
    let s = summary_of(&file);
    let pose = channel(&s, POSE);
    let m = decode(pose, &first_payload(&file, &s, POSE));
    assert_eq!(
        field(&m, &["pose", "position", "x"]).as_f64(),
        Some(315323.4458883505)
    );
    assert_eq!(field(&m, &["header", "sequence_num"]).as_u32(), Some(76636));
    let planning = channel(&s, "/apollo/planning");
    let m = decode(planning, &first_payload(&file, &s, "/apollo/planning"));
    assert_eq!(field(&m, &["header", "sequence_num"]).as_u32(), Some(4517));
    assert_eq!(
        m.get_field_by_name("trajectory_point")
            .unwrap()
            .as_list()
            .unwrap()
            .len(),
        94
    );

    // A bare FileDescriptorProto without its imports: scalar fields decode,
    // fields of the missing types stay bytes.
    let file = load("generated/python_filedesc.record").unwrap();
    let s = summary_of(&file);
    let chassis = channel(&s, CHASSIS);
    assert_eq!(chassis.metadata["descriptor"], "file_descriptor");
    assert!(
        chassis.metadata["descriptor_missing_imports"]
            .contains("modules/common_msgs/basic_msgs/header.proto"),
        "{:?}",
        chassis.metadata
    );
    let m = decode(chassis, &first_payload(&file, &s, CHASSIS));
    assert_eq!(field(&m, &["speed_mps"]).as_f32(), Some(8.002_819));
    assert!(field(&m, &["header"]).as_bytes().is_some());
    let pose = channel(&s, POSE);
    let m = decode(pose, &first_payload(&file, &s, POSE));
    assert!(
        field(&m, &["pose"])
            .as_bytes()
            .is_some_and(|b| !b.is_empty())
    );
    let obst = channel(&s, OBSTACLES);
    let m = decode(obst, &first_payload(&file, &s, OBSTACLES));
    let list = m.get_field_by_name("perception_obstacle").unwrap();
    let first = list.as_list().unwrap()[0].as_message().unwrap().clone();
    assert_eq!(field(&first, &["id"]).as_i32(), Some(100));
}

#[test]
fn segments_are_complete_files_that_redeclare_channels() {
    if crate::fixtures::dir("apollo").is_none() {
        return;
    }
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    let mut last_end = 0;
    for i in 0..3 {
        let file = load(&format!("generated/segmented.record.0000{i}")).unwrap();
        let s = summary_of(&file);
        assert!(s.indexed && s.damage.is_none());
        assert_eq!(s.channels.len(), 3);
        assert_eq!(prop(&s, "segment_interval"), Some("3000000000"));
        for (t, n) in s.topic_message_counts().unwrap() {
            *totals.entry(t.to_string()).or_default() += n;
        }
        assert!(s.start_time.unwrap() > last_end);
        last_end = s.end_time.unwrap();
    }
    assert_eq!(totals[POSE], 800);
    assert_eq!(totals[CHASSIS], 800);
    assert_eq!(totals[OBSTACLES], 55);
}

#[test]
fn selections_filter_topics_and_exact_times() {
    let Some(file) = load("generated/small.record") else {
        return;
    };
    let s = summary_of(&file);
    let (all, _) = read_all(&file, &s, &Selection::all());
    // A window inside the second chunk, obstacles and pose only, no payloads.
    let (lo, hi) = (1700000002500000000, 1700000003500000000);
    let sel = Selection {
        time: Some((lo, hi)),
        topics: Some([POSE.to_string(), OBSTACLES.to_string()].into()),
        payload: false,
        full_header: false,
        ..Default::default()
    };
    let (got, errors) = read_all(&file, &s, &sel);
    assert!(errors.is_empty());
    let want: Vec<(String, u64, u64)> = all
        .iter()
        .filter(|m| (m.0 == POSE || m.0 == OBSTACLES) && lo <= m.2 && m.2 <= hi)
        .map(|m| (m.0.clone(), m.1, m.2))
        .collect();
    assert!(want.len() > 100, "{}", want.len());
    let got_keys: Vec<(String, u64, u64)> = got.iter().map(|m| (m.0.clone(), m.1, m.2)).collect();
    assert_eq!(got_keys, want);
    assert!(got.iter().all(|m| m.3.is_empty()));
    // Bodies are not sorted: some message follows a later one in file order.
    assert!(all.windows(2).any(|w| w[1].2 < w[0].2));
    // A receiver that stops.
    let mut n = 0;
    let mut receiver = |_: Message<'_>| {
        n += 1;
        if n == 5 { Flow::Stop } else { Flow::Continue }
    };
    let r = ApolloFormat
        .read_chunk(&file, &s, &s.chunks[0], &Selection::all(), &mut receiver)
        .unwrap();
    assert!(r.stopped);
    assert_eq!(n, 5);
}

#[test]
fn sniffing_and_detection() {
    let Some(file) = load("generated/small.record") else {
        return;
    };
    let head = (&file as &dyn ReadAt).read_upto(0, 64).unwrap();
    let f = logsql_readers::formats::sniff(&head).unwrap();
    assert_eq!(f.name(), "record");
    assert_eq!(ApolloFormat.extensions(), &["record"]);
    // A TFRecord: u64 length, masked CRC, data, CRC.
    let mut tf = Vec::new();
    tf.extend(58u64.to_le_bytes());
    tf.extend([0x12, 0x34, 0x56, 0x78]);
    tf.extend([0x08, 0x01, 0x10, 0x00]);
    tf.resize(64, 0);
    assert!(!ApolloFormat.sniff(&tf));
    assert!(!ApolloFormat.sniff(&[]));
    // Not a record: a clear error.
    let e = ApolloFormat
        .summary(&BytesReader::new("tf.record", tf))
        .unwrap_err();
    assert!(e.to_string().contains("tf.record"), "{e}");
    let e = ApolloFormat
        .summary(&BytesReader::new("empty.record", Vec::new()))
        .unwrap_err();
    assert_eq!(e.offset(), Some(0));
}

/// Reads `bytes` as a file named `name` completely; returns the messages and
/// whether anything failed. Never panics (that is the test).
fn read_bytes(name: &str, bytes: Vec<u8>) -> (Vec<Msg>, bool) {
    let file = BytesReader::new(name, bytes);
    let s = match ApolloFormat.summary(&file) {
        Ok(s) => s,
        Err(e) => {
            assert!(e.to_string().contains(name), "{e}");
            return (Vec::new(), true);
        }
    };
    let (msgs, errors) = read_all(&file, &s, &Selection::all());
    for e in &errors {
        assert!(e.to_string().contains(name) && e.offset().is_some(), "{e}");
    }
    (msgs, !errors.is_empty() || s.damage.is_some())
}

#[test]
fn truncation_sweep_returns_prefixes() {
    if crate::fixtures::dir("apollo").is_none() {
        return;
    }
    for rel in [
        "generated/small.record",
        "real/example.record.00000",
        "real/mytest.record",
    ] {
        let bytes = std::fs::read(crate::fixtures::file("apollo", rel).unwrap()).unwrap();
        let (full, _) = read_bytes(rel, bytes.clone());
        let step = (bytes.len() / 600).max(1);
        let mut cuts: Vec<usize> = (0..bytes.len()).step_by(step).collect();
        // Around section boundaries of small.record and the header slot.
        cuts.extend([
            0, 15, 16, 17, 40, 2063, 2064, 2065, 2080, 17788, 17804, 95225,
        ]);
        for cut in cuts.into_iter().filter(|&c| c < bytes.len()) {
            let (msgs, damaged) = read_bytes(rel, bytes[..cut].to_vec());
            assert!(msgs.len() <= full.len(), "{rel} cut at {cut}");
            assert_eq!(msgs[..], full[..msgs.len()], "{rel} cut at {cut}");
            // The index is past the cut: always reported, except in the stale tail of mytest.
            if cut < 2676 || !rel.contains("mytest") {
                assert!(damaged || msgs.is_empty(), "{rel} cut at {cut}");
            }
        }
    }
}

#[test]
fn byte_flip_sweep_never_panics() {
    if crate::fixtures::dir("apollo").is_none() {
        return;
    }
    for (rel, step) in [
        ("real/mytest.record", 1),
        ("real/mytest_py.record", 3),
        ("generated/small.record", 397),
        ("generated/crash_torn_tail.record", 911),
    ] {
        let bytes = std::fs::read(crate::fixtures::file("apollo", rel).unwrap()).unwrap();
        for at in (0..bytes.len()).step_by(step) {
            for flip in [0xff, 0x80] {
                let mut b = bytes.clone();
                b[at] ^= flip;
                let (msgs, _) = read_bytes(rel, b);
                // Bounded by what the body bytes can hold.
                assert!(msgs.len() <= bytes.len(), "{rel} flip at {at}");
            }
        }
    }
}

/// A minimal record writer for the cases the fixtures lack.
mod writer {
    use logsql_readers::formats::apollo::proto;
    use prost::Message as _;

    pub struct Opts {
        /// Garbage in the 4 padding bytes of every section header (old writers).
        pub dirty_padding: bool,
        /// Index positions are section ENDs (Apollo 3.5/5.0).
        pub legacy: bool,
        /// `Header.compress`.
        pub compress: i32,
        /// Header padding all NUL (the pip `cyber_record` writer) instead of `'0'` then NULs.
        pub nul_padding: bool,
        /// Declared channels: (name, proto_desc).
        pub channels: Vec<(&'static str, Vec<u8>)>,
        /// Chunks of (channel name, time, content).
        pub chunks: Vec<Vec<(&'static str, u64, Vec<u8>)>>,
    }

    pub fn write(o: &Opts) -> Vec<u8> {
        let mut buf = vec![0u8; 2064];
        // (type, start, end, cache)
        let mut entries: Vec<(i32, u64, u64, Option<proto::single_index::Cache>)> = Vec::new();
        let section = |buf: &mut Vec<u8>, kind: u32, body: &[u8]| -> (u64, u64) {
            let start = buf.len() as u64;
            buf.extend(kind.to_le_bytes());
            buf.extend(if o.dirty_padding {
                [0xde, 0xad, 0xbe, 0xef]
            } else {
                [0; 4]
            });
            buf.extend((body.len() as i64).to_le_bytes());
            buf.extend(body);
            (start, buf.len() as u64)
        };
        for (name, desc) in &o.channels {
            let body = proto::Channel {
                name: Some(name.to_string()),
                message_type: Some("test.Msg".into()),
                proto_desc: Some(desc.clone().into()),
            }
            .encode_to_vec();
            let (s, e) = section(&mut buf, 4, &body);
            let n = o.chunks.iter().flatten().filter(|m| m.0 == *name).count() as u64;
            entries.push((
                4,
                s,
                e,
                Some(proto::single_index::Cache::ChannelCache(
                    proto::ChannelCache {
                        message_number: Some(n),
                        name: Some(name.to_string()),
                        message_type: Some("test.Msg".into()),
                        proto_desc: Some(desc.clone().into()),
                    },
                )),
            ));
        }
        let mut total = 0;
        for chunk in &o.chunks {
            let begin = chunk.iter().map(|m| m.1).min().unwrap();
            let end = chunk.iter().map(|m| m.1).max().unwrap();
            let n = chunk.len() as u64;
            total += n;
            let h = proto::ChunkHeader {
                begin_time: Some(begin),
                end_time: Some(end),
                message_number: Some(n),
                raw_size: Some(0),
            };
            let (s, e) = section(&mut buf, 1, &h.encode_to_vec());
            entries.push((
                1,
                s,
                e,
                Some(proto::single_index::Cache::ChunkHeaderCache(
                    proto::ChunkHeaderCache {
                        message_number: Some(n),
                        begin_time: Some(begin),
                        end_time: Some(end),
                        raw_size: Some(0),
                    },
                )),
            ));
            let body = proto::ChunkBody {
                messages: chunk
                    .iter()
                    .map(|(c, t, d)| proto::SingleMessage {
                        channel_name: Some(c.to_string()),
                        time: Some(*t),
                        content: Some(d.clone().into()),
                    })
                    .collect(),
            };
            let (s, e) = section(&mut buf, 2, &body.encode_to_vec());
            entries.push((
                2,
                s,
                e,
                Some(proto::single_index::Cache::ChunkBodyCache(
                    proto::ChunkBodyCache {
                        message_number: Some(n),
                    },
                )),
            ));
        }
        let index = proto::Index {
            indexes: entries
                .into_iter()
                .map(|(t, s, e, cache)| proto::SingleIndex {
                    r#type: Some(t),
                    position: Some(if o.legacy { e } else { s }),
                    cache,
                })
                .collect(),
        };
        let (index_pos, size) = section(&mut buf, 3, &index.encode_to_vec());
        let header = proto::Header {
            major_version: Some(1),
            minor_version: Some(0),
            compress: Some(o.compress),
            chunk_interval: Some(20_000_000_000),
            index_position: Some(index_pos),
            chunk_number: Some(o.chunks.len() as u64),
            channel_number: Some(o.channels.len() as u64),
            message_number: Some(total),
            size: Some(size),
            is_complete: Some(true),
            ..Default::default()
        }
        .encode_to_vec();
        buf[8..16].copy_from_slice(&(header.len() as i64).to_le_bytes());
        buf[16..16 + header.len()].copy_from_slice(&header);
        if !o.nul_padding {
            buf[16 + header.len()] = b'0';
        }
        buf
    }
}

fn many_chunks(n: u64) -> Vec<Vec<(&'static str, u64, Vec<u8>)>> {
    (0..n)
        .map(|c| {
            (0..10u64)
                .map(|i| {
                    let t = 1_700_000_000_000_000_000 + c * 1_000_000_000 + i * 100_000_000;
                    let name = if i % 3 == 0 { "/b" } else { "/a" };
                    (name, t, vec![(c * 10 + i) as u8; (i as usize) * 7])
                })
                .collect()
        })
        .collect()
}

#[test]
fn written_files_dirty_padding_legacy_many_chunks() {
    let channels = vec![("/a", Vec::new()), ("/b", b"garbage".to_vec())];
    let chunks = many_chunks(150);
    let mut opts = writer::Opts {
        dirty_padding: false,
        legacy: false,
        compress: 0,
        nul_padding: false,
        channels,
        chunks,
    };
    let clean = writer::write(&opts);
    let file = BytesReader::new("clean.record", clean);
    let s = summary_of(&file);
    assert!(s.indexed && s.damage.is_none());
    assert_eq!(s.chunks.len(), 150);
    assert_eq!(s.message_count, Some(1500));
    assert_eq!(
        s.topic_message_counts().unwrap(),
        [("/a", 900), ("/b", 600)].into()
    );
    let a = channel(&s, "/a");
    assert_eq!(a.metadata["descriptor"], "missing");
    assert_eq!(a.schema, None);
    assert_eq!(channel(&s, "/b").metadata["descriptor"], "unusable");
    let (want, errors) = read_all(&file, &s, &Selection::all());
    assert!(errors.is_empty());
    assert_eq!(want.len(), 1500);
    assert_eq!(want[17].3, vec![17u8; 49]);

    opts.dirty_padding = true;
    opts.legacy = true;
    let file = BytesReader::new("dirty.record", writer::write(&opts));
    let d = summary_of(&file);
    assert!(d.indexed && d.damage.is_none());
    assert!(prop(&d, "index").unwrap().contains("END"));
    assert_eq!(d.chunks, s.chunks);
    let (got, errors) = read_all(&file, &d, &Selection::all());
    assert!(errors.is_empty());
    assert_eq!(got, want);

    // The same bytes with the index destroyed: the walk finds everything.
    let mut bytes = writer::write(&opts);
    let index_pos = usize::try_from(
        d.properties
            .iter()
            .find(|(k, _)| k == "index_position")
            .unwrap()
            .1
            .parse::<u64>()
            .unwrap(),
    )
    .unwrap();
    for b in &mut bytes[index_pos + 16..index_pos + 40] {
        *b = 0xff;
    }
    let file = BytesReader::new("badindex.record", bytes);
    let w = summary_of(&file);
    assert!(!w.indexed && w.damage.is_none(), "{:?}", w.damage);
    assert!(prop(&w, "index").unwrap().starts_with("unusable"));
    assert_eq!(w.chunks, s.chunks);
    assert_eq!(w.channels, s.channels);
    assert_eq!(w.channel_message_counts, None);
    let (got, errors) = read_all(&file, &w, &Selection::all());
    assert!(errors.is_empty());
    assert_eq!(got, want);
}

#[test]
fn undeclared_channels_and_declared_compression() {
    let mut chunks = many_chunks(2);
    chunks[1].push(("/ghost", 1_700_000_001_950_000_000, b"boo".to_vec()));
    let opts = writer::Opts {
        dirty_padding: false,
        legacy: false,
        compress: 1,
        nul_padding: false,
        channels: vec![("/a", Vec::new()), ("/b", Vec::new())],
        chunks,
    };
    let file = BytesReader::new("ghost.record", writer::write(&opts));
    let s = summary_of(&file);
    assert_eq!(prop(&s, "compress"), Some("bz2"));
    assert!(s.chunks.iter().all(|c| c.compression == "bz2"));
    // Declared counts do not cover the ghost's message: the bodies are read
    // once to find it, and its stand-in channel joins the summary with a count.
    assert_eq!(s.message_count, Some(21));
    assert_eq!(
        s.topic_message_counts().unwrap(),
        [("/a", 12), ("/b", 8), ("/ghost", 1)].into()
    );
    let ghost_channel = channel(&s, "/ghost").clone();
    assert!(ghost_channel.id >= 1 << 63);
    // Bodies are plain (no writer compresses), so they read.
    let (all, errors) = read_all(&file, &s, &Selection::all());
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(all.len(), 21);
    let ghost = all.iter().find(|m| m.0 == "/ghost").unwrap();
    assert_eq!(ghost.1, ghost_channel.id);
    assert_eq!(ghost.3, b"boo");
    // Its stand-in channel is the same in every chunk and passes topic filters.
    let sel = Selection {
        topics: Some(["/ghost".to_string()].into()),
        ..Selection::all()
    };
    let (only, _) = read_all(&file, &s, &sel);
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].1, ghost.1);
    let mut seen = None;
    let mut receiver = |m: Message<'_>| {
        if m.channel.topic == "/ghost" {
            seen = Some(m.channel.clone());
        }
        Flow::Continue
    };
    ApolloFormat
        .read_chunk(&file, &s, &s.chunks[1], &Selection::all(), &mut receiver)
        .unwrap();
    let ch = seen.unwrap();
    assert_eq!(ch.metadata["declared"], "false");
    assert_eq!(ch.metadata["descriptor"], "missing");
    assert_eq!(ch.message_type, None);

    // A body that does not parse in a file declaring compression: a clear
    // "unsupported" error naming the file and the offset.
    let mut bytes = writer::write(&opts);
    let body = usize::try_from(s.chunks[0].offset).unwrap() + 16;
    bytes[body] = 0x42; // "BZh..." would start with 0x42: field 8, wire type 2
    bytes[body + 1] = 0xff;
    let file = BytesReader::new("bz.record", bytes);
    let s = summary_of(&file);
    let mut receiver = |_: Message<'_>| Flow::Continue;
    let e = ApolloFormat
        .read_chunk(&file, &s, &s.chunks[0], &Selection::all(), &mut receiver)
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    assert!(
        e.to_string().contains("bz.record") && e.to_string().contains("compress"),
        "{e}"
    );
}

#[test]
fn chunk_times_of_other_writers_are_not_used_for_pruning() {
    // The pip cyber_record writer pads the header with NULs and stores each
    // chunk's first/last message time (not min/max); a message at time 0 and
    // an out-of-order one would be pruned away if those were trusted.
    let mut chunks = many_chunks(3);
    chunks[1][4].1 = 0;
    chunks[2][0].1 -= 5_000_000_000;
    let mut opts = writer::Opts {
        dirty_padding: false,
        legacy: false,
        compress: 0,
        nul_padding: true,
        channels: vec![("/a", Vec::new()), ("/b", Vec::new())],
        chunks,
    };
    let file = BytesReader::new("pip.record", writer::write(&opts));
    let s = summary_of(&file);
    assert!(
        s.chunks
            .iter()
            .all(|c| c.start_time.is_none() && c.end_time.is_none())
    );
    assert_eq!((s.start_time, s.end_time), (None, None));
    assert!(prop(&s, "chunk_times").unwrap().starts_with("not used"));
    assert_eq!(s.message_count, Some(30));
    // The C++ layout: min/max bounds, trusted.
    opts.nul_padding = false;
    let file = BytesReader::new("cpp.record", writer::write(&opts));
    let s = summary_of(&file);
    assert!(prop(&s, "chunk_times").unwrap().starts_with("used"));
    assert_eq!(
        s.chunks[1].start_time,
        Some(0),
        "a time-0 message is the minimum"
    );
    assert!(s.chunks.iter().all(|c| c.end_time.is_some()));
}

#[test]
fn flipped_descriptors_never_panic() {
    let Some(path) = crate::fixtures::file("apollo", "real/example.record.00000") else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let mut pools = 0;
    // Inside the Channel sections (2064..231960), where the ProtoDesc trees are.
    for at in (2064..231_960).step_by(1999) {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        let file = BytesReader::new("flip.record", b);
        let Ok(s) = ApolloFormat.summary(&file) else {
            continue;
        };
        for ch in s.channels.values() {
            if let Ok(Some(_)) = descriptor_pool(ch) {
                pools += 1;
            }
        }
    }
    // Channels come from the index copy, so most flips leave them intact.
    assert!(pools > 100, "{pools}");
    // And flips inside the index's copies.
    for at in (259_053..489_010).step_by(2999) {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        let file = BytesReader::new("flip.record", b);
        if let Ok(s) = ApolloFormat.summary(&file) {
            for ch in s.channels.values() {
                let _ = descriptor_pool(ch);
            }
        }
    }
}
