//! The matching state of one partition of an [`AsofJoinExec`](super::AsofJoinExec).
//!
//! Both inputs arrive sorted by (keys, time), ascending with NULLs first. Keys
//! and times are encoded in Arrow's row format (one converter per role, shared
//! by both sides, so byte order is the sort order), and one cursor walks the
//! right input once: right rows behind it are never needed again and their
//! batches are released, so the buffer holds only the rows from the current
//! candidate on (for `<=`/`<`, the run of ties at the candidate's time).

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::metrics::Gauge;
use futures::StreamExt;

use super::AsofOp;

/// The expressions one side is matched on: its equality keys and its time.
#[derive(Debug, Clone)]
pub(crate) struct SideExprs {
    /// The equality keys, in the order of the other side's.
    pub keys: Vec<Arc<dyn PhysicalExpr>>,
    /// The time (any orderable type, the same as the other side's).
    pub time: Arc<dyn PhysicalExpr>,
}

/// A batch's keys and times in row format, and which rows can match at all.
#[derive(Debug)]
pub(crate) struct Encoded {
    keys: Option<Rows>,
    times: Rows,
    /// Rows with a NULL key or time (never matched); `None` when there are none.
    invalid: Option<NullBuffer>,
}

impl Encoded {
    fn valid(&self, row: usize) -> bool {
        self.invalid.as_ref().is_none_or(|n| n.is_valid(row))
    }

    fn key_cmp(&self, row: usize, other: &Encoded, other_row: usize) -> Ordering {
        match (&self.keys, &other.keys) {
            (Some(a), Some(b)) => a.row(row).cmp(&b.row(other_row)),
            _ => Ordering::Equal,
        }
    }

    fn time_cmp(&self, row: usize, other: &Encoded, other_row: usize) -> Ordering {
        self.times.row(row).cmp(&other.times.row(other_row))
    }

    fn size(&self) -> usize {
        self.keys.as_ref().map_or(0, Rows::size) + self.times.size()
    }
}

/// The row converters of the keys and of the time, shared by both sides.
#[derive(Debug)]
pub(crate) struct Encoders {
    keys: Option<RowConverter>,
    time: RowConverter,
}

impl Encoders {
    /// Converters for keys of `key_types` and times of `time_type`, in the
    /// order the inputs are sorted in (ascending, NULLs first).
    pub(crate) fn new(key_types: &[DataType], time_type: &DataType) -> Result<Self> {
        let keys = if key_types.is_empty() {
            None
        } else {
            Some(RowConverter::new(
                key_types.iter().cloned().map(SortField::new).collect(),
            )?)
        };
        let time = RowConverter::new(vec![SortField::new(time_type.clone())])?;
        Ok(Self { keys, time })
    }

    /// Evaluates `exprs` on `batch` and encodes the results.
    pub(crate) fn encode(&self, batch: &RecordBatch, exprs: &SideExprs) -> Result<Encoded> {
        let rows = batch.num_rows();
        let eval =
            |e: &Arc<dyn PhysicalExpr>| -> Result<ArrayRef> { e.evaluate(batch)?.into_array(rows) };
        let key_arrays = exprs.keys.iter().map(eval).collect::<Result<Vec<_>>>()?;
        let time = eval(&exprs.time)?;
        let mut invalid = time.logical_nulls();
        for k in &key_arrays {
            invalid = NullBuffer::union(invalid.as_ref(), k.logical_nulls().as_ref());
        }
        let keys = match &self.keys {
            Some(c) => Some(c.convert_columns(&key_arrays)?),
            None => None,
        };
        Ok(Encoded {
            keys,
            times: self.time.convert_columns(&[time])?,
            invalid: invalid.filter(|n| n.null_count() > 0),
        })
    }
}

/// A position in the right input: (batch id, row).
pub(crate) type Pos = (usize, usize);

