//! The logsql session served to the tools teams already run (psql, Grafana,
//! DBeaver, pandas, ADBC, ...) over the Postgres wire protocol and Arrow
//! Flight SQL (feature `flight`), with the whole serving policy in one place.
//!
//! A server is started from a plain [`ServeConfig`] and a session the caller
//! makes (any logsql session: its table functions, `read_topic`, ASOF JOIN
//! and options) from the config [`Server::session_config`] gives, which has
//! the data roots installed:
//!
//! ```no_run
//! # async fn serve() -> logsql_serve::ServeResult {
//! let config = logsql_serve::ServeConfig {
//!     roots: vec!["/data/runs".to_string()],
//!     ..Default::default()
//! };
//! logsql_serve::run(config, |session| Ok(logsql::session_context_with_config(session))).await
//! # }
//! ```
//!
//! The layers, from the policy out:
//! - [`Policy`]: the data roots (every path a query names is checked before
//!   anything is listed), the write root, the query limits and the tables;
//!   it makes the one [`ServeSession`] every front end serves, whose last
//!   physical optimizer rule ([`ServeRule`]) checks every plan with the
//!   [`PlanGuard`] and runs it under the [`QueryLimits`] (a slot, a time
//!   and a memory limit, the time checked at every operator: `deadline`),
//!   however a statement reached it;
//! - [`ServeSession`]: the statement checks ([`ServeSession::vet`]: what a
//!   shared session must not run is refused, `ASOF JOIN`s rewritten) and
//!   [`ServeSession::query`], the one call a further front end (an MCP
//!   server, over HTTP or stdio) needs to run a client's statement;
//! - the front ends: Postgres wire (`pg`: login, TLS, the statement hooks,
//!   nested columns as JSON text), Flight SQL (`flight`: login, tickets
//!   that cancel), over one registry of running queries (`cancel`), and the
//!   Model Context Protocol for agents ([`mcp`]: tools over stdio);
//! - [`Server`] and [`Listening`]: a server's start, its listeners and its
//!   accept loop; [`run`] for all of it in one call.

mod activity;
mod auth_header;
mod cancel;
mod config;
mod connection;
mod deadline;
mod error;
#[cfg(feature = "flight")]
mod flight;
mod json_text;
mod limits;
mod login;
pub mod mcp;
mod pg;
mod pg_catalog;
mod policy;
mod server;
mod session;
mod shared_state;
mod statements;

pub use config::{Auth, Limits, ServeConfig, TableSpec, TlsFiles};
pub use error::{ServeError, ServeResult};
pub use limits::{LimitedExec, QueryLimits, ServeRule};
pub use logsql::DataRoots;
/// The plan guard and data roots are the engine's (its distributed worker
/// and url tables use them too); they are part of a server's policy.
pub use logsql::PlanGuard;
pub use mcp::McpServer;
pub use policy::Policy;
pub use server::{Listening, Server, run};
pub use session::ServeSession;
