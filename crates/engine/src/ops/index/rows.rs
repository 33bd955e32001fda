//! One recording's catalog rows, from its summary and index: the
//! `recordings` row, a `topics` row per topic and a `chunks` row per chunk,
//! and each table's record batch from many recordings' rows.
//!
//! Topics' counts and first and last times are what `topics()` gives
//! ([`file_topics`]); their largest gaps come from every message time, read
//! only where the format's index holds them ([`FormatReader::times_in_index`]),
//! so indexing never reads a whole indexed file.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Float64Array, ListBuilder, RecordBatch, StringBuilder, StructBuilder,
    TimestampNanosecondArray, UInt64Builder,
};
use datafusion::error::Result;
use sha1::{Digest, Sha1};

use crate::catalog::CatalogTable;
use crate::catalog::schema::attachment_fields;
use crate::scanner::options::OnError;
use crate::scanner::schema::{map_array, str_array, ts_array, u64_array};
use crate::storage::object_io::FileLocation;
use crate::storage::summary_cache::CachedSummary;
use crate::surface::header_walk::count_topics;
use crate::surface::table_functions::{Policy, file_topics};
use logsql_readers::formats::FormatReader;
use logsql_readers::limits::Limits;
use logsql_readers::model::{MetadataInfo, Summary};

/// A recording the sources list, before it is read.
#[derive(Clone)]
pub(crate) struct Listed {
    /// Where it is.
    pub(crate) loc: FileLocation,
    /// Its format, detected from its first bytes (`None`: named like a log,
    /// but no format recognises it).
    pub(crate) format: Option<Arc<dyn FormatReader>>,
    /// The SOURCE that listed it, as an absolute URL (with its glob).
    pub(crate) source: String,
    /// Its hive partition values (`key=value` directories under the source).
    pub(crate) partitions: BTreeMap<String, String>,
}

impl Listed {
    /// The location as scans name it (the `file` column).
    pub(crate) fn location(&self) -> String {
        self.loc.display_name()
    }

    /// The modification time in nanoseconds since the epoch.
    pub(crate) fn modified(&self) -> i64 {
        self.loc
            .meta
            .last_modified
            .timestamp_nanos_opt()
            .unwrap_or_default()
    }
}

/// One topic of one recording.
#[derive(Debug, Clone, Default)]
pub(crate) struct TopicFacts {
    topic: String,
    message_type: Option<String>,
    message_encoding: String,
    schema_hash: Option<String>,
    count: u64,
    start: Option<u64>,
    end: Option<u64>,
    largest_gap: Option<u64>,
    bytes: Option<u64>,
}

/// One chunk of one recording.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChunkFacts {
    index: u64,
    offset: u64,
    compressed_size: u64,
    uncompressed_size: Option<u64>,
    start: Option<u64>,
    end: Option<u64>,
    message_count: Option<u64>,
    topics: Option<Vec<String>>,
}

/// Everything the catalog keeps of one recording.
pub(crate) struct Recording {
    listed: Listed,
    format: Option<&'static str>,
    start: Option<u64>,
    end: Option<u64>,
    message_count: Option<u64>,
    chunk_count: Option<u64>,
    device: Option<String>,
    metadata: BTreeMap<String, String>,
    attachments: Vec<(String, String, u64)>,
    /// indexed, unindexed, damaged or unreadable.
    pub(crate) health: &'static str,
    /// Why it is damaged or unreadable.
    pub(crate) health_reason: Option<String>,
    indexed_at: i64,
    topics: Vec<TopicFacts>,
    chunks: Vec<ChunkFacts>,
}

impl Recording {
    /// The location as scans name it.
    pub(crate) fn location(&self) -> String {
        self.listed.location()
    }
}

/// How a recording is read for the catalog.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    /// The metadata or hive key naming the device.
    pub(crate) device_key: Option<String>,
    /// The session's decompression limits.
    pub(crate) limits: Limits,
    /// When this run started (nanoseconds since the epoch).
    pub(crate) indexed_at: i64,
}

