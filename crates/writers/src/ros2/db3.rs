//! [`Db3Writer`]: a ROS 2 bag's SQLite storage, one `.db3` database with the
//! tables rosbag2's `sqlite3` storage plugin creates (schema version 4:
//! `schema`, `metadata`, `topics`, `message_definitions`, `messages` and the
//! `timestamp_idx` index), and the bag's `metadata.yaml` text
//! ([`BagMetadata::to_yaml`]).
//!
//! [`Db3Writer`] inserts messages as they come, committing every
//! [`COMMIT_ROWS`] rows: its memory is SQLite's page cache, whatever the
//! number of messages. The database is written without a journal (it is a
//! new file nobody else reads until it is complete) and is closed in the
//! default rollback-journal mode, so readers that open it immutable (the
//! Python `rosbags` reader) see every row.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, params};

use logsql_readers::formats::ros2::bag_meta::{BagMetadata, FileInfo, TopicInfo};
use logsql_readers::model::Channel;

use crate::error::{Error, Result};

/// Rows inserted per transaction.
pub const COMMIT_ROWS: u64 = 10_000;

/// The bag metadata version written: rosbag2's (Jazzy) and `rosbags`'
/// version 8, whose QoS profiles are the YAML text the `topics` table holds.
pub const METADATA_VERSION: u64 = 8;

/// The tables of rosbag2's SQLite storage, schema version 4.
const SCHEMA: &str = "
CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL, metadata TEXT NOT NULL);
CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
  serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL,
  type_description_hash TEXT NOT NULL);
CREATE TABLE message_definitions(id INTEGER PRIMARY KEY, topic_type TEXT NOT NULL,
  encoding TEXT NOT NULL, encoded_message_definition TEXT NOT NULL,
  type_description_hash TEXT NOT NULL);
CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
  timestamp INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX timestamp_idx ON messages (timestamp ASC);
";

/// An SQLite error on the database `path`.
fn sqlite(path: &Path, e: rusqlite::Error) -> Error {
    Error::Write(format!("{}: {e}", path.display()))
}

/// One topic of the bag: a `topics` row, and its type's definition for
/// `message_definitions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Db3Topic {
    /// `name`.
    pub name: String,
    /// `type` (`std_msgs/msg/String`).
    pub type_name: String,
    /// `serialization_format` (`cdr`).
    pub serialization_format: String,
    /// `offered_qos_profiles`, YAML text (empty when unknown).
    pub offered_qos_profiles: String,
    /// `type_description_hash` (empty when unknown).
    pub type_description_hash: String,
    /// The type's definition: (`ros2msg` or `ros2idl`, text), where known.
    pub definition: Option<(String, String)>,
}

impl Db3Topic {
    /// The topic of a channel as the readers describe it (the ROS 2
    /// reader's: type, serialization format, `offered_qos_profiles` and
    /// `type_description_hash` metadata, the stored definition; an MCAP
    /// reader's channels of a ROS 2 bag the same, with `topic_type_hash`).
    pub fn from_channel(channel: &Channel) -> Self {
        let meta = |k: &str| channel.metadata.get(k).cloned().unwrap_or_default();
        let definition = match (&channel.schema_encoding, &channel.schema) {
            (Some(enc), Some(text)) if enc == "ros2msg" || enc == "ros2idl" => {
                Some((enc.clone(), String::from_utf8_lossy(text).into_owned()))
            }
            _ => None,
        };
        Self {
            name: channel.topic.clone(),
            type_name: channel.message_type.clone().unwrap_or_default(),
            serialization_format: channel.message_encoding.clone(),
            offered_qos_profiles: meta("offered_qos_profiles"),
            // rosbag2's MCAP storage names it `topic_type_hash`.
            type_description_hash: channel
                .metadata
                .get("type_description_hash")
                .or_else(|| channel.metadata.get("topic_type_hash"))
                .cloned()
                .unwrap_or_default(),
            definition,
        }
    }
}

/// Per topic: its row and what was written to it.
#[derive(Debug)]
struct Written {
    topic: Db3Topic,
    count: u64,
}

/// Writes one `.db3`: [`Db3Writer::add_topic`], [`Db3Writer::write`] per
/// message, then [`Db3Writer::finish`].
#[derive(Debug)]
pub struct Db3Writer {
    conn: Connection,
    path: PathBuf,
    topics: Vec<Written>,
    /// First and last timestamp written.
    times: Option<(i64, i64)>,
    messages: u64,
}

