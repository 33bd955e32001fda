//! What each column of the query becomes in a LeRobot dataset: the episode
//! index, the time (`timestamp` in seconds or `log_time`), the task, camera
//! features (image values), numeric features (lists, fixed-size lists,
//! structs of numbers or single numbers), and the columns left out
//! (`frame_index`, `index`, `task_index` are recomputed; `file` names the
//! recording in errors).

use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array, cast::AsArray};
use arrow_cast::cast;
use arrow_schema::{DataType, Schema};

use crate::error::{Error, Result};

use logsql_media::images::arrow::image_type;

/// Columns the writer computes itself; the query's are ignored.
const RECOMPUTED: &[&str] = &["frame_index", "index", "task_index"];

/// How time is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeColumn {
    /// Seconds since the episode's start (`timestamp`).
    Seconds(usize),
    /// A timestamp column (`log_time`).
    LogTime(usize),
}

/// What a numeric feature's column holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NumericShape {
    /// A list or fixed-size list of numbers (length fixed by the first row).
    List,
    /// A struct of numbers: its field names are the feature's `names`.
    Struct(Vec<String>),
    /// One number (shape `[1]`).
    Scalar,
}

/// A feature column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeatureKind {
    /// Float32 values.
    Numeric(NumericShape),
    /// Image values (`read_images`' `image`).
    Camera,
}

/// One feature: its column and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureColumn {
    /// The column's index in the query.
    pub index: usize,
    /// The LeRobot key (the column name).
    pub name: String,
    /// What it holds.
    pub kind: FeatureKind,
}

/// The roles of the query's columns.
#[derive(Debug, Clone)]
pub struct ColumnPlan {
    /// `episode_index`.
    pub episode: usize,
    /// `timestamp` or `log_time`.
    pub time: TimeColumn,
    /// `task`, when present.
    pub task: Option<usize>,
    /// `file`, when present (for errors).
    pub file: Option<usize>,
    /// The features, in column order.
    pub features: Vec<FeatureColumn>,
}

fn is_number(t: &DataType) -> bool {
    t.is_integer() || t.is_floating() || matches!(t, DataType::Decimal128(..))
}

/// Why `name` cannot be a feature's key, if it cannot: a key is a column
/// of the data files and a key of `meta/info.json`, and a camera's key is
/// also a directory (`videos/KEY/`), which must stay inside the dataset.
fn unfit_name(name: &str, camera: bool) -> Option<&'static str> {
    if name.is_empty() {
        Some("a feature needs a name")
    } else if name.chars().any(char::is_control) {
        Some("a feature's name has no control characters")
    } else if camera && (name == "." || name.contains(['/', '\\']) || name.contains("..")) {
        Some(
            "a camera's name is a directory of the dataset (videos/NAME/), so it is not . and has no /, \\ or ..",
        )
    } else {
        None
    }
}

impl ColumnPlan {
    /// The plan of `schema`, or an error naming the column that cannot be
    /// written and what it should be.
    pub fn of(schema: &Schema) -> Result<Self> {
        let plan_err = |m: String| Error::Input(format!("LeRobot dataset: {m}"));
        let have = || {
            schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let episode = schema.index_of("episode_index").map_err(|_| {
            plan_err(format!(
                "the query needs an episode_index column (time_grid gives one; the query has: {})",
                have()
            ))
        })?;
        if !schema.field(episode).data_type().is_integer() {
            return Err(plan_err(format!(
                "episode_index must be an integer (it is {})",
                schema.field(episode).data_type()
            )));
        }
        let time = match (schema.index_of("timestamp"), schema.index_of("log_time")) {
            (Ok(i), _) if is_number(schema.field(i).data_type()) => TimeColumn::Seconds(i),
            (_, Ok(i)) if matches!(schema.field(i).data_type(), DataType::Timestamp(..)) => {
                TimeColumn::LogTime(i)
            }
            _ => {
                return Err(plan_err(format!(
                    "the query needs a timestamp column (seconds, a number) or a log_time column (a timestamp); it has: {}",
                    have()
                )));
            }
        };
        let time_index = match time {
            TimeColumn::Seconds(i) | TimeColumn::LogTime(i) => i,
        };
        let task = schema.index_of("task").ok();
        if let Some(t) = task
            && !matches!(
                schema.field(t).data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            )
        {
            return Err(plan_err(format!(
                "task must be text (it is {})",
                schema.field(t).data_type()
            )));
        }
        let file = schema.index_of("file").ok();
        let mut features = Vec::new();
        for (index, field) in schema.fields().iter().enumerate() {
            let name = field.name();
            if [Some(episode), Some(time_index), task, file].contains(&Some(index))
                || RECOMPUTED.contains(&name.as_str())
                || name == "timestamp"
                || name == "log_time"
            {
                continue;
            }
            let t = field.data_type();
            let kind = if t == &image_type() {
                FeatureKind::Camera
            } else if is_number(t) {
                FeatureKind::Numeric(NumericShape::Scalar)
            } else {
                match t {
                    DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _)
                        if is_number(f.data_type()) =>
                    {
                        FeatureKind::Numeric(NumericShape::List)
                    }
                    DataType::Struct(fs)
                        if !fs.is_empty() && fs.iter().all(|f| is_number(f.data_type())) =>
                    {
                        FeatureKind::Numeric(NumericShape::Struct(
                            fs.iter().map(|f| f.name().clone()).collect(),
                        ))
                    }
                    _ => {
                        return Err(plan_err(format!(
                            "column \"{name}\" is {t}: a feature is a number, a list of numbers, a struct of numbers or an image (read_images' image column)"
                        )));
                    }
                }
            };
            if let Some(why) = unfit_name(name, matches!(kind, FeatureKind::Camera)) {
                return Err(plan_err(format!(
                    "column {name:?} cannot name a feature: {why}"
                )));
            }
            features.push(FeatureColumn {
                index,
                name: name.clone(),
                kind,
            });
        }
        if features.is_empty() {
            return Err(plan_err(format!(
                "the query has no feature column (such as \"observation.state\" or \"action\"); it has: {}",
                have()
            )));
        }
        Ok(Self {
            episode,
            time,
            task,
            file,
            features,
        })
    }
}

