//! The facts of `logsql info` and of Python's `logsql.info()`, gathered once:
//! each file's format, size, index state, checksum, damage, message counts,
//! time span, compression, topics with their types and counts, cameras and
//! timelines ([`Facts`]). The CLI renders them as text or JSON.
//!
//! Files are read as queries read them ([`files`]): through the session's
//! summary cache, the index when the file has one, a recovery walk otherwise.
//! When the file does not state per-topic message counts, they are counted by
//! reading message headers (no payloads), chunk by chunk, as `topics()` counts
//! them; damage stops a chunk, not the count ([`gather`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::DataFusionError;
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;
use logsql_readers::formats::FormatReader;
use logsql_readers::io::{ReadAt, check_regular_file};
use logsql_readers::limits::Limits;
use logsql_readers::model::Summary;

use super::sql_literal;
use super::timeline::Timeline;
use crate::LogsqlOptions;
use crate::storage::object_io::{FileLocation, is_local};
use crate::storage::summary_cache::{self, CachedSummary};
use crate::surface::header_walk::{HeaderWalk, TopicCount, count_topics};
use crate::surface::url_table::{ResolvedPath, resolve};

/// Reader properties shown by other facts (`index`, `compression`).
const HIDDEN_PROPERTIES: &[&str] = &["index", "chunk_compression"];

/// Why the files a path names could not be listed.
#[derive(Debug)]
pub enum InfoError {
    /// A reader's error (no log files under a directory, ...).
    Read(logsql_readers::Error),
    /// A listing or planning error.
    Query(DataFusionError),
}

impl fmt::Display for InfoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InfoError::Read(e) => write!(f, "{e}"),
            InfoError::Query(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for InfoError {}

impl From<logsql_readers::Error> for InfoError {
    fn from(e: logsql_readers::Error) -> Self {
        InfoError::Read(e)
    }
}

impl From<DataFusionError> for InfoError {
    fn from(e: DataFusionError) -> Self {
        InfoError::Query(e)
    }
}

/// A file `info` summarises: its name, and where it is with its summary, or
/// why it cannot be read.
pub struct InfoFile {
    /// The name shown: a local file as the user spelled it (a directory's
    /// files under it), an object by its URL.
    pub name: String,
    /// Where the file is and its summary, or why it cannot be read.
    pub read: Result<(FileLocation, CachedSummary), logsql_readers::Error>,
}

/// The files `paths` name, each with its summary read through the session's
/// summary cache, as queries list and read them: a directory or glob stands for
/// the log files in it (at any depth, as the session lists them), and one of them that
/// cannot be read as a log file is reported with the others, not fatal.
pub async fn files(state: &SessionState, paths: &[String]) -> Result<Vec<InfoFile>, InfoError> {
    let mut out = Vec::new();
    for path in paths {
        // A local path (not a `file://` URL).
        let local = is_local(path) && !path.starts_with("file:");
        let glob = !Path::new(path).exists() && path.contains(['*', '?', '[']);
        // A missing file, a pipe or a device is that file's failure.
        if local
            && !glob
            && let Err(e) = check_regular_file(Path::new(path))
        {
            out.push(InfoFile {
                name: path.clone(),
                read: Err(e),
            });
            continue;
        }
        let files = read(state, path).await?;
        if files.is_empty() {
            return Err(logsql_readers::Error::NoLogFiles { path: path.clone() }.into());
        }
        out.extend(files);
    }
    Ok(out)
}

/// The files `path` names, with their summaries (see [`files`]).
async fn read(state: &SessionState, path: &str) -> Result<Vec<InfoFile>, InfoError> {
    let mut resolved = resolve(state, path).await?;
    let names: Vec<String> = resolved
        .files
        .iter()
        .map(|(loc, _)| shown_name(path, &resolved, loc))
        .collect();
    for ((loc, _), name) in resolved.files.iter_mut().zip(names) {
        loc.name = name;
    }
    let file = |loc: &FileLocation, read: Result<CachedSummary, logsql_readers::Error>| InfoFile {
        name: loc.name.clone(),
        read: read.map(|cached| (loc.clone(), cached)),
    };
    let cache = summary_cache::of(state.runtime_env());
    let limits = LogsqlOptions::from_config(state.config_options()).limits();
    if let [(loc, format)] = resolved.files.as_slice()
        && !resolved.many
    {
        // One file: summarised (or said not to be a log) whatever it holds.
        let read = loc
            .summary_with_limits(Some(cache), format.clone(), limits)
            .await;
        return Ok(vec![file(loc, read)]);
    }
    let mut files = Vec::new();
    for ((loc, _), read) in resolved.summaries(state).await? {
        files.push(file(loc, read));
    }
    // Named like a log, but no format recognises it: damaged, the detection says how.
    for (loc, _) in resolved.unrecognised_logs() {
        let read = loc.summary_with_limits(Some(cache.clone()), None, limits);
        files.push(file(loc, read.await));
    }
    if is_local(path) {
        files.sort_by(|a, b| Path::new(&a.name).cmp(Path::new(&b.name)));
    }
    Ok(files)
}

/// The name shown for `loc`, one of the files `path` names: a local
/// file by the path as the user spelled it (a directory's files under it), an
/// object by its URL.
fn shown_name(path: &str, resolved: &ResolvedPath, loc: &FileLocation) -> String {
    if !is_local(path) || path.starts_with("file:") {
        return loc.name.clone();
    }
    if !resolved.many {
        return path.to_string();
    }
    // A glob's files are named under the directory before its first pattern character.
    let base = match path.find(['*', '?', '[']) {
        Some(i) if resolved.url.get_glob().is_some() => {
            &path[..path[..i].rfind('/').map_or(0, |j| j + 1)]
        }
        _ => path,
    };
    let under: Vec<&str> = resolved
        .url
        .strip_prefix(&loc.meta.location)
        .into_iter()
        .flatten()
        .collect();
    Path::new(base).join(under.join("/")).display().to_string()
}

/// Per-topic facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicRow {
    /// The message types of the topic's channels (`-` for none), each once.
    pub types: Vec<String>,
    /// Their message encodings (`-` for none), each once.
    pub encodings: Vec<String>,
    /// Messages, stated by the file or counted from message headers.
    pub count: Option<u64>,
}

