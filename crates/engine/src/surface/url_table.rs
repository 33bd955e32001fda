//! `SELECT ... FROM 'path'`: a file, directory or glob becomes a table, with each
//! file's format detected from its content (magic bytes), not its name.
//!
//! Installed by wrapping the session's default schema, so it works on any
//! existing `SessionContext`. Paths that hold no log file fall through to
//! DataFusion's own url tables (Parquet, CSV, JSON, ...).

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use datafusion::catalog::{DynamicFileSchemaProvider, TableProvider, UrlTableFactory};
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableConfigExt, ListingTableUrl,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{ObjectMeta, ObjectStoreExt};
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};
use parking_lot::RwLock;

use crate::file_format::LogFileFormat;
use crate::scanner::error::df_err;
use crate::scanner::options::LogsqlOptions;
use crate::scanner::schema::messages_table_schema;
use crate::storage::object_io::FileLocation;
use crate::storage::object_io::is_local;
use crate::storage::roots::{DataRoots, object_url};
use crate::storage::summary_cache::{self, CachedSummary};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use logsql_readers::formats::{self, FormatReader, SNIFF_LEN};

/// Extensions DataFusion's own url tables read; such files are left to it.
const DATAFUSION_EXTENSIONS: &[&str] = &[
    "parquet", "csv", "tsv", "json", "ndjson", "avro", "arrow", "ipc",
];

/// Extensions of log files: such a file among several (a directory, a glob)
/// whose content no format recognises is damaged, not skipped.
const LOG_EXTENSIONS: &[&str] = &["mcap", "bag", "db3", "record", "bddf"];

/// Why `loc` is not a log file, read on the blocking pool: `Ok(Err(e))`
/// with the error reading it as one gives, `Ok(Ok(()))` when it is one.
async fn detect(loc: &FileLocation) -> Result<std::result::Result<(), logsql_readers::Error>> {
    let loc = loc.clone();
    tokio::task::spawn_blocking(move || {
        let file = loc.open()?;
        formats::detect(file.as_ref()).map(|_| ())
    })
    .await
    .map_err(|e| DataFusionError::External(Box::new(e)))
}

/// Whether `name` is named like a log file ([`LOG_EXTENSIONS`], or an Apollo
/// segment `x.record.00001`).
fn named_like_a_log(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit('.').next().unwrap_or_default();
    LOG_EXTENSIONS.contains(&ext) || lower.contains(".record.")
}

/// A file a path names, with the format detected from its content (none:
/// not a log file).
pub(crate) type LogEntry = (FileLocation, Option<Arc<dyn FormatReader>>);

/// How many files are sniffed at once.
const SNIFF_CONCURRENCY: usize = 32;

/// The files a path names, each with its detected log format (`None`: not a log file).
pub struct ResolvedPath {
    /// The parsed path.
    pub url: ListingTableUrl,
    /// Every file the path names, in listing order, with its detected format.
    pub files: Vec<LogEntry>,
    /// The path names a directory or a glob (not one file).
    pub many: bool,
}

impl ResolvedPath {
    /// The log files only.
    pub fn log_files(&self) -> impl Iterator<Item = &LogEntry> {
        self.files.iter().filter(|(_, f)| f.is_some())
    }

    /// The files of a directory or glob named like log files whose content no
    /// format recognises: damaged files, which queries report by the
    /// `on_error` policy (a single file named so is an error anyway).
    pub fn unrecognised_logs(&self) -> impl Iterator<Item = &LogEntry> {
        self.files.iter().filter(|(loc, f)| {
            self.many && f.is_none() && named_like_a_log(loc.meta.location.as_ref())
        })
    }

