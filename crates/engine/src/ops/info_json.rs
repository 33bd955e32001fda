//! The JSON of `logsql info --format json`, for every caller that answers
//! with it: one object per file ([`facts`]), with its topics' timeline
//! ([`timeline`]), and the timeline across several files ([`across`]).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::info::{AllTimes, Facts};
use super::timeline::{Timeline, WIDTH};
use super::units::rfc3339;

/// The summary as one JSON object.
pub fn facts(f: &Facts) -> Value {
    let time = |t: Option<u64>| t.map(|ns| rfc3339(ns as i64));
    let topics: Vec<Value> = f
        .topics
        .iter()
        .map(|(topic, t)| {
            json!({
                "topic": topic,
                "message_types": t.types,
                "encodings": t.encodings,
                "messages": t.count,
                "frequency_hz": f.frequency(t.count),
            })
        })
        .collect();
    let compression: Vec<Value> = f
        .codecs
        .iter()
        .map(|(name, c)| {
            json!({
                "codec": name,
                "chunks": c.chunks,
                "compressed_bytes": c.compressed,
                "uncompressed_bytes": (!c.unknown).then_some(c.uncompressed),
            })
        })
        .collect();
    json!({
        "file": f.file,
        "format": f.format,
        "size_bytes": f.size,
        "properties": f.properties.iter().cloned().collect::<BTreeMap<_, _>>(),
        "indexed": f.indexed,
        "index": index_line(f.indexed, f.index_note.as_deref()),
        "checksum": f.checksum.as_ref().map(|r| match r {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("mismatch: {e}"),
        }),
        "damage": f.damage,
        "messages": f.messages,
        "messages_counted_from_headers": f.count_note.is_some(),
        "read_error": f.read_error,
        "start": time(f.start),
        "start_ns": f.start,
        "end": time(f.end),
        "end_ns": f.end,
        "duration_ns": f.span,
        "chunks": f.chunks,
        "compression": compression,
        "channels": f.channels,
        "topics": topics,
        "attachments": f.attachments,
        "metadata": f.metadata,
        "timeline": f.timeline.as_ref().map(timeline),
        "cameras": f.cameras.iter().map(|c| match &c.first {
            Ok((encoding, width, height)) => json!({
                "topic": c.topic, "encoding": encoding, "width": width, "height": height,
            }),
            Err(e) => json!({ "topic": c.topic, "error": e }),
        }).collect::<Vec<Value>>(),
    })
}

/// The timelines as JSON: the axis, and per topic its counts, rates and gaps.
pub fn timeline(timeline: &Timeline) -> Value {
    let per_second = 1e9 / timeline.bucket_ns as f64;
    let topics: BTreeMap<&String, Value> = timeline
        .topics
        .iter()
        .map(|(topic, t)| {
            let gaps: Vec<Value> = t
                .gaps
                .iter()
                .map(|(at, len)| {
                    json!({"start_ns": at, "start": rfc3339(*at as i64), "length_ns": len})
                })
                .collect();
            let rates: Vec<f64> = t.counts.iter().map(|&n| n as f64 * per_second).collect();
            (
                topic,
                json!({"counts": t.counts, "rates_hz": rates, "gaps": gaps}),
            )
        })
        .collect();
    json!({
        "start_ns": timeline.start,
        "end_ns": timeline.end,
        "bucket_ns": timeline.bucket_ns,
        "buckets": WIDTH,
        "bytes_decompressed": timeline.bytes_decompressed,
        "topics": topics,
    })
}

/// The timeline across several files, with their names and messages.
pub fn across(all: &AllTimes, timeline: &Timeline) -> Value {
    json!({
        "files": all.files,
        "messages": all.messages(),
        "timeline": self::timeline(timeline),
    })
}

/// Where the summary came from: the file's index, or a recovery walk.
pub fn index_line(indexed: bool, note: Option<&str>) -> String {
    match (indexed, note) {
        (true, None) => "read from the file's index".into(),
        (true, Some(n)) => format!("read from the file's index ({n})"),
        (false, Some(n)) if n.starts_with("rebuilt by") => format!("none usable; summary {n}"),
        (false, Some(n)) if n.starts_with("none") => n.to_string(),
        (false, Some(n)) => format!("none usable; summary rebuilt by a recovery walk ({n})"),
        (false, None) => "none usable; summary rebuilt by a recovery walk of the file".into(),
    }
}
