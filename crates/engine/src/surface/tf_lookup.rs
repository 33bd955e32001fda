//! `tf_lookup(file, target_frame, source_frame, time [, 'strict'])`: the
//! pose of `source_frame` in `target_frame` at `time`, from the transforms
//! of recording `file`, as tf2's `lookupTransform` gives it.
//!
//! The result is a struct `x`, `y`, `z`, `qx`, `qy`, `qz`, `qw` (`Float64`):
//! the source frame's origin and axes in the target frame. The chain is
//! resolved through the tree at any depth, static and dynamic links mixed, in
//! either direction; each dynamic link is interpolated between its two
//! nearest stamps (see [`logsql_transforms::buffer`]). NULL where the chain
//! is broken, a frame is unknown or the time is outside a link's data; with
//! `'strict'` those are errors naming the link and the time. `time` is a
//! timestamp or nanoseconds since the epoch; NULL arguments give NULL.
//!
//! Each recording's transforms ([`super::transforms`]) are read once, by a
//! query on the session that asked (so its data roots, plan checks and
//! limits apply), and kept for the session: at most [`KEPT_RECORDINGS`]
//! recordings, a local file's kept transforms dropped when its size or
//! modification time changes. A recording holding more than
//! [`MAX_TRANSFORMS`] transforms is refused.

use std::sync::{Arc, Weak};
use std::time::SystemTime;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Builder, StructArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Float64Type, Int64Type, TimeUnit};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::{DataFrame, SessionContext};
use futures::StreamExt;
use logsql_transforms::{LookupError, Pose, Quat, TransformBuffer, TransformBufferBuilder, Vec3};
use parking_lot::{Mutex, RwLock};

use super::table_functions::sql_literal;
use crate::units::rfc3339;

/// How many recordings' transforms a session keeps.
pub const KEPT_RECORDINGS: usize = 16;

/// The most transforms one recording may hold for lookups.
pub const MAX_TRANSFORMS: usize = 20_000_000;

const USAGE: &str = "tf_lookup(file, target_frame, source_frame, time [, 'strict']), e.g. tf_lookup(file, 'map', 'base_link', log_time)";

/// Registers `tf_lookup` on `ctx` (it reads transforms through `ctx`'s session).
///
/// The reads go through `ctx`'s live session; when `ctx` is gone (a
/// `DataFrame` outlives the context it was planned on, as Python's results
/// do), through a copy of the session as it was when `tf_lookup` was
/// registered (its data roots, stores and functions, not options set later).
/// Call it last, when everything else is registered.
pub fn register(ctx: &SessionContext) {
    let session = Arc::downgrade(&ctx.state_ref());
    let registered = ctx.state();
    ctx.register_udf(ScalarUDF::new_from_impl(TfLookup {
        signature: Signature::user_defined(Volatility::Stable),
        session,
        registered,
        kept: Mutex::new(Vec::new()),
    }));
}

/// The struct `tf_lookup` returns.
pub fn pose_type() -> DataType {
    DataType::Struct(pose_fields())
}

fn pose_fields() -> Fields {
    ["x", "y", "z", "qx", "qy", "qz", "qw"]
        .into_iter()
        .map(|n| Field::new(n, DataType::Float64, true))
        .collect()
}

/// What identifies a recording's state: its location, and for a local file
/// its size and modification time.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    file: String,
    version: Option<(u64, SystemTime)>,
}

impl Key {
    fn of(file: &str) -> Self {
        let local = !file.contains("://") || file.starts_with("file://");
        let path = file.strip_prefix("file://").unwrap_or(file);
        let version = local
            .then(|| std::fs::metadata(path).ok())
            .flatten()
            .and_then(|m| Some((m.len(), m.modified().ok()?)));
        Key {
            file: file.to_string(),
            version,
        }
    }
}

/// One recording's transforms, loaded once (others asking wait).
type Slot = Arc<Mutex<Option<Arc<TransformBuffer>>>>;

struct TfLookup {
    signature: Signature,
    session: Weak<RwLock<SessionState>>,
    /// The session as it was at registration (it holds no `tf_lookup`, so
    /// no cycle), for when `session` is gone.
    registered: SessionState,
    /// Most recently used last.
    kept: Mutex<Vec<(Key, Slot)>>,
}

impl std::fmt::Debug for TfLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TfLookup")
    }
}

impl PartialEq for TfLookup {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for TfLookup {}

impl std::hash::Hash for TfLookup {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        "tf_lookup".hash(state)
    }
}

