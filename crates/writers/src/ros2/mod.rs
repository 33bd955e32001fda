//! Writing ROS 2 bag directories (SQLite storage) from record batches:
//! [`Ros2BagWriter`], the [`FormatWriter`] behind `COPY (...) TO 'dir/'
//! STORED AS DB3` and `logsql recover --to db3`.
//!
//! The directory holds one database, `<dir name>_0.db3` (rosbag2's
//! `sqlite3` storage), and the bag's `metadata.yaml`. Rows need `topic`,
//! `log_time` and `data` ([`crate::messages`]). Each (topic, message type)
//! becomes one topic, with the type, QoS profiles, type hash and definition
//! of the channel with that topic and type in the row's source file (a file
//! the query read: [`FormatWriter::add_source`]); a row of a file that was
//! not read gets a topic from its own `message_type` and
//! `message_encoding`, without QoS profiles or definition. A ROS 2 bag
//! holds `cdr` messages: a row of another encoding is an error naming the
//! output, the row and its topic.
//!
//! - [`db3`]: the database itself ([`Db3Writer`]);
//! - [`topics`]: which topic a source channel becomes.

pub mod db3;
pub mod topics;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use logsql_readers::model::Channel;

use crate::error::{Error, Result};
use crate::format_writer::{FormatWriter, Progress};
use crate::messages::{Messages, Report, Routes};
use crate::source::SourceFile;
pub use db3::{Db3Topic, Db3Writer};
pub use topics::{check_channels, topic_of};

/// What the rows are written as, in messages.
const WHAT: &str = "writing ROS 2 bag";

/// The `COPY ... OPTIONS (...)` keys of ROS 2 bag output.
pub const OPTION_KEYS: &[&str] = &["ros_distro"];

/// How the ROS 2 bag is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ros2WriteOptions {
    /// The ROS distribution recorded in the database and `metadata.yaml`
    /// (default: none stated).
    pub ros_distro: String,
    /// Topics made before any row, one per (topic, type) of these channels,
    /// the first one listed winning (`logsql recover`: every channel of the
    /// input, with or without messages left).
    pub channels: Vec<Channel>,
    /// Rows whose topic cannot be made are left out and counted instead of
    /// failing the write (`logsql recover`).
    pub leave_out: bool,
}

