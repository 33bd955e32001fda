//! Camera images: compressed (JPEG, PNG) and raw pixel encodings.
//!
//! An [`Image`] is what a message holds (`sensor_msgs/Image`,
//! `sensor_msgs/CompressedImage`, `foxglove.RawImage`,
//! `foxglove.CompressedImage`): an encoding, a size, a row step and the
//! bytes. It turns into [`Pixels`] in one of three [`PixelFormat`]s (`rgb8`,
//! `mono8`, `mono16`), which encode to PNG or JPEG and shrink to thumbnails.
//! [`arrow`] defines the one Arrow struct type images travel in.
//!
//! No image may hold more than [`MAX_PIXELS`] pixels: the size is checked
//! (from the message, or from a compressed image's header) before any pixel
//! buffer is allocated.
//!
//! Conversions between pixel formats:
//! - colour to grey is ITU-R 601-2 luma in 16-bit fixed point,
//!   `(19595 R + 38470 G + 7471 B + 2^15) >> 16` (the rounding Pillow's
//!   `convert("L")` uses);
//! - 8 to 16 bits multiplies by 257 (255 becomes 65535), 16 to 8 bits keeps
//!   the high byte;
//! - grey to colour repeats the sample in R, G and B.

pub mod arrow;
pub mod bayer;
pub mod codec;
pub mod encoding;
pub mod raw;
pub mod yuv;

use image::imageops::{FilterType, resize};
use image::{ImageBuffer, Luma, Rgb};

pub use codec::{Codec, Header};
pub use encoding::{BayerPattern, PixelFormat, RawEncoding};
pub use raw::RawImage;

use crate::error::{MediaError, Result};

/// Most pixels one image may hold (8192 x 8192); larger images are refused
/// with [`MediaError::Limit`] before their pixels are decoded.
#[cfg(not(fuzzing))]
pub const MAX_PIXELS: u64 = 1 << 26;
/// Most pixels one image may hold: a smaller cap under the fuzzer, so that
/// each input stays fast.
#[cfg(fuzzing)]
pub const MAX_PIXELS: u64 = 1 << 20;

/// The JPEG quality `image_encode` and exports use when none is given.
pub const DEFAULT_JPEG_QUALITY: u8 = 90;

/// Refuses sizes above [`MAX_PIXELS`].
pub(crate) fn check_pixels(width: u32, height: u32) -> Result<()> {
    let n = u64::from(width) * u64::from(height);
    if n > MAX_PIXELS {
        return Err(MediaError::Limit(format!(
            "a {width}x{height} image has {n} pixels, more than the {MAX_PIXELS} allowed"
        )));
    }
    Ok(())
}

/// One image as a message holds it.
#[derive(Debug, Clone, Copy)]
pub struct Image<'a> {
    /// `jpeg` or `png` for compressed images, else the raw pixel encoding
    /// (`rgb8`, `16UC1`, `bayer_rggb8`, ...).
    pub encoding: &'a str,
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Bytes from one row to the next (raw images; 0 for compressed ones).
    pub step: u32,
    /// Whether multi-byte samples are big-endian (raw images).
    pub is_bigendian: bool,
    /// The compressed stream or the rows.
    pub data: &'a [u8],
}

impl<'a> Image<'a> {
    /// The image a compressed-image message holds (`format` as the message
    /// states it): codec and size from the header, `data` the codec's stream.
    pub fn compressed(format: &str, data: &'a [u8]) -> Result<Self> {
        let h = codec::probe(format, data)?;
        check_pixels(h.width, h.height)?;
        let encoding = match h.codec {
            Codec::Qoi if codec::qoi_is_bgr(format) => codec::QOI_BGR,
            c => c.name(),
        };
        Ok(Image {
            encoding,
            width: h.width,
            height: h.height,
            step: 0,
            is_bigendian: false,
            data: &data[h.offset..],
        })
    }

