//! One Arrow type for a topic whose schema differs between files or
//! connections, and the arrays of each schema aligned to it.
//!
//! Message definitions change between releases: a field is added, an integer
//! widened. [`merge_types`] unions struct fields by name (a field missing on one
//! side is null in its rows) and widens numbers; anything else (a string that
//! became a struct) is a conflict the caller reports with both definitions.
//! [`align`] turns an array of one schema into the merged type. [`flatten`]
//! gives structs as dotted flat columns for tools that read no nested Parquet.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, ListArray, StructArray, cast::AsArray, new_null_array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields};

use super::DecodeError;

/// The type both `a` and `b` fit in, or a description of the first conflict.
pub fn merge_types(a: &DataType, b: &DataType) -> Result<DataType, String> {
    use DataType::*;
    if a == b {
        return Ok(a.clone());
    }
    Ok(match (a, b) {
        (Null, t) | (t, Null) => t.clone(),
        (Struct(fa), Struct(fb)) => {
            let mut out: Vec<Field> = Vec::with_capacity(fa.len().max(fb.len()));
            for f in fa.iter() {
                match fb.find(f.name()) {
                    Some((_, g)) => out.push(merge_field(f, g)?),
                    None => out.push(f.as_ref().clone()),
                }
            }
            for g in fb.iter() {
                if fa.find(g.name()).is_none() {
                    out.push(g.as_ref().clone());
                }
            }
            Struct(out.into())
        }
        (List(x), List(y)) => List(Arc::new(merge_field(x, y)?)),
        (FixedSizeList(x, n), FixedSizeList(y, m)) if n == m => {
            FixedSizeList(Arc::new(merge_field(x, y)?), *n)
        }
        (FixedSizeList(x, _) | List(x), FixedSizeList(y, _) | List(y)) => {
            List(Arc::new(merge_field(x, y)?))
        }
        (Map(x, s), Map(y, _)) => Map(Arc::new(merge_field(x, y)?), *s),
        (Timestamp(u, _), Timestamp(v, _)) if u == v => a.clone(),
        _ => match widen(a, b) {
            Some(t) => t,
            None => return Err(format!("{a} vs {b}")),
        },
    })
}

fn merge_field(a: &FieldRef, b: &FieldRef) -> Result<Field, String> {
    let t = merge_types(a.data_type(), b.data_type()).map_err(|e| format!("{}: {e}", a.name()))?;
    Ok(Field::new(a.name(), t, a.is_nullable() || b.is_nullable()))
}

/// The narrowest numeric type holding every value of both, if any.
fn widen(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType::*;
    let rank = |t: &DataType| -> Option<(u8, u8)> {
        // (kind: 0 unsigned, 1 signed, 2 float; bits)
        Some(match t {
            UInt8 => (0, 8),
            UInt16 => (0, 16),
            UInt32 => (0, 32),
            UInt64 => (0, 64),
            Int8 => (1, 8),
            Int16 => (1, 16),
            Int32 => (1, 32),
            Int64 => (1, 64),
            Float32 => (2, 32),
            Float64 => (2, 64),
            _ => return None,
        })
    };
    let ((ka, ba), (kb, bb)) = (rank(a)?, rank(b)?);
    let signed = |bits: u8| match bits {
        8 => Int8,
        16 => Int16,
        32 => Int32,
        _ => Int64,
    };
    Some(match (ka.max(kb), ka.min(kb)) {
        (2, _) => {
            if ba.max(bb) <= 32 && ka == kb {
                Float32
            } else {
                Float64
            }
        }
        (1, 1) => signed(ba.max(bb)),
        (0, 0) => {
            [UInt8, UInt16, UInt32, UInt64][(ba.max(bb).trailing_zeros() - 3) as usize].clone()
        }
        // signed and unsigned: the signed type twice the unsigned width
        _ => {
            let (sb, ub) = if ka == 1 { (ba, bb) } else { (bb, ba) };
            if ub >= 64 {
                return None;
            }
            signed(sb.max(ub * 2))
        }
    })
}

