//! The one Arrow type images travel in: a struct of `encoding`, `width`,
//! `height`, `step`, `is_bigendian` and `data`, the fields of an [`Image`],
//! and `source`, where the image was logged (`FILE: topic "T": the image
//! logged at N ns`), which errors about the image name. `read_images` builds
//! it, the image functions and exports read it.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, StringBuilder, UInt32Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, StringArray, StructArray, UInt32Array,
};
use arrow_buffer::NullBufferBuilder;
use arrow_schema::{DataType, Field, Fields};

use super::Image;
use crate::error::{MediaError, Result};

/// The struct fields of the image type, in order. They are nullable so that
/// a null image's fields are null too (`image['width']` of a null image).
pub fn image_fields() -> Fields {
    Fields::from(vec![
        Field::new("encoding", DataType::Utf8, true),
        Field::new("width", DataType::UInt32, true),
        Field::new("height", DataType::UInt32, true),
        Field::new("step", DataType::UInt32, true),
        Field::new("is_bigendian", DataType::Boolean, true),
        Field::new("data", DataType::Binary, true),
        Field::new("source", DataType::Utf8, true),
    ])
}

/// The Arrow type of an image value.
pub fn image_type() -> DataType {
    DataType::Struct(image_fields())
}

/// Reads the images of a column of [`image_type`].
pub struct ImageColumn<'a> {
    array: &'a StructArray,
    encoding: &'a StringArray,
    width: &'a UInt32Array,
    height: &'a UInt32Array,
    step: &'a UInt32Array,
    is_bigendian: &'a BooleanArray,
    data: &'a BinaryArray,
    source: &'a StringArray,
}

impl<'a> ImageColumn<'a> {
    /// The column's images, or an error if it is not of [`image_type`].
    pub fn new(array: &'a dyn Array) -> Result<Self> {
        let not_image = || {
            MediaError::Invalid(format!(
                "not an image value: {} (images come from read_images)",
                array.data_type()
            ))
        };
        if array.data_type() != &image_type() {
            return Err(not_image());
        }
        let s = array.as_struct_opt().ok_or_else(not_image)?;
        Ok(Self {
            array: s,
            encoding: s.column(0).as_string::<i32>(),
            width: s.column(1).as_primitive::<UInt32Type>(),
            height: s.column(2).as_primitive::<UInt32Type>(),
            step: s.column(3).as_primitive::<UInt32Type>(),
            is_bigendian: s.column(4).as_boolean(),
            data: s.column(5).as_binary::<i32>(),
            source: s.column(6).as_string::<i32>(),
        })
    }

    /// Where row `i`'s image was logged, for messages: `FILE: topic "T":
    /// the image logged at N ns`; `None` for a null row or an image made
    /// elsewhere.
    pub fn source(&self, i: usize) -> Option<&'a str> {
        (!self.array.is_null(i) && self.source.is_valid(i)).then(|| self.source.value(i))
    }

    /// Rows in the column.
    pub fn len(&self) -> usize {
        self.array.len()
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.array.is_empty()
    }

    /// Row `i`'s image, `None` where the row is null.
    pub fn get(&self, i: usize) -> Option<Image<'a>> {
        if self.array.is_null(i) {
            return None;
        }
        Some(Image {
            encoding: self.encoding.value(i),
            width: self.width.value(i),
            height: self.height.value(i),
            step: self.step.value(i),
            is_bigendian: self.is_bigendian.value(i),
            data: self.data.value(i),
        })
    }
}

/// Builds a column of [`image_type`].
pub struct ImageBuilder {
    encoding: StringBuilder,
    width: UInt32Builder,
    height: UInt32Builder,
    step: UInt32Builder,
    is_bigendian: BooleanBuilder,
    data: BinaryBuilder,
    source: StringBuilder,
    nulls: NullBufferBuilder,
}

impl ImageBuilder {
    /// An empty builder with room for `rows` images.
    pub fn with_capacity(rows: usize) -> Self {
        Self {
            encoding: StringBuilder::with_capacity(rows, rows * 8),
            width: UInt32Builder::with_capacity(rows),
            height: UInt32Builder::with_capacity(rows),
            step: UInt32Builder::with_capacity(rows),
            is_bigendian: BooleanBuilder::with_capacity(rows),
            data: BinaryBuilder::new(),
            source: StringBuilder::with_capacity(rows, rows * 64),
            nulls: NullBufferBuilder::new(rows),
        }
    }

    /// Appends an image, or a null row (whose fields are null too), of no
    /// known source.
    pub fn append(&mut self, image: Option<&Image<'_>>) {
        self.append_from(image, None);
    }

    /// Appends an image logged at `source` (see [`ImageColumn::source`]), or
    /// a null row.
    pub fn append_from(&mut self, image: Option<&Image<'_>>, source: Option<&str>) {
        self.encoding.append_option(image.map(|im| im.encoding));
        self.width.append_option(image.map(|im| im.width));
        self.height.append_option(image.map(|im| im.height));
        self.step.append_option(image.map(|im| im.step));
        self.is_bigendian
            .append_option(image.map(|im| im.is_bigendian));
        self.data.append_option(image.map(|im| im.data));
        self.source
            .append_option(source.filter(|_| image.is_some()));
        self.nulls.append(image.is_some());
    }

    /// The column built so far.
    pub fn finish(&mut self) -> StructArray {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.encoding.finish()),
            Arc::new(self.width.finish()),
            Arc::new(self.height.finish()),
            Arc::new(self.step.finish()),
            Arc::new(self.is_bigendian.finish()),
            Arc::new(self.data.finish()),
            Arc::new(self.source.finish()),
        ];
        StructArray::new(image_fields(), columns, self.nulls.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_round_trip_through_arrow() {
        let im = Image {
            encoding: "mono16",
            width: 1,
            height: 1,
            step: 2,
            is_bigendian: true,
            data: &[1, 2],
        };
        let mut b = ImageBuilder::with_capacity(3);
        b.append(Some(&im));
        b.append(None);
        b.append_from(
            Some(&im),
            Some("a.mcap: topic \"/cam\": the image logged at 5 ns"),
        );
        let array = b.finish();
        assert_eq!(array.data_type(), &image_type());
        let col = ImageColumn::new(&array).unwrap();
        assert_eq!(col.len(), 3);
        assert_eq!(col.source(0), None);
        assert_eq!(col.source(1), None);
        assert_eq!(
            col.source(2),
            Some("a.mcap: topic \"/cam\": the image logged at 5 ns")
        );
        let back = col.get(0).unwrap();
        assert_eq!(
            (
                back.encoding,
                back.width,
                back.step,
                back.is_bigendian,
                back.data
            ),
            ("mono16", 1, 2, true, &[1u8, 2][..])
        );
        assert!(col.get(1).is_none());
        assert!(array.column(1).is_null(1), "a null image's width is null");
        let e = ImageColumn::new(&UInt32Array::from(vec![1])).err().unwrap();
        assert!(e.to_string().contains("not an image value: UInt32"), "{e}");
    }
}
