//! Topic timelines for `logsql info`: each topic's message rate over the
//! recording's span as a fixed-width bar, and the gaps where it went silent.
//!
//! The message times come from `info`'s read of every chunk (the one that
//! counts messages where a file states no counts): MCAP's message indexes
//! answer straight into per-channel lists (`FormatReader::chunk_times`), other
//! formats through a header-only read that their indexes answer where they
//! hold per-message times (bag index data, BDDF's file index) without
//! decompressing payloads; [`Timeline::bytes_decompressed`] says where more
//! had to be read.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

/// Buckets of a timeline (characters of its bar).
pub const WIDTH: usize = 60;

/// A silence is a gap when it lasts more than this many of the topic's usual
/// periods (the 90th percentile of the times between its messages).
const GAP_PERIODS: u64 = 4;

/// Unicode bar levels, lowest first (a bucket without messages is a space).
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// ASCII bar levels, lowest first.
const ASCII: [char; 8] = ['.', ':', '-', '=', '+', '*', '#', '@'];

/// One topic's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicTimeline {
    /// Messages per bucket.
    pub counts: Vec<u64>,
    /// Silences longer than [`GAP_PERIODS`] periods: `(start ns, length ns)`,
    /// from the last message before (or the recording's start) to the next
    /// message (or the recording's end).
    pub gaps: Vec<(u64, u64)>,
}

/// The timelines of a file's topics over one time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// First bucket's start (the recording's first message), ns.
    pub start: u64,
    /// The recording's last message, ns.
    pub end: u64,
    /// Width of a bucket, ns.
    pub bucket_ns: u64,
    /// Per topic.
    pub topics: BTreeMap<String, TopicTimeline>,
    /// Bytes decompressed to find message times (0: the index had them all).
    pub bytes_decompressed: u64,
}

impl Timeline {
    /// The timelines of these per-topic message times (`None` without messages),
    /// read with `bytes_decompressed` decompressed. Sorts each topic's times
    /// (in any order on input).
    pub fn from_times(
        times: &mut BTreeMap<String, Vec<u64>>,
        bytes_decompressed: u64,
    ) -> Option<Self> {
        // Times read from an index in file order are usually sorted already.
        for t in times.values_mut() {
            if !t.is_sorted() {
                t.sort_unstable();
            }
        }
        let start = times.values().filter_map(|t| t.first()).min().copied()?;
        let end = times.values().filter_map(|t| t.last()).max().copied()?;
        let bucket_ns = (end - start) / WIDTH as u64 + 1;
        let topics = times
            .iter()
            .map(|(topic, t)| {
                let counts = bucket_counts(t, start, bucket_ns);
                let gaps = gaps(t, start, end);
                (topic.clone(), TopicTimeline { counts, gaps })
            })
            .collect();
        Some(Self {
            start,
            end,
            bucket_ns,
            topics,
            bytes_decompressed,
        })
    }

    /// The timelines as text lines: one bar per topic, then the gaps.
    pub fn text(&self, ascii: bool) -> String {
        let levels = if ascii { ASCII } else { BLOCKS };
        let name_width = self
            .topics
            .keys()
            .map(|t| t.chars().count())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "  {} buckets of {} from {} to {}{}",
            WIDTH,
            seconds(self.bucket_ns),
            logsql_time(self.start),
            logsql_time(self.end),
            if self.bytes_decompressed > 0 {
                format!(
                    " ({} bytes decompressed: the index does not hold every message time)",
                    self.bytes_decompressed
                )
            } else {
                String::new()
            }
        );
        for (topic, t) in &self.topics {
            let top = t.counts.iter().copied().max().unwrap_or(0).max(1);
            let bar: String = t
                .counts
                .iter()
                .map(|&n| match n {
                    0 => ' ',
                    n => levels[((n * levels.len() as u64 - 1) / top) as usize],
                })
                .collect();
            let _ = writeln!(
                s,
                "  {topic:<name_width$}  |{bar}|  peak {:.1} Hz",
                top as f64 / (self.bucket_ns as f64 / 1e9)
            );
        }
        let gaps: Vec<(&String, &(u64, u64))> = self
            .topics
            .iter()
            .flat_map(|(topic, t)| t.gaps.iter().map(move |g| (topic, g)))
            .collect();
        if !gaps.is_empty() {
            let _ = writeln!(
                s,
                "  gaps (no message for more than {GAP_PERIODS} periods):"
            );
            for (topic, (at, len)) in gaps {
                let _ = writeln!(
                    s,
                    "    {topic:<name_width$}  {} from +{:.3} s ({})",
                    seconds(*len),
                    (at - self.start) as f64 / 1e9,
                    logsql_time(*at)
                );
            }
        }
        s
    }

    /// The timelines as JSON: the axis, and per topic its counts, rates and gaps.
    pub fn json(&self) -> Value {
        let per_second = 1e9 / self.bucket_ns as f64;
        let topics: BTreeMap<&String, Value> = self
            .topics
            .iter()
            .map(|(topic, t)| {
                let gaps: Vec<Value> = t
                    .gaps
                    .iter()
                    .map(|(at, len)| {
                        json!({"start_ns": at, "start": logsql_time(*at), "length_ns": len})
                    })
                    .collect();
                let rates: Vec<f64> = t.counts.iter().map(|&n| n as f64 * per_second).collect();
                (
                    topic,
                    json!({"counts": t.counts, "rates_hz": rates, "gaps": gaps}),
                )
            })
            .collect();
        json!({
            "start_ns": self.start,
            "end_ns": self.end,
            "bucket_ns": self.bucket_ns,
            "buckets": WIDTH,
            "bytes_decompressed": self.bytes_decompressed,
            "topics": topics,
        })
    }
}

