//! Where a writer (MCAP, ROS1 bag, ROS 2 bag) gets channels, schemas,
//! metadata and attachments: only from the files the same query scanned,
//! as [`SourceFile`]s.
//!
//! [`ScannedFiles::of_plan`] lists the files of every logsql scan in the
//! writer's input plan, under the names their rows carry in the `file` column.
//! A row whose `file` names one of them gets that file's channel; a `file`
//! value naming anything else (a path or URL in a Parquet file the query read,
//! a computed string) is never opened: its rows get channels from their own
//! columns, with a name-only schema and no metadata or attachments.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::ExecutionPlan;
use prost_reflect::DescriptorPool;

use crate::datasource::source::LogSource;
use crate::scanner::error::df_err;
use crate::scanner::schema::col;
use crate::storage::object_io::FileLocation;
use logsql_writers::{Attachment, SourceFile};

/// The files the logsql scans of a plan read (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct ScannedFiles(Vec<(ObjectStoreUrl, PartitionedFile)>);

impl ScannedFiles {
    /// No files: every row's channel comes from its own columns.
    pub fn none() -> Self {
        Self::default()
    }

    /// The files of every logsql scan in `plan`.
    pub fn of_plan(plan: &Arc<dyn ExecutionPlan>) -> Self {
        let mut files = Vec::new();
        let _ = plan.apply(|node| {
            if let Some((config, _)) = node
                .downcast_ref::<DataSourceExec>()
                .and_then(|exec| exec.downcast_to_file_source::<LogSource>())
            {
                for group in &config.file_groups {
                    for f in group.iter() {
                        files.push((config.object_store_url.clone(), f.clone()));
                    }
                }
            }
            Ok(TreeNodeRecursion::Continue)
        });
        Self(files)
    }

    /// The files by the name their rows carry (a local path or an object URL).
    /// A file whose store is gone is left out.
    fn by_name(&self, env: &RuntimeEnv) -> HashMap<String, FileLocation> {
        let mut out = HashMap::new();
        for (url, file) in &self.0 {
            let Ok(store) = env.object_store(url) else {
                continue;
            };
            let loc = FileLocation::new(url.clone(), store, file);
            out.entry(loc.display_name()).or_insert(loc);
        }
        out
    }
}

/// Finds the source files of a stream's rows (the `file` column) among the
/// files the query scanned and reads their summaries, once per file.
pub struct SourceResolver {
    env: Arc<RuntimeEnv>,
    pool: Option<Arc<DescriptorPool>>,
    scanned: HashMap<String, FileLocation>,
    seen: HashSet<String>,
    /// The output's name, for the warning about files the query did not read.
    target: String,
    warned: bool,
    /// Metadata records added to the first source file read.
    extra_metadata: Vec<logsql_readers::model::MetadataInfo>,
}

impl SourceResolver {
    /// A resolver of the files in `scanned`, for the output `target` (named
    /// in warnings); `pool`: the session's protobuf descriptors.
    pub fn new(
        env: Arc<RuntimeEnv>,
        pool: Option<Arc<DescriptorPool>>,
        scanned: &ScannedFiles,
        target: String,
    ) -> Self {
        Self {
            scanned: scanned.by_name(&env),
            env,
            pool,
            seen: HashSet::new(),
            target,
            warned: false,
            extra_metadata: Vec::new(),
        }
    }

    /// The resolver, adding `records` to the first source file read (an
    /// output's own metadata, written once).
    pub fn with_extra_metadata(
        mut self,
        records: Vec<logsql_readers::model::MetadataInfo>,
    ) -> Self {
        self.extra_metadata = records;
        self
    }

    /// The files of `batch` not met before, each with what could be read of it.
    pub async fn new_sources(
        &mut self,
        batch: &RecordBatch,
    ) -> Result<Vec<(String, Option<Arc<SourceFile>>)>> {
        let Some(files) = batch.column_by_name(col::FILE) else {
            return Ok(Vec::new());
        };
        let files = cast(files, &DataType::Utf8)?;
        let files = files.as_string::<i32>();
        let mut new = Vec::new();
        let mut last: Option<&str> = None;
        for f in files.iter().flatten() {
            if last == Some(f) || self.seen.contains(f) {
                last = Some(f);
                continue;
            }
            last = Some(f);
            self.seen.insert(f.to_string());
            let Some(loc) = self.scanned.get(f).cloned() else {
                if !std::mem::replace(&mut self.warned, true) {
                    log::warn!(
                        "writing {}: the file column names {f:?}, which this query did not read; rows of files it did not read get channels from their own columns (no schema, metadata or attachments)",
                        self.target
                    );
                }
                new.push((f.to_string(), None));
                continue;
            };
            let info = match self.load(loc).await {
                Ok(mut info) => {
                    info.metadata.append(&mut self.extra_metadata);
                    Some(Arc::new(info))
                }
                Err(e) => {
                    log::warn!(
                        "writing {}: no channels from {f:?} ({e}); its rows get channels from their own columns",
                        self.target
                    );
                    None
                }
            };
            new.push((f.to_string(), info));
        }
        Ok(new)
    }

    /// Reads the summary of the scanned file `loc` (the one its scan cached).
    async fn load(&self, loc: FileLocation) -> Result<SourceFile> {
        let cache = crate::storage::summary_cache::of(&self.env);
        let cached = loc.summary(Some(cache), None).await.map_err(df_err)?;
        let summary = Arc::clone(&cached.summary);
        let format = cached.format.name();
        let mut channels: Vec<_> = summary.channels.values().cloned().collect();
        if let Some(pool) = &self.pool {
            logsql_decode::descriptors::attach(pool, &mut channels);
        }
        let mut file = SourceFile {
            format: format.to_string(),
            profile: match format {
                "bag" => "ros1".to_string(),
                _ => summary
                    .properties
                    .iter()
                    .find(|(k, _)| k == "profile")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
            },
            channels,
            metadata: summary.metadata.clone(),
            attachments: Vec::new(),
        };
        if !summary.attachments.is_empty() {
            let atts = summary.attachments.clone();
            file.attachments = tokio::task::spawn_blocking(move || read_attachments(&loc, &atts))
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))??;
        }
        Ok(file)
    }
}

/// The attachments `atts` of the MCAP file at `loc`, read whole.
fn read_attachments(
    loc: &FileLocation,
    atts: &[logsql_readers::model::AttachmentInfo],
) -> Result<Vec<Attachment>> {
    let file = loc.open().map_err(df_err)?;
    let mut out = Vec::with_capacity(atts.len());
    for a in atts {
        // Opcode and record length come first.
        let (Some(start), Some(len)) = (a.offset.checked_add(9), a.length.checked_sub(9)) else {
            continue;
        };
        let mut buf =
            vec![0u8; usize::try_from(len).map_err(|e| DataFusionError::External(Box::new(e)))?];
        file.read_exact_at(start, &mut buf)
            .map_err(|e| df_err(logsql_readers::Error::io(loc.display_name(), e)))?;
        let parsed =
            logsql_readers::formats::mcap::records::parse_attachment(&buf).map_err(|e| {
                DataFusionError::Execution(format!(
                    "{}: attachment '{}' at offset {}: {e}",
                    loc.display_name(),
                    a.name,
                    a.offset
                ))
            })?;
        out.push(Attachment {
            log_time: parsed.header.log_time,
            create_time: parsed.header.create_time,
            name: parsed.header.name.to_string(),
            media_type: parsed.header.media_type.to_string(),
            data: parsed.data.to_vec(),
        });
    }
    Ok(out)
}
