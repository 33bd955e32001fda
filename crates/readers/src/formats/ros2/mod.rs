//! ROS 2 bags (rosbag2) with SQLite storage (`.db3`): the reader (no
//! DataFusion), on the bundled SQLite through `rusqlite`.
//!
//! A bag is a directory: `metadata.yaml` plus one or more `.db3` databases
//! (`NAME_0.db3`, `NAME_1.db3`, ... when split). Each database is a file of its
//! own for the engine; the directory's `metadata.yaml` (when the database is a
//! local file) adds the bag's facts. Byte-level notes: `shared/specs/rosbag2.md`.
//!
//! [`Ros2Format`] implements [`FormatReader`]:
//!
//! - [`FormatReader::sniff`]: the SQLite header; [`FormatReader::sniff_named`]
//!   also a zstd frame named `*.db3.zstd` (a database compressed whole,
//!   `compression_mode: file`). A SQLite database without the rosbag2 tables
//!   `topics` and `messages` is refused by the summary.
//! - [`FormatReader::summary`] opens the database ([`db`]) and reads `topics`,
//!   `message_definitions` and `schema` where the schema version has them,
//!   `count(*)` and the time bounds (from the `timestamp` index). One channel
//!   per `topics` row: id = topic id, `message_type` = `type`,
//!   `message_encoding` = `serialization_format`, schema = the
//!   `message_definitions` text (`ros2msg`/`ros2idl`) where stored; channel
//!   metadata `offered_qos_profiles`, `type_description_hash`.
//!   **Chunks** are not byte ranges here: the database is split into up to
//!   `MAX_CHUNKS` ranges of about `CHUNK_BYTES` of file each, by
//!   `timestamp` when the timestamp index exists (each chunk then has exact
//!   time bounds for pruning) and by row id otherwise. A chunk's `offset` is
//!   a nominal position proportional to its rank, so the engine's byte-range
//!   partitioning spreads the chunks over its partitions: a large `.db3` is
//!   read in parallel, each partition running its own SQL range query.
//! - [`FormatReader::read_chunk`] runs `SELECT id, topic_id, timestamp[, data]
//!   FROM messages WHERE <chunk range> [AND timestamp BETWEEN ? AND ?] [AND
//!   topic_id IN (...)] ORDER BY timestamp, id`: the selection's time window
//!   and topics are SQLite's to apply (an index range scan), and the pages
//!   SQLite read are reported as bytes read. Per-message zstd
//!   (`compression_mode: message`) is undone per row. `publish_time` and
//!   `sequence` are null (no rosbag2 SQLite schema stores them).
//! - [`FormatReader::schema_of`]: CDR with the `ros2msg` definitions of the
//!   bag (see [`crate::ros2_interfaces`] for bags without them).
//!
//! New bags are written by the `logsql-writers` crate ([`bag_meta`] states
//! their `metadata.yaml`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use rusqlite::types::ValueRef;

use crate::error::{Error, Result};
use crate::io::ReadAt;
use crate::model::{
    Channel, ChannelSchema, ChunkMeta, ChunkRead, Flow, Message, MessageReceiver, MetadataInfo,
    Selection, Summary,
};

use super::FormatReader;

pub mod bag_meta;
pub mod db;
pub mod temp;

pub use bag_meta::BagMetadata;

/// File bytes per chunk (a chunk is a range of the messages table).
pub(crate) const CHUNK_BYTES: u64 = 4 << 20;

/// Most chunks one database is split into.
pub(crate) const MAX_CHUNKS: u64 = 256;

/// The ROS 2 bag (SQLite storage) format.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ros2Format;

/// Which rows of `messages` a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    /// `timestamp BETWEEN lo AND hi`.
    Time(i64, i64),
    /// `id BETWEEN lo AND hi`.
    Rowid(i64, i64),
}

/// First and last `log_time` of a channel.
type Span = (Option<u64>, Option<u64>);

