//! Writing MCAP files from record batches: [`McapWriter`], the
//! [`FormatWriter`] behind `COPY (...) TO 'x.mcap'` (or `STORED AS MCAP`),
//! `logsql export out.mcap` and `logsql recover`.
//!
//! Rows need `topic`, `log_time` and `data`; `publish_time` (null: the log
//! time), `sequence` (null: 0), `message_type`, `message_encoding` and `file`
//! are used when present ([`crate::messages`]). A row's channel and schema
//! come from the source file named in its `file` column when the engine
//! registered it ([`FormatWriter::add_source`]): the row gets the channel of
//! that file with the row's topic, message type and message encoding, mapped
//! to MCAP by [`logsql_readers::formats::mcap::mapping`]. Rows without a
//! `file` column, or whose `file` names a file that was not read, get a
//! channel keyed by (topic, message type, message encoding) whose schema
//! record carries only the type name. Each source file's metadata records
//! and MCAP attachments are written once, when it is registered. Rows are
//! written in the order they come.
//!
//! - [`options`]: compression, chunk size, summary (`COPY ... OPTIONS`);
//! - [`channels`]: what the writer takes from one source file.

pub mod channels;
pub mod options;

use std::collections::{BTreeMap, HashMap};
use std::io::{Seek, Write};
use std::sync::Arc;

use arrow_array::RecordBatch;
use logsql_readers::formats::mcap::mapping::{McapChannel, named_only};

use crate::error::{Error, Result};
use crate::format_writer::{FormatWriter, Progress};
use crate::messages::Messages;
use crate::source::SourceFile;
use channels::SourceInfo;
pub use options::{Compression, McapWriteOptions, OPTION_KEYS};

/// What the rows are written as, in messages.
const WHAT: &str = "writing MCAP";

/// The `mcap` crate's writer fed with record batches.
pub struct McapWriter<W: Write + Seek> {
    options: McapWriteOptions,
    /// The output until the first record is due (the profile is not known before).
    out: Option<W>,
    writer: Option<mcap::Writer<W>>,
    sources: HashMap<String, Option<Arc<SourceInfo>>>,
    /// Channel ids by `file \0 topic \0 type \0 encoding`.
    channels: HashMap<String, u16>,
    key: String,
    name: String,
    rows: u64,
}

fn mcap_err(name: &str, e: mcap::McapError) -> Error {
    Error::Write(format!("{WHAT} {name}: {e}"))
}

impl<W: Write + Seek> McapWriter<W> {
    /// A writer into `out`, named `name` in errors.
    pub fn new(out: W, options: McapWriteOptions, name: String) -> Self {
        Self {
            options,
            out: Some(out),
            writer: None,
            sources: HashMap::new(),
            channels: HashMap::new(),
            key: String::new(),
            name,
            rows: 0,
        }
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The writer, created on first use with `profile`.
    fn writer(&mut self, profile: &str) -> Result<&mut mcap::Writer<W>> {
        if self.writer.is_none() {
            let out = self
                .out
                .take()
                .ok_or_else(|| Error::Write(format!("{WHAT} {}: output used twice", self.name)))?;
            let w = self
                .options
                .writer_options(profile)
                .create(out)
                .map_err(|e| mcap_err(&self.name, e))?;
            self.writer = Some(w);
        }
        self.writer
            .as_mut()
            .ok_or_else(|| Error::Write(format!("{WHAT}: no writer")))
    }

    /// Registers source file `file`: writes its metadata records and attachments.
    fn add_info(&mut self, file: &str, info: Option<Arc<SourceInfo>>) -> Result<()> {
        if let Some(info) = &info {
            let name = self.name.clone();
            let w = self.writer(&info.profile)?;
            for m in &info.metadata {
                w.write_metadata(&mcap::records::Metadata {
                    name: m.name.clone(),
                    metadata: m.metadata.clone(),
                })
                .map_err(|e| mcap_err(&name, e))?;
            }
            for a in &info.attachments {
                w.attach(a).map_err(|e| mcap_err(&name, e))?;
            }
        }
        self.sources.insert(file.to_string(), info);
        Ok(())
    }

    /// Adds the channel (and schema) of a row of source `file`.
    fn add_channel(
        &mut self,
        file: Option<&str>,
        topic: &str,
        ty: Option<&str>,
        enc: &str,
    ) -> Result<u16> {
        let source = file.and_then(|f| self.sources.get(f).cloned().flatten());
        let key = (topic.to_string(), ty.map(str::to_string), enc.to_string());
        let chan = match source.as_ref().and_then(|s| s.channels.get(&key)) {
            Some(c) => c.clone(),
            None => McapChannel {
                topic: topic.to_string(),
                message_encoding: enc.to_string(),
                schema: ty.map(|ty| {
                    source
                        .as_ref()
                        .and_then(|s| s.schemas.get(&(ty.to_string(), enc.to_string())))
                        .cloned()
                        .unwrap_or_else(|| named_only(ty))
                }),
                metadata: BTreeMap::new(),
            },
        };
        let name = self.name.clone();
        let profile = source.as_ref().map_or("", |s| s.profile.as_str());
        let w = self.writer(profile)?;
        let schema_id = match &chan.schema {
            Some(s) => w
                .add_schema(&s.name, &s.encoding, &s.data)
                .map_err(|e| mcap_err(&name, e))?,
            None => 0,
        };
        w.add_channel(
            schema_id,
            &chan.topic,
            &chan.message_encoding,
            &chan.metadata,
        )
        .map_err(|e| mcap_err(&name, e))
    }

    /// Writes the summary and footer; returns the output, flushed.
    pub fn finish_into(mut self) -> Result<W> {
        let name = self.name.clone();
        let mut w = match self.writer.take() {
            Some(w) => w,
            None => {
                let out = self
                    .out
                    .take()
                    .ok_or_else(|| Error::Write(format!("{WHAT} {name}: output used twice")))?;
                self.options
                    .writer_options("")
                    .create(out)
                    .map_err(|e| mcap_err(&name, e))?
            }
        };
        w.finish().map_err(|e| mcap_err(&name, e))?;
        let mut out = w.into_inner();
        out.flush().map_err(|e| Error::io(&name, e))?;
        Ok(out)
    }
}

impl<W: Write + Seek + Send> FormatWriter for McapWriter<W> {
    type Report = u64;

