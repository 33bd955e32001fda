//! One cloud's points (a struct array as [`super::PointsBuilder`] makes
//! them) written as a point-cloud file: binary PCD v0.7 (PCL's format) or
//! binary little-endian PLY.
//!
//! Both formats come from crates: `pcd-rs` writes the PCD header and records
//! (its dynamic records take any field list), `ply-rs-bw` (the maintained
//! fork of `ply-rs`) the PLY header and elements, streamed point by point.
//! Every point field becomes a PCD field (`COUNT` its count) or a PLY
//! `vertex` property (a `list uchar <type>` when its count is not 1), with
//! its own type: no value is converted. A field of count 0 has no values and
//! is left out. The cloud is written unorganized (`HEIGHT 1`).

use std::collections::HashMap;
use std::io::{Seek, Write};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, UInt8Type, UInt16Type, UInt32Type,
};
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::DataType;
use pcd_rs::{DataKind, DynRecord, Field as PcdField, Schema as PcdSchema, ValueKind, WriterInit};
use ply_rs_bw::ply::{
    Addable, ElementDef, Encoding, Header, PropertyAccess, PropertyDef, PropertyType, ScalarType,
};

use super::layout::PointType;
use crate::error::{MediaError, Result};

/// The file formats a cloud is written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloudFormat {
    /// PCD v0.7, `DATA binary`.
    Pcd,
    /// PLY 1.0, `binary_little_endian`, one `vertex` element.
    Ply,
}

impl CloudFormat {
    /// The file name extension (`pcd`, `ply`).
    pub fn extension(self) -> &'static str {
        match self {
            CloudFormat::Pcd => "pcd",
            CloudFormat::Ply => "ply",
        }
    }
}

/// One point field's values: the flat values and how many per point.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    datatype: PointType,
    count: usize,
    values: ArrayRef,
}

impl Column {
    /// The columns of `points`, without fields of count 0; a field that is not a
    /// point value (or a fixed-size list of them) is refused.
    fn all(points: &StructArray) -> Result<Vec<Column>> {
        let mut out = Vec::new();
        for (field, array) in points.fields().iter().zip(points.columns()) {
            let (values, count) = match array.data_type() {
                DataType::FixedSizeList(_, n) => {
                    let l = array.as_fixed_size_list();
                    let start = l.offset() * *n as usize;
                    (l.values().slice(start, l.len() * *n as usize), *n as usize)
                }
                _ => (Arc::clone(array), 1),
            };
            let datatype = PointType::of_data_type(values.data_type()).ok_or_else(|| {
                MediaError::Unsupported(format!(
                    "point field {:?} of type {} in a point-cloud file",
                    field.name(),
                    array.data_type()
                ))
            })?;
            if field.name().is_empty() || field.name().chars().any(char::is_whitespace) {
                return Err(MediaError::Unsupported(format!(
                    "point field name {:?} in a point-cloud file (names are space-separated there)",
                    field.name()
                )));
            }
            if count > 0 {
                out.push(Column {
                    name: field.name().clone(),
                    datatype,
                    count,
                    values,
                });
            }
        }
        Ok(out)
    }
}

/// Writes `points` (one cloud) to `out` as `format`.
pub fn write_cloud<W: Write + Seek>(
    out: W,
    points: &StructArray,
    format: CloudFormat,
) -> Result<()> {
    let columns = Column::all(points)?;
    match format {
        CloudFormat::Pcd => write_pcd(out, &columns, points.len()),
        CloudFormat::Ply => write_ply(out, &columns, points.len()),
    }
}

/// The error of a failed write.
fn write_error(format: &str, e: impl std::fmt::Display) -> MediaError {
    MediaError::Write(format!("writing {format}: {e}"))
}

fn write_pcd<W: Write + Seek>(out: W, columns: &[Column], n: usize) -> Result<()> {
    let schema: PcdSchema = columns
        .iter()
        .map(|c| {
            let kind = match c.datatype {
                PointType::Int8 => ValueKind::I8,
                PointType::Uint8 => ValueKind::U8,
                PointType::Int16 => ValueKind::I16,
                PointType::Uint16 => ValueKind::U16,
                PointType::Int32 => ValueKind::I32,
                PointType::Uint32 => ValueKind::U32,
                PointType::Float32 => ValueKind::F32,
                PointType::Float64 => ValueKind::F64,
            };
            (c.name.as_str(), kind, c.count as u64)
        })
        .collect();
    let mut w = WriterInit {
        width: n as u64,
        height: 1,
        viewpoint: Default::default(),
        data_kind: DataKind::Binary,
        schema: Some(schema),
        version: None,
    }
    .build_from_writer::<DynRecord, _>(out)
    .map_err(|e| write_error("PCD", e))?;
    for i in 0..n {
        let record = DynRecord(columns.iter().map(|c| pcd_field(c, i)).collect());
        w.push(&record).map_err(|e| write_error("PCD", e))?;
    }
    w.finish().map_err(|e| write_error("PCD", e))
}

