//! [`PointsBuilder`]: clouds appended one by one into an Arrow
//! `list<struct>` column, one list per cloud.

use std::sync::Arc;

use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, UInt8Type, UInt16Type, UInt32Type,
};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, FixedSizeListArray, ListArray, PrimitiveArray, StructArray,
};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields};

use super::layout::{Cloud, PointField, PointType, check_fields, point_fields};
use crate::error::{MediaError, Result};

/// Builds the `points` column: `list<struct>`, with the struct's fields
/// those of the layout it was made with ([`point_fields`]).
///
/// Every appended cloud must have the layout's fields: the same names,
/// datatypes and counts, in any order and at any offsets, and no other
/// field; a cloud that differs is refused with an error naming both
/// layouts, and the column is left as it was (nothing of a refused cloud is
/// kept).
#[derive(Debug)]
pub struct PointsBuilder {
    layout: Vec<PointField>,
    fields: Fields,
    columns: Vec<Values>,
    offsets: Vec<i32>,
    nulls: NullBufferBuilder,
}

impl PointsBuilder {
    /// A builder for clouds with `layout`'s fields (offsets are not used).
    /// The names must be unique and no count above
    /// [`MAX_FIELD_COUNT`](super::MAX_FIELD_COUNT).
    pub fn new(layout: &[PointField]) -> Result<Self> {
        check_fields(layout)?;
        Ok(Self {
            layout: layout.to_vec(),
            fields: point_fields(layout),
            columns: layout.iter().map(|f| Values::new(f.datatype)).collect(),
            offsets: vec![0],
            nulls: NullBufferBuilder::new(0),
        })
    }

    /// The list item: one point, a struct of the layout's fields.
    pub fn item_field(&self) -> FieldRef {
        Arc::new(Field::new(
            "item",
            DataType::Struct(self.fields.clone()),
            false,
        ))
    }

    /// The column's type.
    pub fn data_type(&self) -> DataType {
        DataType::List(self.item_field())
    }

    /// Appends one cloud's points; see [`Cloud::validate`] for the checks.
    pub fn append(&mut self, cloud: &Cloud<'_>) -> Result<()> {
        cloud.validate()?;
        let offsets = self.offsets_in(cloud)?;
        let n = cloud.point_count();
        let last = *self.offsets.last().unwrap_or(&0);
        let end = i32::try_from(i64::from(last) + n as i64).map_err(|_| {
            MediaError::Limit(format!(
                "more than {} points in one batch of clouds",
                i32::MAX
            ))
        })?;
        for ((field, offset), values) in self.layout.iter().zip(offsets).zip(&mut self.columns) {
            values.read(cloud, offset as usize, field.count as usize);
        }
        self.offsets.push(end);
        self.nulls.append_non_null();
        Ok(())
    }

    /// Appends a null cloud (a message that could not be read).
    pub fn append_null(&mut self) {
        let last = *self.offsets.last().unwrap_or(&0);
        self.offsets.push(last);
        self.nulls.append_null();
    }

    /// Clouds appended so far.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether no cloud was appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The column of the clouds appended since the last call.
    pub fn finish(&mut self) -> ListArray {
        let points = *self.offsets.last().unwrap_or(&0) as usize;
        let columns: Vec<ArrayRef> = self
            .layout
            .iter()
            .zip(&mut self.columns)
            .map(|(f, v)| v.finish(f.count, points))
            .collect();
        let structs = StructArray::try_new_with_length(self.fields.clone(), columns, None, points)
            .expect("every column holds one value (or list) per point");
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        ListArray::new(
            self.item_field(),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Arc::new(structs),
            self.nulls.finish(),
        )
    }

    /// The offset in `cloud`'s points of each layout field, or why the
    /// cloud's fields differ from the layout's.
    fn offsets_in(&self, cloud: &Cloud<'_>) -> Result<Vec<u32>> {
        let same = cloud.fields.len() == self.layout.len();
        let found: Option<Vec<u32>> = self
            .layout
            .iter()
            .map(|want| {
                cloud
                    .fields
                    .iter()
                    .find(|f| {
                        f.name == want.name && f.datatype == want.datatype && f.count == want.count
                    })
                    .map(|f| f.offset)
            })
            .collect();
        match found {
            Some(offsets) if same => Ok(offsets),
            _ => Err(MediaError::Invalid(format!(
                "the cloud's fields ({}) differ from the column's ({})",
                describe(cloud.fields),
                describe(&self.layout)
            ))),
        }
    }
}

