//! Damage found by scans, reported after every readable row was delivered.
//!
//! A scan that meets a damaged file (a cut recording, a corrupt chunk, a
//! checksum mismatch) applies `logsql.on_error` ([`report`]): a warning, or an
//! error. An error raised inside one partition's stream would end the whole
//! query at once, before the other partitions' rows (and the aggregate over
//! what was read) reach the user. So in a query planned by a session with
//! logsql registered, scans do not raise it: `DeferScanErrors`
//! (in the SQL surface layer, `surface/defer_errors.rs`), a physical
//! optimizer rule, gives every logsql scan of the plan one shared
//! [`DamageLog`] and puts a [`DamageReportExec`] at the root. The scans record
//! their errors in the log and finish normally; the root node passes every
//! batch through and, once every partition is done, ends the stream with the
//! recorded error and a note that says how many rows came before it.
//!
//! Scans outside such a plan (a plan built without the rule, or a scan on a
//! distributed worker) raise their errors in their own stream, as DataFusion
//! operators do.

use std::collections::HashSet;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{SchemaRef, UInt64Type};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::Stream;
use parking_lot::Mutex;

use super::options::OnError;

/// Applies the `on_error` policy to one damage report: `Err` when it fails the
/// query, else a warning in the log (once per file when `log` is given).
pub fn report(policy: OnError, e: logsql_readers::Error, log: Option<&DamageLog>) -> Result<()> {
    if policy.fails(&e) {
        return Err(DataFusionError::External(Box::new(e)));
    }
    if log.is_none_or(|l| l.first_warning_for(e.file().unwrap_or_default())) {
        match e.unfinished_warning() {
            Some(w) => log::warn!("{w}"),
            None => log::warn!("{e}"),
        }
    }
    Ok(())
}

/// The errors the scans of one query recorded, and the files already warned about.
#[derive(Debug, Default)]
pub struct DamageLog {
    inner: Mutex<Recorded>,
}

#[derive(Debug, Default)]
struct Recorded {
    errors: Vec<DataFusionError>,
    warned: HashSet<String>,
}

impl DamageLog {
    /// Records an error that fails the query once every row was delivered.
    pub(crate) fn defer(&self, e: DataFusionError) {
        self.inner.lock().errors.push(e);
    }

    /// Whether `file` gets its first warning now (the scan of a file may meet
    /// its damage in several partitions: the user hears of it once).
    fn first_warning_for(&self, file: &str) -> bool {
        self.inner.lock().warned.insert(file.to_string())
    }

    /// Takes the recorded errors as one: the first, with the others named in a note.
    fn take(&self) -> Option<DataFusionError> {
        let errors = std::mem::take(&mut self.inner.lock().errors);
        let mut errors = errors.into_iter();
        let first = errors.next()?;
        let rest: Vec<String> = errors.map(|e| e.to_string()).collect();
        Some(match rest.len() {
            0 => first,
            n => first.context(format!(
                "{n} more damaged place{}: {}",
                if n == 1 { "" } else { "s" },
                rest.iter()
                    .take(3)
                    .map(|r| r.trim_start_matches("External error: ").to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
                    + if n > 3 { "; ..." } else { "" }
            )),
        })
    }
}

/// The root of a plan whose logsql scans record their errors in a [`DamageLog`]:
/// passes every batch through, then ends with the recorded error.
#[derive(Debug)]
pub struct DamageReportExec {
    input: Arc<dyn ExecutionPlan>,
    log: Arc<DamageLog>,
    /// Rows passed through, over all partitions.
    rows: Arc<AtomicU64>,
    /// Partition streams finished (of this execution: counted modulo the partition count).
    finished: Arc<AtomicUsize>,
}

impl DamageReportExec {
    /// The report node over `input`, whose scans record into `log`.
    pub fn new(input: Arc<dyn ExecutionPlan>, log: Arc<DamageLog>) -> Self {
        Self {
            input,
            log,
            rows: Arc::default(),
            finished: Arc::default(),
        }
    }
}

impl DisplayAs for DamageReportExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => Ok(()),
            _ => write!(f, "DamageReportExec"),
        }
    }
}

impl ExecutionPlan for DamageReportExec {
    fn name(&self) -> &str {
        "DamageReportExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::unary::only_child(children, "DamageReportExec")?;
        Ok(Arc::new(Self::new(input, Arc::clone(&self.log))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        Ok(Box::pin(ReportStream {
            schema: input.schema(),
            input: Some(input),
            log: Arc::clone(&self.log),
            rows: Arc::clone(&self.rows),
            finished: Arc::clone(&self.finished),
            partitions: self.input.output_partitioning().partition_count().max(1),
            copy: self.input.name() == "DataSinkExec",
            copy_rows: 0,
        }))
    }
}

/// One partition's stream of a [`DamageReportExec`].
struct ReportStream {
    schema: SchemaRef,
    input: Option<SendableRecordBatchStream>,
    log: Arc<DamageLog>,
    rows: Arc<AtomicU64>,
    finished: Arc<AtomicUsize>,
    partitions: usize,
    /// Whether the input is a `COPY` (its rows are the count of rows written).
    copy: bool,
    copy_rows: u64,
}

impl ReportStream {
    /// The error that ends the query, if the scans recorded any and this is the
    /// last partition to finish.
    fn closing_error(&mut self) -> Option<DataFusionError> {
        let done = self.finished.fetch_add(1, Ordering::SeqCst) + 1;
        if !done.is_multiple_of(self.partitions) {
            return None;
        }
        let e = self.log.take()?;
        let note = if self.copy {
            format!(
                "every readable message was used before this error: COPY wrote {} rows to a complete, valid output",
                self.copy_rows
            )
        } else {
            let rows = self.rows.swap(0, Ordering::SeqCst);
            format!(
                "every readable message was used before this error: the query returned {rows} row{} (SET logsql.on_error = 'warn', or the CLI's --on-error warn, to only log damage)",
                if rows == 1 { "" } else { "s" }
            )
        };
        Some(e.context(note))
    }
}

impl Stream for ReportStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(input) = self.input.as_mut() else {
            return Poll::Ready(None);
        };
        match input.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(batch))) => {
                self.rows
                    .fetch_add(batch.num_rows() as u64, Ordering::SeqCst);
                if self.copy {
                    self.copy_rows += written_count(&batch);
                }
                Poll::Ready(Some(Ok(batch)))
            }
            Poll::Ready(None) => {
                self.input = None;
                Poll::Ready(self.closing_error().map(Err))
            }
            other => other,
        }
    }
}

impl RecordBatchStream for ReportStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

/// The row count a `COPY` reports (its `count` column).
fn written_count(batch: &RecordBatch) -> u64 {
    batch
        .columns()
        .first()
        .and_then(|c| c.as_primitive_opt::<UInt64Type>())
        .map(|c| {
            (0..c.len())
                .filter(|i| c.is_valid(*i))
                .map(|i| c.value(i))
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_errors_become_one_with_the_others_named() {
        let log = DamageLog::default();
        assert!(log.take().is_none());
        for i in 0..5 {
            log.defer(DataFusionError::Execution(format!("damage {i}")));
        }
        let e = log.take().unwrap().to_string();
        assert!(e.contains("damage 0"), "{e}");
        assert!(e.contains("4 more damaged places: Execution error: damage 1; Execution error: damage 2; Execution error: damage 3; ..."), "{e}");
        assert!(log.take().is_none(), "taken once");
        assert!(log.first_warning_for("a.mcap"));
        assert!(!log.first_warning_for("a.mcap"));
    }
}
