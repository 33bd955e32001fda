//! From pushed-down filters to what a scan can skip.
//!
//! A filter on the `messages` table becomes three things:
//! - a [`PruningPredicate`] evaluated over chunk statistics (`ChunkStatistics`):
//!   `log_time` min/max from the chunk index, topic membership from the chunk's
//!   channel list, the file name; any AND/OR/range/IN shape DataFusion can prove;
//! - a [`Selection`] handed to the format reader: a `log_time` envelope, a topic
//!   set (from [`LiteralGuarantee`]) and whether payloads or full headers are needed;
//! - the exact predicate itself, evaluated on every batch, which is what lets the
//!   source declare its filters exact (so `LIMIT` reaches the scan).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, TimestampNanosecondArray, UInt64Array};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column as ColumnExpr, Literal};
use datafusion::physical_expr::utils::{
    Guarantee, LiteralGuarantee, collect_columns, split_conjunction, split_disjunction,
};
use datafusion::physical_expr::{DynamicFilterTracking, PhysicalExpr};
use datafusion::physical_expr_common::physical_expr::is_volatile;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};

use super::schema::col;
use logsql_readers::model::{Channel, ChunkMeta, Nanos, Selection};

/// Whether `filter` can be evaluated exactly by the scan: it only reads columns of
/// the file schema, and is neither volatile nor a runtime (dynamic) filter.
pub(crate) fn is_exact_pushable(filter: &Arc<dyn PhysicalExpr>, file_schema: &Schema) -> bool {
    over_file_columns(filter, file_schema) && !is_dynamic(filter)
}

/// Whether `filter` is a runtime (dynamic) filter the scan can prune chunks
/// with as it tightens ([`super::newest_first`]): deterministic, over
/// columns of the file schema.
pub(crate) fn is_runtime_prunable(filter: &Arc<dyn PhysicalExpr>, file_schema: &Schema) -> bool {
    over_file_columns(filter, file_schema) && is_dynamic(filter)
}

/// Whether `filter` is deterministic and reads only columns of the file schema.
fn over_file_columns(filter: &Arc<dyn PhysicalExpr>, file_schema: &Schema) -> bool {
    !is_volatile(filter)
        && collect_columns(filter)
            .iter()
            .all(|c| file_schema.index_of(c.name()).is_ok())
}

/// Whether `filter` holds a dynamic filter (one whose value changes while the query runs).
fn is_dynamic(filter: &Arc<dyn PhysicalExpr>) -> bool {
    DynamicFilterTracking::classify(filter).contains_dynamic_filter()
}

/// Builds a pruning predicate over chunk statistics, if the filter allows any pruning.
pub(crate) fn pruning_predicate(
    filter: &Arc<dyn PhysicalExpr>,
    schema: &SchemaRef,
) -> Option<Arc<PruningPredicate>> {
    PruningPredicateBuilder::new()
        .with_file_schema(Arc::clone(schema))
        .build(Arc::clone(filter))
}

/// The selection a reader gets for `filter` (if any) and the columns the scan needs.
pub fn selection(filter: Option<&Arc<dyn PhysicalExpr>>, needed: &HashSet<String>) -> Selection {
    Selection {
        time: filter.and_then(time_envelope),
        topics: filter.and_then(topic_set),
        payload: needed.contains(col::DATA),
        full_header: needed.contains(col::PUBLISH_TIME) || needed.contains(col::SEQUENCE),
        ..Default::default()
    }
}

/// The topics the filter admits, when it pins `topic` to a finite set.
fn topic_set(filter: &Arc<dyn PhysicalExpr>) -> Option<HashSet<String>> {
    let mut out: Option<HashSet<String>> = None;
    for g in LiteralGuarantee::analyze(filter) {
        if g.column.name() != col::TOPIC || g.guarantee != Guarantee::In {
            continue;
        }
        let set: HashSet<String> = g
            .literals
            .iter()
            .filter_map(|v| scalar_str(v).map(str::to_string))
            .collect();
        out = Some(match out {
            Some(prev) => prev.intersection(&set).cloned().collect(),
            None => set,
        });
    }
    out
}

/// The inclusive `[lo, hi]` envelope of `log_time` values the filter can admit.
pub(crate) fn time_envelope(filter: &Arc<dyn PhysicalExpr>) -> Option<(Nanos, Nanos)> {
    let mut env: Option<(Nanos, Nanos)> = None;
    for conj in split_conjunction(filter) {
        if let Some(e) = disjunction_envelope(conj) {
            env = Some(match env {
                Some((lo, hi)) => (lo.max(e.0), hi.min(e.1)),
                None => e,
            });
        }
    }
    env
}

/// Envelope of an OR of comparisons (a single comparison is an OR of one).
fn disjunction_envelope(expr: &Arc<dyn PhysicalExpr>) -> Option<(Nanos, Nanos)> {
    let mut env: Option<(Nanos, Nanos)> = None;
    for d in split_disjunction(expr) {
        let e = if split_conjunction(d).len() > 1 {
            time_envelope(d)?
        } else {
            comparison_envelope(d)?
        };
        env = Some(match env {
            Some((lo, hi)) => (lo.min(e.0), hi.max(e.1)),
            None => e,
        });
    }
    env
}