/// `x FLOAT32, rgb UINT8 x3`.
fn describe(fields: &[PointField]) -> String {
    if fields.is_empty() {
        return "none".into();
    }
    fields
        .iter()
        .map(|f| {
            if f.count == 1 {
                format!("{} {}", f.name, f.datatype.name())
            } else {
                format!("{} {} x{}", f.name, f.datatype.name(), f.count)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value read from bytes in either byte order.
trait Wire: Sized {
    const SIZE: usize;
    fn read(b: &[u8], big_endian: bool) -> Self;
}

macro_rules! wire {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline]
            fn read(b: &[u8], big_endian: bool) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::SIZE]);
                if big_endian { <$t>::from_be_bytes(a) } else { <$t>::from_le_bytes(a) }
            }
        }
    )*};
}
wire!(i8, u8, i16, u16, i32, u32, f32, f64);

/// Appends the `count` values at `offset` of every point of `cloud` to `out`.
/// The cloud was validated: every read lies inside its data.
fn read_values<T: Wire>(out: &mut Vec<T>, cloud: &Cloud<'_>, offset: usize, count: usize) {
    if cloud.point_count() == 0 {
        // Rows of no points: nothing is read (nor checked to be there).
        return;
    }
    let (step, row_step) = (cloud.point_step as usize, cloud.row_step as usize);
    out.reserve(cloud.point_count() as usize * count);
    for r in 0..cloud.height as usize {
        let row = &cloud.data[r * row_step..];
        for c in 0..cloud.width as usize {
            let at = c * step + offset;
            for k in 0..count {
                out.push(T::read(&row[at + k * T::SIZE..], cloud.is_bigendian));
            }
        }
    }
}

