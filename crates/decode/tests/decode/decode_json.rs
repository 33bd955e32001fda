//! Decoding JSON payloads against the official readers' decoded output.
//!
//! Fixture tests compare rows with `json.expected.json` (written by
//! `json.loads`) and every message with serde_json's reading of the same
//! payload; crafted tests cover schema features, inference, error paths and
//! garbage payloads.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Fields};
use serde_json::{Value, json};

use logsql_decode::{
    ColumnBuilder, MessageDecoder, append_message, decoder_for, field, json as jd, list_of,
};
use logsql_readers::model::Channel;

use crate::decode_common::{OwnedMessage, decode_all, expected_json, file_messages, row_json};
use crate::fixtures;

// ---------------------------------------------------------------------------
// Helpers.

/// A JSON channel with `schema` (a `jsonschema`), or schemaless.
fn channel(topic: &str, schema: Option<&str>) -> Channel {
    Channel {
        id: 1,
        topic: topic.into(),
        message_type: schema.map(|_| "test.Type".into()),
        message_encoding: "json".into(),
        schema_encoding: schema.map(|_| "jsonschema".into()),
        schema: schema.map(|s| Arc::from(s.as_bytes())),
        metadata: BTreeMap::new(),
    }
}

fn schema_decoder(schema: &str) -> Arc<dyn MessageDecoder> {
    jd::decoder(&channel("/t", Some(schema))).unwrap_or_else(|e| panic!("{schema}: {e}"))
}

fn infer_from(samples: &[&str]) -> Arc<dyn MessageDecoder> {
    jd::infer(&mut samples.iter().map(|s| s.as_bytes())).expect("infer")
}

fn struct_of(fields: Vec<(&str, DataType)>) -> DataType {
    DataType::Struct(Fields::from(
        fields
            .into_iter()
            .map(|(n, t)| field(n, t))
            .collect::<Vec<_>>(),
    ))
}

/// Decodes `payloads` (all must succeed) and returns each row as JSON.
fn rows(decoder: &dyn MessageDecoder, payloads: &[&str]) -> Vec<Value> {
    let bytes: Vec<&[u8]> = payloads.iter().map(|p| p.as_bytes()).collect();
    let array = decode_all(decoder, &bytes);
    (0..array.len()).map(|i| row_json(&array, i)).collect()
}

/// The decode error of one payload; checks the builder is left as it was.
fn error_of(decoder: &dyn MessageDecoder, payload: &[u8]) -> String {
    let mut b = ColumnBuilder::new(decoder.data_type()).expect("builder");
    append_message(decoder, b"null", &mut b).expect("null row");
    let err = append_message(decoder, payload, &mut b)
        .expect_err(&format!("{:?} decoded", String::from_utf8_lossy(payload)));
    assert_eq!(b.len(), 1, "a failed message left rows behind");
    b.finish().expect("finish after a rolled-back row");
    err.to_string()
}

/// Asserts a decoded row (`ours`) equals the expected JSON. Numbers compare
/// as f64 when either side is a float; a string in `ours` where the expected
/// value differs must be JSON text that parses to it (JSON-text columns).
fn assert_matches(ours: &Value, exp: &Value, path: &str) {
    match (ours, exp) {
        (Value::Object(o), Value::Object(e)) => {
            for (k, v) in o {
                assert_matches(v, e.get(k).unwrap_or(&Value::Null), &format!("{path}.{k}"));
            }
            for k in e.keys() {
                assert!(
                    o.contains_key(k),
                    "{path}.{k}: missing from the decoded row"
                );
            }
        }
        (Value::Array(o), Value::Array(e)) => {
            assert_eq!(o.len(), e.len(), "{path}: array length");
            for (i, (a, b)) in o.iter().zip(e).enumerate() {
                assert_matches(a, b, &format!("{path}[{i}]"));
            }
        }
        (Value::Number(a), Value::Number(b)) if a.is_f64() || b.is_f64() => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            // serde_json without its `float_roundtrip` feature may read a
            // float 1 ULP off; the decoder rounds correctly (checked exactly in
            // `floats_are_correctly_rounded`), so allow 1 ULP against it.
            let ulps = (a.to_bits() as i64).wrapping_sub(b.to_bits() as i64);
            assert!(a == b || ulps.abs() <= 1, "{path}: {a:?} != {b:?}");
        }
        (Value::String(s), e) if ours != exp => {
            let parsed: Value = serde_json::from_str(s)
                .unwrap_or_else(|err| panic!("{path}: {s:?} is not JSON text ({err}); want {e}"));
            assert_eq!(&parsed, e, "{path}: JSON text");
        }
        _ => assert_eq!(ours, exp, "{path}"),
    }
}

/// The decoder of a fixture topic: its schema, or inferred from all of its
/// messages when it has none.
fn topic_decoder(msgs: &[&OwnedMessage]) -> Arc<dyn MessageDecoder> {
    let channel = &msgs[0].channel;
    if channel.schema.as_deref().is_some_and(|s| !s.is_empty()) {
        decoder_for(channel).unwrap_or_else(|e| panic!("{}: {e}", channel.topic))
    } else {
        jd::infer(&mut msgs.iter().map(|m| m.data.as_slice())).expect("infer")
    }
}

fn messages_of<'a>(all: &'a [OwnedMessage], topic: &str) -> Vec<&'a OwnedMessage> {
    crate::decode_common::topic_messages(all, topic)
}

