//! The official MCAP conformance suite (416 variants), in two modes.
//!
//! - Streamed: `RecordReader` (chunks flattened, MessageIndex skipped) mapped to
//!   the suite's JSON shape must equal `expected["records"]` exactly.
//! - Indexed: for every variant with a Message, `McapFormat::summary` plus
//!   `read_chunk` over all chunks must give the messages (stable-sorted by
//!   log_time), channels, schemas and statistics derived from the streamed JSON.
//!
//! A third test checks the summary's side tables (index flag, attachments,
//! metadata, damage) on all 416 files.

use std::path::{Path, PathBuf};

use logsql_readers::formats::FormatReader;
use logsql_readers::formats::mcap::records::Record;
use logsql_readers::formats::mcap::{McapFormat, McapIndex, RecordReader};
use logsql_readers::io::BytesReader;
use logsql_readers::model::{Flow, Message, Selection, Summary};
use serde_json::{Map, Value, json};

const STREAMED_FILES: usize = 416;
const INDEXED_FILES: usize = 382;

/// All `(mcap, json)` pairs under `conformance/`, sorted.
fn cases() -> Option<Vec<(PathBuf, PathBuf)>> {
    let dir = crate::fixtures::dir("mcap")?.join("conformance");
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read conformance dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push((path.with_extension("mcap"), path));
            }
        }
    }
    out.sort();
    Some(out)
}

fn load(mcap: &Path, json_path: &Path) -> (BytesReader, Value) {
    let bytes = std::fs::read(mcap).unwrap_or_else(|e| panic!("{}: {e}", mcap.display()));
    let expected: Value =
        serde_json::from_slice(&std::fs::read(json_path).expect("read json")).expect("parse json");
    let name = mcap
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (BytesReader::new(name, bytes), expected)
}

fn s(v: impl ToString) -> Value {
    Value::String(v.to_string())
}

fn bytes(b: &[u8]) -> Value {
    Value::Array(b.iter().map(s).collect())
}

fn str_map<'a>(it: impl Iterator<Item = (&'a str, &'a str)>) -> Value {
    Value::Object(
        it.map(|(k, v)| (k.to_string(), s(v)))
            .collect::<Map<_, _>>(),
    )
}

fn id_map(it: impl Iterator<Item = (u16, u64)>) -> Value {
    Value::Object(
        it.map(|(k, v)| (k.to_string(), s(v)))
            .collect::<Map<_, _>>(),
    )
}

/// `{"type": ty, "fields": [[name, value], ...]}` with fields sorted by name.
fn rec(ty: &str, mut fields: Vec<(&str, Value)>) -> Value {
    fields.sort_by(|a, b| a.0.cmp(b.0));
    json!({"type": ty, "fields": fields.into_iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()})
}

