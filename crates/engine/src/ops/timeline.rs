//! Topic timelines, as data: each topic's messages counted into fixed-width
//! buckets over the recording's span, and the gaps where it went silent
//! (`logsql info --timeline` draws them; the CLI owns the drawing).
//!
//! The message times come from [`super::info`]'s read of every chunk (the one
//! that counts messages where a file states no counts): MCAP's message indexes
//! answer straight into per-channel lists (`FormatReader::chunk_times`), other
//! formats through a header-only read that their indexes answer where they
//! hold per-message times (bag index data, BDDF's file index) without
//! decompressing payloads; [`Timeline::bytes_decompressed`] says where more
//! had to be read.

use std::collections::BTreeMap;

/// Buckets of a timeline (characters of its bar).
pub const WIDTH: usize = 60;

/// A silence is a gap when it lasts more than this many of the topic's usual
/// periods (the 90th percentile of the times between its messages).
pub const GAP_PERIODS: u64 = 4;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