/// The catalog's facts of `listed`, from its summary (or the error reading
/// it). Runs on a blocking thread: topics and gaps may read indexes.
pub(crate) fn recording(
    listed: Listed,
    summary: std::result::Result<CachedSummary, logsql_readers::Error>,
    how: &Reading,
) -> Recording {
    let mut rec = Recording {
        format: listed.format.as_ref().map(|f| f.name()),
        device: None,
        listed,
        start: None,
        end: None,
        message_count: None,
        chunk_count: None,
        metadata: BTreeMap::new(),
        attachments: Vec::new(),
        health: "unreadable",
        health_reason: None,
        indexed_at: how.indexed_at,
        topics: Vec::new(),
        chunks: Vec::new(),
    };
    let cached = match summary {
        Ok(cached) => cached,
        Err(e) => {
            rec.health_reason = Some(reason(&e.to_string(), &rec.listed.location()));
            rec.device = device_of(how.device_key.as_deref(), &[], &rec.listed.partitions);
            return rec;
        }
    };
    let summary = &cached.summary;
    let format = cached.format.as_ref();
    rec.format = Some(format.name());
    rec.chunk_count = Some(summary.chunks.len() as u64);
    for record in &summary.metadata {
        for (k, v) in &record.metadata {
            // A key several records give: the last one's value, as Foxglove reads them.
            rec.metadata.insert(k.clone(), v.clone());
        }
    }
    rec.attachments = summary
        .attachments
        .iter()
        .map(|a| (a.name.clone(), a.media_type.clone(), a.data_size))
        .collect();
    rec.device = device_of(
        how.device_key.as_deref(),
        &summary.metadata,
        &rec.listed.partitions,
    );
    (rec.health, rec.health_reason) = match &summary.damage {
        Some(e) => (
            "damaged",
            Some(reason(&e.to_string(), &rec.listed.location())),
        ),
        None if !summary.indexed => ("unindexed", None),
        None => ("indexed", None),
    };
    let policy = Policy {
        on_error: OnError::Warn,
        limits: how.limits,
    };
    // Where the index holds every message's time, one walk of it gives
    // counts, first and last times and gaps; else topics()'s reading.
    let walked = format
        .times_in_index()
        .then(|| walk_topics(&rec.listed.loc, format, summary, how.limits));
    let topics = match walked {
        Some(Ok((topics, gaps))) => Ok((topics, gaps)),
        Some(Err(e)) => {
            rec.health = "damaged";
            rec.health_reason
                .get_or_insert(reason(&e, &rec.listed.location()));
            file_topics(&rec.listed.loc, format, summary, policy).map(|t| (t, BTreeMap::new()))
        }
        None => file_topics(&rec.listed.loc, format, summary, policy).map(|t| (t, BTreeMap::new())),
    };
    match topics {
        Ok((topics, gaps)) => {
            rec.topics = topic_facts(summary, topics);
            for t in &mut rec.topics {
                t.largest_gap = gaps.get(&t.topic).copied();
            }
        }
        Err(e) => {
            rec.health = "damaged";
            let why = reason(&e.to_string(), &rec.listed.location());
            rec.health_reason.get_or_insert(why);
        }
    }
    let topic_total: u64 = rec.topics.iter().map(|t| t.count).sum();
    rec.message_count = summary.message_count.or(Some(topic_total));
    rec.start = summary
        .start_time
        .or_else(|| rec.topics.iter().filter_map(|t| t.start).min());
    rec.end = summary
        .end_time
        .or_else(|| rec.topics.iter().filter_map(|t| t.end).max());
    rec.chunks = chunk_facts(summary);
    rec
}

/// An error's text without the location it starts with (the row names it).
fn reason(text: &str, location: &str) -> String {
    text.strip_prefix(location)
        .and_then(|t| t.strip_prefix(": "))
        .unwrap_or(text)
        .to_string()
}

