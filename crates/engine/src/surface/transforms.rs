//! `transforms(source)`: every coordinate transform of the recordings in
//! `source` (a file, directory, glob or URL), one row per transform.
//!
//! Columns: `file`, `topic`, `log_time`, `stamp` (the transform's own
//! header stamp, what lookups interpolate on), `parent_frame`,
//! `child_frame`, `translation` (`x`, `y`, `z`), `rotation` (`x`, `y`, `z`,
//! `w`), all `Float64`, and `is_static`, in no particular order.
//!
//! Read from every topic whose type is one of [`TRANSFORM_TYPES`]:
//! `tf2_msgs/TFMessage` and `tf/tfMessage` (ROS1, ROS 2), and Foxglove's
//! `FrameTransform` and `FrameTransforms` (protobuf, JSON, ROS 2). A transform
//! is static when its topic's name ends in `tf_static` (`/tf_static`, as tf2
//! publishes them). A missing rotation is the identity, a missing component
//! zero (protobuf leaves default values out).
//!
//! The table is a view: one `read_topic` per transform topic, its list of
//! transforms unnested, the fields renamed to one shape, so every scan
//! pushdown, limit and plan check applies. Which fields a topic has is read
//! from its decoded schema, not assumed from its type name.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, TimeUnit};
use datafusion::catalog::view::ViewTable;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::{DataFrame, SessionContext};

use super::table_functions::{literal_text, plan_on_thread, sql_literal};
use crate::scanner::schema::col as names;

/// The message types whose topics hold transforms.
pub const TRANSFORM_TYPES: &[&str] = &[
    "tf2_msgs/TFMessage",
    "tf2_msgs/msg/TFMessage",
    "tf/tfMessage",
    "foxglove.FrameTransform",
    "foxglove.FrameTransforms",
    "foxglove_msgs/FrameTransform",
    "foxglove_msgs/FrameTransforms",
    "foxglove_msgs/msg/FrameTransform",
    "foxglove_msgs/msg/FrameTransforms",
];

/// Registers `transforms`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udtf("transforms", Arc::new(TransformsFunction));
}

const USAGE: &str =
    "transforms() takes a path (a file, directory, glob or URL), e.g. transforms('run.mcap')";

#[derive(Debug)]
struct TransformsFunction;

impl TableFunctionImpl for TransformsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let path = match args
            .exprs()
            .iter()
            .map(literal_text)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [Some(path)] => path.clone(),
            _ => return Err(DataFusionError::Plan(USAGE.into())),
        };
        let what = format!("transforms('{path}')");
        plan_on_thread(&args, &what.clone(), |state| async move {
            let sql = view_sql(&state, &path).await?;
            let plan = state.create_logical_plan(&sql).await?;
            Ok(Arc::new(ViewTable::new(plan, Some(what))) as Arc<dyn TableProvider>)
        })
    }
}

/// The view's SQL: a `UNION ALL` of one query per transform topic of `path`.
pub(crate) async fn view_sql(state: &SessionState, path: &str) -> Result<String> {
    let lit = sql_literal(path);
    let topics = run(
        state,
        &format!("SELECT DISTINCT topic, message_type FROM topics({lit}) ORDER BY topic"),
    )
    .await?;
    let mut parts = Vec::new();
    for batch in &topics {
        let topic = cast(batch.column(0), &DataType::Utf8)?;
        let kind = cast(batch.column(1), &DataType::Utf8)?;
        let (topic, kind) = (topic.as_string::<i32>(), kind.as_string::<i32>());
        for i in 0..batch.num_rows() {
            if topic.is_null(i) || kind.is_null(i) || !TRANSFORM_TYPES.contains(&kind.value(i)) {
                continue;
            }
            let name = topic.value(i);
            let read = format!("read_topic({lit}, {})", sql_literal(name));
            let probe = state
                .create_logical_plan(&format!("SELECT * FROM {read} LIMIT 0"))
                .await?;
            let fields = probe.schema().as_arrow().fields().clone();
            parts.push(topic_sql(&read, name, kind.value(i), &fields)?);
        }
    }
    if parts.is_empty() {
        parts.push(empty_sql());
    }
    Ok(parts.join("\nUNION ALL\n"))
}

async fn run(
    state: &SessionState,
    sql: &str,
) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>> {
    let plan = state.create_logical_plan(sql).await?;
    DataFrame::new(state.clone(), plan).collect().await
}

/// Where one transform's fields are, for a topic's decoded shape.
struct Shape {
    stamp: String,
    stamp_type: DataType,
    parent: String,
    child: String,
    translation: String,
    rotation: String,
}

fn field<'a>(fields: &'a Fields, name: &str) -> Option<&'a Field> {
    fields.iter().find(|f| f.name() == name).map(|f| f.as_ref())
}

fn children(f: &Field) -> Option<&Fields> {
    match f.data_type() {
        DataType::Struct(fields) => Some(fields),
        _ => None,
    }
}

