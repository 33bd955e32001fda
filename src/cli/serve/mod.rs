//! `logsql serve`: the logsql session behind the Postgres wire protocol and
//! Arrow Flight SQL, for the tools teams already run (psql, Grafana,
//! DBeaver, pandas, ADBC, ...).
//!
//! - [`pg`]: the Postgres-wire handlers, login, TLS and the accept loop;
//! - [`cancel`]: the running queries, and the cancel requests (Postgres's
//!   and Flight SQL's) that stop them while they stream;
//! - [`flight`]: the Flight SQL service, its login and statement checks;
//! - [`statements`]: which statements a shared session runs;
//! - [`json_text`]: nested columns as JSON text over Postgres wire;
//! - [`limits`]: the plan guard and the per-query slot, time and memory
//!   limits, as the session's last physical optimizer rule.
//!
//! The session is the CLI's (every table function, `read_topic`, ASOF JOIN
//! and option) with the data roots installed, so every path a query names is
//! checked before anything is listed, and every plan before it runs.

pub mod cancel;
#[cfg(feature = "flight")]
pub mod flight;
pub mod json_text;
pub mod limits;
pub mod pg;
pub mod statements;

use std::net::SocketAddr;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ScalarValue, TableReference};
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use datafusion::prelude::SessionContext;
use datafusion_postgres::auth::AuthManager;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::setup_pg_catalog;
use logsql::plan_guard::PlanGuard;
use logsql::storage::roots::DataRoots;
use tokio::net::TcpListener;

use super::App;
use super::args::{Args, ServeArgs};
use super::error::{CliError, CliResult};
use cancel::RunningQueries;
use limits::{QueryLimits, ServeRule};
use pg::{Handlers, Login};

/// Runs `logsql serve` until the process is stopped.
pub fn run(args: &Args, serve: &ServeArgs) -> CliResult {
    let roots = DataRoots::parse(&serve.roots)?;
    if roots.is_empty() {
        return Err(CliError::msg("logsql serve needs at least one --root"));
    }
    let write_roots = match &serve.allow_write {
        Some(dir) => Some(Arc::new(DataRoots::parse(&[dir])?)),
        None => None,
    };
    let password = match &serve.password_file {
        Some(file) => Some((serve.user.clone(), read_password(file)?)),
        None => None,
    };
    let login = match password.clone() {
        Some((user, password)) => Login::Password { user, password },
        None => Login::Open,
    };
    let tls = match (&serve.tls_cert, &serve.tls_key) {
        (Some(cert), Some(key)) => Some(pg::tls_acceptor(cert, key)?),
        _ => None,
    };
    #[cfg(feature = "flight")]
    let flight_server = match (serve.flight, &serve.tls_cert, &serve.tls_key) {
        (None, ..) => None,
        (Some(_), Some(cert), Some(key)) => {
            Some(flight::server(Some(flight::tls_config(cert, key)?))?)
        }
        (Some(_), ..) => Some(flight::server(None)?),
    };
    #[cfg(not(feature = "flight"))]
    if serve.flight.is_some() {
        return Err(CliError::msg(
            "--flight: this logsql was built without Arrow Flight SQL (build it with \
             `cargo build --features flight`)",
        ));
    }

    let roots = Arc::new(roots);
    let app = App::with_config(args, |config| roots.as_ref().clone().install(config))?;
    let mut guard = PlanGuard::roots_only(Arc::clone(&roots)).with_writes(false);
    if let Some(write_roots) = write_roots.clone() {
        guard = guard.with_write_roots(write_roots);
    }
    let limits = Arc::new(QueryLimits::new(
        serve.max_queries as usize,
        serve.query_timeout,
        serve.memory_limit,
    ));
    add_physical_rule(&app.ctx, Arc::new(ServeRule::new(guard, limits)));
    app.rt.block_on(register_tables(&app.ctx, &serve.tables))?;
    let catalog = app
        .ctx
        .state()
        .config_options()
        .catalog
        .default_catalog
        .clone();
    setup_pg_catalog(&app.ctx, &catalog, Arc::new(AuthManager::new()))
        .map_err(|e| CliError::from(*e))?;
    app.ctx.register_udf(version_udf());
    app.ctx.register_udf(to_regtype_udf());

    let running = Arc::new(RunningQueries::default());
    #[cfg(not(feature = "flight"))]
    let flight = None;
    #[cfg(feature = "flight")]
    let flight = match (serve.flight, flight_server) {
        (Some(addr), Some(server)) => {
            let (listener, addr) = app.rt.block_on(flight::bind(addr))?;
            let service = flight::LogsqlFlight::new(
                app.ctx.state(),
                password,
                write_roots.is_some(),
                Arc::clone(&running),
            );
            app.rt.spawn(flight::serve(server, listener, service));
            Some(addr)
        }
        _ => None,
    };

    let ctx = Arc::new(app.ctx.clone());
    let handlers = Arc::new(Handlers::new(
        ctx,
        write_roots.is_some(),
        login,
        serve.tls_only,
        running,
    ));
    let listener = app
        .rt
        .block_on(TcpListener::bind(serve.pg))
        .map_err(|e| CliError::io(format!("listening on {}", serve.pg), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::io("the listening address", e))?;
    announce(serve, addr, flight, &roots, tls.is_some());
    app.rt.block_on(pg::accept(
        listener,
        handlers,
        tls,
        serve.max_connections as usize,
    ));
    Ok(())
}

/// `version()` as Postgres clients parse it (SQLAlchemy reads the server's
/// version from `PostgreSQL X.Y`), naming logsql and DataFusion after it.
fn version_udf() -> ScalarUDF {
    let text = format!(
        "PostgreSQL 16.6 (logsql {}, Apache DataFusion {})",
        env!("CARGO_PKG_VERSION"),
        datafusion::DATAFUSION_VERSION
    );
    create_udf(
        "version",
        vec![],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |_| Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(text.clone()))))),
    )
}

