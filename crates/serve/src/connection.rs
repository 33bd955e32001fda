//! The Postgres-wire connections of a server: the accept loop, at most
//! `--max-connections` at once (more are closed at once, with a warning),
//! and each connection's [`Activity`], which ends a connection that has not
//! logged in within `--login-timeout` or has been idle (no statement
//! running, none sent) for `--idle-timeout`, so that sockets left open
//! cannot hold the connection slots, and one whose client has closed it
//! while a statement runs (a second handle on the socket is watched for
//! its end), so that a client that sends a long query and leaves does not
//! hold a query slot until the query's timeout. A connection ended so is closed
//! without a message (pgwire owns its socket), as a client sees a server
//! restart; the server's log says why.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use datafusion_postgres::pgwire::tokio::process_socket;
use datafusion_postgres::pgwire::tokio::tokio_rustls::TlsAcceptor;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::activity::{Activity, Phase};
use crate::pg::Handlers;

/// How long connections may wait, to log in and between statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionTimeouts {
    /// Time from connecting to being logged in.
    pub login: Duration,
    /// Time a logged-in connection may run no statement (`None`: forever).
    pub idle: Option<Duration>,
}

/// Why a connection was ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    LoginTimeout(Duration),
    IdleTimeout(Duration),
    /// The client closed its side (while a statement ran: `busy`).
    PeerGone {
        busy: bool,
    },
}