/// Checks the first three messages of every json topic of `file` against
/// its expected JSON and decodes all of them, each compared with serde_json's
/// reading of the payload. Returns the number of messages decoded.
fn check_fixture(file: &str, only_topic: Option<&str>) -> Option<usize> {
    let path = fixtures::file("mcap", &format!("decode/{file}.mcap"))?;
    let expected = expected_json(&fixtures::file(
        "mcap",
        &format!("decode/{file}.expected.json"),
    )?);
    let all = file_messages(&path);
    let mut decoded = 0;
    let topics = expected["topics"].as_object().expect("topics");
    for (topic, exp) in topics {
        if exp["message_encoding"] != "json" || only_topic.is_some_and(|t| t != topic) {
            continue;
        }
        let msgs = messages_of(&all, topic);
        assert_eq!(
            msgs.len() as u64,
            exp["message_count"].as_u64().unwrap(),
            "{topic}"
        );
        let decoder = topic_decoder(&msgs);
        let payloads: Vec<&[u8]> = msgs.iter().map(|m| m.data.as_slice()).collect();
        let array = decode_all(decoder.as_ref(), &payloads);
        assert_eq!(array.len(), msgs.len(), "{topic}");
        assert_eq!(array.null_count(), 0, "{topic}");

        let first = exp["first_messages"].as_array().expect("first_messages");
        assert_eq!(first.len(), 3, "{topic}");
        for (i, m) in first.iter().enumerate() {
            assert_eq!(m["log_time"].as_u64(), Some(msgs[i].log_time), "{topic}");
            assert_matches(&row_json(&array, i), &m["data"], &format!("{topic}#{i}"));
        }
        for (i, m) in msgs.iter().enumerate() {
            let reference: Value = serde_json::from_slice(&m.data).expect("fixture JSON");
            assert_matches(&row_json(&array, i), &reference, &format!("{topic}#{i}"));
            decoded += 1;
        }
    }
    Some(decoded)
}

// ---------------------------------------------------------------------------
// Fixtures.

#[test]
fn json_mcap_matches_expected_and_decodes_all_290() {
    let Some(n) = check_fixture("json", None) else {
        return;
    };
    assert_eq!(n, 290);
}

#[test]
fn lz4_mixed_log_matches_expected() {
    let Some(n) = check_fixture("lz4_mixed", Some("/mixed/log")) else {
        return;
    };
    assert_eq!(n, 50);
}

#[test]
fn json_mcap_column_types() {
    let Some(path) = fixtures::file("mcap", "decode/json.mcap") else {
        return;
    };
    let all = file_messages(&path);
    let f64s = || list_of(DataType::Float64);
    let want = [
        (
            "/diagnostics",
            struct_of(vec![
                (
                    "stamp",
                    struct_of(vec![("sec", DataType::Int64), ("nsec", DataType::Int64)]),
                ),
                (
                    "status",
                    list_of(struct_of(vec![
                        ("name", DataType::Utf8),
                        ("level", DataType::Int64),
                        ("message", DataType::Utf8),
                        ("hardware_id", DataType::Utf8),
                        (
                            "values",
                            list_of(struct_of(vec![
                                ("key", DataType::Utf8),
                                ("value", DataType::Utf8),
                            ])),
                        ),
                    ])),
                ),
            ]),
        ),
        (
            "/state",
            struct_of(vec![
                ("t_ns", DataType::Int64),
                (
                    "pose",
                    struct_of(vec![
                        ("x", DataType::Float64),
                        ("y", DataType::Float64),
                        ("yaw", DataType::Float64),
                    ]),
                ),
                ("velocity", f64s()),
                ("armed", DataType::Boolean),
                ("battery", DataType::Float64),
                ("mode", DataType::Utf8),
                ("waypoints", list_of(f64s())),
                ("errors", list_of(DataType::Utf8)),
                // `{"type": ["object", "null"]}` without properties: JSON text.
                ("extra", DataType::Utf8),
            ]),
        ),
        (
            "/events",
            struct_of(vec![
                ("event", DataType::Utf8),
                ("seq", DataType::Int64),
                ("ok", DataType::Boolean),
                (
                    "detail",
                    struct_of(vec![("text", DataType::Utf8), ("score", DataType::Float64)]),
                ),
            ]),
        ),
    ];
    for (topic, want) in want {
        let msgs = messages_of(&all, topic);
        let decoder = topic_decoder(&msgs);
        assert_eq!(decoder.data_type(), &want, "{topic}");
    }
    // /events has no schema: decoder_for says samples are needed.
    let events = messages_of(&all, "/events");
    let err = decoder_for(&events[0].channel)
        .expect_err("schemaless")
        .to_string();
    assert!(err.contains("sample"), "{err}");
    let state = messages_of(&all, "/state");
    assert_eq!(
        decoder_for(&state[0].channel).unwrap().describe(),
        "json fixture.RobotState (jsonschema)"
    );
    // The JSON text of /state `extra` is compact whatever the payload layout.
    let payloads: Vec<&[u8]> = state.iter().take(1).map(|m| m.data.as_slice()).collect();
    let array = decode_all(topic_decoder(&state).as_ref(), &payloads);
    assert_eq!(
        row_json(&array, 0)["extra"],
        json!(
            r#"{"nested":{"deep":[1,2.5,-3e-07,true,null,"s"]},"big":9007199254740993,"neg":-1}"#
        )
    );
}

#[test]
fn events_inferred_from_a_few_samples_decode_all() {
    let Some(path) = fixtures::file("mcap", "decode/json.mcap") else {
        return;
    };
    let all = file_messages(&path);
    let events = messages_of(&all, "/events");
    // The engine passes the first N payloads; here N = 5.
    let decoder = jd::infer(&mut events.iter().take(5).map(|m| m.data.as_slice())).unwrap();
    assert_eq!(decoder.describe(), "json (inferred from 5 samples)");
    let payloads: Vec<&[u8]> = events.iter().map(|m| m.data.as_slice()).collect();
    let array = decode_all(decoder.as_ref(), &payloads);
    assert_eq!(array.len(), 40);
    for (i, m) in events.iter().enumerate() {
        let reference: Value = serde_json::from_slice(&m.data).unwrap();
        assert_matches(&row_json(&array, i), &reference, &format!("/events#{i}"));
    }
}

// ---------------------------------------------------------------------------
// Schema features.

