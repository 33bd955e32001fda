//! A server's life: [`Server::new`] checks its configuration and loads what
//! it needs before anything listens (roots, login, TLS), [`Server::bind`]
//! puts the session under the policy and opens the listeners (Postgres wire,
//! and Flight SQL when asked), [`Listening::serve`] accepts clients until the
//! process ends. [`run`] does the three in one call.

use std::net::SocketAddr;
use std::sync::Arc;

use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_postgres::pgwire::tokio::tokio_rustls::TlsAcceptor;
use tokio::net::TcpListener;

use crate::config::{Auth, ServeConfig};
use crate::connection::{self, ConnectionTimeouts};
use crate::error::{ServeError, ServeResult};
#[cfg(feature = "flight")]
use crate::flight;
use crate::mcp::McpServer;
use crate::mcp::http::{HttpAccess, endpoint};
use crate::pg::{self, Handlers};
use crate::policy::Policy;
use crate::session::ServeSession;

/// A server whose configuration was checked, not listening yet.
pub struct Server {
    policy: Policy,
    pg: SocketAddr,
    auth: Auth,
    tls_only: bool,
    /// The Postgres-wire TLS acceptor (with `tls`).
    tls: Option<TlsAcceptor>,
    max_connections: usize,
    timeouts: ConnectionTimeouts,
    /// The MCP-over-HTTP address.
    mcp: Option<SocketAddr>,
    /// The Flight SQL address and its gRPC server (TLS set up when given).
    #[cfg(feature = "flight")]
    flight: Option<(SocketAddr, tonic::transport::Server)>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("policy", &self.policy)
            .field("pg", &self.pg)
            .field("auth", &self.auth)
            .field("tls", &self.tls.is_some())
            .field("tls_only", &self.tls_only)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Checks `config` and loads its TLS certificates and keys:
    /// every mistake in it is reported here, before a session is made.
    pub fn new(config: ServeConfig) -> ServeResult<Self> {
        let policy = Policy::new(&config)?;
        if config.tls_only && config.tls.is_none() {
            return Err(ServeError::Config(
                "--tls-only needs a certificate and key (--tls-cert, --tls-key)".to_string(),
            ));
        }
        let tls = match &config.tls {
            Some(files) => Some(pg::tls_acceptor(&files.cert, &files.key)?),
            None => None,
        };
        #[cfg(feature = "flight")]
        let flight = match (config.flight, &config.tls) {
            (None, _) => None,
            (Some(addr), Some(files)) => Some((
                addr,
                flight::server(Some(flight::tls_config(&files.cert, &files.key)?))?,
            )),
            (Some(addr), None) => Some((addr, flight::server(None)?)),
        };
        if let Some(addr) = config.mcp
            && !addr.ip().is_loopback()
            && config.auth == Auth::Open
        {
            return Err(ServeError::Config(format!(
                "--mcp {addr}: an MCP endpoint beyond this machine needs --password-file (agents \
                 send the password as a bearer token); without one, listen on 127.0.0.1"
            )));
        }
        #[cfg(not(feature = "flight"))]
        if config.flight.is_some() {
            return Err(ServeError::Config(
                "--flight: this logsql was built without Arrow Flight SQL (build it with \
                 `cargo build --features flight`)"
                    .to_string(),
            ));
        }
        Ok(Self {
            policy,
            pg: config.pg,
            auth: config.auth,
            tls_only: config.tls_only,
            tls,
            max_connections: config.limits.max_connections,
            timeouts: ConnectionTimeouts {
                login: config.limits.login_timeout,
                idle: config.limits.idle_timeout,
            },
            mcp: config.mcp,
            #[cfg(feature = "flight")]
            flight,
        })
    }

    /// The server's policy (roots, write root, limits).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// `config` with the data roots installed ([`Policy::session_config`]):
    /// make the session given to [`Server::bind`] from it.
    pub fn session_config(&self, config: SessionConfig) -> SessionConfig {
        self.policy.session_config(config)
    }

