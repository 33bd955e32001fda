//! A catalog's newest generation in memory, for scans: per recording, its
//! identity (size, modification time, ETag), its format, and a summary that
//! is good for pruning only (its topics as channels, its chunk index, its
//! counts and times; no schemas, nothing a reader needs). A scan asks it
//! before opening a file: a file the catalog knows as it is now, whose
//! chunks the query's predicate rules out, is not opened at all; a file the
//! catalog does not know, or knew at another size or time, is read as
//! without a catalog. An entry is right as long as its file is unchanged,
//! so an older generation is never wrong, only less complete: the newest is
//! looked up at most once a second per process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::object_store::{ObjectMeta, ObjectStoreExt};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use logsql_readers::formats::FormatReader;
use logsql_readers::model::{Channel, ChunkMeta, Summary};
use parking_lot::Mutex;

use super::error::CatalogError;
use super::files::Columns;
use super::layout::{CatalogLocation, Manifest};
use super::schema::CatalogTable;

/// How long a snapshot is used before the catalog is asked for a newer one.
const FRESH_FOR: Duration = Duration::from_secs(1);

/// What the catalog knows of one recording.
#[derive(Debug)]
pub(crate) struct CatalogEntry {
    size: u64,
    modified: i64,
    etag: Option<String>,
    /// The recording's format.
    pub(crate) format: Arc<dyn FormatReader>,
    /// The pruning-only summary (see the module documentation).
    pub(crate) summary: Summary,
}

impl CatalogEntry {
    /// Whether the entry describes the file as `meta` finds it now.
    pub(crate) fn matches(&self, meta: &ObjectMeta) -> bool {
        self.size == meta.size
            && Some(self.modified) == meta.last_modified.timestamp_nanos_opt()
            && self.etag == meta.e_tag
    }
}

/// One generation of a catalog, by recording location.
#[derive(Debug)]
pub struct CatalogSnapshot {
    generation: u64,
    entries: HashMap<String, CatalogEntry>,
}

impl CatalogSnapshot {
    /// The entry of the file at `location` (a scan's `file` value) when the
    /// catalog knows it as `meta` finds it now, it was readable, and it is of
    /// the scan's `format` (when the scan names one): only such an entry may
    /// stand for the file.
    pub(crate) fn entry(
        &self,
        location: &str,
        meta: &ObjectMeta,
        format: Option<&Arc<dyn FormatReader>>,
    ) -> Option<&CatalogEntry> {
        self.entries
            .get(location)
            .filter(|e| e.matches(meta) && format.is_none_or(|f| f.name() == e.format.name()))
    }

