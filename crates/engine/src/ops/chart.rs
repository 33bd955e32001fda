//! What a chart is drawn from: a query's first column as the x axis and its
//! other numeric columns (struct fields flattened to `a.b`) as series, kept in
//! bounded memory by a min/max-preserving reduction.
//!
//! A series holds points as they stream in. Past [`COMPACT_AT`] points it is
//! reduced to [`COMPACT_BUCKETS`] buckets over its current x range, each keeping
//! its first, last, lowest and highest point. The final chart has far fewer
//! pixel columns than that and covers at least that range, so every spike that
//! would reach a pixel column survives the reduction.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, StructArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};

/// Why a result cannot be charted: nothing numeric to draw, or a column
/// that does not read as numbers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ChartError(String);

impl ChartError {
    pub(crate) fn msg(why: impl Into<String>) -> Self {
        Self(why.into())
    }
}

/// What the chart's steps return.
pub type Result<T = (), E = ChartError> = std::result::Result<T, E>;

/// Points a series keeps before it is reduced.
pub const COMPACT_AT: usize = 1 << 18;
/// Buckets of a reduction (each keeps up to 4 points).
pub const COMPACT_BUCKETS: usize = 8192;

/// How the x axis is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XKind {
    /// Nanoseconds since the Unix epoch (timestamps and dates), drawn as UTC times.
    Time,
    /// Plain numbers.
    Number,
}

/// One line (or point cloud) of the chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// The column's name (`linear_acceleration.x` for a struct field).
    pub name: String,
    /// (x, y) points; reduced past [`COMPACT_AT`].
    pub points: Vec<(f64, f64)>,
    /// Rows that had a value (NaN and NULL are not points).
    pub values: u64,
}

/// A query result turned into series, batch by batch.
#[derive(Debug)]
pub struct Chart {
    /// The x column's name.
    pub x_name: String,
    /// How x is read.
    pub x_kind: XKind,
    /// The series, in column order.
    pub series: Vec<Series>,
    /// Rows seen.
    pub rows: u64,
    /// Columns left out because they are not numeric (name, type).
    pub skipped: Vec<(String, DataType)>,
    /// Where each series' values come from: a path of child indexes into the
    /// batch's columns (the first is the column, the rest struct fields).
    paths: Vec<Vec<usize>>,
}

impl Chart {
    /// Plans the series of a result with `schema`: fails when the first
    /// column is not a time or a number, or no other column is numeric.
    pub fn new(schema: &Schema) -> Result<Self> {
        let Some(x) = schema.fields().first() else {
            return Err(ChartError::msg(
                "nothing to plot: the query returned no columns",
            ));
        };
        let x_kind = x_kind(x.data_type()).ok_or_else(|| {
            ChartError::msg(format!(
                "nothing to plot: the first column is the x axis and must be a timestamp, \
                 a date or a number, but {} is {}",
                x.name(),
                x.data_type()
            ))
        })?;
        let mut chart = Chart {
            x_name: x.name().clone(),
            x_kind,
            series: Vec::new(),
            rows: 0,
            skipped: Vec::new(),
            paths: Vec::new(),
        };
        for (i, field) in schema.fields().iter().enumerate().skip(1) {
            chart.add_field(field, field.name().clone(), vec![i]);
        }
        if chart.series.is_empty() {
            let columns: Vec<String> = chart
                .skipped
                .iter()
                .map(|(n, t)| format!("{n} ({t})"))
                .collect();
            return Err(ChartError::msg(if columns.is_empty() {
                format!(
                    "nothing to plot: the query has only its x column ({}); add numeric \
                     columns to draw",
                    chart.x_name
                )
            } else {
                format!(
                    "nothing to plot: after the x column ({}) no column is numeric: {}",
                    chart.x_name,
                    columns.join(", ")
                )
            }));
        }
        Ok(chart)
    }

    /// Adds the series of one field: itself when numeric, its numeric
    /// descendants when a struct.
    fn add_field(&mut self, field: &Field, name: String, path: Vec<usize>) {
        match field.data_type() {
            DataType::Struct(children) => {
                for (j, child) in children.iter().enumerate() {
                    let mut p = path.clone();
                    p.push(j);
                    self.add_field(child, format!("{name}.{}", child.name()), p);
                }
            }
            t if is_numeric(t) => {
                self.series.push(Series {
                    name,
                    points: Vec::new(),
                    values: 0,
                });
                self.paths.push(path);
            }
            t => self.skipped.push((name, t.clone())),
        }
    }

