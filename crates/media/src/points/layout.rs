//! The layout of a point cloud: point datatypes, point fields, the cloud's
//! geometry (width, height, point and row steps, byte order) and the checks
//! that make reading its values safe.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields};

use crate::error::{MediaError, Result};

/// The most points one cloud may hold (2^26, about 67 million: a few
/// hundred times a 128-beam lidar's revolution). A cloud whose `width *
/// height` is larger fails with [`MediaError::Limit`] before anything is
/// allocated for it.
pub const MAX_POINTS_PER_CLOUD: u64 = 1 << 26;

/// The largest count of one point field (an Arrow fixed-size list holds
/// at most `i32::MAX` values per entry).
pub const MAX_FIELD_COUNT: u32 = i32::MAX as u32;

/// The datatype of one point field's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PointType {
    /// `INT8`: a signed byte.
    Int8,
    /// `UINT8`: an unsigned byte.
    Uint8,
    /// `INT16`.
    Int16,
    /// `UINT16`.
    Uint16,
    /// `INT32`.
    Int32,
    /// `UINT32`.
    Uint32,
    /// `FLOAT32`.
    Float32,
    /// `FLOAT64`.
    Float64,
}

impl PointType {
    /// Every datatype, in `sensor_msgs/PointField` order (`INT8` = 1 ...
    /// `FLOAT64` = 8).
    pub const ALL: [PointType; 8] = [
        PointType::Int8,
        PointType::Uint8,
        PointType::Int16,
        PointType::Uint16,
        PointType::Int32,
        PointType::Uint32,
        PointType::Float32,
        PointType::Float64,
    ];

    /// The datatype of a `sensor_msgs/PointField` constant (`INT8` = 1,
    /// `UINT8` = 2, `INT16` = 3, `UINT16` = 4, `INT32` = 5, `UINT32` = 6,
    /// `FLOAT32` = 7, `FLOAT64` = 8).
    pub fn from_ros(datatype: u64) -> Result<Self> {
        match datatype {
            1..=8 => Ok(Self::ALL[datatype as usize - 1]),
            other => Err(MediaError::Unsupported(format!(
                "point field datatype {other} (sensor_msgs/PointField knows 1 INT8, 2 UINT8, 3 INT16, 4 UINT16, 5 INT32, 6 UINT32, 7 FLOAT32, 8 FLOAT64)"
            ))),
        }
    }

    /// The datatype of a `foxglove.PackedElementField.NumericType` number
    /// (`UINT8` = 1, `INT8` = 2, `UINT16` = 3, `INT16` = 4, `UINT32` = 5,
    /// `INT32` = 6, `FLOAT32` = 7, `FLOAT64` = 8).
    pub fn from_foxglove(numeric_type: u64) -> Result<Self> {
        use PointType::*;
        Ok(match numeric_type {
            1 => Uint8,
            2 => Int8,
            3 => Uint16,
            4 => Int16,
            5 => Uint32,
            6 => Int32,
            7 => Float32,
            8 => Float64,
            other => {
                return Err(MediaError::Unsupported(format!(
                    "point field type {other} (foxglove.PackedElementField knows 1 UINT8, 2 INT8, 3 UINT16, 4 INT16, 5 UINT32, 6 INT32, 7 FLOAT32, 8 FLOAT64)"
                )));
            }
        })
    }

    /// The datatype of its name (`INT8` ... `FLOAT64`, any case), as a
    /// protobuf enum value or a JSON message spells it.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                MediaError::Unsupported(format!(
                    "point field type {name:?} (known: INT8, UINT8, INT16, UINT16, INT32, UINT32, FLOAT32, FLOAT64)"
                ))
            })
    }

    /// The upper-case name (`FLOAT32`).
    pub fn name(self) -> &'static str {
        match self {
            PointType::Int8 => "INT8",
            PointType::Uint8 => "UINT8",
            PointType::Int16 => "INT16",
            PointType::Uint16 => "UINT16",
            PointType::Int32 => "INT32",
            PointType::Uint32 => "UINT32",
            PointType::Float32 => "FLOAT32",
            PointType::Float64 => "FLOAT64",
        }
    }

    /// Bytes per value.
    pub fn size(self) -> usize {
        match self {
            PointType::Int8 | PointType::Uint8 => 1,
            PointType::Int16 | PointType::Uint16 => 2,
            PointType::Int32 | PointType::Uint32 | PointType::Float32 => 4,
            PointType::Float64 => 8,
        }
    }

    /// The Arrow type of one value.
    pub fn data_type(self) -> DataType {
        match self {
            PointType::Int8 => DataType::Int8,
            PointType::Uint8 => DataType::UInt8,
            PointType::Int16 => DataType::Int16,
            PointType::Uint16 => DataType::UInt16,
            PointType::Int32 => DataType::Int32,
            PointType::Uint32 => DataType::UInt32,
            PointType::Float32 => DataType::Float32,
            PointType::Float64 => DataType::Float64,
        }
    }

    /// The datatype of an Arrow type, the inverse of [`PointType::data_type`].
    pub fn of_data_type(t: &DataType) -> Option<Self> {
        Self::ALL.into_iter().find(|p| &p.data_type() == t)
    }
}

