//! YUV 4:2:2 to RGB: ITU-R BT.601, limited range (Y in 16..=235, U and V in
//! 16..=240 about 128), the convention of camera drivers that publish
//! `yuv422`/`uyvy`/`yuyv`.
//!
//! In 20-bit fixed point, with `y = max(Y - 16, 0)`, `u = U - 128`,
//! `v = V - 128` and each sum rounded half up (`+ 2^19`, then an arithmetic
//! shift) and clamped to `0..=255`:
//!
//! ```text
//! R = (CY*y            + CVR*v) >> 20
//! G = (CY*y + CUG*u    + CVG*v) >> 20
//! B = (CY*y + CUB*u          ) >> 20
//! ```
//!
//! where `CY = 255/219`, `CVR = 255/224 * 1.402`,
//! `CUG = -255/224 * 1.772 * 0.114/0.587`, `CVG = -255/224 * 1.402 * 0.299/0.587`,
//! `CUB = 255/224 * 1.772`, each times 2^20 and rounded.

const CY: i32 = 1_220_945;
const CVR: i32 = 1_673_555;
const CUG: i32 = -410_793;
const CVG: i32 = -852_458;
const CUB: i32 = 2_115_221;
const HALF: i32 = 1 << 19;

/// One pixel's RGB from its Y and the pair's U and V.
pub(crate) fn rgb(y: u8, u: u8, v: u8) -> [u8; 3] {
    let y = (i32::from(y) - 16).max(0) * CY + HALF;
    let u = i32::from(u) - 128;
    let v = i32::from(v) - 128;
    let clamp = |x: i32| (x >> 20).clamp(0, 255) as u8;
    [
        clamp(y + CVR * v),
        clamp(y + CUG * u + CVG * v),
        clamp(y + CUB * u),
    ]
}

/// Appends one row of `width` pixels stored U Y0 V Y1.
pub(crate) fn uyvy_row(row: &[u8], width: usize, out: &mut Vec<u8>) {
    pairs(row, width, out, |q| (q[1], q[3], q[0], q[2]));
}

/// Appends one row of `width` pixels stored Y0 U Y1 V.
pub(crate) fn yuyv_row(row: &[u8], width: usize, out: &mut Vec<u8>) {
    pairs(row, width, out, |q| (q[0], q[2], q[1], q[3]));
}

/// `split` takes four bytes to (Y0, Y1, U, V); an odd width drops the last
/// pair's second pixel.
fn pairs(row: &[u8], width: usize, out: &mut Vec<u8>, split: impl Fn(&[u8]) -> (u8, u8, u8, u8)) {
    for (i, q) in row.chunks_exact(4).enumerate() {
        let (y0, y1, u, v) = split(q);
        out.extend_from_slice(&rgb(y0, u, v));
        if 2 * i + 1 < width {
            out.extend_from_slice(&rgb(y1, u, v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_colours() {
        assert_eq!(rgb(16, 128, 128), [0, 0, 0]);
        assert_eq!(rgb(235, 128, 128), [255, 255, 255]);
        assert_eq!(rgb(126, 128, 128), [128, 128, 128]);
        // BT.601 75% red: Y 65, U 100, V 212.
        assert_eq!(rgb(65, 100, 212), [191, 0, 1]);
        // Clamped below 16 and above 255.
        assert_eq!(rgb(0, 128, 128), [0, 0, 0]);
        assert_eq!(rgb(255, 255, 255), [255, 125, 255]);
    }

    #[test]
    fn byte_orders_and_odd_widths() {
        let mut a = Vec::new();
        uyvy_row(&[128, 16, 128, 235], 2, &mut a);
        assert_eq!(a, [0, 0, 0, 255, 255, 255]);
        let mut b = Vec::new();
        yuyv_row(&[16, 128, 235, 128, 235, 128, 16, 128], 3, &mut b);
        assert_eq!(b, [0, 0, 0, 255, 255, 255, 255, 255, 255]);
    }
}
