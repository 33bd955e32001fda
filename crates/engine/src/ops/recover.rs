//! `logsql recover`'s plan: the summaries of the files that passed the
//! check, the time axis of damaged, unsorted recordings cut into windows
//! that each hold about a memory budget of messages (estimated from the
//! chunks' stated times and sizes, so that each window sorts within the
//! budget), and each window's query (`... WHERE log_time >= a AND log_time <
//! b ORDER BY log_time`; time pushdown reads only the chunks overlapping
//! it). The queries are written one after the other as one output by
//! [`super::export::write_log_of`].

use std::path::Path;

use logsql_readers::formats;
use logsql_readers::io::FileReader;
use logsql_readers::limits::Limits;
use logsql_readers::model::Summary;

use super::export::export_sql;

/// Rows per batch while recovering: payloads may be large, and the sort of
/// an input out of time order reserves and spills whole batches.
pub const SORT_BATCH_ROWS: usize = 256;

/// The settings a recover runs under with `memory_limit` bytes: damaged
/// input warns instead of failing, small batches (a sort holds and spills
/// payloads a few at a time), and the sort's memory bounded.
pub fn settings(memory_limit: usize) -> [String; 3] {
    [
        "SET logsql.on_error = 'warn'".to_string(),
        format!("SET datafusion.execution.batch_size = {SORT_BATCH_ROWS}"),
        format!(
            "SET datafusion.runtime.memory_limit = '{}K'",
            (memory_limit / 1024).max(1)
        ),
    ]
}

/// The summaries of the files at `paths` that a reader can open (a file
/// whose summary cannot be read gives none).
pub fn summaries<'a>(paths: impl IntoIterator<Item = &'a Path>, limits: &Limits) -> Vec<Summary> {
    paths
        .into_iter()
        .filter_map(|path| {
            let f = FileReader::open(path).ok()?;
            formats::detect(&f)
                .and_then(|format| format.summary_with_limits(&f, limits))
                .ok()
        })
        .collect()
}

/// The queries that recover `input` (of `files` files, with `summaries`)
/// within a sort memory of `budget` bytes: one per time window, each in
/// `log_time` order.
pub fn window_sqls(input: &str, files: usize, summaries: &[Summary], budget: u64) -> Vec<String> {
    let windows = time_windows(&chunk_spans(summaries), budget);
    let copied = windows.len() > 1 || files > 1;
    windows
        .iter()
        .map(|&(start, end)| {
            let mut sql = export_sql(input, &Default::default(), start, end);
            if copied {
                // Payloads copied out of the chunk buffers they view: a
                // window's sort (or the sort that merges several files)
                // then holds its own messages, not every chunk any of them
                // came from.
                sql = sql.replacen(
                    "SELECT *",
                    "SELECT * EXCLUDE (data), arrow_cast(data, 'Binary') AS data",
                    1,
                );
            }
            sql.push_str(" ORDER BY log_time");
            sql
        })
        .collect()
}

/// Whether writing `output` would write `input` (the same file, or a file
/// inside an `input` directory): recover never writes its input.
pub fn writes_input(input: &str, output: &Path) -> bool {
    let parent = match output.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => return false,
    };
    let (Ok(input), Ok(parent)) = (std::fs::canonicalize(input), std::fs::canonicalize(parent))
    else {
        return false;
    };
    let target = parent.join(output.file_name().unwrap_or_default());
    target == input || (input.is_dir() && target.starts_with(&input))
}

/// A chunk's stated time span (inclusive) and its size in bytes.
pub type Span = (u64, u64, u64);

/// The stated time spans and sizes of the chunks of every summary; empty
/// when some file's chunks state no times (then one window).
pub fn chunk_spans(summaries: &[Summary]) -> Vec<Span> {
    let mut spans = Vec::new();
    for summary in summaries {
        for chunk in &summary.chunks {
            let (Some(s), Some(e)) = (chunk.start_time, chunk.end_time) else {
                return Vec::new();
            };
            let bytes = chunk.uncompressed_size.unwrap_or(chunk.length).max(1);
            spans.push((s.min(e), e.max(s), bytes));
        }
    }
    spans
}

