//! Postgres `CancelRequest`s that stop a query while its rows stream.
//!
//! pgwire answers a cancel request only while a handler plans a query; the
//! rows of datafusion-postgres's answers are computed later, while they are
//! sent. So each connection's running answer is registered here with a
//! [`CancellationToken`], and a cancel request naming the connection (its
//! process id and secret key) trips it: the answer's stream ends with
//! Postgres's `query_canceled` error and is dropped, which drops the plan, so
//! its scans stop and its memory and query slot are freed.

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

/// The running answer of each connection, by process id.
#[derive(Debug, Default)]
pub struct RunningQueries {
    by_pid: Mutex<HashMap<i32, Running>>,
    /// The id of the next answer registered.
    next_id: AtomicU64,
}

#[derive(Debug)]
struct Running {
    id: u64,
    secret: Vec<u8>,
    token: CancellationToken,
}

impl RunningQueries {
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
        let token = CancellationToken::new();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let running = Running {
            id,
            secret: secret.to_bytes().to_vec(),
            token: token.clone(),
        };
        self.by_pid
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(pid, running);
        let done = Unregister {
            queries: Arc::clone(self),
            pid,
            id,
        };
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
    fn cancel(&self, request: &CancelRequest) {
        let queries = self.by_pid.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = queries.get(&request.pid)
            && running.secret == request.secret_key.to_bytes().as_ref()
        {
            log::info!(
                "cancel request for connection {}: stopping its query",
                request.pid
            );
            running.token.cancel();
        }
    }
}

/// Removes a finished (or dropped) answer's registration.
struct Unregister {
    queries: Arc<RunningQueries>,
    pid: i32,
    id: u64,
}

impl Drop for Unregister {
    fn drop(&mut self) {
        let mut queries = self
            .queries
            .by_pid
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if queries.get(&self.pid).is_some_and(|r| r.id == self.id) {
            queries.remove(&self.pid);
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
        self.running.cancel(&request);
        self.default.on_cancel_request(request).await;
    }
}
