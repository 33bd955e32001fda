//! [`Messages`]: the message columns of a record batch as the log writers
//! (MCAP, ROS1 bag, ROS 2 bag) read them: `topic`, `log_time` and `data`,
//! and when present `publish_time`, `sequence`, `message_type`,
//! `message_encoding` and `file`, with the checks every writer makes of a
//! row (no null topic, time or payload, no time before 1970); [`Routes`]:
//! which output channel (a bag connection, a ROS 2 topic) a row goes to, by
//! its topic and message type, from the channels of its source file.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch, StringArray, UInt32Array};
use arrow_cast::cast;
use arrow_schema::{DataType, Schema};

use logsql_readers::model::Channel;

use crate::columns::nanos;
use crate::error::{Error, Result};
use crate::format_writer::Written;

/// The column names the log writers read.
pub mod col {
    /// The topic (required).
    pub const TOPIC: &str = "topic";
    /// When the message was logged (required).
    pub const LOG_TIME: &str = "log_time";
    /// The payload (required).
    pub const DATA: &str = "data";
    /// When the message was published (null: the log time).
    pub const PUBLISH_TIME: &str = "publish_time";
    /// The publisher's sequence number (null: 0).
    pub const SEQUENCE: &str = "sequence";
    /// The message type.
    pub const MESSAGE_TYPE: &str = "message_type";
    /// The payload's encoding.
    pub const MESSAGE_ENCODING: &str = "message_encoding";
    /// The source file the row came from.
    pub const FILE: &str = "file";
}

/// Fails unless `schema` has the columns a message needs: `what` names the
/// output in the message (`writing MCAP`).
pub fn check_schema(schema: &Schema, what: &str) -> Result<()> {
    let missing: Vec<&str> = [col::TOPIC, col::LOG_TIME, col::DATA]
        .into_iter()
        .filter(|c| schema.index_of(c).is_err())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let have: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    Err(Error::Input(format!(
        "{what} needs the columns topic, log_time and data (missing: {}; the query has: {})",
        missing.join(", "),
        have.join(", ")
    )))
}

/// One batch's message columns, cast to the types the writers read.
pub struct Messages {
    topic: Arc<dyn Array>,
    log_time: Arc<dyn Array>,
    data: Arc<dyn Array>,
    publish_time: Option<Arc<dyn Array>>,
    sequence: Option<Arc<dyn Array>>,
    message_type: Option<Arc<dyn Array>>,
    message_encoding: Option<Arc<dyn Array>>,
    file: Option<Arc<dyn Array>>,
}

/// One row of [`Messages`], checked.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// Its topic.
    pub topic: &'a str,
    /// Its log time (ns since 1970).
    pub log_time: u64,
    /// Its publish time (ns; the log time when null).
    pub publish_time: u64,
    /// Its sequence number (0 when null).
    pub sequence: u32,
    /// Its message type, when given.
    pub message_type: Option<&'a str>,
    /// Its message encoding (empty when not given).
    pub message_encoding: &'a str,
    /// The file it came from, when given.
    pub file: Option<&'a str>,
    /// Its payload.
    pub data: &'a [u8],
}

