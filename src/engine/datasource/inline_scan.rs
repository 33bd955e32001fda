//! A scan run inline in the consumer's task: the scan loop runs as a
//! coroutine on its own stack, resumed by the stream's `poll_next` whenever
//! the batches it queued are all taken ([`Handoff::Inline`]). For local files,
//! whose reads block only briefly, as DataFusion's own file scans do.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use futures::Stream;

use crate::engine::scanner::handoff::{self, BatchQueue, Handoff, Yielder};

/// The stack of a scan's coroutine: as large as a blocking thread's (tokio's
/// default, 2 MiB). Only the pages it touches are ever mapped in.
const STACK_BYTES: usize = 2 << 20;

/// The batches of one scan, run inline as the stream is polled.
pub struct InlineScan {
    scan: Option<Coroutine<(), (), (), DefaultStack>>,
    queue: BatchQueue,
    /// The file, for the error of a scan that panicked.
    name: String,
}

// SAFETY: a `Coroutine` is not `Send` because the stack it suspends may hold
// values bound to its thread. The scan's closure owns only `Send` values (the
// plan, file location and metrics behind `Arc`s, and the queue), and the scan
// suspends only in `Handoff::pause`, between chunks, where it holds no
// thread-local borrow, lock guard or `Rc`: whatever thread resumes it finds
// the state the scan left, and the thread-locals it uses afterwards are the
// resuming thread's own.
unsafe impl Send for InlineScan {}

impl InlineScan {
    /// A stream of the batches `scan` hands to its [`Handoff`]; `scan` runs
    /// only while the stream is polled. `name` names the file in the error of
    /// a scan that panics.
    pub fn new(
        name: String,
        scan: impl FnOnce(Handoff<'_>) + Send + 'static,
    ) -> std::io::Result<Self> {
        let queue: BatchQueue = Arc::new(Mutex::new(VecDeque::new()));
        let shared = Arc::clone(&queue);
        let stack = DefaultStack::new(STACK_BYTES)?;
        let scan = Coroutine::with_stack(stack, move |yielder: &Yielder, ()| {
            scan(Handoff::Inline {
                queue: &shared,
                yielder,
            })
        });
        Ok(Self {
            scan: Some(scan),
            queue,
            name,
        })
    }
}

impl Stream for InlineScan {
    type Item = Result<RecordBatch>;

    fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = handoff::lock(&this.queue).pop_front() {
                return Poll::Ready(Some(item));
            }
            let Some(scan) = this.scan.as_mut() else {
                return Poll::Ready(None);
            };
            match std::panic::catch_unwind(AssertUnwindSafe(|| scan.resume(()))) {
                Ok(CoroutineResult::Yield(())) => {}
                Ok(CoroutineResult::Return(())) => this.scan = None,
                Err(panic) => {
                    this.scan = None;
                    return Poll::Ready(Some(Err(panicked(&this.name, panic.as_ref()))));
                }
            }
        }
    }
}

/// The error of a scan of `file` that panicked with `panic`.
pub fn panicked(file: &str, panic: &(dyn std::any::Any + Send)) -> DataFusionError {
    let msg = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    DataFusionError::Internal(format!("logsql reader panicked on {file}: {msg}"))
}