    /// The generation it holds.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// How many recordings it can stand for.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it stands for no recording.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The snapshots this process loaded, by catalog (as `logsql.catalog`
/// names it), with when each was last found to be the newest.
static SNAPSHOTS: LazyLock<Mutex<HashMap<String, Loaded>>> = LazyLock::new(Default::default);

/// A loaded snapshot and when it was last found to be the newest.
type Loaded = (Arc<CatalogSnapshot>, Instant);

/// The newest generation of `catalog` (as `logsql.catalog` names it), loaded
/// once per generation and process; `None` while nothing was committed there
/// (a catalog that knows nothing prunes nothing).
pub async fn current(runtime: &RuntimeEnv, catalog: &str) -> Result<Option<Arc<CatalogSnapshot>>> {
    // Asked once per file of a scan: the fresh answer costs a map lookup.
    let key = catalog.to_string();
    if let Some((snapshot, checked)) = SNAPSHOTS.lock().get(&key)
        && checked.elapsed() < FRESH_FOR
    {
        return Ok(Some(Arc::clone(snapshot)));
    }
    let location = CatalogLocation::new(runtime, catalog)?;
    let Some(manifest) = location.latest().await? else {
        return Ok(None);
    };
    let known = SNAPSHOTS.lock().get(&key).map(|(s, _)| Arc::clone(s));
    let snapshot = match known {
        Some(s) if s.generation == manifest.generation => s,
        _ => Arc::new(load(&location, &manifest).await?),
    };
    SNAPSHOTS
        .lock()
        .insert(key, (Arc::clone(&snapshot), Instant::now()));
    Ok(Some(snapshot))
}

/// Reads the tables of `manifest` into a snapshot.
async fn load(location: &CatalogLocation, manifest: &Manifest) -> Result<CatalogSnapshot> {
    let mut tables = BTreeMap::new();
    for table in CatalogTable::ALL {
        let file = manifest.tables.get(table.name()).ok_or_else(|| {
            DataFusionError::from(CatalogError::Damaged {
                catalog: location.name().to_string(),
                file: format!("_log/{:020}.json", manifest.generation),
                message: format!("names no {} table", table.name()),
            })
        })?;
        let bytes = location
            .store()
            .get(&location.path(file))
            .await?
            .bytes()
            .await?;
        tables.insert(table.name(), batches(location, file, bytes)?);
    }
    let damaged = |file: &str, message: String| {
        DataFusionError::from(CatalogError::Damaged {
            catalog: location.name().to_string(),
            file: file.to_string(),
            message,
        })
    };
    let mut entries: HashMap<String, CatalogEntry> = HashMap::new();
    let formats = logsql_readers::formats::all();
    let mut topic_ids: HashMap<String, BTreeMap<String, u64>> = HashMap::new();
    for batch in &tables["recordings"] {
        let r = Columns::new(batch, "recordings", &damaged);
        let (location, health, format) =
            (r.text("location")?, r.text("health")?, r.text("format")?);
        let (size, count) = (r.count("size")?, r.count("message_count")?);
        let (modified, start, end) = (
            r.time("modified")?,
            r.time("start_time")?,
            r.time("end_time")?,
        );
        let etag = r.text("etag")?;
        for i in 0..batch.num_rows() {
            let usable = matches!(health.value(i), "indexed" | "unindexed");
            let format = formats
                .iter()
                .find(|f| format.is_valid(i) && f.name() == format.value(i));
            let (true, Some(format)) = (usable, format) else {
                continue;
            };
            let time = |a: &datafusion::arrow::array::TimestampNanosecondArray| {
                a.is_valid(i).then(|| a.value(i) as u64)
            };
            let summary = Summary {
                format: format.name(),
                file_size: size.value(i),
                indexed: health.value(i) == "indexed",
                message_count: count.is_valid(i).then(|| count.value(i)),
                channel_message_counts: Some(BTreeMap::new()),
                start_time: time(start),
                end_time: time(end),
                ..Default::default()
            };
            entries.insert(
                location.value(i).to_string(),
                CatalogEntry {
                    size: size.value(i),
                    modified: modified.value(i),
                    etag: etag.is_valid(i).then(|| etag.value(i).to_string()),
                    format: Arc::clone(format),
                    summary,
                },
            );
        }
    }
    for batch in &tables["topics"] {
        let t = Columns::new(batch, "topics", &damaged);
        let (location, topic) = (t.text("location")?, t.text("topic")?);
        let (message_type, encoding) = (t.text("message_type")?, t.text("message_encoding")?);
        let count = t.count("message_count")?;
        for i in 0..batch.num_rows() {
            let Some(entry) = entries.get_mut(location.value(i)) else {
                continue;
            };
            let ids = topic_ids.entry(location.value(i).to_string()).or_default();
            let id = ids.len() as u64;
            ids.insert(topic.value(i).to_string(), id);
            entry.summary.channels.insert(
                id,
                Channel {
                    id,
                    topic: topic.value(i).to_string(),
                    message_type: message_type
                        .is_valid(i)
                        .then(|| message_type.value(i).to_string()),
                    message_encoding: encoding.value(i).to_string(),
                    schema_encoding: None,
                    schema: None,
                    metadata: BTreeMap::new(),
                },
            );
            if let Some(counts) = &mut entry.summary.channel_message_counts {
                counts.insert(id, count.value(i));
            }
        }
    }
    for batch in &tables["chunks"] {
        let c = Columns::new(batch, "chunks", &damaged);
        let location = c.text("location")?;
        let (index, offset) = (c.count("chunk_index")?, c.count("offset")?);
        let (compressed, uncompressed) =
            (c.count("compressed_size")?, c.count("uncompressed_size")?);
        let (start, end, count) = (
            c.time("start_time")?,
            c.time("end_time")?,
            c.count("message_count")?,
        );
        let topics = batch
            .column_by_name("topics")
            .and_then(|a| a.as_list_opt::<i32>())
            .ok_or_else(|| damaged("chunks", "column topics is missing".into()))?;
        for i in 0..batch.num_rows() {
            let Some(entry) = entries.get_mut(location.value(i)) else {
                continue;
            };
            let ids = topic_ids.get(location.value(i));
            // A topic the recording's topics do not name: the chunk's list
            // is not trusted (unknown, as a chunk that lists none).
            let channels = topics.is_valid(i).then(|| {
                let names = topics.value(i);
                let names = names.as_string::<i32>();
                (0..names.len())
                    .map(|j| ids.and_then(|ids| ids.get(names.value(j)).copied()))
                    .collect::<Option<Vec<u64>>>()
            });
            let channels = channels.flatten();
            let opt = |a: &datafusion::arrow::array::UInt64Array| a.is_valid(i).then(|| a.value(i));
            let time = |a: &datafusion::arrow::array::TimestampNanosecondArray| {
                a.is_valid(i).then(|| a.value(i) as u64)
            };
            entry.summary.chunks.push(ChunkMeta {
                index: index.value(i) as usize,
                offset: offset.value(i),
                length: compressed.value(i),
                start_time: time(start),
                end_time: time(end),
                message_count: opt(count),
                channels,
                compression: String::new(),
                compressed_size: compressed.value(i),
                uncompressed_size: opt(uncompressed),
            });
        }
    }
    for entry in entries.values_mut() {
        entry.summary.chunks.sort_by_key(|c| c.index);
    }
    Ok(CatalogSnapshot {
        generation: manifest.generation,
        entries,
    })
}

/// The record batches of one table file.
fn batches(location: &CatalogLocation, file: &str, bytes: Bytes) -> Result<Vec<RecordBatch>> {
    let damaged = |e: &dyn std::fmt::Display| {
        DataFusionError::from(CatalogError::Damaged {
            catalog: location.name().to_string(),
            file: file.to_string(),
            message: format!("not a Parquet table file ({e})"),
        })
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| damaged(&e))?
        .build()
        .map_err(|e| damaged(&e))?;
    reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| damaged(&e))
}
