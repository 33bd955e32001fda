//! # logsql
//!
//! SQL over robot and simulator log files with Apache DataFusion: the one
//! scan engine and the DataFusion glue, shared by every format (the byte-level
//! readers are `logsql-readers`, the payload decoders `logsql-decode`, the
//! `ASOF JOIN` `logsql-asof`).
//!
//! Each log format is a DataFusion file format whose `messages` table streams
//! `RecordBatch`es, with projection, time and topic pushdown into the file's
//! own chunk index. One call registers everything on a `SessionContext`:
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! let ctx = logsql::session_context();
//! let df = ctx.sql("SELECT topic, count(*) FROM 'run.mcap' GROUP BY topic").await?;
//! df.show().await?;
//! # Ok(()) }
//! ```
//!
//! The face is at the root (the session, the options, the file formats, the
//! types the CLI, Python and the server name: [`DataRoots`], [`PlanGuard`],
//! [`AtomicFile`], ...) and in three public modules, [`write`], [`ops`] and
//! `distributed`. The engine's own modules, bottom up (each imports only the
//! ones below it):
//! - `task`: copies of a query's task context with its configuration or
//!   runtime changed;
//! - `atomic_write`: the files DataFusion's own writers put staged beside
//!   their targets and renamed over them when complete (the rule giving
//!   every `COPY` that guarantee);
//! - [`catalog`]: a fleet's catalog: its files (commits, generations of
//!   Parquet tables) and tables, which `ops::index` writes and queries read;
//! - `storage`: object stores (`s3://`, `gs://`, `az://`, `http://`) built on
//!   first use, reads through them, and the summary cache;
//! - `scanner`: the `messages` table schema, pruning, the scan loop, batch
//!   building, time order;
//! - `datasource`: DataFusion's `FileSource` / `FileFormat` of the read side;
//! - [`write`]: the write wing's glue: one bridge driving any writer of
//!   `logsql-writers`, and the `COPY ... TO` formats (MCAP, MP4, LeRobot);
//! - `file_format`: each log format's DataFusion `FileFormat`, read through
//!   `datasource` and written through [`write`];
//! - `plan_guard`: the checks of plans from others (a server's clients, a
//!   distributed coordinator): roots, and which sinks may write;
//! - `surface`: what SQL sees: `SELECT ... FROM 'path'`, the table functions,
//!   typed side tables, `read_topic`, scalar functions, file order under
//!   `LIMIT`;
//! - [`ops`]: whole operations the CLI and the Python bindings share (`info`'s
//!   facts, `doctor`'s files, the `dataset` spec, `recover`'s time windows);
//! - `distributed` (feature `distributed`): the plan codec, coordinator and worker
//!   for datafusion-distributed.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod atomic_write;
pub mod catalog;
mod datasource;
#[cfg(feature = "distributed")]
pub mod distributed;
pub mod events;
mod file_format;
pub mod ops;
mod plan_guard;
mod scanner;
mod storage;
mod surface;
mod task;
pub mod units;
pub mod write;

use std::sync::Arc;

use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::datasource::provider::DefaultTableFactory;
use datafusion::error::Result;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::logical_expr::CreateExternalTable;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::{SessionConfig, SessionContext};

// The library's face: everything an embedder, the CLI, Python and the
// server use, by name, at the root; the modules behind it are the engine's
// own (`write`, `ops` and `distributed` are faces of their own).
pub use atomic_write::{AtomicDir, AtomicFile};
pub use file_format::{LogFileFormat, LogFileFormatFactory};
pub use logsql_asof::{complexity, sql};
pub use plan_guard::PlanGuard;
pub use scanner::options::LogsqlOptions;
pub use scanner::shared_chunks::SharedChunkRegistry;
pub use scanner::time_order::file_in_time_order;
pub use scanner::unary::only_child;
pub use storage::object_io::FileLocation;
pub use storage::roots::DataRoots;
pub use storage::summary_cache::CachedSummary;
pub use task::{with_config, with_memory_limit, with_runtime};

use storage::stores;
use surface::{file_order, functions, read_topic, table_functions, typed_tables, url_table};

