//! `logsql._native`: the Rust half of the `logsql` Python package
//! (`python/logsql/__init__.py` is the API users see).
//!
//! - [`LogTable`]: a log-file table (`table(path)`, `topic_table(path, topic)`)
//!   that datafusion-python takes through `__datafusion_table_provider__`
//!   (datafusion-ffi), so projection, filters and limits reach logsql's scan and
//!   the scan runs in parallel inside the user's own datafusion-python session;
//! - [`sql`]: a query run by logsql's own session, its result an Arrow C stream
//!   (`__arrow_c_stream__`) that pyarrow, pandas and polars import without copying;
//! - [`index`]: `logsql index`, a fleet catalog brought up to date;
//! - [`summary`]: a file's summary (format, index, times, chunks, channels) as a
//!   dict, the facts `logsql info` reports ([`logsql::ops::info`]).
//!
//! Scans always plan and run in logsql's session (its object stores, table
//! functions and `logsql.*` options), whatever session calls them: the FFI
//! session a foreign host passes has a default runtime without them.

#![forbid(unsafe_code)]

mod log_table;
mod stream;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use datafusion::catalog::{TableFunctionArgs, TableProvider};
use datafusion::common::{ScalarValue, TableReference};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use logsql::CachedSummary;
use logsql::ops::info;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio::runtime::Runtime;

use log_table::LogTable;
use stream::ArrowStream;

/// The runtime every logsql query of this process runs on.
pub(crate) static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("logsql")
        .thread_stack_size(logsql::complexity::PLANNING_STACK)
        .build()
        .expect("the logsql runtime starts")
});

/// A DataFusion error as a Python exception (`RuntimeError` with the full text:
/// file, byte offset and cause for damaged files).
pub(crate) fn py_err(e: DataFusionError) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// A logsql session with `options` set: `on_error = 'warn'` sets
/// `logsql.on_error`; keys with a dot (`datafusion.execution.batch_size`) are
/// set as given.
fn session(options: Option<HashMap<String, String>>) -> PyResult<SessionContext> {
    let ctx = logsql::session_context();
    if let Some(options) = options {
        let state = ctx.state_ref();
        let mut state = state.write();
        let config = state.config_mut().options_mut();
        for (key, value) in options {
            let key = match key.contains('.') {
                true => key,
                false => format!("logsql.{key}"),
            };
            config
                .set(&key, &value)
                .map_err(|e| PyValueError::new_err(format!("option {key}: {e}")))?;
        }
    }
    Ok(ctx)
}

/// `logsql.table(path, options)`: every message of the log files at `path`
/// (file, directory or glob; formats detected from content).
#[pyfunction]
#[pyo3(signature = (path, options=None))]
fn table(
    py: Python<'_>,
    path: String,
    options: Option<HashMap<String, String>>,
) -> PyResult<LogTable> {
    let ctx = session(options)?;
    let provider = py
        .detach(|| RUNTIME.block_on(ctx.table_provider(TableReference::bare(path.as_str()))))
        .map_err(py_err)?;
    Ok(LogTable::new(provider, ctx, format!("table('{path}')")))
}

/// `logsql.topic_table(path, topic, flatten, options)`: one topic's messages
/// decoded into typed columns (SQL `read_topic(path, topic)`).
#[pyfunction]
#[pyo3(signature = (path, topic, flatten=false, options=None))]
fn topic_table(
    py: Python<'_>,
    path: String,
    topic: String,
    flatten: bool,
    options: Option<HashMap<String, String>>,
) -> PyResult<LogTable> {
    let ctx = session(options)?;
    let mut args = vec![literal(&path), literal(&topic)];
    if flatten {
        args.push(literal("flatten"));
    }
    let state = ctx.state();
    let function = state
        .table_functions()
        .get("read_topic")
        .cloned()
        .ok_or_else(|| PyRuntimeError::new_err("read_topic is not registered"))?;
    let provider: Arc<dyn TableProvider> = py
        .detach(|| function.create_table_provider_with_args(TableFunctionArgs::new(&args, &state)))
        .map_err(py_err)?;
    Ok(LogTable::new(
        provider,
        ctx,
        format!("topic_table('{path}', '{topic}')"),
    ))
}

fn literal(s: &str) -> Expr {
    Expr::Literal(ScalarValue::Utf8(Some(s.to_string())), None)
}

/// `logsql.sql(query, options)` without pyarrow: the result as an Arrow C
/// stream (the Python wrapper makes it a `pyarrow.Table`).
#[pyfunction]
#[pyo3(signature = (query, options=None))]
fn sql(
    py: Python<'_>,
    query: String,
    options: Option<HashMap<String, String>>,
) -> PyResult<ArrowStream> {
    let ctx = session(options)?;
    let stream = py
        .detach(|| {
            RUNTIME.block_on(async {
                let df = logsql::sql(&ctx, &query).await?;
                df.execute_stream().await
            })
        })
        .map_err(py_err)?;
    Ok(ArrowStream::new(stream))
}