    /// The summary of each of [`ResolvedPath::log_files`], through the
    /// session's summary cache, in listing order, read under the session's
    /// size caps (`logsql.max_chunk_bytes`, `logsql.max_message_bytes`). A
    /// file of a directory or glob that cannot be read as a log file
    /// ([`logsql_readers::Error::is_unreadable`])
    /// gives its error in place of a summary, for the caller to report by the
    /// `on_error` policy; any other error (or a single file's) fails.
    pub async fn summaries(
        &self,
        state: &SessionState,
    ) -> Result<
        Vec<(
            &LogEntry,
            std::result::Result<CachedSummary, logsql_readers::Error>,
        )>,
    > {
        let cache = summary_cache::of(state.runtime_env());
        let limits = LogsqlOptions::from_config(state.config_options()).limits();
        let mut out = Vec::new();
        for entry in self.log_files() {
            let (loc, format) = entry;
            let summary = loc
                .summary_with_limits(Some(Arc::clone(&cache)), format.clone(), limits)
                .await;
            let summary = match summary {
                Err(e) if !(self.many && e.is_unreadable()) => return Err(df_err(e)),
                summary => summary,
            };
            out.push((entry, summary));
        }
        Ok(out)
    }

    /// Why each of [`ResolvedPath::unrecognised_logs`] is not a log file
    /// (the error reading it as one gives).
    pub async fn unrecognised_errors(&self) -> Result<Vec<logsql_readers::Error>> {
        let mut out = Vec::new();
        for (loc, _) in self.unrecognised_logs() {
            if let Err(e) = detect(loc).await? {
                out.push(e);
            }
        }
        Ok(out)
    }
}

/// Lists the files `path` names (file, directory or glob; local or object store)
/// and sniffs each one's format.
pub async fn resolve(state: &SessionState, path: &str) -> Result<ResolvedPath> {
    let url = parse_url(path)?;
    // A process with data roots refuses a path outside them before it
    // builds a store or lists anything.
    let roots = DataRoots::of(state.config());
    if let Some(roots) = &roots {
        roots.check_url(url.get_url(), path)?;
    }
    let store_url = url.object_store();
    crate::storage::stores::ensure(state.runtime_env(), store_url.as_ref()).map_err(|e| {
        // A store that cannot be built (no credentials) is named by the path asked for.
        match e {
            DataFusionError::External(inner) => match inner.downcast::<logsql_readers::Error>() {
                Ok(err) => match *err {
                    logsql_readers::Error::Remote { message, .. } => {
                        let url = path.to_string();
                        DataFusionError::External(Box::new(logsql_readers::Error::Remote {
                            url,
                            message,
                        }))
                    }
                    other => DataFusionError::External(Box::new(other)),
                },
                Err(inner) => DataFusionError::External(inner),
            },
            e => e,
        }
    })?;
    let store = state.runtime_env().object_store(&store_url)?;
    refuse_special_file(&url, path)?;
    // A failed request says its cause (refused, DNS, 403, 404, ...) and the URL.
    let remote = !store_url.as_str().starts_with("file://");
    let explain = |e: DataFusionError| match e {
        DataFusionError::ObjectStore(os) if remote => {
            DataFusionError::External(Box::new(crate::storage::stores::remote_error(path, &os)))
        }
        e => e,
    };
    // A web server answers HEAD for one file; listing needs WebDAV (PROPFIND),
    // which plain servers refuse.
    let http = ["http://", "https://"]
        .iter()
        .any(|s| store_url.as_str().starts_with(s));
    let metas: Vec<ObjectMeta> = if http && !url.is_collection() && url.get_glob().is_none() {
        let head = store.head(url.prefix()).await;
        vec![head.map_err(|e| explain(e.into()))?]
    } else {
        url.list_all_files(state, store.as_ref(), "")
            .await
            .map_err(explain)?
            .try_collect()
            .await
            .map_err(explain)?
    };
    // Sniff the files concurrently (one small range request each on an object
    // store); a file whose summary is cached needs none.
    let cache = summary_cache::of(state.runtime_env());
    // A file the catalog knows as it is now needs none either.
    let options = LogsqlOptions::from_config(state.config_options());
    let catalog = crate::file_format::catalog_of(state, &options).await?;
    let mut files: Vec<(FileLocation, Option<Arc<dyn FormatReader>>)> =
        futures::stream::iter(metas.into_iter().map(|meta| {
            let store_url = &store_url;
            let store = Arc::clone(&store);
            let cache = &cache;
            let catalog = &catalog;
            let roots = &roots;
            async move {
                // A listing inside a root may reach out of it through a link:
                // each file is checked before anything opens it.
                if let Some(roots) = roots {
                    roots.check_url(&object_url(store_url, &meta.location)?, path)?;
                }
                let mut loc = FileLocation::from_store(Arc::clone(&store), meta);
                if remote {
                    // The object's URL, not the store's description.
                    loc.name = format!("{}{}", store_url.as_str(), loc.meta.location);
                }
                if let Some(hit) =
                    summary_cache::lookup(Some(cache.as_ref()), &loc.store_id(), &loc.meta)
                {
                    return Ok::<_, DataFusionError>((loc, Some(hit.format)));
                }
                if let Some(entry) = catalog
                    .as_ref()
                    .and_then(|c| c.entry(&loc.display_name(), &loc.meta, None))
                {
                    let format = Arc::clone(&entry.format);
                    return Ok((loc, Some(format)));
                }
                let head_len = loc.meta.size.min(SNIFF_LEN as u64);
                let head = if head_len == 0 {
                    Default::default()
                } else {
                    store
                        .get_range(&loc.meta.location, 0..head_len)
                        .await
                        .map_err(|e| {
                            if loc.local {
                                DataFusionError::from(e)
                            } else {
                                let err =
                                    crate::storage::stores::remote_error(loc.display_name(), &e);
                                DataFusionError::External(Box::new(err))
                            }
                        })?
                };
                Ok((
                    loc.clone(),
                    formats::sniff_named(loc.meta.location.as_ref(), &head),
                ))
            }
        }))
        .buffered(SNIFF_CONCURRENCY)
        .try_collect()
        .await?;
    files.sort_by(|a, b| a.0.meta.location.cmp(&b.0.meta.location));
    let many = url.get_glob().is_some() || is_directory(&url, path);
    Ok(ResolvedPath { url, files, many })
}

