//! `logsql index SOURCE... --catalog CAT`: the recordings SOURCE lists
//! (directories, globs, object-store prefixes, of any format), each read as
//! far as `topics()` reads it (summaries and indexes), into the catalog's
//! tables ([`crate::catalog`]).
//!
//! A run lists every SOURCE, compares what it finds with the catalog's
//! newest generation (size, modification time and ETag per recording), reads
//! only the new and changed recordings, keeps the rows of the unchanged
//! ones, drops the rows of recordings SOURCE no longer lists, and commits
//! the result as the next generation. A recording that cannot be read is
//! catalogued with its error (`health = 'unreadable'`); the run goes on.
//! Committing after another run committed first starts the comparison again
//! on top of that run's generation (what was read stays read).
//!
//! - [`rows`]: one recording's rows and each table's batches.

pub(crate) mod rows;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::Array;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::catalog::error::CatalogError;
use crate::catalog::files::{Columns, TableWriter, copy_rows, read_columns};
use crate::catalog::layout::{LAYOUT, LAYOUT_VERSION};
use crate::catalog::{CatalogLocation, CatalogTable, Manifest};
use crate::scanner::options::LogsqlOptions;
use crate::storage::summary_cache;
use crate::surface::url_table::resolve;
use rows::{Listed, Reading, Recording};

/// What `logsql index` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    /// Directories, globs or object-store URLs of recordings.
    pub sources: Vec<String>,
    /// The catalog: a local directory or an object-store prefix.
    pub catalog: String,
    /// List what would change, and change nothing.
    pub dry_run: bool,
    /// The metadata key (or hive key) naming each recording's device.
    pub device_key: Option<String>,
}

/// How far a run is, for a progress bar.
#[derive(Debug, Clone)]
pub enum IndexProgress {
    /// The sources were listed: this many recordings, this many to read.
    Listed {
        /// Recordings the sources list.
        recordings: u64,
        /// New or changed ones, which the run reads.
        to_read: u64,
    },
    /// One recording was read.
    Read {
        /// Its location.
        location: String,
    },
    /// The tables are being written.
    Writing,
}

/// What a run changed (or, with `dry_run`, would change).
#[derive(Debug, Clone, Default)]
pub struct IndexReport {
    /// The catalog as the user named it.
    pub catalog: String,
    /// Recordings not in the catalog before.
    pub added: Vec<String>,
    /// Recordings whose size, modification time or ETag changed.
    pub changed: Vec<String>,
    /// Recordings the sources no longer list.
    pub removed: Vec<String>,
    /// Recordings left as they were.
    pub unchanged: u64,
    /// Recordings read now that could not be read as logs, with the reason.
    pub unreadable: Vec<(String, String)>,
    /// Recordings read now that are damaged, with the reason.
    pub damaged: Vec<(String, String)>,
    /// The generation committed (`None` with `dry_run`, or when nothing changed).
    pub generation: Option<u64>,
    /// Recordings in the catalog after the run.
    pub recordings: u64,
    /// Whether this was a dry run.
    pub dry_run: bool,
}

/// How many recordings are read at once.
const READ_CONCURRENCY: usize = 16;
/// How many times a run commits after others committed first.
const COMMIT_ATTEMPTS: usize = 8;
/// Rows per batch of the new recordings' table rows.
const RECORDINGS_PER_BATCH: usize = 1024;

/// A catalogued recording's identity: size, modification time, ETag, source.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    size: u64,
    modified: i64,
    etag: Option<String>,
    source: String,
}

