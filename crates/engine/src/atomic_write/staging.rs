//! [`StagingStore`]: the local file system as DataFusion's file writers see it
//! during one `COPY` / `INSERT`. Each object they put (whole or in parts) is
//! written to an exclusively created temporary file in the object's
//! directory; [`Staged::publish`] syncs each one and renames it over its
//! target once the whole statement succeeded, and [`Staged::discard`] (or
//! dropping) removes them and any directory created for them. Reads, lists
//! and deletes go to the underlying store.

use std::fmt;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::execution::object_store::ObjectStoreRegistry;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, UploadPart,
};
use parking_lot::Mutex;
use tempfile::NamedTempFile;
use url::Url;

/// What the writers of one statement put, not yet published.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    /// Complete files with their targets, in the order they were completed.
    files: Vec<(NamedTempFile, PathBuf)>,
    /// Directories created for them that did not exist, outermost first.
    created_dirs: Vec<PathBuf>,
}

impl Staged {
    /// Syncs every staged file and renames it over its target. On an error
    /// the files not yet renamed are removed.
    pub(crate) fn publish(&mut self) -> std::io::Result<()> {
        for (temp, target) in self.files.drain(..) {
            super::publish(temp, &target)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", target.display())))?;
        }
        self.created_dirs.clear();
        Ok(())
    }

    /// Removes every staged file and the directories created for them.
    pub(crate) fn discard(&mut self) {
        self.files.clear();
        for dir in self.created_dirs.drain(..).rev() {
            // Fails, as it should, on a directory something else put a file in.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        self.discard();
    }
}

/// The local file system with every put staged (see the module documentation).
#[derive(Debug)]
pub(crate) struct StagingStore {
    inner: Arc<dyn ObjectStore>,
    staged: Arc<Mutex<Staged>>,
}

impl fmt::Display for StagingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Staging({})", self.inner)
    }
}

impl StagingStore {
    /// Stages the puts made through `inner`, the root local file system store.
    pub(crate) fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            staged: Arc::default(),
        }
    }

    /// What was put so far.
    pub(crate) fn staged(&self) -> Arc<Mutex<Staged>> {
        Arc::clone(&self.staged)
    }

    /// A temporary file beside the file `location` names, creating its
    /// directory (recorded for [`Staged::discard`]) when missing.
    fn create(&self, location: &Path) -> object_store::Result<(NamedTempFile, PathBuf)> {
        let target = local_path(location)?;
        if let Some(dir) = target.parent() {
            let mut missing = Vec::new();
            let mut d = Some(dir);
            while let Some(p) = d.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
                missing.push(p.to_path_buf());
                d = p.parent();
            }
            if !missing.is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| io_error(&target, e))?;
                self.staged
                    .lock()
                    .created_dirs
                    .extend(missing.into_iter().rev());
            }
        }
        let temp = super::temp_file_beside(&target).map_err(|e| io_error(&target, e))?;
        Ok((temp, target))
    }
}

/// The file system path of `location` in the root local store (as
/// `object_store`'s `LocalFileSystem` maps it).
fn local_path(location: &Path) -> object_store::Result<PathBuf> {
    let mut url = Url::parse("file:///").map_err(|e| generic(Box::new(e)))?;
    url.path_segments_mut()
        .map_err(|()| generic("file:/// has no path".into()))?
        .pop_if_empty()
        .extend(location.parts());
    url.to_file_path()
        .map_err(|()| generic(format!("{location} is not a local path").into()))
}

fn generic(source: Box<dyn std::error::Error + Send + Sync>) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalFileSystem",
        source,
    }
}

fn io_error(target: &std::path::Path, e: std::io::Error) -> object_store::Error {
    generic(format!("writing {}: {e}", target.display()).into())
}

/// Runs blocking file work off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> object_store::Result<T> + Send + 'static,
) -> object_store::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| generic(Box::new(e)))?
}

