//! The catalog's files, in a local directory or under an object-store prefix:
//!
//! ```text
//! CAT/_log/00000000000000000007.json          commit 7: layout version, the table files of generation 7
//! CAT/gen-00000000000000000007-<id>/recordings.parquet
//! CAT/gen-00000000000000000007-<id>/topics.parquet
//! CAT/gen-00000000000000000007-<id>/chunks.parquet
//! ```
//!
//! A run writes its generation's table files first, in a directory of its
//! own, and then creates the commit file, only if no commit of that
//! generation exists (the store's create-if-absent: a link on a local disk,
//! `If-None-Match` on S3). The newest commit is the catalog: a reader lists
//! `_log/` and reads the files the newest commit names, so it sees one whole
//! generation, before or after a run, never part of one; a run killed before
//! its commit leaves the previous catalog as it was; of two runs that commit
//! the same generation, the second is refused and tries again on top of the
//! first. Table files of generations three commits old are removed (readers
//! still on them have had two commits' time), and commits a thousand old.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use url::Url;

use super::error::CatalogError;
use crate::storage::object_io::is_local;

/// What every commit file says it is.
pub const LAYOUT: &str = "logsql-catalog";
/// The newest layout version this build reads and the one it writes.
pub const LAYOUT_VERSION: u64 = 1;
/// The directory of commit files.
const LOG_DIR: &str = "_log";
/// Generations whose table files stay: the newest and the two before it.
const KEEP_DATA: u64 = 3;
/// Commits that stay.
const KEEP_LOG: u64 = 1000;

/// One commit: a generation of the catalog and the files holding its tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`LAYOUT`].
    pub layout: String,
    /// The layout version ([`LAYOUT_VERSION`] when written by this build).
    pub version: u64,
    /// The commit's number: one more than the commit it was made on.
    pub generation: u64,
    /// When it was written (RFC 3339, UTC).
    pub written: String,
    /// The logsql version that wrote it.
    pub logsql: String,
    /// The metadata or hive key that names each recording's device, if one was given.
    pub device_key: Option<String>,
    /// Each table's file, relative to the catalog.
    pub tables: BTreeMap<String, String>,
    /// How many recordings the `recordings` table holds.
    pub recordings: u64,
    /// Every SOURCE indexed into the catalog so far, as absolute URLs.
    pub sources: Vec<String>,
}

/// Where a catalog lives: a local directory or an object-store prefix.
#[derive(Debug, Clone)]
pub struct CatalogLocation {
    /// The catalog as the user named it.
    name: String,
    /// Its URL, ending in `/`.
    url: Url,
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    /// The local directory, for a catalog on this machine.
    local: Option<PathBuf>,
}

impl CatalogLocation {
    /// The catalog `catalog` names (a local directory, or an object-store
    /// URL such as `s3://bucket/catalog/`), with its store from `runtime`
    /// (built on first use, from the environment's credentials).
    pub fn new(runtime: &RuntimeEnv, catalog: &str) -> Result<Self> {
        let (url, local) = if is_local(catalog) {
            let path = catalog.strip_prefix("file://").unwrap_or(catalog);
            let dir = std::path::absolute(path)?;
            let url = Url::from_directory_path(&dir)
                .map_err(|()| DataFusionError::Plan(format!("{catalog}: not a directory path")))?;
            (url, Some(dir))
        } else {
            let mut url = Url::parse(catalog)
                .map_err(|e| DataFusionError::Plan(format!("{catalog}: not a URL ({e})")))?;
            if !url.path().ends_with('/') {
                url.set_path(&format!("{}/", url.path()));
            }
            (url, None)
        };
        crate::storage::stores::ensure(runtime, &url)?;
        let store_url =
            datafusion::datasource::listing::ListingTableUrl::parse(url.as_str())?.object_store();
        let store = runtime.object_store(&store_url)?;
        let prefix = ObjectPath::from_url_path(url.path())?;
        Ok(Self {
            name: catalog.to_string(),
            url,
            store,
            prefix,
            local,
        })
    }

    /// The catalog as the user named it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The catalog's URL (ending in `/`).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The store holding the catalog.
    pub(crate) fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The object path of `relative` (a path inside the catalog).
    pub(crate) fn path(&self, relative: &str) -> ObjectPath {
        relative
            .split('/')
            .filter(|p| !p.is_empty())
            .fold(self.prefix.clone(), |p, part| p.join(part))
    }

    /// The URL of `relative` (a path inside the catalog), for a table over it.
    pub fn file_url(&self, relative: &str) -> String {
        format!("{}{}", self.url, relative.trim_start_matches('/'))
    }

    fn store_error(&self, source: datafusion::object_store::Error) -> CatalogError {
        CatalogError::Store {
            catalog: self.name.clone(),
            source,
        }
    }

    fn damaged(&self, file: &str, message: impl Into<String>) -> CatalogError {
        CatalogError::Damaged {
            catalog: self.name.clone(),
            file: file.to_string(),
            message: message.into(),
        }
    }