/// A buffered right batch.
#[derive(Debug)]
struct Buffered {
    batch: RecordBatch,
    enc: Encoded,
    size: usize,
}

/// The right input and the batches of it still needed.
pub(crate) struct RightBuffer {
    stream: SendableRecordBatchStream,
    exprs: SideExprs,
    batches: VecDeque<Buffered>,
    first_id: usize,
    done: bool,
    reservation: MemoryReservation,
    bytes: usize,
    rows: usize,
    max_rows: Gauge,
}

impl RightBuffer {
    /// Buffers `stream` (evaluating `exprs` on it), accounting its batches in
    /// `reservation` and the most rows held at once in `max_rows`.
    pub(crate) fn new(
        stream: SendableRecordBatchStream,
        exprs: SideExprs,
        reservation: MemoryReservation,
        max_rows: Gauge,
    ) -> Self {
        Self {
            stream,
            exprs,
            batches: VecDeque::new(),
            first_id: 0,
            done: false,
            reservation,
            bytes: 0,
            rows: 0,
            max_rows,
        }
    }

    /// Reads batches until `pos` is buffered; `false` when the input ends first.
    async fn ensure(&mut self, pos: Pos, enc: &Encoders) -> Result<bool> {
        while pos.0 >= self.first_id + self.batches.len() {
            if self.done {
                return Ok(false);
            }
            match self.stream.next().await {
                None => self.done = true,
                Some(batch) => {
                    let batch = batch?;
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let encoded = enc.encode(&batch, &self.exprs)?;
                    let size = batch.get_array_memory_size() + encoded.size();
                    self.bytes += size;
                    self.rows += batch.num_rows();
                    self.reservation.try_resize(self.bytes).map_err(|e| {
                        DataFusionError::ResourcesExhausted(format!(
                            "ASOF JOIN: holding {} rows ({} bytes) of the right input \
                             (the rows of one key from the current match on) exceeds \
                             the memory limit: {e}",
                            self.rows, self.bytes
                        ))
                    })?;
                    self.max_rows.set_max(self.rows);
                    self.batches.push_back(Buffered {
                        batch,
                        enc: encoded,
                        size,
                    });
                }
            }
        }
        Ok(true)
    }

    fn get(&self, id: usize) -> &Buffered {
        &self.batches[id - self.first_id]
    }

    /// The right batch `id` (buffered).
    pub(crate) fn batch(&self, id: usize) -> &RecordBatch {
        &self.get(id).batch
    }

    fn next(&self, pos: Pos) -> Pos {
        if pos.1 + 1 < self.get(pos.0).batch.num_rows() {
            (pos.0, pos.1 + 1)
        } else {
            (pos.0 + 1, 0)
        }
    }

    /// Releases the batches before batch `id`.
    fn release_before(&mut self, id: usize) {
        while self.first_id < id {
            let Some(b) = self.batches.pop_front() else {
                break;
            };
            self.first_id += 1;
            self.bytes -= b.size;
            self.rows -= b.batch.num_rows();
        }
        self.reservation.resize(self.bytes);
    }
}

/// One partition's matching state.
pub(crate) struct Matcher {
    op: AsofOp,
    enc: Encoders,
    left: SideExprs,
    /// The right input.
    pub right: RightBuffer,
    /// The first right row not yet passed.
    cursor: Pos,
    /// `>=`/`>`: the last passed right row that matched the key and time
    /// condition (its key is checked again, it may be an earlier key's).
    cand: Option<Pos>,
    /// `<=`/`<`: the last tie found for a cursor position, reused while the
    /// cursor stays.
    ties: Option<(Pos, Pos)>,
}

impl Matcher {
    /// A matcher of `left` rows (evaluated with `left_exprs`) against `right`.
    pub(crate) fn new(
        op: AsofOp,
        enc: Encoders,
        left_exprs: SideExprs,
        right: RightBuffer,
    ) -> Self {
        Self {
            op,
            enc,
            left: left_exprs,
            right,
            cursor: (0, 0),
            cand: None,
            ties: None,
        }
    }