#[async_trait]
impl ObjectStore for StagingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        if !matches!(opts.mode, PutMode::Overwrite) {
            return self.inner.put_opts(location, payload, opts).await;
        }
        let (mut temp, target) = self.create(location)?;
        let (temp, target) = blocking(move || {
            for chunk in &payload {
                temp.write_all(chunk).map_err(|e| io_error(&target, e))?;
            }
            Ok((temp, target))
        })
        .await?;
        self.staged.lock().files.push((temp, target));
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let (temp, target) = self.create(location)?;
        Ok(Box::new(StagedUpload {
            temp: Arc::new(Mutex::new(Some(temp))),
            target,
            offset: 0,
            staged: Arc::clone(&self.staged),
        }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[std::ops::Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

/// An upload in parts into one staged temporary file.
#[derive(Debug)]
struct StagedUpload {
    /// The file until the upload is completed or aborted.
    temp: Arc<Mutex<Option<NamedTempFile>>>,
    target: PathBuf,
    /// Where the next part goes (parts may be written out of order).
    offset: u64,
    staged: Arc<Mutex<Staged>>,
}

#[async_trait]
impl MultipartUpload for StagedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let (temp, target, at) = (Arc::clone(&self.temp), self.target.clone(), self.offset);
        self.offset += data.content_length() as u64;
        Box::pin(blocking(move || {
            let mut guard = temp.lock();
            let file = guard.as_mut().ok_or_else(|| {
                generic(format!("{}: upload already ended", target.display()).into())
            })?;
            file.seek(SeekFrom::Start(at))
                .map_err(|e| io_error(&target, e))?;
            for chunk in &data {
                file.write_all(chunk).map_err(|e| io_error(&target, e))?;
            }
            Ok(())
        }))
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let temp = self.temp.lock().take().ok_or_else(|| {
            generic(format!("{}: upload already ended", self.target.display()).into())
        })?;
        self.staged.lock().files.push((temp, self.target.clone()));
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.temp.lock().take();
        Ok(())
    }
}

/// An object-store registry that answers `file://` with one [`StagingStore`]
/// and every other URL as `inner` does.
#[derive(Debug)]
pub(crate) struct StagingRegistry {
    inner: Arc<dyn ObjectStoreRegistry>,
    local: Arc<StagingStore>,
}

impl StagingRegistry {
    /// `inner`, with local files staged in `local`.
    pub(crate) fn new(inner: Arc<dyn ObjectStoreRegistry>, local: Arc<StagingStore>) -> Self {
        Self { inner, local }
    }
}

impl ObjectStoreRegistry for StagingRegistry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        if url.scheme() == "file" {
            return Ok(Arc::clone(&self.local) as Arc<dyn ObjectStore>);
        }
        self.inner.get_store(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn puts_appear_only_when_published_and_vanish_when_discarded() {
        let dir = tempfile::tempdir().unwrap();
        let store = StagingStore::new(Arc::new(object_store::local::LocalFileSystem::new()));
        let one = dir.path().join("one.csv");
        let nested = dir.path().join("a=1/b=2/two.csv");
        std::fs::write(&one, b"old").unwrap();
        let loc = |p: &std::path::Path| Path::from_absolute_path(p).unwrap();
        store
            .put(&loc(&one), PutPayload::from_static(b"new"))
            .await
            .unwrap();
        let mut up = store.put_multipart(&loc(&nested)).await.unwrap();
        let (a, b) = (
            up.put_part(PutPayload::from_static(b"he")),
            up.put_part(PutPayload::from_static(b"llo")),
        );
        b.await.unwrap();
        a.await.unwrap();
        up.complete().await.unwrap();
        assert_eq!(std::fs::read(&one).unwrap(), b"old");
        assert!(!nested.exists());
        let staged = store.staged();
        staged.lock().discard();
        assert_eq!(std::fs::read(&one).unwrap(), b"old");
        assert!(
            !dir.path().join("a=1").exists(),
            "created directories are removed"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        store
            .put(&loc(&one), PutPayload::from_static(b"new"))
            .await
            .unwrap();
        let mut up = store.put_multipart(&loc(&nested)).await.unwrap();
        up.put_part(PutPayload::from_static(b"hello"))
            .await
            .unwrap();
        up.complete().await.unwrap();
        staged.lock().publish().unwrap();
        assert_eq!(std::fs::read(&one).unwrap(), b"new");
        assert_eq!(std::fs::read(&nested).unwrap(), b"hello");
    }
}