/// Resolves when the client at the other end of `socket` (a second handle
/// on the connection's socket) has closed it: the socket reads as ended or
/// fails. Bytes the client sent and the server has not read yet hide an
/// end behind them; they are looked at again each second.
async fn peer_gone(socket: Option<TcpStream>) {
    let Some(socket) = socket else {
        return std::future::pending().await;
    };
    let mut byte = [0u8; 1];
    loop {
        match socket.peek(&mut byte).await {
            Ok(0) | Err(_) => return,
            Ok(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// Runs `serving` (a connection's messages) until it ends, or until the
/// connection has not logged in within `timeouts.login`, has been idle for
/// `timeouts.idle`, or its client has gone (`gone` resolves): then it is
/// dropped, which closes the connection and drops the statement running on
/// it (its query stops, its slot is freed).
async fn watched(
    serving: impl Future<Output = std::io::Result<()>>,
    activity: &Activity,
    timeouts: ConnectionTimeouts,
    gone: impl Future<Output = ()>,
) -> Result<std::io::Result<()>, Ended> {
    tokio::pin!(serving);
    tokio::pin!(gone);
    let connected = Instant::now();
    loop {
        let now = Instant::now();
        let wake = match (activity.phase(), timeouts.idle) {
            (Phase::LoggingIn, _) if now >= connected + timeouts.login => {
                return Err(Ended::LoginTimeout(timeouts.login));
            }
            (Phase::LoggingIn, _) => connected + timeouts.login,
            (Phase::Busy | Phase::Idle(_), None) => {
                return tokio::select! {
                    done = &mut serving => Ok(done),
                    _ = &mut gone => Err(Ended::PeerGone { busy: activity.is_busy() }),
                };
            }
            (Phase::Busy, Some(idle)) => now + idle,
            (Phase::Idle(since), Some(idle)) if now >= since + idle => {
                return Err(Ended::IdleTimeout(idle));
            }
            (Phase::Idle(since), Some(idle)) => since + idle,
        };
        tokio::select! {
            done = &mut serving => return Ok(done),
            _ = tokio::time::sleep_until(wake) => {}
            _ = &mut gone => return Err(Ended::PeerGone { busy: activity.is_busy() }),
        }
    }
}

/// A listener's connection slots: at most `max` connections open at once,
/// more closed at once with a warning (`front` names the front end in it).
pub(crate) struct Slots {
    open: Arc<Semaphore>,
    max: usize,
    front: &'static str,
}

impl Slots {
    /// `max` slots for the front end `front`.
    pub(crate) fn new(max: usize, front: &'static str) -> Self {
        Self {
            open: Arc::new(Semaphore::new(max)),
            max,
            front,
        }
    }

    /// `listener`'s next connection that gets a slot, with the slot (held
    /// until dropped); failed accepts are logged and skipped.
    pub(crate) async fn admit(
        &self,
        listener: &TcpListener,
    ) -> (TcpStream, SocketAddr, OwnedSemaphorePermit) {
        loop {
            let (socket, addr) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    log::warn!("{}: accepting a connection: {e}", self.front);
                    continue;
                }
            };
            match Arc::clone(&self.open).try_acquire_owned() {
                Ok(permit) => return (socket, addr, permit),
                Err(_) => log::warn!(
                    "{}: refused a connection from {addr}: {} connections are open \
                     (--max-connections)",
                    self.front,
                    self.max
                ),
            }
        }
    }
}

/// Accepts connections on `listener` until the process ends, at most
/// `max_connections` at once, each ended at its `timeouts`.
pub async fn accept(
    listener: TcpListener,
    handlers: Arc<Handlers>,
    tls: Option<TlsAcceptor>,
    max_connections: usize,
    timeouts: ConnectionTimeouts,
) {
    let slots = Slots::new(max_connections, "Postgres wire");
    loop {
        let (socket, addr, permit) = slots.admit(&listener).await;
        let (socket, watch) = match second_handle(socket) {
            Ok(handles) => handles,
            Err(e) => {
                log::warn!("connection from {addr}: {e}");
                continue;
            }
        };
        let activity = Activity::new();
        let connection = handlers.connection(Arc::clone(&activity));
        let tls = tls.clone();
        tokio::spawn(async move {
            let serving = process_socket(socket, tls, connection);
            report(
                addr,
                watched(serving, &activity, timeouts, peer_gone(watch)).await,
            );
            drop(permit);
        });
    }
}

/// `socket`, and a second handle on it to watch for the client's end
/// (none if the socket cannot be shared: it is then not watched).
fn second_handle(socket: TcpStream) -> std::io::Result<(TcpStream, Option<TcpStream>)> {
    let socket = socket.into_std()?;
    let watch = socket
        .try_clone()
        .ok()
        .and_then(|clone| TcpStream::from_std(clone).ok());
    Ok((TcpStream::from_std(socket)?, watch))
}

/// Logs how a connection ended.
fn report(addr: SocketAddr, ended: Result<std::io::Result<()>, Ended>) {
    let secs = |t: Duration| logsql::ops::units::duration(t.as_nanos() as u64);
    match ended {
        Ok(Ok(())) => {}
        Ok(Err(e)) => log::debug!("connection from {addr}: {e}"),
        Err(Ended::LoginTimeout(t)) => log::info!(
            "closed the connection from {addr}: it did not log in within {} (--login-timeout)",
            secs(t)
        ),
        Err(Ended::IdleTimeout(t)) => log::info!(
            "closed the connection from {addr}: idle for {} (--idle-timeout)",
            secs(t)
        ),
        Err(Ended::PeerGone { busy: true }) => log::info!(
            "the client at {addr} closed its connection while a statement ran: it was stopped"
        ),
        Err(Ended::PeerGone { busy: false }) => log::debug!("the client at {addr} left"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUTS: ConnectionTimeouts = ConnectionTimeouts {
        login: Duration::from_millis(50),
        idle: Some(Duration::from_millis(50)),
    };

    #[tokio::test]
    async fn a_connection_that_does_not_log_in_is_ended_at_the_login_timeout() {
        let activity = Activity::new();
        let started = Instant::now();
        let ended = watched(
            std::future::pending(),
            &activity,
            TIMEOUTS,
            std::future::pending(),
        )
        .await;
        assert_eq!(ended.err(), Some(Ended::LoginTimeout(TIMEOUTS.login)));
        assert!(started.elapsed() >= TIMEOUTS.login);
    }

    #[tokio::test]
    async fn a_running_statement_keeps_a_connection_and_idleness_after_it_ends_it() {
        let idle = TIMEOUTS.idle.unwrap();
        let activity = Activity::new();
        activity.logged_in();
        let busy = activity.busy();
        let watching = watched(
            std::future::pending(),
            &activity,
            TIMEOUTS,
            std::future::pending(),
        );
        tokio::pin!(watching);
        // A statement running for five idle timeouts.
        tokio::select! {
            _ = &mut watching => panic!("ended while a statement runs"),
            _ = tokio::time::sleep(5 * idle) => {}
        }
        drop(busy);
        let ended_after = Instant::now();
        let ended = watching.await;
        assert_eq!(ended.err(), Some(Ended::IdleTimeout(idle)));
        assert!(ended_after.elapsed() >= idle);
    }

    #[tokio::test]
    async fn without_an_idle_timeout_a_connection_ends_when_its_client_does() {
        let activity = Activity::new();
        activity.logged_in();
        let timeouts = ConnectionTimeouts {
            idle: None,
            ..TIMEOUTS
        };
        let serving = async {
            tokio::time::sleep(10 * TIMEOUTS.login).await;
            Ok(())
        };
        assert!(matches!(
            watched(serving, &activity, timeouts, std::future::pending()).await,
            Ok(Ok(()))
        ));
    }
}