/// The shape of one transform whose fields are `fields`, reached by
/// `at(name)`: ROS's `header` / `child_frame_id` / `transform`, or
/// Foxglove's `timestamp` / `parent_frame_id` / `child_frame_id` /
/// `translation` / `rotation`.
fn shape(fields: &Fields, at: &dyn Fn(&str) -> String) -> Option<Shape> {
    if let (Some(header), Some(_), Some(transform)) = (
        field(fields, "header"),
        field(fields, "child_frame_id"),
        field(fields, "transform"),
    ) {
        let header_fields = children(header)?;
        let stamp = field(header_fields, "stamp")?;
        field(header_fields, "frame_id")?;
        let transform_fields = children(transform)?;
        field(transform_fields, "translation")?;
        field(transform_fields, "rotation")?;
        let h = at("header");
        let t = at("transform");
        return Some(Shape {
            stamp: format!("{h}['stamp']"),
            stamp_type: stamp.data_type().clone(),
            parent: format!("{h}['frame_id']"),
            child: at("child_frame_id"),
            translation: format!("{t}['translation']"),
            rotation: format!("{t}['rotation']"),
        });
    }
    let stamp = field(fields, "timestamp")?;
    for name in [
        "parent_frame_id",
        "child_frame_id",
        "translation",
        "rotation",
    ] {
        field(fields, name)?;
    }
    Some(Shape {
        stamp: at("timestamp"),
        stamp_type: stamp.data_type().clone(),
        parent: at("parent_frame_id"),
        child: at("child_frame_id"),
        translation: at("translation"),
        rotation: at("rotation"),
    })
}

/// The query of one topic: its transforms unnested (a list field
/// `transforms`) or one per message.
fn topic_sql(read: &str, topic: &str, kind: &str, fields: &Fields) -> Result<String> {
    let listed = field(fields, "transforms").and_then(|f| match f.data_type() {
        DataType::List(item) | DataType::LargeList(item) => children(item).cloned(),
        _ => None,
    });
    let (shape, from) = match listed {
        Some(item) => (
            shape(&item, &|name| format!("t['{name}']")),
            format!(
                "(SELECT {file}, {time}, unnest(transforms) AS t FROM {read})",
                file = names::FILE,
                time = names::LOG_TIME
            ),
        ),
        None => (
            shape(fields, &|name| format!("\"{name}\"")),
            read.to_string(),
        ),
    };
    let shape = shape.ok_or_else(|| {
        DataFusionError::Plan(format!(
            "transforms(): topic \"{topic}\" of type {kind} has no transform fields this reader knows (header.stamp, header.frame_id, child_frame_id, transform; or timestamp, parent_frame_id, child_frame_id, translation, rotation)"
        ))
    })?;
    let is_static = topic.ends_with("tf_static");
    Ok(format!(
        "SELECT {file} AS file, {topic_lit} AS topic, {time} AS log_time, {stamp} AS stamp, \
         CAST({parent} AS VARCHAR) AS parent_frame, CAST({child} AS VARCHAR) AS child_frame, \
         {translation} AS translation, {rotation} AS rotation, {is_static} AS is_static FROM {from}",
        file = names::FILE,
        topic_lit = sql_literal(topic),
        time = names::LOG_TIME,
        stamp = stamp_sql(&shape.stamp, &shape.stamp_type),
        parent = shape.parent,
        child = shape.child,
        translation = vector_sql(&shape.translation),
        rotation = rotation_sql(&shape.rotation),
    ))
}

/// The stamp as `Timestamp(ns, "UTC")`: kept when it is one, converted from
/// a `{sec, nsec}` struct (JSON) or nanoseconds.
fn stamp_sql(e: &str, t: &DataType) -> String {
    const UTC_NS: &str = "'Timestamp(ns, \"UTC\")'";
    match t {
        DataType::Timestamp(TimeUnit::Nanosecond, Some(tz)) if tz.as_ref() == "UTC" => {
            e.to_string()
        }
        DataType::Struct(fields) => {
            let nanos = ["nsec", "nanosec", "nanos"]
                .into_iter()
                .find(|n| field(fields, n).is_some())
                .unwrap_or("nsec");
            let secs = ["sec", "seconds", "secs"]
                .into_iter()
                .find(|n| field(fields, n).is_some())
                .unwrap_or("sec");
            format!(
                "arrow_cast(CAST({e}['{secs}'] AS BIGINT) * 1000000000 + CAST({e}['{nanos}'] AS BIGINT), {UTC_NS})"
            )
        }
        _ => format!("arrow_cast({e}, {UTC_NS})"),
    }
}

fn vector_sql(e: &str) -> String {
    let c = |n: &str| format!("'{n}', coalesce(CAST({e}['{n}'] AS DOUBLE), 0.0)");
    format!("named_struct({}, {}, {})", c("x"), c("y"), c("z"))
}

fn rotation_sql(e: &str) -> String {
    let c = |n: &str| format!("'{n}', coalesce(CAST({e}['{n}'] AS DOUBLE), 0.0)");
    format!(
        "named_struct({}, {}, {}, 'w', CASE WHEN {e} IS NULL THEN 1.0 ELSE coalesce(CAST({e}['w'] AS DOUBLE), 0.0) END)",
        c("x"),
        c("y"),
        c("z")
    )
}

/// No transform topic: no rows, the same columns.
fn empty_sql() -> String {
    let null_vec = "named_struct('x', CAST(NULL AS DOUBLE), 'y', CAST(NULL AS DOUBLE), 'z', CAST(NULL AS DOUBLE))";
    let null_rot = "named_struct('x', CAST(NULL AS DOUBLE), 'y', CAST(NULL AS DOUBLE), 'z', CAST(NULL AS DOUBLE), 'w', CAST(NULL AS DOUBLE))";
    let ns = "arrow_cast(NULL, 'Timestamp(ns, \"UTC\")')";
    format!(
        "SELECT CAST(NULL AS VARCHAR) AS file, CAST(NULL AS VARCHAR) AS topic, {ns} AS log_time, \
         {ns} AS stamp, CAST(NULL AS VARCHAR) AS parent_frame, CAST(NULL AS VARCHAR) AS child_frame, \
         {null_vec} AS translation, {null_rot} AS rotation, CAST(NULL AS BOOLEAN) AS is_static WHERE false"
    )
}
