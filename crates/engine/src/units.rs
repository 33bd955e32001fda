//! Human units, shown and typed: RFC 3339 timestamps, durations and byte
//! sizes as the CLI prints them, and the times, sizes and durations users
//! type (`--start`, `--memory-limit 512MiB`, a `logsql dataset` spec's
//! `2s`), read the same way by every command.

use std::time::Duration;

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

/// Parses a time argument into nanoseconds since the epoch: an RFC 3339 / ISO
/// 8601 timestamp (`2022-11-08T04:07:03.5Z`; no offset means UTC), or a number
/// with its unit: `1667880423s`, `1667880423500ms`, `...us`, `...ns`, or seconds
/// with a decimal point (`1667880423.5`, `1667880423.5s`).
///
/// A bare integer is refused: it could be seconds or nanoseconds, and the
/// message shows both readings and how to say which.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let split = body
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(body.len());
    let (number, unit) = body.split_at(split);
    let numeric = !number.is_empty()
        && number.bytes().filter(|&b| b == b'.').count() <= 1
        && number.bytes().any(|b| b.is_ascii_digit());
    // Anything else after the number (`2022-11-08...`) is for the timestamp parser.
    let digits = match unit {
        _ if !numeric => None,
        "" if !number.contains('.') => return Err(bare_integer(s, number, neg)),
        "" | "s" => Some(9),
        "ms" => Some(6),
        "us" | "µs" => Some(3),
        "ns" => Some(0),
        _ => None,
    };
    if let Some(digits) = digits {
        let v = scaled(number, digits).map_err(|e| format!("time '{s}' {e}"))?;
        return Ok(if neg { -v } else { v });
    }
    string_to_timestamp_nanos(t).map_err(|_| unreadable(s))
}

/// `number` (digits, at most one decimal point) times 10^`digits`, as an integer.
fn scaled(number: &str, digits: u32) -> Result<i64, &'static str> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let whole: i64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| "is out of range")?
    };
    let d = digits as usize;
    if frac.len() > d && frac[d..].bytes().any(|b| b != b'0') {
        return Err("is finer than a nanosecond");
    }
    let kept = &frac[..frac.len().min(d)];
    let frac: i64 = if d == 0 {
        0
    } else {
        format!("{kept:0<d$}")
            .parse()
            .map_err(|_| "is out of range")?
    };
    whole
        .checked_mul(10i64.pow(digits))
        .and_then(|v| v.checked_add(frac))
        .ok_or("is out of range")
}

fn unreadable(s: &str) -> String {
    format!(
        "cannot read time '{s}': expected RFC 3339 (2022-11-08T04:07:03.5Z) or a number with \
         its unit: 1667880423s, 1667880423500ms, 1667880423500000us, 1667880423500000000ns, \
         or seconds with a decimal point (1667880423.5)"
    )
}

/// The message for a bare integer: both readings, and how to choose.
fn bare_integer(s: &str, number: &str, neg: bool) -> String {
    let sign = if neg { "-" } else { "" };
    let reading = |digits| {
        scaled(number, digits)
            .map(|v| rfc3339(if neg { -v } else { v }))
            .unwrap_or_else(|_| "out of range".into())
    };
    format!(
        "time '{s}' has no unit: as seconds it is {}, as nanoseconds {}; write \
         {sign}{number}s or {sign}{number}ns (or ms, us), or an RFC 3339 time",
        reading(9),
        reading(0)
    )
}

/// `s` as its leading number (digits and `.`) and the unit after it.
fn number_and_unit(s: &str) -> (&str, &str) {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    t.split_at(split)
}

/// Parses a size: bytes, or a number with `KB`/`MB`/`GB`/`TB` (powers of
/// 1000) or `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let (number, unit) = number_and_unit(s);
    let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "tb" | "t" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("'{s}' is not a size (e.g. 512MiB, 2GB)")),
    };
    let n: f64 = number
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 512MiB, 2GB)"))?;
    Ok((n * factor) as usize)
}

/// Parses a duration: a number with `ms`, `s`, `min` or `h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = number_and_unit(s);
    let seconds: f64 = match unit.trim() {
        "ms" => 1e-3,
        "s" => 1.0,
        "min" | "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("'{s}' is not a duration (e.g. 30s, 5min)")),
    };
    let n: f64 = number
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 30s, 5min)"))?;
    Duration::try_from_secs_f64(n * seconds).map_err(|e| format!("'{s}': {e}"))
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
    fn parse_time_accepts_rfc3339_and_numbers_with_units() {
        assert_eq!(
            parse_time("1667880423461434034ns"),
            Ok(1_667_880_423_461_434_034)
        );
        assert_eq!(parse_time("1432235520s"), Ok(1_432_235_520_000_000_000));
        assert_eq!(parse_time("1432235520000ms"), Ok(1_432_235_520_000_000_000));
        assert_eq!(
            parse_time("1432235520000001us"),
            Ok(1_432_235_520_000_001_000)
        );
        assert_eq!(parse_time("1432235520.25s"), Ok(1_432_235_520_250_000_000));
        assert_eq!(parse_time("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_time("-2s"), Ok(-2_000_000_000));
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
        for ns in [0, 1_667_880_423_461_434_034, 951_782_400_500_000_000] {
            assert_eq!(parse_time(&rfc3339(ns)), Ok(ns));
        }
    }

    #[test]
    fn parse_time_refuses_bare_integers_and_odd_input() {
        assert_eq!(
            parse_time("1432235520").unwrap_err(),
            "time '1432235520' has no unit: as seconds it is 2015-05-21T19:12:00Z, \
             as nanoseconds 1970-01-01T00:00:01.432235520Z; write 1432235520s or \
             1432235520ns (or ms, us), or an RFC 3339 time"
        );
        assert_eq!(
            parse_time("99999999999999999999").unwrap_err(),
            "time '99999999999999999999' has no unit: as seconds it is out of range, \
             as nanoseconds out of range; write 99999999999999999999s or \
             99999999999999999999ns (or ms, us), or an RFC 3339 time"
        );
        assert!(parse_time("yesterday").unwrap_err().contains("'yesterday'"));
        assert!(
            parse_time("12h")
                .unwrap_err()
                .starts_with("cannot read time '12h'")
        );
        assert_eq!(
            parse_time("1.0000000001").unwrap_err(),
            "time '1.0000000001' is finer than a nanosecond"
        );
        assert_eq!(
            parse_time("1.5ns").unwrap_err(),
            "time '1.5ns' is finer than a nanosecond"
        );
        assert_eq!(
            parse_time("99999999999s").unwrap_err(),
            "time '99999999999s' is out of range"
        );
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

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("lots").unwrap_err().contains("is not a size"));
        assert_eq!(parse_duration("1.5min"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(
            parse_duration("soon")
                .unwrap_err()
                .contains("is not a duration")
        );
    }
}
