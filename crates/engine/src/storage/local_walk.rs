//! The local file system as logsql lists it: object_store's
//! [`LocalFileSystem`] for reading and writing, with directory listings
//! walked here so that symbolic links cannot make a walk loop or explode.
//!
//! `LocalFileSystem` lists with `walkdir`, following links: a link back to a
//! directory it is in (`a -> .`) ends the whole listing with "File system loop
//! found", and links that fan out (each directory linking twice to the next)
//! make a walk without end. [`SafeLocalFileSystem`] walks instead:
//!
//! - real directories first, then the directories links lead to, each
//!   directory (by device and inode) listed once, under the first path the
//!   walk reaches it by: a link to a directory listed already adds nothing
//!   (a link back to a directory it is in, a loop, is named in a warning);
//! - at most [`MAX_DEPTH`] directories below the listed one: deeper
//!   directories are left out, with a warning naming the first of them;
//! - files as `LocalFileSystem` lists them (a link to a file is listed by the
//!   link's path; broken links, devices, pipes and sockets are left out).
//!
//! Warnings go to the `log` crate (the CLI prints them on stderr), once per
//! link or directory per store (a session's runtime), however often the
//! directory is listed. Everything but listing is `LocalFileSystem`'s own.
//!
//! [`walk_files`] is the same walk by file path, for operations that take
//! local paths themselves (`doctor`), their warnings theirs to give.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::object_store::path::Path;
use datafusion::object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
// DataFusion's execution crate builds object_store with `fs`, so `local` is there.
use datafusion::object_store::local::LocalFileSystem;
use parking_lot::Mutex;

/// Most directories a listing descends below the directory listed.
pub const MAX_DEPTH: usize = 32;

/// The local file system (rooted at `/`), listed without following a link
/// into a loop and no deeper than [`MAX_DEPTH`] (see the module documentation).
#[derive(Default)]
pub struct SafeLocalFileSystem {
    inner: LocalFileSystem,
    /// The warnings given already (each is given once).
    warned: Arc<Mutex<HashSet<String>>>,
}

impl SafeLocalFileSystem {
    /// The local file system, rooted at `/` as DataFusion's default `file://` store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for SafeLocalFileSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SafeLocalFileSystem({})", self.inner)
    }
}

impl fmt::Display for SafeLocalFileSystem {
    /// As `LocalFileSystem` (`LocalFileSystem(file:///)`): the summary cache
    /// and `FileLocation` recognise local files by the store's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

/// A directory's identity: device and inode (the canonical path where there
/// are none).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum DirKey {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg_attr(unix, allow(dead_code))]
    Canonical(PathBuf),
}

