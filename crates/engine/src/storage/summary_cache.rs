//! File summaries kept in DataFusion's runtime file-metadata cache.
//!
//! Planning (statistics), every partition of a scan and the table functions all
//! need a file's summary; the cache makes that one read of the file's index per
//! session. The cache is the `SessionContext`'s own
//! ([`CacheManager::get_file_metadata_cache`], the one Parquet keeps its footers
//! in): shared by every table of the session, evicted least-recently-used by the
//! memory the entries report ([`FileMetadata::memory_size`]), sized with
//! `SET datafusion.runtime.metadata_cache_limit` or the embedding application's
//! `RuntimeEnvBuilder`. Entries are keyed by the object's path and checked
//! against its size and modification time (a rewritten file is read again) and
//! the store that holds it.
//!
//! The outcome of verifying a file's whole-file checksum (BDDF SHA1) lives in
//! the cached entry beside the summary: it is a fact about the same bytes, and
//! goes when they go (an evicted or rewritten file is verified again).
//!
//! [`CacheManager::get_file_metadata_cache`]: datafusion::execution::cache::cache_manager::CacheManager::get_file_metadata_cache

use std::any::Any;
use std::mem::size_of;
use std::sync::{Arc, OnceLock};

use datafusion::common::HashMap;
use datafusion::execution::cache::cache_manager::{
    CachedFileMetadataEntry, FileMetadata, FileMetadataCache,
};
use datafusion::object_store::ObjectMeta;

use logsql_readers::error::Result;
use logsql_readers::formats::{self, FormatReader};
use logsql_readers::io::ReadAt;
use logsql_readers::limits::Limits;
use logsql_readers::model::{Channel, ChunkMeta, Summary};

/// The runtime's file-metadata cache, as the engine passes it around.
pub(crate) type SummaryCache = Arc<FileMetadataCache>;

/// Estimated heap bytes per chunk of a format's reader-private index
/// ([`Summary::private`] is opaque): a chunk's detail record (MCAP's kind,
/// message-index range and offsets vector; a bag's index end).
const PRIVATE_BYTES_PER_CHUNK: usize = 48;

/// Estimated private bytes per channel a chunk lists (an MCAP message-index offset).
const PRIVATE_BYTES_PER_CHUNK_CHANNEL: usize = 16;

/// A summary and the format that produced it: the value of a cache entry.
#[derive(Debug, Clone)]
pub struct CachedSummary {
    /// The file's format.
    pub format: Arc<dyn FormatReader>,
    /// Its summary.
    pub summary: Arc<Summary>,
    /// The store holding the file (the cache is keyed by path alone).
    store: Arc<str>,
    /// The outcome of verifying the whole-file checksum, once verified (the
    /// mismatch, if any); shared by every clone of the entry.
    verified: Arc<OnceLock<Option<logsql_readers::Error>>>,
}

impl CachedSummary {
    /// A summary of a file in `store`, not yet verified.
    fn new(format: Arc<dyn FormatReader>, summary: Summary, store: &str) -> Self {
        Self {
            format,
            summary: Arc::new(summary),
            store: store.into(),
            verified: Default::default(),
        }
    }

    /// The same entry with its summary replaced (the verification state is shared).
    pub(crate) fn with_summary(&self, summary: Summary) -> Self {
        Self {
            summary: Arc::new(summary),
            ..self.clone()
        }
    }

    /// Whether the file's whole-file checksum was verified (while this entry lives).
    pub(crate) fn is_verified(&self) -> bool {
        self.verified.get().is_some()
    }

    /// Records the outcome of verifying the file's whole-file checksum (the mismatch, if any).
    pub(crate) fn record_verification(&self, mismatch: Option<logsql_readers::Error>) {
        // A concurrent scan may have verified it first: both outcomes are of the same bytes.
        let _ = self.verified.set(mismatch);
    }
}

impl FileMetadata for CachedSummary {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn memory_size(&self) -> usize {
        size_of::<Self>() + self.store.len() + summary_bytes(&self.summary)
    }

    fn extra_info(&self) -> HashMap<String, String> {
        let s = &self.summary;
        HashMap::from_iter([
            ("format".to_string(), self.format.name().to_string()),
            ("chunks".to_string(), s.chunks.len().to_string()),
            ("channels".to_string(), s.channels.len().to_string()),
        ])
    }
}

