//! Raw images (`sensor_msgs/Image`, `foxglove.RawImage`): rows of `step`
//! bytes in one of the [`RawEncoding`]s, turned into [`Pixels`].
//!
//! Conventions (the ones users meet in the pixels they get back):
//! - 16-bit and float samples are read in the byte order `is_bigendian` gives;
//! - alpha is dropped;
//! - `32FC1` holds intensities in `[0, 1]` (as OpenCV shows float images):
//!   values are clamped to that range and scaled to `0..=65535`, rounded;
//!   NaN becomes 0;
//! - Bayer images are demosaiced bilinearly ([`super::bayer`]), YUV 4:2:2 is
//!   BT.601 limited range ([`super::yuv`]).

use super::encoding::{PixelFormat, RawEncoding};
use super::{Pixels, check_pixels};
use crate::error::{MediaError, Result};

/// A raw image as its message holds it.
#[derive(Debug, Clone, Copy)]
pub struct RawImage<'a> {
    /// The pixel encoding.
    pub encoding: RawEncoding,
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Bytes from the start of one row to the next (0: rows are not padded).
    pub step: u32,
    /// Whether multi-byte samples are big-endian.
    pub is_bigendian: bool,
    /// The rows.
    pub data: &'a [u8],
}

impl RawImage<'_> {
    /// Checks the sizes against each other and the pixel limit, and returns
    /// the step and the bytes of one row's pixels.
    fn layout(&self) -> Result<(usize, usize)> {
        check_pixels(self.width, self.height)?;
        let row = self.encoding.row_bytes(self.width).ok_or_else(|| {
            MediaError::Invalid(format!("a row of {} pixels overflows", self.width))
        })?;
        let step = if self.step == 0 {
            row
        } else {
            u64::from(self.step)
        };
        if step < row {
            return Err(MediaError::Invalid(format!(
                "step {step} is shorter than a row of {} {:?} pixels ({row} bytes)",
                self.width, self.encoding
            )));
        }
        // The last row's padding may be left out.
        let need = match self.height {
            0 => 0,
            h => step * u64::from(h - 1) + row,
        };
        if (self.data.len() as u64) < need {
            return Err(MediaError::Invalid(format!(
                "{} bytes of data for {}x{} {:?} pixels with step {step} (needs {need})",
                self.data.len(),
                self.width,
                self.height,
                self.encoding
            )));
        }
        // Both fit in usize: they are at most the data's length.
        Ok((step as usize, row as usize))
    }

    /// Checks, without decoding, that the data holds the image the sizes
    /// describe (and that a Bayer image has at least 2x2 pixels).
    pub fn check(&self) -> Result<()> {
        self.layout()?;
        if matches!(self.encoding, RawEncoding::Bayer(_)) && (self.width < 2 || self.height < 2) {
            return Err(MediaError::Invalid(format!(
                "a Bayer image needs at least 2x2 pixels, not {}x{}",
                self.width, self.height
            )));
        }
        Ok(())
    }

    /// The rows without their padding.
    fn rows(&self) -> Result<impl Iterator<Item = &[u8]>> {
        let (step, row) = self.layout()?;
        let height = self.height as usize;
        Ok((0..height).map(move |y| &self.data[y * step..y * step + row]))
    }

    /// The image in the pixel format that keeps the most of it
    /// ([`RawEncoding::natural_format`]).
    pub fn decode(&self) -> Result<Pixels> {
        let (w, h) = (self.width, self.height);
        let format = self.encoding.natural_format();
        if let RawEncoding::Bayer(pattern) = self.encoding {
            let (step, _) = self.layout()?;
            let data = super::bayer::demosaic(pattern, w as usize, h as usize, step, self.data)?;
            return Ok(Pixels::new(PixelFormat::Rgb8, w, h, data));
        }
        let mut out = Vec::with_capacity(w as usize * h as usize * format.bytes_per_pixel());
        let be = self.is_bigendian;
        for row in self.rows()? {
            match self.encoding {
                RawEncoding::Rgb8 | RawEncoding::Mono8 => out.extend_from_slice(row),
                RawEncoding::Bgr8 => {
                    for p in row.chunks_exact(3) {
                        out.extend_from_slice(&[p[2], p[1], p[0]]);
                    }
                }
                RawEncoding::Rgba8 => {
                    for p in row.chunks_exact(4) {
                        out.extend_from_slice(&p[..3]);
                    }
                }
                RawEncoding::Bgra8 => {
                    for p in row.chunks_exact(4) {
                        out.extend_from_slice(&[p[2], p[1], p[0]]);
                    }
                }
                RawEncoding::Mono16 => {
                    for p in row.chunks_exact(2) {
                        let v = if be {
                            u16::from_be_bytes([p[0], p[1]])
                        } else {
                            u16::from_le_bytes([p[0], p[1]])
                        };
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                }
                RawEncoding::Float32 => {
                    for p in row.chunks_exact(4) {
                        let b = [p[0], p[1], p[2], p[3]];
                        let f = if be {
                            f32::from_be_bytes(b)
                        } else {
                            f32::from_le_bytes(b)
                        };
                        out.extend_from_slice(&unit_to_u16(f).to_le_bytes());
                    }
                }
                RawEncoding::Uyvy => super::yuv::uyvy_row(row, w as usize, &mut out),
                RawEncoding::Yuyv => super::yuv::yuyv_row(row, w as usize, &mut out),
                RawEncoding::Bayer(_) => unreachable!("demosaiced above"),
            }
        }
        Ok(Pixels::new(format, w, h, out))
    }
}

