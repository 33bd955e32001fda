//! [`Yuv420`]: a frame as the H.264 encoder takes it, 4:2:0 planes in
//! BT.601 limited range (what players assume when a stream does not say
//! otherwise), converted from `rgb8` pixels.
//!
//! The conversion is its own step so that it can run on another thread than
//! the encoder (the video sink converts each image on the thread that
//! decodes it). logsql converts the pixels itself, rounding: the `openh264`
//! crate's own conversion truncates each value, which shifts colours by one
//! or two levels (about 3 dB of PSNR on camera images).

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
    /// Y per pixel, U and V of each 2x2 block's mean, with the integer BT.601
    /// coefficients (x 256), rounded. An odd last column or row is left out;
    /// an image of another byte count than its size's is refused.
    pub fn from_rgb8(width: u32, height: u32, rgb: &[u8]) -> Result<Self> {
        let (w, h) = (width as usize, height as usize);
        let need = w * h * 3;
        if rgb.len() != need {
            return Err(MediaError::Invalid(format!(
                "{} bytes for a {width}x{height} rgb8 image (needs {need})",
                rgb.len()
            )));
        }
        let (ew, eh) = (w & !1, h & !1);
        let mut frame = Self {
            image: (width, height),
            width: ew,
            height: eh,
            y: vec![0; ew * eh],
            u: vec![0; ew * eh / 4],
            v: vec![0; ew * eh / 4],
        };
        if ew > 0 && eh > 0 {
            frame.read_rgb8(rgb, w * 3);
        }
        Ok(frame)
    }

    /// Fills the planes from rows of `stride` bytes (the even part of each).
    fn read_rgb8(&mut self, rgb: &[u8], stride: usize) {
        let w = self.width;
        let luma = |p: &[u8]| {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            (((66 * r + 129 * g + 25 * b + 128) >> 8) + 16).clamp(0, 255) as u8
        };
        let rows = rgb.chunks_exact(stride).take(self.height);
        for (ys, row) in self.y.chunks_exact_mut(w).zip(rows.clone()) {
            for (y, px) in ys.iter_mut().zip(row[..w * 3].chunks_exact(3)) {
                *y = luma(px);
            }
        }
        let pairs = rows.clone().step_by(2).zip(rows.skip(1).step_by(2));
        let chroma = self
            .u
            .chunks_exact_mut(w / 2)
            .zip(self.v.chunks_exact_mut(w / 2));
        for ((top, bottom), (us, vs)) in pairs.zip(chroma) {
            let blocks = top[..w * 3]
                .chunks_exact(6)
                .zip(bottom[..w * 3].chunks_exact(6));
            for ((t, b), (u, v)) in blocks.zip(us.iter_mut().zip(vs.iter_mut())) {
                let sum = |c: usize| {
                    i32::from(t[c]) + i32::from(t[3 + c]) + i32::from(b[c]) + i32::from(b[3 + c])
                };
                // Sums of four pixels: the coefficients' scale is 256 * 4.
                let (r, g, b) = (sum(0), sum(1), sum(2));
                *u = (((-38 * r - 74 * g + 112 * b + 512) >> 10) + 128).clamp(0, 255) as u8;
                *v = (((112 * r - 94 * g - 18 * b + 512) >> 10) + 128).clamp(0, 255) as u8;
            }
        }
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
        // white, black, red, blue: Y 235, 16, 82, 41; U and V of their mean.
        let f = Yuv420::from_rgb8(2, 2, &[255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 0, 255]).unwrap();
        assert_eq!(f.planes(), (&[235, 16, 82, 41][..], &[146][..], &[151][..]));
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
