//! The server's running queries, and the cancel requests that stop them
//! while their rows stream: Postgres `CancelRequest`s (here) and Flight SQL's
//! `CancelFlightInfo` (in the `flight` module), over one registry.
//!
//! pgwire answers a cancel request only while a handler plans a query; the
//! rows of datafusion-postgres's answers are computed later, while they are
//! sent. So each running answer is registered here, under its connection (a
//! Postgres process id and secret key) or its Flight SQL ticket, with a
//! [`CancellationToken`]; a cancel request naming it trips the token: the
//! answer's stream ends with the protocol's "query cancelled" error and is
//! dropped, which drops the plan, so its scans stop and its memory and query
//! slot are freed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion_postgres::pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use datafusion_postgres::pgwire::api::results::{QueryResponse, Response};
use datafusion_postgres::pgwire::api::{ClientInfo, ConnectionManager};
use datafusion_postgres::pgwire::error::PgWireError;
use datafusion_postgres::pgwire::messages::cancel::CancelRequest;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

/// What a running answer is registered under: what a cancel request names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QueryKey {
    /// A Postgres connection's process id.
    Connection(i32),
    /// The query id a Flight SQL ticket carries.
    #[cfg_attr(not(feature = "flight"), allow(dead_code))]
    Ticket(String),
}

/// The running answers of a server, by [`QueryKey`].
#[derive(Debug, Default)]
pub struct RunningQueries {
    by_key: Mutex<HashMap<QueryKey, Vec<Running>>>,
    /// The id of the next answer registered.
    next_id: AtomicU64,
}

#[derive(Debug)]
struct Running {
    id: u64,
    /// What the cancel request must also name (a Postgres secret key; empty
    /// for a ticket, whose random query id is its own secret).
    secret: Vec<u8>,
    token: CancellationToken,
}

impl RunningQueries {
    /// Registers a running answer under `key` and `secret`: the token a
    /// cancel request trips, and the registration, removed when dropped
    /// (with the answer's stream).
    pub fn register(
        self: &Arc<Self>,
        key: QueryKey,
        secret: Vec<u8>,
    ) -> (CancellationToken, Registration) {
        let token = CancellationToken::new();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let running = Running {
            id,
            secret,
            token: token.clone(),
        };
        self.by_key
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.clone())
            .or_default()
            .push(running);
        let registration = Registration {
            queries: Arc::clone(self),
            key,
            id,
        };
        (token, registration)
    }

    /// Trips every running answer under `key` with `secret`; whether there
    /// was one.
    pub fn cancel(&self, key: &QueryKey, secret: &[u8]) -> bool {
        let queries = self.by_key.lock().unwrap_or_else(|e| e.into_inner());
        let mut found = false;
        for running in queries.get(key).into_iter().flatten() {
            if running.secret == secret {
                running.token.cancel();
                found = true;
            }
        }
        found
    }

    /// `responses` with each row stream stopping at a cancel request for
    /// `client`'s connection.
    pub fn watch<C: ClientInfo>(self: &Arc<Self>, client: &C, responses: &mut [Response]) {
        for response in responses {
            if let Response::Query(query) = response {
                self.watch_query(client, query);
            }
        }
    }

    /// `query`'s rows, stopping at a cancel request for `client`'s connection.
    pub fn watch_query<C: ClientInfo>(self: &Arc<Self>, client: &C, query: &mut QueryResponse) {
        let (pid, secret) = client.pid_and_secret_key();
        let (token, done) = self.register(QueryKey::Connection(pid), secret.to_bytes().to_vec());
        let rows = std::mem::replace(&mut query.data_rows, Box::pin(futures::stream::empty()));
        // Rows until their end or a cancel (then its error); the rows and the
        // registration are dropped with the state.
        let rows = futures::stream::unfold(Some((rows, token, done)), |state| async move {
            let (mut rows, token, done) = state?;
            tokio::select! {
                biased;
                _ = token.cancelled() => Some((Err(PgWireError::QueryCanceled), None)),
                row = rows.next() => row.map(|row| (row, Some((rows, token, done)))),
            }
        });
        query.data_rows = Box::pin(rows);
    }

    /// Trips the running answer of the connection `request` names.
    fn cancel_connection(&self, request: &CancelRequest) {
        let key = QueryKey::Connection(request.pid);
        if self.cancel(&key, request.secret_key.to_bytes().as_ref()) {
            log::info!(
                "cancel request for connection {}: stopping its query",
                request.pid
            );
        }
    }
}

/// A running answer's registration, removed when dropped (the answer
/// finished, failed or was dropped).
#[derive(Debug)]
pub struct Registration {
    queries: Arc<RunningQueries>,
    key: QueryKey,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut queries = self
            .queries
            .by_key
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(running) = queries.get_mut(&self.key) {
            running.retain(|r| r.id != self.id);
            if running.is_empty() {
                queries.remove(&self.key);
            }
        }
    }
}

/// Cancel requests: pgwire's own (a query still being planned), then the
/// registered running answers.
pub struct Cancels {
    default: DefaultCancelHandler,
    running: Arc<RunningQueries>,
}

impl Cancels {
    /// The cancel handler of `connections` and `running`.
    pub fn new(connections: Arc<ConnectionManager>, running: Arc<RunningQueries>) -> Self {
        Self {
            default: DefaultCancelHandler::new(connections),
            running,
        }
    }
}

#[async_trait]
impl CancelHandler for Cancels {
    async fn on_cancel_request(&self, request: CancelRequest) {
        self.running.cancel_connection(&request);
        self.default.on_cancel_request(request).await;
    }
}