impl Ros2WriteOptions {
    /// The options of `COPY ... OPTIONS (...)` (keys with or without the
    /// `format.` prefix); unknown keys are refused with the known ones listed.
    pub fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            match key.strip_prefix("format.").unwrap_or(key) {
                "ros_distro" => out.ros_distro = value.trim().to_string(),
                _ => {
                    return Err(Error::Options(format!(
                        "unknown option '{key}' for ROS 2 bag output (known: {})",
                        OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }
}

/// A ROS 2 bag directory written from record batches.
pub struct Ros2BagWriter {
    db: Db3Writer,
    dir: PathBuf,
    db_name: String,
    ros_distro: String,
    routes: Routes<i64>,
    leave_out: bool,
    name: String,
    rows: u64,
    left_out: u64,
}

impl Ros2BagWriter {
    /// A bag in the directory `dir` (empty; published by the caller under
    /// the name `bag_name`, which names its database), named `name` in
    /// errors. A channel of `options.channels` that cannot be a topic refuses
    /// the write.
    pub fn create(
        dir: &Path,
        bag_name: &str,
        options: Ros2WriteOptions,
        name: String,
    ) -> Result<Self> {
        let db_name = format!("{bag_name}_0.db3");
        let db = Db3Writer::create(&dir.join(&db_name), &options.ros_distro)?;
        let mut w = Self {
            db,
            dir: dir.to_path_buf(),
            db_name,
            ros_distro: options.ros_distro,
            routes: Routes::new(),
            leave_out: options.leave_out,
            name,
            rows: 0,
            left_out: 0,
        };
        let db = &mut w.db;
        w.routes.declare(&options.channels, WHAT, &w.name, |c| {
            Ok(topic_of(c)?.map(|topic| db.add_topic(topic)))
        })?;
        Ok(w)
    }
}

impl FormatWriter for Ros2BagWriter {
    type Report = Report;

    fn add_source(&mut self, name: &str, source: Option<&SourceFile>) -> Result<()> {
        self.routes
            .add_source(name, source.map(|s| s.channels.clone()));
        Ok(())
    }

    fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let m = Messages::of(batch, WHAT)?;
        let mut rows: Vec<(i64, i64, &[u8])> = Vec::with_capacity(m.len());
        let mut left_out = 0;
        for i in 0..m.len() {
            let n = self.rows + self.left_out + left_out + rows.len() as u64;
            let row = m.row(i, WHAT, &self.name, n)?;
            let (db, name, leave_out) = (&mut self.db, &self.name, self.leave_out);
            let refuse = |why: String| {
                Error::Write(format!(
                    "{WHAT} {name}: row {} (topic {:?}) {why}",
                    n + 1,
                    row.topic
                ))
            };
            let id = self.routes.route(&row, |channel| {
                let topic = match channel {
                    Some(c) => match topic_of(c) {
                        Ok(t) => t,
                        Err(why) => return Err(refuse(format!("cannot be written: {why}"))),
                    },
                    // A file the query did not read: the row's own columns.
                    None if row.message_encoding == "cdr" => row.message_type.map(|ty| Db3Topic {
                        name: row.topic.to_string(),
                        type_name: ty.to_string(),
                        serialization_format: "cdr".into(),
                        ..Default::default()
                    }),
                    None if leave_out => None,
                    None => {
                        return Err(refuse(format!(
                            "holds {:?} messages: a ROS 2 bag holds cdr messages",
                            row.message_encoding
                        )));
                    }
                };
                match topic {
                    Some(t) => db.add_topic(t).map(Some),
                    None if leave_out => Ok(None),
                    None => Err(refuse("has no message type for its ROS 2 topic".into())),
                }
            })?;
            match id {
                Some(id) => {
                    let t = i64::try_from(row.log_time)
                        .map_err(|_| refuse("a log_time past what a ROS 2 bag stores".into()))?;
                    rows.push((id, t, row.data));
                }
                None => left_out += 1,
            }
        }
        self.db.write_all(rows.iter().copied())?;
        self.rows += rows.len() as u64;
        self.left_out += left_out;
        Ok(())
    }

    fn progress(&self) -> Progress {
        Progress {
            rows: self.rows,
            groups: 0,
        }
    }

    fn finish(self) -> Result<Report> {
        let metadata = self.db.metadata(&self.db_name, &self.ros_distro);
        self.db.finish(&metadata)?;
        let yaml = self.dir.join("metadata.yaml");
        std::fs::write(&yaml, metadata.to_yaml()).map_err(|e| {
            Error::io(
                format!("{}/metadata.yaml", self.name.trim_end_matches('/')),
                e,
            )
        })?;
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
    use logsql_readers::formats::ros2::BagMetadata;

    fn batch(topics: &[&str], encoding: &str, file: &str) -> RecordBatch {
        let n = topics.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("topic", DataType::Utf8, true),
            Field::new("log_time", DataType::Int64, true),
            Field::new("data", DataType::Binary, true),
            Field::new("message_type", DataType::Utf8, true),
            Field::new("message_encoding", DataType::Utf8, true),
            Field::new("file", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(topics.to_vec())),
                Arc::new(Int64Array::from_iter_values(10..10 + n as i64)),
                Arc::new(BinaryArray::from(vec![&b"m"[..]; n])),
                Arc::new(StringArray::from(vec!["std_msgs/msg/String"; n])),
                Arc::new(StringArray::from(vec![encoding; n])),
                Arc::new(StringArray::from(vec![file; n])),
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_bag_directory_is_written_with_the_source_topics() {
        let dir = tempfile::tempdir().unwrap();
        let qos = "- history: 1\n  depth: 10".to_string();
        let channel = Channel {
            id: 1,
            topic: "/a".into(),
            message_type: Some("std_msgs/msg/String".into()),
            message_encoding: "cdr".into(),
            schema_encoding: Some("ros2msg".into()),
            schema: Some(Arc::from(&b"string data"[..])),
            metadata: [("offered_qos_profiles".to_string(), qos.clone())].into(),
        };
        let mut w = Ros2BagWriter::create(
            dir.path(),
            "out",
            Ros2WriteOptions::default(),
            "out/".into(),
        )
        .unwrap();
        let source = SourceFile {
            format: "ros2".into(),
            channels: vec![channel],
            ..Default::default()
        };
        w.add_source("in.db3", Some(&source)).unwrap();
        w.write_batch(&batch(&["/a", "/a"], "cdr", "in.db3"))
            .unwrap();
        // A file the query did not read: a topic from the row's own columns.
        w.write_batch(&batch(&["/b"], "cdr", "x.parquet")).unwrap();
        let e = w
            .write_batch(&batch(&["/j"], "json", "x.parquet"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "writing ROS 2 bag out/: row 4 (topic \"/j\") holds \"json\" messages: a ROS 2 bag holds cdr messages"
        );
        assert_eq!(
            w.finish().unwrap(),
            Report {
                rows: 3,
                left_out: 0
            }
        );
        let yaml = std::fs::read_to_string(dir.path().join("metadata.yaml")).unwrap();
        let meta = BagMetadata::parse(&yaml).unwrap();
        assert_eq!(meta.relative_file_paths, ["out_0.db3".to_string()]);
        assert_eq!(meta.message_count, Some(3));
        assert_eq!(meta.topics[0].offered_qos_profiles, qos);
        assert_eq!(meta.topics[1].name, "/b");
        assert!(dir.path().join("out_0.db3").is_file());
    }

    #[test]
    fn unknown_options_are_refused() {
        let map: HashMap<String, String> = [("format.x".to_string(), "1".to_string())].into();
        let e = Ros2WriteOptions::from_map(&map).unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown option 'format.x' for ROS 2 bag output (known: ros_distro)"
        );
    }
}