/// What `read_chunk` and `channel_spans` need beyond the summary.
#[derive(Debug)]
struct Private {
    db: db::DbPath,
    /// The file's display name, for errors.
    name: String,
    ranges: Vec<Range>,
    message_compressed: bool,
    page_size: u64,
    /// The timestamp index, where the database has one.
    time_index: Option<String>,
    /// Each channel's first and last time, when the summary counted the
    /// topics itself (they came with the counts).
    spans: Option<BTreeMap<u64, Span>>,
}

fn corrupt(file: &str, message: String) -> Error {
    Error::Corrupt {
        file: file.to_string(),
        format: db::FORMAT,
        offset: 0,
        message,
    }
}

/// The file name of `name` (a path or URL), without a `.zstd` suffix.
fn base_name(name: &str) -> &str {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    base.strip_suffix(".zstd").unwrap_or(base)
}

/// Splits `lo..=hi` into at most `k` consecutive inclusive ranges.
fn split(lo: i64, hi: i64, k: u64) -> Vec<(i64, i64)> {
    let span = (hi as i128 - lo as i128 + 1).max(1);
    let k = (k as i128).clamp(1, span);
    (0..k)
        .map(|i| {
            let a = lo as i128 + span * i / k;
            let b = lo as i128 + span * (i + 1) / k - 1;
            (a as i64, b as i64)
        })
        .collect()
}

impl FormatReader for Ros2Format {
    /// The `messages` table's topic and timestamp columns, read without payloads.
    fn times_in_index(&self) -> bool {
        true
    }