/// The device a recording belongs to: the `key` a user configured (a
/// metadata key, else a hive key); else Foxglove's device metadata (the last
/// record named `foxglove`: `deviceName`, else `deviceId`); else a hive key
/// `device` or `robot`.
fn device_of(
    key: Option<&str>,
    records: &[MetadataInfo],
    partitions: &BTreeMap<String, String>,
) -> Option<String> {
    if let Some(key) = key {
        let from_metadata = records.iter().rev().find_map(|r| r.metadata.get(key));
        return from_metadata.or_else(|| partitions.get(key)).cloned();
    }
    let foxglove = records.iter().rev().find(|r| r.name == "foxglove");
    let named = foxglove.and_then(|r| {
        ["deviceName", "device_name", "deviceId", "device_id"]
            .iter()
            .find_map(|k| r.metadata.get(*k))
    });
    named
        .or_else(|| partitions.get("device"))
        .or_else(|| partitions.get("robot"))
        .cloned()
}

/// The topic rows of a recording from `topics()`'s counts and times, with
/// each topic's schema hash and the bytes of the chunks holding it.
fn topic_facts(
    summary: &Summary,
    topics: BTreeMap<String, crate::surface::table_functions::TopicRow>,
) -> Vec<TopicFacts> {
    let mut ids: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    let mut hashes: BTreeMap<&str, String> = BTreeMap::new();
    for ch in summary.channels.values() {
        ids.entry(ch.topic.as_str()).or_default().insert(ch.id);
        if let Some(schema) = ch.schema.as_deref().filter(|s| !s.is_empty()) {
            hashes
                .entry(ch.topic.as_str())
                .or_insert_with(|| hex(&Sha1::digest(schema)));
        }
    }
    let listed = summary.chunks.iter().any(|c| c.channels.is_some());
    topics
        .into_iter()
        .map(
            |(topic, (message_type, message_encoding, count, start, end))| {
                let own = ids.get(topic.as_str());
                // A chunk that lists no channels may hold any topic: it counts
                // for each, as a scan of the topic would read it.
                let bytes = listed.then(|| {
                    summary
                        .chunks
                        .iter()
                        .filter(|c| match &c.channels {
                            None => true,
                            Some(chs) => {
                                own.is_some_and(|own| chs.iter().any(|id| own.contains(id)))
                            }
                        })
                        .map(|c| c.compressed_size)
                        .sum()
                });
                TopicFacts {
                    schema_hash: hashes.get(topic.as_str()).cloned(),
                    topic,
                    message_type,
                    message_encoding,
                    count,
                    start,
                    end,
                    largest_gap: None,
                    bytes,
                }
            },
        )
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Each topic's type, encoding, count, first and last time (every topic of
/// the summary's channels, with or without messages), and its longest time
/// between consecutive messages, from every message time the index holds.
type Walked = (
    BTreeMap<String, crate::surface::table_functions::TopicRow>,
    BTreeMap<String, u64>,
);

fn walk_topics(
    loc: &FileLocation,
    format: &dyn FormatReader,
    summary: &Summary,
    limits: Limits,
) -> std::result::Result<Walked, String> {
    let file = loc.open().map_err(|e| e.to_string())?;
    let mut times: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let (counts, walk) = count_topics(format, file.as_ref(), summary, limits, |topic, t| {
        times
            .entry(topic.to_string())
            .or_default()
            .extend_from_slice(t);
    });
    if let Some(e) = walk.errors.into_iter().next() {
        return Err(e.to_string());
    }
    let mut topics: BTreeMap<String, crate::surface::table_functions::TopicRow> = BTreeMap::new();
    for ch in summary.channels.values() {
        topics.entry(ch.topic.clone()).or_insert_with(|| {
            (
                ch.message_type.clone(),
                ch.message_encoding.clone(),
                0,
                None,
                None,
            )
        });
    }
    for (topic, c) in counts {
        let row = topics.entry(topic).or_insert_with(|| {
            (
                c.message_type.clone(),
                c.message_encoding.clone(),
                0,
                None,
                None,
            )
        });
        row.2 = c.count;
        row.3 = c.first;
        row.4 = c.last;
    }
    let gaps = times
        .into_iter()
        .filter_map(|(topic, mut t)| {
            t.sort_unstable();
            let gap = t.windows(2).map(|w| w[1] - w[0]).max()?;
            Some((topic, gap))
        })
        .collect();
    Ok((topics, gaps))
}

fn chunk_facts(summary: &Summary) -> Vec<ChunkFacts> {
    summary
        .chunks
        .iter()
        .map(|c| ChunkFacts {
            index: c.index as u64,
            offset: c.offset,
            compressed_size: c.compressed_size,
            uncompressed_size: c.uncompressed_size,
            start: c.start_time,
            end: c.end_time,
            message_count: c.message_count,
            topics: c.channels.as_ref().map(|ids| {
                let topics: BTreeSet<&str> = ids
                    .iter()
                    .filter_map(|id| summary.channels.get(id).map(|c| c.topic.as_str()))
                    .collect();
                topics.into_iter().map(str::to_string).collect()
            }),
        })
        .collect()
}

/// A UTC timestamp column of nanoseconds since the epoch (file times may precede it).
fn nanos(values: impl IntoIterator<Item = i64>) -> ArrayRef {
    let a: TimestampNanosecondArray = values.into_iter().map(Some).collect();
    Arc::new(a.with_timezone("UTC"))
}

fn seconds(values: impl IntoIterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<Float64Array>())
}

