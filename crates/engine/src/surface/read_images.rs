//! `read_images('path', '/camera')`: a camera topic's images, one row per
//! message, with columns `log_time`, `frame_id`, `encoding`, `width`,
//! `height`, `image` (the [`image_type`] struct) and `file`.
//!
//! It is [`read_topic`](super::read_topic) with each batch mapped: the
//! topic's messages (`sensor_msgs/Image`, `sensor_msgs/CompressedImage`,
//! `foxglove.RawImage`, `foxglove.CompressedImage`, in any of the encodings
//! `read_topic` decodes) are decoded by the shared scan, which prunes by time
//! and selects the topic as for `read_topic` (filters on `log_time` and
//! `file` are handed to it), and [`ImagesExec`] turns each message's fields
//! into an image value: the codec and size of a compressed image from its
//! header (no pixels are decoded), a raw image checked against its sizes. An
//! image that fails is an error naming the file, topic and log time, or under
//! `logsql.on_error = 'warn'` a null `image` and a warning. With a third
//! argument `'unchecked'` every image is kept as its message states it
//! (a compressed one whose header does not read has size 0 x 0), so that
//! the function or writer decoding it decides: the LeRobot dataset's query
//! uses it, so that `skip_bad_episodes` can skip an episode whose images do
//! not decode. Every image carries its `source` (file, topic, log time),
//! which the image functions' errors name.

use std::fmt;
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, RecordBatch, StringArray, new_null_array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Field, Schema, SchemaRef, TimestampNanosecondType, UInt32Type,
};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::Column as PhysicalColumn;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use logsql_media::images::Image;
use logsql_media::images::arrow::{ImageBuilder, image_type};

use super::read_topic;
use super::table_functions::{literal_text, plan_on_thread};
use crate::scanner::options::{LogsqlOptions, OnError};
use crate::scanner::schema::{col as names, timestamp_type};

/// Registers `read_images`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udtf("read_images", Arc::new(ReadImagesFunction));
}

#[derive(Debug)]
struct ReadImagesFunction;

impl TableFunctionImpl for ReadImagesFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let texts: Vec<Option<String>> = args.exprs().iter().map(literal_text).collect();
        let usage = "read_images() takes a path (file, directory or glob), a camera topic and optionally 'unchecked', e.g. read_images('run.mcap', '/camera/image_raw')";
        let (path, topic, unchecked) = match texts.as_slice() {
            [Some(path), Some(topic)] => (path.clone(), topic.clone(), false),
            [Some(path), Some(topic), Some(mode)] if mode == "unchecked" => {
                (path.clone(), topic.clone(), true)
            }
            [Some(_), Some(_), Some(mode)] => {
                return Err(DataFusionError::Plan(format!(
                    "read_images(): unknown mode '{mode}' (the one mode is 'unchecked'); {usage}"
                )));
            }
            _ => return Err(DataFusionError::Plan(usage.into())),
        };
        plan_on_thread(
            &args,
            &format!("read_images('{path}', '{topic}')"),
            |state| async move {
                let messages = read_topic::plan(&state, &path, &topic, false).await?;
                let table = ImagesTable::new(messages, &path, &topic, unchecked)?;
                Ok(Arc::new(table) as Arc<dyn TableProvider>)
            },
        )
    }
}

/// The columns of `read_images`.
static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new(names::LOG_TIME, timestamp_type(), false),
        Field::new("frame_id", DataType::Utf8, true),
        Field::new("encoding", DataType::Utf8, true),
        Field::new("width", DataType::UInt32, true),
        Field::new("height", DataType::UInt32, true),
        Field::new("image", image_type(), true),
        Field::new(names::FILE, DataType::Utf8, false),
    ]))
});

/// Where an image message keeps each of its fields, as columns of
/// `read_topic`'s table.
#[derive(Debug, Clone)]
struct Layout {
    compressed: bool,
    /// `header` (a struct with `frame_id`) or `frame_id`, if any.
    frame_id: Option<(String, bool)>,
    /// Inner columns read, in order: log_time, file, encoding or format,
    /// data, then (raw) width, height, step and, if present, is_bigendian,
    /// then the frame id column if any.
    inner: Vec<usize>,
    has_bigendian: bool,
    /// `'unchecked'`: images as their messages state them, whether or not
    /// they decode (see the module documentation).
    unchecked: bool,
}

