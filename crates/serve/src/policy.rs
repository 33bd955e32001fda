//! The serving policy of a server, built once from its [`ServeConfig`]
//! ([`Policy`]): the data roots (where queries read), the write root (where
//! `COPY` and `INSERT` may write), the query limits, and the tables it
//! names. Every front end (Postgres wire, Flight SQL, and any other) serves
//! the one [`ServeSession`] the policy makes of a session, so what a client
//! may do does not depend on the protocol it speaks.

use std::path::Path;
use std::sync::Arc;

use datafusion::common::TableReference;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::{SessionConfig, SessionContext};
use logsql::PlanGuard;
use logsql::{DataRoots, LogsqlOptions};

use crate::cancel::RunningQueries;
use crate::config::{ServeConfig, TableSpec};
use crate::error::{ServeError, ServeResult};
use crate::limits::{QueryLimits, ServeRule};
use crate::pg_catalog;
use crate::session::ServeSession;
use crate::shared_state;
use crate::statements::StatementGuard;

/// A server's policy: what its session may read and write, and the limits
/// of its queries (see the module documentation).
#[derive(Debug)]
pub struct Policy {
    roots: Arc<DataRoots>,
    write_roots: Option<Arc<DataRoots>>,
    limits: Arc<QueryLimits>,
    tables: Vec<TableSpec>,
}

impl Policy {
    /// The policy of `config`: its roots (at least one) and write root
    /// parsed, its limits set up.
    pub fn new(config: &ServeConfig) -> ServeResult<Self> {
        let roots = DataRoots::parse(&config.roots)?;
        if roots.is_empty() {
            return Err(ServeError::Config(
                "logsql serve needs at least one --root".to_string(),
            ));
        }
        let write_roots = match &config.write_root {
            Some(dir) => Some(Arc::new(DataRoots::parse(&[dir])?)),
            None => None,
        };
        let limits = &config.limits;
        if limits.max_queries == 0 || limits.max_connections == 0 {
            return Err(ServeError::Config(
                "a server needs at least one query slot (--max-queries) and one connection \
                 (--max-connections)"
                    .to_string(),
            ));
        }
        Ok(Self {
            roots: Arc::new(roots),
            write_roots,
            limits: Arc::new(QueryLimits::new(
                limits.max_queries,
                limits.query_timeout,
                limits.memory_limit,
            )),
            tables: config.tables.clone(),
        })
    }

    /// The roots queries read below.
    pub fn roots(&self) -> &DataRoots {
        &self.roots
    }

    /// Whether `COPY` and `INSERT` may run (below the write root).
    pub fn writes(&self) -> bool {
        self.write_roots.is_some()
    }

    /// `config` with the data roots installed (a session made of it checks
    /// every path a query names before anything is listed) and the cap on one
    /// value (`logsql.max_value_bytes`) at most the memory limit. Give the session
    /// built from it to [`Policy::session`].
    pub fn session_config(&self, config: SessionConfig) -> SessionConfig {
        let mut config = self.roots.as_ref().clone().install(config);
        // One value a function makes is capped at the memory limit, when that
        // is below logsql's default cap (the memory pool is not asked for it).
        if let Some(limit) = self.limits.memory_limit() {
            LogsqlOptions::cap_values_at(config.options_mut(), limit as u64);
        }
        config
    }

    /// `ctx` (made from [`Policy::session_config`]) under the policy: every
    /// plan checked by the plan guard and run under the query limits (the
    /// session's last physical optimizer rule), the tables registered, the
    /// catalog Postgres clients look for (`pg_catalog`, `version()`) added.
    /// This is the one session every front end of a server serves.
    pub async fn session(&self, ctx: SessionContext) -> ServeResult<ServeSession> {
        if DataRoots::of(ctx.state().config()).is_none() {
            return Err(ServeError::Config(
                "the session has no data roots: make it from Policy::session_config".to_string(),
            ));
        }
        let mut guard = PlanGuard::roots_only(Arc::clone(&self.roots)).with_writes(false);
        if let Some(write_roots) = self.write_roots.clone() {
            guard = guard.with_write_roots(write_roots);
        }
        add_physical_rule(
            &ctx,
            Arc::new(ServeRule::new(guard, Arc::clone(&self.limits))),
        );
        register_tables(&ctx, &self.tables).await?;
        pg_catalog::install(&ctx)?;
        shared_state::hide(&ctx);
        let write_dir = self
            .write_roots
            .as_ref()
            .and_then(|r| r.first_local().map(Path::to_path_buf));
        Ok(ServeSession::new(
            ctx,
            StatementGuard {
                writes: self.writes(),
            },
            Arc::new(RunningQueries::default()),
        )
        .with_write_dir(write_dir))
    }
}

/// Appends `rule` to the physical optimizer rules of `ctx`'s session.
fn add_physical_rule(ctx: &SessionContext, rule: Arc<dyn PhysicalOptimizerRule + Send + Sync>) {
    let state_ref = ctx.state_ref();
    let mut state = state_ref.write();
    let session_id = state.session_id().to_string();
    let rules = state
        .physical_optimizers()
        .iter()
        .cloned()
        .chain([rule])
        .collect();
    *state = SessionStateBuilder::new_from_existing(state.clone())
        .with_session_id(session_id)
        .with_physical_optimizer_rules(rules)
        .build();
}

/// Registers each table as one over its log file, directory or glob (which
/// must be below a root).
async fn register_tables(ctx: &SessionContext, tables: &[TableSpec]) -> ServeResult {
    for TableSpec { name, path } in tables {
        let table = ctx
            .table_provider(TableReference::bare(path.as_str()))
            .await
            .map_err(|e| ServeError::Config(format!("--table {name}={path}: {e}")))?;
        ctx.register_table(TableReference::bare(name.as_str()), table)?;
    }
    Ok(())
}
