//! [`ReadAt`] over DataFusion's object stores, and byte counting for metrics.
//!
//! Format readers are synchronous; the engine runs them on blocking threads, where
//! an object-store range request is awaited with the runtime handle. Local files
//! (`file://`) bypass the object store and use positioned reads directly.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::datasource::listing::PartitionedFile;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::error::{Error, Result};
use crate::io::{FileReader, ReadAt};

/// A file in an object store, read with range requests.
pub struct ObjectStoreReader {
    store: Arc<dyn ObjectStore>,
    location: ObjectPath,
    name: String,
    size: u64,
    handle: tokio::runtime::Handle,
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
        let end = offset + buf.len() as u64;
        if end > self.size {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let bytes = self
            .handle
            .block_on(self.store.get_range(&self.location, offset..end))
            .map_err(io::Error::other)?;
        if bytes.len() != buf.len() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.copy_from_slice(&bytes);
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
        let local = store_url.as_str().starts_with("file://");
        let meta = file.object_meta.clone();
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
    pub fn from_store(store: Arc<dyn ObjectStore>, meta: ObjectMeta) -> Self {
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
        }))
    }

    /// Cache key: path, size and modification time.
    pub fn cache_key(&self) -> String {
        format!(
            "{}|{}|{}",
            self.meta.location,
            self.meta.size,
            self.meta
                .last_modified
                .timestamp_nanos_opt()
                .unwrap_or_default()
        )
    }

    /// Reads the file's summary (cached) on a blocking thread.
    pub async fn summary(
        &self,
        format: Option<Arc<dyn crate::formats::LogFormat>>,
    ) -> Result<super::summary_cache::CachedSummary> {
        let loc = self.clone();
        tokio::task::spawn_blocking(move || {
            let file = loc.open()?;
            super::summary_cache::get_or_load(&loc.cache_key(), format.as_ref(), file.as_ref())
        })
        .await
        .map_err(|e| Error::Invalid(format!("summary task failed: {e}")))?
    }
}

/// Wraps a [`ReadAt`] and counts the bytes read through it.
pub struct CountingReader<'a> {
    inner: &'a dyn ReadAt,
    bytes: AtomicU64,
}

impl<'a> CountingReader<'a> {
    /// Counts reads of `inner`.
    pub fn new(inner: &'a dyn ReadAt) -> Self {
        Self {
            inner,
            bytes: AtomicU64::new(0),
        }
    }

    /// Bytes read since the last call.
    pub fn take_count(&self) -> u64 {
        self.bytes.swap(0, Ordering::Relaxed)
    }
}

impl ReadAt for CountingReader<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.inner.read_exact_at(offset, buf)
    }
}
