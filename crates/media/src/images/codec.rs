//! Compressed images (JPEG, PNG, QOI) through the `image` crate: the size from the
//! header alone, decoding under the pixel limit, and encoding [`Pixels`].

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{DynamicImage, ExtendedColorType, ImageEncoder, ImageFormat, ImageReader};

use super::encoding::PixelFormat;
use super::{MAX_PIXELS, Pixels, check_pixels};
use crate::error::{MediaError, Result};

/// The compressed formats images may come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// JPEG (JFIF, EXIF): 8-bit grey or colour.
    Jpeg,
    /// PNG: 8 or 16 bits, grey or colour, with or without alpha.
    Png,
    /// QOI ("Quite OK Image"): 8-bit colour, with or without alpha (what
    /// ROS's `qoi_image_transport` publishes, as format `qoi; bgr8`).
    Qoi,
}

impl Codec {
    /// The lower-case name: `jpeg`, `png` or `qoi`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Jpeg => "jpeg",
            Self::Png => "png",
            Self::Qoi => "qoi",
        }
    }

    /// The codec named `jpeg` (or `jpg`), `png` or `qoi`, case insensitive.
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "jpeg" | "jpg" => Ok(Self::Jpeg),
            "png" => Ok(Self::Png),
            "qoi" => Ok(Self::Qoi),
            _ => Err(MediaError::Unsupported(format!(
                "image format {name:?} (one of png, jpeg, qoi)"
            ))),
        }
    }

    /// The codec of an [`Image`](super::Image)'s `encoding`: a codec name,
    /// or `qoi; bgr8` (QOI holding blue, green, red: see [`probe`]).
    pub fn of_encoding(encoding: &str) -> Result<Self> {
        match encoding {
            QOI_BGR => Ok(Self::Qoi),
            _ => Self::parse(encoding),
        }
    }

    fn image_format(self) -> ImageFormat {
        match self {
            Self::Jpeg => ImageFormat::Jpeg,
            Self::Png => ImageFormat::Png,
            Self::Qoi => ImageFormat::Qoi,
        }
    }
}

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";
const QOI_MAGIC: &[u8] = b"qoif";
/// The encoding of a QOI image whose channels are blue, green, red (and
/// alpha): `qoi_image_transport` compresses the raw bytes as they come and
/// names their order in the format (`qoi; bgr8`, `qoi; bgra8`).
pub const QOI_BGR: &str = "qoi; bgr8";
/// Bytes `compressed_depth_image_transport` puts before its PNG (a format
/// number and two depth quantisation floats).
const DEPTH_HEADER: usize = 12;

/// Whether a QOI image of message format `format` holds its channels in
/// blue-green-red order.
pub(crate) fn qoi_is_bgr(format: &str) -> bool {
    format
        .split_once(';')
        .is_some_and(|(_, order)| order.trim().to_ascii_lowercase().starts_with("bgr"))
}

/// What the header of a compressed image says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The codec, from the data's magic bytes.
    pub codec: Codec,
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Where the codec's stream starts in the message's data: 0, or 12 for a
    /// `compressedDepth` PNG.
    pub offset: usize,
}

/// Reads the codec and size of a compressed image from its header, without
/// decoding pixels (QOI in blue-green-red order, `qoi; bgr8` or `qoi;
/// bgra8`, decodes to `rgb8` like any other). `format` is the message's format string (`jpeg`, `png`,
/// `bgr8; jpeg compressed bgr8`, `16UC1; compressedDepth png`, ...): the codec
/// is taken from the data's magic bytes; `format` only names the image in
/// errors and marks `compressedDepth` data.
pub fn probe(format: &str, data: &[u8]) -> Result<Header> {
    let offset = if format.contains("compressedDepth")
        && data.get(DEPTH_HEADER..DEPTH_HEADER + PNG_MAGIC.len()) == Some(PNG_MAGIC)
    {
        DEPTH_HEADER
    } else {
        0
    };
    let stream = &data[offset..];
    let codec = if stream.starts_with(PNG_MAGIC) {
        Codec::Png
    } else if stream.starts_with(&[0xff, 0xd8, 0xff]) {
        Codec::Jpeg
    } else if stream.starts_with(QOI_MAGIC) {
        Codec::Qoi
    } else {
        let shown: Vec<String> = stream.iter().take(8).map(|b| format!("{b:02x}")).collect();
        return Err(MediaError::Unsupported(format!(
            "compressed image (format {format:?}) is neither JPEG, PNG nor QOI: it starts with [{}]",
            shown.join(" ")
        )));
    };
    let (width, height) = reader(codec, stream)
        .into_dimensions()
        .map_err(|e| invalid(codec, e))?;
    Ok(Header {
        codec,
        width,
        height,
        offset,
    })
}

fn invalid(codec: Codec, e: image::ImageError) -> MediaError {
    match e {
        image::ImageError::Limits(l) => MediaError::Limit(format!("{} image: {l}", codec.name())),
        e => MediaError::Invalid(format!("corrupt {} image: {e}", codec.name())),
    }
}