    /// The image a raw-image message holds, checked against its sizes and
    /// the pixel limit.
    pub fn raw(
        encoding: &'a str,
        width: u32,
        height: u32,
        step: u32,
        is_bigendian: bool,
        data: &'a [u8],
    ) -> Result<Self> {
        RawImage {
            encoding: RawEncoding::parse(encoding)?,
            width,
            height,
            step,
            is_bigendian,
            data,
        }
        .check()?;
        Ok(Image {
            encoding,
            width,
            height,
            step,
            is_bigendian,
            data,
        })
    }

    /// The image's pixels in the format that keeps the most of it: 16-bit
    /// grey stays 16-bit, 8-bit grey stays 8-bit, everything else is `rgb8`.
    pub fn decode(&self) -> Result<Pixels> {
        match Codec::of_encoding(self.encoding) {
            Ok(_) => codec::decode(self.encoding, self.data),
            // A compressed image as its message states it (`read_images`'
            // unchecked mode): the message's format, no size. Its bytes say
            // what they are, or why they are not an image.
            Err(_)
                if (self.width, self.height, self.step) == (0, 0, 0)
                    && RawEncoding::parse(self.encoding).is_err() =>
            {
                codec::decode(self.encoding, self.data)
            }
            Err(_) => RawImage {
                encoding: RawEncoding::parse(self.encoding)?,
                width: self.width,
                height: self.height,
                step: self.step,
                is_bigendian: self.is_bigendian,
                data: self.data,
            }
            .decode(),
        }
    }

    /// The image's pixels in `format`.
    pub fn pixels(&self, format: PixelFormat) -> Result<Pixels> {
        let pixels = self.decode()?;
        Ok(match pixels.format == format {
            true => pixels,
            false => pixels.convert(format),
        })
    }

    /// The image encoded as `codec`: PNG keeps 16-bit grey, JPEG holds 8 bits
    /// at `quality` (1 to 100; [`DEFAULT_JPEG_QUALITY`] when `None`). A
    /// compressed image asked for in its own codec (and, for JPEG, without a
    /// quality) is returned as it is, without a generation of loss.
    pub fn encode(&self, codec: Codec, quality: Option<u8>) -> Result<Vec<u8>> {
        // (QOI in blue-green-red order is encoded again, in RGB order.)
        let same = Codec::parse(self.encoding).ok() == Some(codec);
        if same && (codec != Codec::Jpeg || quality.is_none()) {
            // Still checked: the bytes must decode.
            codec::probe(self.encoding, self.data)?;
            return Ok(self.data.to_vec());
        }
        let p = self.decode()?;
        match codec {
            Codec::Png => codec::encode_png(&p),
            Codec::Jpeg => codec::encode_jpeg(&p, quality.unwrap_or(DEFAULT_JPEG_QUALITY)),
            Codec::Qoi => codec::encode_qoi(&p),
        }
    }

    /// A PNG of the image shrunk to at most `max_side` pixels on its longer
    /// side ([`thumbnail_size`]).
    pub fn thumbnail_png(&self, max_side: u32) -> Result<Vec<u8>> {
        codec::encode_png(&self.decode()?.thumbnail(max_side)?)
    }
}

/// Decoded pixels, row-major without padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pixels {
    /// What each pixel's bytes hold (`mono16` little-endian).
    pub format: PixelFormat,
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// `width * height * format.bytes_per_pixel()` bytes.
    pub data: Vec<u8>,
}

impl Pixels {
    /// Pixels from their parts.
    pub fn new(format: PixelFormat, width: u32, height: u32, data: Vec<u8>) -> Self {
        debug_assert_eq!(
            data.len(),
            width as usize * height as usize * format.bytes_per_pixel()
        );
        Self {
            format,
            width,
            height,
            data,
        }
    }