/// The conformance JSON for one record (spec 1.2).
fn record_json(r: &Record<'_>) -> Value {
    match r {
        Record::Header(h) => rec(
            "Header",
            vec![("library", s(h.library)), ("profile", s(h.profile))],
        ),
        Record::Footer(f) => rec(
            "Footer",
            vec![
                ("summary_crc", s(f.summary_crc)),
                ("summary_offset_start", s(f.summary_offset_start)),
                ("summary_start", s(f.summary_start)),
            ],
        ),
        Record::Schema(x) => rec(
            "Schema",
            vec![
                ("data", bytes(x.data)),
                ("encoding", s(x.encoding)),
                ("id", s(x.id)),
                ("name", s(x.name)),
            ],
        ),
        Record::Channel(c) => rec(
            "Channel",
            vec![
                ("id", s(c.id)),
                ("message_encoding", s(c.message_encoding)),
                ("metadata", str_map(c.metadata.iter())),
                ("schema_id", s(c.schema_id)),
                ("topic", s(c.topic)),
            ],
        ),
        Record::Message(m) => rec(
            "Message",
            vec![
                ("channel_id", s(m.header.channel_id)),
                ("data", bytes(m.data)),
                ("log_time", s(m.header.log_time)),
                ("publish_time", s(m.header.publish_time)),
                ("sequence", s(m.header.sequence)),
            ],
        ),
        Record::Chunk(c) => rec(
            "Chunk",
            vec![
                ("compression", s(c.header.compression)),
                ("message_end_time", s(c.header.message_end_time)),
                ("message_start_time", s(c.header.message_start_time)),
                ("uncompressed_crc", s(c.header.uncompressed_crc)),
                ("uncompressed_size", s(c.header.uncompressed_size)),
            ],
        ),
        Record::MessageIndex(m) => rec(
            "MessageIndex",
            vec![
                ("channel_id", s(m.channel_id)),
                (
                    "records",
                    Value::Array(m.entries().map(|(t, o)| json!([s(t), s(o)])).collect()),
                ),
            ],
        ),
        Record::ChunkIndex(c) => rec(
            "ChunkIndex",
            vec![
                ("chunk_length", s(c.chunk_length)),
                ("chunk_start_offset", s(c.chunk_start_offset)),
                ("compressed_size", s(c.compressed_size)),
                ("compression", s(c.compression)),
                ("message_end_time", s(c.message_end_time)),
                ("message_index_length", s(c.message_index_length)),
                (
                    "message_index_offsets",
                    id_map(c.message_index_offsets.iter()),
                ),
                ("message_start_time", s(c.message_start_time)),
                ("uncompressed_size", s(c.uncompressed_size)),
            ],
        ),
        Record::Attachment(a) => rec(
            "Attachment",
            vec![
                ("create_time", s(a.header.create_time)),
                ("data", bytes(a.data)),
                ("log_time", s(a.header.log_time)),
                ("media_type", s(a.header.media_type)),
                ("name", s(a.header.name)),
            ],
        ),
        Record::AttachmentIndex(a) => rec(
            "AttachmentIndex",
            vec![
                ("create_time", s(a.create_time)),
                ("data_size", s(a.data_size)),
                ("length", s(a.length)),
                ("log_time", s(a.log_time)),
                ("media_type", s(a.media_type)),
                ("name", s(a.name)),
                ("offset", s(a.offset)),
            ],
        ),
        Record::Statistics(x) => rec(
            "Statistics",
            vec![
                ("attachment_count", s(x.attachment_count)),
                ("channel_count", s(x.channel_count)),
                (
                    "channel_message_counts",
                    id_map(x.channel_message_counts.iter()),
                ),
                ("chunk_count", s(x.chunk_count)),
                ("message_count", s(x.message_count)),
                ("message_end_time", s(x.message_end_time)),
                ("message_start_time", s(x.message_start_time)),
                ("metadata_count", s(x.metadata_count)),
                ("schema_count", s(x.schema_count)),
            ],
        ),
        Record::Metadata(m) => rec(
            "Metadata",
            vec![
                ("metadata", str_map(m.metadata.iter())),
                ("name", s(m.name)),
            ],
        ),
        Record::MetadataIndex(m) => rec(
            "MetadataIndex",
            vec![
                ("length", s(m.length)),
                ("name", s(m.name)),
                ("offset", s(m.offset)),
            ],
        ),
        Record::SummaryOffset(o) => rec(
            "SummaryOffset",
            vec![
                ("group_length", s(o.group_length)),
                ("group_opcode", s(o.group_opcode)),
                ("group_start", s(o.group_start)),
            ],
        ),
        Record::DataEnd(d) => rec("DataEnd", vec![("data_section_crc", s(d.data_section_crc))]),
        Record::Unknown { opcode, data } => rec(
            "Unknown",
            vec![("data", bytes(data)), ("opcode", s(opcode))],
        ),
    }
}

fn streamed(file: &BytesReader) -> Result<Vec<Value>, String> {
    let mut reader = RecordReader::new(file).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(item) = reader.next_record().map_err(|e| e.to_string())? {
        out.push(record_json(&item.record));
    }
    Ok(out)
}

/// First difference between two JSON arrays, for the failure report.
fn first_diff(ours: &[Value], expected: &[Value]) -> String {
    for (i, (a, b)) in ours.iter().zip(expected).enumerate() {
        if a != b {
            return format!("record {i}: ours {a}, expected {b}");
        }
    }
    format!(
        "ours has {} records, expected {}",
        ours.len(),
        expected.len()
    )
}