fn reader(codec: Codec, stream: &[u8]) -> ImageReader<Cursor<&[u8]>> {
    let mut r = ImageReader::with_format(Cursor::new(stream), codec.image_format());
    let mut limits = image::Limits::default();
    // Square images reach MAX_PIXELS; longer sides are refused by the pixel
    // count after the header.
    limits.max_image_width = Some(MAX_PIXELS as u32);
    limits.max_image_height = Some(MAX_PIXELS as u32);
    // Decoded pixels (at most 8 bytes each: 16-bit RGBA) and the decoder's own.
    limits.max_alloc = Some(MAX_PIXELS * 8 + (64 << 20));
    r.limits(limits);
    r
}

/// Decodes a compressed image into the pixel format that keeps the most of
/// it: grey stays grey (8 or 16 bits), colour becomes `rgb8`; alpha is
/// dropped.
pub fn decode(format: &str, data: &[u8]) -> Result<Pixels> {
    let header = probe(format, data)?;
    check_pixels(header.width, header.height)?;
    let stream = &data[header.offset..];
    let mut img = reader(header.codec, stream)
        .decode()
        .map_err(|e| invalid(header.codec, e))?;
    if header.codec == Codec::Qoi && qoi_is_bgr(format) {
        let mut rgb = img.to_rgb8();
        for p in rgb.pixels_mut() {
            p.0.swap(0, 2);
        }
        img = DynamicImage::ImageRgb8(rgb);
    }
    let (w, h) = (img.width(), img.height());
    Ok(match img {
        DynamicImage::ImageLuma8(b) => Pixels::new(PixelFormat::Mono8, w, h, b.into_raw()),
        DynamicImage::ImageLumaA8(_) => {
            Pixels::new(PixelFormat::Mono8, w, h, img.to_luma8().into_raw())
        }
        DynamicImage::ImageLuma16(_) | DynamicImage::ImageLumaA16(_) => {
            let samples = img.to_luma16().into_raw();
            let data = samples.iter().flat_map(|v| v.to_le_bytes()).collect();
            Pixels::new(PixelFormat::Mono16, w, h, data)
        }
        DynamicImage::ImageRgb8(b) => Pixels::new(PixelFormat::Rgb8, w, h, b.into_raw()),
        other => Pixels::new(PixelFormat::Rgb8, w, h, other.to_rgb8().into_raw()),
    })
}

/// Encodes pixels as PNG: `rgb8`, `mono8` and `mono16` keep their depth.
pub fn encode_png(p: &Pixels) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let encoder = PngEncoder::new(&mut out);
    let native16;
    let (buf, colour) = match p.format {
        PixelFormat::Rgb8 => (&p.data[..], ExtendedColorType::Rgb8),
        PixelFormat::Mono8 => (&p.data[..], ExtendedColorType::L8),
        PixelFormat::Mono16 => {
            // The encoder takes 16-bit samples in the machine's byte order.
            native16 = p
                .data
                .chunks_exact(2)
                .flat_map(|b| u16::from_le_bytes([b[0], b[1]]).to_ne_bytes())
                .collect::<Vec<u8>>();
            (&native16[..], ExtendedColorType::L16)
        }
    };
    encoder
        .write_image(buf, p.width, p.height, colour)
        .map_err(|e| MediaError::Invalid(format!("PNG encoding failed: {e}")))?;
    Ok(out)
}

/// Encodes pixels as QOI (8-bit colour: grey is repeated in R, G and B,
/// `mono16` keeps its high byte).
pub fn encode_qoi(p: &Pixels) -> Result<Vec<u8>> {
    let rgb;
    let p = if p.format == PixelFormat::Rgb8 {
        p
    } else {
        rgb = p.convert(PixelFormat::Rgb8);
        &rgb
    };
    let mut out = Vec::new();
    image::codecs::qoi::QoiEncoder::new(&mut out)
        .write_image(&p.data, p.width, p.height, ExtendedColorType::Rgb8)
        .map_err(|e| MediaError::Invalid(format!("QOI encoding failed: {e}")))?;
    Ok(out)
}

