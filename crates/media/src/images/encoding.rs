//! The pixel encodings of raw images (`sensor_msgs/Image.encoding`,
//! `foxglove.RawImage.encoding`) and the pixel formats images convert to.

use crate::error::{MediaError, Result};

/// How the bytes of a raw image hold its pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RawEncoding {
    /// Red, green, blue, one byte each.
    Rgb8,
    /// Blue, green, red, one byte each.
    Bgr8,
    /// Red, green, blue, alpha, one byte each.
    Rgba8,
    /// Blue, green, red, alpha, one byte each.
    Bgra8,
    /// One byte of intensity (also `8UC1`).
    Mono8,
    /// Two bytes of intensity (also `16UC1`), byte order by `is_bigendian`.
    Mono16,
    /// One 32-bit float per pixel (`32FC1`, depth images), byte order by
    /// `is_bigendian`.
    Float32,
    /// One byte per pixel behind a Bayer colour filter (`bayer_*8`).
    Bayer(BayerPattern),
    /// YUV 4:2:2, two pixels in four bytes ordered U Y0 V Y1 (`yuv422`, `uyvy`).
    Uyvy,
    /// YUV 4:2:2, two pixels in four bytes ordered Y0 U Y1 V (`yuyv`, `yuv422_yuy2`).
    Yuyv,
}

/// The colour of the top-left 2x2 cell of a Bayer filter, row by row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BayerPattern {
    /// Red, green / green, blue.
    Rggb,
    /// Blue, green / green, red.
    Bggr,
    /// Green, blue / red, green.
    Gbrg,
    /// Green, red / blue, green.
    Grbg,
}

impl RawEncoding {
    /// The encoding named by a message's `encoding` string (the names of ROS's
    /// `sensor_msgs/image_encodings.h` and Foxglove's `RawImage`), case
    /// sensitive as there.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "rgb8" => Self::Rgb8,
            "bgr8" => Self::Bgr8,
            "rgba8" => Self::Rgba8,
            "bgra8" => Self::Bgra8,
            "mono8" | "8UC1" => Self::Mono8,
            "mono16" | "16UC1" => Self::Mono16,
            "32FC1" => Self::Float32,
            "bayer_rggb8" => Self::Bayer(BayerPattern::Rggb),
            "bayer_bggr8" => Self::Bayer(BayerPattern::Bggr),
            "bayer_gbrg8" => Self::Bayer(BayerPattern::Gbrg),
            "bayer_grbg8" => Self::Bayer(BayerPattern::Grbg),
            "yuv422" | "uyvy" => Self::Uyvy,
            "yuyv" | "yuv422_yuy2" => Self::Yuyv,
            other => {
                return Err(MediaError::Unsupported(format!(
                    "raw image encoding {other:?} (known: rgb8, bgr8, rgba8, bgra8, mono8, 8UC1, mono16, 16UC1, 32FC1, bayer_rggb8, bayer_bggr8, bayer_gbrg8, bayer_grbg8, yuv422, uyvy, yuyv, yuv422_yuy2)"
                )));
            }
        })
    }

    /// Bytes one row of `width` pixels needs (before any padding), or `None`
    /// on overflow. YUV 4:2:2 rows hold pixel pairs: an odd width is rounded
    /// up to the pair.
    pub fn row_bytes(self, width: u32) -> Option<u64> {
        let w = u64::from(width);
        match self {
            Self::Mono8 | Self::Bayer(_) => Some(w),
            Self::Mono16 => w.checked_mul(2),
            Self::Rgb8 | Self::Bgr8 => w.checked_mul(3),
            Self::Rgba8 | Self::Bgra8 | Self::Float32 => w.checked_mul(4),
            Self::Uyvy | Self::Yuyv => w.div_ceil(2).checked_mul(4),
        }
    }

    /// The pixel format an image of this encoding keeps the most of: 16 bits
    /// for `mono16` and `32FC1`, 8 bits for `mono8`, colour otherwise.
    pub fn natural_format(self) -> PixelFormat {
        match self {
            Self::Mono8 => PixelFormat::Mono8,
            Self::Mono16 | Self::Float32 => PixelFormat::Mono16,
            _ => PixelFormat::Rgb8,
        }
    }
}

/// The pixel formats images are converted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PixelFormat {
    /// Red, green, blue, one byte each.
    Rgb8,
    /// One byte of intensity.
    Mono8,
    /// Two bytes of intensity, little-endian.
    Mono16,
}

impl PixelFormat {
    /// The format named `rgb8`, `mono8` or `mono16` (case insensitive).
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "rgb8" => Ok(Self::Rgb8),
            "mono8" => Ok(Self::Mono8),
            "mono16" => Ok(Self::Mono16),
            _ => Err(MediaError::Unsupported(format!(
                "pixel format {name:?} (one of rgb8, mono8, mono16)"
            ))),
        }
    }

    /// Bytes per pixel.
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            Self::Rgb8 => 3,
            Self::Mono8 => 1,
            Self::Mono16 => 2,
        }
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rgb8 => "rgb8",
            Self::Mono8 => "mono8",
            Self::Mono16 => "mono16",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_encodings() {
        assert_eq!(RawEncoding::parse("8UC1").unwrap(), RawEncoding::Mono8);
        assert_eq!(RawEncoding::parse("16UC1").unwrap(), RawEncoding::Mono16);
        assert_eq!(
            RawEncoding::parse("bayer_gbrg8").unwrap(),
            RawEncoding::Bayer(BayerPattern::Gbrg)
        );
        assert_eq!(RawEncoding::parse("yuv422").unwrap(), RawEncoding::Uyvy);
        let e = RawEncoding::parse("rgb16").unwrap_err().to_string();
        assert!(
            e.starts_with("unsupported: raw image encoding \"rgb16\""),
            "{e}"
        );
        assert_eq!(PixelFormat::parse("MONO16").unwrap(), PixelFormat::Mono16);
        assert!(PixelFormat::parse("bgr8").is_err());
    }

    #[test]
    fn row_bytes_by_encoding() {
        assert_eq!(RawEncoding::Rgb8.row_bytes(5), Some(15));
        assert_eq!(RawEncoding::Float32.row_bytes(5), Some(20));
        assert_eq!(RawEncoding::Uyvy.row_bytes(5), Some(12));
        assert_eq!(
            RawEncoding::Mono16.row_bytes(u32::MAX),
            Some(2 * u64::from(u32::MAX))
        );
    }
}