fn report(label: &str, passed: usize, failures: &[String]) {
    for f in failures {
        println!("FAIL {label}: {f}");
    }
    println!("{label}:");
    println!("{} passed, {} failed", passed, failures.len());
}

#[test]
fn conformance_streamed() {
    let Some(cases) = cases() else { return };
    let (mut passed, mut failures) = (0, Vec::new());
    for (mcap, json_path) in &cases {
        let (file, expected) = load(mcap, json_path);
        let want = expected["records"].as_array().cloned().unwrap_or_default();
        match streamed(&file) {
            Ok(ours) if ours == want => passed += 1,
            Ok(ours) => failures.push(format!("{}: {}", file_name(mcap), first_diff(&ours, &want))),
            Err(e) => failures.push(format!("{}: error {e}", file_name(mcap))),
        }
    }
    report("streamed", passed, &failures);
    assert!(
        failures.is_empty(),
        "{} streamed conformance failures",
        failures.len()
    );
    assert_eq!(passed, STREAMED_FILES);
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Field `name` of a conformance record.
fn field<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["fields"]
        .as_array()
        .and_then(|f| f.iter().find(|kv| kv[0] == name))
        .map(|kv| &kv[1])
        .unwrap_or(&Value::Null)
}

fn records_of<'a>(expected: &'a Value, ty: &str) -> Vec<&'a Value> {
    expected["records"]
        .as_array()
        .map(|a| a.iter().filter(|r| r["type"] == ty).collect())
        .unwrap_or_default()
}

/// Records of type `ty` de-duplicated by id (first occurrence) and sorted by id.
fn dedup_by_id<'a>(expected: &'a Value, ty: &str) -> Vec<&'a Value> {
    let mut seen = std::collections::BTreeMap::new();
    for r in records_of(expected, ty) {
        let id: u64 = field(r, "id")
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("id");
        seen.entry(id).or_insert(r);
    }
    seen.into_values().collect()
}

fn message_json(
    channel_id: u64,
    sequence: Value,
    log_time: u64,
    publish_time: Value,
    data: &[u8],
) -> Value {
    json!({"channel_id": s(channel_id), "sequence": sequence, "log_time": s(log_time), "publish_time": publish_time, "data": bytes(data)})
}

/// Every message of the file through `summary` + `read_chunk`, stable-sorted by log_time.
fn indexed_messages(file: &BytesReader, summary: &Summary) -> Result<Vec<(u64, Value)>, String> {
    let mut out = Vec::new();
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            let v = message_json(
                m.channel.id,
                m.sequence.map(s).unwrap_or(Value::Null),
                m.log_time,
                m.publish_time.map(s).unwrap_or(Value::Null),
                m.data,
            );
            out.push((m.log_time, v));
            Flow::Continue
        };
        McapFormat
            .read_chunk(file, summary, chunk, &Selection::all(), &mut receiver)
            .map_err(|e| e.to_string())?;
    }
    out.sort_by_key(|(t, _)| *t);
    Ok(out)
}

fn num(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a decimal string: {v}"))
}