    /// Puts `ctx` under the policy ([`Policy::session`]) and opens the
    /// listeners: Flight SQL (serving from here on, when configured), then
    /// Postgres wire (accepting once [`Listening::serve`] runs). Call it
    /// within a tokio runtime.
    pub async fn bind(self, ctx: SessionContext) -> ServeResult<Listening> {
        let session = self.policy.session(ctx).await?;
        #[cfg(not(feature = "flight"))]
        let flight = None;
        #[cfg(feature = "flight")]
        let flight = match self.flight {
            Some((addr, server)) => {
                let (listener, addr) = flight::bind(addr).await?;
                let service = flight::LogsqlFlight::new(&session, &self.auth);
                tokio::spawn(flight::serve(server, listener, service));
                Some(addr)
            }
            None => None,
        };
        let mcp = match self.mcp {
            Some(addr) => {
                let listener = TcpListener::bind(addr)
                    .await
                    .map_err(|e| ServeError::io(format!("listening on {addr} (--mcp)"), e))?;
                let bound = listener
                    .local_addr()
                    .map_err(|e| ServeError::io("the MCP listening address", e))?;
                let access = HttpAccess {
                    token: match &self.auth {
                        Auth::Open => None,
                        Auth::Password { password, .. } => Some(password.clone()),
                    },
                    loopback_hosts_only: bound.ip().is_loopback(),
                    max_connections: self.max_connections,
                    header_timeout: self.timeouts.login,
                };
                tokio::spawn(McpServer::new(session.clone())?.serve_http(listener, access));
                Some(bound)
            }
            None => None,
        };
        let handlers = Arc::new(Handlers::new(&session, &self.auth, self.tls_only));
        let listener = TcpListener::bind(self.pg)
            .await
            .map_err(|e| ServeError::io(format!("listening on {}", self.pg), e))?;
        let pg = listener
            .local_addr()
            .map_err(|e| ServeError::io("the listening address", e))?;
        Ok(Listening {
            session,
            roots: self.policy.roots().to_string(),
            auth: self.auth,
            pg,
            flight,
            mcp,
            listener,
            handlers,
            tls: self.tls,
            max_connections: self.max_connections,
            timeouts: self.timeouts,
        })
    }
}

/// A server whose listeners are open.
pub struct Listening {
    session: ServeSession,
    /// The data roots, as messages name them.
    roots: String,
    auth: Auth,
    pg: SocketAddr,
    flight: Option<SocketAddr>,
    mcp: Option<SocketAddr>,
    listener: TcpListener,
    handlers: Arc<Handlers>,
    tls: Option<TlsAcceptor>,
    max_connections: usize,
    timeouts: ConnectionTimeouts,
}

impl Listening {
    /// The address of the Postgres-wire listener (its port picked when the
    /// configuration gave port 0).
    pub fn pg_addr(&self) -> SocketAddr {
        self.pg
    }

    /// The address of the Flight SQL listener, if it serves Flight SQL.
    pub fn flight_addr(&self) -> Option<SocketAddr> {
        self.flight
    }

    /// The address of the MCP listener, if it serves MCP over HTTP.
    pub fn mcp_addr(&self) -> Option<SocketAddr> {
        self.mcp
    }

    /// The session every front end serves (for another front end beside
    /// these two).
    pub fn session(&self) -> &ServeSession {
        &self.session
    }

    /// Says on stderr where the server listens and how to connect; warns
    /// when it listens beyond this machine without a password.
    pub fn announce(&self) {
        let (user, open) = match &self.auth {
            Auth::Password { user, .. } => (user.as_str(), false),
            Auth::Open => ("logsql", true),
        };
        let (addr, tls) = (self.pg, self.tls.is_some());
        let ssl = if tls { " sslmode=require" } else { "" };
        eprintln!(
            "logsql serve: Postgres wire on {addr}, reading below {}\n  psql \"host={} port={} user={user} dbname=logsql{ssl}\"",
            self.roots,
            addr.ip(),
            addr.port()
        );
        if let Some(flight) = self.flight {
            let scheme = if tls { "grpc+tls" } else { "grpc" };
            eprintln!("logsql serve: Arrow Flight SQL on {flight}\n  uri {scheme}://{flight}");
        }
        if let Some(mcp) = self.mcp {
            let auth = match open {
                true => "",
                false => " (Authorization: Bearer <the password>)",
            };
            eprintln!(
                "logsql serve: MCP over HTTP on {mcp}\n  {}{auth}",
                endpoint(mcp)
            );
            if !mcp.ip().is_loopback() {
                eprintln!(
                    "warning: MCP on {mcp} is plain HTTP: the password travels in clear text \
                     (put it behind a TLS proxy, or listen on 127.0.0.1)"
                );
            }
        }
        for addr in std::iter::once(addr).chain(self.flight) {
            if !addr.ip().is_loopback() && open {
                eprintln!(
                    "warning: listening on {addr}, beyond this machine, without a password: \
                     anyone who reaches it can read every file below the roots (give \
                     --password-file, and TLS with --tls-cert/--tls-key)"
                );
            }
        }
    }

    /// Accepts Postgres-wire clients until the process ends.
    pub async fn serve(self) {
        connection::accept(
            self.listener,
            self.handlers,
            self.tls,
            self.max_connections,
            self.timeouts,
        )
        .await;
    }
}

/// Runs a server of `config` until the process ends, on the current tokio
/// runtime: checks `config`, makes the session with `session` from a
/// config with the data roots installed (the caller's own settings added to
/// it, `logsql::session_context_with_config` making the session), announces
/// where it listens on stderr, and serves.
pub async fn run(
    config: ServeConfig,
    session: impl FnOnce(SessionConfig) -> ServeResult<SessionContext>,
) -> ServeResult {
    let server = Server::new(config)?;
    let ctx = session(server.session_config(SessionConfig::new().with_information_schema(true)))?;
    let listening = server.bind(ctx).await?;
    listening.announce();
    listening.serve().await;
    Ok(())
}