fn is_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    ) || matches!(t, DataType::Dictionary(_, v) if is_text(v))
}

impl ScalarUDFImpl for TfLookup {
    fn name(&self) -> &str {
        "tf_lookup"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if !matches!(arg_types.len(), 4 | 5) {
            return Err(DataFusionError::Plan(format!(
                "tf_lookup takes 4 or 5 arguments: {USAGE}"
            )));
        }
        let mut out = Vec::with_capacity(arg_types.len());
        for (i, t) in arg_types.iter().enumerate() {
            out.push(match i {
                3 => match t {
                    DataType::Timestamp(_, _) => {
                        DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
                    }
                    t if t.is_integer() || *t == DataType::Null => DataType::Int64,
                    other => {
                        return Err(DataFusionError::Plan(format!(
                            "tf_lookup: the time must be a timestamp or nanoseconds, not {other}: {USAGE}"
                        )));
                    }
                },
                _ if is_text(t) => DataType::Utf8,
                _ => {
                    return Err(DataFusionError::Plan(format!(
                        "tf_lookup: argument {} must be text, not {t}: {USAGE}",
                        i + 1
                    )));
                }
            });
        }
        Ok(out)
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(pose_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let strict = match args.args.get(4) {
            None => false,
            Some(ColumnarValue::Scalar(s)) => match s.to_string().as_str() {
                "strict" => true,
                "null" => false,
                other => {
                    return Err(DataFusionError::Execution(format!(
                        "tf_lookup: the fifth argument is 'strict' or 'null', not '{other}'"
                    )));
                }
            },
            Some(_) => {
                return Err(DataFusionError::Execution(
                    "tf_lookup: the fifth argument must be a constant ('strict' or 'null')".into(),
                ));
            }
        };
        let n = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args[..4])?;
        let text = |a: &ArrayRef| cast(a, &DataType::Utf8);
        let (files, targets, sources) = (text(&arrays[0])?, text(&arrays[1])?, text(&arrays[2])?);
        let (files, targets, sources) = (
            files.as_string::<i32>(),
            targets.as_string::<i32>(),
            sources.as_string::<i32>(),
        );
        let times = cast(&arrays[3], &DataType::Int64)?;
        let times = times.as_primitive::<Int64Type>();

        let mut out = PoseBuilder::new(n);
        let mut scratch = Vec::new();
        // The buffer of the previous row's file, and its frames' numbers.
        let mut current: Option<(String, Arc<TransformBuffer>)> = None;
        let mut frames: Option<(String, String, Result<(_, _), LookupError>)> = None;
        for i in 0..n {
            if files.is_null(i) || targets.is_null(i) || sources.is_null(i) || times.is_null(i) {
                out.append(None);
                continue;
            }
            let (file, target, source, time) = (
                files.value(i),
                targets.value(i),
                sources.value(i),
                times.value(i),
            );
            if current.as_ref().is_none_or(|(f, _)| f != file) {
                current = Some((file.to_string(), self.buffer(file)?));
                frames = None;
            }
            let buffer = &current.as_ref().expect("set above").1;
            if frames
                .as_ref()
                .is_none_or(|(t, s, _)| t != target || s != source)
            {
                let id = |name: &str| {
                    buffer.frame(name).ok_or_else(|| LookupError::UnknownFrame {
                        frame: name.to_string(),
                    })
                };
                let ids = id(target).and_then(|t| Ok((t, id(source)?)));
                frames = Some((target.to_string(), source.to_string(), ids));
            }
            let ids = &frames.as_ref().expect("set above").2;
            let found = ids
                .clone()
                .and_then(|(t, s)| buffer.lookup_ids(t, s, time, &mut scratch));
            match found {
                Ok(pose) => out.append(Some(pose)),
                Err(e) if strict => {
                    return Err(DataFusionError::Execution(format!(
                        "tf_lookup: {file}: \"{source}\" in \"{target}\" at {} ({time} ns): {e}",
                        rfc3339(time)
                    )));
                }
                Err(_) => out.append(None),
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

impl TfLookup {
    /// `file`'s transforms, read now or kept from before.
    fn buffer(&self, file: &str) -> Result<Arc<TransformBuffer>> {
        let key = Key::of(file);
        let slot = {
            let mut kept = self.kept.lock();
            kept.retain(|(k, _)| k.file != key.file || *k == key);
            let slot = match kept.iter().position(|(k, _)| *k == key) {
                Some(i) => kept.remove(i).1,
                None => Slot::default(),
            };
            kept.push((key, Arc::clone(&slot)));
            if kept.len() > KEPT_RECORDINGS {
                kept.remove(0);
            }
            slot
        };
        let mut loaded = slot.lock();
        if let Some(buffer) = loaded.as_ref() {
            return Ok(Arc::clone(buffer));
        }
        let buffer = Arc::new(self.load(file).map_err(|e| {
            DataFusionError::Execution(format!("tf_lookup: reading the transforms of {file}: {e}"))
        })?);
        *loaded = Some(Arc::clone(&buffer));
        Ok(buffer)
    }

    /// Reads `file`'s transforms with a query on the session, on a thread
    /// of its own (this runs inside an executing plan).
    fn load(&self, file: &str) -> Result<TransformBuffer> {
        let state = match self.session.upgrade() {
            Some(live) => live.read().clone(),
            None => self.registered.clone(),
        };
        let sql = format!(
            "SELECT stamp, parent_frame, child_frame, translation, rotation, is_static \
             FROM transforms({}) ORDER BY log_time",
            sql_literal(file)
        );
        std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
                    .block_on(read_buffer(state, &sql))
            })
            .join()
            .unwrap_or_else(|_| {
                Err(DataFusionError::Internal(
                    "the reading thread panicked".into(),
                ))
            })
        })
    }
}

