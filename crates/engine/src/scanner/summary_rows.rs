//! Rows answered from a file's summary: a `messages` scan that needs only
//! columns constant per channel (`topic`, `message_type`, `message_encoding`,
//! `file`) of a file whose summary states exact per-channel message counts
//! emits each channel's row `count` times and reads no chunk.
//!
//! This answers `SELECT topic, count(*) ... GROUP BY topic` (and a `topic`
//! filter, which is per channel) without reading messages or their indexes.
//! The counts are used only from an intact summary whose totals agree with
//! each other and with the chunk index; else the scan reads rows as usual.

use std::collections::{BTreeMap, HashSet};

use datafusion::arrow::datatypes::SchemaRef;

use super::schema::col;
use logsql_readers::model::{Flow, Message, MessageReceiver, Summary};

/// Whether every column of `read_schema` (the output and the predicate's
/// columns) is constant per channel of one file.
pub(crate) fn columns_per_channel(read_schema: &SchemaRef) -> bool {
    read_schema.fields().iter().all(|f| {
        matches!(
            f.name().as_str(),
            col::TOPIC | col::MESSAGE_TYPE | col::MESSAGE_ENCODING | col::FILE
        )
    })
}

/// The summary's per-channel message counts, when they can be trusted to be
/// exactly the rows a full read would deliver: no damage, every counted
/// channel known, the counts summing to the stated total, the chunks' own
/// counts (when all are known) summing to it too, and, when every chunk lists
/// its channels, the channels with messages being exactly those listed.
pub(crate) fn exact_counts(summary: &Summary) -> Option<&BTreeMap<u64, u64>> {
    let counts = summary.channel_message_counts.as_ref()?;
    if summary.damage.is_some() {
        return None;
    }
    let total = counts
        .values()
        .try_fold(0u64, |acc, &n| acc.checked_add(n))?;
    if summary.message_count != Some(total) {
        return None;
    }
    if counts
        .iter()
        .any(|(id, &n)| n > 0 && !summary.channels.contains_key(id))
    {
        return None;
    }
    let chunk_sum = summary
        .chunks
        .iter()
        .try_fold(0u64, |acc, c| acc.checked_add(c.message_count?));
    if chunk_sum.is_some_and(|n| n != total) {
        return None;
    }
    let listed: Option<HashSet<u64>> =
        summary
            .chunks
            .iter()
            .try_fold(HashSet::new(), |mut acc, c| {
                acc.extend(c.channels.as_ref()?.iter().copied());
                Some(acc)
            });
    if let Some(listed) = listed {
        let counted: HashSet<u64> = counts
            .iter()
            .filter(|&(_, &n)| n > 0)
            .map(|(&id, _)| id)
            .collect();
        if listed != counted {
            return None;
        }
    }
    Some(counts)
}

/// Delivers each channel's constant row `count` times to `receiver` (channels
/// outside `wanted`, when given, are skipped). Returns the rows delivered;
/// stops early when the receiver says so (a satisfied `LIMIT`).
pub(crate) fn emit(
    summary: &Summary,
    counts: &BTreeMap<u64, u64>,
    wanted: Option<&HashSet<u64>>,
    receiver: &mut dyn MessageReceiver,
) -> u64 {
    let mut rows = 0;
    for (id, &n) in counts {
        let Some(channel) = summary.channels.get(id) else {
            continue;
        };
        if wanted.is_some_and(|w| !w.contains(id)) {
            continue;
        }
        let msg = Message {
            channel,
            log_time: 0,
            publish_time: None,
            sequence: None,
            data: &[],
            data_buffer: None,
            extra: &[],
        };
        for _ in 0..n {
            rows += 1;
            if receiver.message(msg) == Flow::Stop {
                return rows;
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use logsql_readers::model::{Channel, ChunkMeta};

    fn summary() -> Summary {
        let ch = |id: u64, topic: &str| Channel {
            id,
            topic: topic.into(),
            message_type: Some("t".into()),
            message_encoding: "cdr".into(),
            schema_encoding: None,
            schema: None,
            metadata: BTreeMap::new(),
        };
        let chunk = |index: usize, n: u64, ids: Vec<u64>| ChunkMeta {
            index,
            offset: index as u64 * 100,
            length: 100,
            start_time: Some(1),
            end_time: Some(2),
            message_count: Some(n),
            channels: Some(ids),
            compression: String::new(),
            compressed_size: 100,
            uncompressed_size: None,
        };
        Summary {
            channels: BTreeMap::from([(1, ch(1, "/a")), (2, ch(2, "/b"))]),
            chunks: vec![chunk(0, 3, vec![1, 2]), chunk(1, 2, vec![1])],
            message_count: Some(5),
            channel_message_counts: Some(BTreeMap::from([(1, 4), (2, 1)])),
            ..Summary::default()
        }
    }

    #[test]
    fn consistent_counts_are_exact() {
        assert_eq!(exact_counts(&summary()).map(|c| c[&1]), Some(4));
    }

    #[test]
    fn disagreeing_totals_are_not_exact() {
        let mut s = summary();
        s.message_count = Some(6);
        assert!(exact_counts(&s).is_none());
        let mut s = summary();
        s.chunks[1].message_count = Some(3);
        assert!(exact_counts(&s).is_none());
        let mut s = summary();
        s.chunks[1].channels = Some(vec![2]);
        s.chunks[0].channels = Some(vec![2]);
        assert!(exact_counts(&s).is_none());
        let mut s = summary();
        s.damage = Some(logsql_readers::Error::Invalid("x".into()));
        assert!(exact_counts(&s).is_none());
    }

    struct Collect(Vec<String>, usize);
    impl MessageReceiver for Collect {
        fn message(&mut self, msg: Message<'_>) -> Flow {
            self.0.push(msg.channel.topic.clone());
            if self.0.len() >= self.1 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        }
    }

    #[test]
    fn emits_each_channel_count_times_and_stops_when_told() {
        let s = summary();
        let counts = exact_counts(&s).unwrap();
        let mut all = Collect(vec![], usize::MAX);
        assert_eq!(emit(&s, counts, None, &mut all), 5);
        assert_eq!(all.0, ["/a", "/a", "/a", "/a", "/b"]);
        let mut b = Collect(vec![], usize::MAX);
        assert_eq!(emit(&s, counts, Some(&HashSet::from([2])), &mut b), 1);
        assert_eq!(b.0, ["/b"]);
        let mut two = Collect(vec![], 2);
        assert_eq!(emit(&s, counts, None, &mut two), 2);
    }
}
