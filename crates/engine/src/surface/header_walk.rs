//! What a log file's message headers say beyond its summary: every message's
//! channel and log time, read without payloads, and from them each topic's
//! message count and first and last log time. `topics()` and `logsql info`
//! read them here when the summary does not state them (and `info` keeps the
//! times for its timelines).

use std::collections::BTreeMap;

use logsql_readers::formats::FormatReader;
use logsql_readers::io::ReadAt;
use logsql_readers::limits::Limits;
use logsql_readers::model::{Channel, ChannelTimes, ChunkMeta, Flow, Message, Selection, Summary};

/// What a walk over message headers cost, and where it stopped short.
#[derive(Debug, Default)]
pub struct HeaderWalk {
    /// Bytes decompressed for the chunks whose times the format's index does not hold.
    pub bytes_decompressed: u64,
    /// The error of each chunk that could not be read to its end, in the order read.
    pub errors: Vec<logsql_readers::Error>,
}

/// Reads the log time of every message of `chunks` of one file: from the
/// format's own index where it holds them ([`FormatReader::chunk_times`]: no
/// decompression), else from the chunk's message headers (no payloads; the
/// formats still answer from their indexes where they can). Hands `f` each
/// run of times with its channel id and channel (`None` for an id `summary`
/// does not define). A chunk that cannot be read to its end gives the times
/// before the damage and its error, and the walk goes on.
pub(crate) fn walk_headers<'c>(
    format: &dyn FormatReader,
    file: &dyn ReadAt,
    summary: &Summary,
    chunks: impl IntoIterator<Item = &'c ChunkMeta>,
    limits: Limits,
    mut f: impl FnMut(u64, Option<&Channel>, &[u64]),
) -> HeaderWalk {
    let sel = Selection {
        time: None,
        topics: None,
        payload: false,
        full_header: false,
        limits,
    };
    let mut walk = HeaderWalk::default();
    for chunk in chunks {
        let mut indexed = ChannelTimes::default();
        match format.chunk_times(file, summary, chunk, &mut indexed) {
            Ok(true) => {
                for (id, times) in indexed.into_channels() {
                    f(id, summary.channels.get(&id), &times);
                }
                continue;
            }
            Ok(false) => {}
            Err(e) => {
                walk.errors.push(e);
                continue;
            }
        }
        let mut receiver = |m: Message<'_>| {
            f(m.channel.id, Some(m.channel), &[m.log_time]);
            Flow::Continue
        };
        match format.read_chunk(file, summary, chunk, &sel, &mut receiver) {
            Ok(r) => walk.bytes_decompressed += r.bytes_decompressed,
            Err(e) => walk.errors.push(e),
        }
    }
    walk
}

/// One topic's messages in one file, counted from their headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicCount {
    /// The message type of the first of the topic's channels met.
    pub message_type: Option<String>,
    /// The message encoding of that channel.
    pub message_encoding: String,
    /// How many messages the topic has.
    pub count: u64,
    /// Its first `log_time`.
    pub first: Option<u64>,
    /// Its last `log_time`.
    pub last: Option<u64>,
}

/// Counts the messages of every topic of one file, with each topic's first and
/// last log time, from the format's index where it holds their times, else from
/// header-only chunk reads; `times` sees each topic's times as they are read. A
/// damaged chunk counts its messages before the damage and adds its error to
/// [`HeaderWalk::errors`]. A channel `summary` does not define counts under the
/// topic `""`.
pub fn count_topics(
    format: &dyn FormatReader,
    file: &dyn ReadAt,
    summary: &Summary,
    limits: Limits,
    mut times: impl FnMut(&str, &[u64]),
) -> (BTreeMap<String, TopicCount>, HeaderWalk) {
    let mut topics: BTreeMap<String, TopicCount> = BTreeMap::new();
    let walk = walk_headers(
        format,
        file,
        summary,
        &summary.chunks,
        limits,
        |_, ch, t| {
            let topic = ch.map_or("", |c| c.topic.as_str());
            let count = match topics.get_mut(topic) {
                Some(c) => c,
                None => topics
                    .entry(topic.to_string())
                    .or_insert_with(|| TopicCount {
                        message_type: ch.and_then(|c| c.message_type.clone()),
                        message_encoding: ch
                            .map(|c| c.message_encoding.clone())
                            .unwrap_or_default(),
                        ..TopicCount::default()
                    }),
            };
            count.count += t.len() as u64;
            count.first = min_opt(count.first, t.iter().min().copied());
            count.last = count.last.max(t.iter().max().copied());
            times(topic, t);
        },
    );
    (topics, walk)
}

/// The smaller of two optional times (`None` only when both are).
pub(crate) fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
