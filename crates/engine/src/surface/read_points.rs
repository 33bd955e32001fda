//! `read_points('path', '/lidar')`: a point-cloud topic as one row per cloud,
//! with its points as a `list<struct>` column (`UNNEST(points)`: one row per
//! point).
//!
//! Built on `read_topic`: the topic's messages (`sensor_msgs/PointCloud2` in
//! ROS1 or ROS 2, `foxglove.PointCloud` in protobuf) are decoded by the same
//! listing table, with the same time and topic pushdown, and a view projects
//! `log_time`, `frame_id`, `point_count`, `points` and `file` from them. The
//! points come from a scalar function that holds the layout of the topic's
//! first cloud (read once at planning): every cloud is read into that
//! layout with [`logsql_media::points::PointsBuilder`]; a cloud whose fields
//! differ (by name, datatype or count; offsets may differ) or whose bytes do
//! not match its header fails the query with an error naming the file, topic
//! and log_time, or under `logsql.on_error = 'warn'` is a NULL `points` with
//! a warning.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StructArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, Schema, UInt64Type};
use datafusion::catalog::view::ViewTable;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Column, ScalarValue};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::provider_as_source;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility, lit,
};
use datafusion::prelude::SessionContext;

use super::read_topic;
use super::table_functions::{literal_text, plan_on_thread};
use super::value_caps;
use crate::scanner::options::{LogsqlOptions, OnError};
use crate::scanner::schema::col as names;
use logsql_media::MediaError;
use logsql_media::points::{Cloud, PointField, PointType, PointsBuilder};

/// Registers `read_points`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udtf("read_points", Arc::new(ReadPointsFunction));
}

#[derive(Debug)]
struct ReadPointsFunction;

impl TableFunctionImpl for ReadPointsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let texts: Vec<Option<String>> = args.exprs().iter().map(literal_text).collect();
        let [Some(path), Some(topic)] = texts.as_slice() else {
            return Err(DataFusionError::Plan(
                "read_points() takes a path (file, directory or glob) and a point-cloud topic, e.g. read_points('run.bag', '/lidar')".into(),
            ));
        };
        let (path, topic) = (path.clone(), topic.clone());
        plan_on_thread(
            &args,
            &format!("read_points('{path}', '{topic}')"),
            |state| async move { plan(&state, &path, &topic).await },
        )
    }
}

/// How a topic's messages spell a cloud.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Convention {
    /// `sensor_msgs/PointCloud2`: `header.frame_id`, `height`, `width`,
    /// `fields` (`name`, `offset`, `datatype`, `count`), `is_bigendian`,
    /// `point_step`, `row_step`, `data`.
    Ros,
    /// `foxglove.PointCloud`: `frame_id`, `point_stride`, `fields` (`name`,
    /// `offset`, `type`), `data`; little-endian, one row.
    Foxglove,
}

impl Convention {
    /// The convention of a `read_topic` schema, if it is a point cloud.
    fn of(schema: &Schema) -> Option<Self> {
        let has = |n: &str| schema.field_with_name(n).is_ok();
        let common = has("fields") && has("data");
        if common
            && [
                "header",
                "height",
                "width",
                "is_bigendian",
                "point_step",
                "row_step",
            ]
            .iter()
            .all(|n| has(n))
        {
            Some(Convention::Ros)
        } else if common && has("point_stride") && has("frame_id") {
            Some(Convention::Foxglove)
        } else {
            None
        }
    }
}