const FEATURES_SCHEMA: &str = r##"{
  "title": "test.Features",
  "type": "object",
  "$defs": {
    "Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}
  },
  "definitions": {
    "Stamp": {"type": "object", "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}}},
    "Alias": {"$ref": "#/definitions/Stamp"}
  },
  "properties": {
    "stamp": {"$ref": "#/definitions/Alias"},
    "count": {"type": ["integer", "null"]},
    "ratio": {"type": ["null", "number"]},
    "either": {"type": ["integer", "number"]},
    "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "mode": {"enum": ["a", "b"]},
    "flag": {"type": "boolean"},
    "nothing": {"type": "null"},
    "tracks": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "integer"},
          "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
          "tags": {"type": "array", "items": {"type": "string"}}
        }
      }
    },
    "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    "choice": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    "blob": {"type": "object"},
    "anything": {},
    "loose": {"type": "array"},
    "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
    "remote": {"$ref": "https://example.com/schema.json"}
  }
}"##;

#[test]
fn schema_features_map_to_arrow_types() {
    let d = schema_decoder(FEATURES_SCHEMA);
    assert_eq!(d.describe(), "json test.Type (jsonschema)");
    let point = struct_of(vec![("x", DataType::Float64), ("y", DataType::Float64)]);
    let want = struct_of(vec![
        (
            "stamp",
            struct_of(vec![("sec", DataType::Int64), ("nsec", DataType::Int64)]),
        ),
        ("count", DataType::Int64),
        ("ratio", DataType::Float64),
        ("either", DataType::Float64),
        ("label", DataType::Utf8),
        ("mode", DataType::Utf8),
        ("flag", DataType::Boolean),
        ("nothing", DataType::Null),
        (
            "tracks",
            list_of(struct_of(vec![
                ("id", DataType::Int64),
                ("points", list_of(point)),
                ("tags", list_of(DataType::Utf8)),
            ])),
        ),
        ("grid", list_of(list_of(DataType::Int64))),
        ("choice", DataType::Utf8),
        ("blob", DataType::Utf8),
        ("anything", DataType::Utf8),
        ("loose", list_of(DataType::Utf8)),
        ("pair", DataType::Utf8),
        ("remote", DataType::Utf8),
    ]);
    assert_eq!(d.data_type(), &want);
    let DataType::Struct(fields) = d.data_type() else {
        unreachable!()
    };
    assert!(fields.iter().all(|f| f.is_nullable()));
}

#[test]
fn schema_features_decode_values() {
    let d = schema_decoder(FEATURES_SCHEMA);
    let got = rows(
        d.as_ref(),
        &[
            r#"{
              "stamp": {"sec": 1700000000, "nsec": 5},
              "count": 3, "ratio": 2, "either": 7, "label": "hi", "mode": "b", "flag": true,
              "nothing": null,
              "tracks": [
                {"id": 1, "points": [{"x": 1.5, "y": -2}, {"x": 0, "y": 1e-3}], "tags": ["a", ""]},
                {"id": 2, "points": [], "tags": null},
                null
              ],
              "grid": [[1, 2], [], [3]],
              "choice": "x",
              "blob": {"k": [1, {"z": null}], "s": "t\"\\\n\u00e9"},
              "anything": 1.50,
              "loose": [1, "two", {"three": 3}, null],
              "pair": [1, "a"],
              "remote": {"x": 1}
            }"#,
            r#"{"choice": 5, "anything": "str", "blob": [ ], "count": null, "extra": {"ignored": [1, 2]}}"#,
            "{}",
            "null",
        ],
    );
    assert_eq!(
        got[0],
        json!({
            "stamp": {"sec": 1700000000, "nsec": 5},
            "count": 3, "ratio": 2.0, "either": 7.0, "label": "hi", "mode": "b", "flag": true,
            "nothing": null,
            "tracks": [
                {"id": 1, "points": [{"x": 1.5, "y": -2.0}, {"x": 0.0, "y": 0.001}], "tags": ["a", ""]},
                {"id": 2, "points": [], "tags": null},
                null
            ],
            "grid": [[1, 2], [], [3]],
            "choice": "\"x\"",
            "blob": r#"{"k":[1,{"z":null}],"s":"t\"\\\n\u00e9"}"#,
            "anything": "1.50",
            "loose": ["1", "\"two\"", r#"{"three":3}"#, null],
            "pair": "[1,\"a\"]",
            "remote": "{\"x\":1}"
        })
    );
    let nulls = |overrides: Value| {
        let mut row = json!({
            "stamp": null, "count": null, "ratio": null, "either": null, "label": null,
            "mode": null, "flag": null, "nothing": null, "tracks": null, "grid": null,
            "choice": null, "blob": null, "anything": null, "loose": null, "pair": null,
            "remote": null
        });
        for (k, v) in overrides.as_object().unwrap() {
            row[k] = v.clone();
        }
        row
    };
    assert_eq!(
        got[1],
        nulls(json!({"choice": "5", "anything": "\"str\"", "blob": "[]"}))
    );
    assert_eq!(got[2], nulls(json!({})));
    assert_eq!(got[3], Value::Null);
}