/// Parses `path` as DataFusion does, except that a local file or directory
/// that exists names itself, even with a glob character (`*`, `?`, `[`) in its name.
fn parse_url(path: &str) -> Result<ListingTableUrl> {
    let local = std::path::Path::new(path);
    if !is_local(path) || !path.contains(['*', '?', '[']) || !local.exists() {
        return ListingTableUrl::parse(path);
    }
    let absolute = std::path::absolute(local)?;
    let url = if local.is_dir() {
        url::Url::from_directory_path(&absolute)
    } else {
        url::Url::from_file_path(&absolute)
    };
    // Parsed again, as DataFusion does, to resolve `.` and `..`.
    let url = url.ok().and_then(|u| url::Url::parse(u.as_str()).ok());
    let url = url.ok_or_else(|| DataFusionError::Plan(format!("{path}: not a file path")))?;
    ListingTableUrl::try_new(url, None)
}

/// Refuses a local pipe, device or socket before anything opens it (a pipe
/// with no writer would block the open forever).
fn refuse_special_file(url: &ListingTableUrl, path: &str) -> Result<()> {
    if url.get_glob().is_none() && is_local(path) {
        let local = std::path::Path::new(path.strip_prefix("file://").unwrap_or(path));
        if local.exists() {
            logsql_readers::io::check_regular_file(local).map_err(df_err)?;
        }
    }
    Ok(())
}

/// Whether `path` (parsed as `url`) names a directory: a URL ending in `/`, or
/// a local directory, not a glob.
fn is_directory(url: &ListingTableUrl, path: &str) -> bool {
    if url.get_glob().is_some() {
        return false;
    }
    if is_local(path) {
        let local = path.strip_prefix("file://").unwrap_or(path);
        std::path::Path::new(local).is_dir()
    } else {
        url.is_collection()
    }
}

