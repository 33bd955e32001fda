//! MCP over streamable HTTP (`logsql serve --mcp ADDR`): rmcp's streamable
//! HTTP service at `/mcp`, served by hyper, beside Postgres wire and Flight
//! SQL and over the same [`McpServer`] (so the same session: roots, plan
//! guard, statement checks and query limits).
//!
//! - With a password (`--password-file`), each request must carry it as a
//!   bearer token (`Authorization: Bearer PASSWORD`), compared in constant
//!   time; without one the address must be a loopback one (checked where
//!   the server is configured).
//! - On a loopback address only loopback `Host` names are answered, so a
//!   web page cannot reach a local server through DNS rebinding (rmcp's
//!   check); beyond loopback the password guards the endpoint.
//! - Stateless: each request is answered on its own (logsql's tools keep no
//!   state between calls), so clients cannot grow the server's memory by
//!   opening sessions; a request body is at most 4 MiB (rmcp's bound), its
//!   headers must arrive within the login timeout, and at most
//!   `max_connections` connections are open at once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::McpServer;
use crate::auth_header::{credentials, same_secret};
use crate::connection::Slots;

/// The path the MCP endpoint answers at.
pub const MCP_PATH: &str = "/mcp";

/// How an MCP-over-HTTP listener admits clients.
#[derive(Clone)]
pub struct HttpAccess {
    /// The bearer token each request must carry (`None`: any request).
    pub token: Option<String>,
    /// Whether only loopback `Host` names are answered (a loopback
    /// listener; beyond loopback the token guards the endpoint).
    pub loopback_hosts_only: bool,
    /// Connections open at once; more are closed.
    pub max_connections: usize,
    /// Time a client has to send its request's headers.
    pub header_timeout: Duration,
}

impl std::fmt::Debug for HttpAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAccess")
            .field("token", &self.token.as_ref().map(|_| ".."))
            .field("loopback_hosts_only", &self.loopback_hosts_only)
            .finish_non_exhaustive()
    }
}

type Body = BoxBody<Bytes, std::convert::Infallible>;

/// A plain-text answer of `status`.
fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *response.status_mut() = status;
    response
}

/// Whether `request` carries `token` as its bearer token.
fn authorized<B>(request: &Request<B>, token: &str) -> bool {
    request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| credentials(v, "Bearer"))
        .is_some_and(|given| same_secret(given, token))
}

impl McpServer {
    /// Serves agents over streamable HTTP on `listener` until the process
    /// ends (see the module documentation).
    pub async fn serve_http(self, listener: TcpListener, access: HttpAccess) {
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true);
        if !access.loopback_hosts_only {
            config = config.disable_allowed_hosts();
        }
        let server = self;
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let slots = Slots::new(access.max_connections, "MCP over HTTP");
        let token = access.token.map(Arc::<str>::from);
        loop {
            let (socket, addr, permit) = slots.admit(&listener).await;
            let service = service.clone();
            let token = token.clone();
            let timeout = access.header_timeout;
            tokio::spawn(async move {
                let answer = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let service = service.clone();
                    let token = token.clone();
                    async move {
                        Ok::<_, std::convert::Infallible>(
                            answer(&service, token.as_deref(), request).await,
                        )
                    }
                });
                let mut builder = Builder::new(TokioExecutor::new());
                builder
                    .http1()
                    .timer(TokioTimer::new())
                    .header_read_timeout(timeout);
                if let Err(e) = builder.serve_connection(TokioIo::new(socket), answer).await {
                    log::debug!("MCP over HTTP: connection from {addr}: {e}");
                }
                drop(permit);
            });
        }
    }
}

/// The answer to one request: refused without the token, not found off
/// [`MCP_PATH`], else rmcp's.
async fn answer(
    service: &StreamableHttpService<McpServer, NeverSessionManager>,
    token: Option<&str>,
    request: Request<Incoming>,
) -> Response<Body> {
    if let Some(token) = token
        && !authorized(&request, token)
    {
        let mut refused = plain(
            StatusCode::UNAUTHORIZED,
            "this server needs its password as a bearer token (Authorization: Bearer ...)",
        );
        refused.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
        return refused;
    }
    if request.uri().path() != MCP_PATH {
        return plain(StatusCode::NOT_FOUND, "the MCP endpoint is /mcp");
    }
    service.handle(request).await
}

/// Where agents reach a server listening on `addr`.
pub fn endpoint(addr: SocketAddr) -> String {
    format!("http://{addr}{MCP_PATH}")
}