/// Envelope of `log_time <op> literal` (either side).
fn comparison_envelope(expr: &Arc<dyn PhysicalExpr>) -> Option<(Nanos, Nanos)> {
    let bin = expr.downcast_ref::<BinaryExpr>()?;
    let (op, lit) = match (
        bin.left().downcast_ref::<ColumnExpr>(),
        bin.right().downcast_ref::<Literal>(),
        bin.left().downcast_ref::<Literal>(),
        bin.right().downcast_ref::<ColumnExpr>(),
    ) {
        (Some(c), Some(l), _, _) if c.name() == col::LOG_TIME => (*bin.op(), l),
        (_, _, Some(l), Some(c)) if c.name() == col::LOG_TIME => (bin.op().swap()?, l),
        _ => return None,
    };
    let v = timestamp_nanos(lit.value())?;
    let max = u64::MAX as i128;
    let (lo, hi) = match op {
        Operator::Eq => (v, v),
        Operator::Gt => (v + 1, max),
        Operator::GtEq => (v, max),
        Operator::Lt => (0, v - 1),
        Operator::LtEq => (0, v),
        _ => return None,
    };
    let (lo, hi) = (lo.max(0), hi.min(max));
    // An empty range is (MAX, 0): no log_time satisfies it.
    Some(if lo > hi {
        (u64::MAX, 0)
    } else {
        (lo as u64, hi as u64)
    })
}

/// The text of a non-null string literal.
pub(crate) fn scalar_str(v: &ScalarValue) -> Option<&str> {
    match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// A timestamp literal as nanoseconds.
fn timestamp_nanos(v: &ScalarValue) -> Option<i128> {
    Some(match v {
        ScalarValue::TimestampNanosecond(Some(x), _) => *x as i128,
        ScalarValue::TimestampMicrosecond(Some(x), _) => *x as i128 * 1_000,
        ScalarValue::TimestampMillisecond(Some(x), _) => *x as i128 * 1_000_000,
        ScalarValue::TimestampSecond(Some(x), _) => *x as i128 * 1_000_000_000,
        _ => return None,
    })
}

/// Chunk-level statistics of one file, in the shape [`PruningPredicate`] reads.
pub(crate) struct ChunkStatistics<'a> {
    chunks: Vec<&'a ChunkMeta>,
    channels: &'a BTreeMap<u64, Channel>,
    file: &'a str,
}

impl<'a> ChunkStatistics<'a> {
    /// Statistics of `chunks`, whose channel ids refer to `channels`, in `file`.
    pub(crate) fn new(
        chunks: Vec<&'a ChunkMeta>,
        channels: &'a BTreeMap<u64, Channel>,
        file: &'a str,
    ) -> Self {
        Self {
            chunks,
            channels,
            file,
        }
    }

    fn times(&self, f: impl Fn(&ChunkMeta) -> Option<Nanos>) -> ArrayRef {
        let values: TimestampNanosecondArray = self
            .chunks
            .iter()
            .map(|c| f(c).and_then(|t| i64::try_from(t).ok()))
            .collect();
        Arc::new(values.with_timezone("UTC"))
    }
}

impl PruningStatistics for ChunkStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        (column.name == col::LOG_TIME).then(|| self.times(|c| c.start_time))
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        (column.name == col::LOG_TIME).then(|| self.times(|c| c.end_time))
    }

    fn num_containers(&self) -> usize {
        self.chunks.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        // Non-nullable columns never hold nulls; that lets `IS NULL` prune.
        matches!(column.name.as_str(), col::TOPIC | col::LOG_TIME | col::FILE)
            .then(|| Arc::new(UInt64Array::from(vec![0u64; self.chunks.len()])) as ArrayRef)
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        Some(Arc::new(
            self.chunks
                .iter()
                .map(|c| c.message_count)
                .collect::<UInt64Array>(),
        ))
    }

    #[allow(clippy::mutable_key_type)]
    fn contained(&self, column: &Column, values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        let wanted: HashSet<&str> = values.iter().filter_map(scalar_str).collect();
        if wanted.len() != values.len() {
            return None;
        }
        match column.name.as_str() {
            col::FILE => {
                let hit = wanted.contains(self.file);
                Some(self.chunks.iter().map(|_| Some(hit)).collect())
            }
            col::TOPIC => Some(
                self.chunks
                    .iter()
                    .map(|c| {
                        let ids = c.channels.as_ref()?;
                        let topics: Vec<&str> = ids
                            .iter()
                            .filter_map(|id| self.channels.get(id))
                            .map(|ch| ch.topic.as_str())
                            .collect();
                        if topics.len() != ids.len() {
                            return None; // a channel the summary does not describe: unknown
                        }
                        let inside = topics.iter().filter(|t| wanted.contains(*t)).count();
                        if inside == 0 {
                            Some(false)
                        } else if inside == topics.len() {
                            Some(true)
                        } else {
                            None
                        }
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}