impl Db3Writer {
    /// Creates the database at `path` (which must not exist) with the
    /// rosbag2 tables; `ros_distro` goes into the `schema` table.
    pub fn create(path: &Path, ros_distro: &str) -> Result<Self> {
        let err = |e| sqlite(path, e);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        conn.execute(
            "INSERT INTO schema(schema_version, ros_distro) VALUES (4, ?1)",
            params![ros_distro],
        )
        .map_err(err)?;
        conn.execute_batch("BEGIN").map_err(err)?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            topics: Vec::new(),
            times: None,
            messages: 0,
        })
    }

    fn err(&self, e: rusqlite::Error) -> Error {
        sqlite(&self.path, e)
    }

    /// Adds a topic (and its type's definition, once per type) and returns
    /// its id.
    pub fn add_topic(&mut self, topic: Db3Topic) -> Result<i64> {
        let id = self.topics.len() as i64 + 1;
        self.conn
            .execute(
                "INSERT INTO topics(id, name, type, serialization_format, offered_qos_profiles, \
                 type_description_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    topic.name,
                    topic.type_name,
                    topic.serialization_format,
                    topic.offered_qos_profiles,
                    topic.type_description_hash
                ],
            )
            .map_err(|e| self.err(e))?;
        let known = self
            .topics
            .iter()
            .any(|w| w.topic.type_name == topic.type_name && w.topic.definition.is_some());
        if let (Some((encoding, text)), false) = (&topic.definition, known) {
            self.conn
                .execute(
                    "INSERT INTO message_definitions(topic_type, encoding, \
                     encoded_message_definition, type_description_hash) VALUES (?1, ?2, ?3, ?4)",
                    params![topic.type_name, encoding, text, topic.type_description_hash],
                )
                .map_err(|e| self.err(e))?;
        }
        self.topics.push(Written { topic, count: 0 });
        Ok(id)
    }

    /// Inserts one message of topic `topic_id` at `timestamp` (ns).
    pub fn write(&mut self, topic_id: i64, timestamp: i64, data: &[u8]) -> Result<()> {
        self.write_all([(topic_id, timestamp, data)])
    }

    /// Inserts messages `(topic_id, timestamp ns, data)` in order, with one
    /// prepared statement.
    pub fn write_all<'a>(
        &mut self,
        rows: impl IntoIterator<Item = (i64, i64, &'a [u8])>,
    ) -> Result<()> {
        let path = &self.path;
        let err = |e| sqlite(path, e);
        let mut stmt = self
            .conn
            .prepare("INSERT INTO messages(topic_id, timestamp, data) VALUES (?1, ?2, ?3)")
            .map_err(err)?;
        for (topic_id, timestamp, data) in rows {
            let Some(w) = usize::try_from(topic_id - 1)
                .ok()
                .and_then(|i| self.topics.get_mut(i))
            else {
                return Err(Error::Write(format!("topic {topic_id} was never added")));
            };
            stmt.execute(params![topic_id, timestamp, data])
                .map_err(err)?;
            w.count += 1;
            self.times = Some(match self.times {
                Some((s, e)) => (s.min(timestamp), e.max(timestamp)),
                None => (timestamp, timestamp),
            });
            self.messages += 1;
            if self.messages.is_multiple_of(COMMIT_ROWS) {
                self.conn.execute_batch("COMMIT; BEGIN").map_err(err)?;
            }
        }
        Ok(())
    }

    /// Messages written so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// The bag's metadata as `metadata.yaml` states it, for this database
    /// named `file_name` in the bag directory.
    pub fn metadata(&self, file_name: &str, ros_distro: &str) -> BagMetadata {
        let (start, end) = self.times.unwrap_or((0, 0));
        let start = start.max(0) as u64;
        let duration = (end.max(0) as u64).saturating_sub(start);
        BagMetadata {
            version: Some(METADATA_VERSION),
            storage_identifier: "sqlite3".into(),
            relative_file_paths: vec![file_name.to_string()],
            duration_ns: Some(duration),
            starting_time_ns: Some(start),
            message_count: Some(self.messages),
            topics: self
                .topics
                .iter()
                .map(|w| TopicInfo {
                    name: w.topic.name.clone(),
                    type_name: w.topic.type_name.clone(),
                    serialization_format: w.topic.serialization_format.clone(),
                    offered_qos_profiles: w.topic.offered_qos_profiles.clone(),
                    type_description_hash: w.topic.type_description_hash.clone(),
                    message_count: Some(w.count),
                })
                .collect(),
            compression_format: String::new(),
            compression_mode: String::new(),
            files: vec![FileInfo {
                path: file_name.to_string(),
                starting_time_ns: Some(start),
                duration_ns: Some(duration),
                message_count: Some(self.messages),
            }],
            ros_distro: Some(ros_distro.to_string()),
            custom_data: BTreeMap::new(),
        }
    }

    /// Stores `metadata` in the `metadata` table (as rosbag2 does when it
    /// closes a bag), commits and closes the database, and syncs it to disk.
    pub fn finish(self, metadata: &BagMetadata) -> Result<()> {
        let Self { conn, path, .. } = self;
        let err = |e| sqlite(&path, e);
        conn.execute(
            "INSERT INTO metadata(metadata_version, metadata) VALUES (?1, ?2)",
            params![
                metadata.version.unwrap_or(METADATA_VERSION) as i64,
                metadata.info_yaml()
            ],
        )
        .map_err(err)?;
        conn.execute_batch("COMMIT; PRAGMA optimize;")
            .map_err(err)?;
        conn.close().map_err(|(_, e)| err(e))?;
        std::fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(&path, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use logsql_readers::formats::FormatReader;
    use logsql_readers::formats::ros2::Ros2Format;
    use logsql_readers::io::FileReader;
    use logsql_readers::limits::Limits;
    use logsql_readers::model::{Flow, Selection};

    #[test]
    fn a_written_bag_reads_back_with_its_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("out_0.db3");
        let mut w = Db3Writer::create(&db, "").unwrap();
        let qos = "- history: 3\n  depth: 0".to_string();
        let a = w
            .add_topic(Db3Topic {
                name: "/a".into(),
                type_name: "std_msgs/msg/String".into(),
                serialization_format: "cdr".into(),
                offered_qos_profiles: qos.clone(),
                type_description_hash: String::new(),
                definition: Some(("ros2msg".into(), "string data".into())),
            })
            .unwrap();
        let b = w
            .add_topic(Db3Topic {
                name: "/b".into(),
                type_name: "std_msgs/msg/String".into(),
                serialization_format: "cdr".into(),
                ..Default::default()
            })
            .unwrap();
        for i in 0..5i64 {
            w.write(if i % 2 == 0 { a } else { b }, 100 + i, &[i as u8; 3])
                .unwrap();
        }
        assert!(matches!(
            w.write(9, 0, b""),
            Err(Error::Write(m)) if m == "topic 9 was never added"
        ));
        let meta = w.metadata("out_0.db3", "");
        w.finish(&meta).unwrap();
        std::fs::write(dir.path().join("metadata.yaml"), meta.to_yaml()).unwrap();
        let parsed =
            BagMetadata::parse(&std::fs::read_to_string(dir.path().join("metadata.yaml")).unwrap())
                .unwrap();
        assert_eq!(parsed, meta);
        assert_eq!(parsed.message_count, Some(5));
        assert_eq!(parsed.duration_ns, Some(4));
        assert_eq!(parsed.topics[0].offered_qos_profiles, qos);
        assert_eq!(parsed.topics[1].message_count, Some(2));

        let file = FileReader::open(&db).unwrap();
        let report = logsql_readers::doctor::check(&Ros2Format, &file, &Limits::default()).unwrap();
        assert!(report.healthy(), "{report:?}");
        assert_eq!(report.messages, 5);
        let summary = Ros2Format
            .summary_with_limits(&file, &Limits::default())
            .unwrap();
        assert_eq!(
            Db3Topic::from_channel(&summary.channels[&1]).offered_qos_profiles,
            qos
        );
        let mut got = Vec::new();
        for chunk in &summary.chunks {
            let mut sink = |m: logsql_readers::model::Message<'_>| {
                got.push((m.channel.topic.clone(), m.log_time, m.data.to_vec()));
                Flow::Continue
            };
            Ros2Format
                .read_chunk(&file, &summary, chunk, &Selection::all(), &mut sink)
                .unwrap();
        }
        assert_eq!(got.len(), 5);
        assert_eq!(got[1], ("/b".to_string(), 101, vec![1u8; 3]));
    }

    #[test]
    fn rows_past_a_commit_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("big_0.db3");
        let mut w = Db3Writer::create(&db, "").unwrap();
        let t = w.add_topic(Db3Topic::default()).unwrap();
        let n = 2 * COMMIT_ROWS as i64 + 3;
        let data = [7u8];
        w.write_all((0..n).map(|i| (t, i, &data[..]))).unwrap();
        let meta = w.metadata("big_0.db3", "");
        w.finish(&meta).unwrap();
        let conn = Connection::open(&db).unwrap();
        let count: i64 = conn
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, n);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "delete");
    }
}