/// Chunks, compressed and uncompressed bytes of one codec.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Codec {
    /// Chunks compressed with it.
    pub chunks: usize,
    /// Their compressed bytes.
    pub compressed: u64,
    /// Their uncompressed bytes (as far as stated).
    pub uncompressed: u64,
    /// Some chunk does not state its uncompressed size.
    pub unknown: bool,
}

/// A camera topic and what its first image says: encoding and size, or why
/// it could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Camera {
    /// The topic.
    pub topic: String,
    /// Its first image's encoding, width and height, or why there is none.
    pub first: Result<(String, u32, u32), String>,
}

/// What `info` reports about one file.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The file's name as read.
    pub file: String,
    /// Its format's name.
    pub format: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// Reader properties shown as their own lines.
    pub properties: Vec<(String, String)>,
    /// The summary came from the file's index.
    pub indexed: bool,
    /// What to say about the index (the reader's note, or why there is none).
    pub index_note: Option<String>,
    /// The whole-file checksum's outcome (`None`: not verified or none).
    pub checksum: Option<Result<(), String>>,
    /// The damage the summary found.
    pub damage: Option<String>,
    /// Messages in all (stated, or counted from message headers).
    pub messages: Option<u64>,
    /// Why the counts were counted (the file states none).
    pub count_note: Option<&'static str>,
    /// The first chunk that could not be read to its end while counting.
    pub read_error: Option<String>,
    /// The first message's time, ns.
    pub start: Option<u64>,
    /// The last message's time, ns.
    pub end: Option<u64>,
    /// `end - start`, ns.
    pub span: Option<u64>,
    /// Chunks.
    pub chunks: usize,
    /// The chunks per codec (`none` for uncompressed chunks).
    pub codecs: BTreeMap<String, Codec>,
    /// Channels.
    pub channels: usize,
    /// Per topic.
    pub topics: BTreeMap<String, TopicRow>,
    /// Attachments.
    pub attachments: usize,
    /// Metadata records.
    pub metadata: usize,
    /// The topics' timelines, when asked for.
    pub timeline: Option<Timeline>,
    /// Camera topics with their first images, when asked for ([`cameras`]).
    pub cameras: Vec<Camera>,
}

impl Facts {
    /// A topic's mean message rate over the file's span, in Hz.
    pub fn frequency(&self, count: Option<u64>) -> Option<f64> {
        frequency(count, self.span)
    }
}

/// The message rate of `count` messages over `span` ns, in Hz.
fn frequency(count: Option<u64>, span: Option<u64>) -> Option<f64> {
    match (count, span) {
        (Some(n), Some(d)) if d > 0 => Some(n as f64 / (d as f64 / 1e9)),
        _ => None,
    }
}

/// The message types `read_images` reads.
const IMAGE_TYPES: &[&str] = &[
    "sensor_msgs/Image",
    "sensor_msgs/msg/Image",
    "sensor_msgs/CompressedImage",
    "sensor_msgs/msg/CompressedImage",
    "foxglove.RawImage",
    "foxglove.CompressedImage",
    "foxglove_msgs/msg/RawImage",
    "foxglove_msgs/msg/CompressedImage",
];

