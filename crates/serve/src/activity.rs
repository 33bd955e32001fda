//! What one Postgres-wire connection is doing, as its handlers tell it:
//! whether it has logged in, how many statements run (their answers still
//! streaming), and since when it has been idle. The accept loop
//! ([`crate::connection`]) ends connections by it.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

/// What one connection is doing, as its handlers tell it.
#[derive(Debug)]
pub struct Activity {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    logged_in: bool,
    /// Statements running (their answers still streaming).
    busy: usize,
    /// When the connection logged in or its last statement ended.
    since: Instant,
}

/// Where a connection stands, for its timeouts.
pub(crate) enum Phase {
    LoggingIn,
    Busy,
    Idle(Instant),
}

impl Activity {
    /// A connection that has just connected.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                logged_in: false,
                busy: 0,
                since: Instant::now(),
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection has logged in.
    pub fn logged_in(&self) {
        let mut state = self.state();
        state.logged_in = true;
        state.since = Instant::now();
    }

    /// A statement starts; it ends when the guard is dropped (keep it with
    /// the statement's answer until its rows are sent).
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.state().busy += 1;
        Busy(Arc::clone(self))
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.state().busy > 0
    }

    pub(crate) fn phase(&self) -> Phase {
        let state = self.state();
        match (state.logged_in, state.busy) {
            (false, _) => Phase::LoggingIn,
            (true, 0) => Phase::Idle(state.since),
            (true, _) => Phase::Busy,
        }
    }
}

/// A running statement of a connection (see [`Activity::busy`]).
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.busy = state.busy.saturating_sub(1);
        state.since = Instant::now();
    }
}