/// `read_images`' table: `read_topic`'s table of the topic, mapped.
#[derive(Debug)]
struct ImagesTable {
    messages: Arc<dyn TableProvider>,
    layout: Layout,
    topic: String,
}

impl ImagesTable {
    fn new(
        messages: Arc<dyn TableProvider>,
        path: &str,
        topic: &str,
        unchecked: bool,
    ) -> Result<Self> {
        let schema = messages.schema();
        let index = |name: &str| schema.index_of(name).ok();
        let has = |name: &str| index(name).is_some();
        let compressed = has("format") && has("data") && !has("width");
        let raw = ["width", "height", "encoding", "step", "data"]
            .iter()
            .all(|f| has(f));
        if !compressed && !raw {
            let fields: Vec<&str> = schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .filter(|n| ![names::LOG_TIME, names::PUBLISH_TIME, names::FILE].contains(n))
                .collect();
            return Err(DataFusionError::Plan(format!(
                "read_images('{path}', '{topic}'): the topic's messages are not images (sensor_msgs/Image, sensor_msgs/CompressedImage, foxglove.RawImage or foxglove.CompressedImage): their fields are {}",
                fields.join(", ")
            )));
        }
        let frame_id = match schema.field_with_name("header").map(|f| f.data_type()) {
            Ok(DataType::Struct(f)) if f.iter().any(|f| f.name() == "frame_id") => {
                Some(("header".to_string(), true))
            }
            _ if has("frame_id") => Some(("frame_id".to_string(), false)),
            _ => None,
        };
        let mut names_read = vec![
            names::LOG_TIME,
            names::FILE,
            if compressed { "format" } else { "encoding" },
            "data",
        ];
        let has_bigendian = !compressed && has("is_bigendian");
        if !compressed {
            names_read.extend(["width", "height", "step"]);
            if has_bigendian {
                names_read.push("is_bigendian");
            }
        }
        if let Some((name, _)) = &frame_id {
            names_read.push(name);
        }
        let inner = names_read
            .iter()
            .map(|n| schema.index_of(n))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Self {
            messages,
            layout: Layout {
                compressed,
                frame_id,
                inner,
                has_bigendian,
                unchecked,
            },
            topic: topic.to_string(),
        })
    }

    /// `e` with its columns unqualified, as `read_topic`'s table names them.
    fn unqualified(e: &Expr) -> Result<Expr> {
        Ok(e.clone()
            .transform(|e| {
                Ok(match e {
                    Expr::Column(c) if c.relation.is_some() => {
                        Transformed::yes(Expr::Column(Column::new_unqualified(c.name)))
                    }
                    e => Transformed::no(e),
                })
            })?
            .data)
    }

    /// Whether `e` only reads columns `read_topic`'s table has alike
    /// (`log_time`, `file`), so that it can be handed down.
    fn passes_down(e: &Expr) -> bool {
        e.column_refs()
            .iter()
            .all(|c| c.name == names::LOG_TIME || c.name == names::FILE)
    }
}

#[async_trait]
impl TableProvider for ImagesTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&SCHEMA)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Filters on `log_time` and `file` are applied exactly, below the
    /// images, where the scan's own pruning and row filter take them.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|e| {
                if Self::passes_down(e) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let down: Vec<Expr> = filters
            .iter()
            .filter(|e| Self::passes_down(e))
            .map(Self::unqualified)
            .collect::<Result<_>>()?;
        // A limit may stop the scan early only when no filter sits above it.
        let limit = limit.filter(|_| down.is_empty());
        let mut input = self
            .messages
            .scan(state, Some(&self.layout.inner), &[], limit)
            .await?;
        if let Some(predicate) = conjunction(down) {
            // A filter right above the scan, which DataFusion's filter
            // pushdown hands to the scan (chunk pruning, exact row filter).
            let schema = DFSchema::try_from(input.schema())?;
            let predicate = state.create_physical_expr(predicate, &schema)?;
            input = Arc::new(FilterExec::try_new(predicate, input)?);
        }
        Ok(Arc::new(ImagesExec::new(
            input,
            self.layout.clone(),
            self.topic.clone(),
            projection.cloned(),
        )?))
    }
}