fn dir_key(path: &FsPath, meta: &std::fs::Metadata) -> DirKey {
    #[cfg(unix)]
    {
        let _ = path;
        use std::os::unix::fs::MetadataExt;
        DirKey::Inode(meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        DirKey::Canonical(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
    }
}

/// What a walk found: the files, and what it has to say about links and depth.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Every file, by its path under the walked directory.
    pub(crate) files: Vec<ObjectMeta>,
    /// Links not followed and directories left out, said for the user.
    pub(crate) warnings: Vec<String>,
}

/// An error of the walk of `path`, as object_store reports listing errors.
fn walk_error(path: &FsPath, e: impl fmt::Display) -> datafusion::object_store::Error {
    datafusion::object_store::Error::Generic {
        store: "LocalFileSystem",
        source: format!("cannot list {}: {e}", path.display()).into(),
    }
}

/// Whether object_store lists a file of this name: not one of its own
/// unfinished uploads (`name#123`).
fn listable_name(name: &str) -> bool {
    match name.split_once('#') {
        Some((_, suffix)) if !suffix.is_empty() => !suffix.bytes().all(|b| b.is_ascii_digit()),
        _ => true,
    }
}

/// Walks the directory `root` (see the module documentation). A `root` that
/// does not exist or is not a directory holds no files, as for
/// `LocalFileSystem`; a directory that cannot be read is an error.
pub(crate) fn walk(root: &FsPath) -> Result<Walk> {
    let mut files = Vec::new();
    let warnings = walk_with::<datafusion::object_store::Error>(root, &mut |path, meta| {
        let location = Path::from_absolute_path(path).map_err(|e| walk_error(path, e))?;
        files.push(object_meta(location, meta));
        Ok(())
    })?;
    Ok(Walk { files, warnings })
}

/// A local directory's files by their paths under it, as the walk of a
/// listing finds them (links followed once, loops named, no deeper than
/// [`MAX_DEPTH`]; see the module documentation), and what the walk has to
/// say about links and depth.
#[derive(Debug, Default)]
pub struct LocalFiles {
    /// Every file, by its path under the walked directory (as spelled),
    /// in the order walked.
    pub files: Vec<PathBuf>,
    /// Links not followed (a loop among them) and directories left out.
    pub warnings: Vec<String>,
}

/// An entry the walk could not read, and why.
#[derive(Debug)]
pub struct WalkError {
    /// The directory or entry.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for WalkError {}

impl From<WalkError> for datafusion::object_store::Error {
    fn from(e: WalkError) -> Self {
        walk_error(&e.path, e.source)
    }
}

/// Walks the local directory `root` as a listing does (see [`LocalFiles`]):
/// its files by path, the warnings not given (the caller says them). A
/// `root` that does not exist or is not a directory holds no files.
pub fn walk_files(root: &FsPath) -> std::result::Result<LocalFiles, WalkError> {
    let mut files = Vec::new();
    let warnings = walk_with::<WalkError>(root, &mut |path, _| {
        files.push(path.to_path_buf());
        Ok(())
    })?;
    Ok(LocalFiles { files, warnings })
}

/// The walk of `root`: hands `file` each file's path and metadata, returns
/// the warnings.
fn walk_with<E: From<WalkError>>(
    root: &FsPath,
    file: &mut dyn FnMut(&FsPath, &std::fs::Metadata) -> std::result::Result<(), E>,
) -> std::result::Result<Vec<String>, E> {
    let io = |path: &FsPath, source: std::io::Error| {
        E::from(WalkError {
            path: path.to_path_buf(),
            source,
        })
    };
    let mut out = Walk::default();
    let meta = match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => m,
        Ok(_) => return Ok(out.warnings),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out.warnings),
        Err(e) => return Err(io(root, e)),
    };
    // The first path each directory was listed under.
    let mut listed: HashMap<DirKey, PathBuf> = HashMap::new();
    listed.insert(dir_key(root, &meta), root.to_path_buf());
    // Real directories to list (depth below `root`), and the links to
    // directories met, followed once no real directory is left.
    let mut real: Vec<(PathBuf, usize)> = vec![(root.to_path_buf(), 0)];
    let mut links: std::collections::VecDeque<(PathBuf, usize)> = Default::default();
    loop {
        let (dir, depth) = match real.pop() {
            Some(next) => next,
            None => match links.pop_front() {
                Some((link, depth)) => {
                    // Listed meanwhile by another path?
                    let Ok(meta) = std::fs::metadata(&link) else {
                        continue;
                    };
                    let key = dir_key(&link, &meta);
                    if let Some(first) = listed.get(&key) {
                        note_listed_already(&mut out, &link, first);
                        continue;
                    }
                    listed.insert(key, link.clone());
                    (link, depth)
                }
                None => break,
            },
        };
        let mut entries: Vec<std::fs::DirEntry> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .collect::<std::io::Result<_>>()
                .map_err(|e| io(&dir, e))?,
            // Removed while being walked.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&dir, e)),
        };
        entries.sort_by_key(|e| e.file_name());
        // Pushed in reverse: popped, and so listed, in name order.
        let mut subdirs = Vec::new();
        for entry in entries {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let is_link = kind.is_symlink();
            let meta = if is_link {
                match std::fs::metadata(&path) {
                    Ok(m) => m,
                    // A broken link (or one to a place that is not ours to
                    // see) is left out, as LocalFileSystem does.
                    Err(_) => continue,
                }
            } else if kind.is_dir() || kind.is_file() {
                match entry.metadata() {
                    Ok(m) => m,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(io(&path, e)),
                }
            } else {
                continue;
            };
            if meta.is_file() {
                let name = entry.file_name();
                if !listable_name(&name.to_string_lossy()) {
                    continue;
                }
                file(&path, &meta)?;
                continue;
            }
            if !meta.is_dir() {
                continue;
            }
            if depth + 1 > MAX_DEPTH {
                out.warnings.push(format!(
                    "{}: more than {MAX_DEPTH} directories below {}; its files are left out",
                    path.display(),
                    root.display()
                ));
                continue;
            }
            let key = dir_key(&path, &meta);
            if let Some(first) = listed.get(&key) {
                note_listed_already(&mut out, &path, first);
                continue;
            }
            if is_link {
                links.push_back((path, depth + 1));
            } else {
                listed.insert(key, path.clone());
                subdirs.push((path, depth + 1));
            }
        }
        real.extend(subdirs.into_iter().rev());
    }
    Ok(out.warnings)
}

