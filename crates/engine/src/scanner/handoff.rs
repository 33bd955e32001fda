//! How a scan hands its batches to the consumer.
//!
//! A scan of an object store runs on a blocking thread (its reads block on
//! the runtime) and sends each batch through a bounded channel. A scan of a
//! local file runs inline, in the consumer's own task, as a coroutine: it
//! queues a chunk's batches and suspends after the chunk, and the consumer
//! resumes it once the queue is drained. No thread is woken per batch, and at
//! most one chunk's batches are in flight, where the channel held two batches
//! besides the one being built and the one being consumed (the MCAP
//! benchmark's full scan: 38-40 ms of CPU instead of 45-48 ms, README session 32).

use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use parking_lot::Mutex;
use tokio::sync::mpsc::Sender;

/// The batches an inline scan has queued for its consumer.
pub type BatchQueue = Arc<Mutex<VecDeque<Result<RecordBatch>>>>;

/// The suspension point of an inline scan's coroutine.
pub type Yielder = corosensei::Yielder<(), ()>;

/// Where a scan's batches go.
#[derive(Clone, Copy)]
pub enum Handoff<'a> {
    /// A channel to the consumer's task: the scan runs on a blocking thread.
    Channel(&'a Sender<Result<RecordBatch>>),
    /// A queue the consumer drains between chunks: the scan runs inline in
    /// the consumer's task, as a coroutine suspended through `yielder`.
    Inline {
        /// The queued batches.
        queue: &'a BatchQueue,
        /// Suspends the scan until the consumer has drained `queue`.
        yielder: &'a Yielder,
    },
}

impl Handoff<'_> {
    /// Hands `item` over; false when the consumer is gone.
    pub fn send(&self, item: Result<RecordBatch>) -> bool {
        match self {
            Handoff::Channel(tx) => tx.blocking_send(item).is_ok(),
            Handoff::Inline { queue, .. } => {
                queue.lock().push_back(item);
                true
            }
        }
    }

    /// Whether the consumer is gone. An inline scan's consumer never is while
    /// the scan runs: dropping it drops (and unwinds) the suspended scan.
    pub fn is_closed(&self) -> bool {
        match self {
            Handoff::Channel(tx) => tx.is_closed(),
            Handoff::Inline { .. } => false,
        }
    }

    /// Between chunks: an inline scan with batches queued suspends until the
    /// consumer has taken them. The consumer's task may resume it on another
    /// thread, so the caller holds no thread-bound state across this call (no
    /// lock guard, no borrow of a thread-local). Never inlined, so that the
    /// suspension is an opaque call in the scan loop.
    #[inline(never)]
    pub fn pause(&self) {
        if let Handoff::Inline { queue, yielder } = self {
            // The guard is dropped here: the consumer locks the queue next.
            let queued = !queue.lock().is_empty();
            if queued {
                yielder.suspend(());
            }
        }
    }
}