#[test]
fn recursive_refs_are_capped_and_kept_as_text() {
    let d = schema_decoder(
        r##"{"$ref": "#/$defs/Tree", "$defs": {"Tree": {"type": "object", "properties": {
              "name": {"type": "string"},
              "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}}"##,
    );
    // Three typed levels (the root and two expansions inside itself), then JSON text.
    let level3 = list_of(DataType::Utf8);
    let level2 = list_of(struct_of(vec![
        ("name", DataType::Utf8),
        ("children", level3),
    ]));
    let level1 = list_of(struct_of(vec![
        ("name", DataType::Utf8),
        ("children", level2),
    ]));
    assert_eq!(
        d.data_type(),
        &struct_of(vec![("name", DataType::Utf8), ("children", level1)])
    );
    let got = rows(
        d.as_ref(),
        &[
            r#"{"name": "a", "children": [{"name": "b", "children": [{"name": "c",
              "children": [{"name": "d", "children": [{"name": "e"}]}]}]}]}"#,
        ],
    );
    assert_eq!(
        got[0],
        json!({"name": "a", "children": [{"name": "b", "children": [{"name": "c",
              "children": [r#"{"name":"d","children":[{"name":"e"}]}"#]}]}]})
    );

    // A reference to itself only, and a reference cycle, compile (to JSON text).
    for schema in [
        r##"{"$ref": "#"}"##,
        r##"{"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}"##,
    ] {
        let d = schema_decoder(schema);
        assert_eq!(d.data_type(), &struct_of(vec![("value", DataType::Utf8)]));
        assert_eq!(rows(d.as_ref(), &["[1, 2]"])[0], json!({"value": "[1,2]"}));
    }
}

#[test]
fn non_object_roots_are_a_value_field() {
    let d = schema_decoder(r#"{"type": "array", "items": {"type": "integer"}}"#);
    assert_eq!(
        d.data_type(),
        &struct_of(vec![("value", list_of(DataType::Int64))])
    );
    assert_eq!(
        rows(d.as_ref(), &["[1, -2]", "null"]),
        vec![json!({"value": [1, -2]}), json!({"value": null})]
    );
    assert_eq!(
        error_of(d.as_ref(), br#"[1, "x"]"#),
        "$[1]: expected integer, got string"
    );
    let d = schema_decoder("{}");
    assert_eq!(d.data_type(), &struct_of(vec![("value", DataType::Utf8)]));
    let d = schema_decoder(r#"{"type": "object"}"#);
    assert_eq!(d.data_type(), &struct_of(vec![("value", DataType::Utf8)]));
    assert_eq!(
        rows(d.as_ref(), &[" { \"a\" : [ 1 , 2 ] } "])[0],
        json!({"value": "{\"a\":[1,2]}"})
    );
}

#[test]
fn keys_missing_null_extra_and_repeated() {
    let d = schema_decoder(
        r#"{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
            "c": {"type": "object", "properties": {"d": {"type": "boolean"}}}}}"#,
    );
    assert_eq!(
        rows(
            d.as_ref(),
            &[
                r#"{"b": "x", "a": 1}"#,
                r#"{"a": null, "c": null}"#,
                r#"{"zz": {"deep": [1, {"x": "y"}]}, "c": {"d": false, "e": 1}}"#,
                r#"{"a": 1, "a": 2, "c": {"d": true}, "c": {}}"#,
                r#"{"\u0061": 5, "b\u00e9": "not b"}"#,
            ]
        ),
        vec![
            json!({"a": 1, "b": "x", "c": null}),
            json!({"a": null, "b": null, "c": null}),
            json!({"a": null, "b": null, "c": {"d": false}}),
            json!({"a": 2, "b": null, "c": {"d": null}}),
            json!({"a": 5, "b": null, "c": null}),
        ]
    );
}

#[test]
fn integers_stay_exact() {
    let d = schema_decoder(
        r#"{"type": "object", "properties": {"i": {"type": "integer"}, "f": {"type": "number"}}}"#,
    );
    assert_eq!(
        rows(
            d.as_ref(),
            &[
                r#"{"i": 9223372036854775807, "f": 18446744073709551615}"#,
                r#"{"i": -9223372036854775808, "f": -9223372036854775808}"#,
                r#"{"i": 9007199254740993, "f": 9007199254740993}"#,
                r#"{"i": 3.0, "f": 1e300}"#,
                r#"{"i": 1e3, "f": -0.0}"#,
                r#"{"i": -0, "f": 5e-324}"#,
            ]
        ),
        vec![
            json!({"i": i64::MAX, "f": 18446744073709551615.0}),
            json!({"i": i64::MIN, "f": -9223372036854775808.0}),
            json!({"i": 9007199254740993i64, "f": 9007199254740992.0}),
            json!({"i": 3, "f": 1e300}),
            json!({"i": 1000, "f": -0.0}),
            json!({"i": 0, "f": 5e-324}),
        ]
    );
    assert_eq!(
        error_of(d.as_ref(), br#"{"i": 18446744073709551615}"#),
        "$.i: integer 18446744073709551615 is out of the Int64 range"
    );
    assert_eq!(
        error_of(d.as_ref(), br#"{"i": 9223372036854775808}"#),
        "$.i: integer 9223372036854775808 is out of the Int64 range"
    );
    assert_eq!(
        error_of(d.as_ref(), br#"{"i": 1e19}"#),
        "$.i: integer 1e19 is out of the Int64 range"
    );
    assert_eq!(
        error_of(d.as_ref(), br#"{"i": 2.5}"#),
        "$.i: expected integer, got number 2.5"
    );
}

#[test]
fn floats_are_correctly_rounded() {
    let d = schema_decoder(r#"{"type": "object", "properties": {"f": {"type": "number"}}}"#);
    // /state message 5 `pose.y` in json.mcap, as Python's float() reads it.
    // serde_json without its `float_roundtrip` feature reads 0.003240214064306068
    // (1 ULP lower).
    let text = "0.0032402140643060682";
    let got = rows(d.as_ref(), &[&format!(r#"{{"f": {text}}}"#)]);
    assert_eq!(got[0]["f"].as_f64(), Some(0.003_240_214_064_306_068_2));
    assert_eq!(
        got[0]["f"].as_f64().unwrap().to_bits(),
        0x3f6a_8b38_ae06_02e6
    );
}

#[test]
fn type_mismatches_name_the_json_path() {
    let d = schema_decoder(
        r#"{"type": "object", "properties": {
            "status": {"type": "array", "items": {"type": "object", "properties": {
                "level": {"type": "integer"}, "name": {"type": "string"}}}},
            "odd key": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            "n": {"type": "null"}, "f": {"type": "number"}}}"#,
    );
    let cases: &[(&str, &str)] = &[
        (
            r#"{"status": [{"level": 1}, {}, {"level": "warn"}]}"#,
            "$.status[2].level: expected integer, got string",
        ),
        (
            r#"{"status": [{"name": 7}]}"#,
            "$.status[0].name: expected string, got number",
        ),
        (r#"{"status": {}}"#, "$.status: expected array, got object"),
        (
            r#"{"status": [[]]}"#,
            "$.status[0]: expected object, got array",
        ),
        (
            r#"{"odd key": {"ok": "yes"}}"#,
            r#"$["odd key"].ok: expected boolean, got string"#,
        ),
        (r#"{"n": 0}"#, "$.n: expected null, got number"),
        (r#"{"f": true}"#, "$.f: expected number, got boolean"),
        (r#"{"f": "1.5"}"#, "$.f: expected number, got string"),
        ("[]", "$: expected object, got array"),
        ("\"s\"", "$: expected object, got string"),
        ("1", "$: expected object, got number"),
    ];
    for (payload, want) in cases {
        assert_eq!(&error_of(d.as_ref(), payload.as_bytes()), want, "{payload}");
    }
    // A good message after the failures decodes into consistent columns.
    let mut b = ColumnBuilder::new(d.data_type()).unwrap();
    for (payload, _) in cases {
        append_message(d.as_ref(), payload.as_bytes(), &mut b).unwrap_err();
        append_message(d.as_ref(), br#"{"status": [{"level": 4}], "f": 1}"#, &mut b).unwrap();
    }
    let array = b.finish().unwrap();
    assert_eq!(array.len(), cases.len());
    for i in 0..array.len() {
        assert_eq!(
            row_json(&array, i),
            json!({"status": [{"level": 4, "name": null}], "odd key": null, "n": null, "f": 1.0})
        );
    }
}

#[test]
fn invalid_payloads_are_errors() {
    let d =
        schema_decoder(r#"{"type": "object", "properties": {"s": {"type": "string"}, "x": {}}}"#);
    let cases: &[(&[u8], &str)] = &[
        (
            b"",
            "$: invalid JSON: expected a value at byte 0, the end of the payload",
        ),
        (
            b"   ",
            "$: invalid JSON: expected a value at byte 3, the end of the payload",
        ),
        (
            b"{\"s\": \"\xff\"}",
            "payload is not valid UTF-8 (at byte 7)",
        ),
        (
            b"{\"s\": \"a\"} x",
            "$: invalid JSON: unexpected text after the value at byte 11",
        ),
        (
            b"{\"s\": \"a\"",
            "$: invalid JSON: expected ',' or '}' at byte 9, the end of the payload",
        ),
        (
            b"{\"s\": \"a",
            "$.s: invalid JSON: unterminated string at byte 8, the end of the payload",
        ),
        (
            b"{\"s\": \"\\q\"}",
            "$.s: invalid JSON: invalid escape in string at byte 8",
        ),
        (
            b"{\"s\": \"\\ud800\"}",
            "$.s: invalid JSON: lone surrogate in \\u escape at byte 13",
        ),
        (
            b"{\"s\": \"a\tb\"}",
            "$.s: invalid JSON: control character in string at byte 8",
        ),
        (
            b"{\"x\": [1, 2,]}",
            "$.x: invalid JSON: expected a value at byte 12",
        ),
        (
            b"{\"x\": 01}",
            "$: invalid JSON: expected ',' or '}' at byte 7",
        ),
        (
            b"{\"x\": 1e999}",
            "$.x: invalid JSON: number out of range at byte 6",
        ),
        (
            b"{\"x\": tru}",
            "$.x: invalid JSON: expected a value at byte 6",
        ),
        (
            b"{\"x\": NaN}",
            "$.x: invalid JSON: expected a value at byte 6",
        ),
        (
            b"{s: 1}",
            "$: invalid JSON: expected a key string at byte 1",
        ),
        (b"{\"s\" 1}", "$: invalid JSON: expected ':' at byte 5"),
        (
            b"\xef\xbb\xbf{}",
            "$: invalid JSON: expected a value at byte 0",
        ),
    ];
    for (payload, want) in cases {
        assert_eq!(
            &error_of(d.as_ref(), payload),
            want,
            "{:?}",
            String::from_utf8_lossy(payload)
        );
    }
    // In `{"x": 01}` the number is `0`; the `1` after it is the error.
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep_array = "[".repeat(100_000);
    let deep_object = "{\"a\":".repeat(100_000);
    let text = schema_decoder("{}");
    let typed = schema_decoder(r#"{"type": "object", "properties": {"a": {"type": "integer"}}}"#);
    for payload in [&deep_array, &deep_object] {
        for d in [&text, &typed] {
            let err = error_of(d.as_ref(), payload.as_bytes());
            assert!(
                err.contains("nesting deeper than 128")
                    || err.contains("expected integer")
                    || err.contains("expected object"),
                "{err}"
            );
        }
        let err = jd::infer(&mut std::iter::once(payload.as_bytes())).unwrap_err();
        assert!(err.to_string().contains("nesting deeper than 128"), "{err}");
    }
    // 100 levels are fine.
    let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
    assert_eq!(rows(text.as_ref(), &[&ok])[0]["value"], json!(ok));
    // Deeply nested schemas compile (deeper levels become JSON text).
    let mut schema = String::from(r#"{"type": "integer"}"#);
    for _ in 0..100 {
        schema = format!(r#"{{"type": "object", "properties": {{"a": {schema}}}}}"#);
    }
    let d = schema_decoder(&schema);
    let mut payload = String::from("7");
    for _ in 0..100 {
        payload = format!(r#"{{"a": {payload}}}"#);
    }
    let row = &rows(d.as_ref(), &[&payload])[0];
    let mut at = row;
    let mut typed_levels = 0;
    while let Some(inner) = at.get("a") {
        at = inner;
        typed_levels += 1;
    }
    assert_eq!(typed_levels, 65);
    assert!(at.is_string());
}

#[test]
fn bad_schemas_are_errors_or_text_never_panics() {
    let err = jd::decoder(&channel("/x", None)).unwrap_err().to_string();
    assert_eq!(
        err,
        "JSON channel \"/x\" has no schema: its types must be inferred from sample messages"
    );
    let err = jd::decoder(&channel("/x", Some("{\"type\": ")))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("jsonschema test.Type: $: invalid JSON"),
        "{err}"
    );
    for schema in [
        "true",
        "false",
        "null",
        "[]",
        "7",
        r#"{"type": 7}"#,
        r#"{"type": []}"#,
        r#"{"type": ["null"]}"#,
        r#"{"type": ["string", 3]}"#,
        r#"{"type": "object", "properties": []}"#,
        r#"{"type": "object", "properties": {}}"#,
        r#"{"type": "array", "items": 5}"#,
        r#"{"$ref": 5}"#,
        r##"{"$ref": "#/nope/x"}"##,
        r##"{"$ref": "#/definitions/%zz"}"##,
        r#"{"anyOf": []}"#,
        r#"{"anyOf": 3}"#,
        r#"{"allOf": [{"type": "integer"}, {"minimum": 0}]}"#,
        r#"{"enum": [1, "a"]}"#,
        r#"{"enum": []}"#,
        r#"{"const": {"a": 1}}"#,
    ] {
        let d = schema_decoder(schema);
        let DataType::Struct(fields) = d.data_type() else {
            panic!("{schema}: not a struct");
        };
        assert!(!fields.is_empty(), "{schema}");
        // Whatever the type, decoding anything never panics.
        for payload in ["1", "\"a\"", "[1,{}]", "{\"a\":null}", "null", "{"] {
            let mut b = ColumnBuilder::new(d.data_type()).unwrap();
            let _ = append_message(d.as_ref(), payload.as_bytes(), &mut b);
            b.finish().unwrap();
        }
    }
    // A schema that expands exponentially is refused.
    let mut defs = Vec::new();
    for i in 0..20 {
        defs.push(format!(
            r##""T{i}": {{"type": "object", "properties": {{"l": {{"$ref": "#/$defs/T{n}"}}, "r": {{"$ref": "#/$defs/T{n}"}}}}}}"##,
            n = i + 1
        ));
    }
    defs.push(r#""T20": {"type": "integer"}"#.into());
    let schema = format!(
        r##"{{"$ref": "#/$defs/T0", "$defs": {{{}}}}}"##,
        defs.join(",")
    );
    let err = jd::decoder(&channel("/x", Some(&schema))).unwrap_err();
    assert!(err.to_string().contains("more than 10000 fields"), "{err}");
}

// ---------------------------------------------------------------------------
// Inference.

#[test]
fn inference_merges_types() {
    let d = infer_from(&[
        r#"{"a": 1, "b": null, "c": "x", "d": [1, 2], "e": {"x": 1}, "f": 1, "g": null}"#,
        r#"{"a": 2.5, "b": true, "c": 3, "d": [3.5], "e": {"y": "s"}, "h": [], "f": 9223372036854775808}"#,
        r#"{"a": 3, "b": false, "c": "z", "d": null, "e": null, "i": {}, "j": [null, "k"]}"#,
        "not json: skipped",
    ]);
    assert_eq!(d.describe(), "json (inferred from 3 samples)");
    assert_eq!(
        d.data_type(),
        &struct_of(vec![
            ("a", DataType::Float64),
            ("b", DataType::Boolean),
            ("c", DataType::Utf8),
            ("d", list_of(DataType::Float64)),
            (
                "e",
                struct_of(vec![("x", DataType::Int64), ("y", DataType::Utf8)])
            ),
            ("f", DataType::Float64),
            ("g", DataType::Utf8),
            ("h", list_of(DataType::Utf8)),
            ("i", DataType::Utf8),
            ("j", list_of(DataType::Utf8)),
        ])
    );
    assert_eq!(
        rows(
            d.as_ref(),
            &[
                r#"{"a": 1, "b": true, "c": "x", "d": [1, 2.5], "e": {"x": 1, "y": "s"},
                    "f": 18446744073709551615, "g": {"late": 1}, "h": [1, "a"], "i": {"k": 1}, "j": ["k"]}"#,
                r#"{"c": 3}"#,
            ]
        ),
        vec![
            json!({"a": 1.0, "b": true, "c": "\"x\"", "d": [1.0, 2.5], "e": {"x": 1, "y": "s"},
                   "f": 18446744073709551615.0, "g": "{\"late\":1}", "h": ["1", "\"a\""],
                   "i": "{\"k\":1}", "j": ["k"]}),
            json!({"a": null, "b": null, "c": "3", "d": null, "e": null, "f": null,
                   "g": null, "h": null, "i": null, "j": null}),
        ]
    );
    // A later message of another kind is an error for that message only.
    assert_eq!(
        error_of(d.as_ref(), br#"{"e": {"x": "one"}}"#),
        "$.e.x: expected integer, got string"
    );
}

#[test]
fn inference_edge_cases() {
    // Non-object samples: one `value` field.
    let d = infer_from(&["1", "2.5", "null"]);
    assert_eq!(
        d.data_type(),
        &struct_of(vec![("value", DataType::Float64)])
    );
    assert_eq!(rows(d.as_ref(), &["3"])[0], json!({"value": 3.0}));
    let d = infer_from(&["[1]", "{\"a\": 1}"]);
    assert_eq!(d.data_type(), &struct_of(vec![("value", DataType::Utf8)]));
    let d = infer_from(&["{}", "{}"]);
    assert_eq!(d.data_type(), &struct_of(vec![("value", DataType::Utf8)]));
    // Keys keep the order they are first seen in (not sorted).
    let d = infer_from(&[r#"{"z": 1, "a": 1}"#, r#"{"m": 1, "a": 2}"#]);
    assert_eq!(
        d.data_type(),
        &struct_of(vec![
            ("z", DataType::Int64),
            ("a", DataType::Int64),
            ("m", DataType::Int64)
        ])
    );
    // Objects used as maps with many keys are JSON text.
    let wide = format!(
        "{{{}}}",
        (0..1500)
            .map(|i| format!("\"k{i}\": {i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let d = infer_from(&[&format!(r#"{{"m": {wide}, "n": 1}}"#)]);
    assert_eq!(
        d.data_type(),
        &struct_of(vec![("m", DataType::Utf8), ("n", DataType::Int64)])
    );
    // No usable samples.
    let err = jd::infer(&mut std::iter::empty()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no sample messages to infer the JSON message type from"
    );
    let err = jd::infer(&mut [b"{".as_slice(), b"\xff"].into_iter()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "sample 0: $: invalid JSON: expected a value at byte 1, the end of the payload"
    );
}

// ---------------------------------------------------------------------------
// Robustness.

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Valid payloads to mutate: fixture payloads when present, else crafted ones.
fn seed_payloads() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = [
        r#"{"stamp": {"sec": 1, "nsec": 2}, "status": [{"name": "a", "level": 1, "message": "m", "hardware_id": null, "values": [{"key": "k", "value": "v"}]}]}"#,
        r#"{"t_ns": 1, "pose": {"x": 0.5, "y": -1e-7, "yaw": 3}, "velocity": [1, 2], "armed": true, "battery": null, "mode": "auto", "waypoints": [[1.5, -2.0]], "errors": ["E1: \"q\" \\ b", "\u00e9\ud83d\ude00"], "extra": {"a": [1, true, null]}}"#,
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    if let Some(path) = fixtures::file("mcap", "decode/json.mcap") {
        let all = file_messages(&path);
        seeds.extend(all.iter().step_by(7).map(|m| m.data.clone()));
    }
    seeds
}

/// Decoders for the robustness tests: the fixture schemas, a JSON-text root
/// and an inferred one.
fn robustness_decoders(seeds: &[Vec<u8>]) -> Vec<Arc<dyn MessageDecoder>> {
    let mut out = vec![
        schema_decoder(FEATURES_SCHEMA),
        schema_decoder("{}"),
        jd::infer(&mut seeds.iter().map(|s| s.as_slice())).unwrap(),
    ];
    if let Some(path) = fixtures::file("mcap", "decode/json.mcap") {
        let all = file_messages(&path);
        for topic in ["/diagnostics", "/state"] {
            out.push(decoder_for(&messages_of(&all, topic)[0].channel).unwrap());
        }
    }
    out
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    const TOKENS: &[&[u8]] = &[
        b"\"",
        b"\\",
        b"{",
        b"}",
        b"[",
        b"]",
        b",",
        b":",
        b"null",
        b"1e999",
        b"-",
        b"\\u",
        b"\\ud800",
        b"\xff",
        b"\xc3",
        b"\x00",
        b"18446744073709551616",
        b"0.5",
        b"true",
        b" ",
    ];
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(5) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            1 => v.truncate(at),
            2 if at < v.len() => {
                let end = (at + 1 + rng.below(8)).min(v.len());
                v.drain(at..end);
            }
            _ => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
        }
    }
    v
}

#[test]
fn garbage_payloads_never_panic() {
    let seeds = seed_payloads();
    let decoders = robustness_decoders(&seeds);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut builders: Vec<ColumnBuilder> = decoders
        .iter()
        .map(|d| ColumnBuilder::new(d.data_type()).unwrap())
        .collect();
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    // Every prefix of each seed.
    for s in &seeds[..2] {
        inputs.extend((0..=s.len()).map(|n| s[..n].to_vec()));
    }
    // Random bytes, random ASCII JSON punctuation, and mutations.
    for _ in 0..2000 {
        let n = rng.below(64);
        inputs.push((0..n).map(|_| rng.next() as u8).collect());
        inputs.push(
            (0..n)
                .map(|_| b"{}[],:\"\\ 0123456789.eE+-tfnul"[rng.below(29)])
                .collect(),
        );
    }
    for _ in 0..20_000 {
        let seed = &seeds[rng.below(seeds.len())];
        inputs.push(mutate(&mut rng, seed));
    }
    let mut ok = 0usize;
    for input in &inputs {
        for (d, b) in decoders.iter().zip(builders.iter_mut()) {
            let before = b.len();
            match append_message(d.as_ref(), input, b) {
                Ok(()) => {
                    assert_eq!(b.len(), before + 1);
                    ok += 1;
                }
                Err(e) => {
                    assert_eq!(b.len(), before);
                    assert!(!e.to_string().is_empty());
                }
            }
        }
        let _ = jd::infer(&mut std::iter::once(input.as_slice()));
        let _ = jd::decoder(&channel("/g", Some(&String::from_utf8_lossy(input))));
    }
    assert!(ok > 0);
    for b in &mut builders {
        let array: ArrayRef = b.finish().unwrap();
        array.to_data().validate_full().unwrap();
    }
}

#[test]
fn accepts_exactly_what_serde_json_accepts() {
    let seeds = seed_payloads();
    let text = schema_decoder("{}");
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut agreed = [0usize; 2];
    let tricky: Vec<Vec<u8>> = [
        r#""\udc00""#,
        r#""\ud800\u0041""#,
        r#""\ud800\udc00""#,
        r#""\uD83D\uDE00""#,
        r#""\ud800""#,
        r#""\u12""#,
        r#""\/\b\f""#,
        "\"\u{7f}\"",
        "\"\u{0}\"",
        "-0",
        "-0.0e-0",
        "1E+2",
        "1e-400",
        "-1e400",
        "123456789012345678901234567890",
        "[1,]",
        r#"{"a":1,}"#,
        "[]  ",
        "\u{c}1",
        "\r\n1\t",
        "1 2",
        "{}{}",
        "nulls",
        "[-]",
        "[.1]",
        "[1.e1]",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    for n in 0..30_000 + tricky.len() {
        let input = match tricky.get(n) {
            Some(t) => t.clone(),
            None => {
                let seed = &seeds[rng.below(seeds.len())];
                mutate(&mut rng, seed)
            }
        };
        let reference = serde_json::from_slice::<Value>(&input);
        let mut b = ColumnBuilder::new(text.data_type()).unwrap();
        let ours = append_message(text.as_ref(), &input, &mut b);
        assert_eq!(
            ours.is_ok(),
            reference.is_ok(),
            "{:?}: ours {ours:?}, serde_json {reference:?}",
            String::from_utf8_lossy(&input)
        );
        if let Ok(reference) = reference {
            let array = b.finish().unwrap();
            let row = row_json(&array, 0);
            let back = match &row["value"] {
                Value::String(s) => serde_json::from_str::<Value>(s).unwrap(),
                other => other.clone(),
            };
            assert_eq!(back, reference, "{:?}", String::from_utf8_lossy(&input));
            agreed[1] += 1;
        } else {
            agreed[0] += 1;
        }
    }
    // Both outcomes were exercised.
    assert!(agreed[0] > 1000 && agreed[1] > 1000, "{agreed:?}");
}

// ---------------------------------------------------------------------------
// Speed (release build):
// cargo test --release -p logsql-decode --test decode decode_json::throughput -- --ignored --nocapture

#[test]
#[ignore = "measurement; run in release with --ignored --nocapture"]
fn throughput() {
    let Some(path) = fixtures::file("mcap", "decode/json.mcap") else {
        return;
    };
    let all = file_messages(&path);
    for topic in ["/diagnostics", "/state", "/events"] {
        let msgs = messages_of(&all, topic);
        let decoder = topic_decoder(&msgs);
        let payloads: Vec<&[u8]> = msgs.iter().map(|m| m.data.as_slice()).collect();
        let bytes: usize = payloads.iter().map(|p| p.len()).sum();
        let rounds = 2_000_000 / payloads.len();
        let mut b = ColumnBuilder::new(decoder.data_type()).unwrap();
        let start = std::time::Instant::now();
        let mut n = 0usize;
        for _ in 0..rounds {
            for p in &payloads {
                append_message(decoder.as_ref(), p, &mut b).unwrap();
                n += 1;
            }
            if b.len() >= 8192 {
                std::hint::black_box(b.finish().unwrap());
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{topic}: {n} messages ({} B avg) in {secs:.2} s: {:.0} messages/s, {:.0} MB/s",
            bytes / payloads.len(),
            n as f64 / secs,
            (bytes * rounds) as f64 / secs / 1e6
        );
    }
}

/// Rebuilds `d` from its portable schema and checks it is the same decoder:
/// same type, description, rows and errors for `payloads`.
fn assert_portable_round_trip(d: &dyn MessageDecoder, payloads: &[&str], bad: &[&str]) {
    let schema = d.portable_schema().expect("JSON decoders are portable");
    let rebuilt = jd::from_portable_schema(&schema, &d.describe())
        .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(&schema)));
    assert_eq!(rebuilt.data_type(), d.data_type());
    assert_eq!(rebuilt.describe(), d.describe());
    assert_eq!(rows(rebuilt.as_ref(), payloads), rows(d, payloads));
    for b in bad {
        assert_eq!(
            error_of(rebuilt.as_ref(), b.as_bytes()),
            error_of(d, b.as_bytes())
        );
    }
}

#[test]
fn inferred_decoders_round_trip_through_portable_schemas() {
    // Strings (`s`) and any-value text (`mixed`, `empty`) are both Utf8 in
    // Arrow, but decode differently: the portable schema keeps them apart.
    let samples = [
        r#"{"i": 1, "f": 1.5, "s": "a", "b": true, "n": null, "mixed": 1, "empty": {},
            "list": [1, 2], "nested": {"x": [{"y": "z"}], "w": 2.0}, "q\"uote": 1}"#,
        r#"{"i": 2, "f": 2, "s": "b", "b": false, "n": null, "mixed": "t", "empty": {},
            "list": [], "nested": {"x": [], "w": 3}, "q\"uote": 2}"#,
    ];
    let d = infer_from(&samples);
    let schema = String::from_utf8(d.portable_schema().unwrap()).unwrap();
    assert!(schema.contains(r#""s":{"type":"string"}"#), "{schema}");
    assert!(schema.contains(r#""mixed":{}"#), "{schema}");
    assert_portable_round_trip(
        d.as_ref(),
        &samples,
        &[
            r#"{"s": 5}"#,
            r#"{"i": "x"}"#,
            r#"{"list": [1, "x"]}"#,
            "[1]",
        ],
    );
    // A root that is not an object is wrapped in a `value` field.
    let d = infer_from(&["[1, 2]", "[3]"]);
    assert_eq!(
        d.data_type(),
        &struct_of(vec![("value", list_of(DataType::Int64))])
    );
    assert_portable_round_trip(d.as_ref(), &["[1, 2]", "null"], &[r#"["x"]"#]);
    // Decoders compiled from a jsonschema are portable too.
    let d = schema_decoder(
        r##"{"title": "T", "type": "object", "properties": {"a": {"type": ["integer", "number"]},
            "r": {"$ref": "#/definitions/R"}}, "definitions": {"R": {"enum": ["x", "y"]}}}"##,
    );
    assert_portable_round_trip(d.as_ref(), &[r#"{"a": 1, "r": "x"}"#], &[r#"{"r": 1}"#]);
}