    /// Adds the rows of `batch` (whose schema is the one given to [`Chart::new`]).
    pub fn push(&mut self, batch: &RecordBatch) -> Result {
        self.rows += batch.num_rows() as u64;
        let xs = x_values(batch.column(0), self.x_kind)?;
        for (series, path) in self.series.iter_mut().zip(&self.paths) {
            let column = resolve(batch.columns(), path)?;
            let ys = cast(&column, &DataType::Float64)
                .map_err(|e| ChartError::msg(format!("reading {} as numbers: {e}", series.name)))?;
            let ys = ys.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
            for (x, y) in xs.iter().zip(ys.iter()) {
                if let (Some(x), Some(y)) = (x, y)
                    && x.is_finite()
                    && y.is_finite()
                {
                    series.points.push((x, y));
                    series.values += 1;
                }
            }
            if series.points.len() > COMPACT_AT {
                series.points = reduce(std::mem::take(&mut series.points), COMPACT_BUCKETS);
            }
        }
        Ok(())
    }

    /// The x and y ranges covered by every series' points; an error when no
    /// row had a value to draw.
    pub fn ranges(&self) -> Result<((f64, f64), (f64, f64))> {
        let points = || self.series.iter().flat_map(|s| s.points.iter());
        match (range(points().map(|p| p.0)), range(points().map(|p| p.1))) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err(ChartError::msg(format!(
                "nothing to plot: the query returned {} rows but no numeric values",
                self.rows
            ))),
        }
    }
}

/// The column at `path`: a batch column, then struct children (a struct's
/// nulls are carried to its children, so a NULL struct is no point).
fn resolve(columns: &[ArrayRef], path: &[usize]) -> Result<ArrayRef> {
    let mut array = columns[path[0]].clone();
    for &j in &path[1..] {
        let parent: &StructArray = array.as_struct();
        let child = parent.column(j).clone();
        array = match parent.nulls() {
            Some(nulls) if nulls.null_count() > 0 => {
                let merged =
                    datafusion::arrow::buffer::NullBuffer::union(Some(nulls), child.nulls());
                datafusion::arrow::array::make_array(
                    child
                        .into_data()
                        .into_builder()
                        .nulls(merged)
                        .build()
                        .map_err(|e| ChartError::msg(format!("reading a struct field: {e}")))?,
                )
            }
            _ => child,
        };
    }
    Ok(array)
}

/// How a column of `t` is read as x, if it can be.
fn x_kind(t: &DataType) -> Option<XKind> {
    match t {
        DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64 => Some(XKind::Time),
        t if is_numeric(t) => Some(XKind::Number),
        _ => None,
    }
}

/// Whether a column of `t` is drawn as a series (cast to f64).
fn is_numeric(t: &DataType) -> bool {
    t.is_numeric()
        || matches!(t, DataType::Boolean)
        || matches!(t, DataType::Dictionary(_, v) if v.is_numeric())
}

/// The x column as f64: nanoseconds since the epoch for times, else the value.
fn x_values(column: &ArrayRef, kind: XKind) -> Result<Float64Array> {
    let err = |e| ChartError::msg(format!("reading the x column: {e}"));
    let values = match (kind, column.data_type()) {
        (XKind::Time, DataType::Timestamp(TimeUnit::Nanosecond, _)) => column.clone(),
        (XKind::Time, _) => {
            let ns = DataType::Timestamp(TimeUnit::Nanosecond, None);
            cast(column, &ns).map_err(err)?
        }
        (XKind::Number, _) => cast(column, &DataType::Float64).map_err(err)?,
    };
    Ok(match kind {
        XKind::Time => values
            .as_primitive::<datafusion::arrow::datatypes::TimestampNanosecondType>()
            .iter()
            .map(|v| v.map(|ns| ns as f64))
            .collect(),
        XKind::Number => values.as_primitive().clone(),
    })
}