/// One field of a point: `sensor_msgs/PointField` (or a
/// `foxglove.PackedElementField`, whose count is 1).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PointField {
    /// The field's name (`x`, `intensity`, `ring`, ...).
    pub name: String,
    /// Byte offset of its first value inside a point.
    pub offset: u32,
    /// The datatype of its values.
    pub datatype: PointType,
    /// Values per point: 1 for a scalar; otherwise consecutive values, read
    /// as a fixed-size list (0 gives an empty list, as NumPy's `(type, 0)`).
    pub count: u32,
}

impl PointField {
    /// The Arrow type of the field in a point: the value type, or a
    /// fixed-size list of `count` values.
    pub fn data_type(&self) -> DataType {
        let value = self.datatype.data_type();
        if self.count == 1 {
            value
        } else {
            DataType::FixedSizeList(
                Arc::new(Field::new("item", value, false)),
                self.count as i32,
            )
        }
    }

    /// The field's bytes in a point: `offset` up to its end.
    fn end(&self) -> u64 {
        u64::from(self.offset) + self.datatype.size() as u64 * u64::from(self.count)
    }

    /// `"x" (FLOAT32 at offset 0)`, for messages.
    pub fn describe(&self) -> String {
        let count = if self.count == 1 {
            String::new()
        } else {
            format!(" x{}", self.count)
        };
        format!(
            "{:?} ({}{count} at offset {})",
            self.name,
            self.datatype.name(),
            self.offset
        )
    }
}

/// The Arrow fields of one point, one per point field in their order:
/// the struct inside the `points` list.
pub fn point_fields(fields: &[PointField]) -> Fields {
    fields
        .iter()
        .map(|f| Field::new(&f.name, f.data_type(), false))
        .collect()
}

/// One cloud: its fields, geometry and bytes, as its message holds them.
#[derive(Debug, Clone, Copy)]
pub struct Cloud<'a> {
    /// The point fields.
    pub fields: &'a [PointField],
    /// Points per row.
    pub width: u32,
    /// Rows (1 for an unorganized cloud).
    pub height: u32,
    /// Bytes per point.
    pub point_step: u32,
    /// Bytes per row (at least `width * point_step`; more is padding).
    pub row_step: u32,
    /// Whether multi-byte values are big-endian.
    pub is_bigendian: bool,
    /// The points' bytes: at least `row_step * height`.
    pub data: &'a [u8],
}

impl<'a> Cloud<'a> {
    /// A `foxglove.PointCloud`: `data` holds consecutive points of
    /// `point_stride` bytes, little-endian, in one row. Its length must be a
    /// multiple of the stride.
    pub fn foxglove(fields: &'a [PointField], point_stride: u32, data: &'a [u8]) -> Result<Self> {
        let len = data.len() as u64;
        let width = match point_stride {
            0 if len == 0 => 0,
            0 => {
                return Err(MediaError::Invalid(format!(
                    "point_stride is 0 but data holds {len} bytes"
                )));
            }
            s if !len.is_multiple_of(u64::from(s)) => {
                return Err(MediaError::Invalid(format!(
                    "data of {len} bytes is not a whole number of points of point_stride {s} bytes"
                )));
            }
            s => len / u64::from(s),
        };
        let width = u32::try_from(width)
            .ok()
            .filter(|w| u64::from(*w) <= MAX_POINTS_PER_CLOUD)
            .ok_or_else(|| too_many(width))?;
        Ok(Cloud {
            fields,
            width,
            height: 1,
            point_step: point_stride,
            row_step: width * point_stride,
            is_bigendian: false,
            data,
        })
    }

