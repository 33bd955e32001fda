//! Events as JSON lines, in the shape Foxglove's events API uses.
//!
//! One event per line: `deviceName`, `start` and `end` (RFC 3339),
//! `metadata` (string keys and values) as Foxglove's create-an-event body
//! has them, and logsql's own `id`, `type`, `recording` and `createdAt`.
//! The Foxglove form ([`Shape::Foxglove`]) is exactly a create-an-event
//! body: `type` and `recording` go into `metadata`, `id` and `createdAt`
//! (which Foxglove assigns) are left out.
//!
//! Reading accepts either form and Foxglove's own answers (`device.name`,
//! `deviceId`, `device.id`, custom `properties`), one object per line or a
//! JSON array of them (what Foxglove's list-events call returns).

use std::collections::BTreeMap;
use std::io::BufRead;

use serde_json::{Map, Value};

use super::schema::Event;
use crate::units::{parse_time, rfc3339};

/// The longest line (or array file) read: an event is a few hundred bytes.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// Which JSON an event is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// Every column of the table: Foxglove's fields and logsql's own.
    #[default]
    Full,
    /// A Foxglove create-an-event body (`POST /v1/events`).
    Foxglove,
}

/// `event` as one line of JSON (no newline).
pub fn to_line(event: &Event, shape: Shape) -> String {
    let mut object = Map::new();
    let mut metadata: Map<String, Value> = event
        .properties
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    if shape == Shape::Full
        && let Some(id) = &event.id
    {
        object.insert("id".into(), id.clone().into());
    }
    if let Some(device) = &event.device {
        object.insert("deviceName".into(), device.clone().into());
    }
    object.insert("start".into(), rfc3339(event.start).into());
    object.insert(
        "end".into(),
        rfc3339(event.end.unwrap_or(event.start)).into(),
    );
    let extra = [("type", &event.kind), ("recording", &event.recording)];
    match shape {
        Shape::Full => {
            for (key, value) in extra {
                if let Some(v) = value {
                    object.insert(key.into(), v.clone().into());
                }
            }
        }
        Shape::Foxglove => {
            for (key, value) in extra {
                if let Some(v) = value {
                    metadata.entry(key).or_insert_with(|| v.clone().into());
                }
            }
        }
    }
    object.insert("metadata".into(), Value::Object(metadata));
    if shape == Shape::Full
        && let Some(created) = event.created_at
    {
        object.insert("createdAt".into(), rfc3339(created).into());
    }
    Value::Object(object).to_string()
}

/// One event from a JSON object, as [`to_line`] or Foxglove writes it.
pub fn from_value(value: &Value) -> Result<Event, String> {
    let Value::Object(object) = value else {
        return Err(format!("an event is a JSON object, not {}", kind_of(value)));
    };
    let text = |v: &Value, what: &str| -> Result<String, String> {
        match v {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => Err(format!("{what} is a string, not {}", kind_of(other))),
        }
    };
    let field = |name: &str| object.get(name).filter(|v| !v.is_null());
    let time = |name: &str| -> Result<Option<i64>, String> {
        field(name)
            .map(|v| {
                let s = text(v, name)?;
                parse_time(&s).map_err(|e| format!("{name}: {e}"))
            })
            .transpose()
    };
    let mut properties = BTreeMap::new();
    for name in ["metadata", "properties"] {
        match field(name) {
            None => {}
            Some(Value::Object(map)) => {
                for (k, v) in map {
                    if !v.is_null() {
                        properties.insert(k.clone(), text(v, &format!("{name}.{k}"))?);
                    }
                }
            }
            Some(other) => {
                return Err(format!("{name} is an object, not {}", kind_of(other)));
            }
        }
    }
    let nested = |outer: &str, inner: &str| {
        object
            .get(outer)
            .and_then(|d| d.get(inner))
            .filter(|v| !v.is_null())
    };
    let device = field("deviceName")
        .or_else(|| nested("device", "name"))
        .or_else(|| field("deviceId"))
        .or_else(|| nested("device", "id"))
        .map(|v| text(v, "device"))
        .transpose()?;
    // The Foxglove form keeps them in metadata.
    let mut lifted = |name: &str| -> Result<Option<String>, String> {
        match field(name) {
            Some(v) => Ok(Some(text(v, name)?)),
            None => Ok(properties.remove(name)),
        }
    };
    let kind = lifted("type")?;
    let recording = lifted("recording")?;
    let start = time("start")?.ok_or("no start")?;
    let end = time("end")?;
    if let Some(end) = end
        && end < start
    {
        return Err(format!(
            "end {} is before start {}",
            rfc3339(end),
            rfc3339(start)
        ));
    }
    Ok(Event {
        id: field("id").map(|v| text(v, "id")).transpose()?,
        device,
        recording,
        start,
        end,
        kind,
        properties,
        created_at: time("createdAt")?,
    })
}