/// Seconds from `a` to `b`.
fn span(a: Option<u64>, b: Option<u64>) -> Option<f64> {
    Some(b?.checked_sub(a?)? as f64 / 1e9)
}

/// The `recordings` rows of `recs`.
pub(crate) fn recordings_batch(recs: &[&Recording]) -> Result<RecordBatch> {
    let mut attachments = ListBuilder::new(StructBuilder::from_fields(attachment_fields(), 0));
    for r in recs {
        let items = attachments.values();
        for (name, media_type, size) in &r.attachments {
            items
                .field_builder::<StringBuilder>(0)
                .expect("name")
                .append_value(name);
            items
                .field_builder::<StringBuilder>(1)
                .expect("media_type")
                .append_value(media_type);
            items
                .field_builder::<UInt64Builder>(2)
                .expect("size")
                .append_value(*size);
            items.append(true);
        }
        attachments.append(true);
    }
    let locations: Vec<String> = recs.iter().map(|r| r.location()).collect();
    let columns: Vec<ArrayRef> = vec![
        str_array(locations.iter().map(|l| Some(l.as_str()))),
        str_array(recs.iter().map(|r| Some(r.listed.source.as_str()))),
        str_array(recs.iter().map(|r| r.format)),
        u64_array(recs.iter().map(|r| Some(r.listed.loc.meta.size))),
        nanos(recs.iter().map(|r| r.listed.modified())),
        str_array(recs.iter().map(|r| r.listed.loc.meta.e_tag.as_deref())),
        ts_array(recs.iter().map(|r| r.start)),
        ts_array(recs.iter().map(|r| r.end)),
        seconds(recs.iter().map(|r| span(r.start, r.end))),
        u64_array(recs.iter().map(|r| r.message_count)),
        u64_array(
            recs.iter()
                .map(|r| r.format.is_some().then_some(r.topics.len() as u64)),
        ),
        u64_array(recs.iter().map(|r| r.chunk_count)),
        map_array(recs.iter().map(|r| &r.listed.partitions))?,
        str_array(recs.iter().map(|r| r.device.as_deref())),
        map_array(recs.iter().map(|r| &r.metadata))?,
        Arc::new(attachments.finish()),
        str_array(recs.iter().map(|r| Some(r.health))),
        str_array(recs.iter().map(|r| r.health_reason.as_deref())),
        nanos(recs.iter().map(|r| r.indexed_at)),
    ];
    Ok(RecordBatch::try_new(
        CatalogTable::Recordings.schema(),
        columns,
    )?)
}