/// A float intensity in `[0, 1]` as a 16-bit sample (clamped, rounded; NaN
/// is 0).
fn unit_to_u16(f: f32) -> u16 {
    if f.is_nan() {
        return 0;
    }
    // In range after the clamp: the cast cannot truncate.
    (f.clamp(0.0, 1.0) * 65535.0).round() as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(encoding: &str, w: u32, h: u32, step: u32, be: bool, data: &[u8]) -> Result<Pixels> {
        RawImage {
            encoding: RawEncoding::parse(encoding).unwrap(),
            width: w,
            height: h,
            step,
            is_bigendian: be,
            data,
        }
        .decode()
    }

    #[test]
    fn colour_orders_and_padding() {
        // 2x2 bgr8 with one byte of padding per row.
        let bgr = [1, 2, 3, 4, 5, 6, 99, 7, 8, 9, 10, 11, 12, 99];
        let p = raw("bgr8", 2, 2, 7, false, &bgr).unwrap();
        assert_eq!(p.format, PixelFormat::Rgb8);
        assert_eq!(p.data, [3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10]);
        let bgra = [1, 2, 3, 255, 4, 5, 6, 0];
        let p = raw("bgra8", 2, 1, 8, false, &bgra).unwrap();
        assert_eq!(p.data, [3, 2, 1, 6, 5, 4]);
        let rgba = [1, 2, 3, 255, 4, 5, 6, 0];
        let p = raw("rgba8", 2, 1, 0, false, &rgba).unwrap();
        assert_eq!(p.data, [1, 2, 3, 4, 5, 6]);
        // The last row's padding may be missing.
        let p = raw("mono8", 2, 2, 4, false, &[1, 2, 0, 0, 3, 4]).unwrap();
        assert_eq!(p.data, [1, 2, 3, 4]);
    }

    #[test]
    fn sixteen_bit_and_float_byte_order() {
        let le = raw("16UC1", 2, 1, 4, false, &[0x34, 0x12, 0xff, 0x00]).unwrap();
        assert_eq!(le.format, PixelFormat::Mono16);
        assert_eq!(le.data, [0x34, 0x12, 0xff, 0x00]);
        let be = raw("mono16", 2, 1, 4, true, &[0x12, 0x34, 0x00, 0xff]).unwrap();
        assert_eq!(be.data, [0x34, 0x12, 0xff, 0x00]);
        let mut f = Vec::new();
        for v in [0.5f32, 2.0, -1.0, f32::NAN] {
            f.extend_from_slice(&v.to_be_bytes());
        }
        let p = raw("32FC1", 4, 1, 16, true, &f).unwrap();
        assert_eq!(p.data, [0x00, 0x80, 0xff, 0xff, 0, 0, 0, 0]);
    }

    #[test]
    fn bad_sizes_are_errors() {
        let e = raw("rgb8", 2, 2, 5, false, &[0; 12])
            .unwrap_err()
            .to_string();
        assert!(e.contains("step 5 is shorter than a row of 2"), "{e}");
        let e = raw("rgb8", 2, 2, 6, false, &[0; 11])
            .unwrap_err()
            .to_string();
        assert!(e.contains("11 bytes of data for 2x2"), "{e}");
        let e = raw("mono8", 100_000, 100_000, 0, false, &[]).unwrap_err();
        assert!(matches!(e, MediaError::Limit(_)), "{e}");
    }
}
