//! [`Yuv420`]: a frame as the H.264 encoder takes it, 4:2:0 planes in
//! BT.601 limited range (what players assume when a stream does not say
//! otherwise), converted from `rgb8` pixels.
//!
//! The conversion is its own step so that it can run on another thread than
//! the encoder (the video sink converts each image on the thread that
//! decodes it). The `yuv` crate converts (SIMD, each 2x2 block's mean for
//! U and V, rounded): the `openh264` crate's own conversion truncates each
//! value, which shifts colours by one or two levels (about 3 dB of PSNR on
//! camera images).

use yuv::{BufferStoreMut, YuvConversionMode, YuvPlanarImageMut, YuvRange, YuvStandardMatrix};

use crate::error::{MediaError, Result};

/// One frame as 4:2:0 planes of an even width and height, with the size of
/// the image it was made from (an odd last column or row is left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Yuv420 {
    /// The image's size before its odd last column or row was left out.
    image: (u32, u32),
    width: usize,
    height: usize,
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
}

impl Yuv420 {
    /// Converts a `width` x `height` `rgb8` image (rows top to bottom):
    /// Y per pixel, U and V of each 2x2 block's mean, BT.601 limited range,
    /// rounded. An odd last column or row is left out;
    /// an image of another byte count than its size's is refused.
    pub fn from_rgb8(width: u32, height: u32, rgb: &[u8]) -> Result<Self> {
        let mut frame = Self {
            image: (0, 0),
            width: 0,
            height: 0,
            y: Vec::new(),
            u: Vec::new(),
            v: Vec::new(),
        };
        frame.refill_rgb8(width, height, rgb)?;
        Ok(frame)
    }

    /// Converts another image into this frame's planes, as
    /// [`Yuv420::from_rgb8`] does, reusing their memory.
    pub fn refill_rgb8(&mut self, width: u32, height: u32, rgb: &[u8]) -> Result<()> {
        let (w, h) = (width as usize, height as usize);
        let need = w * h * 3;
        if rgb.len() != need {
            return Err(MediaError::Invalid(format!(
                "{} bytes for a {width}x{height} rgb8 image (needs {need})",
                rgb.len()
            )));
        }
        let (ew, eh) = (w & !1, h & !1);
        self.image = (width, height);
        self.width = ew;
        self.height = eh;
        // Every byte is overwritten by the conversion.
        self.y.resize(ew * eh, 0);
        self.u.resize(ew * eh / 4, 0);
        self.v.resize(ew * eh / 4, 0);
        if ew > 0 && eh > 0 {
            self.read_rgb8(rgb, w * 3)?;
        }
        Ok(())
    }

    /// Fills the planes from rows of `stride` bytes (the even part of each).
    fn read_rgb8(&mut self, rgb: &[u8], stride: usize) -> Result<()> {
        let (w, h) = (self.width, self.height);
        let mut planes = YuvPlanarImageMut {
            y_plane: BufferStoreMut::Borrowed(&mut self.y),
            y_stride: w as u32,
            u_plane: BufferStoreMut::Borrowed(&mut self.u),
            u_stride: (w / 2) as u32,
            v_plane: BufferStoreMut::Borrowed(&mut self.v),
            v_stride: (w / 2) as u32,
            width: w as u32,
            height: h as u32,
        };
        yuv::rgb_to_yuv420(
            &mut planes,
            &rgb[..stride * h],
            stride as u32,
            YuvRange::Limited,
            YuvStandardMatrix::Bt601,
            YuvConversionMode::Balanced,
        )
        .map_err(|e| MediaError::Invalid(format!("converting a {w}x{h} image to YUV: {e}")))
    }

    /// The size of the image the frame was made from.
    pub fn image_size(&self) -> (u32, u32) {
        self.image
    }

    /// The frame's (even) width and height.
    pub fn size(&self) -> (u32, u32) {
        (self.width as u32, self.height as u32)
    }

    /// The Y, U and V planes (rows without padding: `width` and `width / 2`
    /// bytes).
    pub fn planes(&self) -> (&[u8], &[u8], &[u8]) {
        (&self.y, &self.u, &self.v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_convert_to_bt601_limited_range() {
        // white, black, red, blue: Y 235, 16, 81.5, 41.0 (16 + 219 x luma);
        // U 146.6 and V 151.4 of their mean (128 + 224 x chroma), rounded.
        let f = Yuv420::from_rgb8(2, 2, &[255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 0, 255]).unwrap();
        assert_eq!(f.planes(), (&[235, 16, 81, 41][..], &[147][..], &[151][..]));
    }

    #[test]
    fn an_odd_last_column_and_row_are_left_out() {
        // 3x3: the even 2x2 corner is grey 128, the rest white.
        let mut rgb = vec![255u8; 3 * 3 * 3];
        for (x, y) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            rgb[(y * 3 + x) * 3..][..3].copy_from_slice(&[128, 128, 128]);
        }
        let f = Yuv420::from_rgb8(3, 3, &rgb).unwrap();
        assert_eq!((f.size(), f.image_size()), ((2, 2), (3, 3)));
        assert_eq!(f.planes(), (&[126; 4][..], &[128][..], &[128][..]));
        let e = Yuv420::from_rgb8(3, 3, &rgb[..20]).unwrap_err();
        assert!(
            e.to_string().contains("20 bytes for a 3x3 rgb8 image"),
            "{e}"
        );
    }
}
