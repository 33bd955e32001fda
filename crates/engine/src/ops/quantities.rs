//! Sizes and durations as users type them (`512MiB`, `2GB`, `30s`, `5min`):
//! the CLI's flags and the `logsql dataset` spec read them the same way.

use std::time::Duration;

/// Parses a size: bytes, or a number with `KB`/`MB`/`GB`/`TB` (powers of
/// 1000) or `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
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
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
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
