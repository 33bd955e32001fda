//! Decoding ROS 2 message definitions and CDR payloads against the official readers' decoded output.
//!
//! - `ros2.mcap` (mcap-ros2-support writer and decoder): the first three
//!   messages of every topic equal `ros2.expected.json` field by field, all
//!   570 messages decode, and every header stamp equals the publish time;
//! - `lz4_mixed.mcap`: the CDR topic `/mixed/imu`;
//! - crafted definitions and payloads: type mapping, name resolution,
//!   constants and defaults, alignment inside arrays of structs, big-endian
//!   and XCDR2 payloads, truncation at every length, lying lengths, bad
//!   definitions and limits.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_schema::DataType;
use serde_json::{Value, json};

use logsql_decode::cdr;
use logsql_decode::{
    ColumnBuilder, MessageDecoder, append_message, decoder_for, duration_type, field,
    fixed_list_of, list_of, timestamp_type,
};
use logsql_readers::model::Channel;

use crate::decode_common::{decode_all, expected_json, file_messages, row_json, topic_messages};
use crate::fixtures;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// The separator line between the sections of a concatenated definition.
fn sep() -> String {
    format!("\n{}\n", "=".repeat(80))
}

/// Expected JSON with every `{"sec", "nsec"}` time turned into the
/// `{"ns": ...}` that `row_json` produces for timestamps and durations.
fn times_to_ns(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            if m.len() == 2
                && let (Some(sec), Some(nsec)) = (m.get("sec"), m.get("nsec"))
            {
                let ns = sec.as_i64().unwrap() * 1_000_000_000 + nsec.as_i64().unwrap();
                return json!({ "ns": ns });
            }
            Value::Object(m.iter().map(|(k, v)| (k.clone(), times_to_ns(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(times_to_ns).collect()),
        other => other.clone(),
    }
}

/// Equal JSON, numbers compared as the readers mean them: integers exactly;
/// floats exactly, or — because serde_json without its `float_roundtrip`
/// feature parses some decimal texts one ulp off — when our value's shortest
/// text, parsed by the same parser, gives the expected value (the two texts
/// are then the same). Returns the path of the first difference.
fn json_diff(got: &Value, want: &Value, path: &str) -> Option<String> {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => {
            let same = if g.is_f64() || w.is_f64() {
                match (g.as_f64(), w.as_f64()) {
                    (Some(a), Some(b)) => {
                        a == b || serde_json::from_str::<f64>(&json!(a).to_string()).ok() == Some(b)
                    }
                    _ => false,
                }
            } else {
                g == w
            };
            (!same).then(|| format!("{path}: {g} != {w}"))
        }
        (Value::Array(g), Value::Array(w)) => {
            if g.len() != w.len() {
                return Some(format!("{path}: {} elements != {}", g.len(), w.len()));
            }
            g.iter()
                .zip(w)
                .enumerate()
                .find_map(|(i, (a, b))| json_diff(a, b, &format!("{path}[{i}]")))
        }
        (Value::Object(g), Value::Object(w)) => {
            let gk: Vec<&String> = g.keys().collect();
            let wk: Vec<&String> = w.keys().collect();
            if gk != wk {
                return Some(format!("{path}: fields {gk:?} != {wk:?}"));
            }
            g.iter()
                .find_map(|(k, a)| json_diff(a, &w[k], &format!("{path}.{k}")))
        }
        (g, w) => (g != w).then(|| format!("{path}: {g} != {w}")),
    }
}

/// Compiles `definition` as `type_name`.
fn compile(type_name: &str, definition: &str) -> cdr::CdrDecoder {
    cdr::compile(type_name, definition).unwrap_or_else(|e| panic!("compiling {type_name}: {e}"))
}

/// The compile error of `definition` as `type_name`.
fn compile_err(type_name: &str, definition: &str) -> String {
    match cdr::compile(type_name, definition) {
        Ok(d) => panic!("{type_name} compiled: {:?}", d.data_type()),
        Err(e) => e.to_string(),
    }
}

/// Decodes one payload and returns its row as JSON.
fn decode_one(decoder: &dyn MessageDecoder, payload: &[u8]) -> Value {
    let array = decode_all(decoder, &[payload]);
    row_json(array.as_ref(), 0)
}

/// The decode error of one payload; checks the builder was rolled back.
fn decode_err(decoder: &dyn MessageDecoder, payload: &[u8]) -> String {
    let mut b = ColumnBuilder::new(decoder.data_type()).unwrap();
    match append_message(decoder, payload, &mut b) {
        Ok(()) => panic!("payload {payload:02x?} decoded"),
        Err(e) => {
            assert_eq!(b.len(), 0, "partial row left behind");
            e.to_string()
        }
    }
}

/// Little-endian CDR bytes of values, written in order with explicit padding.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Bytes {
    fn le() -> Self {
        Self(vec![0, 1, 0, 0])
    }
    fn raw(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn pad(self, n: usize) -> Self {
        self.raw(&vec![0; n])
    }
    fn u8(self, v: u8) -> Self {
        self.raw(&[v])
    }
    fn u16(self, v: u16, be: bool) -> Self {
        self.raw(&if be { v.to_be_bytes() } else { v.to_le_bytes() })
    }
    fn i32(self, v: i32, be: bool) -> Self {
        self.raw(&if be { v.to_be_bytes() } else { v.to_le_bytes() })
    }
    fn u32(self, v: u32, be: bool) -> Self {
        self.raw(&if be { v.to_be_bytes() } else { v.to_le_bytes() })
    }
    fn f64(self, v: f64, be: bool) -> Self {
        self.raw(&if be { v.to_be_bytes() } else { v.to_le_bytes() })
    }
    /// A CDR string: length with the NUL, bytes, NUL (no alignment).
    fn str(self, s: &str, be: bool) -> Self {
        self.u32(s.len() as u32 + 1, be).raw(s.as_bytes()).u8(0)
    }
}

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

/// Checks the first messages of `topics` of an MCAP fixture against its
/// expected JSON; returns how many messages were compared.
fn check_first_messages(file: &str, expected: &str, only_topic: Option<&str>) -> usize {
    let Some(path) = fixtures::file("mcap", &format!("decode/{file}")) else {
        return 0;
    };
    let expected = expected_json(&path.with_file_name(expected));
    let all = file_messages(&path);
    let mut compared = 0;
    for (topic, t) in expected["topics"].as_object().unwrap() {
        if only_topic.is_some_and(|o| o != topic) {
            continue;
        }
        let msgs = topic_messages(&all, topic);
        assert_eq!(
            msgs.len() as u64,
            t["message_count"].as_u64().unwrap(),
            "{topic}"
        );
        let channel = &msgs[0].channel;
        assert_eq!(channel.message_encoding, "cdr", "{topic}");
        let decoder = decoder_for(channel).unwrap_or_else(|e| panic!("{topic}: {e}"));
        assert_eq!(
            decoder.describe(),
            format!("ros2msg {}", t["schema_name"].as_str().unwrap())
        );
        let first = t["first_messages"].as_array().unwrap();
        assert_eq!(first.len(), 3, "{topic}");
        let payloads: Vec<&[u8]> = msgs[..3].iter().map(|m| m.data.as_slice()).collect();
        let array = decode_all(decoder.as_ref(), &payloads);
        // Field order as declared.
        let DataType::Struct(fields) = decoder.data_type() else {
            panic!("{topic}: not a struct");
        };
        for (i, e) in first.iter().enumerate() {
            assert_eq!(
                msgs[i].log_time,
                e["log_time"].as_u64().unwrap(),
                "{topic} #{i}"
            );
            let want = times_to_ns(&e["data"]);
            let got = row_json(array.as_ref(), i);
            if let Some(diff) = json_diff(&got, &want, "data") {
                panic!("{topic} message {i}: {diff}\n got: {got}\nwant: {want}");
            }
            let mut want_names: Vec<&String> = e["data"].as_object().unwrap().keys().collect();
            let mut got_names: Vec<&String> = fields.iter().map(|f| f.name()).collect();
            want_names.sort();
            got_names.sort();
            assert_eq!(got_names, want_names, "{topic}");
            compared += 1;
        }
    }
    compared
}

#[test]
fn ros2_fixture_first_messages_equal_expected() {
    let n = check_first_messages("ros2.mcap", "ros2.expected.json", None);
    if n > 0 {
        assert_eq!(n, 15, "5 topics x 3 messages");
    }
}

#[test]
fn lz4_mixed_imu_first_messages_equal_expected() {
    let n = check_first_messages(
        "lz4_mixed.mcap",
        "lz4_mixed.expected.json",
        Some("/mixed/imu"),
    );
    if n > 0 {
        assert_eq!(n, 3);
    }
}

/// A topic's decoder, its rows so far and their publish times.
type TopicDecode = (Arc<dyn MessageDecoder>, ColumnBuilder, Vec<u64>);

#[test]
fn ros2_fixture_decodes_every_message() {
    let Some(path) = fixtures::file("mcap", "decode/ros2.mcap") else {
        return;
    };
    let all = file_messages(&path);
    assert_eq!(all.len(), 570);
    let mut by_topic: BTreeMap<String, TopicDecode> = BTreeMap::new();
    for m in &all {
        let (decoder, builder, publish) =
            by_topic.entry(m.channel.topic.clone()).or_insert_with(|| {
                let d = decoder_for(&m.channel).unwrap();
                let b = ColumnBuilder::new(d.data_type()).unwrap();
                (d, b, Vec::new())
            });
        append_message(decoder.as_ref(), &m.data, builder).unwrap_or_else(|e| {
            panic!("{} at {}: {e}", m.channel.topic, m.log_time);
        });
        publish.push(m.publish_time.unwrap());
    }
    let counts: BTreeMap<&str, usize> = by_topic
        .iter()
        .map(|(t, (_, b, _))| (t.as_str(), b.len()))
        .collect();
    assert_eq!(
        counts,
        BTreeMap::from([
            ("/chatter", 20),
            ("/fixture/mixed", 50),
            ("/imu", 200),
            ("/pose", 200),
            ("/tf", 100),
        ])
    );
    // Every header stamp holds the message's publish time (fixture README),
    // and every /tf transform's too.
    let mut stamps_checked = 0;
    for (topic, (_, builder, publish)) in &mut by_topic {
        let array = builder.finish().unwrap();
        let s = array.as_struct();
        if let Some(header) = s.column_by_name("header") {
            let stamp = header.as_struct().column_by_name("stamp").unwrap();
            assert_eq!(stamp.data_type(), &timestamp_type());
            let stamp = stamp.as_primitive::<arrow_array::types::TimestampNanosecondType>();
            for (i, p) in publish.iter().enumerate() {
                assert_eq!(stamp.value(i) as u64, *p, "{topic} #{i}");
                stamps_checked += 1;
            }
        }
        if topic == "/tf" {
            let transforms = s.column_by_name("transforms").unwrap().as_list::<i32>();
            for (i, p) in publish.iter().enumerate() {
                let row = transforms.value(i);
                let n = row.len();
                assert!((2..=3).contains(&n), "/tf #{i}: {n} transforms");
                let stamps = row
                    .as_struct()
                    .column_by_name("header")
                    .unwrap()
                    .as_struct();
                let stamps = stamps
                    .column_by_name("stamp")
                    .unwrap()
                    .as_primitive::<arrow_array::types::TimestampNanosecondType>();
                for j in 0..n {
                    assert_eq!(stamps.value(j) as u64, *p, "/tf #{i}.{j}");
                    stamps_checked += 1;
                }
            }
        }
    }
    assert!(stamps_checked >= 450 + 200, "{stamps_checked}");
}

#[test]
fn ros2_fixture_mixed_type_mapping() {
    let Some(path) = fixtures::file("mcap", "decode/ros2.mcap") else {
        return;
    };
    let all = file_messages(&path);
    let msgs = topic_messages(&all, "/fixture/mixed");
    let decoder = decoder_for(&msgs[0].channel).unwrap();
    let DataType::Struct(fields) = decoder.data_type() else {
        panic!("not a struct");
    };
    let ty = |name: &str| fields.find(name).unwrap().1.data_type().clone();
    let time = timestamp_type();
    assert_eq!(
        ty("header"),
        DataType::Struct(
            vec![
                field("stamp", time.clone()),
                field("frame_id", DataType::Utf8)
            ]
            .into()
        )
    );
    assert_eq!(ty("elapsed"), duration_type());
    assert_eq!(ty("flag"), DataType::Boolean);
    assert_eq!(ty("raw_byte"), DataType::UInt8);
    assert_eq!(ty("letter"), DataType::UInt8);
    assert_eq!(ty("i8"), DataType::Int8);
    assert_eq!(ty("u64"), DataType::UInt64);
    assert_eq!(ty("f32"), DataType::Float32);
    assert_eq!(ty("bounded_text"), DataType::Utf8);
    assert_eq!(ty("fixed_doubles"), fixed_list_of(DataType::Float64, 3));
    assert_eq!(ty("ints"), list_of(DataType::Int32));
    assert_eq!(ty("bounded_shorts"), list_of(DataType::Int16));
    assert_eq!(ty("blob"), DataType::Binary);
    assert_eq!(ty("fixed_bytes"), DataType::Binary);
    assert_eq!(ty("fixed_bools"), fixed_list_of(DataType::Boolean, 2));
    assert_eq!(ty("bounded_strings"), list_of(DataType::Utf8));
    assert_eq!(ty("fixed_strings"), fixed_list_of(DataType::Utf8, 2));
    let item = DataType::Struct(
        vec![
            field("name", DataType::Utf8),
            field("kind", DataType::UInt8),
            field("value", DataType::Float64),
            field("stamp", time),
            field("counts", list_of(DataType::Int32)),
        ]
        .into(),
    );
    assert_eq!(ty("items"), list_of(item.clone()));
    assert_eq!(ty("item_pair"), fixed_list_of(item.clone(), 2));
    assert_eq!(ty("bounded_items"), list_of(item));
    assert_eq!(ty("mode"), DataType::UInt8);
    assert_eq!(ty("gain"), DataType::Float32);
    // Constants are not columns; every field is nullable; declared order.
    assert!(fields.find("GREETING").is_none() && fields.find("MODE_IDLE").is_none());
    assert!(fields.iter().all(|f| f.is_nullable()));
    assert_eq!(fields.len(), 32);
    assert_eq!(fields[0].name(), "header");
    assert_eq!(fields[31].name(), "gain");
}

#[test]
fn ros2_fixture_truncated_messages_fail_with_field_path() {
    let Some(path) = fixtures::file("mcap", "decode/ros2.mcap") else {
        return;
    };
    let all = file_messages(&path);
    for topic in ["/fixture/mixed", "/imu", "/tf", "/chatter", "/pose"] {
        let msgs = topic_messages(&all, topic);
        let decoder = decoder_for(&msgs[0].channel).unwrap();
        let payloads: Vec<&[u8]> = msgs[..3].iter().map(|m| m.data.as_slice()).collect();
        let clean = decode_all(decoder.as_ref(), &payloads);
        // Every cut fails and leaves no trace in a builder shared by all of
        // them: the whole payloads appended after the failures decode as in
        // a fresh builder.
        let mut b = ColumnBuilder::new(decoder.data_type()).unwrap();
        for (row, data) in payloads.iter().enumerate() {
            for cut in 0..data.len() {
                let e = append_message(decoder.as_ref(), &data[..cut], &mut b)
                    .expect_err("a cut payload decoded")
                    .to_string();
                assert_eq!(b.len(), row);
                if cut < 4 {
                    assert!(e.contains("encapsulation header"), "{topic} cut {cut}: {e}");
                } else {
                    assert!(e.starts_with("field \""), "{topic} cut {cut}: {e}");
                }
            }
            append_message(decoder.as_ref(), data, &mut b).unwrap();
        }
        let after = b.finish().unwrap();
        assert_eq!(after.len(), 3);
        for row in 0..3 {
            assert_eq!(
                row_json(after.as_ref(), row),
                row_json(clean.as_ref(), row),
                "{topic} #{row}"
            );
        }
    }
}

#[test]
fn mutated_fixture_payloads_never_panic() {
    let Some(path) = fixtures::file("mcap", "decode/ros2.mcap") else {
        return;
    };
    let all = file_messages(&path);
    // xorshift64*: deterministic, no dependency.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let (mut ok, mut failed) = (0, 0);
    for topic in ["/fixture/mixed", "/tf", "/imu"] {
        let msgs = topic_messages(&all, topic);
        let decoder = decoder_for(&msgs[0].channel).unwrap();
        let mut b = ColumnBuilder::new(decoder.data_type()).unwrap();
        for round in 0..3000 {
            let mut data = msgs[round % msgs.len()].data.clone();
            for _ in 0..1 + next() % 4 {
                let at = 4 + (next() as usize) % (data.len() - 4);
                data[at] = match next() % 3 {
                    0 => 0xFF,
                    1 => next() as u8,
                    _ => data[at] ^ 0x80,
                };
            }
            let rows = b.len();
            match append_message(decoder.as_ref(), &data, &mut b) {
                Ok(()) => ok += 1,
                Err(e) => {
                    assert_eq!(b.len(), rows);
                    assert!(e.to_string().starts_with("field \""), "{topic}: {e}");
                    failed += 1;
                }
            }
        }
        // Whatever was appended makes valid Arrow arrays.
        let array = b.finish().unwrap();
        assert_eq!(array.len(), ok_rows(&array));
    }
    assert!(ok > 0 && failed > 0, "ok {ok}, failed {failed}");
}

/// Rows of an array, after checking its data is internally consistent.
fn ok_rows(array: &arrow_array::ArrayRef) -> usize {
    array.to_data().validate_full().unwrap();
    array.len()
}

// ---------------------------------------------------------------------------
// Crafted definitions and payloads
// ---------------------------------------------------------------------------

/// A message whose struct elements need padding that depends on their
/// position in the whole payload, not in the element.
fn align_decoder() -> cdr::CdrDecoder {
    let def = format!(
        "uint8 a\nfloat64 b\nElem[] elems\nuint16 tail{}MSG: test_msgs/Elem\nuint8 x\nint32 y\nfloat64 z\n",
        sep()
    );
    compile("test_msgs/msg/Align", &def)
}

/// The `Align` payload, written by hand with explicit padding.
fn align_payload(be: bool) -> Vec<u8> {
    Bytes(vec![0, if be { 0 } else { 1 }, 0, 0])
        .u8(7) // a @0
        .pad(7)
        .f64(1.5, be) // b @8
        .u32(2, be) // count @16
        .u8(1) // elems[0].x @20
        .pad(3)
        .i32(-5, be) // elems[0].y @24
        .pad(4)
        .f64(2.5, be) // elems[0].z @32
        .u8(2) // elems[1].x @40
        .pad(3)
        .i32(7, be) // elems[1].y @44
        .f64(-1.0, be) // elems[1].z @48 (already aligned)
        .u16(0xBEEF, be) // tail @56
        .0
}

fn align_expected() -> Value {
    json!({
        "a": 7, "b": 1.5,
        "elems": [{"x": 1, "y": -5, "z": 2.5}, {"x": 2, "y": 7, "z": -1.0}],
        "tail": 0xBEEF
    })
}

#[test]
fn alignment_inside_arrays_of_structs() {
    let d = align_decoder();
    assert_eq!(decode_one(&d, &align_payload(false)), align_expected());
}

#[test]
fn big_endian_payload() {
    let d = align_decoder();
    assert_eq!(decode_one(&d, &align_payload(true)), align_expected());
    // Every primitive width big-endian.
    let d = compile(
        "t/msg/W",
        "int8 a\nint16 b\nuint32 c\nint64 d\nfloat32 e\nfloat64 f\nuint64 g\nint32[] h\nstring s\nbuiltin_interfaces/Time t",
    );
    let p = Bytes(vec![0, 0, 0, 0])
        .u8(0xFE) // a = -2 @0
        .pad(1)
        .raw(&(-300i16).to_be_bytes()) // b @2
        .u32(4_000_000_000, true) // c @4
        .raw(&(-5_000_000_000i64).to_be_bytes()) // d @8
        .raw(&0.25f32.to_be_bytes()) // e @16
        .pad(4)
        .f64(-2.5e-300, true) // f @24
        .raw(&u64::MAX.to_be_bytes()) // g @32
        .u32(2, true) // h count @40
        .i32(-1, true)
        .i32(65536, true)
        .str("hé", true) // s @52
        .pad(0) // 52 + 4 + 4 = 60
        .i32(-3, true) // t.sec @60
        .u32(250, true) // t.nanosec @64
        .0;
    assert_eq!(
        decode_one(&d, &p),
        json!({
            "a": -2, "b": -300, "c": 4_000_000_000u32, "d": -5_000_000_000i64, "e": 0.25,
            "f": -2.5e-300, "g": u64::MAX, "h": [-1, 65536], "s": "hé",
            "t": {"ns": -3_000_000_000i64 + 250}
        })
    );
}

#[test]
fn xcdr2_plain_payload() {
    let d = compile("t/msg/X", "uint8 a\nfloat64 b\nstring[] names\nint32[] v");
    let p = Bytes(vec![0, 7, 0, 0])
        .u8(1) // a @0
        .pad(3)
        .f64(0.5, false) // b @4: 8-byte values align to 4 in XCDR2
        .u32(19, false) // DHEADER @12: bytes after it, up to the end of "cd"
        .u32(2, false) // count @16
        .str("ab", false) // @20..27
        .pad(1)
        .str("cd", false) // @28..35
        .pad(1)
        .u32(1, false) // v count @36 (no DHEADER: primitive elements)
        .i32(-9, false)
        .0;
    assert_eq!(
        decode_one(&d, &p),
        json!({"a": 1, "b": 0.5, "names": ["ab", "cd"], "v": [-9]})
    );
    // A DHEADER that disagrees with the elements is an error.
    let mut bad = p.clone();
    bad[16] = 23;
    let e = decode_err(&d, &bad);
    assert!(
        e.starts_with("field \"names\"") && e.contains("DHEADER"),
        "{e}"
    );
}

#[test]
fn unsupported_encapsulations_and_short_payloads() {
    let d = compile("std_msgs/msg/String", "string data");
    let e = decode_err(&d, &[0, 3, 0, 0, 1, 0, 0, 0, 0]);
    assert!(e.contains("00 03") && e.contains("PL_CDR"), "{e}");
    let e = decode_err(&d, &[0, 9, 0, 0, 1, 0, 0, 0, 0]);
    assert!(e.contains("DELIMITED_CDR2"), "{e}");
    let e = decode_err(&d, &[0x12, 0x34, 0, 0, 1, 0, 0, 0, 0]);
    assert!(e.contains("12 34"), "{e}");
    let e = decode_err(&d, &[0, 1]);
    assert!(e.contains("encapsulation header"), "{e}");
    let e = decode_err(&d, &[]);
    assert!(e.contains("encapsulation header"), "{e}");
}

#[test]
fn truncation_at_every_length_is_an_error_with_a_field_path() {
    let d = align_decoder();
    for be in [false, true] {
        let p = align_payload(be);
        let mut b = ColumnBuilder::new(d.data_type()).unwrap();
        for cut in 0..p.len() {
            let e = append_message(&d, &p[..cut], &mut b)
                .unwrap_err()
                .to_string();
            assert_eq!(b.len(), 0);
            if cut >= 4 {
                assert!(e.starts_with("field \""), "cut {cut}: {e}");
            }
        }
        // Errors inside elements name the element.
        let e = decode_err(&d, &p[..55]);
        assert_eq!(
            e,
            "field \"elems[1].z\": payload ends at byte 55, 8 bytes needed at byte 52"
        );
        let e = decode_err(&d, &p[..40]);
        assert_eq!(
            e,
            "field \"elems\": sequence of 2 elements needs at least 26 bytes at byte 24 but only 16 are left"
        );
        // The builder still takes whole rows after the failures.
        append_message(&d, &p, &mut b).unwrap();
        let array = b.finish().unwrap();
        assert_eq!(array.len(), 1);
        assert_eq!(row_json(array.as_ref(), 0), align_expected());
    }
}

#[test]
fn lying_lengths_are_errors_without_allocation() {
    let d = compile(
        "t/msg/L",
        "int32[] v\nstring s\nuint8[] blob\nElem[] e\nElem[3] f\n================\nMSG: t/Elem\nfloat64 x",
    );
    // A sequence count of 4 billion with 8 bytes behind it.
    let p = Bytes::le().u32(u32::MAX, false).pad(8).0;
    let e = decode_err(&d, &p);
    assert!(
        e.starts_with("field \"v\"") && e.contains("4294967295 elements"),
        "{e}"
    );
    // A string length past the end.
    let p = Bytes::le().u32(0, false).u32(1000, false).raw(b"abc").0;
    let e = decode_err(&d, &p);
    assert!(e.starts_with("field \"s\"") && e.contains("1000"), "{e}");
    // A byte sequence past the end.
    let p = Bytes::le()
        .u32(0, false)
        .str("", false)
        .pad(3)
        .u32(99, false)
        .0;
    let e = decode_err(&d, &p);
    assert!(e.starts_with("field \"blob\""), "{e}");
    // A struct sequence of 1000 elements of at least 8 bytes, 16 bytes left.
    let p = Bytes::le()
        .u32(0, false)
        .str("", false)
        .pad(3)
        .u32(0, false)
        .u32(1000, false)
        .pad(16)
        .0;
    let e = decode_err(&d, &p);
    assert!(e.starts_with("field \"e\"") && e.contains("8000"), "{e}");
    // A fixed array of 3 such elements with 16 bytes left.
    let p = Bytes::le()
        .u32(0, false)
        .str("", false)
        .pad(3)
        .u32(0, false)
        .u32(0, false)
        .pad(16)
        .0;
    let e = decode_err(&d, &p);
    assert!(
        e.starts_with("field \"f\"") && e.contains("24 bytes"),
        "{e}"
    );
}

#[test]
fn strings_invalid_utf8_empty_and_wstring() {
    let d = compile("std_msgs/msg/String", "string data");
    let p = Bytes::le().u32(4, false).raw(&[b'f', 0xFF, b'o', 0]).0;
    assert_eq!(decode_one(&d, &p), json!({"data": "f\u{FFFD}o"}));
    // Length 0 (no terminator) and length 1 (just the NUL) are both "".
    assert_eq!(
        decode_one(&d, &Bytes::le().u32(0, false).0),
        json!({"data": ""})
    );
    assert_eq!(
        decode_one(&d, &Bytes::le().u32(1, false).u8(0).0),
        json!({"data": ""})
    );
    let d = compile("t/msg/W", "uint8 a\nwstring w\nwstring<=4 x");
    let p = Bytes::le()
        .u8(1)
        .pad(3)
        .u32(3, false)
        .u32('h' as u32, false)
        .u32('é' as u32, false)
        .u32(0x1F600, false)
        .u32(2, false)
        .u32(0xD83D, false) // a surrogate pair widened unit by unit
        .u32(0xDE00, false)
        .0;
    assert_eq!(
        decode_one(&d, &p),
        json!({"a": 1, "w": "hé\u{1F600}", "x": "\u{1F600}"})
    );
    // XCDR2: 2-byte characters.
    let p = Bytes(vec![0, 7, 0, 0])
        .u8(1)
        .pad(3)
        .u32(2, false)
        .u16('o' as u16, false)
        .u16('k' as u16, false)
        .u32(1, false)
        .u16(0xDC00, false) // unpaired surrogate
        .0;
    assert_eq!(
        decode_one(&d, &p),
        json!({"a": 1, "w": "ok", "x": "\u{FFFD}"})
    );
}

#[test]
fn byte_char_bool_and_binary_mapping() {
    let d = compile(
        "t/msg/B",
        "byte b\nchar c\nbool t\nbool f\nbyte[] bs\nbyte[2] bf\nuint8[<=4] ub\nchar[2] cs\nbool[] flags\nint8[2] i8s",
    );
    let DataType::Struct(fields) = d.data_type() else {
        panic!()
    };
    let types: Vec<DataType> = fields.iter().map(|f| f.data_type().clone()).collect();
    assert_eq!(
        types,
        vec![
            DataType::UInt8,
            DataType::UInt8,
            DataType::Boolean,
            DataType::Boolean,
            DataType::Binary,
            DataType::Binary,
            DataType::Binary,
            fixed_list_of(DataType::UInt8, 2),
            list_of(DataType::Boolean),
            fixed_list_of(DataType::Int8, 2),
        ]
    );
    let p = Bytes::le()
        .raw(&[255, 200, 2, 0]) // b, c, t (2 is true), f
        .u32(1, false)
        .u8(0x80) // bs @8
        .raw(&[1, 2]) // bf @9
        .pad(1)
        .u32(0, false) // ub @12
        .raw(b"xy") // cs @16
        .pad(2)
        .u32(3, false) // flags @20
        .raw(&[1, 0, 1])
        .raw(&[0x80, 0x7F]) // i8s
        .0;
    assert_eq!(
        decode_one(&d, &p),
        json!({
            "b": 255, "c": 200, "t": true, "f": false,
            "bs": {"$bytes": "gA=="}, "bf": {"$bytes": "AQI="}, "ub": {"$bytes": ""},
            "cs": [120, 121], "flags": [true, false, true], "i8s": [-128, 127]
        })
    );
}

#[test]
fn empty_messages_take_one_byte() {
    let empty = "# This message has no fields.\n";
    let d = compile("std_msgs/msg/Empty", empty);
    assert_eq!(d.data_type(), &DataType::Struct(Default::default()));
    assert_eq!(decode_one(&d, &Bytes::le().u8(0).0), json!({}));
    assert!(decode_err(&d, &Bytes::le().0).contains("payload ends"));
    let d = compile(
        "t/msg/E",
        &format!(
            "std_msgs/Empty e\nuint8 after\nstd_msgs/Empty[] es{}MSG: std_msgs/Empty\n{empty}",
            sep()
        ),
    );
    let p = Bytes::le().u8(0).u8(9).pad(2).u32(2, false).u8(0).u8(0).0;
    assert_eq!(
        decode_one(&d, &p),
        json!({"e": {}, "after": 9, "es": [{}, {}]})
    );
}

#[test]
fn constants_defaults_and_comments() {
    let def = r#"# comment line
   # indented comment
uint8 MODE_IDLE=0
int32 LIMIT = -42
float64 SCALE=0.5
string GREETING="hello # not a comment"
string PLAIN=raw text # with a comment
uint8 mode 1   # a default
float32 gain 0.5
int32[] xs [1, 2, 3]
string s "a # b"
	float64	tabbed	# tabs as separators
string<=8 bounded "x"
"#;
    let d = compile("t/msg/C", def);
    let DataType::Struct(fields) = d.data_type() else {
        panic!()
    };
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["mode", "gain", "xs", "s", "tabbed", "bounded"]);
    let p = Bytes::le()
        .u8(3)
        .pad(3)
        .raw(&1.5f32.to_le_bytes())
        .u32(0, false)
        .str("q", false)
        .pad(6)
        .f64(9.0, false)
        .str("", false)
        .0;
    assert_eq!(
        decode_one(&d, &p),
        json!({"mode": 3, "gain": 1.5, "xs": [], "s": "q", "tabbed": 9.0, "bounded": ""})
    );
}

