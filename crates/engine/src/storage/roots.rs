//! Data roots: the places a session may read (or write), for processes that
//! answer other people's queries (`logsql worker`, a server).
//!
//! A root is a local directory or an object-store prefix (`s3://bucket/runs/`).
//! A local path is inside a root when its canonical form (every link and `..`
//! resolved) is the root or below it, so a link out of a root is outside it;
//! a URL is inside a root when it starts with the root's prefix at a path
//! segment boundary (`s3://b/runs` admits `s3://b/runs/a.mcap`, not
//! `s3://b/runs2/a.mcap`). A session without roots reads anything its user
//! can, as the CLI does.
//!
//! [`DataRoots`] is kept on a session as a config extension
//! ([`DataRoots::of`]); `url_table` checks every path a query names and every
//! file a listing finds, and the plan guard every file a physical plan scans.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::prelude::SessionConfig;
use url::Url;

/// The local directories and object-store prefixes a session may touch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataRoots {
    /// Canonical local directories.
    local: Vec<PathBuf>,
    /// Object-store prefixes, each ending with `/`.
    remote: Vec<Url>,
}

impl DataRoots {
    /// Parses roots: local directories (which must exist) or URLs of
    /// object-store prefixes (`s3://bucket/prefix`, `file:///dir`).
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Self> {
        let mut roots = Self::default();
        for item in items {
            let item = item.as_ref().trim();
            if item.contains("://") && !item.starts_with("file://") {
                let mut url =
                    Url::parse(item).map_err(|e| config_err(format!("data root {item:?}: {e}")))?;
                if url.host_str().is_none_or(str::is_empty) {
                    return Err(config_err(format!(
                        "data root {item:?}: an object-store root names its bucket or host"
                    )));
                }
                url.set_query(None);
                url.set_fragment(None);
                if !url.path().ends_with('/') {
                    let path = format!("{}/", url.path());
                    url.set_path(&path);
                }
                roots.remote.push(url);
            } else {
                let path = match item.strip_prefix("file://") {
                    Some(_) => Url::parse(item)
                        .ok()
                        .and_then(|u| u.to_file_path().ok())
                        .ok_or_else(|| config_err(format!("data root {item:?}: not a file URL")))?,
                    None => PathBuf::from(item),
                };
                let canonical = std::fs::canonicalize(&path)
                    .map_err(|e| config_err(format!("data root {}: {e}", path.display())))?;
                if !canonical.is_dir() {
                    return Err(config_err(format!(
                        "data root {}: not a directory",
                        path.display()
                    )));
                }
                roots.local.push(canonical);
            }
        }
        Ok(roots)
    }

    /// Whether no root is set (then nothing is inside).
    pub fn is_empty(&self) -> bool {
        self.local.is_empty() && self.remote.is_empty()
    }

    /// The roots of a session, if it has any.
    pub fn of(config: &SessionConfig) -> Option<Arc<Self>> {
        config.get_extension::<Self>()
    }

    /// Puts these roots on a session's config: every path its queries name
    /// and every file its plans scan must be inside them.
    pub fn install(self, config: SessionConfig) -> SessionConfig {
        config.with_extension(Arc::new(self))
    }

    /// Refuses a URL (a file, a listing prefix or a store's object) outside
    /// the roots; `asked` is the path as the user wrote it, for the error.
    pub fn check_url(&self, url: &Url, asked: &str) -> Result<()> {
        if url.scheme() == "file" {
            let path = url
                .to_file_path()
                .map_err(|_| outside(asked, "not a local path"))?;
            return self.check_local(&path, asked);
        }
        let inside = self.remote.iter().any(|root| {
            root.scheme() == url.scheme()
                && root.host_str() == url.host_str()
                && root.port() == url.port()
                && (url.path().starts_with(root.path())
                    || format!("{}/", url.path()) == root.path())
        });
        match inside {
            true => Ok(()),
            false => Err(outside(asked, "not below any data root")),
        }
    }

