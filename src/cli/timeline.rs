//! Topic timelines for `logsql info`, drawn: each topic's message rate over
//! the recording's span as a fixed-width bar, and the gaps where it went
//! silent, as text or JSON. The timelines themselves (buckets, gaps) are
//! [`logsql::ops::timeline`]'s.

use std::fmt::Write as _;

use logsql::ops::timeline::{GAP_PERIODS, Timeline, WIDTH};
use logsql::ops::units::rfc3339;

/// Unicode bar levels, lowest first (a bucket without messages is a space).
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// ASCII bar levels, lowest first.
const ASCII: [char; 8] = ['.', ':', '-', '=', '+', '*', '#', '@'];

/// The timelines as text lines: one bar per topic, then the gaps.
pub fn text(timeline: &Timeline, ascii: bool) -> String {
    let levels = if ascii { ASCII } else { BLOCKS };
    let name_width = timeline
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
        seconds(timeline.bucket_ns),
        rfc3339(timeline.start as i64),
        rfc3339(timeline.end as i64),
        if timeline.bytes_decompressed > 0 {
            format!(
                " ({} bytes decompressed: the index does not hold every message time)",
                timeline.bytes_decompressed
            )
        } else {
            String::new()
        }
    );
    for (topic, t) in &timeline.topics {
        let top = t.counts.iter().copied().max().unwrap_or(0).max(1);
        let bar: String = t
            .counts
            .iter()
            .map(|&n| match n {
                0 => ' ',
                n => levels[((n * levels.len() as u64 - 1) / top) as usize],
            })
            .collect();
        // A recording of one instant has no rate.
        let peak = match timeline.end > timeline.start {
            true => format!("{:.1} Hz", top as f64 / (timeline.bucket_ns as f64 / 1e9)),
            false => "-".to_string(),
        };
        let _ = writeln!(s, "  {topic:<name_width$}  |{bar}|  peak {peak}");
    }
    let gaps: Vec<(&String, &(u64, u64))> = timeline
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
                (at - timeline.start) as f64 / 1e9,
                rfc3339(*at as i64)
            );
        }
    }
    s
}

/// `1.25 s`, `40 ms`.
fn seconds(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.3} s", ns as f64 / 1e9)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const S: u64 = 1_000_000_000;

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
        let text = text(&t, true);
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