impl Messages {
    /// The message columns of `batch`; `what` names the output in errors
    /// (`writing MCAP`).
    pub fn of(batch: &RecordBatch, what: &str) -> Result<Self> {
        let need = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| Error::Input(format!("{what} needs the column {name}")))
        };
        let strings = |name: &str| -> Result<Option<Arc<dyn Array>>> {
            Ok(batch
                .column_by_name(name)
                .map(|c| cast(c, &DataType::Utf8))
                .transpose()?)
        };
        Ok(Self {
            topic: cast(need(col::TOPIC)?, &DataType::Utf8)?,
            log_time: nanos(need(col::LOG_TIME)?)?,
            data: cast(need(col::DATA)?, &DataType::Binary)?,
            publish_time: batch
                .column_by_name(col::PUBLISH_TIME)
                .map(nanos)
                .transpose()?,
            sequence: batch
                .column_by_name(col::SEQUENCE)
                .map(|c| cast(c, &DataType::UInt32))
                .transpose()?,
            message_type: strings(col::MESSAGE_TYPE)?,
            message_encoding: strings(col::MESSAGE_ENCODING)?,
            file: strings(col::FILE)?,
        })
    }

    /// The rows.
    pub fn len(&self) -> usize {
        self.topic.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `i`, checked; an error names the row as `what {name}: row {first
    /// + i + 1} has ...`.
    pub fn row(&self, i: usize, what: &str, name: &str, first: u64) -> Result<Row<'_>> {
        let err = |has: &str| {
            Error::Write(format!(
                "{what} {name}: row {} has {has}",
                first + i as u64 + 1
            ))
        };
        let topic: &StringArray = self.topic.as_string::<i32>();
        let log_time: &Int64Array = self.log_time.as_primitive::<Int64Type>();
        let data: &BinaryArray = self.data.as_binary::<i32>();
        if topic.is_null(i) {
            return Err(err("a null topic"));
        }
        if log_time.is_null(i) {
            return Err(err("a null log_time"));
        }
        if data.is_null(i) {
            return Err(err("null data"));
        }
        let log_t = u64::try_from(log_time.value(i)).map_err(|_| err("a log_time before 1970"))?;
        let publish = self
            .publish_time
            .as_ref()
            .map(|a| a.as_primitive::<Int64Type>())
            .filter(|p| p.is_valid(i));
        let pub_t = match publish {
            Some(p) => u64::try_from(p.value(i)).map_err(|_| err("a publish_time before 1970"))?,
            None => log_t,
        };
        let sequence: Option<&UInt32Array> = self
            .sequence
            .as_ref()
            .map(|a| a.as_primitive::<UInt32Type>());
        fn opt(a: &Option<Arc<dyn Array>>, i: usize) -> Option<&str> {
            a.as_ref()
                .map(|a| a.as_string::<i32>())
                .and_then(|a| a.is_valid(i).then(|| a.value(i)))
        }
        Ok(Row {
            topic: topic.value(i),
            log_time: log_t,
            publish_time: pub_t,
            sequence: sequence.filter(|s| s.is_valid(i)).map_or(0, |s| s.value(i)),
            message_type: opt(&self.message_type, i),
            message_encoding: opt(&self.message_encoding, i).unwrap_or(""),
            file: opt(&self.file, i),
            data: data.value(i),
        })
    }
}

/// What a bag or ROS 2 bag writer reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// Messages written.
    pub rows: u64,
    /// Messages left out: their channel cannot be written (a bag connection
    /// whose record was lost: no type), when the writer was told to leave
    /// them out.
    pub left_out: u64,
}

impl Written for Report {
    fn rows(&self) -> u64 {
        self.rows
    }
}

/// The output channels (of id type `I`) rows go to, by (topic, message
/// type), with the channels of the source files registered so far.
#[derive(Debug)]
pub(crate) struct Routes<I> {
    /// By `topic \0 type`: the output channel, `None` for rows left out.
    ids: HashMap<String, Option<I>>,
    key: String,
    /// The channels of each source file by its name (`None`: it was not read).
    sources: HashMap<String, Option<Vec<Channel>>>,
}

impl<I: Copy> Routes<I> {
    pub(crate) fn new() -> Self {
        Self {
            ids: HashMap::new(),
            key: String::new(),
            sources: HashMap::new(),
        }
    }

    /// Registers source file `name` with its channels.
    pub(crate) fn add_source(&mut self, name: &str, channels: Option<Vec<Channel>>) {
        self.sources.insert(name.to_string(), channels);
    }

    fn set_key(&mut self, topic: &str, message_type: Option<&str>) {
        self.key.clear();
        self.key.push_str(topic);
        self.key.push('\0');
        if let Some(t) = message_type {
            self.key.push_str(t);
        } else {
            self.key.push('\u{1}');
        }
    }