/// Runs `logsql index`: see the module documentation.
pub async fn index(
    ctx: &SessionContext,
    options: &IndexOptions,
    progress: &(dyn Fn(IndexProgress) + Send + Sync),
) -> Result<IndexReport> {
    let state = ctx.state();
    let catalog = CatalogLocation::new(state.runtime_env(), &options.catalog)?;
    if let Some(roots) = crate::storage::roots::DataRoots::of(state.config()) {
        roots.check_url(catalog.url(), &options.catalog)?;
    }
    if !options.dry_run {
        catalog.prepare_for_writing().await?;
    }
    let (listed, sources) = list_sources(&state, &options.sources).await?;
    let how = Reading {
        device_key: options.device_key.clone(),
        limits: LogsqlOptions::from_config(state.config_options()).limits(),
        indexed_at: now_nanos(),
    };
    let mut read: HashMap<String, Recording> = HashMap::new();
    for _ in 0..COMMIT_ATTEMPTS {
        let previous = catalog.latest().await?;
        if let (Some(p), Some(key)) = (&previous, &options.device_key)
            && p.device_key.as_ref() != Some(key)
        {
            return Err(DataFusionError::Plan(format!(
                "{}: catalogued with device key {}; a catalog keeps one (index into a new catalog to use '{key}')",
                options.catalog,
                p.device_key
                    .as_deref()
                    .map_or("(none)".to_string(), |k| format!("'{k}'")),
            )));
        }
        let how = Reading {
            device_key: how
                .device_key
                .clone()
                .or_else(|| previous.as_ref().and_then(|p| p.device_key.clone())),
            ..how.clone()
        };
        let known = match &previous {
            Some(p) => known_recordings(ctx, &catalog, p).await?,
            None => HashMap::new(),
        };
        let mut report = compare(&listed, &sources, &known);
        report.catalog = options.catalog.clone();
        report.dry_run = options.dry_run;
        let to_read: Vec<&Listed> = listed
            .iter()
            .filter(|l| !unchanged(l, &known))
            .filter(|l| !read.contains_key(&l.location()))
            .collect();
        progress(IndexProgress::Listed {
            recordings: listed.len() as u64,
            to_read: (report.added.len() + report.changed.len()) as u64,
        });
        if options.dry_run {
            report.recordings = (known.len() + report.added.len() - report.removed.len()) as u64;
            return Ok(report);
        }
        if report.added.is_empty() && report.changed.is_empty() && report.removed.is_empty() {
            report.recordings = known.len() as u64;
            return Ok(report);
        }
        read_recordings(&state, to_read, &how, progress, &mut read).await;
        let fresh: Vec<&Recording> = listed
            .iter()
            .filter(|l| !unchanged(l, &known))
            .filter_map(|l| read.get(&l.location()))
            .collect();
        for r in &fresh {
            match r.health {
                "unreadable" => report
                    .unreadable
                    .push((r.location(), r.health_reason.clone().unwrap_or_default())),
                "damaged" => report
                    .damaged
                    .push((r.location(), r.health_reason.clone().unwrap_or_default())),
                _ => {}
            }
        }
        progress(IndexProgress::Writing);
        let generation = previous.as_ref().map_or(1, |p| p.generation + 1);
        let mut dropped: HashSet<String> = report.removed.iter().cloned().collect();
        dropped.extend(report.changed.iter().cloned());
        let dir = CatalogLocation::generation_dir(generation);
        let mut tables = BTreeMap::new();
        let mut recordings = 0;
        for table in CatalogTable::ALL {
            let file = format!("{dir}/{}.parquet", table.name());
            let mut out = TableWriter::create(
                Arc::clone(catalog.store()),
                catalog.path(&file),
                table.schema(),
            )?;
            if let Some(p) = &previous
                && let Some(old) = p.tables.get(table.name())
            {
                copy_rows(
                    ctx,
                    &catalog.file_url(old),
                    &table.schema(),
                    &dropped,
                    &mut out,
                )
                .await?;
            }
            for recs in fresh.chunks(RECORDINGS_PER_BATCH) {
                out.write(&rows::batch(table, recs)?).await?;
            }
            let rows = out.finish().await?;
            if table == CatalogTable::Recordings {
                recordings = rows;
            }
            tables.insert(table.name().to_string(), file);
        }
        let mut all_sources: Vec<String> = previous
            .as_ref()
            .map(|p| p.sources.clone())
            .unwrap_or_default();
        for s in &sources {
            if !all_sources.contains(s) {
                all_sources.push(s.clone());
            }
        }
        let manifest = Manifest {
            layout: LAYOUT.to_string(),
            version: LAYOUT_VERSION,
            generation,
            written: crate::ops::units::rfc3339(now_nanos()),
            logsql: env!("CARGO_PKG_VERSION").to_string(),
            device_key: how.device_key.clone(),
            tables,
            recordings,
            sources: all_sources,
        };
        if catalog.commit(&manifest).await? {
            catalog.collect_garbage(generation).await;
            report.generation = Some(generation);
            report.recordings = recordings;
            return Ok(report);
        }
        // Another run committed this generation first: its table files stay
        // for the next run's garbage collection; compare again on top of it.
    }
    Err(CatalogError::Contended {
        catalog: options.catalog.clone(),
        attempts: COMMIT_ATTEMPTS,
    }
    .into())
}

fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or_default()
}

/// Whether `listed` is catalogued as it is now.
fn unchanged(listed: &Listed, known: &HashMap<String, Known>) -> bool {
    known.get(&listed.location()).is_some_and(|k| {
        k.size == listed.loc.meta.size
            && k.modified == listed.modified()
            && k.etag == listed.loc.meta.e_tag
    })
}

/// What the listing changes in the catalog: added, changed and unchanged
/// recordings, and the catalogued recordings of these sources it no longer lists.
fn compare(listed: &[Listed], sources: &[String], known: &HashMap<String, Known>) -> IndexReport {
    let mut report = IndexReport::default();
    let mut seen = HashSet::new();
    for l in listed {
        let location = l.location();
        if unchanged(l, known) {
            report.unchanged += 1;
        } else if known.contains_key(&location) {
            report.changed.push(location.clone());
        } else {
            report.added.push(location.clone());
        }
        seen.insert(location);
    }
    let mut removed: Vec<String> = known
        .iter()
        .filter(|(location, k)| sources.contains(&k.source) && !seen.contains(*location))
        .map(|(location, _)| location.clone())
        .collect();
    removed.sort();
    report.removed = removed;
    report
}