/// An estimate of the memory a summary holds: the struct, its chunk list,
/// channels (names, schemas, metadata), attachments, metadata records and
/// properties, plus the reader's private index.
pub(crate) fn summary_bytes(s: &Summary) -> usize {
    let chunk = |c: &ChunkMeta| {
        size_of::<ChunkMeta>()
            + c.channels
                .as_ref()
                .map_or(0, |v| v.capacity() * size_of::<u64>())
            + c.compression.capacity()
    };
    let channel = |c: &Channel| {
        // A BTreeMap entry: key, value and about a node pointer's share.
        size_of::<u64>()
            + size_of::<Channel>()
            + 16
            + c.topic.capacity()
            + c.message_type.as_ref().map_or(0, String::capacity)
            + c.message_encoding.capacity()
            + c.schema_encoding.as_ref().map_or(0, String::capacity)
            + c.schema.as_ref().map_or(0, |b| b.len())
            + c.metadata
                .iter()
                .map(|(k, v)| k.capacity() + v.capacity() + 64)
                .sum::<usize>()
    };
    let strings = |pairs: &[(String, String)]| -> usize {
        pairs
            .iter()
            .map(|(k, v)| size_of::<(String, String)>() + k.capacity() + v.capacity())
            .sum()
    };
    size_of::<Summary>()
        + s.chunks.iter().map(chunk).sum::<usize>()
        + (s.chunks.capacity() - s.chunks.len()) * size_of::<ChunkMeta>()
        + s.channels.values().map(channel).sum::<usize>()
        + s.channel_message_counts
            .as_ref()
            .map_or(0, |m| m.len() * 32)
        + s.attachments.len() * size_of::<logsql_readers::model::AttachmentInfo>()
        + s.attachments
            .iter()
            .map(|a| a.name.capacity() + a.media_type.capacity())
            .sum::<usize>()
        + s.metadata.len() * size_of::<logsql_readers::model::MetadataInfo>()
        + s.metadata
            .iter()
            .map(|m| {
                m.name.capacity()
                    + m.metadata
                        .iter()
                        .map(|(k, v)| k.capacity() + v.capacity() + 64)
                        .sum::<usize>()
            })
            .sum::<usize>()
        + strings(&s.properties)
        + s.private.as_ref().map_or(0, |_| {
            s.chunks
                .iter()
                .map(|c| {
                    PRIVATE_BYTES_PER_CHUNK
                        + c.channels.as_ref().map_or(0, Vec::len) * PRIVATE_BYTES_PER_CHUNK_CHANNEL
                })
                .sum::<usize>()
        })
}

/// The cached summary of the file `meta` in `store`, if any (no I/O). An entry
/// for another size, modification time or store does not count.
pub fn lookup(
    cache: Option<&FileMetadataCache>,
    store: &str,
    meta: &ObjectMeta,
) -> Option<CachedSummary> {
    let entry = cache?.get(&meta.location)?;
    if !entry.is_valid_for(meta) {
        return None;
    }
    let hit = entry
        .file_metadata
        .as_any()
        .downcast_ref::<CachedSummary>()?;
    (*hit.store == *store).then(|| hit.clone())
}

/// The summary of `file` (the object `meta` in `store`), from `cache` or read
/// and then cached, detecting the format when `format` is `None`. Also says
/// whether the cache answered. A summary read here is read under `limits`
/// (the session's `logsql.max_chunk_bytes` and `logsql.max_message_bytes`,
/// see [`FormatReader::summary_with_limits`]); a cached one cost nothing to
/// decompress and is returned whatever they are.
pub(crate) fn get_or_load(
    cache: Option<&FileMetadataCache>,
    store: &str,
    meta: &ObjectMeta,
    format: Option<&Arc<dyn FormatReader>>,
    file: &dyn ReadAt,
    limits: &Limits,
) -> Result<(CachedSummary, bool)> {
    if let Some(hit) = lookup(cache, store, meta)
        && format.is_none_or(|f| f.name() == hit.format.name())
    {
        return Ok((hit, true));
    }
    let format = match format {
        Some(f) => {
            // A file given as one format must carry its magic: a clear error beats a parse failure.
            let head = file
                .read_upto(0, formats::SNIFF_LEN)
                .map_err(|e| logsql_readers::Error::io(file.name(), e))?;
            if !f.sniff_named(file.name(), &head) {
                return Err(logsql_readers::Error::Corrupt {
                    file: file.name().to_string(),
                    format: f.name(),
                    offset: 0,
                    message: format!(
                        "not a {} file (bad magic: {})",
                        f.name(),
                        logsql_readers::error::hex_head(&head)
                    ),
                });
            }
            Arc::clone(f)
        }
        None => formats::detect(file)?,
    };
    let summary = format.summary_with_limits(file, limits)?;
    let entry = CachedSummary::new(format, summary, store);
    if let Some(cache) = cache {
        cache.put(
            &meta.location,
            CachedFileMetadataEntry::new(meta.clone(), Arc::new(entry.clone())),
        );
    }
    Ok((entry, false))
}