    /// The best right row of each row of `left` (a batch of the left input,
    /// which continues the previous one's order).
    pub(crate) async fn match_batch(&mut self, left: &RecordBatch) -> Result<Vec<Option<Pos>>> {
        let l = self.enc.encode(left, &self.left)?;
        let mut out = Vec::with_capacity(left.num_rows());
        for i in 0..left.num_rows() {
            let m = if !l.valid(i) {
                None
            } else if self.op.is_backward() {
                self.backward(&l, i).await?
            } else {
                self.forward(&l, i).await?
            };
            out.push(m);
        }
        Ok(out)
    }

    /// `>=` / `>`: passes every right row up to the left row's (key, time),
    /// remembering the last one with its key; ties: the last one passed.
    async fn backward(&mut self, l: &Encoded, i: usize) -> Result<Option<Pos>> {
        while self.right.ensure(self.cursor, &self.enc).await? {
            let r = self.right.get(self.cursor.0);
            let row = self.cursor.1;
            if r.enc.valid(row) {
                match r.enc.key_cmp(row, l, i) {
                    Ordering::Less => {}
                    Ordering::Greater => break,
                    Ordering::Equal => match r.enc.time_cmp(row, l, i) {
                        Ordering::Less => self.cand = Some(self.cursor),
                        Ordering::Equal if self.op.is_inclusive() => self.cand = Some(self.cursor),
                        _ => break,
                    },
                }
            }
            self.cursor = self.right.next(self.cursor);
        }
        // A candidate of an earlier key is of no use to this or any later left row.
        self.cand = self.cand.filter(|c| {
            let r = self.right.get(c.0);
            r.enc.key_cmp(c.1, l, i) == Ordering::Equal
        });
        Ok(self.cand)
    }

    /// `<=` / `<`: passes the right rows before the left row's (key, time);
    /// the match is the last of the ties at the first row not passed.
    async fn forward(&mut self, l: &Encoded, i: usize) -> Result<Option<Pos>> {
        while self.right.ensure(self.cursor, &self.enc).await? {
            let r = self.right.get(self.cursor.0);
            let row = self.cursor.1;
            if r.enc.valid(row) {
                match r.enc.key_cmp(row, l, i) {
                    Ordering::Less => {}
                    Ordering::Greater => break,
                    Ordering::Equal => match r.enc.time_cmp(row, l, i) {
                        Ordering::Less => {}
                        Ordering::Equal if !self.op.is_inclusive() => {}
                        _ => break,
                    },
                }
            }
            self.cursor = self.right.next(self.cursor);
        }
        if !self.right.ensure(self.cursor, &self.enc).await? {
            return Ok(None);
        }
        let first = self.cursor;
        let r = self.right.get(first.0);
        if r.enc.key_cmp(first.1, l, i) != Ordering::Equal {
            return Ok(None);
        }
        if let Some((at, last)) = self.ties
            && at == first
        {
            return Ok(Some(last));
        }
        let mut last = first;
        loop {
            let next = self.right.next(last);
            if !self.right.ensure(next, &self.enc).await? {
                break;
            }
            let a = self.right.get(first.0);
            let b = self.right.get(next.0);
            let same = b.enc.valid(next.1)
                && b.enc.key_cmp(next.1, &a.enc, first.1) == Ordering::Equal
                && b.enc.time_cmp(next.1, &a.enc, first.1) == Ordering::Equal;
            if !same {
                break;
            }
            last = next;
        }
        self.ties = Some((first, last));
        Ok(Some(last))
    }

    /// Releases the right batches no later left row can match.
    pub(crate) fn release(&mut self) {
        let keep = match self.cand {
            Some(c) if self.op.is_backward() => c.0.min(self.cursor.0),
            _ => self.cursor.0,
        };
        self.right.release_before(keep);
    }
}