/// Maps `read_topic` batches of an image topic to `read_images` rows.
#[derive(Debug)]
pub struct ImagesExec {
    input: Arc<dyn ExecutionPlan>,
    layout: Layout,
    topic: String,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl ImagesExec {
    fn new(
        input: Arc<dyn ExecutionPlan>,
        layout: Layout,
        topic: String,
        projection: Option<Vec<usize>>,
    ) -> Result<Self> {
        let schema = match &projection {
            Some(p) => Arc::new(SCHEMA.project(p)?),
            None => Arc::clone(&SCHEMA),
        };
        // Rows keep the scan's order: its orderings by log_time and file (the
        // inner columns 0 and 1) hold for the output's log_time and file,
        // wherever they are projected (each ordering up to its first column
        // not projected).
        let out_at = |inner: usize| {
            let table = match inner {
                0 => 0,
                1 => SCHEMA.index_of(names::FILE).ok()?,
                _ => return None,
            };
            match &projection {
                Some(p) => p.iter().position(|&i| i == table),
                None => Some(table),
            }
        };
        let mut eq = EquivalenceProperties::new(Arc::clone(&schema));
        for ordering in input.equivalence_properties().oeq_class().iter() {
            let mapped: Vec<PhysicalSortExpr> = ordering
                .iter()
                .map_while(|e| {
                    let c = e.expr.downcast_ref::<PhysicalColumn>()?;
                    let at = out_at(c.index())?;
                    let name = schema.field(at).name();
                    Some(PhysicalSortExpr::new(
                        Arc::new(PhysicalColumn::new(name, at)),
                        e.options,
                    ))
                })
                .collect();
            eq.add_ordering(mapped);
        }
        let properties = Arc::new(PlanProperties::new(
            eq,
            input.output_partitioning().clone(),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(Self {
            input,
            layout,
            topic,
            projection,
            schema,
            properties,
        })
    }
}

impl DisplayAs for ImagesExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::TreeRender => write!(f, "topic={}", self.topic),
            _ => write!(f, "ImagesExec: topic={}", self.topic),
        }
    }
}