#[test]
fn name_resolution() {
    // Relative names resolve in the package of the type using them;
    // `pkg/msg/Type` and `pkg/Type` are the same type; `Header` is
    // std_msgs/Header; the main type may be named `pkg/Type`.
    let s = sep();
    let def = format!(
        "Header header\nPose pose\ngeometry_msgs/msg/Point p2\nbuiltin_interfaces/msg/Time t\nduration d\n\
         {s}MSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\
         {s}MSG: geometry_msgs/msg/Pose\nPoint position\
         {s}MSG: geometry_msgs/Point\nfloat64 x\nfloat64 y\nfloat64 z\n"
    );
    for type_name in ["geometry_msgs/msg/Test", "geometry_msgs/Test"] {
        let d = compile(type_name, &def);
        let p = Bytes::le()
            .i32(1, false)
            .u32(2, false)
            .str("map", false)
            .f64(1.0, false) // @16
            .f64(2.0, false)
            .f64(3.0, false)
            .f64(4.0, false)
            .f64(5.0, false)
            .f64(6.0, false)
            .i32(7, false)
            .u32(8, false)
            .i32(-1, false)
            .u32(9, false)
            .0;
        assert_eq!(
            decode_one(&d, &p),
            json!({
                "header": {"stamp": {"ns": 1_000_000_002}, "frame_id": "map"},
                "pose": {"position": {"x": 1.0, "y": 2.0, "z": 3.0}},
                "p2": {"x": 4.0, "y": 5.0, "z": 6.0},
                "t": {"ns": 7_000_000_008i64},
                "d": {"ns": -999_999_991}
            }),
            "{type_name}"
        );
    }
    // A unique section of that name in another package is found too.
    let d = compile(
        "a/msg/M",
        &format!("Point p{s}MSG: geometry_msgs/Point\nfloat64 x"),
    );
    assert_eq!(
        decode_one(&d, &Bytes::le().f64(1.0, false).0),
        json!({"p": {"x": 1.0}})
    );
    // A non-standard builtin_interfaces/Time section is decoded as written.
    let d = compile(
        "a/msg/M",
        &format!("builtin_interfaces/Time t{s}MSG: builtin_interfaces/Time\nint64 sec"),
    );
    assert_eq!(
        decode_one(&d, &Bytes::le().pad(8).0),
        json!({"t": {"sec": 0}})
    );
}