/// Encodes pixels as JPEG at `quality` (1 to 100); `mono16` is reduced to
/// `mono8` first (JPEG holds 8 bits).
pub fn encode_jpeg(p: &Pixels, quality: u8) -> Result<Vec<u8>> {
    if !(1..=100).contains(&quality) {
        return Err(MediaError::Invalid(format!(
            "JPEG quality must be 1 to 100, not {quality}"
        )));
    }
    let eight;
    let p = if p.format == PixelFormat::Mono16 {
        eight = p.convert(PixelFormat::Mono8);
        &eight
    } else {
        p
    };
    let colour = match p.format {
        PixelFormat::Rgb8 => ExtendedColorType::Rgb8,
        _ => ExtendedColorType::L8,
    };
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, quality)
        .encode(&p.data, p.width, p.height, colour)
        .map_err(|e| MediaError::Invalid(format!("JPEG encoding failed: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_rgb() -> Pixels {
        let data = (0..4 * 3 * 3).map(|i| (i * 7) as u8).collect();
        Pixels::new(PixelFormat::Rgb8, 4, 3, data)
    }

    #[test]
    fn png_round_trips_each_format() {
        let rgb = sample_rgb();
        let png = encode_png(&rgb).unwrap();
        let h = probe("png", &png).unwrap();
        assert_eq!(
            (h.codec, h.width, h.height, h.offset),
            (Codec::Png, 4, 3, 0)
        );
        assert_eq!(decode("png", &png).unwrap(), rgb);
        let mono16 = Pixels::new(PixelFormat::Mono16, 2, 1, vec![0x34, 0x12, 0xff, 0xee]);
        assert_eq!(
            decode("png", &encode_png(&mono16).unwrap()).unwrap(),
            mono16
        );
        let mono8 = Pixels::new(PixelFormat::Mono8, 3, 1, vec![0, 128, 255]);
        assert_eq!(decode("png", &encode_png(&mono8).unwrap()).unwrap(), mono8);
    }

    #[test]
    fn qoi_round_trips_colour_and_is_probed_by_its_magic() {
        let rgb = sample_rgb();
        let qoi = encode_qoi(&rgb).unwrap();
        let h = probe("qoi; rgb8", &qoi).unwrap();
        assert_eq!((h.codec, h.width, h.height), (Codec::Qoi, 4, 3));
        assert_eq!(decode("qoi; rgb8", &qoi).unwrap(), rgb);
        // In blue-green-red order, as qoi_image_transport writes bgr8.
        let bgr: Vec<u8> = rgb
            .data
            .chunks(3)
            .flat_map(|p| [p[2], p[1], p[0]])
            .collect();
        let bgr = encode_qoi(&Pixels::new(PixelFormat::Rgb8, 4, 3, bgr)).unwrap();
        assert_eq!(decode("qoi; bgr8", &bgr).unwrap(), rgb);
        assert_eq!(decode(QOI_BGR, &bgr).unwrap(), rgb);
        let mut cut = qoi.clone();
        cut.truncate(20);
        let e = decode("qoi", &cut).unwrap_err().to_string();
        assert!(e.starts_with("corrupt qoi image"), "{e}");
    }

    #[test]
    fn compressed_depth_png_after_its_header() {
        let mono16 = Pixels::new(PixelFormat::Mono16, 2, 1, vec![1, 0, 2, 0]);
        let mut data = vec![0u8; DEPTH_HEADER];
        data.extend(encode_png(&mono16).unwrap());
        let h = probe("16UC1; compressedDepth png", &data).unwrap();
        assert_eq!((h.width, h.height, h.offset), (2, 1, DEPTH_HEADER));
        assert_eq!(decode("16UC1; compressedDepth png", &data).unwrap(), mono16);
    }

    #[test]
    fn jpeg_header_and_flat_colour() {
        let flat = Pixels::new(PixelFormat::Rgb8, 16, 8, [90, 160, 30].repeat(16 * 8));
        let jpeg = encode_jpeg(&flat, 95).unwrap();
        let h = probe("bgr8; jpeg compressed bgr8", &jpeg).unwrap();
        assert_eq!((h.codec, h.width, h.height), (Codec::Jpeg, 16, 8));
        let back = decode("jpeg", &jpeg).unwrap();
        assert_eq!(
            (back.format, back.width, back.height),
            (PixelFormat::Rgb8, 16, 8)
        );
        // A flat colour survives JPEG within a step or two.
        for (a, b) in back.data.iter().zip(&flat.data) {
            assert!(a.abs_diff(*b) <= 2, "{a} vs {b}");
        }
        let grey = Pixels::new(PixelFormat::Mono16, 8, 8, [0x00u8, 0x80].repeat(64));
        let back = decode("jpeg", &encode_jpeg(&grey, 90).unwrap()).unwrap();
        assert_eq!(back.format, PixelFormat::Mono8);
        assert!(back.data.iter().all(|v| v.abs_diff(0x80) <= 1));
        assert!(encode_jpeg(&flat, 0).is_err());
    }

    #[test]
    fn bad_data_is_an_error() {
        let e = probe("jpeg", b"GIF89a..").unwrap_err().to_string();
        assert!(
            e.contains("neither JPEG, PNG nor QOI: it starts with [47 49 46"),
            "{e}"
        );
        let mut png = encode_png(&sample_rgb()).unwrap();
        png.truncate(40);
        let e = decode("png", &png).unwrap_err().to_string();
        assert!(e.starts_with("corrupt png image"), "{e}");
        let e = probe("jpeg", &[0xff, 0xd8, 0xff]).unwrap_err().to_string();
        assert!(e.starts_with("corrupt jpeg image"), "{e}");
    }
}
