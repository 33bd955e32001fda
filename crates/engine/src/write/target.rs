//! Where a `COPY` that logsql writes itself puts its output: a local file,
//! written beside its target and renamed over it when complete
//! ([`AtomicFile`]), or an object in a store, written to a temporary file
//! and uploaded when complete; a directory output (a ROS 2 bag, a LeRobot
//! dataset) is a local [`AtomicDir`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::datasource::physical_plan::FileSinkConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::object_store::ObjectStore;
use datafusion::object_store::path::Path as ObjectPath;

use crate::atomic_write::{AtomicDir, AtomicFile};
use crate::scanner::error::df_err;

/// Where the finished file goes.
#[derive(Debug, Clone)]
pub enum Target {
    /// A local file.
    Local(PathBuf),
    /// An object in a store, under its URL.
    Store {
        /// The store.
        store: Arc<dyn ObjectStore>,
        /// The object's path.
        path: ObjectPath,
        /// The URL the user gave.
        url: String,
    },
}

impl Target {
    /// The target of a `COPY` writing one `format` file (`example`: a file
    /// name to suggest when the target names a directory).
    pub(crate) fn of_sink(
        config: &FileSinkConfig,
        env: &RuntimeEnv,
        format: &str,
        example: &str,
    ) -> Result<Self> {
        let table = config.table_paths.first().ok_or_else(|| {
            DataFusionError::Internal(format!("COPY to {format} without an output path"))
        })?;
        if table.is_collection() || config.original_url.ends_with('/') {
            return Err(DataFusionError::Plan(format!(
                "{format} is written to one file: '{}' names a directory (give a file name such as {example})",
                config.original_url
            )));
        }
        if !config.table_partition_cols.is_empty() {
            return Err(DataFusionError::NotImplemented(format!(
                "COPY ... PARTITIONED BY is not supported for {format} output (one file is written)"
            )));
        }
        let url: &url::Url = table.as_ref();
        if url.scheme() == "file" {
            let path = url.to_file_path().map_err(|_| {
                DataFusionError::Plan(format!("not a local path: {}", config.original_url))
            })?;
            return Ok(Self::Local(path));
        }
        Ok(Self::Store {
            store: env.object_store(&config.object_store_url)?,
            path: table.prefix().clone(),
            url: config.original_url.clone(),
        })
    }

    /// The temporary file to write: beside a local target, in the
    /// temporary directory for an object store.
    pub fn create(&self) -> Result<AtomicFile> {
        let temp = match self {
            Self::Local(p) => p.clone(),
            Self::Store { path, .. } => {
                let name = path.filename().unwrap_or("output");
                std::env::temp_dir().join(format!("logsql-upload-{name}"))
            }
        };
        AtomicFile::create(&temp).map_err(|e| io_err(&temp, e))
    }

    /// The temporary directory to fill, beside a local target (which must
    /// not exist, or be an empty directory). A directory is not uploaded to
    /// an object store: such a target is refused.
    pub fn create_dir(&self) -> Result<AtomicDir> {
        match self {
            Self::Local(p) => AtomicDir::create(p).map_err(|e| io_err(p, e)),
            Self::Store { url, .. } => Err(DataFusionError::NotImplemented(format!(
                "a directory output is written to a local path, not to {url}"
            ))),
        }
    }

    /// Publishes the complete file `out`: renamed over a local target, or
    /// uploaded to the store (the object appears only when complete; the
    /// temporary file is removed when `out` is dropped).
    pub async fn publish(&self, out: AtomicFile) -> Result<()> {
        match self {
            Self::Local(path) => out.commit().map_err(|e| io_err(path, e)),
            Self::Store { store, path, url } => {
                crate::atomic_write::upload(out.temp_path(), store, path)
                    .await
                    .map_err(|e| DataFusionError::Execution(format!("uploading {url}: {e}")))
            }
        }
    }

    /// The target as the user named it.
    pub fn name(&self) -> String {
        match self {
            Self::Local(p) => p.display().to_string(),
            Self::Store { url, .. } => url.clone(),
        }
    }
}

pub(crate) fn io_err(path: &Path, e: std::io::Error) -> DataFusionError {
    df_err(logsql_readers::Error::io(path.display().to_string(), e))
}