    /// A database with a `-wal` file beside it was not closed by its writer;
    /// one without `metadata.yaml` beside it is a bag `ros2 bag record` never
    /// finished (or a copied database).
    fn doctor(&self, file: &dyn ReadAt, _summary: &Summary, report: &mut crate::doctor::Report) {
        use crate::doctor::{Problem, ProblemKind};
        let path = std::path::Path::new(file.name());
        if !path.is_file() {
            return;
        }
        let wal = format!("{}-wal", file.name());
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            report.add(Problem::new(
                ProblemKind::UnclosedRecording,
                None,
                format!("{wal} is beside it: the writer never closed the database (SQLite replays it on open)"),
            ));
        }
        if path
            .parent()
            .is_some_and(|d| !d.join("metadata.yaml").is_file())
        {
            report.add(Problem::new(
                ProblemKind::UnclosedRecording,
                None,
                "no metadata.yaml beside it: the recorder never finished the bag (or the database was copied alone)",
            ));
        }
    }

    fn reads_by_path(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "ros2"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["db3"]
    }

    fn companion_suffixes(&self) -> &'static [&'static str] {
        &["-wal", "-shm", "-journal"]
    }

    /// Chunks split by timestamp are inclusive `timestamp` ranges, read in
    /// `timestamp, id` order: they enclose their rows and never overlap.
    /// Chunks split by row id (no timestamp index) state no times, so such a
    /// database declares no order.
    fn chunk_times_enclose_messages(&self) -> bool {
        true
    }

    fn sniff(&self, head: &[u8]) -> bool {
        head.starts_with(db::SQLITE_MAGIC)
    }

    fn sniff_named(&self, name: &str, head: &[u8]) -> bool {
        self.sniff(head) || (head.starts_with(db::ZSTD_MAGIC) && name.ends_with(".db3.zstd"))
    }

    /// The temporary copy of a database compressed whole is capped by
    /// `limits.max_chunk_bytes`.
    fn summary_with_limits(
        &self,
        file: &dyn ReadAt,
        limits: &crate::limits::Limits,
    ) -> Result<Summary> {
        let name = file.name();
        let path = db::db_path(file, limits)?;
        let conn = db::connect(&path, name)?;
        let layout = db::layout(&conn, name)?;
        let topics = db::topics(&conn, &layout, name)?;
        let definitions = if layout.definitions {
            db::definitions(&conn, name)?
        } else {
            BTreeMap::new()
        };
        let meta = match file.local_path().and_then(BagMetadata::beside) {
            Some(Ok(m)) => Some(m),
            Some(Err(e)) => {
                log::warn!(
                    "{name}: metadata.yaml beside it is unreadable ({e}); reading the database alone"
                );
                None
            }
            None if layout.metadata_table => {
                db::stored_metadata(&conn).and_then(|t| BagMetadata::parse(&t).ok())
            }
            None => None,
        };
        let base = base_name(name);
        let listed: Vec<&str> = meta
            .iter()
            .flat_map(|m| m.relative_file_paths.iter().map(|p| base_name(p)))
            .collect();
        let first_of_bag = listed.first().is_none_or(|f| *f == base);
        let only_file = listed.len() <= 1 && first_of_bag;
        let message_compressed = meta.as_ref().is_some_and(BagMetadata::message_compressed);

        let mut channels = BTreeMap::new();
        for t in &topics {
            let mut metadata = BTreeMap::new();
            if let Some(q) = &t.qos {
                metadata.insert("offered_qos_profiles".to_string(), q.clone());
            }
            if let Some(h) = t.type_hash.as_ref().filter(|h| !h.is_empty()) {
                metadata.insert("type_description_hash".to_string(), h.clone());
            }
            let from_meta = meta
                .as_ref()
                .and_then(|m| m.topics.iter().find(|mt| mt.name == t.name));
            if let Some(mt) = from_meta {
                if !mt.serialization_format.is_empty()
                    && mt.serialization_format != t.serialization_format
                {
                    metadata.insert(
                        "metadata_serialization_format".to_string(),
                        mt.serialization_format.clone(),
                    );
                }
                if t.qos.is_none() && !mt.offered_qos_profiles.is_empty() {
                    metadata.insert(
                        "offered_qos_profiles".to_string(),
                        mt.offered_qos_profiles.clone(),
                    );
                }
            }
            // An empty `ros2msg` text is a type without fields (std_msgs/msg/Empty).
            let def = definitions
                .get(&t.type_name)
                .filter(|(enc, text)| enc != "unknown" && (!text.is_empty() || enc == "ros2msg"));
            channels.insert(
                t.id as u64,
                Channel {
                    id: t.id as u64,
                    topic: t.name.clone(),
                    message_type: Some(t.type_name.clone()),
                    message_encoding: t.serialization_format.clone(),
                    schema_encoding: def.map(|(enc, _)| enc.clone()),
                    schema: def.map(|(_, text)| Arc::from(text.as_bytes())),
                    metadata,
                },
            );
        }

        // With the timestamp index: count(*) walks the (small) index, min and
        // max are one index seek each. Without it: one pass over the table.
        let (count, start, end) = if layout.time_index.is_some() {
            let count = db::aggregate(&conn, "count(*)", name)?.unwrap_or(0);
            let (start, end) = if count > 0 {
                (
                    db::aggregate(&conn, "min(timestamp)", name)?,
                    db::aggregate(&conn, "max(timestamp)", name)?,
                )
            } else {
                (None, None)
            };
            (count, start, end)
        } else {
            db::count_and_bounds(&conn, name)?
        };
        let count = count.max(0) as u64;
        // Per-topic counts from metadata.yaml (or the copy the database
        // stores): only for a bag of this one file, and only when they add up
        // to the rows the database holds. Else SQLite counts them itself, in
        // one pass over the table's pages (no payload overflow pages), with
        // each topic's first and last time on the way.
        let stated = meta.as_ref().filter(|_| only_file).and_then(|m| {
            let mut counts = BTreeMap::new();
            for t in &topics {
                let mt = m.topics.iter().find(|mt| mt.name == t.name)?;
                counts.insert(t.id as u64, mt.message_count?);
            }
            (counts.values().sum::<u64>() == count).then_some(counts)
        });
        let (channel_message_counts, spans, counts_from) = match stated {
            Some(c) => (Some(c), None, "metadata.yaml".to_string()),
            None if count == 0 => (
                Some(topics.iter().map(|t| (t.id as u64, 0)).collect()),
                Some(BTreeMap::new()),
                "empty database".to_string(),
            ),
            None => {
                let (stats, pages) = db::pages_read_during(&conn, || db::topic_stats(&conn, name));
                let stats = stats?;
                let mut counts: BTreeMap<u64, u64> =
                    topics.iter().map(|t| (t.id as u64, 0)).collect();
                let mut spans = BTreeMap::new();
                for (id, (n, lo, hi)) in stats {
                    counts.insert(id as u64, n.max(0) as u64);
                    spans.insert(id as u64, (Some(lo.max(0) as u64), Some(hi.max(0) as u64)));
                }
                (
                    Some(counts),
                    Some(spans),
                    format!("counted by SQLite ({pages} pages read)"),
                )
            }
        };

        let file_size = file.size();
        let k = (file_size / CHUNK_BYTES + 1).clamp(1, MAX_CHUNKS);
        let ranges: Vec<Range> = match (count, start, end, layout.time_index.is_some()) {
            (0, ..) => vec![],
            (_, Some(lo), Some(hi), true) => split(lo, hi, k)
                .into_iter()
                .map(|(a, b)| Range::Time(a, b))
                .collect(),
            _ => {
                let lo = db::aggregate(&conn, "min(id)", name)?.unwrap_or(0);
                let hi = db::aggregate(&conn, "max(id)", name)?.unwrap_or(0);
                split(lo, hi, k)
                    .into_iter()
                    .map(|(a, b)| Range::Rowid(a, b))
                    .collect()
            }
        };
        let n = ranges.len() as u64;
        let offset = |i: u64| i * file_size / n.max(1);
        let single_channels = channel_message_counts.as_ref().map(|c| {
            c.iter()
                .filter(|(_, n)| **n > 0)
                .map(|(id, _)| *id)
                .collect::<Vec<_>>()
        });
        let chunks: Vec<ChunkMeta> = ranges
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let (start_time, end_time) = match r {
                    Range::Time(a, b) => (Some((*a).max(0) as u64), Some((*b).max(0) as u64)),
                    Range::Rowid(..) => (None, None),
                };
                let length = offset(i as u64 + 1) - offset(i as u64);
                ChunkMeta {
                    index: i,
                    offset: offset(i as u64),
                    length,
                    start_time,
                    end_time,
                    message_count: (n == 1).then_some(count),
                    channels: single_channels.clone().filter(|_| n == 1),
                    compression: if message_compressed {
                        "zstd".into()
                    } else {
                        String::new()
                    },
                    compressed_size: length,
                    uncompressed_size: None,
                }
            })
            .collect();

        let mut properties = vec![("storage".to_string(), "sqlite3".to_string())];
        if let Some((version, distro)) = &layout.schema {
            properties.push(("schema_version".into(), version.to_string()));
            properties.push(("ros_distro".into(), distro.clone()));
        }
        properties.push((
            "timestamp_index".into(),
            layout.time_index.is_some().to_string(),
        ));
        properties.push(("page_size".into(), layout.page_size.to_string()));
        properties.push(("topic_counts".into(), counts_from));
        if path.copied {
            properties.push(("read_from".into(), "temporary copy".into()));
        }
        let mut metadata = Vec::new();
        if let Some(m) = meta.as_ref().filter(|_| first_of_bag) {
            metadata.push(MetadataInfo {
                offset: None,
                name: "rosbag2".into(),
                metadata: m.to_map(),
            });
            for t in &m.topics {
                let mut map = BTreeMap::from([
                    ("topic".to_string(), t.name.clone()),
                    ("type".to_string(), t.type_name.clone()),
                    (
                        "serialization_format".to_string(),
                        t.serialization_format.clone(),
                    ),
                    (
                        "offered_qos_profiles".to_string(),
                        t.offered_qos_profiles.clone(),
                    ),
                ]);
                if let Some(c) = t.message_count {
                    map.insert("message_count".into(), c.to_string());
                }
                if !t.type_description_hash.is_empty() {
                    map.insert(
                        "type_description_hash".into(),
                        t.type_description_hash.clone(),
                    );
                }
                metadata.push(MetadataInfo {
                    offset: None,
                    name: "rosbag2.topic".into(),
                    metadata: map,
                });
            }
        }
        Ok(Summary {
            format: "ros2",
            file_size,
            channels,
            chunks,
            indexed: layout.time_index.is_some(),
            message_count: Some(count),
            channel_message_counts,
            start_time: start.map(|t| t.max(0) as u64),
            end_time: end.map(|t| t.max(0) as u64),
            attachments: vec![],
            metadata,
            properties,
            damage: None,
            private: Some(Arc::new(Private {
                db: path,
                name: name.to_string(),
                ranges,
                message_compressed,
                page_size: layout.page_size,
                time_index: layout.time_index.clone(),
                spans,
            })),
        })
    }

    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        sel: &Selection,
        receiver: &mut dyn MessageReceiver,
    ) -> Result<ChunkRead> {
        let name = file.name();
        let private: &Private = summary
            .private()
            .ok_or_else(|| Error::Invalid(format!("{name}: not a ros2 summary")))?;
        let range = summary
            .chunk_position(chunk)
            .and_then(|i| private.ranges.get(i))
            .ok_or_else(|| Error::Invalid(format!("{name}: no chunk at {}", chunk.offset)))?;
        let mut read = ChunkRead::default();
        let mut conds = vec![match range {
            Range::Time(a, b) => format!("timestamp BETWEEN {a} AND {b}"),
            Range::Rowid(a, b) => format!("id BETWEEN {a} AND {b}"),
        }];
        if let Some((lo, hi)) = sel.time {
            let c = |t: u64| i64::try_from(t).unwrap_or(i64::MAX);
            conds.push(format!("timestamp BETWEEN {} AND {}", c(lo), c(hi)));
        }
        if sel.topics.is_some() {
            let ids: Vec<String> = summary
                .channels
                .values()
                .filter(|c| sel.wants_topic(&c.topic))
                .map(|c| (c.id as i64).to_string())
                .collect();
            if ids.is_empty() {
                read.skipped = true;
                return Ok(read);
            }
            conds.push(format!("topic_id IN ({})", ids.join(",")));
        }
        let sql = format!(
            "SELECT id, topic_id, timestamp{} FROM messages WHERE {} ORDER BY timestamp, id",
            if sel.payload { ", data" } else { "" },
            conds.join(" AND ")
        );
        let conn = db::connect(&private.db, name)?;
        let mut overflow = 0;
        let (result, pages) = db::pages_read_during(&conn, || {
            deliver(
                &conn,
                &sql,
                name,
                summary,
                sel,
                private,
                receiver,
                &mut read,
                &mut overflow,
            )
        });
        file.note_external_read((pages + overflow) * private.page_size);
        result.map(|()| read)
    }

    /// From the summary when it counted the topics itself; else, with the
    /// timestamp index, each topic's first and last row in index order (the
    /// index walked from either end up to the topic's first row there: a
    /// few pages for a topic with messages throughout the recording).
    fn channel_spans(&self, summary: &Summary) -> Option<Result<super::ChannelSpans>> {
        let private: &Private = summary.private()?;
        if let Some(spans) = &private.spans {
            return Some(Ok(spans.clone()));
        }
        let counts = summary.channel_message_counts.as_ref()?;
        let index = private.time_index.as_deref()?;
        let spans = || {
            let conn = db::connect(&private.db, &private.name)?;
            let (out, pages) = db::pages_read_during(&conn, || -> Result<super::ChannelSpans> {
                let mut out = BTreeMap::new();
                for (&id, _) in counts.iter().filter(|&(_, &n)| n > 0) {
                    let (lo, hi) = db::topic_bounds(&conn, index, id as i64, &private.name)?;
                    out.insert(
                        id,
                        (lo.map(|t| t.max(0) as u64), hi.map(|t| t.max(0) as u64)),
                    );
                }
                Ok(out)
            });
            log::debug!(
                "{}: topic first/last times from the timestamp index, {pages} pages read",
                private.name,
            );
            out
        };
        Some(spans())
    }

    /// CDR with the channel's `ros2msg` definition, from the bag's
    /// `message_definitions` or, for bags that store none, from the message
    /// path ([`crate::ros2_interfaces::with_definition`], applied when
    /// `read_topic` is planned). A channel whose serialization format the
    /// bag's `metadata.yaml` contradicts is refused, and one without a
    /// definition is described by why none was found.
    fn schema_of(&self, channel: &Channel) -> ChannelSchema {
        if let Some(f) = channel.metadata.get("metadata_serialization_format") {
            return ChannelSchema::Unavailable(format!(
                "topic {}: metadata.yaml gives serialization format {f:?}, the database {:?}: not decoded",
                channel.topic, channel.message_encoding
            ));
        }
        if channel.message_encoding != "cdr" {
            return ChannelSchema::Unavailable(format!(
                "topic {}: serialization format {:?} is not CDR",
                channel.topic, channel.message_encoding
            ));
        }
        if channel.schema.is_none() {
            return ChannelSchema::Unavailable(
                channel
                    .metadata
                    .get(crate::ros2_interfaces::MISSING_KEY)
                    .cloned()
                    .unwrap_or_else(|| {
                        format!(
                            "no message definition for {}: the bag stores none",
                            channel.message_type.as_deref().unwrap_or("?")
                        )
                    }),
            );
        }
        ChannelSchema::Stored
    }
}

