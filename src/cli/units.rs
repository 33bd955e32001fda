//! Human units: RFC 3339 timestamps, durations, byte sizes, and parsing of the
//! time arguments users type (`--start`, `--end`).

use datafusion::arrow::compute::kernels::cast_utils::string_to_timestamp_nanos;

/// Formats nanoseconds since the Unix epoch as RFC 3339 UTC, with 0, 3, 6 or 9
/// fractional digits as needed (the same style as the query output).
pub fn rfc3339(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000) as u32;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (sod / 3600, sod / 60 % 60, sod % 60);
    let frac = match frac {
        0 => String::new(),
        f if f % 1_000_000 == 0 => format!(".{:03}", f / 1_000_000),
        f if f % 1_000 == 0 => format!(".{:06}", f / 1_000),
        f => format!(".{f:09}"),
    };
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}{frac}Z")
}

/// Year, month, day of the day `days` after 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A duration in nanoseconds as seconds with up to 9 decimals (`7.343533541 s`).
pub fn duration(ns: u64) -> String {
    let (s, f) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if f == 0 {
        return format!("{s} s");
    }
    let frac = format!("{f:09}");
    format!("{s}.{} s", frac.trim_end_matches('0'))
}

/// A byte count in binary units (`1.50 MiB`), plain below 1 KiB.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}", UNITS[unit])
}

/// Parses a time argument into nanoseconds since the epoch: integer nanoseconds
/// (`1667880423461434034`), decimal seconds (`1667880423.5`), or an RFC 3339 /
/// ISO 8601 timestamp (`2022-11-08T04:07:03.5Z`; no offset means UTC).
pub fn parse_time(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    let (neg, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let out_of_range = || format!("time '{s}' is out of range");
    if digits(body) {
        let v: i64 = body.parse().map_err(|_| out_of_range())?;
        return Ok(if neg { -v } else { v });
    }
    if let Some((int, frac)) = body.split_once('.')
        && (digits(int) || int.is_empty())
        && digits(frac)
    {
        let secs: i64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| out_of_range())?
        };
        if frac.len() > 9 && frac[9..].bytes().any(|b| b != b'0') {
            return Err(format!(
                "time '{s}' has more than 9 decimals (finer than a nanosecond)"
            ));
        }
        let frac9: i64 = format!("{:0<9}", &frac[..frac.len().min(9)])
            .parse()
            .map_err(|_| out_of_range())?;
        let v = secs
            .checked_mul(1_000_000_000)
            .and_then(|v| v.checked_add(frac9))
            .ok_or_else(out_of_range)?;
        return Ok(if neg { -v } else { v });
    }
    string_to_timestamp_nanos(t).map_err(|_| {
        format!(
            "cannot read time '{s}': expected RFC 3339 (2022-11-08T04:07:03.5Z), \
             integer nanoseconds or decimal seconds since the epoch"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_utc_with_minimal_precision() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(1_667_880_423_461_434_034),
            "2022-11-08T04:07:03.461434034Z"
        );
        assert_eq!(rfc3339(951_782_400_500_000_000), "2000-02-29T00:00:00.500Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(
            rfc3339(4_102_444_800_000_001_000),
            "2100-01-01T00:00:00.000001Z"
        );
    }

    #[test]
    fn parse_time_accepts_three_forms() {
        assert_eq!(
            parse_time("1667880423461434034"),
            Ok(1_667_880_423_461_434_034)
        );
        assert_eq!(parse_time("1667880423.5"), Ok(1_667_880_423_500_000_000));
        assert_eq!(
            parse_time("1667880423.461434034"),
            Ok(1_667_880_423_461_434_034)
        );
        assert_eq!(
            parse_time("2022-11-08T04:07:03.461434034Z"),
            Ok(1_667_880_423_461_434_034)
        );
        assert_eq!(
            parse_time("2022-11-08T05:07:03+01:00"),
            Ok(1_667_880_423_000_000_000)
        );
        assert!(parse_time("yesterday").unwrap_err().contains("yesterday"));
        assert!(parse_time("1.0000000001").is_err());
        for ns in [0, 1_667_880_423_461_434_034, 951_782_400_500_000_000] {
            assert_eq!(parse_time(&rfc3339(ns)), Ok(ns));
        }
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(duration(7_343_533_541), "7.343533541 s");
        assert_eq!(duration(2_500_000_000), "2.5 s");
        assert_eq!(duration(3_000_000_000), "3 s");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(3 * 1024 * 1024), "3.00 MiB");
    }
}