    fn add_source(&mut self, name: &str, source: Option<&SourceFile>) -> Result<()> {
        let info = source.map(|f| Arc::new(SourceInfo::of(f)));
        self.add_info(name, info)
    }

    /// Writes every row of `batch` as a message.
    fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let m = Messages::of(batch, WHAT)?;
        let name = self.name.clone();
        for i in 0..m.len() {
            let row = m.row(i, WHAT, &name, self.rows)?;
            let (f, tp, ty, enc) = (row.file, row.topic, row.message_type, row.message_encoding);
            self.key.clear();
            for part in [f.unwrap_or("\u{1}"), tp, ty.unwrap_or("\u{1}"), enc] {
                self.key.push_str(part);
                self.key.push('\0');
            }
            let id = match self.channels.get(self.key.as_str()) {
                Some(id) => *id,
                None => {
                    let id = self.add_channel(f, tp, ty, enc)?;
                    self.channels.insert(self.key.clone(), id);
                    id
                }
            };
            let w = self.writer("")?;
            w.write_to_known_channel(
                &mcap::records::MessageHeader {
                    channel_id: id,
                    sequence: row.sequence,
                    log_time: row.log_time,
                    publish_time: row.publish_time,
                },
                row.data,
            )
            .map_err(|e| mcap_err(&name, e))?;
        }
        self.rows += m.len() as u64;
        Ok(())
    }

    fn progress(&self) -> Progress {
        Progress {
            rows: self.rows,
            groups: 0,
        }
    }

    fn finish(self) -> Result<u64> {
        let rows = self.rows;
        self.finish_into()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BinaryArray, StringArray, TimestampNanosecondArray};
    use arrow_schema::{DataType, Field, Schema, TimeUnit};

    #[test]
    fn rows_are_written_and_an_empty_result_is_a_valid_file() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("topic", DataType::Utf8, true),
            Field::new(
                "log_time",
                DataType::Timestamp(TimeUnit::Nanosecond, None),
                true,
            ),
            Field::new("data", DataType::Binary, true),
            Field::new("message_type", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(vec!["/a", "/b", "/a"])),
                Arc::new(TimestampNanosecondArray::from(vec![3, 1, 2])),
                Arc::new(BinaryArray::from(vec![&b"x"[..], b"", b"yz"])),
                Arc::new(StringArray::from(vec![Some("T"), None, Some("T")])),
            ],
        )
        .unwrap();
        let mut w = McapWriter::new(
            std::io::Cursor::new(Vec::new()),
            McapWriteOptions::default(),
            "t.mcap".into(),
        );
        w.write_batch(&batch).unwrap();
        assert_eq!(w.rows(), 3);
        let bytes = w.finish_into().unwrap().into_inner();
        let msgs: Vec<_> = mcap::MessageStream::new(&bytes)
            .unwrap()
            .map(|m| {
                let m = m.unwrap();
                let ty = m.channel.schema.as_ref().map(|s| s.name.clone());
                (
                    m.channel.topic.clone(),
                    m.log_time,
                    m.publish_time,
                    m.data.to_vec(),
                    ty,
                )
            })
            .collect();
        assert_eq!(
            msgs,
            [
                ("/a".to_string(), 3, 3, b"x".to_vec(), Some("T".to_string())),
                ("/b".to_string(), 1, 1, vec![], None),
                (
                    "/a".to_string(),
                    2,
                    2,
                    b"yz".to_vec(),
                    Some("T".to_string())
                ),
            ]
        );
        let empty = McapWriter::new(
            std::io::Cursor::new(Vec::new()),
            McapWriteOptions::default(),
            "e.mcap".into(),
        );
        let bytes = empty.finish_into().unwrap().into_inner();
        assert_eq!(mcap::MessageStream::new(&bytes).unwrap().count(), 0);
    }

    #[test]
    fn a_bad_row_is_named_with_the_output_and_row() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("topic", DataType::Utf8, true),
            Field::new("log_time", DataType::Int64, true),
            Field::new("data", DataType::Binary, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec!["/a", "/a"])),
                Arc::new(arrow_array::Int64Array::from(vec![1, -5])),
                Arc::new(BinaryArray::from(vec![&b"x"[..], b"y"])),
            ],
        )
        .unwrap();
        let mut w = McapWriter::new(
            std::io::Cursor::new(Vec::new()),
            McapWriteOptions::default(),
            "t.mcap".into(),
        );
        let e = w.write_batch(&batch).unwrap_err().to_string();
        assert_eq!(e, "writing MCAP t.mcap: row 2 has a log_time before 1970");
    }
}