/// Registers everything logsql offers on an existing `SessionContext`:
/// - a file format per log format (`CREATE EXTERNAL TABLE t STORED AS MCAP LOCATION 'dir/'`,
///   and `STORED AS LOG` to detect each file's format),
/// - `SELECT ... FROM 'run.mcap'` (a file, directory or glob; format detected from content),
/// - the table functions `topics`, `chunks`, `attachments`, `metadata`,
/// - reading log tables in file order under a `LIMIT` without `ORDER BY`
///   ([`file_order`]),
/// - `length(x)` that counts bytes of binary values (`sum(length(data))`),
/// - the `logsql.*` session options,
/// - the physical optimizer rule `surface::defer_errors::DeferScanErrors`: a damaged file
///   fails a query only after every readable row was delivered,
/// - `ASOF JOIN` ([`logsql_asof`]): a relation planner for the parenthesized form
///   `FROM (a ASOF JOIN b MATCH_CONDITION (...))` and a query planner for its
///   operator; [`sql()`] accepts every spelling.
pub fn register(ctx: &SessionContext) -> Result<()> {
    register_with(ctx, true)
}

/// [`register`], with or without deferring scan errors to the end of the
/// query (a distributed coordinator's plans are run by datafusion-distributed,
/// whose workers report scan errors in their streams).
pub(crate) fn register_with(ctx: &SessionContext, defer_errors: bool) -> Result<()> {
    {
        let state_ref = ctx.state_ref();
        let mut state = state_ref.write();
        let factories = LogFileFormatFactory::all();
        // MP4 video, written by COPY only.
        state.register_file_format(Arc::new(write::mp4::VideoFileFormatFactory), true)?;
        for factory in factories {
            let name = datafusion::common::GetExt::get_ext(&factory).to_uppercase();
            state.register_file_format(Arc::new(factory), true)?;
            state
                .table_factories_mut()
                .insert(name, Arc::new(StoreAwareTableFactory::default()));
        }
        // `COPY ... STORED AS LEROBOT`: LeRobot datasets (written only).
        state.register_file_format(Arc::new(write::lerobot::LeRobotFormatFactory), true)?;
        if state
            .config()
            .options()
            .extensions
            .get::<LogsqlOptions>()
            .is_none()
        {
            state
                .config_mut()
                .options_mut()
                .extensions
                .insert(LogsqlOptions::default());
        }
        // Rules added once, in this order, after DataFusion's own (a context
        // from `session_context_with_config` has them already: rebuilding a
        // state registers every function again, a third of start-up).
        let rules: Vec<_> = physical_rules(defer_errors)
            .into_iter()
            .filter(|rule| {
                !state
                    .physical_optimizers()
                    .iter()
                    .any(|r| r.name() == rule.name())
            })
            .collect();
        let (existing, guarded) =
            surface::statistics_answers::guarded(state.physical_optimizers().to_vec());
        if !rules.is_empty() || guarded {
            let session_id = state.session_id().to_string();
            *state = SessionStateBuilder::new_from_existing(state.clone())
                .with_session_id(session_id)
                .with_physical_optimizer_rules(existing.into_iter().chain(rules).collect())
                .build();
        }
        *state = logsql_asof::install(state.clone())?;
    }
    table_functions::register(ctx);
    surface::metadata_cache::register(ctx);
    surface::catalog_tables::register(ctx);
    typed_tables::register(ctx);
    read_topic::register(ctx);
    surface::time_grid::register(ctx);
    surface::intervals::register(ctx);
    events::table::register(ctx);
    surface::transforms::register(ctx);
    surface::pose_functions::register(ctx);
    ops::check::register(ctx);
    surface::read_points::register(ctx);
    surface::read_images::register(ctx);
    surface::image_functions::register(ctx);
    functions::register(ctx);
    surface::value_caps::register(ctx);
    surface::cap_rewrite::register(ctx)?;
    url_table::install(ctx)?;
    // Last: it keeps a copy of the session as registered so far.
    surface::tf_lookup::register(ctx);
    Ok(())
}

