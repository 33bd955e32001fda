//! Writing ROS1 bags from record batches: [`BagBatchWriter`], the
//! [`FormatWriter`] behind `COPY (...) TO 'x.bag'` (or `STORED AS BAG`) and
//! `logsql recover --to bag`.
//!
//! Rows need `topic`, `log_time` and `data` ([`crate::messages`]). Each
//! (topic, message type) becomes one connection, whose header (type,
//! `md5sum`, message definition, `callerid`, `latching`, ...) is that of the
//! channel with that topic and type in the row's source file (its `file`
//! column, a file the query read: [`FormatWriter::add_source`]). A bag
//! connection needs a ROS1 connection header: a row without one (its file
//! was not read, or its channel is of another encoding) is an error naming
//! the output, the row and its topic. Messages are stored in the order the
//! rows come.
//!
//! - [`file`]: the bag file itself ([`BagWriter`], records and index);
//! - [`connections`]: which connection a source channel becomes.

pub mod connections;
pub mod file;

use std::collections::HashMap;
use std::io::{Seek, Write};

use arrow_array::RecordBatch;
use logsql_readers::model::Channel;

use crate::error::{Error, Result};
use crate::format_writer::{FormatWriter, Progress};
use crate::mcap::options::parse_bytes;
use crate::messages::{Messages, Report, Routes};
use crate::source::SourceFile;
pub use connections::{check_channels, connection_of};
pub use file::{BagConnection, BagWriter, DEFAULT_CHUNK_SIZE};

/// What the rows are written as, in messages.
const WHAT: &str = "writing ROS1 bag";

/// The `COPY ... OPTIONS (...)` keys of bag output.
pub const OPTION_KEYS: &[&str] = &["chunk_size", "compression"];

/// How the bag is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BagWriteOptions {
    /// Uncompressed chunk size in bytes (default `rosbag record`'s 768 KiB).
    pub chunk_size: usize,
    /// Connections made before any row, one per (topic, type) of these
    /// channels, the first one listed winning (`logsql recover`: every
    /// channel of the input, with or without messages left).
    pub channels: Vec<Channel>,
    /// Rows whose connection cannot be made are left out and counted
    /// instead of failing the write (`logsql recover`: messages whose
    /// connection record was lost).
    pub leave_out: bool,
}

impl Default for BagWriteOptions {
    fn default() -> Self {
        Self {
            chunk_size: DEFAULT_CHUNK_SIZE,
            channels: Vec::new(),
            leave_out: false,
        }
    }
}

