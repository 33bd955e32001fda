//! Distributed execution on [datafusion-distributed] (feature `distributed`):
//! the same SQL, with the scans of a query split across worker processes.
//!
//! - [`coordinator_context`]: a session that plans queries for a list of
//!   workers (the CLI's `--workers`); table functions and summaries are planned
//!   here, so the coordinator needs access to the files too;
//! - [`worker`], [`serve`]: a worker (the CLI's `logsql worker`): every query's
//!   session has logsql registered and decodes scans with [`LogsqlCodec`];
//! - [`codec`]: the plan codec of logsql's scans.
//!
//! datafusion-distributed splits every file scan into byte ranges, whatever
//! the source says: logsql's scan reads exactly the chunks that start inside
//! its range (and whole-file facts only in the range that starts at byte 0),
//! so no message is read twice or lost however the files are split.
//! Object stores (`s3://`, ...) are built on workers from their own
//! environment, as on the coordinator.
//!
//! [datafusion-distributed]: https://github.com/datafusion-contrib/datafusion-distributed

pub mod codec;

use std::net::SocketAddr;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_distributed::{
    DistributedExt, SessionStateBuilderExt, Worker, WorkerQueryContext, WorkerResolver,
};
use tokio::net::TcpListener;
use url::Url;

pub use codec::LogsqlCodec;

use crate::scanner::options::LogsqlOptions;

/// Workers at fixed URLs (`http://host:port`).
#[derive(Debug, Clone)]
pub struct StaticWorkers(pub Vec<Url>);

impl StaticWorkers {
    /// Parses worker addresses: URLs, or `host:port` (taken as `http://host:port`).
    pub fn parse<S: AsRef<str>>(addresses: &[S]) -> Result<Self> {
        let urls = addresses
            .iter()
            .map(|a| {
                let a = a.as_ref().trim();
                let text = match a.contains("://") {
                    true => a.to_string(),
                    false => format!("http://{a}"),
                };
                Url::parse(&text).map_err(|e| {
                    DataFusionError::Configuration(format!("worker address {a:?}: {e}"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if urls.is_empty() {
            return Err(DataFusionError::Configuration(
                "a distributed session needs at least one worker".into(),
            ));
        }
        Ok(Self(urls))
    }
}

impl WorkerResolver for StaticWorkers {
    fn get_urls(&self) -> Result<Vec<Url>> {
        Ok(self.0.clone())
    }
}

/// A session that runs queries on `workers` through datafusion-distributed,
/// with logsql registered (as [`crate::session_context_with_config`]) and its
/// scans encoded by [`LogsqlCodec`].
pub fn coordinator_context(
    config: SessionConfig,
    workers: StaticWorkers,
) -> Result<SessionContext> {
    let state = coordinator_state_builder(config, workers)?.build();
    let ctx = SessionContext::new_with_state(state);
    super::register_with(&ctx, false)?;
    Ok(ctx)
}

/// The state builder behind [`coordinator_context`], for callers that tune
/// datafusion-distributed further (task sizes, compression, routing) before
/// building; register logsql on the resulting context with [`crate::register`].
///
/// Workers send their scan metrics back (`chunks_read`, `bytes_read`, ... per
/// task), so `EXPLAIN ANALYZE` shows pruning as it does in one process.
pub fn coordinator_state_builder(
    config: SessionConfig,
    workers: StaticWorkers,
) -> Result<SessionStateBuilder> {
    SessionStateBuilder::new()
        .with_default_features()
        .with_config(config.with_option_extension(LogsqlOptions {
            // The distributed planner re-splits file groups into tasks, which
            // a declared scan order does not allow.
            time_order: false,
            ..LogsqlOptions::default()
        }))
        .with_runtime_env(super::runtime_env())
        .with_distributed_planner()
        .with_distributed_worker_resolver(workers)
        .with_distributed_user_codec(LogsqlCodec)
        .with_distributed_metrics_collection(true)
}

/// A worker whose query sessions have logsql registered and decode logsql's
/// scans; its object stores are built on first use from the environment.
pub fn worker() -> Worker {
    Worker::from_session_builder(worker_session).with_runtime_env(super::runtime_env())
}

/// The session of one query on a worker.
async fn worker_session(ctx: WorkerQueryContext) -> Result<SessionState> {
    let state = ctx.builder.with_distributed_user_codec(LogsqlCodec).build();
    let ctx = SessionContext::new_with_state(state);
    super::register(&ctx)?;
    Ok(ctx.state())
}

/// Serves a [`worker`] on `addr` until the process ends.
pub async fn serve(addr: SocketAddr) -> Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| DataFusionError::External(format!("binding {addr}: {e}").into()))?;
    serve_listener(listener).await
}

/// Serves a [`worker`] on an already bound listener (port 0 in tests).
pub async fn serve_listener(listener: TcpListener) -> Result<()> {
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tonic::transport::Server::builder()
        .add_service(worker().into_worker_server())
        .serve_with_incoming(incoming)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))
}
