//! [`ReadAt`] over DataFusion's object stores, and byte counting for metrics.
//!
//! Format readers are synchronous; the engine runs them on blocking threads, where
//! an object-store range request is awaited with the runtime handle. Local files
//! (`file://`) bypass the object store and use positioned reads directly.

use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use logsql_readers::error::{Error, Result};
use logsql_readers::io::{FileReader, ReadAt};
use logsql_readers::limits::Limits;

/// Small reads fetch at least this many bytes, kept for the reads that follow
/// (record headers, index records, a footer and the summary before it).
const READ_AHEAD: u64 = 4 << 10;

/// How many read-ahead windows a reader keeps (the file's head and tail, say).
const WINDOWS: usize = 2;

/// A file in an object store, read with range requests.
///
/// A small read fetches a `READ_AHEAD` (4 KiB) window (near the end of the object,
/// the object's last bytes: a suffix request for the footer) and the last
/// `WINDOWS` windows answer the reads that fall inside them; a large read
/// (a summary section, a chunk) fetches only what a window does not already
/// hold. So a scan requests the footer and the summary, then only the byte
/// ranges of the chunks it reads, never the whole object.
pub(crate) struct ObjectStoreReader {
    store: Arc<dyn ObjectStore>,
    location: ObjectPath,
    name: String,
    size: u64,
    handle: tokio::runtime::Handle,
    /// The last windows fetched (offset, bytes), newest last.
    windows: Mutex<Vec<(u64, Bytes)>>,
}

impl ObjectStoreReader {
    fn get(&self, range: Range<u64>) -> io::Result<Bytes> {
        let len = range.end - range.start;
        let bytes = self
            .handle
            .block_on(self.store.get_range(&self.location, range))
            .map_err(|e| io::Error::other(super::stores::describe_error(&e)))?;
        if bytes.len() as u64 != len {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(bytes)
    }
}

impl ReadAt for ObjectStoreReader {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.size)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        // The part of the read a window already holds (a prefix of it).
        let mut done = 0usize;
        if let Some((start, bytes)) = windows
            .iter()
            .rev()
            .find(|(start, bytes)| (*start..*start + bytes.len() as u64).contains(&offset))
        {
            let from = (offset - start) as usize;
            done = (bytes.len() - from).min(buf.len());
            buf[..done].copy_from_slice(&bytes[from..from + done]);
        }
        if done == buf.len() {
            return Ok(());
        }
        let rest = offset + done as u64..end;
        if rest.end - rest.start >= READ_AHEAD {
            let bytes = self.get(rest)?;
            buf[done..].copy_from_slice(&bytes);
            return Ok(());
        }
        let start = rest.start.min(self.size.saturating_sub(READ_AHEAD));
        let stop = (start + READ_AHEAD).min(self.size).max(rest.end);
        let bytes = self.get(start..stop)?;
        let from = (rest.start - start) as usize;
        let want = buf.len() - done;
        buf[done..].copy_from_slice(&bytes[from..from + want]);
        if windows.len() == WINDOWS {
            windows.remove(0);
        }
        windows.push((start, bytes));
        Ok(())
    }
}

/// Where a scanned file lives, enough to open it on any thread.
#[derive(Clone)]
pub struct FileLocation {
    /// The store holding the file.
    pub store: Arc<dyn ObjectStore>,
    /// The object's metadata (path, size, modification time).
    pub meta: ObjectMeta,
    /// Whether the store is the local file system (read with `pread`, not the store).
    pub local: bool,
    /// The name shown to users: the local path, or the object URL.
    pub name: String,
}

impl FileLocation {
    /// The location of a file DataFusion handed to a scan.
    pub fn new(
        store_url: ObjectStoreUrl,
        store: Arc<dyn ObjectStore>,
        file: &PartitionedFile,
    ) -> Self {
        Self::in_store(&store_url, store, file.object_meta.clone())
    }