/// The url-table factory that recognises log files.
#[derive(Debug)]
pub(crate) struct LogUrlTableFactory {
    state: Weak<RwLock<SessionState>>,
}

/// DataFusion's own url table for `path` (Parquet, CSV, ...), as `enable_url_table` would build it.
async fn datafusion_url_table(
    state: &SessionState,
    path: &str,
) -> Result<Option<Arc<dyn TableProvider>>> {
    let Ok(url) = ListingTableUrl::parse(path) else {
        return Ok(None);
    };
    let Ok(config) = ListingTableConfig::new(url).infer_options(state).await else {
        return Ok(None);
    };
    let config = config
        .infer_partitions_from_path(state)
        .await?
        .infer_schema(state)
        .await?;
    Ok(Some(Arc::new(ListingTable::try_new(config)?)))
}

#[async_trait]
impl UrlTableFactory for LogUrlTableFactory {
    async fn try_new(&self, path: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let Some(state) = self.state.upgrade().map(|s| s.read().clone()) else {
            return Ok(None);
        };
        // `recordings` and `topics` under `logsql.catalog`: its tables.
        if !std::path::Path::new(path).exists()
            && let Some(table) = super::catalog_tables::named(
                &LogsqlOptions::from_config(state.config_options()),
                path,
            )
        {
            return Ok(Some(table));
        }
        let Ok(url) = parse_url(path) else {
            return Ok(None);
        };
        // Not even DataFusion's own tables may open it.
        refuse_special_file(&url, path)?;
        // Nor, with data roots, a path outside them (DataFusion's own url
        // tables below would read its first bytes to infer a schema). A bare
        // name that is no file (`FROM t` of an unknown table) is left to say
        // "table not found".
        let names_a_path = !is_local(path)
            || path.contains(['/', '\\', '*', '?', '['])
            || std::path::Path::new(path).exists();
        if let Some(roots) = DataRoots::of(state.config()) {
            if !names_a_path {
                return Ok(None);
            }
            roots.check_url(url.get_url(), path)?;
        }
        let resolved = match resolve(&state, path).await {
            Ok(r) => r,
            // A remote path's failure (refused, DNS, 403, 404, no credentials) is
            // the answer, and so is any failure under data roots (a file the
            // listing reached outside them, above all): DataFusion's own
            // tables would list and open the same files unchecked.
            Err(e) if !is_local(path) || DataRoots::of(state.config()).is_some() => {
                return Err(e);
            }
            // Without roots, a local path may still be DataFusion's to read.
            Err(_) => return datafusion_url_table(&state, path).await,
        };
        // Damaged files of a directory or glob are scanned too: the scan
        // reports them by the `on_error` policy, after the other files' rows.
        let logs: Vec<_> = resolved
            .log_files()
            .chain(resolved.unrecognised_logs())
            .collect();
        if logs.is_empty() {
            let ext = path
                .rsplit('.')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            // A directory (even one named `x.mcap`) with no log file, and no
            // file DataFusion reads either: say so, rather than "table not found".
            if is_directory(&resolved.url, path) {
                return match datafusion_url_table(&state, path).await {
                    Ok(Some(table)) => Ok(Some(table)),
                    _ => Err(DataFusionError::External(Box::new(
                        logsql_readers::Error::NoLogFiles {
                            path: path.to_string(),
                        },
                    ))),
                };
            }
            // One explicit file of unknown content: say so, rather than "table not found".
            if let [(loc, None)] = resolved.files.as_slice()
                && !DATAFUSION_EXTENSIONS.contains(&ext.as_str())
            {
                detect(loc).await?.map_err(df_err)?;
            }
            return datafusion_url_table(&state, path).await;
        }
        let first = logs[0].1.clone();
        let same_format = logs
            .iter()
            .all(|(_, f)| f.as_ref().map(|f| f.name()) == first.as_ref().map(|f| f.name()));
        let format = if same_format { first } else { None };
        let schema = messages_table_schema();
        listing_table(&resolved, &logs, LogFileFormat::new(format), schema).map(Some)
    }
}

