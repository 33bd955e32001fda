//! The session's files that several scans read at once, and the decompressed
//! chunks they hand each other (see [`logsql_readers::shared_chunks`]).
//!
//! The registry lives on the session's config (installed by
//! [`crate::session_context_with_config`]); a scan joins the file it opens,
//! keyed like the summary cache (store, path, size, modification time), with
//! the offsets of the chunks it chose. The file's state lives while a scan of
//! it does. The bytes kept for all files are bounded by
//! `logsql.shared_chunk_bytes`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use datafusion::prelude::SessionConfig;
use logsql_readers::shared_chunks::{ChunkShare, ShareBudget, SharedFile};

/// The files being read by the session's scans, by cache key.
#[derive(Debug)]
pub struct SharedChunkRegistry {
    files: Mutex<HashMap<String, Weak<SharedFile>>>,
    budget: Arc<ShareBudget>,
}

impl Default for SharedChunkRegistry {
    fn default() -> Self {
        Self {
            files: Mutex::default(),
            budget: Arc::new(ShareBudget::new(0)),
        }
    }
}

impl SharedChunkRegistry {
    /// The registry of a session, if it has one.
    pub fn of(config: &SessionConfig) -> Option<Arc<Self>> {
        config.get_extension::<Self>()
    }

    /// `config` with a registry of its own.
    pub fn install(config: SessionConfig) -> SessionConfig {
        config.with_extension(Arc::new(Self::default()))
    }

    /// A scan of the file `key` that will read the chunks at `offsets`
    /// joins it; `limit` is the session's `logsql.shared_chunk_bytes`.
    pub(crate) fn join(
        &self,
        key: String,
        offsets: impl IntoIterator<Item = u64>,
        limit: usize,
    ) -> ChunkShare {
        self.budget.set_limit(limit);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.retain(|_, f| f.strong_count() > 0);
        let file = match files.get(&key).and_then(Weak::upgrade) {
            Some(file) => file,
            None => {
                let file = SharedFile::new(Arc::clone(&self.budget));
                files.insert(key, Arc::downgrade(&file));
                file
            }
        };
        drop(files);
        file.join(offsets)
    }

    /// Bytes kept for the session's scans now.
    pub fn kept_bytes(&self) -> usize {
        self.budget.used()
    }
}