#[test]
fn bad_definitions_are_clear_errors() {
    let s = sep();
    let cases: Vec<(String, &str)> = vec![
        ("Missing m".into(), "no `MSG: a/Missing` section"),
        ("other/Missing m".into(), "no `MSG: other/Missing` section"),
        ("float64[abc] x".into(), "bad length \"abc\""),
        ("float64".into(), "expected `TYPE NAME`"),
        ("float64 ".into(), "expected `TYPE NAME`"),
        ("string<=x s".into(), "bad length"),
        ("int32[0] z".into(), "0 elements"),
        ("uint8<=3 q".into(), "only strings can be bounded"),
        ("int32[3][4] m".into(), "bad array type"),
        ("int32[3 m".into(), "bad array type"),
        ("bad-type x".into(), "bad type name"),
        ("a/b/c/d x".into(), "bad type name"),
        ("float64 x-y".into(), "bad field name"),
        ("float64 1x".into(), "expected a field name"),
        ("float64 x\nint32 x".into(), "duplicate field name"),
        ("float64[99999999999] x".into(), "too large"),
        ("float64[2147483647] x".into(), "at least 17179869176 bytes"),
        (
            format!("float64 x{s}float64 y"),
            "must be followed by `MSG: pkg/Type`",
        ),
        (format!("float64 x{s}"), "ends with a separator"),
        (
            format!("Me m{s}MSG: a/Me\nMe again"),
            "recursive message type: a/M -> a/Me -> a/Me",
        ),
        (
            format!("B b{s}MSG: a/B\nM[] back"),
            "recursive message type: a/M -> a/B -> a/M",
        ),
        (
            format!("Point p{s}MSG: x/Point\nint8 a{s}MSG: y/Point\nint8 b"),
            "ambiguous",
        ),
    ];
    for (def, want) in cases {
        let e = compile_err("a/msg/M", &def);
        assert!(e.contains(want), "{def:?}: {e}");
        assert!(e.starts_with("ros2msg a/msg/M: "), "{def:?}: {e}");
    }
    // The error names the field and type it is about.
    let e = compile_err("a/msg/M", &format!("B b{s}MSG: a/B\nfloat64[x] q"));
    assert_eq!(
        e,
        "ros2msg a/msg/M: field \"b\" of a/M: definition of a/B: line 1: bad length \"x\" in \"float64[x]\": \"float64[x] q\""
    );
}

