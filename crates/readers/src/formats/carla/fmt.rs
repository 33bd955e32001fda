//! C++ `std::ostream` number formatting (`%g`, 6 significant digits) and
//! `strftime("%x %X")` in UTC, to reproduce CARLA's query text byte for byte.

use std::fmt::Write;

/// Formats `v` like a default `std::ostream` (`%g` with precision 6). NaN with
/// the sign bit set prints as `-nan` (glibc).
pub fn g(v: f64) -> String {
    let mut s = String::new();
    write_g(&mut s, v);
    s
}

/// Appends `v` formatted like [`g`].
pub(crate) fn write_g(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str(if v.is_sign_negative() { "-nan" } else { "nan" });
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    const P: i32 = 6;
    let sci = format!("{:.*e}", (P - 1) as usize, v);
    let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    if !(-4..P).contains(&x) {
        out.push_str(strip_zeros(mant));
        let _ = write!(
            out,
            "e{}{:02}",
            if x < 0 { '-' } else { '+' },
            x.unsigned_abs()
        );
    } else {
        let fixed = format!("{:.*}", (P - 1 - x) as usize, v);
        out.push_str(strip_zeros(&fixed));
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `strftime("%x %X")` of Unix seconds `t` in UTC, C locale: `MM/DD/YY HH:MM:SS`.
pub(crate) fn date_x_x(t: i64) -> String {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{:02}/{:02}/{:02} {:02}:{:02}:{:02}",
        m,
        d,
        y.rem_euclid(100),
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// (year, month, day) of days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_matches_printf() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (24.723716366104, "24.7237"),
            (10700.0, "10700"),
            (8562.99, "8562.99"),
            (0.0931404, "0.0931404"),
            (1e-5, "1e-05"),
            (1234567.0, "1.23457e+06"),
            (123456.0, "123456"),
            (-131.8, "-131.8"),
            (9.950000148266554, "9.95"),
            (0.05000000074505806, "0.05"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (4294967295.0, "4.29497e+09"),
            (0.0001, "0.0001"),
            (999999.5, "1e+06"),
        ];
        for (v, want) in cases {
            assert_eq!(g(*v), *want, "{v}");
        }
        assert_eq!(g(-f64::NAN), "-nan");
    }

    #[test]
    fn dates() {
        assert_eq!(date_x_x(1_700_000_000), "11/14/23 22:13:20");
        assert_eq!(date_x_x(1_637_676_528), "11/23/21 14:08:48");
        assert_eq!(date_x_x(0), "01/01/70 00:00:00");
    }
}
