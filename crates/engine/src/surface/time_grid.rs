//! `time_grid('path', fps)`: a fixed-rate time grid over recordings, one
//! episode per recording, to `ASOF JOIN` topics onto (the frames of a
//! LeRobot dataset).
//!
//! Each log file the path names (in the order of its `file` name, which is
//! the order `read_topic` tables sort in) is one episode: `episode_index`
//! counts from 0, `frame_index` from 0 in each, and `log_time` is the
//! recording's first message time plus `frame_index / fps` seconds, up to its
//! last message time. `file` names the recording as `read_topic`'s `file`
//! column does, so `ON g.file = t.file` pairs each frame with its own
//! recording. Times come from the file summaries (no message is read); the
//! rows are generated as they are consumed (memory does not grow with the
//! recording), and the table declares its orders: (`file`, `log_time`), which
//! `ASOF JOIN ... ON g.file = t.file` needs, and (`episode_index`,
//! `log_time`), which the LeRobot writer needs (so no sort of the joined
//! frames, images included, stands between the two).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, SessionState, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::equivalence::project_ordering;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::prelude::SessionContext;
use logsql_writers::lerobot::parse_fps;

use super::table_functions::{literal_text, plan_on_thread};
use super::url_table::resolve;
use crate::scanner::damage::report;
use crate::scanner::options::LogsqlOptions;
use crate::scanner::schema::{col, timestamp_type};

/// Registers `time_grid`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udtf("time_grid", Arc::new(TimeGridFunction));
}

#[derive(Debug)]
struct TimeGridFunction;

impl TableFunctionImpl for TimeGridFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let texts: Vec<Option<String>> = args.exprs().iter().map(literal_text).collect();
        let usage = "time_grid() takes a path (file, directory or glob) and a frame rate, e.g. time_grid('runs/', 30)";
        let (path, fps) = match texts.as_slice() {
            [Some(p), Some(f)] => (p.clone(), f.clone()),
            _ => return Err(DataFusionError::Plan(usage.into())),
        };
        let fps = parse_fps(&fps).map_err(crate::write::df_write_err)?;
        plan_on_thread(
            &args,
            &format!("time_grid('{path}', {fps})"),
            |state| async move { plan(&state, &path, fps).await },
        )
    }
}

/// The table's schema.
pub fn grid_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("episode_index", DataType::Int64, false),
        Field::new("frame_index", DataType::Int64, false),
        Field::new(col::LOG_TIME, timestamp_type(), false),
        Field::new(col::FILE, DataType::Utf8, false),
    ]))
}

/// One recording's span.
#[derive(Debug, Clone)]
struct Recording {
    file: String,
    start_ns: i64,
    end_ns: i64,
}

async fn plan(state: &SessionState, path: &str, fps: f64) -> Result<Arc<dyn TableProvider>> {
    let on_error = LogsqlOptions::from_config(state.config_options()).on_error;
    let resolved = resolve(state, path).await?;
    for e in resolved.unrecognised_errors().await? {
        report(on_error, e, None)?;
    }
    let mut recordings = Vec::new();
    for ((loc, _), summary) in resolved.summaries(state).await? {
        let summary = match summary {
            Ok(s) => s.summary,
            Err(e) => {
                report(on_error, e, None)?;
                continue;
            }
        };
        let (Some(start), Some(end)) = (summary.start_time, summary.end_time) else {
            continue;
        };
        let (Ok(start_ns), Ok(end_ns)) = (i64::try_from(start), i64::try_from(end)) else {
            continue;
        };
        recordings.push(Recording {
            file: loc.display_name(),
            start_ns,
            end_ns,
        });
    }
    if recordings.is_empty() {
        return Err(DataFusionError::Plan(format!(
            "time_grid('{path}', {fps}): no recording there has messages"
        )));
    }
    recordings.sort_by(|a, b| a.file.cmp(&b.file));
    let schema = grid_schema();
    let stream = Arc::new(GridStream {
        schema: Arc::clone(&schema),
        recordings: Arc::new(recordings),
        fps,
    });
    Ok(Arc::new(GridTable { schema, stream }))
}

/// The grid as a table: one partition, generated as it is read, in the
/// orders of [`GridTable::orderings`].
#[derive(Debug)]
struct GridTable {
    schema: SchemaRef,
    stream: Arc<GridStream>,
}

impl GridTable {
    /// (`file`, `log_time`) and (`episode_index`, `log_time`): recordings
    /// come in `file` order and are numbered in it.
    fn orderings(&self) -> Vec<LexOrdering> {
        let sort = |name: &str| {
            let i = self.schema.index_of(name).expect("grid column");
            PhysicalSortExpr::new_default(Arc::new(Column::new(name, i)))
        };
        [col::FILE, "episode_index"]
            .into_iter()
            .filter_map(|first| LexOrdering::new([sort(first), sort(col::LOG_TIME)]))
            .collect()
    }
}