async fn plan(state: &SessionState, path: &str, topic: &str) -> Result<Arc<dyn TableProvider>> {
    let what = format!("read_points('{path}', '{topic}')");
    let inner = read_topic::plan(state, path, topic, false).await?;
    let schema = inner.schema();
    let c = |n: &str| Expr::Column(Column::from_name(n));
    let Some(convention) = Convention::of(&schema) else {
        let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        return Err(DataFusionError::Plan(format!(
            "{what}: topic {topic:?} does not hold point clouds (sensor_msgs/PointCloud2 or foxglove.PointCloud): its messages have the fields {}",
            columns.join(", ")
        )));
    };
    // The points' bytes: binary, or base64 text in JSON-encoded clouds.
    let data = match schema.field_with_name("data")?.data_type() {
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => c("data"),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            datafusion::functions::encoding::expr_fn::decode(c("data"), lit("base64"))
        }
        other => {
            return Err(DataFusionError::Plan(format!(
                "{what}: the clouds' data is {other}, not bytes"
            )));
        }
    };
    let layout = first_layout(state, &inner, convention, topic).await?;
    PointsBuilder::new(&layout).map_err(|e| DataFusionError::Plan(format!("{what}: {e}")))?;
    let options = LogsqlOptions::from_config(state.config_options());
    let udf = ScalarUDF::new_from_impl(DecodePoints {
        signature: Signature::any(9, Volatility::Immutable),
        convention,
        layout,
        topic: topic.to_string(),
        warn: options.on_error == OnError::Warn,
    });
    let null = || lit(ScalarValue::Null);
    let (frame_id, point_count, args) = match convention {
        Convention::Ros => (
            get_field(c("header"), "frame_id"),
            cast_expr(c("width"), DataType::Int64) * cast_expr(c("height"), DataType::Int64),
            vec![
                c("fields"),
                c("is_bigendian"),
                c("point_step"),
                c("row_step"),
                c("width"),
                c("height"),
                data.clone(),
                c(names::LOG_TIME),
                c(names::FILE),
            ],
        ),
        Convention::Foxglove => (
            c("frame_id"),
            Expr::Case(datafusion::logical_expr::Case {
                expr: None,
                when_then_expr: vec![(
                    Box::new(c("point_stride").gt(lit(0u32))),
                    Box::new(
                        cast_expr(
                            // logsql's `length`: bytes of a binary value.
                            ScalarUDF::new_from_impl(super::functions::Length::default())
                                .call(vec![data.clone()]),
                            DataType::Int64,
                        ) / cast_expr(c("point_stride"), DataType::Int64),
                    ),
                )],
                else_expr: Some(Box::new(lit(0i64))),
            }),
            vec![
                c("fields"),
                lit(false),
                c("point_stride"),
                null(),
                null(),
                null(),
                data,
                c(names::LOG_TIME),
                c(names::FILE),
            ],
        ),
    };
    let view = LogicalPlanBuilder::scan("read_points", provider_as_source(inner), None)?
        .project(vec![
            c(names::LOG_TIME),
            frame_id.alias("frame_id"),
            point_count.alias("point_count"),
            udf.call(args).alias("points"),
            c(names::FILE),
        ])?
        .build()?;
    Ok(Arc::new(ViewTable::new(view, Some(what))))
}

/// `CAST(e AS t)`.
fn cast_expr(e: Expr, t: DataType) -> Expr {
    Expr::Cast(datafusion::logical_expr::Cast::new(Box::new(e), t))
}

/// The layout of the topic's first cloud: the first message with fields of
/// the first file in path order, read with one partition so that the answer
/// does not depend on which partition is quickest. No message: no fields.
async fn first_layout(
    state: &SessionState,
    inner: &Arc<dyn TableProvider>,
    convention: Convention,
    topic: &str,
) -> Result<Vec<PointField>> {
    let mut config = state.config().clone();
    config.options_mut().execution.target_partitions = 1;
    let state = SessionStateBuilder::new_from_existing(state.clone())
        .with_config(config)
        .build();
    let c = |n: &str| Expr::Column(Column::from_name(n));
    let plan = LogicalPlanBuilder::scan("cloud", provider_as_source(Arc::clone(inner)), None)?
        .filter(c("fields").is_not_null())?
        .project(vec![c("fields"), c(names::LOG_TIME), c(names::FILE)])?
        .limit(0, Some(1))?
        .build()?;
    let batches = DataFrame::new(state, plan).collect().await?;
    let Some(batch) = batches.iter().find(|b| b.num_rows() > 0) else {
        return Ok(Vec::new());
    };
    let list = batch.column(0);
    let time = cast(batch.column(1), &DataType::Int64)?;
    let file = cast(batch.column(2), &DataType::Utf8)?;
    let (values, start, end) = list_row(list, 0)?;
    FieldColumns::new(&values, convention)
        .and_then(|cols| cols.fields(start, end))
        .map_err(|e| {
            DataFusionError::Plan(cloud_error(
                file.as_string::<i32>().value(0),
                topic,
                time.as_primitive::<Int64Type>().value(0),
                &e,
            ))
        })
}

/// `file: topic "/t": the point cloud logged at N ns: cause`.
fn cloud_error(file: &str, topic: &str, log_time: i64, e: &MediaError) -> String {
    format!("{file}: topic {topic:?}: the point cloud logged at {log_time} ns: {e}")
}

