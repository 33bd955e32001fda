//! The x axis of a chart: where it starts, and how its tick labels read.
//!
//! Times are drawn as seconds after the first point (an f64 of nanoseconds
//! since the epoch keeps only ~256 ns, and drawing libraries pick better ticks
//! on small numbers); the labels turn them back into UTC times, with the
//! precision the span needs.

use super::chart::XKind;
use crate::units::rfc3339;

/// An x axis: values are drawn at `(x - origin) / scale`.
#[derive(Debug, Clone)]
pub struct XAxis {
    /// How the x column is read.
    pub kind: XKind,
    /// The value drawn at 0 (the first time; 0 for numbers).
    pub origin: f64,
    /// Units of x per drawn unit (1e9 for times: drawn in seconds).
    pub scale: f64,
    /// The drawn span (last - first), for choosing label precision.
    pub span: f64,
    /// The axis title: the column, and for times the day when all fall on one.
    pub title: String,
}

impl XAxis {
    /// The axis of a column named `name` of `kind` whose points span `lo..=hi`.
    pub fn new(name: &str, kind: XKind, (lo, hi): (f64, f64)) -> Self {
        match kind {
            XKind::Number => XAxis {
                kind,
                origin: 0.0,
                scale: 1.0,
                span: hi - lo,
                title: name.to_string(),
            },
            XKind::Time => {
                let (first, last) = (rfc3339(lo as i64), rfc3339(hi as i64));
                let title = if first[..10] == last[..10] {
                    format!("{name} (UTC, {})", &first[..10])
                } else {
                    format!("{name} (UTC)")
                };
                XAxis {
                    kind,
                    origin: lo,
                    scale: 1e9,
                    span: (hi - lo) / 1e9,
                    title,
                }
            }
        }
    }

    /// Where `x` is drawn.
    pub fn place(&self, x: f64) -> f64 {
        (x - self.origin) / self.scale
    }

    /// The tick label of the drawn position `v`.
    pub fn label(&self, v: f64) -> String {
        match self.kind {
            XKind::Number => number(v, self.span),
            XKind::Time => {
                let ns = (self.origin + v * self.scale).round() as i64;
                // `2024-05-01T12:34:56.789Z`: keep what the span needs,
                // rounded (the f64 position is ~256 ns off).
                let unit = if self.span >= 60.0 {
                    1_000_000_000
                } else {
                    1_000_000
                };
                let ns = (ns + unit / 2).div_euclid(unit) * unit;
                let text = rfc3339(ns);
                let text = text.trim_end_matches('Z');
                if self.span >= 2.0 * 86_400.0 {
                    text[..16].replace('T', " ")
                } else if self.span >= 60.0 {
                    text[11..19].to_string()
                } else {
                    let mut t = text[11..].to_string();
                    if !t.contains('.') {
                        t.push_str(".000");
                    }
                    t
                }
            }
        }
    }
}

/// A number with as many decimals as a range of `span` needs to tell ticks apart.
pub fn number(v: f64, span: f64) -> String {
    let magnitude = if span > 0.0 {
        span.log10().floor()
    } else {
        0.0
    };
    let decimals = (2.0 - magnitude).clamp(0.0, 9.0) as usize;
    let text = format!("{v:.decimals$}");
    if text == "-0" || text.chars().all(|c| matches!(c, '-' | '0' | '.')) && text.starts_with('-') {
        text[1..].to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_labels_follow_the_span() {
        let t0 = 1_714_566_896_000_000_000.0; // 2024-05-01T12:34:56Z
        let short = XAxis::new("log_time", XKind::Time, (t0, t0 + 5e9));
        assert_eq!(short.title, "log_time (UTC, 2024-05-01)");
        assert_eq!(short.label(0.25), "12:34:56.250");
        assert_eq!(short.label(1.0), "12:34:57.000");
        let long = XAxis::new("t", XKind::Time, (t0, t0 + 600e9));
        assert_eq!(long.label(64.4), "12:36:00");
        let days = XAxis::new("t", XKind::Time, (t0, t0 + 3.0 * 86_400e9));
        assert_eq!(days.title, "t (UTC)");
        assert_eq!(days.label(86_400.0), "2024-05-02 12:34");
    }

    #[test]
    fn numbers_have_the_decimals_their_range_needs() {
        assert_eq!(number(0.123456, 0.5), "0.123");
        assert_eq!(number(1234.6, 2000.0), "1235");
        assert_eq!(number(-0.0001, 1.0), "0.00");
    }
}