#[async_trait]
impl TableProvider for GridTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projected = match projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => Arc::clone(&self.schema),
        };
        // An ordering keeps its leading columns the projection keeps.
        let orderings: Vec<LexOrdering> = self
            .orderings()
            .iter()
            .filter_map(|o| project_ordering(o, &projected))
            .collect();
        let partition: Arc<dyn PartitionStream> = Arc::clone(&self.stream) as _;
        Ok(Arc::new(StreamingTableExec::try_new(
            Arc::clone(&self.schema),
            vec![partition],
            projection,
            orderings,
            false,
            limit,
        )?))
    }
}

/// The time of frame `frame` of a grid starting at `start_ns` (rounded to
/// the nanosecond).
pub fn frame_time(start_ns: i64, frame: i64, fps: f64) -> i64 {
    start_ns + (frame as f64 * 1e9 / fps).round() as i64
}

/// Generates the grid's rows batch by batch.
#[derive(Debug)]
struct GridStream {
    schema: SchemaRef,
    recordings: Arc<Vec<Recording>>,
    fps: f64,
}

impl PartitionStream for GridStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        // Batches of the session's size: an as-of join holds each topic's
        // rows over one batch of frames (a camera's images), so the frame
        // sinks' small batches reach it.
        let rows = GridRows {
            recordings: Arc::clone(&self.recordings),
            fps: self.fps,
            batch_rows: ctx.session_config().batch_size().max(1),
            episode: 0,
            frame: 0,
        };
        let schema = Arc::clone(&self.schema);
        let batches = rows.map(move |b| b.to_batch(&schema));
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            futures::stream::iter(batches),
        ))
    }
}

/// The position of the generator: the next frame of the next episode.
struct GridRows {
    recordings: Arc<Vec<Recording>>,
    fps: f64,
    /// Rows per batch.
    batch_rows: usize,
    episode: usize,
    frame: i64,
}

/// The columns of one batch being built.
#[derive(Default)]
struct GridBatch {
    episode: Vec<i64>,
    frame: Vec<i64>,
    time: Vec<i64>,
    file: Vec<Arc<str>>,
}

impl GridBatch {
    fn to_batch(&self, schema: &SchemaRef) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(self.episode.clone())),
            Arc::new(Int64Array::from(self.frame.clone())),
            Arc::new(TimestampNanosecondArray::from(self.time.clone()).with_timezone("UTC")),
            Arc::new(StringArray::from_iter_values(
                self.file.iter().map(|f| f.as_ref()),
            )),
        ];
        Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
    }
}

impl Iterator for GridRows {
    type Item = GridBatch;

    fn next(&mut self) -> Option<GridBatch> {
        let mut out = GridBatch::default();
        while out.episode.len() < self.batch_rows {
            let Some(rec) = self.recordings.get(self.episode) else {
                break;
            };
            let name: Arc<str> = Arc::from(rec.file.as_str());
            while out.episode.len() < self.batch_rows {
                let t = frame_time(rec.start_ns, self.frame, self.fps);
                if t > rec.end_ns {
                    break;
                }
                out.episode.push(self.episode as i64);
                out.frame.push(self.frame);
                out.time.push(t);
                out.file.push(Arc::clone(&name));
                self.frame += 1;
            }
            if out.episode.len() < self.batch_rows {
                self.episode += 1;
                self.frame = 0;
            }
        }
        (!out.episode.is_empty()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_run_from_the_first_to_the_last_message_of_each_recording() {
        let recordings = Arc::new(vec![
            Recording {
                file: "a".into(),
                start_ns: 1_000_000_000,
                end_ns: 1_100_000_000,
            },
            Recording {
                file: "b".into(),
                start_ns: 5,
                end_ns: 5,
            },
        ]);
        let rows = GridRows {
            recordings,
            fps: 30.0,
            batch_rows: 8192,
            episode: 0,
            frame: 0,
        };
        let batches: Vec<GridBatch> = rows.collect();
        assert_eq!(batches.len(), 1);
        let b = &batches[0];
        assert_eq!(b.episode, [0, 0, 0, 0, 1]);
        assert_eq!(b.frame, [0, 1, 2, 3, 0]);
        assert_eq!(
            b.time,
            [
                1_000_000_000,
                1_033_333_333,
                1_066_666_667,
                1_100_000_000,
                5
            ]
        );
    }

    #[test]
    fn fps_must_be_positive() {
        assert_eq!(parse_fps("30").unwrap(), 30.0);
        assert!(parse_fps("0").is_err());
        assert!(parse_fps("-1").is_err());
        assert!(parse_fps("x").is_err());
    }
}