/// The catalogued recordings of `manifest`, by location.
async fn known_recordings(
    ctx: &SessionContext,
    catalog: &CatalogLocation,
    manifest: &Manifest,
) -> Result<HashMap<String, Known>> {
    let Some(file) = manifest.tables.get(CatalogTable::Recordings.name()) else {
        return Err(CatalogError::Damaged {
            catalog: catalog.name().to_string(),
            file: format!("_log/{:020}.json", manifest.generation),
            message: "names no recordings table".into(),
        }
        .into());
    };
    let batches = read_columns(
        ctx,
        &catalog.file_url(file),
        &CatalogTable::Recordings.schema(),
        &["location", "source", "size", "modified", "etag"],
    )
    .await?;
    let damaged = |_: &str, message: String| {
        DataFusionError::from(CatalogError::Damaged {
            catalog: catalog.name().to_string(),
            file: file.clone(),
            message,
        })
    };
    let mut out = HashMap::new();
    for batch in batches {
        let c = Columns::new(&batch, "recordings", &damaged);
        let (location, source, etag) = (c.text("location")?, c.text("source")?, c.text("etag")?);
        let (size, modified) = (c.count("size")?, c.time("modified")?);
        for i in 0..batch.num_rows() {
            out.insert(
                location.value(i).to_string(),
                Known {
                    size: size.value(i),
                    modified: modified.value(i),
                    etag: etag.is_valid(i).then(|| etag.value(i).to_string()),
                    source: source.value(i).to_string(),
                },
            );
        }
    }
    Ok(out)
}

/// Every log file the sources list (and those named like logs that no
/// format recognises), once each, with the sources as absolute URLs.
async fn list_sources(
    state: &SessionState,
    sources: &[String],
) -> Result<(Vec<Listed>, Vec<String>)> {
    let mut listed: Vec<Listed> = Vec::new();
    let mut seen = HashSet::new();
    let mut urls = Vec::new();
    for source in sources {
        // A local SOURCE that is not there is a mistake, not a fleet whose
        // recordings were all deleted.
        let local = source.strip_prefix("file://").unwrap_or(source);
        if crate::storage::object_io::is_local(source)
            && !local.contains(['*', '?', '['])
            && !std::path::Path::new(local).exists()
        {
            return Err(DataFusionError::Plan(format!(
                "{source}: no such file or directory"
            )));
        }
        let resolved = resolve(state, source).await?;
        let url = match resolved.url.get_glob() {
            Some(glob) => format!("{}{}", resolved.url.as_str(), glob.as_str()),
            None => resolved.url.as_str().to_string(),
        };
        if !urls.contains(&url) {
            urls.push(url.clone());
        }
        for (loc, format) in resolved.log_files().chain(resolved.unrecognised_logs()) {
            if !seen.insert(loc.display_name()) {
                continue;
            }
            let partitions = resolved
                .url
                .strip_prefix(&loc.meta.location)
                .map(|segments| {
                    let segments: Vec<&str> = segments.collect();
                    segments[..segments.len().saturating_sub(1)]
                        .iter()
                        .filter_map(|d| d.split_once('='))
                        .filter(|(k, _)| !k.is_empty())
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            listed.push(Listed {
                loc: loc.clone(),
                format: format.clone(),
                source: url.clone(),
                partitions,
            });
        }
    }
    Ok((listed, urls))
}

/// Reads `to_read` into `read`, several at once, each on the blocking pool.
async fn read_recordings(
    state: &SessionState,
    to_read: Vec<&Listed>,
    how: &Reading,
    progress: &(dyn Fn(IndexProgress) + Send + Sync),
    read: &mut HashMap<String, Recording>,
) {
    let cache = summary_cache::of(state.runtime_env());
    let mut done = futures::stream::iter(to_read.into_iter().cloned().map(|listed| {
        let cache = Arc::clone(&cache);
        let how = how.clone();
        async move {
            let summary = match &listed.format {
                Some(format) => {
                    listed
                        .loc
                        .summary_with_limits(Some(cache), Some(Arc::clone(format)), how.limits)
                        .await
                }
                None => Err(not_a_log(&listed).await),
            };
            let location = listed.location();
            let rec =
                tokio::task::spawn_blocking(move || rows::recording(listed, summary, &how)).await;
            (location, rec)
        }
    }))
    .buffer_unordered(READ_CONCURRENCY);
    while let Some((location, rec)) = done.next().await {
        match rec {
            Ok(rec) => {
                read.insert(location.clone(), rec);
            }
            Err(e) => log::warn!("{location}: reading it for the catalog failed: {e}"),
        }
        progress(IndexProgress::Read { location });
    }
}

/// Why a file named like a log is not one.
async fn not_a_log(listed: &Listed) -> logsql_readers::Error {
    let loc = listed.loc.clone();
    let name = loc.display_name();
    let detected = tokio::task::spawn_blocking(move || {
        let file = loc.open()?;
        logsql_readers::formats::detect(file.as_ref()).map(|_| ())
    })
    .await;
    match detected {
        Ok(Err(e)) => e,
        _ => logsql_readers::Error::Invalid(format!("{name}: no format recognises it")),
    }
}