    /// Refuses a local path outside the roots. The path is resolved as the
    /// file system resolves it (links, `..`); of a path that does not exist
    /// (a glob, a file not yet written) its nearest existing ancestor is.
    pub fn check_local(&self, path: &Path, asked: &str) -> Result<()> {
        let absolute = std::path::absolute(path).map_err(|e| outside(asked, &e.to_string()))?;
        let mut existing = absolute.as_path();
        let canonical = loop {
            match std::fs::canonicalize(existing) {
                Ok(c) => break c,
                Err(_) => match existing.parent() {
                    Some(parent) => existing = parent,
                    None => return Err(outside(asked, "no part of it exists")),
                },
            }
        };
        // The part that does not exist yet may not climb out with `..`.
        let rest = absolute.strip_prefix(existing).unwrap_or(Path::new(""));
        if rest
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(outside(asked, "`..` below a path that does not exist"));
        }
        match self.local.iter().any(|root| canonical.starts_with(root)) {
            true => Ok(()),
            false => Err(outside(asked, "not below any data root")),
        }
    }
}

impl DataRoots {
    /// Each root as a path or URL a query can name: the local directories
    /// (canonical), then the object-store prefixes.
    pub fn names(&self) -> Vec<String> {
        self.local
            .iter()
            .map(|p| p.display().to_string())
            .chain(self.remote.iter().map(Url::to_string))
            .collect()
    }

    /// The first local root (where a server takes relative paths from).
    pub fn first_local(&self) -> Option<&Path> {
        self.local.first().map(PathBuf::as_path)
    }
}

impl fmt::Display for DataRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.names().join(", "))
    }
}

/// The URL of an object of a store (`file:///dir/a.mcap`, `s3://b/dir/a.mcap`).
pub fn object_url(store: &ObjectStoreUrl, location: &ObjectPath) -> Result<Url> {
    Url::parse(&format!("{}{}", store.as_str(), location))
        .map_err(|e| DataFusionError::Plan(format!("{store}{location}: {e}")))
}

fn config_err(message: String) -> DataFusionError {
    DataFusionError::Configuration(message)
}

fn outside(asked: &str, why: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{asked}: refused, outside the data roots this process may read ({why})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_roots_admit_their_subtree_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.mcap"), b"x").unwrap();
        std::fs::write(dir.path().join("secret"), b"x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        let roots = DataRoots::parse(&[root.to_str().unwrap()]).unwrap();

        roots.check_local(&root.join("sub/a.mcap"), "a").unwrap();
        roots.check_local(&root.join("sub/*.mcap"), "glob").unwrap();
        roots
            .check_local(&root.join("new/out.mcap"), "new")
            .unwrap();
        for bad in [
            dir.path().join("secret"),
            root.join("../secret"),
            root.join("sub/../../secret"),
            root.join("new/../../secret"),
            PathBuf::from("/etc/passwd"),
        ] {
            let err = roots.check_local(&bad, "bad").unwrap_err().to_string();
            assert!(err.contains("refused, outside the data roots"), "{err}");
        }
        #[cfg(unix)]
        assert!(roots.check_local(&root.join("link"), "link").is_err());
        let url = Url::from_file_path(root.join("sub/a.mcap")).unwrap();
        roots.check_url(&url, "a").unwrap();
        let url = Url::from_file_path("/etc/passwd").unwrap();
        assert!(roots.check_url(&url, "p").is_err());
    }

    #[test]
    fn remote_roots_match_at_segment_boundaries() {
        let roots = DataRoots::parse(&["s3://bucket/runs"]).unwrap();
        for ok in [
            "s3://bucket/runs/a.mcap",
            "s3://bucket/runs/",
            "s3://bucket/runs",
        ] {
            roots.check_url(&Url::parse(ok).unwrap(), ok).unwrap();
        }
        for bad in [
            "s3://bucket/runs2/a.mcap",
            "s3://other/runs/a.mcap",
            "gs://bucket/runs/a.mcap",
            "http://bucket/runs/a.mcap",
            "file:///etc/passwd",
        ] {
            assert!(
                roots.check_url(&Url::parse(bad).unwrap(), bad).is_err(),
                "{bad}"
            );
        }
        assert!(DataRoots::parse(&["s3:///x"]).is_err());
        assert!(DataRoots::parse(&["/no/such/dir/anywhere"]).is_err());
    }
}