/// Each camera topic of one file, with its first message's image as
/// `read_images` reads it (a JPEG or PNG header, a raw image's fields); a
/// failure is said by `render` (the caller's wording of query errors),
/// shortened to its cause.
pub async fn cameras(
    ctx: &SessionContext,
    loc: &FileLocation,
    summary: &Summary,
    render: &(dyn Fn(DataFusionError) -> String + Sync),
) -> Vec<Camera> {
    let topics: BTreeSet<&str> = summary
        .channels
        .values()
        .filter(|c| {
            c.message_type
                .as_deref()
                .is_some_and(|t| IMAGE_TYPES.contains(&t))
        })
        .map(|c| c.topic.as_str())
        .collect();
    let mut out = Vec::new();
    for topic in topics {
        let sql = format!(
            "SELECT encoding, width, height FROM read_images({}, {}) LIMIT 1",
            sql_literal(&loc.display_name()),
            sql_literal(topic)
        );
        let batches = match ctx.sql(&sql).await {
            Ok(frame) => frame.collect().await,
            Err(e) => Err(e),
        };
        let first = batches
            .map_err(|e| short_cause(&render(e)))
            .and_then(|batches| first_image(&batches));
        out.push(Camera {
            topic: topic.to_string(),
            first,
        });
    }
    out
}

/// The cause in a `read_images` error (`<file>: topic ...: the image logged
/// at N ns: <cause> (SET ...)`), which the line of its file and topic needs
/// alone; other errors whole.
fn short_cause(e: &str) -> String {
    let cause = e.split_once(" ns: ").map_or(e, |(_, c)| c);
    cause
        .split(" (SET logsql.on_error")
        .next()
        .unwrap_or(cause)
        .to_string()
}

/// The encoding and size of the first row of `read_images` batches.
fn first_image(batches: &[RecordBatch]) -> Result<(String, u32, u32), String> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::UInt32Type;
    let Some(b) = batches.iter().find(|b| b.num_rows() > 0) else {
        return Err("no messages".into());
    };
    let (enc, w, h) = (
        b.column(0).as_string::<i32>(),
        b.column(1).as_primitive::<UInt32Type>(),
        b.column(2).as_primitive::<UInt32Type>(),
    );
    if enc.is_null(0) {
        return Err("the first message holds no image".into());
    }
    Ok((enc.value(0).to_string(), w.value(0), h.value(0)))
}

/// One file's message times per topic (sorted) and the bytes decompressed to read them.
pub type FileTimes = (BTreeMap<String, Vec<u64>>, u64);

/// A file's messages counted per topic from their headers.
type Counted = (BTreeMap<String, TopicCount>, HeaderWalk);

/// What to gather beyond the summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gather {
    /// Verify whole-file checksums.
    pub verify: bool,
    /// Read every message time, for the timelines.
    pub timeline: bool,
}

/// The facts of one file (without cameras: [`cameras`]), and its message
/// times when the timelines were asked for. One header-only read serves the
/// timelines and, where the file states no per-topic counts, the counts. Runs
/// on a blocking thread (object stores block on it).
pub fn gather(
    loc: &FileLocation,
    cached: &CachedSummary,
    what: Gather,
    limits: Limits,
) -> logsql_readers::Result<(Facts, Option<FileTimes>)> {
    let reader = loc.open()?;
    let (reader, format, summary) = (reader.as_ref(), &*cached.format, &*cached.summary);
    let uncounted = summary.channel_message_counts.is_none() && !summary.chunks.is_empty();
    let mut times: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let counted = (what.timeline || uncounted).then(|| {
        count_topics(format, reader, summary, limits, |topic, t| {
            if !what.timeline {
                return;
            }
            match times.get_mut(topic) {
                Some(v) => v.extend_from_slice(t),
                None => {
                    times.insert(topic.to_string(), t.to_vec());
                }
            }
        })
    });
    let mut facts = facts(format, reader, summary, what.verify, counted.as_ref());
    let mut times = counted
        .filter(|_| what.timeline)
        .map(|(_, walk)| (times, walk.bytes_decompressed));
    facts.timeline = times
        .as_mut()
        .and_then(|(topics, bytes)| Timeline::from_times(topics, *bytes));
    Ok((facts, times))
}

/// The per-topic message times of several files, merged for one timeline.
#[derive(Debug, Default)]
pub struct AllTimes {
    /// File names, in the order they were read.
    pub files: Vec<String>,
    /// Message times per topic, across the files.
    pub topics: BTreeMap<String, Vec<u64>>,
    /// Bytes decompressed to find them.
    pub bytes_decompressed: u64,
}