/// The values of a `fields` list column and row `i`'s range in them.
fn list_row(list: &ArrayRef, i: usize) -> Result<(ArrayRef, usize, usize)> {
    match list.data_type() {
        DataType::List(_) => {
            let l = list.as_list::<i32>();
            let o = l.value_offsets();
            Ok((Arc::clone(l.values()), o[i] as usize, o[i + 1] as usize))
        }
        DataType::LargeList(_) => {
            let l = list.as_list::<i64>();
            let o = l.value_offsets();
            Ok((Arc::clone(l.values()), o[i] as usize, o[i + 1] as usize))
        }
        other => Err(DataFusionError::Plan(format!(
            "point cloud fields are a {other}, not a list"
        ))),
    }
}

/// The columns of the `fields` list's structs, cast to common types.
struct FieldColumns {
    name: ArrayRef,
    offset: ArrayRef,
    /// `datatype` (ROS) or `type` (foxglove): numbers, or enum names.
    kind: ArrayRef,
    count: Option<ArrayRef>,
    convention: Convention,
}

impl FieldColumns {
    fn new(values: &ArrayRef, convention: Convention) -> std::result::Result<Self, MediaError> {
        let bad = |what: String| MediaError::Invalid(what);
        let s: &StructArray = values
            .as_struct_opt()
            .ok_or_else(|| bad(format!("fields are {}, not structs", values.data_type())))?;
        let column = |n: &str| {
            s.column_by_name(n)
                .ok_or_else(|| bad(format!("the point fields have no {n:?}")))
        };
        let to = |a: &ArrayRef, t: &DataType| {
            cast(a, t)
                .map_err(|e| bad(format!("point field column of type {}: {e}", a.data_type())))
        };
        let name = to(column("name")?, &DataType::Utf8)?;
        let offset = to(column("offset")?, &DataType::UInt64)?;
        let kind = match convention {
            Convention::Ros => column("datatype")?,
            Convention::Foxglove => column("type")?,
        };
        let kind = match kind.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => to(kind, &DataType::Utf8)?,
            _ => to(kind, &DataType::UInt64)?,
        };
        let count = match convention {
            Convention::Ros => Some(to(column("count")?, &DataType::UInt64)?),
            Convention::Foxglove => None,
        };
        Ok(Self {
            name,
            offset,
            kind,
            count,
            convention,
        })
    }

    /// The datatype of number `n` in the convention's numbering.
    fn numbered(&self, n: u64) -> std::result::Result<PointType, MediaError> {
        match self.convention {
            Convention::Ros => PointType::from_ros(n),
            Convention::Foxglove => PointType::from_foxglove(n),
        }
    }

    /// The point fields at `start..end`.
    fn fields(&self, start: usize, end: usize) -> std::result::Result<Vec<PointField>, MediaError> {
        let u32_of = |a: &ArrayRef, i: usize, what: &str| {
            let a = a.as_primitive::<UInt64Type>();
            if a.is_null(i) {
                return Err(MediaError::Invalid(format!("a point field has no {what}")));
            }
            u32::try_from(a.value(i)).map_err(|_| {
                MediaError::Invalid(format!("point field {what} {} is too large", a.value(i)))
            })
        };
        let names = self.name.as_string::<i32>();
        (start..end)
            .map(|i| {
                let datatype = match self.kind.data_type() {
                    // A name (protobuf enums), or a number as JSON text (a
                    // JSON Schema `oneOf` of constants).
                    DataType::Utf8 => {
                        let text = self.kind.as_string::<i32>().value(i);
                        match text.trim().parse::<u64>() {
                            Ok(n) => self.numbered(n)?,
                            Err(_) => PointType::from_name(text)?,
                        }
                    }
                    _ => self.numbered(u64::from(u32_of(&self.kind, i, "datatype")?))?,
                };
                Ok(PointField {
                    name: names.value(i).to_string(),
                    offset: u32_of(&self.offset, i, "offset")?,
                    datatype,
                    count: match &self.count {
                        Some(c) => u32_of(c, i, "count")?,
                        None => 1,
                    },
                })
            })
            .collect()
    }
}

/// The scalar function behind `points`: the cloud columns of each row to
/// its points, in the layout fixed at planning.
#[derive(Debug, PartialEq, Eq, Hash)]
struct DecodePoints {
    signature: Signature,
    convention: Convention,
    layout: Vec<PointField>,
    topic: String,
    warn: bool,
}

