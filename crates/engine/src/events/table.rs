//! The events table: `events` (with `logsql.events` or `logsql.catalog`
//! set) and `events('DIR')`, read as a Parquet table over the directory and
//! appended to (`INSERT INTO events ...`) through DataFusion's own Parquet
//! writer, which logsql stages and publishes whole (see `atomic_write`).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::datasource::TableType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::prelude::SessionContext;

use super::CATALOG_EVENTS_DIR;
use super::fill::FillEventsExec;
use super::schema::{Event, batch_of, events_schema};
use crate::scanner::options::LogsqlOptions;
use crate::storage::object_io::is_local;
use crate::storage::roots::DataRoots;

/// The events directory the session's options name: `logsql.events`, else
/// the `events/` directory of `logsql.catalog`; `None` with neither.
pub fn location_of(options: &LogsqlOptions) -> Option<String> {
    if !options.events.is_empty() {
        return Some(options.events.clone());
    }
    if options.catalog.is_empty() {
        return None;
    }
    Some(format!(
        "{}/{CATALOG_EVENTS_DIR}/",
        options.catalog.trim_end_matches('/')
    ))
}

/// The events of one directory (local or an object-store prefix).
#[derive(Debug, Clone)]
pub struct EventsTable {
    /// The directory as the user named it.
    location: String,
}

impl EventsTable {
    /// The events kept in `location`.
    pub fn new(location: impl Into<String>) -> Self {
        Self {
            location: location.into(),
        }
    }

    /// The directory as a listing URL (ending in `/`).
    fn url(&self) -> Result<ListingTableUrl> {
        let mut dir = self.location.clone();
        if !dir.ends_with('/') {
            dir.push('/');
        }
        ListingTableUrl::parse(&dir)
    }

    /// The local directory, for events on this machine.
    fn local_dir(&self) -> Option<std::path::PathBuf> {
        is_local(&self.location).then(|| {
            std::path::PathBuf::from(
                self.location
                    .strip_prefix("file://")
                    .unwrap_or(&self.location),
            )
        })
    }

    /// The Parquet table over the directory, after the roots allow it.
    fn listing(&self, state: &dyn Session) -> Result<ListingTable> {
        let url = self.url()?;
        crate::storage::stores::ensure(state.runtime_env(), url.as_ref())?;
        if let Some(roots) = DataRoots::of(state.config()) {
            roots.check_url(url.as_ref(), &self.location)?;
        }
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let config = ListingTableConfig::new(url)
            .with_listing_options(options)
            .with_schema(events_schema());
        ListingTable::try_new(config)
    }
}

#[async_trait]
impl TableProvider for EventsTable {
    fn schema(&self) -> SchemaRef {
        events_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // Row-group pruning only: the filter stays above the scan.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let listing = self.listing(state)?;
        // No events appended yet: no directory, no rows.
        if self.local_dir().is_some_and(|d| !d.exists()) {
            let schema = match projection {
                Some(p) => Arc::new(events_schema().project(p)?),
                None => events_schema(),
            };
            return Ok(Arc::new(EmptyExec::new(schema)));
        }
        listing.scan(state, projection, filters, limit).await
    }

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return Err(DataFusionError::Plan(format!(
                "{}: events are only appended (INSERT INTO events ...), not {insert_op}",
                self.location
            )));
        }
        let listing = self.listing(state)?;
        if let Some(dir) = self.local_dir() {
            std::fs::create_dir_all(&dir).map_err(|e| {
                DataFusionError::Execution(format!("{}: cannot make it: {e}", dir.display()))
            })?;
        }
        listing
            .insert_into(state, Arc::new(FillEventsExec::new(input)), insert_op)
            .await
    }
}

/// Appends `events` to the events in `location` (one new file), through the
/// same plan as `INSERT INTO events`. Returns how many were appended.
pub async fn append(ctx: &SessionContext, location: &str, events: &[Event]) -> Result<u64> {
    if events.is_empty() {
        return Ok(0);
    }
    let name = format!("logsql_events_append_{}", uuid::Uuid::new_v4().simple());
    ctx.register_table(name.as_str(), Arc::new(EventsTable::new(location)))?;
    let written = async {
        let frame = ctx.read_batch(batch_of(events)?)?;
        frame.write_table(&name, DataFrameWriteOptions::new()).await
    }
    .await;
    ctx.deregister_table(name.as_str())?;
    written?;
    Ok(events.len() as u64)
}

/// Registers `events('DIR')` on `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udtf("events", Arc::new(EventsFunction));
}

#[derive(Debug)]
struct EventsFunction;

impl TableFunctionImpl for EventsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let dir = match args.exprs() {
            [e] => crate::surface::table_functions::literal_text(e),
            _ => None,
        };
        let Some(dir) = dir else {
            return Err(DataFusionError::Plan(
                "events() takes one string argument: a directory of events, e.g. \
                 events('catalog/events/')"
                    .into(),
            ));
        };
        Ok(Arc::new(EventsTable::new(dir)))
    }
}
