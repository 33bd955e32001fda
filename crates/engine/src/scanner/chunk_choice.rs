//! Which chunks of a file a scan reads: a pure function of the scan's plan,
//! the file's summary and the byte range a partition owns. No I/O; the
//! filters that tighten while the query runs are applied later, chunk by
//! chunk ([`super::newest_first::RuntimePruning`]).

use std::collections::HashSet;
use std::ops::Range;

use super::newest_first;
use super::options::OnError;
use super::predicate::ChunkStatistics;
use super::scan::{ScanPlan, dealt_position};
use super::summary_rows;
use super::target::ScanTarget;
use super::time_order;
use logsql_readers::model::{ChunkMeta, Summary};

/// The chunks a scan of one file (or byte range of it) reads, and what the
/// summary alone decided.
#[derive(Debug, Default)]
pub(crate) struct ChunkChoice {
    /// Chunks in the byte range, before pruning (`chunks_total`).
    pub(crate) in_range: usize,
    /// Whether the summary rules out the whole file (no selected topic, or no
    /// chunk that can match): none of its chunks is read.
    pub(crate) file_pruned: bool,
    /// Whether pruning by the summary kept every chunk of the whole file.
    pub(crate) keeps_every_chunk: bool,
    /// Channel ids of the selected topics (`None`: every channel).
    pub(crate) wanted_channels: Option<HashSet<u64>>,
    /// Whether the rows are answered from the summary's per-channel counts
    /// (see [`summary_rows`]): no chunk is read.
    pub(crate) answered_by_summary: bool,
    /// Positions in [`Summary::chunks`] of the chunks to read, in read order.
    pub(crate) chunks: Vec<usize>,
}

/// The chunks of `summary` (of the file `name`, `size` bytes) that a scan
/// under `plan` owning `range` reads.
///
/// A byte range owns the chunks whose offset it holds or, in declared time
/// order, those whose dealt position it holds ([`dealt_position`]), so that
/// every partition holds chunks from the whole span and a merge of the
/// partitions keeps them all busy. Of those, it reads the ones the predicate
/// (time bounds, topics) cannot rule out by the summary, that list a selected
/// channel, and that hold messages at all.
pub(crate) fn choose_chunks(
    plan: &ScanPlan,
    summary: &Summary,
    range: Option<&Range<u64>>,
    size: u64,
    name: &str,
) -> ChunkChoice {
    let dealt = plan.time_order.is_some();
    let n = summary.chunks.len();
    let owned: Vec<bool> = summary
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            range.is_none_or(|r| {
                r.contains(&match dealt {
                    true => dealt_position(i, n, size),
                    false => c.offset,
                })
            })
        })
        .collect();
    let in_range = owned.iter().filter(|o| **o).count();
    // Channels of the selected topics, to skip chunks that list none of them.
    let wanted_channels: Option<HashSet<u64>> = plan.selection.topics.as_ref().map(|topics| {
        summary
            .channels
            .values()
            .filter(|c| topics.contains(&c.topic))
            .map(|c| c.id)
            .collect()
    });
    // Pruning by the summary: every chunk of the file against the predicate.
    let keep_all: Vec<bool> = match &plan.pruning {
        Some(p) => {
            let all: Vec<&ChunkMeta> = summary.chunks.iter().collect();
            p.prune(&ChunkStatistics::new(all, &summary.channels, name))
                .unwrap_or_else(|_| vec![true; n])
        }
        None => vec![true; n],
    };
    // The summary's channel list is trusted to be complete only for an
    // undamaged file whose chunks list no channel it lacks.
    let channels_complete = summary.damage.is_none()
        && !summary.channels.is_empty()
        && summary.chunks.iter().all(|c| {
            c.channels
                .as_ref()
                .is_none_or(|ids| ids.iter().all(|id| summary.channels.contains_key(id)))
        });
    let file_pruned = (channels_complete
        && wanted_channels.as_ref().is_some_and(HashSet::is_empty))
        || (!keep_all.is_empty() && keep_all.iter().all(|k| !k));
    // Not under `warn`: the rows must be those that decode (see the scan's
    // selection).
    let answered_by_summary = matches!(plan.target, ScanTarget::Messages)
        && plan.on_error != OnError::Warn
        && summary_rows::columns_per_channel(&plan.read_schema)
        && summary_rows::exact_counts(summary).is_some();
    let table = plan.target.table().is_some();
    let chunks: Vec<usize> = summary
        .chunks
        .iter()
        .enumerate()
        .filter(|&(i, c)| {
            owned[i]
                && keep_all[i]
                && !file_pruned
                && !answered_by_summary
                // A chunk that lists none of the selected channels.
                && !matches!((&wanted_channels, &c.channels),
                    (Some(wanted), Some(listed)) if !listed.iter().any(|id| wanted.contains(id)))
                // A chunk the index shows without messages (MCAP's first
                // chunk of schema and channel records) is not read for messages.
                && (table || !time_order::holds_no_message(summary, c))
        })
        .map(|(i, _)| i)
        .collect();
    let chunks = newest_first::read_order(summary, chunks, plan.newest_first);
    ChunkChoice {
        in_range,
        file_pruned,
        keeps_every_chunk: keep_all.iter().all(|k| *k),
        wanted_channels,
        answered_by_summary,
        chunks,
    }
}
