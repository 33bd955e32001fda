//! A catalog's tables in SQL: `recordings('CAT')`, `catalog_topics('CAT')`
//! and `catalog_chunks('CAT')`, and, with `logsql.catalog` set (`logsql
//! --catalog CAT`), the names `recordings` and `topics` for the first two.
//!
//! Each is the catalog's newest generation when the query is planned: a
//! Parquet table over the file its commit names, so filters prune its row
//! groups as any Parquet scan's.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::datasource::TableType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use super::table_functions::literal_text;
use crate::catalog::{CatalogLocation, CatalogTable};
use crate::scanner::options::LogsqlOptions;
use crate::storage::roots::DataRoots;

/// The table functions, by name.
const FUNCTIONS: [(&str, CatalogTable); 3] = [
    ("recordings", CatalogTable::Recordings),
    ("catalog_topics", CatalogTable::Topics),
    ("catalog_chunks", CatalogTable::Chunks),
];

/// Registers the catalog's table functions on `ctx`.
pub fn register(ctx: &SessionContext) {
    for (name, table) in FUNCTIONS {
        ctx.register_udtf(name, Arc::new(CatalogFunction { name, table }));
    }
}

#[derive(Debug)]
struct CatalogFunction {
    name: &'static str,
    table: CatalogTable,
}

impl TableFunctionImpl for CatalogFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let catalog = match args.exprs() {
            [e] => literal_text(e),
            _ => None,
        };
        let Some(catalog) = catalog else {
            return Err(DataFusionError::Plan(format!(
                "{0}() takes one string argument: a catalog directory or URL, e.g. {0}('catalog/')",
                self.name
            )));
        };
        Ok(Arc::new(CatalogTableProvider {
            catalog,
            table: self.table,
        }))
    }
}

/// The table a bare name stands for under `logsql.catalog`: `recordings`
/// and `topics`, and `events` (also under `logsql.events` alone). `None` for
/// other names, or without a catalog.
pub(crate) fn named(options: &LogsqlOptions, name: &str) -> Option<Arc<dyn TableProvider>> {
    if name == "events" {
        return crate::events::location_of(options)
            .map(|dir| Arc::new(crate::events::EventsTable::new(dir)) as Arc<dyn TableProvider>);
    }
    if options.catalog.is_empty() {
        return None;
    }
    let table = match name {
        "recordings" => CatalogTable::Recordings,
        "topics" => CatalogTable::Topics,
        _ => return None,
    };
    Some(Arc::new(CatalogTableProvider {
        catalog: options.catalog.clone(),
        table,
    }))
}

/// One of a catalog's tables, found when a query over it is planned.
#[derive(Debug)]
struct CatalogTableProvider {
    catalog: String,
    table: CatalogTable,
}

impl CatalogTableProvider {
    /// The Parquet table of the catalog's newest generation.
    async fn current(&self, state: &dyn Session) -> Result<ListingTable> {
        let location = CatalogLocation::new(state.runtime_env(), &self.catalog)?;
        if let Some(roots) = DataRoots::of(state.config()) {
            roots.check_url(location.url(), &self.catalog)?;
        }
        let manifest = location.require_latest().await?;
        let file = manifest.tables.get(self.table.name()).ok_or_else(|| {
            DataFusionError::from(crate::catalog::CatalogError::Damaged {
                catalog: self.catalog.clone(),
                file: format!("_log/{:020}.json", manifest.generation),
                message: format!("names no {} table", self.table.name()),
            })
        })?;
        let url = ListingTableUrl::parse(location.file_url(file))?;
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let config = ListingTableConfig::new(url)
            .with_listing_options(options)
            .with_schema(self.table.schema());
        ListingTable::try_new(config)
    }
}

#[async_trait]
impl TableProvider for CatalogTableProvider {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
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
        self.current(state)
            .await?
            .scan(state, projection, filters, limit)
            .await
    }
}