/// Runs `sql` and hands its rows to `receiver`, adding to `overflow` the overflow
/// pages of the blobs read (see [`db::overflow_pages`]).
#[allow(clippy::too_many_arguments)]
fn deliver(
    conn: &rusqlite::Connection,
    sql: &str,
    name: &str,
    summary: &Summary,
    sel: &Selection,
    private: &Private,
    receiver: &mut dyn MessageReceiver,
    read: &mut ChunkRead,
    overflow: &mut u64,
) -> Result<()> {
    let err = |e| db::sql_err(name, e);
    let mut stmt = conn.prepare(sql).map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    let mut unknown: HashSet<i64> = HashSet::new();
    let mut buf = Vec::new();
    while let Some(row) = rows.next().map_err(err)? {
        let id: i64 = row.get(0).map_err(err)?;
        let topic_id: i64 = row.get(1).map_err(err)?;
        let ts: i64 = row.get(2).map_err(err)?;
        let Some(channel) = summary.channels.get(&(topic_id as u64)) else {
            if unknown.insert(topic_id) {
                return Err(corrupt(
                    name,
                    format!(
                        "message row {id} has topic_id {topic_id}, which the topics table lacks"
                    ),
                ));
            }
            continue;
        };
        let data: &[u8] = if sel.payload {
            let raw = match row.get_ref(3).map_err(err)? {
                ValueRef::Blob(b) | ValueRef::Text(b) => b,
                _ => &[],
            };
            *overflow += db::overflow_pages(private.page_size, topic_id, raw.len() as u64);
            if private.message_compressed {
                let cap = sel.limits.message_cap();
                let dec = zstd::stream::read::Decoder::new(raw)
                    .and_then(|d| crate::compression::read_bounded(d, cap, &mut buf));
                match dec {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(Error::Limit {
                            file: name.to_string(),
                            format: db::FORMAT,
                            offset: 0,
                            message: format!(
                                "message row {id} (log_time {ts}): its zstd data decompresses to more than {cap} bytes (logsql.max_message_bytes)"
                            ),
                        });
                    }
                    Err(e) => {
                        return Err(corrupt(
                            name,
                            format!(
                                "message row {id}: compression_mode message, but its data is not a zstd frame: {e}"
                            ),
                        ));
                    }
                }
                read.bytes_decompressed += buf.len() as u64;
                &buf
            } else {
                raw
            }
        } else {
            &[]
        };
        read.messages += 1;
        let flow = receiver.message(Message {
            channel,
            log_time: ts.max(0) as u64,
            publish_time: None,
            sequence: None,
            data,
            data_buffer: None,
            extra: &[],
        });
        if flow == Flow::Stop {
            read.stopped = true;
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_the_range_once() {
        assert_eq!(split(0, 9, 3), vec![(0, 2), (3, 5), (6, 9)]);
        assert_eq!(split(5, 5, 4), vec![(5, 5)]);
        assert_eq!(split(i64::MIN, i64::MAX, 2).len(), 2);
        assert_eq!(base_name("/a/b/x_0.db3.zstd"), "x_0.db3");
    }
}
