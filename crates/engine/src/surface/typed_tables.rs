//! Table functions for the typed side tables formats derive from their records
//! (CARLA `positions('town.log')`, BDDF `pod('spot.bddf', 'imu/accel')`, ...).
//!
//! Each table name any format lists in [`FormatReader::tables`] becomes one
//! table function `name('path' [, arg])`. It returns a listing table over the
//! path's files of that format, scanned by the same engine as `messages`
//! (time pruning over chunk statistics through a `log_time` column, byte-range
//! partitions, metrics, `on_error`).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use super::table_functions::{literal_text, plan_on_thread};
use super::url_table::{listing_table, resolve};
use crate::file_format::LogFileFormat;
use crate::scanner::error::df_err;
use crate::scanner::schema::table_schema;
use crate::scanner::target::TableSpec;
use logsql_readers::formats::{self, FormatReader};

/// Every typed table name, with the formats that derive it.
pub fn table_names() -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut out: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
    for f in formats::all() {
        for table in f.tables() {
            out.entry(table.name()).or_default().push(f.name());
        }
    }
    out
}

/// Registers one table function per typed table name.
pub fn register(ctx: &SessionContext) {
    for (name, formats) in table_names() {
        ctx.register_udtf(name, Arc::new(TypedTableFunction { name, formats }));
    }
    ctx.register_udtf("typed_tables", Arc::new(TypedTablesCatalog));
}

#[derive(Debug)]
struct TypedTableFunction {
    name: &'static str,
    formats: Vec<&'static str>,
}

impl TableFunctionImpl for TypedTableFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let texts: Vec<Option<String>> = args.exprs().iter().map(literal_text).collect();
        let (path, arg) = match texts.as_slice() {
            [Some(p)] => (p.clone(), None),
            [Some(p), Some(a)] => (p.clone(), Some(a.clone())),
            _ => {
                return Err(DataFusionError::Plan(format!(
                    "{n}() takes a path (file, directory or glob) and optionally one more literal, e.g. {n}('{ex}'); it reads {f} files",
                    n = self.name,
                    ex = "run.log",
                    f = self.formats.join(", ")
                )));
            }
        };
        let name = self.name;
        plan_on_thread(&args, &format!("{name}('{path}')"), |state| async move {
            plan_table(&state, name, &path, arg).await
        })
    }
}

/// Lists `path`, picks the files whose format derives `name`, and builds the table.
async fn plan_table(
    state: &SessionState,
    name: &str,
    path: &str,
    arg: Option<String>,
) -> Result<Arc<dyn TableProvider>> {
    let resolved = resolve(state, path).await?;
    let has_table =
        |f: &Option<Arc<dyn FormatReader>>| f.as_ref().is_some_and(|f| f.table(name).is_ok());
    let files: Vec<_> = resolved
        .files
        .iter()
        .filter(|(_, f)| has_table(f))
        .collect();
    let Some((first, Some(format))) = files.first().map(|(l, f)| (l, f)) else {
        let found: Vec<&str> = resolved
            .log_files()
            .filter_map(|(_, f)| f.as_ref().map(|f| f.name()))
            .collect();
        return Err(DataFusionError::Plan(format!(
            "{name}('{path}'): no file there has a {name} table (log files found: {})",
            if found.is_empty() {
                "none".to_string()
            } else {
                found.join(", ")
            }
        )));
    };
    // All files of one table share the format of the first one.
    let files: Vec<_> = files
        .iter()
        .filter(|(_, f)| f.as_ref().is_some_and(|f| f.name() == format.name()))
        .copied()
        .collect();
    let cache = crate::storage::summary_cache::of(state.runtime_env());
    let limits =
        crate::scanner::options::LogsqlOptions::from_config(state.config_options()).limits();
    let cached = first
        .summary_with_limits(Some(cache), Some(Arc::clone(format)), limits)
        .await
        .map_err(df_err)?;
    let table = format.table(name).map_err(df_err)?;
    let def = table.def(&cached.summary, arg.as_deref()).map_err(df_err)?;
    let schema = table_schema(&def);
    let spec = TableSpec { table, arg, def };
    let file_format = LogFileFormat::typed(Arc::clone(format), Arc::new(spec));
    listing_table(&resolved, &files, file_format, schema)
}

/// One row of `typed_tables()`: format, table, table doc, position, column, type, doc.
type CatalogRow = (String, String, String, u32, String, String, String);

/// `typed_tables()`: every typed table of every format, one row per column,
/// with its Arrow type and documentation (units included).
#[derive(Debug)]
struct TypedTablesCatalog;

impl TableFunctionImpl for TypedTablesCatalog {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        if !args.exprs().is_empty() {
            return Err(DataFusionError::Plan(
                "typed_tables() takes no arguments".into(),
            ));
        }
        use datafusion::arrow::array::{RecordBatch, StringArray, UInt32Array};
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let mut rows: Vec<CatalogRow> = Vec::new();
        for format in formats::all() {
            for table in format.tables() {
                let name = table.name();
                let empty = logsql_readers::model::Summary::default();
                match table.def(&empty, None) {
                    Ok(def) => {
                        let schema = table_schema(&def);
                        for (i, c) in def.columns.iter().enumerate() {
                            let ty = schema.field(i).data_type().to_string();
                            rows.push((
                                format.name().to_string(),
                                name.to_string(),
                                def.doc.clone(),
                                i as u32 + 1,
                                c.name.clone(),
                                ty,
                                c.doc.clone(),
                            ));
                        }
                    }
                    // Tables whose columns depend on the file (BDDF pod: the POD type).
                    Err(_) => rows.push((
                        format.name().to_string(),
                        name.to_string(),
                        "columns depend on the file and argument; see DESCRIBE".into(),
                        0,
                        String::new(),
                        String::new(),
                        String::new(),
                    )),
                }
            }
        }
        let s = |n: &str| Field::new(n, DataType::Utf8, false);
        let schema = Arc::new(Schema::new(vec![
            s("format"),
            s("table_name"),
            s("table_doc"),
            Field::new("ordinal_position", DataType::UInt32, false),
            s("column_name"),
            s("data_type"),
            s("doc"),
        ]));
        let col = |f: fn(&CatalogRow) -> &str| {
            Arc::new(rows.iter().map(|r| Some(f(r))).collect::<StringArray>()) as _
        };
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                col(|r| &r.0),
                col(|r| &r.1),
                col(|r| &r.2),
                Arc::new(rows.iter().map(|r| Some(r.3)).collect::<UInt32Array>()),
                col(|r| &r.4),
                col(|r| &r.5),
                col(|r| &r.6),
            ],
        )?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}
