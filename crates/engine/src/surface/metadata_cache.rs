//! `metadata_cache()`: the entries of the session's file-metadata cache, where
//! logsql keeps file summaries (and Parquet its footers), with their memory
//! and hits. The cache's budget is `datafusion.runtime.metadata_cache_limit`.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, RecordBatch, StringArray, TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use crate::storage::summary_cache::{self, CachedSummary};

/// Registers `metadata_cache()` on `ctx`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udtf("metadata_cache", Arc::new(MetadataCacheFunction));
}

#[derive(Debug)]
struct MetadataCacheFunction;

impl TableFunctionImpl for MetadataCacheFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        if !args.exprs().is_empty() {
            return Err(DataFusionError::Plan(
                "metadata_cache() takes no arguments".to_string(),
            ));
        }
        Ok(Arc::new(MetadataCacheTable))
    }
}

/// The table `metadata_cache()` returns: read from the session's cache when scanned.
#[derive(Debug)]
struct MetadataCacheTable;

fn schema() -> SchemaRef {
    let u = |name: &str, nullable: bool| Field::new(name, DataType::UInt64, nullable);
    Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        u("file_size", false),
        Field::new(
            "file_modified",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        ),
        Field::new("format", DataType::Utf8, true),
        u("memory_bytes", false),
        u("hits", false),
        u("chunks", true),
        u("channels", true),
    ]))
}

#[async_trait]
impl TableProvider for MetadataCacheTable {
    fn schema(&self) -> SchemaRef {
        schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let cache = summary_cache::of(state.runtime_env());
        let mut entries: Vec<_> = cache.list_entries().into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let summary = |e: &datafusion::execution::cache::CacheEntryInfo<_>| {
            let e: &datafusion::execution::cache::cache_manager::CachedFileMetadataEntry = &e.value;
            e.file_metadata
                .as_any()
                .downcast_ref::<CachedSummary>()
                .cloned()
        };
        let logsql: Vec<Option<CachedSummary>> = entries.iter().map(|(_, e)| summary(e)).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                entries.iter().map(|(p, _)| shown_path(p.as_ref())),
            )),
            Arc::new(UInt64Array::from_iter_values(
                entries.iter().map(|(_, e)| e.value.meta.size),
            )),
            Arc::new(
                TimestampNanosecondArray::from_iter_values(entries.iter().map(|(_, e)| {
                    e.value
                        .meta
                        .last_modified
                        .timestamp_nanos_opt()
                        .unwrap_or_default()
                }))
                .with_timezone("UTC"),
            ),
            Arc::new(StringArray::from_iter(
                logsql.iter().map(|s| s.as_ref().map(|s| s.format.name())),
            )),
            Arc::new(UInt64Array::from_iter_values(
                entries.iter().map(|(_, e)| e.size_bytes as u64),
            )),
            Arc::new(UInt64Array::from_iter_values(
                entries.iter().map(|(_, e)| e.hits as u64),
            )),
            Arc::new(UInt64Array::from_iter(
                logsql
                    .iter()
                    .map(|s| s.as_ref().map(|s| s.summary.chunks.len() as u64)),
            )),
            Arc::new(UInt64Array::from_iter(
                logsql
                    .iter()
                    .map(|s| s.as_ref().map(|s| s.summary.channels.len() as u64)),
            )),
        ];
        let batch = RecordBatch::try_new(schema(), columns)?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            schema(),
            projection.cloned(),
        )?)
    }
}

/// An entry's path as a user names the file: an object-store key that is a
/// local file is shown as its file system path, relative to the working
/// directory when it lies below it (`tests/data/demo.mcap`); other keys as
/// they are.
fn shown_path(key: &str) -> String {
    let local = std::path::PathBuf::from(format!("/{key}"));
    if !local.is_file() {
        return key.to_string();
    }
    let relative = std::env::current_dir().ok().and_then(|cwd| {
        local
            .strip_prefix(cwd)
            .ok()
            .map(|r| r.display().to_string())
    });
    relative.unwrap_or_else(|| local.display().to_string())
}