    /// The location of `meta` in `store`, whose URL is `store_url`.
    pub(crate) fn in_store(
        store_url: &ObjectStoreUrl,
        store: Arc<dyn ObjectStore>,
        meta: ObjectMeta,
    ) -> Self {
        let local = store_url.as_str().starts_with("file://");
        let name = if local {
            format!("/{}", meta.location)
        } else {
            format!("{}{}", store_url.as_str(), meta.location)
        };
        Self {
            store,
            meta,
            local,
            name,
        }
    }

    /// The location of `meta` in `store` when the store's URL is not at hand.
    pub(crate) fn from_store(store: Arc<dyn ObjectStore>, meta: ObjectMeta) -> Self {
        let local = store.to_string().starts_with("LocalFileSystem");
        let name = if local {
            format!("/{}", meta.location)
        } else {
            format!("{store}/{}", meta.location)
        };
        Self {
            store,
            meta,
            local,
            name,
        }
    }

    /// The name shown to users: the local path, or the object URL.
    pub fn display_name(&self) -> String {
        self.name.clone()
    }

    /// Opens the file for reading. Must be called on a blocking thread (not an async task).
    pub fn open(&self) -> Result<Box<dyn ReadAt>> {
        if self.local {
            return Ok(Box::new(FileReader::open(&self.name)?));
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|e| {
            Error::Invalid(format!("object store read outside a tokio runtime: {e}"))
        })?;
        Ok(Box::new(ObjectStoreReader {
            store: Arc::clone(&self.store),
            location: self.meta.location.clone(),
            name: self.name.clone(),
            size: self.meta.size,
            handle,
            windows: Mutex::new(Vec::with_capacity(WINDOWS)),
        }))
    }

    /// Cache key: store, path, size and modification time.
    pub(crate) fn cache_key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.store,
            self.meta.location,
            self.meta.size,
            self.meta
                .last_modified
                .timestamp_nanos_opt()
                .unwrap_or_default()
        )
    }

    /// The store's identity, as the summary cache checks it.
    pub(crate) fn store_id(&self) -> String {
        self.store.to_string()
    }

    /// Reads the file's summary on a blocking thread, from `cache` (the
    /// session's file-metadata cache) when it holds it, else into it, under
    /// the default size caps ([`FileLocation::summary_with_limits`] takes a
    /// session's).
    pub async fn summary(
        &self,
        cache: Option<super::summary_cache::SummaryCache>,
        format: Option<Arc<dyn logsql_readers::formats::FormatReader>>,
    ) -> Result<super::summary_cache::CachedSummary> {
        self.summary_with_limits(cache, format, Limits::default())
            .await
    }

    /// [`FileLocation::summary`] under the size caps `limits` (from the
    /// session's options: `LogsqlOptions::limits`): decompression while the
    /// summary is read, and the temporary copy of a `.db3.zstd`, stop at them.
    pub async fn summary_with_limits(
        &self,
        cache: Option<super::summary_cache::SummaryCache>,
        format: Option<Arc<dyn logsql_readers::formats::FormatReader>>,
        limits: Limits,
    ) -> Result<super::summary_cache::CachedSummary> {
        let store = self.store_id();
        if let Some(hit) = super::summary_cache::lookup(cache.as_deref(), &store, &self.meta)
            && format
                .as_ref()
                .is_none_or(|f| f.name() == hit.format.name())
        {
            return Ok(hit);
        }
        let loc = self.clone();
        tokio::task::spawn_blocking(move || {
            let file = loc.open()?;
            super::summary_cache::get_or_load(
                cache.as_deref(),
                &store,
                &loc.meta,
                format.as_ref(),
                file.as_ref(),
                &limits,
            )
            .map(|(cached, _)| cached)
        })
        .await
        .map_err(|e| Error::Invalid(format!("summary task failed: {e}")))?
    }
}

/// Whether `path` names local files (no URL scheme, or `file://`), not an
/// object store's (`s3://`, `https://`, ...).
pub fn is_local(path: &str) -> bool {
    match url::Url::parse(path) {
        // A one-letter scheme is a Windows drive (`C:\\logs`).
        Ok(u) => u.scheme() == "file" || u.scheme().len() == 1,
        Err(_) => true,
    }
}