/// `to_regtype(name)`: the oid of a type by name, NULL for every name (the
/// server has no extension types; psycopg and SQLAlchemy look for `hstore`).
fn to_regtype_udf() -> ScalarUDF {
    create_udf(
        "to_regtype",
        vec![DataType::Utf8],
        DataType::Int32,
        Volatility::Immutable,
        Arc::new(|_| Ok(ColumnarValue::Scalar(ScalarValue::Int32(None)))),
    )
}

/// The password in `file`: its first line, without the line break.
fn read_password(file: &std::path::Path) -> CliResult<String> {
    let text =
        std::fs::read_to_string(file).map_err(|e| CliError::io(file.display().to_string(), e))?;
    let password = text.lines().next().unwrap_or_default().to_string();
    if password.is_empty() {
        return Err(CliError::msg(format!(
            "{}: the password file's first line is empty",
            file.display()
        )));
    }
    Ok(password)
}

/// Appends `rule` to the physical optimizer rules of `ctx`'s session.
fn add_physical_rule(
    ctx: &SessionContext,
    rule: Arc<dyn datafusion::physical_optimizer::PhysicalOptimizerRule + Send + Sync>,
) {
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

/// Registers each `NAME=PATH` of `--table` as a table over the log file,
/// directory or glob PATH (which must be below a root).
async fn register_tables(ctx: &SessionContext, tables: &[String]) -> CliResult {
    for spec in tables {
        let Some((name, path)) = spec.split_once('=') else {
            return Err(CliError::msg(format!(
                "--table {spec}: give NAME=PATH (a log file, directory or glob)"
            )));
        };
        let (name, path) = (name.trim(), path.trim());
        if name.is_empty() || path.is_empty() {
            return Err(CliError::msg(format!(
                "--table {spec}: give NAME=PATH (a log file, directory or glob)"
            )));
        }
        let table = ctx
            .table_provider(TableReference::bare(path))
            .await
            .map_err(|e| CliError::msg(format!("--table {name}={path}: {e}")))?;
        ctx.register_table(TableReference::bare(name), table)?;
    }
    Ok(())
}

/// Says on stderr where the server listens and how to connect; warns when
/// it listens beyond this machine without a password.
fn announce(
    serve: &ServeArgs,
    addr: SocketAddr,
    flight: Option<SocketAddr>,
    roots: &DataRoots,
    tls: bool,
) {
    let user = match serve.password_file {
        Some(_) => serve.user.as_str(),
        None => "logsql",
    };
    let ssl = if tls { " sslmode=require" } else { "" };
    eprintln!(
        "logsql serve: Postgres wire on {addr}, reading below {roots}\n  psql \"host={} port={} user={user} dbname=logsql{ssl}\"",
        addr.ip(),
        addr.port()
    );
    if let Some(flight) = flight {
        let scheme = if tls { "grpc+tls" } else { "grpc" };
        eprintln!("logsql serve: Arrow Flight SQL on {flight}\n  uri {scheme}://{flight}");
    }
    for addr in std::iter::once(addr).chain(flight) {
        if !addr.ip().is_loopback() && serve.password_file.is_none() {
            eprintln!(
                "warning: listening on {addr}, beyond this machine, without a password: anyone \
                 who reaches it can read every file below the roots (give --password-file, and \
                 TLS with --tls-cert/--tls-key)"
            );
        }
    }
}
