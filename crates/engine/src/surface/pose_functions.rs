//! Scalar functions over poses and rotations, so decoded poses and points
//! can be moved between frames:
//!
//! - `quat_to_euler(q)` or `quat_to_euler(x, y, z, w)`: a struct `roll`,
//!   `pitch`, `yaw` (radians, tf2's `getRPY`: about x, then y, then z of the
//!   fixed frame);
//! - `transform_point(pose, x, y, z)` or `transform_point(pose, point)`: the
//!   point (given in the pose's frame) in the frame the pose is in, as a
//!   struct `x`, `y`, `z`.
//!
//! A pose is a struct in any of the shapes logsql gives: `tf_lookup`'s (`x`,
//! `y`, `z`, `qx`, `qy`, `qz`, `qw`), a `geometry_msgs/Pose` (`position`,
//! `orientation`) or a `geometry_msgs/Transform` (`translation`,
//! `rotation`). A rotation is a struct `x`, `y`, `z`, `w`, or a pose (its
//! rotation). Rotations are normalised; one of zero length, or any NULL
//! component, gives NULL.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Float64Builder, StructArray,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Float64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use logsql_transforms::{Pose, Quat, Vec3};

/// Registers `quat_to_euler` and `transform_point`.
pub fn register(ctx: &SessionContext) {
    for op in [Op::Euler, Op::Point] {
        ctx.register_udf(ScalarUDF::new_from_impl(PoseFunction {
            op,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Euler,
    Point,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Euler => "quat_to_euler",
            Op::Point => "transform_point",
        }
    }

    fn usage(self) -> &'static str {
        match self {
            Op::Euler => {
                "quat_to_euler(rotation) or quat_to_euler(x, y, z, w), e.g. quat_to_euler(pose.orientation)"
            }
            Op::Point => {
                "transform_point(pose, x, y, z) or transform_point(pose, point), e.g. transform_point(tf_lookup(file, 'map', 'laser', log_time), 1.0, 0.0, 0.0)"
            }
        }
    }

    fn fields(self) -> Fields {
        let names: &[&str] = match self {
            Op::Euler => &["roll", "pitch", "yaw"],
            Op::Point => &["x", "y", "z"],
        };
        names
            .iter()
            .map(|n| Field::new(*n, DataType::Float64, true))
            .collect()
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PoseFunction {
    op: Op,
    signature: Signature,
}

impl PoseFunction {
    fn err(&self, what: impl std::fmt::Display) -> DataFusionError {
        DataFusionError::Plan(format!(
            "{}: {what}; usage: {}",
            self.op.name(),
            self.op.usage()
        ))
    }
}

impl ScalarUDFImpl for PoseFunction {
    fn name(&self) -> &str {
        self.op.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let number = |t: &DataType| t.is_numeric() || *t == DataType::Null;
        let structs = |t: &DataType| matches!(t, DataType::Struct(_) | DataType::Null);
        let ok = match (self.op, arg_types) {
            (Op::Euler, [q]) => structs(q),
            (Op::Euler, [a, b, c, d]) => [a, b, c, d].into_iter().all(number),
            (Op::Point, [p, point]) => structs(p) && structs(point),
            (Op::Point, [p, x, y, z]) => structs(p) && [x, y, z].into_iter().all(number),
            _ => false,
        };
        if !ok {
            return Err(self.err(format!(
                "not for arguments ({})",
                arg_types
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(arg_types
            .iter()
            .map(|t| match t {
                DataType::Struct(_) => t.clone(),
                _ => DataType::Float64,
            })
            .collect())
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Struct(self.op.fields()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut out: [Float64Builder; 3] =
            std::array::from_fn(|_| Float64Builder::with_capacity(n));
        let mut valid = Vec::with_capacity(n);
        // NULL rows have NULL fields too.
        let mut push = |v: Option<[f64; 3]>| {
            match v {
                Some(v) => out.iter_mut().zip(v).for_each(|(c, x)| c.append_value(x)),
                None => out.iter_mut().for_each(Float64Builder::append_null),
            }
            valid.push(v.is_some());
        };
        match self.op {
            Op::Euler => {
                let q = match arrays.as_slice() {
                    [one] => rotation_of(one).map_err(|e| self.err(e))?,
                    four => Columns::numbers(four)?,
                };
                for i in 0..n {
                    push(q.quat(i).map(|q| {
                        let (r, p, y) = q.to_euler();
                        [r, p, y]
                    }));
                }
            }
            Op::Point => {
                let pose = pose_of(&arrays[0]).map_err(|e| self.err(e))?;
                let point = match &arrays[1..] {
                    [one] => {
                        Columns::fields(one, &[&["x"], &["y"], &["z"]]).map_err(|e| self.err(e))?
                    }
                    three => Columns::numbers(three)?,
                };
                for i in 0..n {
                    push(pose.pose(i).zip(point.vec(i)).map(|(pose, p)| {
                        let v = pose.apply(p);
                        [v.x, v.y, v.z]
                    }));
                }
            }
        }
        let arrays = out
            .iter_mut()
            .map(|c| Arc::new(c.finish()) as ArrayRef)
            .collect();
        Ok(ColumnarValue::Array(Arc::new(StructArray::new(
            self.op.fields(),
            arrays,
            Some(NullBuffer::from(valid)),
        ))))
    }
}

/// Float columns of one argument (or several), NULL where a row's value or
/// any struct on the way to it is NULL.
struct Columns(Vec<Float64Array>);

impl Columns {
    fn numbers(arrays: &[ArrayRef]) -> Result<Self> {
        arrays
            .iter()
            .map(|a| {
                Ok(cast(a, &DataType::Float64)?
                    .as_primitive::<Float64Type>()
                    .clone())
            })
            .collect::<Result<_>>()
            .map(Columns)
    }

    /// The fields at `paths` of the struct column `array`.
    fn fields(array: &ArrayRef, paths: &[&[&str]]) -> std::result::Result<Self, String> {
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            let mut column = Arc::clone(array);
            let mut nulls: Option<NullBuffer> = None;
            for name in *path {
                let s = column
                    .as_struct_opt()
                    .ok_or_else(|| format!("{} is not a struct", column.data_type()))?;
                nulls = NullBuffer::union(nulls.as_ref(), s.nulls());
                let next = s
                    .column_by_name(name)
                    .ok_or_else(|| format!("the struct has no field `{name}`"))?;
                column = Arc::clone(next);
            }
            let values = cast(&column, &DataType::Float64).map_err(|e| e.to_string())?;
            let values = values.as_primitive::<Float64Type>().clone();
            let nulls = NullBuffer::union(nulls.as_ref(), values.nulls());
            let (_, buffer, _) = values.into_parts();
            out.push(Float64Array::new(buffer, nulls));
        }
        Ok(Columns(out))
    }

    fn get(&self, i: usize) -> Option<Vec<f64>> {
        self.0
            .iter()
            .map(|c| c.is_valid(i).then(|| c.value(i)))
            .collect()
    }

    fn vec(&self, i: usize) -> Option<Vec3> {
        let v = self.get(i)?;
        Some(Vec3::new(v[0], v[1], v[2]))
    }

    fn quat(&self, i: usize) -> Option<Quat> {
        let v = self.get(i)?;
        Quat::new(v[0], v[1], v[2], v[3]).normalized()
    }
}

/// A pose column: translation and rotation columns.
struct PoseColumns {
    translation: Columns,
    rotation: Columns,
}

impl PoseColumns {
    fn pose(&self, i: usize) -> Option<Pose> {
        Some(Pose {
            translation: self.translation.vec(i)?,
            rotation: self.rotation.quat(i)?,
        })
    }
}

fn has(array: &ArrayRef, name: &str) -> bool {
    matches!(array.data_type(), DataType::Struct(f) if f.iter().any(|f| f.name() == name))
}

/// The pose in a struct column of one of the three shapes.
fn pose_of(array: &ArrayRef) -> std::result::Result<PoseColumns, String> {
    // The prefix of the translation's and the rotation's fields.
    let (t, r, q): (&[&str], &[&str], [&str; 4]) = if has(array, "qw") {
        (&[], &[], ["qx", "qy", "qz", "qw"])
    } else if has(array, "position") {
        (&["position"], &["orientation"], ["x", "y", "z", "w"])
    } else if has(array, "translation") {
        (&["translation"], &["rotation"], ["x", "y", "z", "w"])
    } else {
        return Err(format!(
            "{} is not a pose (x, y, z, qx, qy, qz, qw; position, orientation; or translation, rotation)",
            array.data_type()
        ));
    };
    let paths = |prefix: &[&'static str], names: &[&'static str]| -> Vec<Vec<&'static str>> {
        names
            .iter()
            .map(|n| prefix.iter().copied().chain([*n]).collect())
            .collect()
    };
    let (tp, rp) = (paths(t, &["x", "y", "z"]), paths(r, &q));
    let tp: Vec<&[&str]> = tp.iter().map(Vec::as_slice).collect();
    let rp: Vec<&[&str]> = rp.iter().map(Vec::as_slice).collect();
    Ok(PoseColumns {
        translation: Columns::fields(array, &tp)?,
        rotation: Columns::fields(array, &rp)?,
    })
}

/// The rotation of a struct column: a quaternion, or a pose's rotation.
fn rotation_of(array: &ArrayRef) -> std::result::Result<Columns, String> {
    if has(array, "w") {
        return Columns::fields(array, &[&["x"], &["y"], &["z"], &["w"]]);
    }
    Ok(pose_of(array)?.rotation)
}