/// The values of one point field, for each datatype.
#[derive(Debug)]
enum Values {
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Values {
    fn new(t: PointType) -> Self {
        match t {
            PointType::Int8 => Values::I8(Vec::new()),
            PointType::Uint8 => Values::U8(Vec::new()),
            PointType::Int16 => Values::I16(Vec::new()),
            PointType::Uint16 => Values::U16(Vec::new()),
            PointType::Int32 => Values::I32(Vec::new()),
            PointType::Uint32 => Values::U32(Vec::new()),
            PointType::Float32 => Values::F32(Vec::new()),
            PointType::Float64 => Values::F64(Vec::new()),
        }
    }

    fn read(&mut self, cloud: &Cloud<'_>, offset: usize, count: usize) {
        match self {
            Values::I8(v) => read_values(v, cloud, offset, count),
            Values::U8(v) => read_values(v, cloud, offset, count),
            Values::I16(v) => read_values(v, cloud, offset, count),
            Values::U16(v) => read_values(v, cloud, offset, count),
            Values::I32(v) => read_values(v, cloud, offset, count),
            Values::U32(v) => read_values(v, cloud, offset, count),
            Values::F32(v) => read_values(v, cloud, offset, count),
            Values::F64(v) => read_values(v, cloud, offset, count),
        }
    }

    /// The values taken so far, as one array of a scalar per point, or of a
    /// fixed-size list of `count` per point, for `points` points.
    fn finish(&mut self, count: u32, points: usize) -> ArrayRef {
        fn take<T: ArrowPrimitiveType>(v: &mut Vec<T::Native>) -> ArrayRef {
            Arc::new(PrimitiveArray::<T>::new(
                ScalarBuffer::from(std::mem::take(v)),
                None,
            ))
        }
        let values = match self {
            Values::I8(v) => take::<Int8Type>(v),
            Values::U8(v) => take::<UInt8Type>(v),
            Values::I16(v) => take::<Int16Type>(v),
            Values::U16(v) => take::<UInt16Type>(v),
            Values::I32(v) => take::<Int32Type>(v),
            Values::U32(v) => take::<UInt32Type>(v),
            Values::F32(v) => take::<Float32Type>(v),
            Values::F64(v) => take::<Float64Type>(v),
        };
        if count == 1 {
            return values;
        }
        let item = Arc::new(Field::new("item", values.data_type().clone(), false));
        Arc::new(
            FixedSizeListArray::try_new_with_length(item, count as i32, values, None, points)
                .expect("a field holds count values per point"),
        )
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, types::*};

    use super::*;

    fn field(name: &str, offset: u32, datatype: PointType, count: u32) -> PointField {
        PointField {
            name: name.into(),
            offset,
            datatype,
            count,
        }
    }

    /// Two rows of two points, 11-byte points with a padding byte, 24-byte
    /// rows (two bytes of row padding), every datatype but the 64-bit one.
    fn mixed(big: bool) -> (Vec<PointField>, Vec<u8>) {
        let fields = vec![
            field("i8", 0, PointType::Int8, 1),
            field("u8", 1, PointType::Uint8, 1),
            field("i16", 2, PointType::Int16, 1),
            // byte 4 is padding
            field("u16", 5, PointType::Uint16, 1),
            field("f32", 7, PointType::Float32, 1),
        ];
        let mut data = Vec::new();
        for r in 0..2u8 {
            for c in 0..2u8 {
                let p = r * 2 + c;
                data.push((-(p as i8) - 1) as u8);
                data.push(200 + p);
                let i16v = -300i16 * (p as i16 + 1);
                let u16v = 60000u16 + p as u16;
                let f = if p == 3 { f32::NAN } else { p as f32 + 0.5 };
                if big {
                    data.extend(i16v.to_be_bytes());
                    data.push(0xAA);
                    data.extend(u16v.to_be_bytes());
                    data.extend(f.to_be_bytes());
                } else {
                    data.extend(i16v.to_le_bytes());
                    data.push(0xAA);
                    data.extend(u16v.to_le_bytes());
                    data.extend(f.to_le_bytes());
                }
            }
            data.extend([0xEE, 0xEE]);
        }
        (fields, data)
    }

    fn cloud<'a>(fields: &'a [PointField], data: &'a [u8], big: bool) -> Cloud<'a> {
        Cloud {
            fields,
            width: 2,
            height: 2,
            point_step: 11,
            row_step: 24,
            is_bigendian: big,
            data,
        }
    }

    #[test]
    fn reads_every_field_at_its_offset_in_either_byte_order() {
        for big in [false, true] {
            let (fields, data) = mixed(big);
            let mut b = PointsBuilder::new(&fields).unwrap();
            b.append(&cloud(&fields, &data, big)).unwrap();
            let list = b.finish();
            assert_eq!(list.len(), 1);
            assert_eq!(list.value_length(0), 4);
            let points = list.value(0);
            let s = points.as_struct();
            assert_eq!(
                s.column(0).as_primitive::<Int8Type>().values(),
                &[-1, -2, -3, -4]
            );
            assert_eq!(
                s.column(1).as_primitive::<UInt8Type>().values(),
                &[200, 201, 202, 203]
            );
            assert_eq!(
                s.column(2).as_primitive::<Int16Type>().values(),
                &[-300, -600, -900, -1200]
            );
            assert_eq!(
                s.column(3).as_primitive::<UInt16Type>().values(),
                &[60000, 60001, 60002, 60003]
            );
            let f = s.column(4).as_primitive::<Float32Type>().values();
            assert_eq!(&f[..3], &[0.5, 1.5, 2.5]);
            assert!(f[3].is_nan(), "NaN kept");
        }
    }

    #[test]
    fn counts_above_one_are_fixed_size_lists_and_64_bit_types_read() {
        let fields = vec![
            field("rgb", 0, PointType::Uint8, 3),
            field("u32", 3, PointType::Uint32, 1),
            field("i32", 7, PointType::Int32, 2),
            field("f64", 15, PointType::Float64, 1),
        ];
        let mut data = Vec::new();
        for p in 0..3u32 {
            data.extend([p as u8, 10 + p as u8, 20 + p as u8]);
            data.extend((4_000_000_000u32 + p).to_le_bytes());
            data.extend((-(p as i32)).to_le_bytes());
            data.extend((i32::MAX - p as i32).to_le_bytes());
            data.extend((1e300 * f64::from(p + 1)).to_le_bytes());
        }
        let c = Cloud {
            fields: &fields,
            width: 3,
            height: 1,
            point_step: 23,
            row_step: 69,
            is_bigendian: false,
            data: &data,
        };
        let mut b = PointsBuilder::new(&fields).unwrap();
        b.append(&c).unwrap();
        let list = b.finish();
        let s = list.value(0);
        let s = s.as_struct();
        let rgb = s.column(0).as_fixed_size_list();
        assert_eq!(rgb.value_length(), 3);
        assert_eq!(
            rgb.values().as_primitive::<UInt8Type>().values(),
            &[0, 10, 20, 1, 11, 21, 2, 12, 22]
        );
        assert_eq!(
            s.column(1).as_primitive::<UInt32Type>().values(),
            &[4_000_000_000, 4_000_000_001, 4_000_000_002]
        );
        let i32s = s.column(2).as_fixed_size_list();
        assert_eq!(
            i32s.values().as_primitive::<Int32Type>().values(),
            &[0, i32::MAX, -1, i32::MAX - 1, -2, i32::MAX - 2]
        );
        assert_eq!(
            s.column(3).as_primitive::<Float64Type>().values(),
            &[1e300, 2e300, 3e300]
        );
    }

    #[test]
    fn offsets_may_differ_between_clouds_but_fields_may_not() {
        let a = vec![
            field("x", 0, PointType::Float32, 1),
            field("i", 4, PointType::Uint8, 1),
        ];
        let b_fields = vec![
            field("i", 0, PointType::Uint8, 1),
            field("x", 1, PointType::Float32, 1),
        ];
        let mut da = 7.0f32.to_le_bytes().to_vec();
        da.push(9);
        let mut db = vec![5];
        db.extend(3.0f32.to_le_bytes());
        let one = |fields, data| Cloud {
            fields,
            width: 1,
            height: 1,
            point_step: 5,
            row_step: 5,
            is_bigendian: false,
            data,
        };
        let mut b = PointsBuilder::new(&a).unwrap();
        b.append(&one(&a, &da)).unwrap();
        b.append(&one(&b_fields, &db)).unwrap();
        b.append_null();
        let other = vec![field("x", 0, PointType::Float64, 1)];
        let e = b
            .append(&Cloud {
                point_step: 8,
                row_step: 8,
                ..one(&other, &[0; 8])
            })
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the cloud's fields (x FLOAT64) differ from the column's (x FLOAT32, i UINT8)"
        );
        let list = b.finish();
        assert_eq!(list.len(), 3);
        assert!(list.is_null(2));
        let s = list.values().as_struct();
        assert_eq!(
            s.column(0).as_primitive::<Float32Type>().values(),
            &[7.0, 3.0]
        );
        assert_eq!(s.column(1).as_primitive::<UInt8Type>().values(), &[9, 5]);
        let huge = vec![field("x", 0, PointType::Uint8, u32::MAX)];
        let e = PointsBuilder::new(&huge).unwrap_err();
        assert!(matches!(e, MediaError::Limit(_)), "{e}");
        // The builder starts again after finish.
        assert_eq!(b.finish().len(), 0);
    }

