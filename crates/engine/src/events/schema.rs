//! The events table's columns, and one event as a Rust value.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, MapArray, RecordBatch, StringArray, TimestampNanosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimestampNanosecondType};
use datafusion::error::{DataFusionError, Result};

use crate::scanner::schema::{map_array, timestamp_type};

/// Column names, in table order.
pub mod col {
    /// A unique id (a UUID unless the appender gave one).
    pub const ID: &str = "id";
    /// The device the event belongs to.
    pub const DEVICE: &str = "device";
    /// The recording it belongs to (a location as `recordings` and the
    /// scans name it).
    pub const RECORDING: &str = "recording";
    /// When it started (inclusive).
    pub const START_TIME: &str = "start_time";
    /// When it ended (inclusive; the start when not given).
    pub const END_TIME: &str = "end_time";
    /// What kind of event it is (`hard_brake`).
    pub const TYPE: &str = "type";
    /// Any other facts, as strings.
    pub const PROPERTIES: &str = "properties";
    /// When it was appended.
    pub const CREATED_AT: &str = "created_at";
}

static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let entries = DataType::Struct(
        vec![
            Field::new("keys", DataType::Utf8, false),
            Field::new("values", DataType::Utf8, true),
        ]
        .into(),
    );
    let map = DataType::Map(Arc::new(Field::new("entries", entries, false)), false);
    Arc::new(Schema::new(vec![
        Field::new(col::ID, DataType::Utf8, true),
        Field::new(col::DEVICE, DataType::Utf8, true),
        Field::new(col::RECORDING, DataType::Utf8, true),
        Field::new(col::START_TIME, timestamp_type(), true),
        Field::new(col::END_TIME, timestamp_type(), true),
        Field::new(col::TYPE, DataType::Utf8, true),
        Field::new(col::PROPERTIES, map, true),
        Field::new(col::CREATED_AT, timestamp_type(), true),
    ]))
});

/// The events table's schema. Every column may be left out of an append
/// (`start_time` excepted: a row without one is refused); `id`, `end_time`
/// and `created_at` are then filled in.
pub fn events_schema() -> SchemaRef {
    Arc::clone(&SCHEMA)
}

/// One event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// Its id; `None`: a new UUID when appended.
    pub id: Option<String>,
    /// The device it belongs to.
    pub device: Option<String>,
    /// The recording it belongs to.
    pub recording: Option<String>,
    /// Start, nanoseconds since the Unix epoch.
    pub start: i64,
    /// End, nanoseconds since the Unix epoch; `None`: the start.
    pub end: Option<i64>,
    /// Its type.
    pub kind: Option<String>,
    /// Its properties.
    pub properties: BTreeMap<String, String>,
    /// When it was appended; `None`: now, when appended.
    pub created_at: Option<i64>,
}

/// `events` as a batch of the events schema.
pub fn batch_of(events: &[Event]) -> Result<RecordBatch> {
    let strings = |f: fn(&Event) -> Option<&str>| -> ArrayRef {
        Arc::new(events.iter().map(f).collect::<StringArray>())
    };
    let times = |f: fn(&Event) -> Option<i64>| -> ArrayRef {
        Arc::new(
            events
                .iter()
                .map(f)
                .collect::<TimestampNanosecondArray>()
                .with_timezone("UTC"),
        )
    };
    let columns = vec![
        strings(|e| e.id.as_deref()),
        strings(|e| e.device.as_deref()),
        strings(|e| e.recording.as_deref()),
        times(|e| Some(e.start)),
        times(|e| e.end),
        strings(|e| e.kind.as_deref()),
        map_array(events.iter().map(|e| &e.properties))?,
        times(|e| e.created_at),
    ];
    // The map builder's column is non-nullable; the table's may be null.
    let columns = columns
        .into_iter()
        .zip(SCHEMA.fields())
        .map(|(c, f)| cast(&c, f.data_type()))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(events_schema(), columns)?)
}

/// The events of `batch` (a batch of the events schema, as a scan of the
/// table gives it).
pub fn events_of(batch: &RecordBatch) -> Result<Vec<Event>> {
    let column = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| DataFusionError::Internal(format!("events: no column {name}")))
    };
    let text = |name: &str| -> Result<StringArray> {
        Ok(cast(column(name)?, &DataType::Utf8)?
            .as_string::<i32>()
            .clone())
    };
    let time = |name: &str| -> Result<TimestampNanosecondArray> {
        Ok(cast(column(name)?, &timestamp_type())?
            .as_primitive::<TimestampNanosecondType>()
            .clone())
    };
    let (id, device, recording, kind) = (
        text(col::ID)?,
        text(col::DEVICE)?,
        text(col::RECORDING)?,
        text(col::TYPE)?,
    );
    let (start, end, created) = (
        time(col::START_TIME)?,
        time(col::END_TIME)?,
        time(col::CREATED_AT)?,
    );
    let properties: &MapArray = column(col::PROPERTIES)?.as_map();
    let opt_str = |a: &StringArray, i: usize| a.is_valid(i).then(|| a.value(i).to_string());
    let opt_time = |a: &TimestampNanosecondArray, i: usize| a.is_valid(i).then(|| a.value(i));
    (0..batch.num_rows())
        .map(|i| {
            let mut props = BTreeMap::new();
            if properties.is_valid(i) {
                let entry = properties.value(i);
                let keys = cast(entry.column(0), &DataType::Utf8)?;
                let values = cast(entry.column(1), &DataType::Utf8)?;
                let (keys, values) = (keys.as_string::<i32>(), values.as_string::<i32>());
                for j in 0..keys.len() {
                    if values.is_valid(j) {
                        props.insert(keys.value(j).to_string(), values.value(j).to_string());
                    }
                }
            }
            Ok(Event {
                id: opt_str(&id, i),
                device: opt_str(&device, i),
                recording: opt_str(&recording, i),
                start: opt_time(&start, i).ok_or_else(|| {
                    DataFusionError::Execution("an event has no start_time".into())
                })?,
                end: opt_time(&end, i),
                kind: opt_str(&kind, i),
                properties: props,
                created_at: opt_time(&created, i),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_survive_a_batch() {
        let events = vec![
            Event {
                id: Some("a".into()),
                device: Some("r7".into()),
                recording: None,
                start: 1_700_000_000_000_000_000,
                end: Some(1_700_000_001_500_000_000),
                kind: Some("hard_brake".into()),
                properties: [("speed".to_string(), "3.2".to_string())].into(),
                created_at: Some(5),
            },
            Event {
                start: -3,
                ..Event::default()
            },
        ];
        let batch = batch_of(&events).unwrap();
        assert_eq!(batch.schema(), events_schema());
        assert_eq!(events_of(&batch).unwrap(), events);
    }
}