/// Cuts the time axis into windows `[start, end)` (`None`: unbounded) that
/// each hold about `budget` bytes of messages, estimated from the chunks'
/// stated spans and sizes with messages spread evenly over each span. One
/// window, unbounded, when everything fits or the chunks are in time order
/// and disjoint (the scan then streams in order without a sort).
pub fn time_windows(chunks: &[Span], budget: u64) -> Vec<(Option<i64>, Option<i64>)> {
    let total: u64 = chunks.iter().map(|c| c.2).sum();
    let ordered = chunks.windows(2).all(|w| w[0].1 < w[1].0);
    if total <= budget || ordered {
        return vec![(None, None)];
    }
    // Sweep over every chunk start and end: bytes per nanosecond in between.
    let mut events: Vec<(u64, f64)> = Vec::with_capacity(chunks.len() * 2);
    for &(s, e, bytes) in chunks {
        let density = bytes as f64 / ((e - s) as f64 + 1.0);
        events.push((s, density));
        events.push((e.saturating_add(1), -density));
    }
    events.sort_by_key(|e| e.0);
    let budget = budget.max(1) as f64;
    let mut cuts: Vec<u64> = Vec::new();
    let (mut density, mut held) = (0.0_f64, 0.0_f64);
    for pair in events.windows(2) {
        density += pair[0].1;
        let (from, to) = (pair[0].0, pair[1].0);
        if to <= from || density <= 0.0 {
            continue;
        }
        let mut at = from;
        let mut bytes = density * (to - from) as f64;
        while held + bytes > budget {
            // Cut where the window is full (at least 1 ns on, when empty).
            let room = ((budget - held) / density).floor().max(0.0) as u64;
            let room = if room == 0 && held == 0.0 { 1 } else { room };
            at = at.saturating_add(room).min(to);
            if at >= to {
                break;
            }
            cuts.push(at);
            held = 0.0;
            bytes = density * (to - at) as f64;
        }
        held += bytes;
    }
    cuts.dedup();
    let bound = |t: u64| i64::try_from(t).ok();
    let mut windows = Vec::with_capacity(cuts.len() + 1);
    let mut start = None;
    for cut in cuts {
        let Some(cut) = bound(cut) else { break };
        windows.push((start, Some(cut)));
        start = Some(cut);
    }
    windows.push((start, None));
    windows
}

#[cfg(test)]
mod tests {
    use super::time_windows;

    #[test]
    fn ordered_or_small_inputs_are_one_window() {
        let ordered = [(0, 9, 100), (10, 19, 100), (20, 29, 100)];
        assert_eq!(time_windows(&ordered, 10), [(None, None)]);
        let small = [(0, 99, 10), (50, 150, 10)];
        assert_eq!(time_windows(&small, 100), [(None, None)]);
        assert_eq!(time_windows(&[], 1), [(None, None)]);
    }

    #[test]
    fn overlapping_chunks_are_cut_into_windows_of_about_the_budget() {
        // Two chunks over the same second, 1000 bytes each: 2000 bytes
        // evenly over 0..1000, windows of 500 bytes hold 250 ns each.
        let chunks = [(0, 999, 1000), (0, 999, 1000)];
        assert_eq!(
            time_windows(&chunks, 500),
            [
                (None, Some(250)),
                (Some(250), Some(500)),
                (Some(500), Some(750)),
                (Some(750), None)
            ]
        );
        // Out of file order but disjoint: cut between them.
        let chunks = [(100, 199, 1000), (0, 99, 1000)];
        assert_eq!(
            time_windows(&chunks, 1000),
            [(None, Some(100)), (Some(100), None)]
        );
    }
}