    /// The pixels in another format (see the module's conversions).
    pub fn convert(&self, to: PixelFormat) -> Pixels {
        use PixelFormat::*;
        let luma = |p: &[u8]| -> u8 {
            let (r, g, b) = (u32::from(p[0]), u32::from(p[1]), u32::from(p[2]));
            ((19595 * r + 38470 * g + 7471 * b + 0x8000) >> 16) as u8
        };
        let high = |p: &[u8]| p[1];
        let d = &self.data;
        let data: Vec<u8> = match (self.format, to) {
            (a, b) if a == b => d.clone(),
            (Rgb8, Mono8) => d.chunks_exact(3).map(luma).collect(),
            (Rgb8, Mono16) => d
                .chunks_exact(3)
                .flat_map(|p| (u16::from(luma(p)) * 257).to_le_bytes())
                .collect(),
            (Mono8, Rgb8) => d.iter().flat_map(|&v| [v, v, v]).collect(),
            (Mono8, Mono16) => d
                .iter()
                .flat_map(|&v| (u16::from(v) * 257).to_le_bytes())
                .collect(),
            (Mono16, Mono8) => d.chunks_exact(2).map(high).collect(),
            (Mono16, Rgb8) => d
                .chunks_exact(2)
                .flat_map(|p| [high(p), high(p), high(p)])
                .collect(),
            (_, _) => unreachable!("same formats handled first"),
        };
        Pixels::new(to, self.width, self.height, data)
    }