impl AllTimes {
    /// Adds one file's times.
    pub fn add(&mut self, file: String, (topics, bytes): FileTimes) {
        self.files.push(file);
        self.bytes_decompressed += bytes;
        for (topic, mut times) in topics {
            self.topics.entry(topic).or_default().append(&mut times);
        }
    }

    /// The timeline across every file (`None` without messages).
    pub fn timeline(&mut self) -> Option<Timeline> {
        Timeline::from_times(&mut self.topics, self.bytes_decompressed)
    }

    /// Messages across every file.
    pub fn messages(&self) -> usize {
        self.topics.values().map(Vec::len).sum()
    }
}

/// Reads the facts from the summary (and from the message headers,
/// `counted`, when the file states no per-topic counts).
fn facts(
    format: &dyn FormatReader,
    reader: &dyn ReadAt,
    summary: &Summary,
    verify: bool,
    counted: Option<&Counted>,
) -> Facts {
    let checksum = if verify {
        format
            .verify(reader, summary)
            .map(|r| r.map_err(|e| e.to_string()))
    } else {
        None
    };

    // Per-topic counts: from the file, else counted by the engine.
    let mut topics: BTreeMap<String, TopicRow> = BTreeMap::new();
    for ch in summary.channels.values() {
        let row = topics.entry(ch.topic.clone()).or_default();
        let ty = ch.message_type.clone().unwrap_or_else(|| "-".into());
        if !row.types.contains(&ty) {
            row.types.push(ty);
        }
        let enc = if ch.message_encoding.is_empty() {
            "-".to_string()
        } else {
            ch.message_encoding.clone()
        };
        if !row.encodings.contains(&enc) {
            row.encodings.push(enc);
        }
    }
    let (mut start, mut end, mut total) =
        (summary.start_time, summary.end_time, summary.message_count);
    let mut count_note = None;
    let mut read_error = None;
    match (summary.topic_message_counts(), counted) {
        (Some(counts), _) => {
            for (topic, n) in counts {
                topics.entry(topic.to_string()).or_default().count = Some(n);
            }
        }
        (None, Some((counted, walk))) if !summary.chunks.is_empty() => {
            for (topic, c) in counted {
                topics.entry(topic.clone()).or_default().count = Some(c.count);
                start = start.into_iter().chain(c.first).min();
                end = end.max(c.last);
            }
            for t in topics.values_mut() {
                t.count.get_or_insert(0);
            }
            total = total.or(Some(counted.values().map(|c| c.count).sum()));
            count_note = Some("counted from message headers: the file states no per-topic counts");
            read_error = walk.errors.first().map(|e| e.to_string());
        }
        (None, _) => {
            // No chunk: every topic the file declares has no message.
            total = total.or(Some(0));
            for t in topics.values_mut() {
                t.count.get_or_insert(0);
            }
        }
    }
    let span = match (start, end) {
        (Some(s), Some(e)) if e >= s => Some(e - s),
        _ => None,
    };
    let mut index_note = (format.name() == "ros2" && !summary.indexed).then(|| {
        "none: the database has no index on messages.timestamp; \
         summary read from its tables"
            .to_string()
    });
    let mut properties = Vec::new();
    for (k, v) in &summary.properties {
        match k.as_str() {
            // Shown in the lines below, in more detail.
            "index" => index_note = Some(v.clone()),
            k if HIDDEN_PROPERTIES.contains(&k) => {}
            _ => properties.push((k.to_string(), v.clone())),
        }
    }
    Facts {
        file: reader.name().to_string(),
        format: format.name(),
        size: summary.file_size,
        properties,
        indexed: summary.indexed,
        index_note,
        checksum,
        damage: summary.damage.as_ref().map(|d| d.to_string()),
        messages: total,
        count_note,
        read_error,
        start,
        end,
        span,
        chunks: summary.chunks.len(),
        codecs: codecs(summary),
        channels: summary.channels.len(),
        topics,
        attachments: summary.attachments.len(),
        metadata: summary.metadata.len(),
        timeline: None,
        cameras: Vec::new(),
    }
}

/// The chunks of `summary` per codec (`none` for uncompressed chunks).
fn codecs(summary: &Summary) -> BTreeMap<String, Codec> {
    let mut codecs: BTreeMap<String, Codec> = BTreeMap::new();
    for c in &summary.chunks {
        let name = if c.compression.is_empty() {
            "none"
        } else {
            c.compression.as_str()
        };
        let codec = codecs.entry(name.to_string()).or_default();
        codec.chunks += 1;
        codec.compressed += c.compressed_size;
        match c.uncompressed_size {
            Some(u) => codec.uncompressed += u,
            None => codec.unknown = true,
        }
    }
    codecs
}