impl BagWriteOptions {
    /// The options of `COPY ... OPTIONS (...)` (keys with or without the
    /// `format.` prefix); unknown keys are refused with the known ones
    /// listed. Chunks are stored uncompressed: `compression` takes `none`
    /// only.
    pub fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            match key.strip_prefix("format.").unwrap_or(key) {
                "chunk_size" => {
                    let n = parse_bytes("ROS1 bag", "chunk_size", value)?;
                    out.chunk_size = usize::try_from(n).unwrap_or(usize::MAX);
                }
                "compression" => match value.trim().to_ascii_lowercase().as_str() {
                    "none" | "uncompressed" | "" => {}
                    other => {
                        return Err(Error::Options(format!(
                            "ROS1 bag compression '{other}' is not supported: chunks are written uncompressed (none)"
                        )));
                    }
                },
                _ => {
                    return Err(Error::Options(format!(
                        "unknown option '{key}' for ROS1 bag output (known: {})",
                        OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }
}

/// A ROS1 bag written from record batches.
pub struct BagBatchWriter<W: Write + Seek> {
    bag: BagWriter<W>,
    routes: Routes<u32>,
    leave_out: bool,
    name: String,
    rows: u64,
    left_out: u64,
}

impl<W: Write + Seek> BagBatchWriter<W> {
    /// A bag into `out` (an empty file), named `name` in errors. A channel of
    /// `options.channels` that cannot be a connection refuses the write.
    pub fn new(out: W, options: BagWriteOptions, name: String) -> Result<Self> {
        let bag = BagWriter::new(out)
            .map_err(|e| Error::Write(format!("{WHAT} {name}: {e}")))?
            .with_chunk_size(options.chunk_size);
        let mut w = Self {
            bag,
            routes: Routes::new(),
            leave_out: options.leave_out,
            name,
            rows: 0,
            left_out: 0,
        };
        let bag = &mut w.bag;
        w.routes.declare(&options.channels, WHAT, &w.name, |c| {
            Ok(connection_of(c)?.map(|conn| Ok(bag.add_connection(conn))))
        })?;
        Ok(w)
    }
}

impl<W: Write + Seek + Send> FormatWriter for BagBatchWriter<W> {
    type Report = Report;

    fn add_source(&mut self, name: &str, source: Option<&SourceFile>) -> Result<()> {
        self.routes
            .add_source(name, source.map(|s| s.channels.clone()));
        Ok(())
    }

    fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let m = Messages::of(batch, WHAT)?;
        for i in 0..m.len() {
            let n = self.rows + self.left_out;
            let row = m.row(i, WHAT, &self.name, n)?;
            let (bag, name, leave_out) = (&mut self.bag, &self.name, self.leave_out);
            let refuse = |why: String| {
                Error::Write(format!(
                    "{WHAT} {name}: row {} (topic {:?}) {why}",
                    n + 1,
                    row.topic
                ))
            };
            let id = self.routes.route(&row, |channel| {
                let Some(channel) = channel else {
                    if leave_out {
                        return Ok(None);
                    }
                    let file = match row.file {
                        Some(f) => format!("from {f}, which the query did not read"),
                        None => "without a file column".to_string(),
                    };
                    return Err(refuse(format!(
                        "has no ROS1 connection header: it comes {file} (a bag is written from rows of ROS1 bags or ros1 MCAP files the same query reads)"
                    )));
                };
                match connection_of(channel) {
                    Ok(Some(conn)) => Ok(Some(bag.add_connection(conn))),
                    Ok(None) if leave_out => Ok(None),
                    Ok(None) => Err(refuse(
                        "has no message type or md5sum for its connection header".into(),
                    )),
                    Err(why) => Err(refuse(format!("cannot be written: {why}"))),
                }
            })?;
            let Some(id) = id else {
                self.left_out += 1;
                continue;
            };
            self.bag
                .write(id, row.log_time, row.data)
                .map_err(|e| refuse(e.to_string()))?;
            self.rows += 1;
        }
        Ok(())
    }

    fn progress(&self) -> Progress {
        Progress {
            rows: self.rows,
            groups: 0,
        }
    }

    fn finish(self) -> Result<Report> {
        let name = self.name;
        let mut out = self
            .bag
            .finish()
            .map_err(|e| Error::Write(format!("{WHAT} {name}: {e}")))?;
        out.flush().map_err(|e| Error::io(&name, e))?;
        Ok(Report {
            rows: self.rows,
            left_out: self.left_out,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use arrow_array::{BinaryArray, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    fn channel(topic: &str, md5: bool) -> Channel {
        Channel {
            id: 1,
            topic: topic.into(),
            message_type: Some("std_msgs/String".into()),
            message_encoding: "ros1".into(),
            schema_encoding: Some("ros1msg".into()),
            // Without an md5sum, the definition is lost too (nothing to compute it from).
            schema: md5.then(|| Arc::from(&b"string data\n"[..])),
            metadata: if md5 {
                [(
                    "md5sum".to_string(),
                    "992ce8a1687cec8c8bd883ec73ca41d1".to_string(),
                )]
                .into()
            } else {
                Default::default()
            },
        }
    }

    fn batch(topics: &[&str], file: &str) -> RecordBatch {
        let n = topics.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("topic", DataType::Utf8, true),
            Field::new("log_time", DataType::Int64, true),
            Field::new("data", DataType::Binary, true),
            Field::new("message_type", DataType::Utf8, true),
            Field::new("file", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(topics.to_vec())),
                Arc::new(Int64Array::from_iter_values(0..n as i64)),
                Arc::new(BinaryArray::from(vec![&b"m"[..]; n])),
                Arc::new(StringArray::from(vec!["std_msgs/String"; n])),
                Arc::new(StringArray::from(vec![file; n])),
            ],
        )
        .unwrap()
    }

    fn source(channels: Vec<Channel>) -> SourceFile {
        SourceFile {
            format: "bag".into(),
            profile: "ros1".into(),
            channels,
            ..Default::default()
        }
    }

    #[test]
    fn rows_get_their_source_connection_and_unknown_ones_are_refused() {
        let mut w = BagBatchWriter::new(
            std::io::Cursor::new(Vec::new()),
            BagWriteOptions::default(),
            "out.bag".into(),
        )
        .unwrap();
        w.add_source("in.bag", Some(&source(vec![channel("/a", true)])))
            .unwrap();
        w.add_source("other.parquet", None).unwrap();
        w.write_batch(&batch(&["/a", "/a"], "in.bag")).unwrap();
        assert_eq!(w.progress().rows, 2);
        let e = w
            .write_batch(&batch(&["/b"], "other.parquet"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "writing ROS1 bag out.bag: row 3 (topic \"/b\") has no ROS1 connection header: it comes from other.parquet, which the query did not read (a bag is written from rows of ROS1 bags or ros1 MCAP files the same query reads)"
        );
        let report = w.finish().unwrap();
        assert_eq!(
            report,
            Report {
                rows: 2,
                left_out: 0
            }
        );
    }

    #[test]
    fn declared_channels_are_connections_and_unwritable_rows_are_left_out() {
        let options = BagWriteOptions {
            channels: vec![channel("/a", true), channel("/lost", false)],
            leave_out: true,
            ..Default::default()
        };
        let mut w =
            BagBatchWriter::new(std::io::Cursor::new(Vec::new()), options, "o.bag".into()).unwrap();
        w.write_batch(&batch(&["/a", "/lost", "/x"], "f")).unwrap();
        assert_eq!(
            w.finish().unwrap(),
            Report {
                rows: 1,
                left_out: 2
            }
        );
        let mut cdr = channel("/c", true);
        cdr.message_encoding = "cdr".into();
        let options = BagWriteOptions {
            channels: vec![cdr],
            ..Default::default()
        };
        let e = BagBatchWriter::new(std::io::Cursor::new(Vec::new()), options, "o.bag".into())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("a ROS1 bag stores only ros1 messages"), "{e}");
    }

    #[test]
    fn options_parse_and_unknown_keys_are_refused() {
        let map = |kv: &[(&str, &str)]| -> HashMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let o = BagWriteOptions::from_map(&map(&[("format.chunk_size", "4096")])).unwrap();
        assert_eq!(o.chunk_size, 4096);
        let e = BagWriteOptions::from_map(&map(&[("format.level", "3")]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "unknown option 'format.level' for ROS1 bag output (known: chunk_size, compression)"
        );
        let e = BagWriteOptions::from_map(&map(&[("compression", "lz4")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("chunks are written uncompressed"), "{e}");
    }
}
