//! [`StagingStore`]: an object store as DataFusion's file writers see it
//! during one `COPY` / `INSERT`. Each object they put (whole or in parts) is
//! written to an exclusively created temporary file: for the local file
//! system in the object's directory, for any other store in the temporary
//! directory. [`Staged::publish`] then, once the whole statement succeeded,
//! syncs each local one and renames it over its target, and uploads each
//! other one (the object appears only when its upload is complete);
//! [`Staged::discard`] (or dropping) removes them and any directory created
//! for them. Reads, lists and deletes go to the underlying store.

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

/// Where a staged file goes when published.
#[derive(Debug)]
enum Destination {
    /// A local file, renamed over.
    Local(PathBuf),
    /// An object of another store, uploaded.
    Remote {
        store: Arc<dyn ObjectStore>,
        path: Path,
    },
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::Remote { store, path } => write!(f, "{path} in {store}"),
        }
    }
}

/// What the writers of one statement put, not yet published.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    /// Complete files with their destinations, in the order they were completed.
    files: Vec<(NamedTempFile, Destination)>,
    /// Directories created for them that did not exist, outermost first.
    created_dirs: Vec<PathBuf>,
}

impl Staged {
    /// Syncs every staged local file and renames it over its target, then
    /// uploads every staged object. On an error the files not yet published
    /// are removed.
    pub(crate) async fn publish(mut self) -> std::io::Result<()> {
        let files = std::mem::take(&mut self.files);
        let (local, remote): (Vec<_>, Vec<_>) = files
            .into_iter()
            .partition(|(_, d)| matches!(d, Destination::Local(_)));
        for (temp, target) in local {
            if let Destination::Local(path) = &target {
                super::publish(temp, path)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("{target}: {e}")))?;
            }
        }
        self.created_dirs.clear();
        for (temp, target) in remote {
            if let Destination::Remote { store, path } = &target {
                super::upload(temp.path(), store, path)
                    .await
                    .map_err(|e| std::io::Error::other(format!("uploading {target}: {e}")))?;
            }
        }
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

/// A store with every put staged (see the module documentation).
#[derive(Debug)]
pub(crate) struct StagingStore {
    inner: Arc<dyn ObjectStore>,
    staged: Arc<Mutex<Staged>>,
    /// Whether `inner` is the root local file system (else a remote store).
    local: bool,
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
            local: true,
        }
    }

    /// Stages the puts made through `inner`, a store other than the local
    /// file system, with those of `local` (published together).
    pub(crate) fn remote(inner: Arc<dyn ObjectStore>, local: &StagingStore) -> Self {
        Self {
            inner,
            staged: Arc::clone(&local.staged),
            local: false,
        }
    }

    /// What was put so far.
    pub(crate) fn staged(&self) -> Arc<Mutex<Staged>> {
        Arc::clone(&self.staged)
    }

    /// The temporary file of `location`, and where it goes: for a remote
    /// store a file in the temporary directory, else see [`Self::create_local`].
    fn create(&self, location: &Path) -> object_store::Result<(NamedTempFile, Destination)> {
        if self.local {
            let (temp, target) = self.create_local(location)?;
            return Ok((temp, Destination::Local(target)));
        }
        let name = location.filename().unwrap_or("output");
        let temp =
            super::temp_file_beside(&std::env::temp_dir().join(format!("logsql-upload-{name}")))
                .map_err(|e| generic(format!("staging {location} for upload: {e}").into()))?;
        Ok((
            temp,
            Destination::Remote {
                store: Arc::clone(&self.inner),
                path: location.clone(),
            },
        ))
    }

    /// A temporary file beside the file `location` names, creating its
    /// directory (recorded for [`Staged::discard`]) when missing.
    fn create_local(&self, location: &Path) -> object_store::Result<(NamedTempFile, PathBuf)> {
        let target = local_path(location)?;
        if let Some(dir) = target.parent() {
            let mut missing = Vec::new();
            let mut d = Some(dir);
            while let Some(p) = d.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
                missing.push(p.to_path_buf());
                d = p.parent();
            }
            if !missing.is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| io_error(&target.display(), e))?;
                self.staged
                    .lock()
                    .created_dirs
                    .extend(missing.into_iter().rev());
            }
        }
        let temp = super::temp_file_beside(&target).map_err(|e| io_error(&target.display(), e))?;
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