/// Point `i`'s values of `c` as a PCD record field.
fn pcd_field(c: &Column, i: usize) -> PcdField {
    let r = i * c.count..(i + 1) * c.count;
    let v = &c.values;
    match c.datatype {
        PointType::Int8 => PcdField::I8(v.as_primitive::<Int8Type>().values()[r].to_vec()),
        PointType::Uint8 => PcdField::U8(v.as_primitive::<UInt8Type>().values()[r].to_vec()),
        PointType::Int16 => PcdField::I16(v.as_primitive::<Int16Type>().values()[r].to_vec()),
        PointType::Uint16 => PcdField::U16(v.as_primitive::<UInt16Type>().values()[r].to_vec()),
        PointType::Int32 => PcdField::I32(v.as_primitive::<Int32Type>().values()[r].to_vec()),
        PointType::Uint32 => PcdField::U32(v.as_primitive::<UInt32Type>().values()[r].to_vec()),
        PointType::Float32 => PcdField::F32(v.as_primitive::<Float32Type>().values()[r].to_vec()),
        PointType::Float64 => PcdField::F64(v.as_primitive::<Float64Type>().values()[r].to_vec()),
    }
}

fn write_ply<W: Write>(mut out: W, columns: &[Column], n: usize) -> Result<()> {
    let mut vertex = ElementDef::new("vertex".to_string());
    vertex.count = n;
    for c in columns {
        let scalar = match c.datatype {
            PointType::Int8 => ScalarType::Char,
            PointType::Uint8 => ScalarType::UChar,
            PointType::Int16 => ScalarType::Short,
            PointType::Uint16 => ScalarType::UShort,
            PointType::Int32 => ScalarType::Int,
            PointType::Uint32 => ScalarType::UInt,
            PointType::Float32 => ScalarType::Float,
            PointType::Float64 => ScalarType::Double,
        };
        let data_type = if c.count == 1 {
            PropertyType::Scalar(scalar)
        } else {
            if c.count > usize::from(u8::MAX) {
                return Err(MediaError::Unsupported(format!(
                    "point field {:?} of count {} in a PLY file (at most 255)",
                    c.name, c.count
                )));
            }
            PropertyType::List(ScalarType::UChar, scalar)
        };
        vertex
            .properties
            .add(PropertyDef::new(c.name.clone(), data_type));
    }
    let mut header = Header::new();
    header.encoding = Encoding::BinaryLittleEndian;
    header.elements.add(vertex.clone());
    let writer = ply_rs_bw::writer::Writer::<PlyPoint>::new();
    writer
        .write_header(&mut out, &header)
        .map_err(|e| write_error("PLY", e))?;
    let mut point = PlyPoint {
        columns: Arc::new(PlyColumns::new(columns)),
        i: 0,
    };
    for i in 0..n {
        point.i = i;
        writer
            .write_little_endian_element(&mut out, &point, &vertex)
            .map_err(|e| write_error("PLY", e))?;
    }
    out.flush().map_err(|e| write_error("PLY", e))
}

/// The columns of a cloud by name, for [`PlyPoint`].
#[derive(Debug, Default)]
struct PlyColumns {
    by_name: HashMap<String, Column>,
}

impl PlyColumns {
    fn new(columns: &[Column]) -> Self {
        Self {
            by_name: columns
                .iter()
                .map(|c| (c.name.clone(), c.clone()))
                .collect(),
        }
    }
}

/// One point of a cloud, as the PLY writer reads its properties.
#[derive(Debug)]
struct PlyPoint {
    columns: Arc<PlyColumns>,
    i: usize,
}

impl PlyPoint {
    /// The values of property `name` of this point, if it is of type `T`.
    fn values<T: arrow_array::ArrowPrimitiveType>(&self, name: &str) -> Option<&[T::Native]> {
        let c = self.columns.by_name.get(name)?;
        let v = c.values.as_primitive_opt::<T>()?;
        v.values().get(self.i * c.count..(self.i + 1) * c.count)
    }

    fn one<T: arrow_array::ArrowPrimitiveType>(&self, name: &str) -> Option<T::Native> {
        self.values::<T>(name)?.first().copied()
    }
}