#[test]
fn nesting_limits_never_overflow_the_stack() {
    // A chain of 500 types, each containing the next.
    let s = sep();
    let mut def = "T0 t\n".to_string();
    for i in 0..500 {
        def.push_str(&format!("{s}MSG: a/T{i}\nT{} t\n", i + 1));
    }
    def.push_str(&format!("{s}MSG: a/T500\nint8 x\n"));
    let e = compile_err("a/msg/M", &def);
    assert!(e.contains("nested more than 64 deep"), "{e}");
    // Ten fields of the next type, twelve levels deep: 10^12 leaves.
    let mut def = (0..10).map(|i| format!("T0 f{i}\n")).collect::<String>();
    for level in 0..12 {
        def.push_str(&format!("{s}MSG: a/T{level}\n"));
        for i in 0..10 {
            def.push_str(&format!("T{} f{i}\n", level + 1));
        }
    }
    def.push_str(&format!("{s}MSG: a/T12\nint8 x\n"));
    let e = compile_err("a/msg/M", &def);
    assert!(e.contains("more than 100000 fields"), "{e}");
}

#[test]
fn channel_without_type_name_is_an_error() {
    let channel = Channel {
        id: 1,
        topic: "/x".into(),
        message_type: None,
        message_encoding: "cdr".into(),
        schema_encoding: Some("ros2msg".into()),
        schema: Some(Arc::from(&b"string data"[..])),
        metadata: Default::default(),
    };
    let e = cdr::decoder(&channel).unwrap_err().to_string();
    assert!(e.contains("type name"), "{e}");
    let channel = Channel {
        message_type: Some("std_msgs/msg/String".into()),
        ..channel
    };
    let d = decoder_for(&channel).unwrap();
    assert_eq!(d.describe(), "ros2msg std_msgs/msg/String");
    assert_eq!(
        decode_one(d.as_ref(), &Bytes::le().str("hi", false).0),
        json!({"data": "hi"})
    );
}