/// logsql's physical optimizer rules, in the order they run after
/// DataFusion's own: reading limited scans in file order, small batches under
/// the sinks of camera frames (MP4, LeRobot), staging the files a
/// `COPY` writes until it succeeded (on a distributed coordinator too: sinks
/// run there), then (with `defer_errors`, i.e. not on a distributed
/// coordinator) deferring scan errors to the root, which must see the final
/// plan.
fn physical_rules(defer_errors: bool) -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    let mut rules: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> = vec![
        Arc::new(file_order::FileOrderUnderLimit),
        Arc::new(write::frame_batches::FrameBatches),
        Arc::new(atomic_write::AtomicCopy),
    ];
    if defer_errors {
        rules.push(Arc::new(surface::defer_errors::DeferScanErrors));
    }
    rules
}

/// DataFusion's listing-table factory, after registering the object store of
/// every `LOCATION` (so `CREATE EXTERNAL TABLE t STORED AS MCAP LOCATION
/// 's3://bucket/logs/'` works on any context).
#[derive(Debug, Default)]
struct StoreAwareTableFactory(DefaultTableFactory);

#[async_trait::async_trait]
impl TableProviderFactory for StoreAwareTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        for location in &cmd.locations {
            if let Ok(url) = ListingTableUrl::parse(location) {
                stores::ensure(state.runtime_env(), url.object_store().as_ref())?;
            }
        }
        self.0.create(state, cmd).await
    }
}

/// A new `SessionContext` with logsql registered (see [`register`]).
pub fn session_context() -> SessionContext {
    session_context_with_config(SessionConfig::new())
}

/// A new `SessionContext` from `config`, with logsql registered. Its
/// object-store registry builds stores for `s3://`, `gs://`, `az://` and
/// `http(s)://` URLs when first used (`stores::StoreRegistry`).
///
/// A directory names every file below it, sub-directories included
/// (`datafusion.execution.listing_table_ignore_subdirectory` is `false`):
/// recordings sit in trees (a ROS 2 bag is a directory, fleets nest runs by
/// robot and day), and `logsql info` walks them too. `SET` it back to `true`
/// for DataFusion's default, the directory's own files only.
pub fn session_context_with_config(config: SessionConfig) -> SessionContext {
    let config =
        scanner::shared_chunks::SharedChunkRegistry::install(walking_subdirectories(config));
    // The state is built once, with logsql's optimizer rules, so that
    // `register` does not rebuild it (process start-up, `logsql "SELECT 1"`).
    let (defaults, _) = surface::statistics_answers::guarded(
        datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new().rules,
    );
    let builder = physical_rules(true).into_iter().fold(
        SessionStateBuilder::new()
            .with_config(config.with_option_extension(LogsqlOptions::default()))
            .with_runtime_env(runtime_env())
            .with_default_features()
            .with_physical_optimizer_rules(defaults),
        |builder, rule| builder.with_physical_optimizer_rule(rule),
    );
    let ctx = SessionContext::new_with_state(builder.build());
    register(&ctx).expect("registering logsql on a fresh context cannot fail");
    ctx
}

/// `config` with `listing_table_ignore_subdirectory` off: a directory names
/// every file below it (see [`session_context_with_config`]).
pub(crate) fn walking_subdirectories(mut config: SessionConfig) -> SessionConfig {
    config
        .options_mut()
        .execution
        .listing_table_ignore_subdirectory = false;
    config
}

/// A runtime whose object-store registry builds stores for `s3://`, `gs://`,
/// `az://` and `http(s)://` URLs when first used (`stores::StoreRegistry`).
///
/// Directory listings are not cached: DataFusion keeps a table's listing
/// until its cache entry expires, which by default is never, so a session
/// (the shell, a server) would not see recordings written, rewritten or
/// deleted after its first query of their directory.
pub fn runtime_env() -> Arc<RuntimeEnv> {
    let caches = datafusion::execution::cache::cache_manager::CacheManagerConfig::default()
        .with_list_files_cache_limit(0);
    RuntimeEnvBuilder::new()
        .with_cache_manager(caches)
        .with_object_store_registry(Arc::new(stores::StoreRegistry::default()))
        .build_arc()
        .expect("a runtime with default settings builds")
}

/// `ctx.register_logsql()` as an extension method.
pub trait SessionContextExt {
    /// Registers logsql on this context (see [`register`]).
    fn register_logsql(&self) -> Result<()>;
}

impl SessionContextExt for SessionContext {
    fn register_logsql(&self) -> Result<()> {
        register(self)
    }
}
