//! Shared helpers of the decoder tests (`decode_*.rs`): every message of a
#![allow(dead_code)] // each decoder test uses part of it
//! fixture file with its channel, decoding through the public
//! [`logsql_decode`] API, and decoded rows as JSON for comparison with the
//! official readers' expected outputs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    DurationNanosecondType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    TimestampNanosecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use base64::Engine as _;
use serde_json::{Value, json};

use logsql_decode::{ColumnBuilder, MessageDecoder, append_message};
use logsql_readers::formats::{self, FormatReader};
use logsql_readers::io::FileReader;
use logsql_readers::model::{Channel, Flow, Message, Selection};

/// One message of a file, owned.
#[derive(Debug, Clone)]
pub struct OwnedMessage {
    /// Its channel (topic, encodings, schema).
    pub channel: Arc<Channel>,
    /// Log time, ns.
    pub log_time: u64,
    /// Publish time, ns, where the format has one.
    pub publish_time: Option<u64>,
    /// The payload.
    pub data: Vec<u8>,
}

/// Every message of `path` in file order, read by the byte-level reader
/// (format detected from content). Panics on read errors: fixtures are whole.
pub fn file_messages(path: &Path) -> Vec<OwnedMessage> {
    let file = FileReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let format: Arc<dyn FormatReader> = formats::detect(&file).expect("format");
    let summary = format.summary(&file).expect("summary");
    let mut channels: BTreeMap<u64, Arc<Channel>> = BTreeMap::new();
    let mut out = Vec::new();
    let sel = Selection::all();
    for chunk in &summary.chunks {
        let mut receiver = |m: Message<'_>| {
            let channel = channels
                .entry(m.channel.id)
                .or_insert_with(|| Arc::new(m.channel.clone()))
                .clone();
            out.push(OwnedMessage {
                channel,
                log_time: m.log_time,
                publish_time: m.publish_time,
                data: m.data.to_vec(),
            });
            Flow::Continue
        };
        format
            .read_chunk(&file, &summary, chunk, &sel, &mut receiver)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    out
}

/// The messages of `topic`, in log-time order.
pub fn topic_messages<'a>(all: &'a [OwnedMessage], topic: &str) -> Vec<&'a OwnedMessage> {
    let mut v: Vec<&OwnedMessage> = all.iter().filter(|m| m.channel.topic == topic).collect();
    v.sort_by_key(|m| m.log_time);
    v
}

/// Decodes `payloads` with `decoder` into one array (a StructArray), one row each.
pub fn decode_all(decoder: &dyn MessageDecoder, payloads: &[&[u8]]) -> ArrayRef {
    let mut b = ColumnBuilder::new(decoder.data_type()).expect("builder");
    for (i, p) in payloads.iter().enumerate() {
        append_message(decoder, p, &mut b)
            .unwrap_or_else(|e| panic!("message {i} ({}): {e}", decoder.describe()));
    }
    b.finish().expect("finish")
}

/// Parses an expected-output JSON file.
pub fn expected_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Row `row` of `array` as JSON, in the conventions of the MCAP decode
/// fixtures' `expected.json` where the Arrow type allows:
/// structs are objects (fields in order), lists arrays, Binary
/// `{"$bytes": base64}`, timestamps and durations `{"ns": i64}` (compare after
/// converting the expected `{"sec", "nsec"}`), maps objects keyed by the key's
/// text, null `null`, floats as f64 (f32 widened).
pub fn row_json(array: &dyn Array, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Null => Value::Null,
        DataType::Boolean => json!(array.as_boolean().value(row)),
        DataType::Int8 => json!(array.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => json!(array.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => json!(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => json!(array.as_primitive::<UInt8Type>().value(row)),
        DataType::UInt16 => json!(array.as_primitive::<UInt16Type>().value(row)),
        DataType::UInt32 => json!(array.as_primitive::<UInt32Type>().value(row)),
        DataType::UInt64 => json!(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float32 => json!(array.as_primitive::<Float32Type>().value(row) as f64),
        DataType::Float64 => json!(array.as_primitive::<Float64Type>().value(row)),
        DataType::Timestamp(..) => {
            json!({"ns": array.as_primitive::<TimestampNanosecondType>().value(row)})
        }
        DataType::Duration(..) => {
            json!({"ns": array.as_primitive::<DurationNanosecondType>().value(row)})
        }
        DataType::Utf8 => json!(array.as_string::<i32>().value(row)),
        DataType::Binary => json!({
            "$bytes": base64::engine::general_purpose::STANDARD.encode(array.as_binary::<i32>().value(row))
        }),
        DataType::List(_) => {
            let v = array.as_list::<i32>().value(row);
            Value::Array((0..v.len()).map(|i| row_json(v.as_ref(), i)).collect())
        }
        DataType::FixedSizeList(..) => {
            let v = array.as_fixed_size_list().value(row);
            Value::Array((0..v.len()).map(|i| row_json(v.as_ref(), i)).collect())
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut m = serde_json::Map::new();
            for (f, c) in fields.iter().zip(s.columns()) {
                m.insert(f.name().clone(), row_json(c.as_ref(), row));
            }
            Value::Object(m)
        }
        DataType::Map(..) => {
            let entries = array.as_map().value(row);
            let mut m = serde_json::Map::new();
            for i in 0..entries.len() {
                let key = match row_json(entries.column(0).as_ref(), i) {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                m.insert(key, row_json(entries.column(1).as_ref(), i));
            }
            Value::Object(m)
        }
        other => panic!("row_json: unexpected type {other}"),
    }
}
