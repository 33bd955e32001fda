//! Distributed execution on [datafusion-distributed] (feature `distributed`):
//! the same SQL, with the scans of a query split across worker processes.
//!
//! - [`coordinator_context`]: a session that plans queries for a list of
//!   workers (the CLI's `--workers`); table functions and summaries are planned
//!   here, so the coordinator needs access to the files too;
//! - [`worker`], [`serve`]: a worker (the CLI's `logsql worker`): every query's
//!   session has logsql registered and decodes scans with [`LogsqlCodec`];
//! - [`codec`]: the plan codec of logsql's scans;
//! - [`security`]: the workers' authentication (a shared token, TLS, mutual
//!   TLS), used by both sides.
//!
//! A worker runs what it is sent, so it is guarded three ways: it answers only
//! peers that authenticate ([`security`]; starting one that does not is an
//! explicit choice, [`WorkerOptions::insecure`]); it runs only plans whose
//! every node is on an allow-list (logsql's scans and the relational
//! operators a query needs: no sinks, no scans of other formats, see
//! [`PlanGuard::worker`]), checked after decoding and before anything runs;
//! and it reads only files below its data roots ([`DataRoots`]).
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
pub mod security;

use std::net::SocketAddr;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use std::sync::Arc;

use datafusion_distributed::{
    DistributedExt, SessionStateBuilderExt, Worker, WorkerPlanRewriteEvent,
    WorkerPlanRewriteEventResponse, WorkerQueryContext, WorkerResolver,
};
use tokio::net::TcpListener;
use url::Url;

pub use codec::LogsqlCodec;
pub use security::{ClusterAuth, SecureChannels, TlsFiles, Token};

use crate::plan_guard::PlanGuard;
use crate::scanner::options::LogsqlOptions;
use crate::storage::roots::DataRoots;

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
/// with logsql registered (as [`crate::session_context_with_config`]), its
/// scans encoded by [`LogsqlCodec`], and `auth` (the workers' token, TLS
/// files) on every request to a worker.
pub fn coordinator_context(
    config: SessionConfig,
    workers: StaticWorkers,
    auth: ClusterAuth,
) -> Result<SessionContext> {
    let state = coordinator_state_builder(config, workers, auth)?.build();
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
    auth: ClusterAuth,
) -> Result<SessionStateBuilder> {
    SessionStateBuilder::new()
        .with_default_features()
        .with_config(
            super::walking_subdirectories(config).with_option_extension(LogsqlOptions {
                // The distributed planner re-splits file groups into tasks, which
                // a declared scan order does not allow.
                time_order: false,
                ..LogsqlOptions::default()
            }),
        )
        .with_runtime_env(super::runtime_env())
        .with_distributed_planner()
        .with_distributed_worker_resolver(workers)
        .with_distributed_channel_resolver(SecureChannels::new(auth))
        .with_distributed_user_codec(LogsqlCodec)
        .with_distributed_metrics_collection(true)
}

/// What a worker accepts: who may send it plans, and what they may read.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The token and TLS files peers authenticate with.
    pub auth: ClusterAuth,
    /// The directories and object-store prefixes plans may read.
    pub roots: DataRoots,
    /// Serve without authenticating peers (anyone who reaches the port may
    /// run plans that read below the roots). Refused otherwise.
    pub insecure: bool,
    /// Memory one query's part on this worker may hold at once, in bytes
    /// (a pool of its own per query; also the cap on any one value a
    /// function makes, when lower than `logsql.max_value_bytes`).
    pub memory_limit: Option<usize>,
}

impl WorkerOptions {
    /// Refuses a configuration that lets anyone in without saying so, or
    /// that can read nothing.
    pub fn validate(&self) -> Result<()> {
        if !self.auth.authenticates_peers() && !self.insecure {
            return Err(DataFusionError::Configuration(format!(
                "a worker authenticates its peers: give it a token (--token-file, or {}) or mutual TLS (--tls-cert, --tls-key, --tls-ca); --insecure serves without",
                security::TOKEN_ENV
            )));
        }
        if self.roots.is_empty() {
            return Err(DataFusionError::Configuration(
                "a worker needs at least one data root (--data-root)".into(),
            ));
        }
        Ok(())
    }
}

/// A worker whose query sessions have logsql registered, decode logsql's
/// scans, check every plan with [`PlanGuard::worker`] before it runs and
/// reach other workers with `options.auth`; its object stores are built on
/// first use from the environment.
pub fn worker(options: &WorkerOptions) -> Worker {
    let roots = Arc::new(options.roots.clone());
    let channels = SecureChannels::new(options.auth.clone());
    let memory_limit = options.memory_limit;
    Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        worker_session(ctx, Arc::clone(&roots), channels.clone(), memory_limit)
    })
    .with_runtime_env(super::runtime_env())
}

/// The session of one query on a worker: below `roots`, its memory in a
/// pool of `memory_limit` bytes of its own when given.
async fn worker_session(
    ctx: WorkerQueryContext,
    roots: Arc<DataRoots>,
    channels: SecureChannels,
    memory_limit: Option<usize>,
) -> Result<SessionState> {
    let guard = PlanGuard::worker(Arc::clone(&roots));
    let mut builder = ctx.builder;
    if let Some(mut config) = builder.config().take() {
        if let Some(limit) = memory_limit {
            LogsqlOptions::cap_values_at(config.options_mut(), limit as u64);
        }
        *builder.config() = Some(config.with_extension(roots));
    }
    if let Some(limit) = memory_limit {
        let shared = builder
            .runtime_env()
            .clone()
            .unwrap_or_else(super::runtime_env);
        *builder.runtime_env() = Some(crate::task::with_memory_limit(&shared, limit));
    }
    let state = builder
        .with_distributed_user_codec(LogsqlCodec)
        .with_distributed_channel_resolver(channels)
        .with_distributed_worker_plan_rewrite_handler(move |ev: WorkerPlanRewriteEvent| {
            guard.check(&ev.plan)?;
            Ok(WorkerPlanRewriteEventResponse::new(ev.plan))
        })
        .build();
    let ctx = SessionContext::new_with_state(state);
    super::register(&ctx)?;
    Ok(ctx.state())
}

/// Serves a [`worker`] on `addr` until the process ends.
pub async fn serve(addr: SocketAddr, options: WorkerOptions) -> Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| DataFusionError::External(format!("binding {addr}: {e}").into()))?;
    serve_listener(listener, options).await
}

/// Serves a [`worker`] on an already bound listener (port 0 in tests): TLS
/// when `options.auth` has a certificate, the token checked on every request
/// before its body is read.
pub async fn serve_listener(listener: TcpListener, options: WorkerOptions) -> Result<()> {
    options.validate()?;
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = options.auth.server_tls()? {
        server = server
            .tls_config(tls)
            .map_err(|e| DataFusionError::Configuration(format!("worker TLS: {e}")))?;
    }
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    server
        .layer(tonic::service::InterceptorLayer::new(
            options.auth.token_check(),
        ))
        .add_service(worker(&options).into_worker_server())
        .serve_with_incoming(incoming)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))
}