    /// The generations of the commits in `_log/`, oldest first.
    async fn generations(&self) -> Result<Vec<u64>, CatalogError> {
        let log = self.path(LOG_DIR);
        let mut listing = self.store.list(Some(&log));
        let mut out = Vec::new();
        while let Some(meta) = listing.next().await {
            let meta = match meta {
                Ok(meta) => meta,
                Err(datafusion::object_store::Error::NotFound { .. }) => break,
                Err(e) => return Err(self.store_error(e)),
            };
            let name = meta.location.filename().unwrap_or_default();
            if let Some(n) = name
                .strip_suffix(".json")
                .and_then(|n| n.parse::<u64>().ok())
            {
                out.push(n);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    fn commit_file(generation: u64) -> String {
        format!("{LOG_DIR}/{generation:020}.json")
    }

    /// The newest commit, or `None` when nothing was committed there yet.
    /// A commit of a newer layout version is refused.
    pub async fn latest(&self) -> Result<Option<Manifest>, CatalogError> {
        let Some(&newest) = self.generations().await?.last() else {
            return Ok(None);
        };
        self.read_commit(newest).await.map(Some)
    }

    /// The newest commit; an error saying how to make one when there is none.
    pub async fn require_latest(&self) -> Result<Manifest, CatalogError> {
        self.latest().await?.ok_or_else(|| CatalogError::Empty {
            catalog: self.name.clone(),
        })
    }

    async fn read_commit(&self, generation: u64) -> Result<Manifest, CatalogError> {
        let file = Self::commit_file(generation);
        let bytes = self
            .store
            .get(&self.path(&file))
            .await
            .map_err(|e| self.store_error(e))?
            .bytes()
            .await
            .map_err(|e| self.store_error(e))?;
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| self.damaged(&file, format!("not JSON ({e})")))?;
        if value.get("layout").and_then(|v| v.as_str()) != Some(LAYOUT) {
            return Err(self.damaged(&file, format!("not a commit of a {LAYOUT}")));
        }
        let found = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
        if found > LAYOUT_VERSION {
            return Err(CatalogError::NewerLayout {
                catalog: self.name.clone(),
                found,
                known: LAYOUT_VERSION,
            });
        }
        let manifest: Manifest = serde_json::from_value(value)
            .map_err(|e| self.damaged(&file, format!("not a commit ({e})")))?;
        if manifest.generation != generation {
            return Err(self.damaged(&file, format!("states generation {}", manifest.generation)));
        }
        Ok(manifest)
    }

    /// Refuses a location that holds files but no catalog (a run must not
    /// mix its files into someone else's directory), and makes a local
    /// catalog's directory.
    pub async fn prepare_for_writing(&self) -> Result<(), CatalogError> {
        if let Some(dir) = &self.local {
            std::fs::create_dir_all(dir).map_err(|source| CatalogError::Io {
                catalog: self.name.clone(),
                source,
            })?;
        }
        let listing = match self.store.list_with_delimiter(Some(&self.prefix)).await {
            Ok(listing) => listing,
            Err(datafusion::object_store::Error::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(self.store_error(e)),
        };
        let has_log = listing
            .common_prefixes
            .iter()
            .any(|p| p.filename() == Some(LOG_DIR));
        // Events appended before the first index (`CAT/events/`) are the
        // catalog's too.
        let others = listing
            .common_prefixes
            .iter()
            .any(|p| p.filename() != Some(crate::events::CATALOG_EVENTS_DIR));
        if !has_log && (!listing.objects.is_empty() || others) {
            return Err(CatalogError::NotACatalog {
                catalog: self.name.clone(),
            });
        }
        Ok(())
    }

    /// A new directory name for the table files of `generation`, unique to
    /// this run.
    pub fn generation_dir(generation: u64) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        format!("gen-{generation:020}-{:x}{nanos:x}", std::process::id())
    }

    /// Creates the commit of `manifest.generation`. `Ok(false)`: another run
    /// committed that generation first.
    pub async fn commit(&self, manifest: &Manifest) -> Result<bool, CatalogError> {
        let file = Self::commit_file(manifest.generation);
        let body =
            serde_json::to_vec_pretty(manifest).map_err(|e| self.damaged(&file, e.to_string()))?;
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&self.path(&file), PutPayload::from(body), opts)
            .await
        {
            Ok(_) => Ok(true),
            Err(datafusion::object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(self.store_error(e)),
        }
    }

    /// Removes the table files of generations [`KEEP_DATA`] or more before
    /// `latest` (and what runs killed before their commit left there), and
    /// commits [`KEEP_LOG`] or more before it. Failures are left for the
    /// next run: the catalog is whole without this.
    pub async fn collect_garbage(&self, latest: u64) {
        if let Err(e) = self.try_collect_garbage(latest).await {
            log::warn!("{}: old catalog files not removed: {e}", self.name);
        }
    }

    async fn try_collect_garbage(&self, latest: u64) -> Result<(), CatalogError> {
        let listing = self
            .store
            .list_with_delimiter(Some(&self.prefix))
            .await
            .map_err(|e| self.store_error(e))?;
        for dir in &listing.common_prefixes {
            let Some(name) = dir.filename() else { continue };
            let Some(generation) = name
                .strip_prefix("gen-")
                .and_then(|rest| rest.split('-').next())
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            if generation + KEEP_DATA > latest {
                continue;
            }
            let files: Vec<ObjectPath> = self
                .store
                .list(Some(dir))
                .map_ok(|m| m.location)
                .try_collect()
                .await
                .map_err(|e| self.store_error(e))?;
            for file in files {
                self.store
                    .delete(&file)
                    .await
                    .map_err(|e| self.store_error(e))?;
            }
            if let Some(local) = &self.local {
                // Object stores have no directories; a disk keeps them empty.
                let _ = std::fs::remove_dir(local.join(name));
            }
        }
        for generation in self.generations().await? {
            if generation + KEEP_LOG > latest {
                break;
            }
            self.store
                .delete(&self.path(&Self::commit_file(generation)))
                .await
                .map_err(|e| self.store_error(e))?;
        }
        Ok(())
    }
}