/// The `topics` rows of `recs`.
pub(crate) fn topics_batch(recs: &[&Recording]) -> Result<RecordBatch> {
    let rows: Vec<(String, &TopicFacts)> = recs
        .iter()
        .flat_map(|r| {
            let location = r.location();
            r.topics.iter().map(move |t| (location.clone(), t))
        })
        .collect();
    let columns: Vec<ArrayRef> = vec![
        str_array(rows.iter().map(|(l, _)| Some(l.as_str()))),
        str_array(rows.iter().map(|(_, t)| Some(t.topic.as_str()))),
        str_array(rows.iter().map(|(_, t)| t.message_type.as_deref())),
        str_array(rows.iter().map(|(_, t)| Some(t.message_encoding.as_str()))),
        str_array(rows.iter().map(|(_, t)| t.schema_hash.as_deref())),
        u64_array(rows.iter().map(|(_, t)| Some(t.count))),
        ts_array(rows.iter().map(|(_, t)| t.start)),
        ts_array(rows.iter().map(|(_, t)| t.end)),
        seconds(rows.iter().map(|(_, t)| {
            let secs = span(t.start, t.end).filter(|s| *s > 0.0)?;
            (t.count > 1).then(|| (t.count - 1) as f64 / secs)
        })),
        seconds(
            rows.iter()
                .map(|(_, t)| t.largest_gap.map(|g| g as f64 / 1e9)),
        ),
        u64_array(rows.iter().map(|(_, t)| t.bytes)),
    ];
    Ok(RecordBatch::try_new(
        CatalogTable::Topics.schema(),
        columns,
    )?)
}

/// The `chunks` rows of `recs`.
pub(crate) fn chunks_batch(recs: &[&Recording]) -> Result<RecordBatch> {
    let rows: Vec<(String, &ChunkFacts)> = recs
        .iter()
        .flat_map(|r| {
            let location = r.location();
            r.chunks.iter().map(move |c| (location.clone(), c))
        })
        .collect();
    let mut topics = ListBuilder::new(StringBuilder::new());
    for (_, c) in &rows {
        match &c.topics {
            Some(ts) => {
                ts.iter().for_each(|t| topics.values().append_value(t));
                topics.append(true);
            }
            None => topics.append(false),
        }
    }
    let columns: Vec<ArrayRef> = vec![
        str_array(rows.iter().map(|(l, _)| Some(l.as_str()))),
        u64_array(rows.iter().map(|(_, c)| Some(c.index))),
        u64_array(rows.iter().map(|(_, c)| Some(c.offset))),
        u64_array(rows.iter().map(|(_, c)| Some(c.compressed_size))),
        u64_array(rows.iter().map(|(_, c)| c.uncompressed_size)),
        ts_array(rows.iter().map(|(_, c)| c.start)),
        ts_array(rows.iter().map(|(_, c)| c.end)),
        u64_array(rows.iter().map(|(_, c)| c.message_count)),
        Arc::new(topics.finish()),
    ];
    Ok(RecordBatch::try_new(
        CatalogTable::Chunks.schema(),
        columns,
    )?)
}

/// The batch of `table`'s rows of `recs`.
pub(crate) fn batch(table: CatalogTable, recs: &[&Recording]) -> Result<RecordBatch> {
    match table {
        CatalogTable::Recordings => recordings_batch(recs),
        CatalogTable::Topics => topics_batch(recs),
        CatalogTable::Chunks => chunks_batch(recs),
    }
}