    /// Whether (topic, type) has its output channel (or is left out) already.
    fn contains(&mut self, topic: &str, message_type: Option<&str>) -> bool {
        self.set_key(topic, message_type);
        self.ids.contains_key(self.key.as_str())
    }

    /// Sets the output channel of (topic, type); the first one set stays.
    fn insert(&mut self, topic: &str, message_type: Option<&str>, id: Option<I>) {
        self.set_key(topic, message_type);
        if !self.ids.contains_key(self.key.as_str()) {
            self.ids.insert(self.key.clone(), id);
        }
    }

    /// Declares an output channel for each (topic, type) of `channels`
    /// before any row, the first channel listed winning: what `make` makes
    /// of it (`Ok(None)`: that (topic, type) is left out, as a channel
    /// whose connection record was lost); its error, the reason a channel
    /// cannot be written, refuses the write as `what` to `name`.
    pub(crate) fn declare(
        &mut self,
        channels: &[Channel],
        what: &str,
        name: &str,
        mut make: impl FnMut(&Channel) -> std::result::Result<Option<Result<I>>, String>,
    ) -> Result<()> {
        for c in channels {
            let ty = c.message_type.as_deref();
            if self.contains(&c.topic, ty) {
                continue;
            }
            match make(c) {
                Ok(Some(id)) => self.insert(&c.topic, ty, Some(id?)),
                Ok(None) => {}
                Err(why) => return Err(Error::Input(format!("{what} {name}: {why}"))),
            }
        }
        Ok(())
    }

    /// The output channel of `row` (`None`: left out). A (topic, type) met
    /// for the first time gets what `make` makes of the channel of the
    /// row's source file with that topic and type (`None` when the file
    /// was not read or has no such channel).
    pub(crate) fn route(
        &mut self,
        row: &Row<'_>,
        make: impl FnOnce(Option<&Channel>) -> Result<Option<I>>,
    ) -> Result<Option<I>> {
        self.set_key(row.topic, row.message_type);
        if let Some(id) = self.ids.get(self.key.as_str()) {
            return Ok(*id);
        }
        let channel = row
            .file
            .and_then(|f| self.sources.get(f))
            .and_then(Option::as_ref)
            .and_then(|chs| {
                chs.iter()
                    .find(|c| c.topic == row.topic && c.message_type.as_deref() == row.message_type)
            });
        let id = make(channel)?;
        self.ids.insert(self.key.clone(), id);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, TimestampNanosecondArray};
    use arrow_schema::{Field, TimeUnit};

    #[test]
    fn rows_are_read_and_bad_ones_named() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("topic", DataType::Utf8, true),
            Field::new(
                "log_time",
                DataType::Timestamp(TimeUnit::Nanosecond, None),
                true,
            ),
            Field::new("data", DataType::Binary, true),
            Field::new("sequence", DataType::Int32, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(vec![Some("/a"), None])),
                Arc::new(TimestampNanosecondArray::from(vec![5, 6])),
                Arc::new(BinaryArray::from(vec![&b"x"[..], b"y"])),
                Arc::new(Int32Array::from(vec![Some(3), None])),
            ],
        )
        .unwrap();
        let m = Messages::of(&batch, "writing X").unwrap();
        assert_eq!(m.len(), 2);
        let r = m.row(0, "writing X", "o.x", 10).unwrap();
        assert_eq!(
            (r.topic, r.log_time, r.publish_time, r.sequence, r.data),
            ("/a", 5, 5, 3, &b"x"[..])
        );
        assert_eq!(
            (r.message_type, r.message_encoding, r.file),
            (None, "", None)
        );
        let e = m.row(1, "writing X", "o.x", 10).unwrap_err().to_string();
        assert_eq!(e, "writing X o.x: row 12 has a null topic");
        let e = check_schema(
            &Schema::new(vec![Field::new("x", DataType::Utf8, true)]),
            "writing X",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("needs the columns topic, log_time and data (missing: topic, log_time, data; the query has: x)"),
            "{e}"
        );
    }
}