impl ExecutionPlan for ImagesExec {
    fn name(&self) -> &str {
        "ImagesExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    /// Rows keep the scan's order, and the output's orderings say so (see
    /// [`ImagesExec::new`]). But DataFusion pushes a required order through
    /// a node that maintains its input's order with the same column indices
    /// (as its own input's columns): right only where the output's
    /// `log_time` and `file` sit where the scan has them. Elsewhere (a
    /// projection that puts `file` later) a sort the scan needs (recordings
    /// out of time order) stays above this node, on the right columns.
    fn maintains_input_order(&self) -> Vec<bool> {
        let in_place =
            |inner: usize, name: &str| self.schema.index_of(name).map_or(true, |at| at == inner);
        vec![in_place(0, names::LOG_TIME) && in_place(1, names::FILE)]
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
        Ok(Arc::new(Self::new(
            crate::scanner::unary::only_child(children, "ImagesExec")?,
            self.layout.clone(),
            self.topic.clone(),
            self.projection.clone(),
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let warn = LogsqlOptions::from_config(context.session_config().options()).on_error
            == OnError::Warn;
        let input = self.input.execute(partition, context)?;
        let (layout, topic, projection, schema) = (
            self.layout.clone(),
            self.topic.clone(),
            self.projection.clone(),
            Arc::clone(&self.schema),
        );
        let stream = input.map(move |batch| {
            let rows = images_batch(&batch?, &layout, &topic, warn)?;
            match &projection {
                Some(p) => Ok(rows.project(p)?),
                None => Ok(rows),
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// Column `i` of the inner batch cast to `to`.
fn cast_to(batch: &RecordBatch, i: usize, to: &DataType) -> Result<ArrayRef> {
    Ok(cast(batch.column(i), to)?)
}

/// One inner batch (columns in [`Layout::inner`] order) as `read_images` rows.
fn images_batch(
    batch: &RecordBatch,
    layout: &Layout,
    topic: &str,
    warn: bool,
) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let log_time = batch.column(0).as_primitive::<TimestampNanosecondType>();
    let file = cast_to(batch, 1, &DataType::Utf8)?;
    let file = file.as_string::<i32>();
    let encoding = cast_to(batch, 2, &DataType::Utf8)?;
    let encoding: &StringArray = encoding.as_string::<i32>();
    let data = cast_to(batch, 3, &DataType::Binary)?;
    let data: &BinaryArray = data.as_binary::<i32>();
    let mut next = 4;
    let sizes = if layout.compressed {
        None
    } else {
        let w = cast_to(batch, 4, &DataType::UInt32)?;
        let h = cast_to(batch, 5, &DataType::UInt32)?;
        let s = cast_to(batch, 6, &DataType::UInt32)?;
        next = 7;
        let be = if layout.has_bigendian {
            next = 8;
            Some(cast_to(batch, 7, &DataType::Boolean)?)
        } else {
            None
        };
        Some((w, h, s, be))
    };
    let frame_id: ArrayRef = match &layout.frame_id {
        Some((_, true)) => {
            let header = batch.column(next).as_struct();
            let f = header
                .column_by_name("frame_id")
                .ok_or_else(|| DataFusionError::Internal("header without frame_id".into()))?;
            let f = cast(f, &DataType::Utf8)?;
            // A null header (a message that did not decode) has a null frame id.
            match header.nulls() {
                Some(nulls) => {
                    let merged =
                        datafusion::arrow::buffer::NullBuffer::union(Some(nulls), f.nulls());
                    datafusion::arrow::array::make_array(
                        f.to_data().into_builder().nulls(merged).build()?,
                    )
                }
                None => f,
            }
        }
        Some((_, false)) => cast_to(batch, next, &DataType::Utf8)?,
        None => new_null_array(&DataType::Utf8, n),
    };
    let mut out = ImageBuilder::with_capacity(n);
    for i in 0..n {
        if encoding.is_null(i) || data.is_null(i) {
            out.append(None);
            continue;
        }
        let (enc, bytes) = (encoding.value(i), data.value(i));
        // As the message states it: a compressed image's size is unknown
        // until its header is read (0 x 0).
        let mut stated = Image {
            encoding: enc,
            width: 0,
            height: 0,
            step: 0,
            is_bigendian: false,
            data: bytes,
        };
        let made = match &sizes {
            None => Image::compressed(enc, bytes),
            Some((w, h, s, be)) => {
                let u = |a: &ArrayRef| {
                    let a = a.as_primitive::<UInt32Type>();
                    if a.is_null(i) { 0 } else { a.value(i) }
                };
                let big = be.as_ref().is_some_and(|b| {
                    let b: &BooleanArray = b.as_boolean();
                    !b.is_null(i) && b.value(i)
                });
                (stated.width, stated.height, stated.step) = (u(w), u(h), u(s));
                stated.is_bigendian = big;
                Image::raw(enc, u(w), u(h), u(s), big, bytes)
            }
        };
        let source = format!(
            "{}: topic {topic:?}: the image logged at {} ns",
            file.value(i),
            log_time.value(i)
        );
        match made {
            Ok(image) => out.append_from(Some(&image), Some(&source)),
            // Left to what decodes it, which names the image by its source.
            Err(_) if layout.unchecked => out.append_from(Some(&stated), Some(&source)),
            Err(e) => {
                let message = format!("{source}: {e}");
                if !warn {
                    return Err(DataFusionError::Execution(format!(
                        "{message} (SET logsql.on_error = 'warn' for a null image and a warning instead)"
                    )));
                }
                log::warn!("{message}");
                out.append(None);
            }
        }
    }
    let images = out.finish();
    let columns: Vec<ArrayRef> = vec![
        Arc::clone(batch.column(0)),
        frame_id,
        Arc::clone(images.column(0)),
        Arc::clone(images.column(1)),
        Arc::clone(images.column(2)),
        Arc::new(images),
        Arc::new(file.clone()),
    ];
    Ok(RecordBatch::try_new(Arc::clone(&SCHEMA), columns)?)
}
