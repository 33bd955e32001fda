//! Bilinear demosaicing of 8-bit Bayer images to RGB.
//!
//! No maintained crate does this, so it lives here, small: each pixel keeps
//! its own colour; a green pixel takes the colour of its row's neighbours from
//! the mean of its left and right neighbours and the other from the mean of
//! its upper and lower ones; a red or blue pixel takes green from the mean of
//! its four edge neighbours and the opposite colour from the mean of its four
//! corner neighbours. Means are rounded half up. Outside the image the rows
//! and columns are mirrored about the border pixel (`-1` is `1`, `width` is
//! `width - 2`), which keeps the filter's phase. Images need at least two rows
//! and two columns.

use super::encoding::BayerPattern;
use crate::error::{MediaError, Result};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Colour {
    Red,
    Green,
    Blue,
}

fn cell(pattern: BayerPattern) -> [Colour; 4] {
    use Colour::*;
    match pattern {
        BayerPattern::Rggb => [Red, Green, Green, Blue],
        BayerPattern::Bggr => [Blue, Green, Green, Red],
        BayerPattern::Gbrg => [Green, Blue, Red, Green],
        BayerPattern::Grbg => [Green, Red, Blue, Green],
    }
}

/// Mirrors an index one step outside `0..n` back inside (`n >= 2`).
fn mirror(i: isize, n: usize) -> usize {
    if i < 0 {
        1
    } else if i as usize >= n {
        n - 2
    } else {
        i as usize
    }
}

/// Demosaics `height` rows of `width` samples, `step` bytes apart, to packed
/// RGB. The caller has checked that `data` holds the rows.
pub(crate) fn demosaic(
    pattern: BayerPattern,
    width: usize,
    height: usize,
    step: usize,
    data: &[u8],
) -> Result<Vec<u8>> {
    if width < 2 || height < 2 {
        return Err(MediaError::Invalid(format!(
            "a Bayer image needs at least 2x2 pixels, not {width}x{height}"
        )));
    }
    let colours = cell(pattern);
    let at = |x: isize, y: isize| -> u32 {
        u32::from(data[mirror(y, height) * step + mirror(x, width)])
    };
    let mean = |vals: &[u32]| -> u8 {
        let n = vals.len() as u32;
        // At most four samples of 255: the mean fits a byte.
        ((vals.iter().sum::<u32>() + n / 2) / n) as u8
    };
    let mut out = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        for x in 0..width {
            let (xi, yi) = (x as isize, y as isize);
            let own = at(xi, yi) as u8;
            let rgb = match colours[(y & 1) * 2 + (x & 1)] {
                Colour::Green => {
                    let row_colour = colours[(y & 1) * 2 + ((x + 1) & 1)];
                    let across = mean(&[at(xi - 1, yi), at(xi + 1, yi)]);
                    let updown = mean(&[at(xi, yi - 1), at(xi, yi + 1)]);
                    if row_colour == Colour::Red {
                        [across, own, updown]
                    } else {
                        [updown, own, across]
                    }
                }
                c => {
                    let green = mean(&[
                        at(xi - 1, yi),
                        at(xi + 1, yi),
                        at(xi, yi - 1),
                        at(xi, yi + 1),
                    ]);
                    let opposite = mean(&[
                        at(xi - 1, yi - 1),
                        at(xi + 1, yi - 1),
                        at(xi - 1, yi + 1),
                        at(xi + 1, yi + 1),
                    ]);
                    if c == Colour::Red {
                        [own, green, opposite]
                    } else {
                        [opposite, green, own]
                    }
                }
            };
            out.extend_from_slice(&rgb);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_colour_survives_every_pattern() {
        // A flat (R, G, B) = (200, 100, 50) scene seen through each filter.
        for pattern in [
            BayerPattern::Rggb,
            BayerPattern::Bggr,
            BayerPattern::Gbrg,
            BayerPattern::Grbg,
        ] {
            let colours = cell(pattern);
            let (w, h) = (4, 3);
            let data: Vec<u8> = (0..h)
                .flat_map(|y| {
                    (0..w).map(move |x| match colours[(y & 1) * 2 + (x & 1)] {
                        Colour::Red => 200,
                        Colour::Green => 100,
                        Colour::Blue => 50,
                    })
                })
                .collect();
            let rgb = demosaic(pattern, w, h, w, &data).unwrap();
            assert_eq!(rgb, [200, 100, 50].repeat(w * h), "{pattern:?}");
        }
    }

    #[test]
    fn rggb_interpolates_bilinearly() {
        // R G / G B samples of a 2x2 image, mirrored outside.
        let rgb = demosaic(BayerPattern::Rggb, 2, 2, 2, &[10, 20, 30, 41]).unwrap();
        // (0,0) red: G = mean(20, 20, 30, 30) = 25, B = 41.
        // (1,0) green in a red row: R = mean(10, 10), B = mean(41, 41).
        // (0,1) green in a blue row: B = mean(41, 41), R = mean(10, 10).
        // (1,1) blue: G = mean(30, 30, 20, 20) = 25, R = 10.
        assert_eq!(rgb, [10, 25, 41, 10, 20, 41, 10, 30, 41, 10, 25, 41]);
        // Padded rows and a half-way mean (rounded up).
        let rgb = demosaic(BayerPattern::Rggb, 2, 2, 3, &[10, 21, 0, 30, 41, 0]).unwrap();
        assert_eq!(&rgb[..3], &[10, 26, 41]);
    }

    #[test]
    fn too_small_is_an_error() {
        let e = demosaic(BayerPattern::Rggb, 1, 4, 1, &[0; 4]).unwrap_err();
        assert!(e.to_string().contains("at least 2x2"), "{e}");
    }
}