/// The events of a JSON-lines file (or a JSON array), each error naming
/// `name` and the line. Blank lines are skipped.
pub fn read(mut input: impl BufRead, name: &str) -> Result<Vec<Event>, String> {
    let mut events = Vec::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        number += 1;
        let read = std::io::Read::take(&mut input, MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{name}: {e}"))?;
        if read == 0 {
            return Ok(events);
        }
        if line.len() as u64 > MAX_LINE_BYTES {
            return Err(format!(
                "{name}:{number}: the line is longer than {MAX_LINE_BYTES} bytes"
            ));
        }
        let at = |e: String| format!("{name}:{number}: {e}");
        let text = std::str::from_utf8(&line).map_err(|e| at(format!("not UTF-8: {e}")))?;
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(text).map_err(|e| at(format!("not JSON: {e}")))?;
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    events.push(from_value(item).map_err(|e| at(format!("item {i}: {e}")))?);
                }
            }
            other => events.push(from_value(&other).map_err(at)?),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Event {
        Event {
            id: Some("e1".into()),
            device: Some("r7".into()),
            recording: Some("fleet/r7/run.mcap".into()),
            start: 1_700_000_000_250_000_000,
            end: Some(1_700_000_003_000_000_000),
            kind: Some("hard_brake".into()),
            properties: [("speed".to_string(), "3.2".to_string())].into(),
            created_at: Some(1_700_000_100_000_000_000),
        }
    }

    #[test]
    fn both_shapes_round_trip() {
        let e = event();
        let full = to_line(&e, Shape::Full);
        assert_eq!(
            full,
            r#"{"createdAt":"2023-11-14T22:15:00Z","deviceName":"r7","end":"2023-11-14T22:13:23Z","id":"e1","metadata":{"speed":"3.2"},"recording":"fleet/r7/run.mcap","start":"2023-11-14T22:13:20.250Z","type":"hard_brake"}"#
        );
        assert_eq!(read(full.as_bytes(), "x").unwrap(), vec![e.clone()]);
        let body = to_line(&e, Shape::Foxglove);
        assert!(!body.contains("\"id\"") && !body.contains("createdAt"));
        let back = read(body.as_bytes(), "x").unwrap().remove(0);
        assert_eq!(
            back,
            Event {
                id: None,
                created_at: None,
                ..e
            }
        );
    }

    #[test]
    fn foxglove_answers_are_read() {
        let listed = r#"[{"id":"ev_1","start":"2019-08-24T14:15:22Z","end":"2019-08-24T14:15:23Z",
            "device":{"id":"dev_1","name":"robot-1"},"metadata":{"a":"b"},
            "createdAt":"2019-08-24T14:16:00Z","updatedAt":"2019-08-24T14:16:00Z",
            "properties":{"weather":"rain"}}]"#
            .replace('\n', " ");
        let events = read(listed.as_bytes(), "x").unwrap();
        assert_eq!(events[0].device.as_deref(), Some("robot-1"));
        assert_eq!(events[0].properties.len(), 2);
        assert_eq!(events[0].id.as_deref(), Some("ev_1"));
    }

    #[test]
    fn errors_name_the_line() {
        let input = "{\"start\":\"2024-01-01T00:00:00Z\"}\n\n{\"end\":\"2024-01-01T00:00:00Z\"}\n";
        assert_eq!(
            read(input.as_bytes(), "ev.jsonl").unwrap_err(),
            "ev.jsonl:3: no start"
        );
        let bad = "{\"start\":\"yesterday\"}";
        let e = read(bad.as_bytes(), "ev.jsonl").unwrap_err();
        assert!(e.starts_with("ev.jsonl:1: start: "), "{e}");
        let e = read("[1]".as_bytes(), "f").unwrap_err();
        assert_eq!(e, "f:1: item 0: an event is a JSON object, not a number");
        let e = read(
            "{\"start\":\"2024-01-02T00:00:00Z\",\"end\":\"2024-01-01T00:00:00Z\"}".as_bytes(),
            "f",
        )
        .unwrap_err();
        assert!(e.contains("is before start"), "{e}");
    }
}
