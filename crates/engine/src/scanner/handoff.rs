//! How a scan hands its batches to the consumer: the scan runs on a blocking
//! thread and sends each batch through a bounded channel to the consumer's
//! task; the channel's bound keeps at most a couple of batches in flight.

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use tokio::sync::mpsc::Sender;

/// Where a scan's batches go: the channel to the consumer's task.
#[derive(Clone, Copy)]
pub struct Handoff<'a>(pub &'a Sender<Result<RecordBatch>>);

impl Handoff<'_> {
    /// Hands `item` over, waiting while the channel is full; false when the
    /// consumer is gone.
    pub fn send(&self, item: Result<RecordBatch>) -> bool {
        self.0.blocking_send(item).is_ok()
    }

    /// Whether the consumer is gone (the query ended or was cancelled).
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}