/// A listing table over `files` (some or all of `resolved`), read as `file_format`.
///
/// The table lists `resolved`'s path itself (file, directory or glob); the
/// other files it holds are skipped by the scan. Hive-style directories
/// (`robot=r7/date=2026-05-01/run.mcap`) shared by every file become partition
/// columns (strings), which `WHERE` prunes before any file is opened.
pub(crate) fn listing_table(
    resolved: &ResolvedPath,
    files: &[&(FileLocation, Option<Arc<dyn FormatReader>>)],
    file_format: LogFileFormat,
    schema: SchemaRef,
) -> Result<Arc<dyn TableProvider>> {
    let kept: HashSet<&ObjectPath> = files.iter().map(|(loc, _)| &loc.meta.location).collect();
    let skip: HashSet<ObjectPath> = resolved
        .files
        .iter()
        .map(|(loc, _)| &loc.meta.location)
        .filter(|p| !kept.contains(p))
        .cloned()
        .collect();
    let partitions = hive_partitions(
        &resolved.url,
        files.iter().map(|(loc, _)| &loc.meta.location),
    );
    let file_format = file_format
        .with_skip(skip)
        .deferring_damage(files.len() > 1)
        .in_store(resolved.url.object_store());
    let options = ListingOptions::new(Arc::new(file_format))
        .with_file_extension("")
        .with_table_partition_cols(
            partitions
                .into_iter()
                .map(|name| (name, DataType::Utf8))
                .collect(),
        );
    let config = ListingTableConfig::new(resolved.url.clone())
        .with_listing_options(options)
        .with_schema(schema);
    Ok(Arc::new(ListingTable::try_new(config)?))
}

/// The hive partition keys every one of `files` has, in order, as the first
/// directories under `url`'s prefix (`key=value/...`); none when they differ.
pub(crate) fn hive_partitions<'a>(
    url: &ListingTableUrl,
    files: impl Iterator<Item = &'a ObjectPath>,
) -> Vec<String> {
    let mut common: Option<Vec<String>> = None;
    for path in files {
        let Some(segments) = url.strip_prefix(path) else {
            return vec![];
        };
        let segments: Vec<&str> = segments.collect();
        let dirs = &segments[..segments.len().saturating_sub(1)];
        let keys: Vec<String> = dirs
            .iter()
            .map_while(|d| d.split_once('=').map(|(k, _)| k.to_string()))
            .filter(|k| !k.is_empty())
            .collect();
        match &common {
            None => common = Some(keys),
            Some(c) if *c == keys => {}
            Some(_) => return vec![],
        }
    }
    common.unwrap_or_default()
}

/// Wraps the session's default schema so that unknown table names that are paths
/// become log tables, and lists local directories without following links
/// into loops ([`crate::storage::local_walk`]).
pub(crate) fn install(ctx: &SessionContext) -> Result<()> {
    crate::storage::stores::ensure_safe_local(&ctx.runtime_env());
    let (catalog_name, schema_name) = {
        let state = ctx.state();
        let opts = &state.config_options().catalog;
        (opts.default_catalog.clone(), opts.default_schema.clone())
    };
    let catalog = ctx
        .catalog(&catalog_name)
        .ok_or_else(|| DataFusionError::Plan(format!("no default catalog '{catalog_name}'")))?;
    let inner = catalog
        .schema(&schema_name)
        .ok_or_else(|| DataFusionError::Plan(format!("no default schema '{schema_name}'")))?;
    let factory = Arc::new(LogUrlTableFactory {
        state: ctx.state_weak_ref(),
    });
    catalog.register_schema(
        &schema_name,
        Arc::new(DynamicFileSchemaProvider::new(inner, factory)),
    )?;
    Ok(())
}