/// The smallest and largest of `values`, if any.
fn range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |r, v| match r {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// `points` reduced to at most 4 per bucket of `buckets` equal x intervals over
/// their range: the first and last in x, the lowest and highest in y, in x
/// order. A line through them reaches every bucket's extremes.
pub fn reduce(mut points: Vec<(f64, f64)>, buckets: usize) -> Vec<(f64, f64)> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let Some((lo, hi)) = range(points.iter().map(|p| p.0)) else {
        return points;
    };
    if points.len() <= 4 * buckets || hi <= lo {
        return if hi <= lo && points.len() > 4 {
            extremes(&points)
        } else {
            points
        };
    }
    let width = (hi - lo) / buckets as f64;
    let mut out = Vec::with_capacity(4 * buckets);
    let mut start = 0;
    while start < points.len() {
        let bucket = (((points[start].0 - lo) / width) as usize).min(buckets - 1);
        let mut end = start + 1;
        while end < points.len()
            && (((points[end].0 - lo) / width) as usize).min(buckets - 1) == bucket
        {
            end += 1;
        }
        out.extend(extremes(&points[start..end]));
        start = end;
    }
    out
}

/// The first, lowest, highest and last of x-sorted `points` (each once), in x order.
fn extremes(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= 4 {
        return points.to_vec();
    }
    let (mut min, mut max) = (0, 0);
    for (i, p) in points.iter().enumerate() {
        if p.1 < points[min].1 {
            min = i;
        }
        if p.1 > points[max].1 {
            max = i;
        }
    }
    let mut keep = vec![0, min, max, points.len() - 1];
    keep.sort_unstable();
    keep.dedup();
    keep.into_iter().map(|i| points[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, TimestampNanosecondArray};
    use std::sync::Arc;

    #[test]
    fn reduction_keeps_every_buckets_extremes() {
        // A flat signal with one spike up and one down among a million points.
        let mut points: Vec<(f64, f64)> = (0..1_000_000).map(|i| (i as f64, 0.0)).collect();
        points[123_457].1 = 9.0;
        points[876_543].1 = -4.0;
        let reduced = reduce(points, 1000);
        assert!(reduced.len() <= 4000, "{}", reduced.len());
        assert!(reduced.contains(&(123_457.0, 9.0)));
        assert!(reduced.contains(&(876_543.0, -4.0)));
        assert_eq!(reduced.first(), Some(&(0.0, 0.0)));
        assert_eq!(reduced.last(), Some(&(999_999.0, 0.0)));
        assert!(reduced.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn reduction_of_equal_xs_keeps_the_extremes() {
        let points = vec![
            (1.0, 3.0),
            (1.0, -2.0),
            (1.0, 8.0),
            (1.0, 0.0),
            (1.0, 5.0),
            (1.0, 1.0),
        ];
        assert_eq!(
            reduce(points, 10),
            vec![(1.0, 3.0), (1.0, -2.0), (1.0, 8.0), (1.0, 1.0)]
        );
    }

    #[test]
    fn series_are_numeric_columns_and_struct_fields() {
        let point = DataType::Struct(
            vec![
                Field::new("x", DataType::Float64, true),
                Field::new("frame", DataType::Utf8, true),
            ]
            .into(),
        );
        let schema = Schema::new(vec![
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                true,
            ),
            Field::new("n", DataType::Int32, true),
            Field::new("topic", DataType::Utf8, true),
            Field::new("p", point, true),
        ]);
        let chart = Chart::new(&schema).unwrap();
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["n", "p.x"]);
        assert_eq!(chart.x_kind, XKind::Time);
        let skipped: Vec<&str> = chart.skipped.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(skipped, ["topic", "p.frame"]);
    }

    #[test]
    fn nulls_are_not_points_and_times_are_nanoseconds() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("t", DataType::Timestamp(TimeUnit::Nanosecond, None), true),
            Field::new("n", DataType::Int32, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(TimestampNanosecondArray::from(vec![
                    Some(10),
                    None,
                    Some(30),
                ])),
                Arc::new(Int32Array::from(vec![Some(1), Some(2), None])),
            ],
        )
        .unwrap();
        let mut chart = Chart::new(&schema).unwrap();
        chart.push(&batch).unwrap();
        assert_eq!(chart.rows, 3);
        assert_eq!(chart.series[0].points, [(10.0, 1.0)]);
    }

    #[test]
    fn results_without_a_series_say_why() {
        let text = |fields: Vec<Field>| Chart::new(&Schema::new(fields)).unwrap_err().to_string();
        assert_eq!(
            text(vec![Field::new("topic", DataType::Utf8, true)]),
            "nothing to plot: the first column is the x axis and must be a timestamp, a date \
             or a number, but topic is Utf8"
        );
        assert_eq!(
            text(vec![
                Field::new("t", DataType::Int64, true),
                Field::new("topic", DataType::Utf8, true)
            ]),
            "nothing to plot: after the x column (t) no column is numeric: topic (Utf8)"
        );
    }
}