/// `logsql.info(path)`'s facts, as `logsql info` gathers them
/// ([`logsql::ops::info`]): the summary through the session's summary cache,
/// and where the file states no per-topic counts, the messages and the time
/// span counted from message headers. `path` names one log file.
#[pyfunction]
fn summary<'py>(py: Python<'py>, path: String) -> PyResult<Bound<'py, PyDict>> {
    let ctx = logsql::session_context();
    let (facts, cached) = py
        .detach(|| RUNTIME.block_on(gather(&ctx, &path)))
        .map_err(PyRuntimeError::new_err)?;
    let summary = &cached.summary;
    let d = PyDict::new(py);
    d.set_item("path", &path)?;
    d.set_item("format", facts.format)?;
    d.set_item("size", facts.size)?;
    d.set_item("indexed", facts.indexed)?;
    d.set_item("message_count", facts.messages)?;
    d.set_item("messages_counted_from_headers", facts.count_note.is_some())?;
    d.set_item("start_time_ns", facts.start)?;
    d.set_item("end_time_ns", facts.end)?;
    d.set_item("chunks", facts.chunks)?;
    let mut compression: HashMap<&str, usize> = HashMap::new();
    for c in &summary.chunks {
        *compression.entry(c.compression.as_str()).or_default() += 1;
    }
    d.set_item("chunk_compression", compression)?;
    let channels: Vec<Bound<'py, PyDict>> = summary
        .channels
        .values()
        .map(|c| {
            let ch = PyDict::new(py);
            ch.set_item("id", c.id)?;
            ch.set_item("topic", &c.topic)?;
            ch.set_item("message_type", c.message_type.as_deref())?;
            ch.set_item("message_encoding", &c.message_encoding)?;
            ch.set_item("schema_encoding", c.schema_encoding.as_deref())?;
            ch.set_item(
                "message_count",
                summary
                    .channel_message_counts
                    .as_ref()
                    .and_then(|m| m.get(&c.id).copied()),
            )?;
            Ok(ch)
        })
        .collect::<PyResult<_>>()?;
    d.set_item("channels", channels)?;
    let metadata: Vec<(String, Vec<(String, String)>)> = summary
        .metadata
        .iter()
        .map(|m| (m.name.clone(), m.metadata.clone().into_iter().collect()))
        .collect();
    d.set_item("metadata", metadata)?;
    d.set_item("attachments", facts.attachments)?;
    d.set_item("properties", summary.properties.clone())?;
    d.set_item("damage", facts.damage)?;
    Ok(d)
}

/// The facts of the one log file `path` names, and its summary.
async fn gather(ctx: &SessionContext, path: &str) -> Result<(info::Facts, CachedSummary), String> {
    let state = ctx.state();
    let mut files = info::files(&state, &[path.to_string()])
        .await
        .map_err(|e| e.to_string())?;
    if files.len() != 1 {
        return Err(format!(
            "{path}: info takes one log file; this path names {}",
            files.len()
        ));
    }
    let (loc, cached) = files.remove(0).read.map_err(|e| e.to_string())?;
    let limits = logsql::LogsqlOptions::from_config(state.config_options()).limits();
    // Reads block (object stores block on the runtime): a blocking thread.
    tokio::task::spawn_blocking(move || {
        info::gather(&loc, &cached, info::Gather::default(), limits)
            .map(|(facts, _)| (facts, cached))
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("info task failed: {e}"))?
}

/// `logsql.index(sources, catalog, ...)`: `logsql index` ([`logsql::ops::index`]):
/// the catalog at `catalog` brought up to date with the recordings `sources`
/// list; what changed, as a dict.
#[pyfunction]
#[pyo3(signature = (sources, catalog, dry_run=false, device_key=None, options=None))]
fn index<'py>(
    py: Python<'py>,
    sources: Vec<String>,
    catalog: String,
    dry_run: bool,
    device_key: Option<String>,
    options: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyDict>> {
    let ctx = session(options)?;
    let asked = logsql::ops::index::IndexOptions {
        sources,
        catalog,
        dry_run,
        device_key,
    };
    let report = py
        .detach(|| RUNTIME.block_on(logsql::ops::index::index(&ctx, &asked, &|_| {})))
        .map_err(py_err)?;
    let d = PyDict::new(py);
    d.set_item("catalog", report.catalog)?;
    d.set_item("added", report.added)?;
    d.set_item("changed", report.changed)?;
    d.set_item("removed", report.removed)?;
    d.set_item("unchanged", report.unchanged)?;
    d.set_item("unreadable", report.unreadable)?;
    d.set_item("damaged", report.damaged)?;
    d.set_item("generation", report.generation)?;
    d.set_item("recordings", report.recordings)?;
    d.set_item("dry_run", report.dry_run)?;
    Ok(d)
}

/// The DataFusion (and datafusion-ffi) major version this module is built on.
#[pyfunction]
fn datafusion_major() -> u64 {
    datafusion_ffi::version()
}

/// The `logsql._native` module.
/// Damage warnings (an unfinished recording, damage under `on_error = 'warn'`)
/// go to stderr as `logsql warning: <file>: ...`; `LOGSQL_LOG` sets the level
/// (`off`, `error`, `warn`, `info`, ...). Python's `logging` is not used: a
/// scan thread would need the GIL, which the thread reading the results holds.
fn init_logger() {
    use std::io::Write;
    let _ = env_logger::Builder::new()
        .filter_level(log::LevelFilter::Warn)
        .parse_env(env_logger::Env::new().filter("LOGSQL_LOG"))
        .format(|buf, record| {
            let level = record.level().as_str().to_ascii_lowercase();
            let level = if level == "warn" {
                "warning".to_string()
            } else {
                level
            };
            writeln!(buf, "logsql {level}: {}", record.args())
        })
        .try_init();
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init_logger();
    m.add_class::<LogTable>()?;
    m.add_class::<ArrowStream>()?;
    m.add_function(wrap_pyfunction!(table, m)?)?;
    m.add_function(wrap_pyfunction!(topic_table, m)?)?;
    m.add_function(wrap_pyfunction!(sql, m)?)?;
    m.add_function(wrap_pyfunction!(summary, m)?)?;
    m.add_function(wrap_pyfunction!(index, m)?)?;
    m.add_function(wrap_pyfunction!(datafusion_major, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