    /// The pixels shrunk (never enlarged) to at most `max_side` on the longer
    /// side, with a triangle (bilinear) filter.
    pub fn thumbnail(&self, max_side: u32) -> Result<Pixels> {
        if max_side == 0 {
            return Err(MediaError::Invalid(
                "a thumbnail's max_side must be at least 1".into(),
            ));
        }
        let (w, h) = thumbnail_size(self.width, self.height, max_side);
        if (w, h) == (self.width, self.height) {
            return Ok(self.clone());
        }
        let bad = || MediaError::Invalid("pixel buffer does not match its size".into());
        let data = match self.format {
            PixelFormat::Rgb8 => {
                let img: ImageBuffer<Rgb<u8>, &[u8]> =
                    ImageBuffer::from_raw(self.width, self.height, &self.data[..])
                        .ok_or_else(bad)?;
                resize(&img, w, h, FilterType::Triangle).into_raw()
            }
            PixelFormat::Mono8 => {
                let img: ImageBuffer<Luma<u8>, &[u8]> =
                    ImageBuffer::from_raw(self.width, self.height, &self.data[..])
                        .ok_or_else(bad)?;
                resize(&img, w, h, FilterType::Triangle).into_raw()
            }
            PixelFormat::Mono16 => {
                let samples: Vec<u16> = self
                    .data
                    .chunks_exact(2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
                    .collect();
                let img: ImageBuffer<Luma<u16>, Vec<u16>> =
                    ImageBuffer::from_raw(self.width, self.height, samples).ok_or_else(bad)?;
                resize(&img, w, h, FilterType::Triangle)
                    .into_raw()
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect()
            }
        };
        Ok(Pixels::new(self.format, w, h, data))
    }
}

/// The size of a thumbnail of a `width` x `height` image with at most
/// `max_side` pixels on its longer side: the image's own size if it fits,
/// else the longer side becomes `max_side` and the shorter one keeps the
/// aspect ratio, rounded half up, at least 1.
pub fn thumbnail_size(width: u32, height: u32, max_side: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= max_side {
        return (width, height);
    }
    let scale = |short: u32| -> u32 {
        let v =
            (u64::from(short) * u64::from(max_side) * 2 + u64::from(long)) / (2 * u64::from(long));
        // At most max_side.
        (v as u32).max(1)
    };
    if width >= height {
        (max_side, scale(height))
    } else {
        (scale(width), max_side)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_between_formats() {
        let rgb = Pixels::new(
            PixelFormat::Rgb8,
            3,
            1,
            vec![255, 0, 0, 0, 255, 0, 10, 20, 30],
        );
        // Pillow: Image.new("RGB", ...).convert("L") gives 76, 150, 18.
        assert_eq!(rgb.convert(PixelFormat::Mono8).data, [76, 150, 18]);
        assert_eq!(
            rgb.convert(PixelFormat::Mono16).data,
            [0x4c, 0x4c, 0x96, 0x96, 0x12, 0x12]
        );
        let m16 = Pixels::new(PixelFormat::Mono16, 2, 1, vec![0x34, 0x12, 0xff, 0xab]);
        assert_eq!(m16.convert(PixelFormat::Mono8).data, [0x12, 0xab]);
        assert_eq!(
            m16.convert(PixelFormat::Rgb8).data,
            [0x12, 0x12, 0x12, 0xab, 0xab, 0xab]
        );
        let m8 = Pixels::new(PixelFormat::Mono8, 2, 1, vec![1, 255]);
        assert_eq!(m8.convert(PixelFormat::Mono16).data, [1, 1, 255, 255]);
        assert_eq!(m8.convert(PixelFormat::Rgb8).data, [1, 1, 1, 255, 255, 255]);
    }

    #[test]
    fn thumbnail_sizes() {
        assert_eq!(thumbnail_size(640, 480, 100), (100, 75));
        assert_eq!(thumbnail_size(480, 640, 100), (75, 100));
        assert_eq!(thumbnail_size(1000, 3, 100), (100, 1));
        assert_eq!(thumbnail_size(3, 2, 100), (3, 2));
        // 333 * 64 / 1000 = 21.312; 335 * 64 / 1000 = 21.44; 1000x7 -> 0.448 -> 1.
        assert_eq!(thumbnail_size(1000, 333, 64), (64, 21));
        assert_eq!(thumbnail_size(1000, 7, 64), (64, 1));
        let flat = Pixels::new(PixelFormat::Mono8, 8, 4, vec![77; 32]);
        let t = flat.thumbnail(4).unwrap();
        assert_eq!((t.width, t.height, t.data), (4, 2, vec![77; 8]));
    }

    #[test]
    fn images_decode_by_encoding() {
        let raw = Image {
            encoding: "bgr8",
            width: 1,
            height: 1,
            step: 3,
            is_bigendian: false,
            data: &[1, 2, 3],
        };
        assert_eq!(raw.pixels(PixelFormat::Rgb8).unwrap().data, [3, 2, 1]);
        let png = raw.encode(Codec::Png, None).unwrap();
        let compressed = Image {
            encoding: "png",
            width: 0,
            height: 0,
            step: 0,
            is_bigendian: false,
            data: &png,
        };
        assert_eq!(
            compressed.pixels(PixelFormat::Rgb8).unwrap().data,
            [3, 2, 1]
        );
        assert_eq!(
            compressed.encode(Codec::Png, None).unwrap(),
            png,
            "unchanged"
        );
        let jpeg = compressed.encode(Codec::Jpeg, Some(80)).unwrap();
        assert_eq!(codec::probe("jpeg", &jpeg).unwrap().codec, Codec::Jpeg);
        let thumb = compressed.thumbnail_png(8).unwrap();
        assert_eq!(codec::probe("png", &thumb).unwrap().width, 1);
        let e = Image {
            encoding: "rgb16",
            ..raw
        }
        .decode()
        .unwrap_err();
        assert!(matches!(e, MediaError::Unsupported(_)));
        // As `read_images(..., 'unchecked')` hands on a compressed image whose
        // header does not read: its bytes say why; a 0x0 raw image is empty.
        let stated = Image {
            encoding: "bgr8; jpeg compressed bgr8",
            width: 0,
            height: 0,
            step: 0,
            is_bigendian: false,
            data: b"GIF89a..",
        };
        let e = stated.decode().unwrap_err().to_string();
        assert!(e.contains("neither JPEG, PNG nor QOI"), "{e}");
        let empty = Image {
            encoding: "rgb8",
            ..stated
        };
        assert!(empty.decode().unwrap().data.is_empty());
    }
}
