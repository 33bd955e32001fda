//! Per-process cache of file summaries, keyed by path, size and modification time.
//!
//! Planning (statistics), every partition of a scan and the table functions all
//! need a file's summary; the cache makes that one read of the file's index.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::error::Result;
use crate::formats::{self, FormatReader};
use crate::io::ReadAt;
use crate::model::Summary;

/// How many summaries are kept.
const CAPACITY: usize = 4096;

/// A summary and the format that produced it.
#[derive(Debug, Clone)]
pub struct CachedSummary {
    /// The file's format.
    pub format: Arc<dyn FormatReader>,
    /// Its summary.
    pub summary: Arc<Summary>,
}

static CACHE: LazyLock<Mutex<HashMap<String, CachedSummary>>> = LazyLock::new(Default::default);

/// The cached summary under `key`, if any (no I/O).
pub fn lookup(key: &str) -> Option<CachedSummary> {
    CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(key)
        .cloned()
}

/// The summary of `file` (cached under `key`), detecting the format when `format` is `None`.
pub fn get_or_load(
    key: &str,
    format: Option<&Arc<dyn FormatReader>>,
    file: &dyn ReadAt,
) -> Result<CachedSummary> {
    if let Some(hit) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).get(key)
        && format.is_none_or(|f| f.name() == hit.format.name())
    {
        return Ok(hit.clone());
    }
    let format = match format {
        Some(f) => {
            // A file given as one format must carry its magic: a clear error beats a parse failure.
            let head = file
                .read_upto(0, formats::SNIFF_LEN)
                .map_err(|e| crate::Error::io(file.name(), e))?;
            if !f.sniff_named(file.name(), &head) {
                return Err(crate::Error::Corrupt {
                    file: file.name().to_string(),
                    format: f.name(),
                    offset: 0,
                    message: format!(
                        "not a {} file (bad magic: {})",
                        f.name(),
                        crate::error::hex_head(&head)
                    ),
                });
            }
            Arc::clone(f)
        }
        None => formats::detect(file)?,
    };
    let summary = Arc::new(format.summary(file)?);
    let entry = CachedSummary { format, summary };
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= CAPACITY {
        cache.clear();
    }
    cache.insert(key.to_string(), entry.clone());
    Ok(entry)
}

/// Outcomes of whole-file checksum verification, per file (same keys as the summaries).
static VERIFIED: LazyLock<Mutex<HashMap<String, Option<crate::Error>>>> =
    LazyLock::new(Default::default);

/// Whether `key`'s whole-file checksum was verified in this process.
pub fn is_verified(key: &str) -> bool {
    VERIFIED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(key)
}

/// Records the outcome of verifying `key`'s whole-file checksum (the mismatch, if any).
pub fn record_verification(key: &str, mismatch: Option<crate::Error>) {
    let mut done = VERIFIED.lock().unwrap_or_else(|e| e.into_inner());
    if done.len() >= CAPACITY {
        done.clear();
    }
    done.insert(key.to_string(), mismatch);
}

/// Verifies `file`'s whole-file checksum (see [`FormatReader::verify`]) once per
/// file and process; returns the mismatch, if any. Bytes read are added to `bytes`.
pub fn verification(
    key: &str,
    cached: &CachedSummary,
    file: &dyn ReadAt,
    bytes: &datafusion::physical_plan::metrics::Count,
) -> Option<crate::Error> {
    if let Some(hit) = VERIFIED.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
        return hit.clone();
    }
    let counting = super::counting::CountingReader::new(file);
    let outcome = cached.format.verify(&counting, &cached.summary)?.err();
    bytes.add(counting.take_count() as usize);
    record_verification(key, outcome.clone());
    outcome
}