    #[test]
    fn rows_of_no_points_read_nothing() {
        // Width 0: three rows of nothing, whatever row_step says.
        let fields = vec![field("a", 0, PointType::Int8, 1)];
        let mut b = PointsBuilder::new(&fields).unwrap();
        b.append(&Cloud {
            fields: &fields,
            width: 0,
            height: 3,
            point_step: 1,
            row_step: 100,
            is_bigendian: false,
            data: &[0; 5],
        })
        .unwrap();
        assert_eq!(b.finish().value_length(0), 0);
    }

    #[test]
    fn empty_clouds_and_zero_counts() {
        let fields = vec![field("pad", 0, PointType::Float32, 0)];
        let mut b = PointsBuilder::new(&fields).unwrap();
        b.append(&Cloud {
            fields: &fields,
            width: 2,
            height: 1,
            point_step: 4,
            row_step: 8,
            is_bigendian: false,
            data: &[0; 8],
        })
        .unwrap();
        b.append(&Cloud {
            fields: &fields,
            width: 0,
            height: 0,
            point_step: 4,
            row_step: 0,
            is_bigendian: false,
            data: &[],
        })
        .unwrap();
        let list = b.finish();
        assert_eq!(list.value_length(0), 2);
        assert_eq!(list.value_length(1), 0);
        let s = list.values().as_struct();
        assert_eq!(s.column(0).as_fixed_size_list().value_length(), 0);
        assert_eq!(s.column(0).len(), 2);
    }
}