fn check_indexed(file: &BytesReader, expected: &Value) -> Result<(), String> {
    let summary = McapFormat
        .summary(file)
        .map_err(|e| format!("summary: {e}"))?;
    if let Some(d) = &summary.damage {
        return Err(format!("unexpected damage: {d}"));
    }

    // Messages.
    let mut want: Vec<(u64, Value)> = records_of(expected, "Message")
        .into_iter()
        .map(|r| {
            let t = num(field(r, "log_time"));
            let data: Vec<u8> = field(r, "data")
                .as_array()
                .expect("data")
                .iter()
                .map(|b| num(b) as u8)
                .collect();
            let v = message_json(
                num(field(r, "channel_id")),
                field(r, "sequence").clone(),
                t,
                field(r, "publish_time").clone(),
                &data,
            );
            (t, v)
        })
        .collect();
    want.sort_by_key(|(t, _)| *t);
    let ours = indexed_messages(file, &summary)?;
    if ours.len() != want.len() {
        return Err(format!("{} messages, expected {}", ours.len(), want.len()));
    }
    for (i, ((_, a), (_, b))) in ours.iter().zip(&want).enumerate() {
        if a != b {
            return Err(format!("message {i}: ours {a}, expected {b}"));
        }
    }

    // The header-only selection (message indexes when the file has them) gives
    // the same (channel, log_time) multiset.
    let sel = Selection {
        payload: false,
        full_header: false,
        ..Selection::all()
    };
    let mut light = Vec::new();
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            light.push((m.channel.id, m.log_time));
            Flow::Continue
        };
        McapFormat
            .read_chunk(file, &summary, chunk, &sel, &mut receiver)
            .map_err(|e| format!("header-only read: {e}"))?;
    }
    light.sort();
    let mut full: Vec<(u64, u64)> = ours
        .iter()
        .map(|(t, v)| (num(&v["channel_id"]), *t))
        .collect();
    full.sort();
    if light != full {
        return Err(format!(
            "header-only read gave {light:?}, full read {full:?}"
        ));
    }

    // Schemas.
    let schemas = dedup_by_id(expected, "Schema");
    let index = summary
        .private::<McapIndex>()
        .ok_or("no McapIndex in the summary")?;
    let ours: Vec<Value> = index
        .schemas
        .values()
        .map(|x| json!({"id": s(x.id), "name": s(&x.name), "encoding": s(&x.encoding), "data": bytes(&x.data)}))
        .collect();
    let want: Vec<Value> = schemas
        .iter()
        .map(|r| json!({"id": field(r, "id"), "name": field(r, "name"), "encoding": field(r, "encoding"), "data": field(r, "data")}))
        .collect();
    if ours != want {
        return Err(format!("schemas: ours {ours:?}, expected {want:?}"));
    }

    // Channels, with their schema resolved.
    let ours: Vec<Value> = summary
        .channels
        .values()
        .map(|c| {
            json!({
                "id": s(c.id), "topic": s(&c.topic), "message_encoding": s(&c.message_encoding),
                "metadata": Value::Object(c.metadata.iter().map(|(k, v)| (k.clone(), s(v))).collect()),
                "schema": c.message_type.as_ref().map(|n| json!({
                    "name": s(n),
                    "encoding": c.schema_encoding.as_deref().map(s).unwrap_or(Value::Null),
                    "data": c.schema.as_deref().map(bytes).unwrap_or(Value::Null),
                })).unwrap_or(Value::Null),
            })
        })
        .collect();
    let want: Vec<Value> = dedup_by_id(expected, "Channel")
        .iter()
        .map(|r| {
            let schema_id = field(r, "schema_id");
            let schema = schemas.iter().find(|x| field(x, "id") == schema_id).filter(|_| schema_id != "0");
            json!({
                "id": field(r, "id"), "topic": field(r, "topic"), "message_encoding": field(r, "message_encoding"),
                "metadata": field(r, "metadata"),
                "schema": schema.map(|x| json!({"name": field(x, "name"), "encoding": field(x, "encoding"), "data": field(x, "data")})).unwrap_or(Value::Null),
            })
        })
        .collect();
    if ours != want {
        return Err(format!("channels: ours {ours:?}, expected {want:?}"));
    }

    // Statistics (0 or 1 record).
    let stats = records_of(expected, "Statistics");
    match stats.first() {
        Some(st) => {
            let count = num(field(st, "message_count"));
            if summary.message_count != Some(count) {
                return Err(format!(
                    "message_count {:?}, statistics say {count}",
                    summary.message_count
                ));
            }
            let counts: std::collections::BTreeMap<u64, u64> = field(st, "channel_message_counts")
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.parse().expect("id"), num(v)))
                        .collect()
                })
                .unwrap_or_default();
            let want_counts = (!counts.is_empty()).then_some(counts);
            if summary.channel_message_counts != want_counts {
                return Err(format!(
                    "channel_message_counts {:?}, expected {want_counts:?}",
                    summary.channel_message_counts
                ));
            }
            let bounds = (count > 0).then(|| {
                (
                    num(field(st, "message_start_time")),
                    num(field(st, "message_end_time")),
                )
            });
            if summary.start_time.zip(summary.end_time) != bounds {
                return Err(format!(
                    "time bounds {:?}..{:?}, expected {bounds:?}",
                    summary.start_time, summary.end_time
                ));
            }
        }
        None => {
            // No statistics: the bounds still come out of the chunk list.
            let times: Vec<u64> = records_of(expected, "Message")
                .iter()
                .map(|r| num(field(r, "log_time")))
                .collect();
            let bounds = times.iter().min().copied().zip(times.iter().max().copied());
            if summary.start_time.zip(summary.end_time) != bounds {
                return Err(format!(
                    "time bounds {:?}..{:?}, expected {bounds:?}",
                    summary.start_time, summary.end_time
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn conformance_indexed() {
    let Some(cases) = cases() else { return };
    let (mut passed, mut failures) = (0, Vec::new());
    for (mcap, json_path) in &cases {
        let (file, expected) = load(mcap, json_path);
        if records_of(&expected, "Message").is_empty() {
            continue;
        }
        match check_indexed(&file, &expected) {
            Ok(()) => passed += 1,
            Err(e) => failures.push(format!("{}: {e}", file_name(mcap))),
        }
    }
    report("indexed", passed, &failures);
    assert!(
        failures.is_empty(),
        "{} indexed conformance failures",
        failures.len()
    );
    assert_eq!(passed, INDEXED_FILES);
}

/// The summary's index flag, attachments, metadata and cleanliness on every variant.
#[test]
fn conformance_summary_side_tables() {
    let Some(cases) = cases() else { return };
    let (mut passed, mut failures) = (0, Vec::new());
    for (mcap, json_path) in &cases {
        let (file, expected) = load(mcap, json_path);
        let features: Vec<&str> = expected["meta"]["variant"]["features"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let result = (|| -> Result<(), String> {
            let summary = McapFormat.summary(&file).map_err(|e| e.to_string())?;
            if let Some(d) = &summary.damage {
                return Err(format!("damage: {d}"));
            }
            let has_messages = !records_of(&expected, "Message").is_empty();
            let want_indexed = features.contains(&"chx") && has_messages;
            if summary.indexed != want_indexed {
                return Err(format!(
                    "indexed = {}, expected {want_indexed}",
                    summary.indexed
                ));
            }
            let ours: Vec<(String, String, u64, u64, u64)> = summary
                .attachments
                .iter()
                .map(|a| {
                    (
                        a.name.clone(),
                        a.media_type.clone(),
                        a.log_time,
                        a.create_time,
                        a.data_size,
                    )
                })
                .collect();
            let want: Vec<(String, String, u64, u64, u64)> = records_of(&expected, "Attachment")
                .iter()
                .map(|r| {
                    let n = field(r, "data").as_array().map_or(0, |d| d.len() as u64);
                    let text = |k| field(r, k).as_str().unwrap_or_default().to_string();
                    (
                        text("name"),
                        text("media_type"),
                        num(field(r, "log_time")),
                        num(field(r, "create_time")),
                        n,
                    )
                })
                .collect();
            if ours != want {
                return Err(format!("attachments {ours:?}, expected {want:?}"));
            }
            let ours: Vec<Value> = summary
                .metadata
                .iter()
                .map(|m| json!({"name": s(&m.name), "metadata": Value::Object(m.metadata.iter().map(|(k, v)| (k.clone(), s(v))).collect())}))
                .collect();
            let want: Vec<Value> = records_of(&expected, "Metadata")
                .iter()
                .map(|r| json!({"name": field(r, "name"), "metadata": field(r, "metadata")}))
                .collect();
            if ours != want {
                return Err(format!("metadata {ours:?}, expected {want:?}"));
            }
            let header = records_of(&expected, "Header");
            let library = header.first().map(|h| field(h, "library").clone());
            let ours = summary
                .properties
                .iter()
                .find(|(k, _)| k == "library")
                .map(|(_, v)| s(v));
            if ours != library {
                return Err(format!("library property {ours:?}, expected {library:?}"));
            }
            Ok(())
        })();
        match result {
            Ok(()) => passed += 1,
            Err(e) => failures.push(format!("{}: {e}", file_name(mcap))),
        }
    }
    report("summary side tables", passed, &failures);
    assert!(failures.is_empty(), "{} summary failures", failures.len());
    assert_eq!(passed, STREAMED_FILES);
}