async fn read_buffer(state: SessionState, sql: &str) -> Result<TransformBuffer> {
    let plan = state.create_logical_plan(sql).await?;
    let mut stream = DataFrame::new(state, plan).execute_stream().await?;
    let mut builder = TransformBufferBuilder::new();
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let stamps = cast(batch.column(0), &DataType::Int64)?;
        let stamps = stamps.as_primitive::<Int64Type>();
        let parents = cast(batch.column(1), &DataType::Utf8)?;
        let children = cast(batch.column(2), &DataType::Utf8)?;
        let (parents, children) = (parents.as_string::<i32>(), children.as_string::<i32>());
        let t = batch.column(3).as_struct();
        let r = batch.column(4).as_struct();
        let f = |s: &StructArray, i: usize| s.column(i).as_primitive::<Float64Type>().clone();
        let (tx, ty, tz) = (f(t, 0), f(t, 1), f(t, 2));
        let (rx, ry, rz, rw) = (f(r, 0), f(r, 1), f(r, 2), f(r, 3));
        let statics = batch.column(5).as_boolean();
        for i in 0..batch.num_rows() {
            if stamps.is_null(i) || parents.is_null(i) || children.is_null(i) {
                continue;
            }
            let pose = Pose {
                translation: Vec3::new(tx.value(i), ty.value(i), tz.value(i)),
                rotation: Quat::new(rx.value(i), ry.value(i), rz.value(i), rw.value(i)),
            };
            // tf2 drops what it rejects too; the rows stay in transforms().
            let _ = builder.insert(
                parents.value(i),
                children.value(i),
                stamps.value(i),
                pose,
                statics.value(i),
            );
            if builder.len() > MAX_TRANSFORMS {
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "the recording holds more than {MAX_TRANSFORMS} transforms, the most tf_lookup keeps for one recording"
                )));
            }
        }
    }
    Ok(builder.build())
}

/// Builds the pose column.
struct PoseBuilder {
    columns: [Float64Builder; 7],
    valid: Vec<bool>,
}

impl PoseBuilder {
    fn new(n: usize) -> Self {
        PoseBuilder {
            columns: std::array::from_fn(|_| Float64Builder::with_capacity(n)),
            valid: Vec::with_capacity(n),
        }
    }

    /// A pose, or NULL (its fields NULL too, so `pose['x']` is NULL).
    fn append(&mut self, pose: Option<Pose>) {
        match pose {
            Some(p) => {
                let (t, q) = (p.translation, p.rotation);
                let values = [t.x, t.y, t.z, q.x, q.y, q.z, q.w];
                for (c, v) in self.columns.iter_mut().zip(values) {
                    c.append_value(v);
                }
            }
            None => self
                .columns
                .iter_mut()
                .for_each(Float64Builder::append_null),
        }
        self.valid.push(pose.is_some());
    }

    fn finish(mut self) -> StructArray {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter_mut()
            .map(|c| Arc::new(c.finish()) as ArrayRef)
            .collect();
        let nulls = NullBuffer::from(self.valid);
        StructArray::new(pose_fields(), arrays, Some(nulls))
    }
}