/// `array` (of a type [`merge_types`] merged into `target`) as `target`.
pub fn align(array: &ArrayRef, target: &DataType) -> Result<ArrayRef, DecodeError> {
    if array.data_type() == target {
        return Ok(Arc::clone(array));
    }
    let err = |e: arrow_schema::ArrowError| DecodeError::new(format!("aligning columns: {e}"));
    Ok(match (array.data_type(), target) {
        (DataType::Null, t) => new_null_array(t, array.len()),
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let s = array.as_struct();
            let columns = fields
                .iter()
                .map(|f| match s.column_by_name(f.name()) {
                    Some(c) => align(c, f.data_type()),
                    None => Ok(new_null_array(f.data_type(), s.len())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(
                StructArray::try_new_with_length(
                    fields.clone(),
                    columns,
                    s.nulls().cloned(),
                    s.len(),
                )
                .map_err(err)?,
            )
        }
        (DataType::List(_), DataType::List(f)) => {
            let l = array.as_list::<i32>();
            let values = align(l.values(), f.data_type())?;
            Arc::new(
                ListArray::try_new(f.clone(), l.offsets().clone(), values, l.nulls().cloned())
                    .map_err(err)?,
            )
        }
        (DataType::FixedSizeList(_, n), DataType::FixedSizeList(f, m)) if n == m => {
            let l = array.as_fixed_size_list();
            let values = align(l.values(), f.data_type())?;
            Arc::new(
                FixedSizeListArray::try_new_with_length(
                    f.clone(),
                    *m,
                    values,
                    l.nulls().cloned(),
                    l.len(),
                )
                .map_err(err)?,
            )
        }
        (DataType::FixedSizeList(_, n), DataType::List(f)) => {
            let l = array.as_fixed_size_list();
            let values = align(l.values(), f.data_type())?;
            let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(*n as usize, l.len()));
            Arc::new(
                ListArray::try_new(f.clone(), offsets, values, l.nulls().cloned()).map_err(err)?,
            )
        }
        (_, t) => arrow_cast::cast(array, t).map_err(err)?,
    })
}

/// Top-level `fields` with every struct (not inside a list) replaced by its
/// fields, named `parent.child`.
pub fn flatten_fields(fields: &Fields) -> Fields {
    fn walk(prefix: &str, fields: &Fields, out: &mut Vec<Field>) {
        for f in fields.iter() {
            let name = if prefix.is_empty() {
                f.name().clone()
            } else {
                format!("{prefix}.{}", f.name())
            };
            match f.data_type() {
                DataType::Struct(children) if !children.is_empty() => walk(&name, children, out),
                _ => out.push(f.as_ref().clone().with_name(name)),
            }
        }
    }
    let mut out = Vec::new();
    walk("", fields, &mut out);
    out.into()
}

/// The columns of `array` (a struct) flattened as [`flatten_fields`] names
/// them; a null struct makes every column under it null.
pub fn flatten(array: &StructArray) -> Vec<ArrayRef> {
    fn walk(
        columns: &[ArrayRef],
        fields: &Fields,
        parent: Option<&NullBuffer>,
        out: &mut Vec<ArrayRef>,
    ) {
        for (c, f) in columns.iter().zip(fields.iter()) {
            match f.data_type() {
                DataType::Struct(children) if !children.is_empty() => {
                    let s = c.as_struct();
                    let nulls = NullBuffer::union(parent, s.nulls());
                    walk(s.columns(), children, nulls.as_ref(), out);
                }
                _ => out.push(with_parent_nulls(c, parent)),
            }
        }
    }
    let mut out = Vec::new();
    walk(array.columns(), array.fields(), None, &mut out);
    out
}

/// `array` with the rows null where `parent` is null.
fn with_parent_nulls(array: &ArrayRef, parent: Option<&NullBuffer>) -> ArrayRef {
    let Some(parent) = parent else {
        return Arc::clone(array);
    };
    let nulls = NullBuffer::union(Some(parent), array.nulls());
    let data = array.to_data().into_builder().nulls(nulls);
    // The new null buffer only adds nulls to a valid array.
    match data.build() {
        Ok(d) => arrow_array::make_array(d),
        Err(_) => Arc::clone(array),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{field, list_of};

    fn st(fields: Vec<Field>) -> DataType {
        DataType::Struct(fields.into())
    }

    #[test]
    fn structs_union_and_numbers_widen() {
        let a = st(vec![
            field("x", DataType::Int32),
            field("s", DataType::Utf8),
        ]);
        let b = st(vec![
            field("x", DataType::Int64),
            field("y", DataType::Float32),
        ]);
        let m = merge_types(&a, &b).unwrap();
        assert_eq!(
            m,
            st(vec![
                field("x", DataType::Int64),
                field("s", DataType::Utf8),
                field("y", DataType::Float32)
            ])
        );
        assert_eq!(
            merge_types(&DataType::UInt32, &DataType::Int16).unwrap(),
            DataType::Int64
        );
        assert_eq!(
            merge_types(&DataType::UInt8, &DataType::Int32).unwrap(),
            DataType::Int32
        );
        assert_eq!(
            merge_types(&DataType::Int64, &DataType::Float32).unwrap(),
            DataType::Float64
        );
        assert!(merge_types(&DataType::UInt64, &DataType::Int8).is_err());
        let err = merge_types(
            &st(vec![field("a", DataType::Utf8)]),
            &st(vec![field("a", list_of(DataType::Int8))]),
        )
        .unwrap_err();
        assert!(err.starts_with("a: "), "{err}");
    }

    #[test]
    fn align_fills_missing_fields_with_nulls() {
        use arrow_array::{Int32Array, StringArray};
        let a: ArrayRef = Arc::new(StructArray::from(vec![(
            Arc::new(field("x", DataType::Int32)),
            Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
        )]));
        let target = st(vec![
            field("x", DataType::Int64),
            field("s", DataType::Utf8),
        ]);
        let out = align(&a, &target).unwrap();
        let s = out.as_struct();
        assert_eq!(s.column(1).null_count(), 2);
        assert_eq!(
            s.column(0)
                .as_primitive::<arrow_array::types::Int64Type>()
                .values()
                .to_vec(),
            vec![1, 2]
        );
        let _ = StringArray::from(vec!["unused"]);
    }

    #[test]
    fn flatten_names_and_nulls() {
        use arrow_array::Float64Array;
        let inner = StructArray::try_new(
            vec![field("x", DataType::Float64)].into(),
            vec![Arc::new(Float64Array::from(vec![1.0, 2.0])) as ArrayRef],
            Some(NullBuffer::from(vec![true, false])),
        )
        .unwrap();
        let outer = StructArray::from(vec![(
            Arc::new(field("p", inner.data_type().clone())),
            Arc::new(inner) as ArrayRef,
        )]);
        let names: Vec<String> = flatten_fields(outer.fields())
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, vec!["p.x"]);
        let cols = flatten(&outer);
        assert!(cols[0].is_valid(0) && cols[0].is_null(1));
    }
}