/// `path` leads to the directory listed already as `first`: a loop when
/// `first` holds `path` (warned of), else a second name for it (said at debug level).
fn note_listed_already(out: &mut Walk, path: &FsPath, first: &FsPath) {
    if path.starts_with(first) {
        out.warnings.push(format!(
            "{}: a symbolic link to {}, a directory it is in (a loop); not followed",
            path.display(),
            first.display()
        ));
    } else {
        log::debug!(
            "{}: leads to {}, listed already; not listed again",
            path.display(),
            first.display()
        );
    }
}

/// An object's metadata as `LocalFileSystem` gives it (the same ETag, so the
/// caches keyed by it agree).
fn object_meta(location: Path, meta: &std::fs::Metadata) -> ObjectMeta {
    let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    let mtime = modified
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    let size = meta.len();
    ObjectMeta {
        location,
        last_modified: modified.into(),
        size,
        e_tag: Some(format!("{inode:x}-{mtime:x}-{size:x}")),
        version: None,
    }
}

/// The file-system path of `prefix` under `/`, as `LocalFileSystem` maps it.
fn prefix_path(prefix: Option<&Path>) -> Result<PathBuf> {
    let mut url = url::Url::parse("file:///").map_err(|e| walk_error(FsPath::new("/"), e))?;
    if let Some(prefix) = prefix
        && let Ok(mut segments) = url.path_segments_mut()
    {
        segments.pop_if_empty().extend(prefix.parts());
    }
    url.to_file_path()
        .map_err(|_| walk_error(FsPath::new(url.path()), "not a local path"))
}

/// Gives each of `warnings` not in `warned` yet.
fn give_warnings(warned: &Mutex<HashSet<String>>, warnings: Vec<String>) {
    let mut warned = warned.lock();
    for w in warnings {
        if warned.insert(w.clone()) {
            log::warn!("{w}");
        }
    }
}

impl SafeLocalFileSystem {
    /// The files under `prefix`, walked on a blocking thread.
    fn walk_prefix(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let root = prefix_path(prefix);
        let warned = Arc::clone(&self.warned);
        futures::stream::once(async move {
            let root = root?;
            let walk = match tokio::runtime::Handle::try_current() {
                Ok(_) => tokio::task::spawn_blocking(move || walk(&root))
                    .await
                    .map_err(|e| walk_error(FsPath::new("/"), e))??,
                Err(_) => walk(&root)?,
            };
            give_warnings(&warned, walk.warnings);
            Ok::<_, datafusion::object_store::Error>(futures::stream::iter(
                walk.files.into_iter().map(Ok),
            ))
        })
        .try_flatten()
        .boxed()
    }
}

#[async_trait]
impl ObjectStore for SafeLocalFileSystem {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.walk_prefix(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let offset = offset.clone();
        self.walk_prefix(prefix)
            .try_filter(move |m| futures::future::ready(m.location > offset))
            .boxed()
    }

    /// One level of `prefix`: its files, and its directories except links
    /// back to it or to a directory above it (a loop; warned of).
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let dir = prefix_path(prefix)?;
        let prefix = prefix.cloned().unwrap_or_default();
        let (result, warnings) = tokio::task::spawn_blocking(move || list_one(&dir, &prefix))
            .await
            .map_err(|e| walk_error(FsPath::new("/"), e))??;
        give_warnings(&self.warned, warnings);
        Ok(result)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

/// The files and directories directly in `dir` (the object path `prefix`),
/// without the links that lead back to `dir` or above it.
fn list_one(dir: &FsPath, prefix: &Path) -> Result<(ListResult, Vec<String>)> {
    let mut result = ListResult {
        common_prefixes: Vec::new(),
        objects: Vec::new(),
    };
    let mut warnings = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((result, warnings)),
        Err(e) => return Err(walk_error(dir, e)),
    };
    // `dir` and the directories above it, by identity and path.
    let above: Vec<(DirKey, &FsPath)> = dir
        .ancestors()
        .filter_map(|a| std::fs::metadata(a).ok().map(|m| (dir_key(a, &m), a)))
        .collect();
    for entry in rd {
        let entry = entry.map_err(|e| walk_error(dir, e))?;
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if meta.is_dir() {
            let key = dir_key(&path, &meta);
            if let Some((_, target)) = above.iter().find(|(k, _)| *k == key) {
                warnings.push(format!(
                    "{}: a symbolic link to {}, a directory it is in (a loop); not followed",
                    path.display(),
                    target.display()
                ));
                continue;
            }
            result
                .common_prefixes
                .push(prefix.clone().join(name.as_ref()));
        } else if meta.is_file() && listable_name(&name) {
            let location = Path::from_absolute_path(&path).map_err(|e| walk_error(&path, e))?;
            result.objects.push(object_meta(location, &meta));
        }
    }
    result.common_prefixes.sort();
    Ok((result, warnings))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fresh directory under the temporary directory, removed when dropped.
    struct TestDir(PathBuf);