impl DecodePoints {
    /// A builder of the layout (checked at planning).
    fn builder(&self) -> Result<PointsBuilder> {
        PointsBuilder::new(&self.layout).map_err(|e| DataFusionError::Internal(e.to_string()))
    }
}

impl ScalarUDFImpl for DecodePoints {
    fn name(&self) -> &str {
        "logsql_read_points"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.builder()?.data_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [fields, big, step, row_step, width, height, data, time, file] = arrays.as_slice()
        else {
            return Err(DataFusionError::Internal(format!(
                "logsql_read_points takes 9 arguments, got {}",
                arrays.len()
            )));
        };
        let u64s = |a: &ArrayRef| cast(a, &DataType::UInt64);
        let (step, row_step, width, height) =
            (u64s(step)?, u64s(row_step)?, u64s(width)?, u64s(height)?);
        let big = cast(big, &DataType::Boolean)?;
        let data = cast(data, &DataType::Binary)?;
        let time = cast(time, &DataType::Int64)?;
        let file = cast(file, &DataType::Utf8)?;
        let (big, data, time, file) = (
            big.as_boolean(),
            data.as_binary::<i32>(),
            time.as_primitive::<Int64Type>(),
            file.as_string::<i32>(),
        );
        let (step, row_step, width, height) = (
            step.as_primitive::<UInt64Type>(),
            row_step.as_primitive::<UInt64Type>(),
            width.as_primitive::<UInt64Type>(),
            height.as_primitive::<UInt64Type>(),
        );
        // What the points column holds so far, under the cap on one value.
        let cap = value_caps::max_value_bytes(&args.config_options);
        let mut made = 0u128;
        let mut builder = self.builder()?;
        let mut columns: Option<std::result::Result<FieldColumns, MediaError>> = None;
        for i in 0..n {
            if fields.is_null(i) || data.is_null(i) || step.is_null(i) {
                builder.append_null();
                continue;
            }
            let (values, start, end) = list_row(fields, i)?;
            let cols = columns.get_or_insert_with(|| FieldColumns::new(&values, self.convention));
            let u32_of = |a: &datafusion::arrow::array::UInt64Array, what: &str| {
                if a.is_null(i) {
                    return Err(MediaError::Invalid(format!("the cloud has no {what}")));
                }
                u32::try_from(a.value(i))
                    .map_err(|_| MediaError::Invalid(format!("{what} {} is too large", a.value(i))))
            };
            let read = |builder: &mut PointsBuilder| -> std::result::Result<u128, MediaError> {
                let cols = cols
                    .as_ref()
                    .map_err(|e| MediaError::Invalid(e.to_string()))?;
                let point_fields = cols.fields(start, end)?;
                let cloud = match self.convention {
                    Convention::Ros => Cloud {
                        fields: &point_fields,
                        width: u32_of(width, "width")?,
                        height: u32_of(height, "height")?,
                        point_step: u32_of(step, "point_step")?,
                        row_step: u32_of(row_step, "row_step")?,
                        is_bigendian: big.is_valid(i) && big.value(i),
                        data: data.value(i),
                    },
                    Convention::Foxglove => Cloud::foxglove(
                        &point_fields,
                        u32_of(step, "point_stride")?,
                        data.value(i),
                    )?,
                };
                // Counted from the header before anything is unpacked: at
                // most 8 bytes a value.
                let values: u128 = point_fields
                    .iter()
                    .map(|f| u128::from(f.count.max(1)))
                    .sum();
                let bytes = u128::from(cloud.width) * u128::from(cloud.height) * values.max(1) * 8;
                if made + bytes > u128::from(cap) {
                    let error = value_caps::too_large("read_points' points", made + bytes, cap);
                    return Err(MediaError::Limit(format!(
                        "{} (a batch's clouds together; a NULL points value under \
                         logsql.on_error = 'warn')",
                        error.message()
                    )));
                }
                builder.append(&cloud)?;
                Ok(bytes)
            };
            match read(&mut builder) {
                Ok(bytes) => made += bytes,
                Err(e) => {
                    let msg = cloud_error(file.value(i), &self.topic, time.value(i), &e);
                    if !self.warn {
                        return Err(DataFusionError::Execution(format!(
                            "{msg} (SET logsql.on_error = 'warn', or the CLI's --on-error warn, for a NULL points value and a warning)"
                        )));
                    }
                    log::warn!("{msg}: points is NULL");
                    builder.append_null();
                }
            }
        }
        Ok(ColumnarValue::Array(Arc::new(builder.finish())))
    }
}