fn io_error(target: &impl fmt::Display, e: std::io::Error) -> object_store::Error {
    generic(format!("writing {target}: {e}").into())
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
            target: Arc::new(target),
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
    target: Arc<Destination>,
    /// Where the next part goes (parts may be written out of order).
    offset: u64,
    staged: Arc<Mutex<Staged>>,
}

#[async_trait]
impl MultipartUpload for StagedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let (temp, target, at) = (
            Arc::clone(&self.temp),
            Arc::clone(&self.target),
            self.offset,
        );
        self.offset += data.content_length() as u64;
        Box::pin(blocking(move || {
            let mut guard = temp.lock();
            let file = guard
                .as_mut()
                .ok_or_else(|| generic(format!("{target}: upload already ended").into()))?;
            file.seek(SeekFrom::Start(at))
                .map_err(|e| io_error(&target, e))?;
            for chunk in &data {
                file.write_all(chunk).map_err(|e| io_error(&target, e))?;
            }
            Ok(())
        }))
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let temp = self
            .temp
            .lock()
            .take()
            .ok_or_else(|| generic(format!("{}: upload already ended", self.target).into()))?;
        let target = match &*self.target {
            Destination::Local(p) => Destination::Local(p.clone()),
            Destination::Remote { store, path } => Destination::Remote {
                store: Arc::clone(store),
                path: path.clone(),
            },
        };
        self.staged.lock().files.push((temp, target));
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
/// and every other URL with `inner`'s store staged into the same set.
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
        let store = self.inner.get_store(url)?;
        Ok(Arc::new(StagingStore::remote(store, &self.local)))
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
        let set = std::mem::take(&mut *staged.lock());
        set.publish().await.unwrap();
        assert_eq!(std::fs::read(&one).unwrap(), b"new");
        assert_eq!(std::fs::read(&nested).unwrap(), b"hello");
    }

    #[tokio::test]
    async fn objects_of_other_stores_are_uploaded_only_when_published() {
        let memory: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let local = StagingStore::new(Arc::new(object_store::local::LocalFileSystem::new()));
        let remote = StagingStore::remote(Arc::clone(&memory), &local);
        let old = Path::from("out/one.parquet");
        memory
            .put(&old, PutPayload::from_static(b"old"))
            .await
            .unwrap();
        let stage = |remote: &StagingStore| {
            let remote = StagingStore::remote(Arc::clone(&remote.inner), &local);
            async move {
                remote
                    .put(
                        &Path::from("out/one.parquet"),
                        PutPayload::from_static(b"new"),
                    )
                    .await
                    .unwrap();
                let mut up = remote
                    .put_multipart(&Path::from("out/p=1/two.parquet"))
                    .await
                    .unwrap();
                up.put_part(PutPayload::from_static(b"hello"))
                    .await
                    .unwrap();
                up.complete().await.unwrap();
            }
        };
        let listed = || async {
            let mut keys: Vec<String> = memory
                .list(None)
                .map(|m| m.unwrap().location.to_string())
                .collect()
                .await;
            keys.sort();
            keys
        };
        use futures::StreamExt;
        stage(&remote).await;
        assert_eq!(listed().await, ["out/one.parquet"]);
        local.staged().lock().discard();
        drop(std::mem::take(&mut *local.staged().lock()));
        assert_eq!(listed().await, ["out/one.parquet"]);
        let read = |p: &'static str| {
            let memory = Arc::clone(&memory);
            async move {
                memory
                    .get(&Path::from(p))
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap()
            }
        };
        assert_eq!(read("out/one.parquet").await.as_ref(), b"old");

        stage(&remote).await;
        let set = std::mem::take(&mut *local.staged().lock());
        set.publish().await.unwrap();
        assert_eq!(listed().await, ["out/one.parquet", "out/p=1/two.parquet"]);
        assert_eq!(read("out/one.parquet").await.as_ref(), b"new");
        assert_eq!(read("out/p=1/two.parquet").await.as_ref(), b"hello");
    }
}
