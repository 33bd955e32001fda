//! A scan run inline in the consumer's task: the scan loop runs as a
//! coroutine on its own stack, resumed by the stream's `poll_next` whenever
//! the batches it queued are all taken ([`Handoff::Inline`]). For local files,
//! whose reads block only briefly, as DataFusion's own file scans do.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use futures::Stream;
use parking_lot::Mutex;

use crate::scanner::handoff::{BatchQueue, Handoff, Yielder};

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
// plan, file location and metrics behind `Arc`s, and the queue). The scan
// suspends only in `Handoff::pause` (never inlined), called from the scan loop
// between chunks, where it holds no lock guard and no borrow of a
// thread-local: the chunk readers' thread-local buffers (`chunk_io`,
// `compression`) are taken and given back within each chunk read. Whatever
// thread resumes the scan finds the state it left, and the thread-locals it
// uses afterwards are the resuming thread's own.
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
            if let Some(item) = this.queue.lock().pop_front() {
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use datafusion::arrow::array::{Int32Array, RecordBatch};
    use futures::StreamExt;
    use futures::executor::block_on;

    use super::*;

    fn batch(v: i32) -> RecordBatch {
        RecordBatch::try_from_iter([("v", Arc::new(Int32Array::from(vec![v])) as _)]).unwrap()
    }

    fn value(b: &RecordBatch) -> i32 {
        let col = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
        col.value(0)
    }

    #[test]
    fn the_scan_runs_only_as_far_as_the_consumer_has_taken() {
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&sent);
        let mut stream = InlineScan::new("f.mcap".into(), move |handoff| {
            for chunk in 0..3 {
                // Two batches per chunk, then the pause between chunks.
                for i in 0..2 {
                    counter.fetch_add(1, Ordering::SeqCst);
                    assert!(handoff.send(Ok(batch(chunk * 10 + i))));
                }
                handoff.pause();
            }
        })
        .unwrap();
        assert_eq!(sent.load(Ordering::SeqCst), 0, "nothing runs before a poll");
        let first = block_on(stream.next()).unwrap().unwrap();
        assert_eq!(value(&first), 0);
        assert_eq!(sent.load(Ordering::SeqCst), 2, "one chunk read");
        let rest: Vec<i32> = block_on(stream.collect::<Vec<_>>())
            .into_iter()
            .map(|b| value(&b.unwrap()))
            .collect();
        assert_eq!(rest, [1, 10, 11, 20, 21]);
    }

    #[test]
    fn a_panic_is_an_error_naming_the_file_and_ends_the_stream() {
        let mut stream = InlineScan::new("run.bag".into(), |handoff| {
            handoff.send(Ok(batch(1)));
            handoff.pause();
            panic!("bad record");
        })
        .unwrap();
        assert_eq!(value(&block_on(stream.next()).unwrap().unwrap()), 1);
        let err = block_on(stream.next()).unwrap().unwrap_err().to_string();
        assert!(
            err.contains("logsql reader panicked on run.bag: bad record"),
            "{err}"
        );
        assert!(block_on(stream.next()).is_none());
    }

    #[test]
    fn dropping_the_stream_unwinds_a_suspended_scan() {
        struct Flag(Arc<AtomicUsize>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        let after = Arc::new(AtomicUsize::new(0));
        let (d, a) = (Arc::clone(&dropped), Arc::clone(&after));
        let mut stream = InlineScan::new("f.mcap".into(), move |handoff| {
            let _guard = Flag(d);
            handoff.send(Ok(batch(1)));
            handoff.pause();
            a.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        assert!(block_on(stream.next()).is_some());
        drop(stream);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the scan's locals dropped"
        );
        assert_eq!(
            after.load(Ordering::SeqCst),
            0,
            "nothing ran past the pause"
        );
    }
}