/// CPU time this thread has used, from `/proc/thread-self/stat` (clock
/// ticks of 10 ms), so the rate holds on a busy machine; `None` elsewhere.
fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    // Fields 14 and 15 of the whole line (utime, stime) are 11 and 12 here.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Decode rate of sensor_msgs/msg/Imu (the fixture's 200 payloads, over and
/// over, in batches of 8192 rows). Prints messages per second of wall time
/// and of this thread's CPU time. Run in release:
/// `cargo test --release -p logsql-decode --test decode imu_decode_rate -- --ignored --nocapture`
#[test]
#[ignore]
fn imu_decode_rate() {
    let Some(path) = fixtures::file("mcap", "decode/ros2.mcap") else {
        return;
    };
    let all = file_messages(&path);
    let msgs = topic_messages(&all, "/imu");
    let decoder = decoder_for(&msgs[0].channel).unwrap();
    let payloads: Vec<&[u8]> = msgs.iter().map(|m| m.data.as_slice()).collect();
    let batch = 8192;
    let total = 4_000_000;
    for _round in 0..3 {
        let mut b = ColumnBuilder::new(decoder.data_type()).unwrap();
        let cpu = thread_cpu_seconds();
        let start = std::time::Instant::now();
        let mut rows = 0;
        let mut i = 0;
        while rows < total {
            append_message(decoder.as_ref(), payloads[i], &mut b).unwrap();
            i = if i + 1 == payloads.len() { 0 } else { i + 1 };
            rows += 1;
            if b.len() == batch {
                std::hint::black_box(b.finish().unwrap());
            }
        }
        std::hint::black_box(b.finish().unwrap());
        let wall = start.elapsed().as_secs_f64();
        let cpu = cpu.and_then(|c0| Some(thread_cpu_seconds()? - c0));
        println!(
            "sensor_msgs/msg/Imu ({} bytes): {total} messages, wall {wall:.3} s = {:.2} M/s; \
             CPU {} = {} M/s",
            payloads[0].len(),
            total as f64 / wall / 1e6,
            cpu.map_or("?".into(), |c| format!("{c:.2} s")),
            cpu.map_or("?".into(), |c| format!("{:.2}", total as f64 / c / 1e6)),
        );
    }
}