/// Verifies `file`'s whole-file checksum (see [`FormatReader::verify`]) once per
/// cached summary; returns the mismatch, if any. Bytes read are added to `bytes`.
pub fn verification(
    cached: &CachedSummary,
    file: &dyn ReadAt,
    bytes: &datafusion::physical_plan::metrics::Count,
) -> Option<logsql_readers::Error> {
    if let Some(hit) = cached.verified.get() {
        return hit.clone();
    }
    let counting = super::counting::CountingReader::new(file);
    let outcome = cached.format.verify(&counting, &cached.summary)?.err();
    bytes.add(counting.take_count() as usize);
    cached.record_verification(outcome.clone());
    outcome
}

/// The file-metadata cache of the runtime `env` (a session's, or a task's).
pub fn of(env: &datafusion::execution::runtime_env::RuntimeEnv) -> SummaryCache {
    env.cache_manager.get_file_metadata_cache()
}

#[cfg(test)]
mod tests {
    use datafusion::execution::cache::default_cache::DefaultCache;
    use datafusion::object_store::path::Path;

    use super::*;
    use logsql_readers::model::Channel;

    fn meta(size: u64, secs: u64) -> ObjectMeta {
        ObjectMeta {
            location: Path::from("logs/run.mcap"),
            last_modified: (std::time::SystemTime::UNIX_EPOCH
                + std::time::Duration::from_secs(secs))
            .into(),
            size,
            e_tag: None,
            version: None,
        }
    }

    fn entry(summary: Summary) -> CachedSummary {
        CachedSummary::new(formats::by_name("mcap").unwrap(), summary, "store-a")
    }

    #[test]
    fn memory_size_counts_schemas_and_chunks() {
        let empty = entry(Summary::default()).memory_size();
        let mut summary = Summary::default();
        summary.channels.insert(
            1,
            Channel {
                id: 1,
                topic: "/imu".into(),
                message_type: None,
                message_encoding: "cdr".into(),
                schema_encoding: None,
                schema: Some(Arc::from(vec![0u8; 10_000])),
                metadata: Default::default(),
            },
        );
        let with_schema = entry(summary.clone()).memory_size();
        assert!(with_schema >= empty + 10_000, "{empty} {with_schema}");
        let chunk = ChunkMeta {
            index: 0,
            offset: 0,
            length: 0,
            start_time: None,
            end_time: None,
            message_count: None,
            channels: None,
            compression: String::new(),
            compressed_size: 0,
            uncompressed_size: None,
        };
        summary.chunks = vec![chunk; 100];
        let with_chunks = entry(summary).memory_size();
        assert!(
            with_chunks >= with_schema + 100 * size_of::<ChunkMeta>(),
            "{with_schema} {with_chunks}"
        );
    }

    #[test]
    fn an_entry_answers_only_its_size_time_and_store() {
        let cache = DefaultCache::<Path, CachedFileMetadataEntry>::new(1 << 20);
        let cache: &FileMetadataCache = &cache;
        let m = meta(100, 10);
        let e = entry(Summary::default());
        cache.put(
            &m.location,
            CachedFileMetadataEntry::new(m.clone(), Arc::new(e.clone())),
        );
        assert!(lookup(Some(cache), "store-a", &m).is_some());
        assert!(lookup(Some(cache), "store-b", &m).is_none());
        assert!(lookup(Some(cache), "store-a", &meta(101, 10)).is_none());
        assert!(lookup(Some(cache), "store-a", &meta(100, 11)).is_none());
        assert!(lookup(None, "store-a", &m).is_none());
        // The verification outcome is shared by the entry's clones.
        assert!(!e.is_verified());
        lookup(Some(cache), "store-a", &m)
            .unwrap()
            .record_verification(None);
        assert!(e.is_verified());
    }
}
