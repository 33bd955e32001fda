//! Scalar functions over `read_images`' image values:
//!
//! - `image_thumbnail(image, max_side)`: a PNG at most `max_side` pixels on
//!   its longer side;
//! - `image_encode(image, 'png' | 'jpeg' [, quality])`: the image as PNG
//!   (16-bit grey kept) or JPEG (quality 1 to 100, default 90); an image
//!   already in that format (a JPEG without a quality given) is returned as
//!   it is;
//! - `image_pixels(image, 'rgb8' | 'mono8' | 'mono16')`: the pixels,
//!   row-major without padding (`mono16` little-endian).
//!
//! A null image gives null. An image that does not decode is an error, or
//! under `logsql.on_error = 'warn'` null and a warning.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use logsql_media::images::arrow::{ImageColumn, image_type};
use logsql_media::images::{Codec, Image, PixelFormat};

use super::value_caps;
use crate::scanner::options::{LogsqlOptions, OnError};

/// Registers `image_thumbnail`, `image_encode` and `image_pixels`.
pub fn register(ctx: &SessionContext) {
    for op in [Op::Thumbnail, Op::Encode, Op::Pixels] {
        ctx.register_udf(ScalarUDF::new_from_impl(ImageFunction::new(op)));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Thumbnail,
    Encode,
    Pixels,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Self::Thumbnail => "image_thumbnail",
            Self::Encode => "image_encode",
            Self::Pixels => "image_pixels",
        }
    }

    fn usage(self) -> &'static str {
        match self {
            Self::Thumbnail => "image_thumbnail(image, max_side), e.g. image_thumbnail(image, 128)",
            Self::Encode => {
                "image_encode(image, 'png' | 'jpeg' [, quality]), e.g. image_encode(image, 'jpeg', 85)"
            }
            Self::Pixels => {
                "image_pixels(image, 'rgb8' | 'mono8' | 'mono16'), e.g. image_pixels(image, 'rgb8')"
            }
        }
    }
}

/// One of the three image functions.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ImageFunction {
    op: Op,
    signature: Signature,
}

impl ImageFunction {
    fn new(op: Op) -> Self {
        Self {
            op,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// One row's second and third arguments.
enum Param {
    MaxSide(u32),
    Encode(Codec, Option<u8>),
    Pixels(PixelFormat),
}

impl ScalarUDFImpl for ImageFunction {
    fn name(&self) -> &str {
        self.op.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let arity_ok = match self.op {
            Op::Encode => matches!(arg_types.len(), 2 | 3),
            _ => arg_types.len() == 2,
        };
        if !arity_ok || arg_types[0] != image_type() && arg_types[0] != DataType::Null {
            return Err(DataFusionError::Plan(format!(
                "{} takes an image from read_images: {}",
                self.op.name(),
                self.op.usage()
            )));
        }
        let mut out = vec![image_type()];
        out.push(match self.op {
            Op::Thumbnail => DataType::Int64,
            _ => DataType::Utf8,
        });
        if arg_types.len() == 3 {
            out.push(DataType::Int64);
        }
        Ok(out)
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let warn = LogsqlOptions::from_config(&args.config_options).on_error == OnError::Warn;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let images = ImageColumn::new(arrays[0].as_ref()).map_err(|e| self.plan_err(e))?;
        // What the column holds so far, under the cap on one value.
        let cap = value_caps::max_value_bytes(&args.config_options);
        let mut made = 0u128;
        let mut out = BinaryBuilder::new();
        for i in 0..args.number_rows {
            let (Some(image), Some(param)) = (images.get(i), self.param(&arrays, i)?) else {
                out.append_null();
                continue;
            };
            // Pixels are counted from the header before they are decoded.
            if let Param::Pixels(format) = &param {
                let pixels = u128::from(image.width) * u128::from(image.height);
                let bytes = pixels * format.bytes_per_pixel() as u128;
                if made + bytes > u128::from(cap) {
                    return Err(self.too_large(made + bytes, cap, i));
                }
            }
            match self.apply(&image, &param) {
                Ok(bytes) if made + bytes.len() as u128 > u128::from(cap) => {
                    return Err(self.too_large(made + bytes.len() as u128, cap, i));
                }
                Ok(bytes) => {
                    made += bytes.len() as u128;
                    out.append_value(bytes)
                }
                Err(e) => {
                    let source = images.source(i).map_or(String::new(), |s| format!("{s}: "));
                    let message = format!(
                        "{}: {source}the {} image of {}x{} pixels: {e}",
                        self.op.name(),
                        image.encoding,
                        image.width,
                        image.height
                    );
                    if !warn {
                        return Err(DataFusionError::Execution(format!(
                            "{message} (SET logsql.on_error = 'warn' for null and a warning instead)"
                        )));
                    }
                    log::warn!("{message}");
                    out.append_null();
                }
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish()) as ArrayRef))
    }
}

impl ImageFunction {
    fn plan_err(&self, e: impl std::fmt::Display) -> DataFusionError {
        DataFusionError::Execution(format!(
            "{}: {e}; usage: {}",
            self.op.name(),
            self.op.usage()
        ))
    }

    /// The error of a column that would pass the cap on one value at row
    /// `row` of its batch.
    fn too_large(&self, bytes: u128, cap: u64, row: usize) -> DataFusionError {
        let what = format!(
            "{} of {} images (one batch's; select fewer rows, or smaller images with \
             image_thumbnail)",
            self.op.name(),
            row + 1
        );
        value_caps::too_large(&what, bytes, cap)
    }

    /// Row `i`'s parameters, `None` when one is null; a bad value is an error
    /// whatever the error policy (it is the query's mistake, not the data's).
    fn param(&self, arrays: &[ArrayRef], i: usize) -> Result<Option<Param>> {
        let second = &arrays[1];
        if second.is_null(i) {
            return Ok(None);
        }
        Ok(Some(match self.op {
            Op::Thumbnail => {
                let v = second.as_primitive::<Int64Type>().value(i);
                match u32::try_from(v) {
                    Ok(n) if n >= 1 => Param::MaxSide(n),
                    _ => {
                        return Err(self.plan_err(format!(
                            "max_side must be a positive number of pixels, not {v}"
                        )));
                    }
                }
            }
            Op::Encode => {
                let codec = Codec::parse(second.as_string::<i32>().value(i))
                    .map_err(|e| self.plan_err(e))?;
                let quality = match arrays.get(2) {
                    None => None,
                    Some(q) if q.is_null(i) => return Ok(None),
                    Some(q) => {
                        let v = q.as_primitive::<Int64Type>().value(i);
                        match u8::try_from(v) {
                            Ok(n) if (1..=100).contains(&n) => Some(n),
                            _ => {
                                return Err(
                                    self.plan_err(format!("quality must be 1 to 100, not {v}"))
                                );
                            }
                        }
                    }
                };
                Param::Encode(codec, quality)
            }
            Op::Pixels => Param::Pixels(
                PixelFormat::parse(second.as_string::<i32>().value(i))
                    .map_err(|e| self.plan_err(e))?,
            ),
        }))
    }

    fn apply(&self, image: &Image<'_>, param: &Param) -> logsql_media::Result<Vec<u8>> {
        match *param {
            Param::MaxSide(n) => image.thumbnail_png(n),
            Param::Encode(codec, quality) => image.encode(codec, quality),
            Param::Pixels(format) => Ok(image.pixels(format)?.data),
        }
    }
}