/// The values of row `row` of a numeric feature column, as f64 (`None`:
/// NULL). Lists are cast once per batch with [`numeric_values`].
pub fn row_values(column: &NumericColumn, row: usize) -> Option<Vec<f64>> {
    match column {
        NumericColumn::Scalar(a) => a.is_valid(row).then(|| vec![a.value(row)]),
        NumericColumn::List { offsets, values } => {
            let (start, end) = offsets[row]?;
            Some(values.values()[start..end].to_vec())
        }
    }
}

/// A numeric feature column of one batch, cast to f64.
pub enum NumericColumn {
    /// One number a row.
    Scalar(Float64Array),
    /// A vector a row: the (start, end) of each row's values (`None`: NULL).
    List {
        offsets: Vec<Option<(usize, usize)>>,
        values: Float64Array,
    },
}

/// Casts a numeric feature column of a batch to f64 values.
pub fn numeric_values(array: &ArrayRef, shape: &NumericShape) -> Result<NumericColumn> {
    let f64s = |a: &ArrayRef| -> Result<Float64Array> {
        Ok(cast(a, &DataType::Float64)?
            .as_primitive::<Float64Type>()
            .clone())
    };
    Ok(match shape {
        NumericShape::Scalar => NumericColumn::Scalar(f64s(array)?),
        NumericShape::List => {
            let (offsets, values): (Vec<Option<(usize, usize)>>, ArrayRef) = match array.data_type()
            {
                DataType::List(_) => {
                    let l = array.as_list::<i32>();
                    let o = l.offsets();
                    let base = o[0] as usize;
                    let offs = (0..l.len())
                        .map(|i| {
                            l.is_valid(i)
                                .then(|| (o[i] as usize - base, o[i + 1] as usize - base))
                        })
                        .collect();
                    (offs, l.values().slice(base, o[l.len()] as usize - base))
                }
                DataType::LargeList(_) => {
                    let l = array.as_list::<i64>();
                    let o = l.offsets();
                    let base = o[0] as usize;
                    let offs = (0..l.len())
                        .map(|i| {
                            l.is_valid(i)
                                .then(|| (o[i] as usize - base, o[i + 1] as usize - base))
                        })
                        .collect();
                    (offs, l.values().slice(base, o[l.len()] as usize - base))
                }
                DataType::FixedSizeList(_, n) => {
                    let l = array.as_fixed_size_list();
                    let n = *n as usize;
                    let offs = (0..l.len())
                        .map(|i| l.is_valid(i).then(|| (i * n, i * n + n)))
                        .collect();
                    let start = l.offset() * n;
                    (offs, l.values().slice(start, l.len() * n))
                }
                other => {
                    return Err(Error::Input(format!("not a list of numbers: {other}")));
                }
            };
            NumericColumn::List {
                offsets,
                values: f64s(&values)?,
            }
        }
        NumericShape::Struct(names) => {
            let s = array.as_struct();
            let cols: Vec<Float64Array> = s.columns().iter().map(f64s).collect::<Result<_>>()?;
            let n = names.len();
            let mut values = Vec::with_capacity(s.len() * n);
            let mut offsets = Vec::with_capacity(s.len());
            for i in 0..s.len() {
                let valid = s.is_valid(i) && cols.iter().all(|c| c.is_valid(i));
                if valid {
                    offsets.push(Some((values.len(), values.len() + n)));
                    values.extend(cols.iter().map(|c| c.value(i)));
                } else {
                    offsets.push(None);
                }
            }
            NumericColumn::List {
                offsets,
                values: values.into(),
            }
        }
    })
}