/// Messages per bucket of sorted `times`, all in `start..start + WIDTH * bucket_ns`
/// (found by walking the bucket ends along the times, without a division each).
fn bucket_counts(times: &[u64], start: u64, bucket_ns: u64) -> Vec<u64> {
    let mut counts = vec![0u64; WIDTH];
    let mut rest = times;
    for (i, n) in counts.iter_mut().enumerate() {
        let end = start.saturating_add((i as u64 + 1).saturating_mul(bucket_ns));
        let inside = rest.partition_point(|&x| x < end);
        *n = inside as u64;
        rest = &rest[inside..];
    }
    counts
}

/// Silences in sorted `times` longer than [`GAP_PERIODS`] median periods,
/// including a late start and an early end within `start..=end`.
fn gaps(times: &[u64], start: u64, end: u64) -> Vec<(u64, u64)> {
    let mut deltas: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    if deltas.is_empty() {
        return Vec::new();
    }
    // The usual period: the 90th percentile of the intervals, so that topics
    // published in bursts (several messages, then a pause) count their pauses
    // as the period, while one long silence among many intervals stands out.
    let rank = (deltas.len() * 9 / 10).min(deltas.len() - 1);
    let period = (*deltas.select_nth_unstable(rank).1).max(1);
    let limit = period.saturating_mul(GAP_PERIODS);
    let mut out = Vec::new();
    let mut last = start;
    for &t in times.iter().chain(std::iter::once(&end)) {
        if t > last && t - last > limit {
            out.push((last, t - last));
        }
        last = last.max(t);
    }
    out
}

/// `1.25 s`, `40 ms`.
fn seconds(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.3} s", ns as f64 / 1e9)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}

fn logsql_time(ns: u64) -> String {
    super::units::rfc3339(ns as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn buckets_hold_their_start_and_not_their_end() {
        let b = 10;
        let times = [
            100,
            100,
            100 + b - 1,
            100 + b,
            100 + 59 * b,
            100 + 60 * b - 1,
        ];
        let counts = bucket_counts(&times, 100, b);
        assert_eq!(counts.len(), WIDTH);
        assert_eq!((counts[0], counts[1], counts[59]), (3, 1, 2));
        assert_eq!(counts.iter().sum::<u64>(), 6);
    }

    #[test]
    fn gaps_and_late_starts_are_found() {
        // /a at 10 Hz over 0..10 s with a pause from 3.9 s to 6.0 s; /b at 5 Hz from 5 s.
        let a: Vec<u64> = (0..100u64)
            .map(|i| i * S / 10)
            .filter(|&t| !(4 * S..6 * S).contains(&t))
            .collect();
        let b: Vec<u64> = (25..50u64).map(|i| i * S / 5).collect();
        let mut times = BTreeMap::from([("/a".to_string(), a), ("/b".to_string(), b)]);
        let t = Timeline::from_times(&mut times, 0).unwrap();
        assert_eq!((t.start, t.end), (0, 99 * S / 10));
        assert_eq!(t.topics["/a"].gaps, [(39 * S / 10, 21 * S / 10)]);
        assert_eq!(t.topics["/b"].gaps, [(0, 5 * S)]);
        assert_eq!(t.topics["/a"].counts.iter().sum::<u64>(), 80);
        let text = t.text(true);
        assert!(text.contains("/a  2.100 s from +3.900 s"), "{text}");
        assert!(text.contains("/b  5.000 s from +0.000 s"), "{text}");
        // /b's bar is blank for its first half.
        let bar = text.lines().find(|l| l.contains("/b  |")).unwrap();
        let cells: String = bar.split('|').nth(1).unwrap().to_string();
        let cells: Vec<char> = cells.chars().collect();
        assert!(cells[..28].iter().all(|c| *c == ' '), "{bar}");
        assert!(
            cells[31..].iter().filter(|c| **c != ' ').count() > 20,
            "{bar}"
        );
    }
}