    /// Points in the cloud: `width * height`.
    pub fn point_count(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// Checks that every value the fields name lies inside the data: the
    /// point count within [`MAX_POINTS_PER_CLOUD`], unique field names, every
    /// field inside `point_step`, `width * point_step <= row_step`, and at
    /// least `row_step * height` bytes of data.
    pub fn validate(&self) -> Result<()> {
        let n = self.point_count();
        if n > MAX_POINTS_PER_CLOUD {
            return Err(too_many(n));
        }
        check_fields(self.fields)?;
        for f in self.fields {
            if f.end() > u64::from(self.point_step) {
                return Err(MediaError::Invalid(format!(
                    "point field {} ends at byte {}, past point_step {}",
                    f.describe(),
                    f.end(),
                    self.point_step
                )));
            }
        }
        if n == 0 {
            return Ok(());
        }
        let row = u64::from(self.width) * u64::from(self.point_step);
        if row > u64::from(self.row_step) {
            return Err(MediaError::Invalid(format!(
                "row_step {} is shorter than a row of width {} x point_step {} = {row} bytes",
                self.row_step, self.width, self.point_step
            )));
        }
        let need = u64::from(self.row_step) * u64::from(self.height);
        if (self.data.len() as u64) < need {
            return Err(MediaError::Invalid(format!(
                "data holds {} bytes but row_step {} x height {} needs {need}",
                self.data.len(),
                self.row_step,
                self.height
            )));
        }
        Ok(())
    }
}

/// Checks that the names of `fields` are unique and no count is above
/// [`MAX_FIELD_COUNT`].
pub fn check_fields(fields: &[PointField]) -> Result<()> {
    let mut names = HashSet::new();
    for f in fields {
        if !names.insert(f.name.as_str()) {
            return Err(MediaError::Invalid(format!(
                "point field {:?} appears twice",
                f.name
            )));
        }
        if f.count > MAX_FIELD_COUNT {
            return Err(MediaError::Limit(format!(
                "point field {} has a count of {}, more than {MAX_FIELD_COUNT}",
                f.describe(),
                f.count
            )));
        }
    }
    Ok(())
}

/// The error of a cloud of `n` points, above [`MAX_POINTS_PER_CLOUD`].
fn too_many(n: u64) -> MediaError {
    MediaError::Limit(format!(
        "the cloud claims {n} points, more than the {MAX_POINTS_PER_CLOUD} a cloud may hold"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, offset: u32, datatype: PointType, count: u32) -> PointField {
        PointField {
            name: name.into(),
            offset,
            datatype,
            count,
        }
    }

    #[test]
    fn datatype_numbers_follow_each_convention() {
        assert_eq!(PointType::from_ros(1).unwrap(), PointType::Int8);
        assert_eq!(PointType::from_ros(2).unwrap(), PointType::Uint8);
        assert_eq!(PointType::from_ros(8).unwrap(), PointType::Float64);
        assert_eq!(PointType::from_foxglove(1).unwrap(), PointType::Uint8);
        assert_eq!(PointType::from_foxglove(2).unwrap(), PointType::Int8);
        assert_eq!(PointType::from_foxglove(7).unwrap(), PointType::Float32);
        assert_eq!(PointType::from_name("float64").unwrap(), PointType::Float64);
        let e = PointType::from_ros(9).unwrap_err().to_string();
        assert!(e.contains("datatype 9"), "{e}");
        assert!(PointType::from_ros(0).is_err());
        assert!(PointType::from_foxglove(0).is_err());
        assert!(PointType::from_name("UNKNOWN").is_err());
    }

    #[test]
    fn checks_name_what_is_wrong() {
        let fields = [field("x", 0, PointType::Float32, 1)];
        let data = [0u8; 16];
        let ok = Cloud {
            fields: &fields,
            width: 2,
            height: 2,
            point_step: 4,
            row_step: 8,
            is_bigendian: false,
            data: &data,
        };
        ok.validate().unwrap();

        let past = [field("x", 2, PointType::Float32, 1)];
        let e = Cloud {
            fields: &past,
            ..ok
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "point field \"x\" (FLOAT32 at offset 2) ends at byte 6, past point_step 4"
        );
        let e = Cloud {
            data: &data[..15],
            ..ok
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert_eq!(e, "data holds 15 bytes but row_step 8 x height 2 needs 16");
        let e = Cloud { row_step: 7, ..ok }
            .validate()
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "row_step 7 is shorter than a row of width 2 x point_step 4 = 8 bytes"
        );
        let twice = [
            field("x", 0, PointType::Uint8, 1),
            field("x", 1, PointType::Uint8, 1),
        ];
        let e = Cloud {
            fields: &twice,
            ..ok
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert_eq!(e, "point field \"x\" appears twice");
        let e = Cloud {
            fields: &[],
            width: u32::MAX,
            height: u32::MAX,
            point_step: 0,
            row_step: 0,
            ..ok
        }
        .validate()
        .unwrap_err();
        assert!(matches!(e, MediaError::Limit(_)), "{e}");
    }

    #[test]
    fn foxglove_clouds_are_whole_points() {
        let fields = [field("x", 0, PointType::Float32, 1)];
        let c = Cloud::foxglove(&fields, 4, &[0; 12]).unwrap();
        assert_eq!((c.width, c.height, c.row_step), (3, 1, 12));
        let e = Cloud::foxglove(&fields, 4, &[0; 13])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "data of 13 bytes is not a whole number of points of point_stride 4 bytes"
        );
        assert!(Cloud::foxglove(&fields, 0, &[0; 1]).is_err());
        assert_eq!(Cloud::foxglove(&[], 0, &[]).unwrap().point_count(), 0);
    }
}