    impl TestDir {
        fn new() -> Self {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path =
                std::env::temp_dir().join(format!("logsql-walk-test-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }

        fn path(&self) -> &FsPath {
            &self.0
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn names(walk: &Walk, root: &FsPath) -> Vec<String> {
        let base = Path::from_absolute_path(root).unwrap();
        let mut v: Vec<String> = walk
            .files
            .iter()
            .map(|m| {
                m.location
                    .prefix_match(&base)
                    .unwrap()
                    .map(|p| p.as_ref().to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn loops_are_named_and_the_real_files_listed() {
        let dir = TestDir::new();
        let root = dir.path();
        std::fs::write(root.join("x.mcap"), b"x").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/y.mcap"), b"yy").unwrap();
        symlink(".", root.join("a")).unwrap();
        symlink("..", root.join("sub/up")).unwrap();
        symlink("sub", root.join("latest")).unwrap();
        symlink("nowhere", root.join("broken")).unwrap();
        let walk = walk(root).unwrap();
        assert_eq!(names(&walk, root), ["sub/y.mcap", "x.mcap"]);
        assert_eq!(walk.warnings.len(), 2, "{:?}", walk.warnings);
        assert!(
            walk.warnings[0].contains("/a: a symbolic link to"),
            "{:?}",
            walk.warnings
        );
        assert!(
            walk.warnings[1].contains("sub/up: a symbolic link to"),
            "{:?}",
            walk.warnings
        );
        assert!(walk.warnings[1].contains("(a loop)"), "{:?}", walk.warnings);
    }

    #[test]
    fn links_that_fan_out_list_each_directory_once() {
        let dir = TestDir::new();
        let root = dir.path();
        // d0 .. d40, each linking twice to the next: 2^40 paths.
        for i in 0..=40 {
            std::fs::create_dir(root.join(format!("d{i}"))).unwrap();
            std::fs::write(root.join(format!("d{i}/f.bag")), b"").unwrap();
        }
        for i in 0..40 {
            let next = format!("../d{}", i + 1);
            symlink(&next, root.join(format!("d{i}/x"))).unwrap();
            symlink(&next, root.join(format!("d{i}/y"))).unwrap();
        }
        let walk = walk(root).unwrap();
        assert_eq!(walk.files.len(), 41);
        assert!(walk.warnings.is_empty(), "{:?}", walk.warnings);
    }

    #[test]
    fn the_depth_limit_leaves_deeper_files_out_with_a_warning() {
        let dir = TestDir::new();
        let root = dir.path();
        let mut deep = root.to_path_buf();
        for i in 0..=MAX_DEPTH {
            deep.push(format!("l{i}"));
            std::fs::create_dir(&deep).unwrap();
            std::fs::write(deep.join("f.mcap"), b"").unwrap();
        }
        let walk = walk(root).unwrap();
        assert_eq!(walk.files.len(), MAX_DEPTH);
        assert_eq!(walk.warnings.len(), 1);
        assert!(
            walk.warnings[0].contains(&format!(
                "l{MAX_DEPTH}: more than {MAX_DEPTH} directories below"
            )),
            "{:?}",
            walk.warnings
        );
    }

    #[tokio::test]
    async fn listings_agree_with_local_file_system_where_it_can_list() {
        let dir = TestDir::new();
        let root = dir.path();
        std::fs::create_dir_all(root.join("robot=r1/date=d")).unwrap();
        std::fs::write(root.join("robot=r1/date=d/run one.mcap"), b"abc").unwrap();
        std::fs::write(root.join("top.bag"), b"").unwrap();
        std::fs::write(root.join("upload#12"), b"").unwrap();
        symlink("top.bag", root.join("link.bag")).unwrap();
        let prefix = Path::from_absolute_path(root).unwrap();
        let sort = |mut v: Vec<ObjectMeta>| {
            v.sort_by(|a, b| a.location.cmp(&b.location));
            v
        };
        let ours: Vec<ObjectMeta> = SafeLocalFileSystem::new()
            .list(Some(&prefix))
            .try_collect()
            .await
            .unwrap();
        let theirs: Vec<ObjectMeta> = LocalFileSystem::new()
            .list(Some(&prefix))
            .try_collect()
            .await
            .unwrap();
        assert_eq!(sort(ours), sort(theirs));
        let ours = SafeLocalFileSystem::new()
            .list_with_delimiter(Some(&prefix))
            .await
            .unwrap();
        let theirs = LocalFileSystem::new()
            .list_with_delimiter(Some(&prefix))
            .await
            .unwrap();
        assert_eq!(ours.common_prefixes, theirs.common_prefixes);
        assert_eq!(sort(ours.objects), sort(theirs.objects));
    }
}