impl PropertyAccess for PlyPoint {
    fn new() -> Self {
        PlyPoint {
            columns: Arc::default(),
            i: 0,
        }
    }
    fn get_char(&self, k: &str) -> Option<i8> {
        self.one::<Int8Type>(k)
    }
    fn get_uchar(&self, k: &str) -> Option<u8> {
        self.one::<UInt8Type>(k)
    }
    fn get_short(&self, k: &str) -> Option<i16> {
        self.one::<Int16Type>(k)
    }
    fn get_ushort(&self, k: &str) -> Option<u16> {
        self.one::<UInt16Type>(k)
    }
    fn get_int(&self, k: &str) -> Option<i32> {
        self.one::<Int32Type>(k)
    }
    fn get_uint(&self, k: &str) -> Option<u32> {
        self.one::<UInt32Type>(k)
    }
    fn get_float(&self, k: &str) -> Option<f32> {
        self.one::<Float32Type>(k)
    }
    fn get_double(&self, k: &str) -> Option<f64> {
        self.one::<Float64Type>(k)
    }
    fn get_list_char(&self, k: &str) -> Option<&[i8]> {
        self.values::<Int8Type>(k)
    }
    fn get_list_uchar(&self, k: &str) -> Option<&[u8]> {
        self.values::<UInt8Type>(k)
    }
    fn get_list_short(&self, k: &str) -> Option<&[i16]> {
        self.values::<Int16Type>(k)
    }
    fn get_list_ushort(&self, k: &str) -> Option<&[u16]> {
        self.values::<UInt16Type>(k)
    }
    fn get_list_int(&self, k: &str) -> Option<&[i32]> {
        self.values::<Int32Type>(k)
    }
    fn get_list_uint(&self, k: &str) -> Option<&[u32]> {
        self.values::<UInt32Type>(k)
    }
    fn get_list_float(&self, k: &str) -> Option<&[f32]> {
        self.values::<Float32Type>(k)
    }
    fn get_list_double(&self, k: &str) -> Option<&[f64]> {
        self.values::<Float64Type>(k)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::points::{Cloud, PointField, PointsBuilder};

    fn cloud() -> StructArray {
        let fields = vec![
            PointField {
                name: "x".into(),
                offset: 0,
                datatype: PointType::Float32,
                count: 1,
            },
            PointField {
                name: "rgb".into(),
                offset: 4,
                datatype: PointType::Uint8,
                count: 3,
            },
        ];
        let mut data = Vec::new();
        for (x, rgb) in [(1.5f32, [1u8, 2, 3]), (f32::NAN, [4, 5, 6])] {
            data.extend(x.to_le_bytes());
            data.extend(rgb);
            data.push(0);
        }
        let mut b = PointsBuilder::new(&fields).unwrap();
        b.append(&Cloud {
            fields: &fields,
            width: 2,
            height: 1,
            point_step: 8,
            row_step: 16,
            is_bigendian: false,
            data: &data,
        })
        .unwrap();
        b.finish().value(0).as_struct().clone()
    }

    #[test]
    fn pcd_holds_the_header_and_packed_points() {
        let mut out = Cursor::new(Vec::new());
        write_cloud(&mut out, &cloud(), CloudFormat::Pcd).unwrap();
        let bytes = out.into_inner();
        let text = String::from_utf8_lossy(&bytes);
        let header_end = text.find("DATA binary\n").unwrap() + "DATA binary\n".len();
        let header = &text[..header_end];
        assert!(
            header.contains(
                "VERSION .7\nFIELDS x rgb\nSIZE 4 1\nTYPE F U\nCOUNT 1 3\nWIDTH 2\nHEIGHT 1\n"
            ),
            "{header}"
        );
        assert!(header.contains("POINTS 2"), "{header}");
        let body = &bytes[header_end..];
        assert_eq!(body.len(), 14);
        assert_eq!(&body[..4], &1.5f32.to_le_bytes());
        assert_eq!(&body[4..7], &[1, 2, 3]);
        assert!(f32::from_le_bytes(body[7..11].try_into().unwrap()).is_nan());
        assert_eq!(&body[11..14], &[4, 5, 6]);
    }

    #[test]
    fn ply_holds_a_vertex_element_with_list_properties_for_counts() {
        let mut out = Cursor::new(Vec::new());
        write_cloud(&mut out, &cloud(), CloudFormat::Ply).unwrap();
        let bytes = out.into_inner();
        let header = "ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\nproperty list uchar uchar rgb\nend_header\n";
        assert_eq!(&bytes[..header.len()], header.as_bytes());
        let body = &bytes[header.len()..];
        let mut expected = 1.5f32.to_le_bytes().to_vec();
        expected.extend([3, 1, 2, 3]);
        expected.extend(f32::NAN.to_le_bytes());
        expected.extend([3, 4, 5, 6]);
        assert_eq!(body.len(), expected.len());
        assert_eq!(&body[..8], &expected[..8]);
        assert!(f32::from_le_bytes(body[8..12].try_into().unwrap()).is_nan());
        assert_eq!(&body[12..], &expected[12..]);
    }
}
