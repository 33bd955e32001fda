//! [`drive`]: the one bridge from a query to a writer. The query's
//! record-batch stream is read on the async side; the writer (any
//! [`FormatWriter`]) runs on a blocking thread fed through a bounded channel,
//! so a slow writer slows the query instead of buffering it. Before a batch,
//! the files its `file` column names for the first time are resolved on the
//! async side ([`SourceResolver`]) and handed to the writer.
//!
//! Errors: a writer that fails stops taking batches and its error is the
//! one returned; an error in the input stream stops the writer (or, under
//! [`StreamErrors::KeepRows`] after at least one row, lets it finish and is
//! returned beside its report). A cancel (the `cancel` future completing, or
//! the returned future being dropped) stops the writer between batches: the
//! writer is dropped unfinished and leaves nothing under its target name.
//! The caller publishes the finished output ([`super::target::Target`]).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::{FutureExt, StreamExt};
use logsql_writers::format_writer::Progress;
use logsql_writers::{FormatWriter, SourceFile};

use super::df_write_err;
use super::sources::SourceResolver;

/// Batches queued between the query and the writer thread.
const QUEUE: usize = 4;

/// What the bridge does with an error in its input stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamErrors {
    /// Abandon the output (nothing appears under the target name).
    Abort,
    /// After at least one row (a damaged source whose readable rows were all
    /// delivered): finish the output and return the error beside the report.
    KeepRows,
}

/// How [`drive`] runs one write.
pub struct Drive<'a> {
    /// What is written, for messages (`"LeRobot dataset"`, `"writing MCAP"`).
    pub what: &'a str,
    /// The target as the user named it, for messages.
    pub target: String,
    /// What an error in the input stream does.
    pub on_error: StreamErrors,
    /// The source files the rows may name (`None`: the writer takes nothing
    /// from them).
    pub sources: Option<SourceResolver>,
    /// Called on the query side whenever the writer got further.
    pub progress: &'a (dyn Fn(Progress) + Send + Sync),
}

impl<'a> Drive<'a> {
    /// A write of `what` to `target`: stream errors abort it, no sources, no
    /// progress.
    pub fn new(what: &'a str, target: String) -> Self {
        Self {
            what,
            target,
            on_error: StreamErrors::Abort,
            sources: None,
            progress: &|_| {},
        }
    }
}

/// What a driven write gives: the writer's report, and under
/// [`StreamErrors::KeepRows`] the input stream's error after which the
/// output was finished.
#[derive(Debug)]
pub struct Driven<R> {
    /// The writer's report.
    pub report: R,
    /// The input's error, when the output was finished after it.
    pub stream_error: Option<DataFusionError>,
}

/// What the query side sends the writer thread.
enum ToWriter {
    Sources(Vec<(String, Option<Arc<SourceFile>>)>),
    Batch(RecordBatch),
    /// The input is complete: the output can be finished.
    End,
}

/// Writes `stream` with `writer` (see the module documentation). When
/// `cancel` completes first, the write stops and its output is dropped.
pub async fn drive<W>(
    mut stream: SendableRecordBatchStream,
    mut writer: W,
    mut options: Drive<'_>,
    cancel: impl Future<Output = ()>,
) -> Result<Driven<W::Report>>
where
    W: FormatWriter + 'static,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel::<ToWriter>(QUEUE);
    let (ptx, mut prx) = tokio::sync::watch::channel(Progress::default());
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let (what, target) = (options.what, options.target.clone());
    let interrupted = || {
        DataFusionError::Execution(format!(
            "{what}: interrupted: nothing was written to {target}"
        ))
    };
    let label = what.to_string();
    let task = tokio::task::spawn_blocking(move || -> Result<W::Report> {
        // Without `End` (a failed or cancelled query), or once stopped, the
        // writer is dropped unfinished here, after it stopped.
        while let Some(message) = rx.blocking_recv() {
            if stopped.load(Ordering::Relaxed) {
                break;
            }
            match message {
                ToWriter::Sources(files) => {
                    for (name, file) in &files {
                        writer
                            .add_source(name, file.as_deref())
                            .map_err(df_write_err)?;
                    }
                }
                ToWriter::Batch(batch) => {
                    writer.write_batch(&batch).map_err(df_write_err)?;
                    let _ = ptx.send(writer.progress());
                }
                ToWriter::End => return writer.finish().map_err(df_write_err),
            }
        }
        Err(DataFusionError::Execution(format!(
            "{label}: the query stopped before its end"
        )))
    });

    let mut failed = None;
    let mut stream_error = None;
    let mut rows = 0u64;
    let mut cancel = std::pin::pin!(cancel.fuse());
    'query: loop {
        let next = tokio::select! {
            next = stream.next() => next,
            () = &mut cancel => {
                failed = Some(interrupted());
                break;
            }
        };
        let mut messages = Vec::with_capacity(2);
        match next {
            None => messages.push(ToWriter::End),
            Some(Ok(batch)) => {
                if let Some(sources) = options.sources.as_mut() {
                    let new = sources.new_sources(&batch).await?;
                    if !new.is_empty() {
                        messages.push(ToWriter::Sources(new));
                    }
                }
                rows += batch.num_rows() as u64;
                messages.push(ToWriter::Batch(batch));
            }
            Some(Err(e)) if options.on_error == StreamErrors::KeepRows && rows > 0 => {
                stream_error = Some(e);
                messages.push(ToWriter::End);
            }
            Some(Err(e)) => {
                failed = Some(e);
                break;
            }
        }
        for message in messages {
            let end = matches!(message, ToWriter::End);
            // A writer that failed has dropped its end: its error is the one to give.
            let sent = tokio::select! {
                sent = tx.send(message) => sent.is_ok(),
                () = &mut cancel => {
                    failed = Some(interrupted());
                    break 'query;
                }
            };
            if end || !sent {
                break 'query;
            }
        }
        if prx.has_changed().unwrap_or(false) {
            let progress = *prx.borrow_and_update();
            (options.progress)(progress);
        }
    }
    if failed.is_some() {
        stop.store(true, Ordering::Relaxed);
    }
    drop(tx);
    let mut task = std::pin::pin!(task);
    let report = tokio::select! {
        report = &mut task => report,
        () = &mut cancel => {
            stop.store(true, Ordering::Relaxed);
            failed = Some(interrupted());
            task.await
        }
    }
    .map_err(|e| DataFusionError::External(Box::new(e)))?;
    if let Some(e) = failed {
        return Err(e);
    }
    let report = report?;
    (options.progress)(*prx.borrow());
    Ok(Driven {
        report,
        stream_error,
    })
}
