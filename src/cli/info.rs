//! `logsql info`: a human summary of log files, in the spirit of `mcap info`.
//!
//! Reads each file's [`Summary`] as queries do, through the session's summary
//! cache: the index when the file has one, a recovery walk otherwise. When the
//! file does not state per-topic message counts, they are counted by reading
//! message headers (no payloads), chunk by chunk, as `topics()` counts them;
//! damage stops a chunk, not the count.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use datafusion::execution::SessionState;
use logsql::LogsqlOptions;
use logsql::storage::object_io::{FileLocation, is_local};
use logsql::storage::summary_cache::{self, CachedSummary};
use logsql::surface::header_walk::{HeaderWalk, TopicCount, count_topics};
use logsql::surface::url_table::{ResolvedPath, resolve};
use logsql_readers::formats::FormatReader;
use logsql_readers::io::{ReadAt, check_regular_file};
use logsql_readers::limits::Limits;
use logsql_readers::model::Summary;
use serde_json::{Value, json};

use super::App;
use super::args::Format;
use super::error::{CliError, CliResult};
use super::timeline::Timeline;
use super::units::{bytes, duration, rfc3339};

/// Minimum width of the label column.
const LABEL: usize = 14;

/// Reader properties shown by other lines of the summary (`index`, `compression`).
const HIDDEN_PROPERTIES: &[&str] = &["index", "chunk_compression"];

/// What `info` prints and checks.
#[derive(Debug, Clone, Copy)]
pub struct InfoOptions {
    /// Also print the format's detailed listing (text output only).
    pub all: bool,
    /// Text (`table`), a JSON array of summaries (`json`) or one per line (`ndjson`).
    pub format: Format,
    /// Verify whole-file checksums (off with `--no-verify`).
    pub verify: bool,
    /// Print (or put in the JSON) each topic's timeline and gaps.
    pub timeline: bool,
    /// Draw timelines with ASCII characters instead of Unicode blocks.
    pub ascii: bool,
    /// Escape control characters in the topic table's cells before aligning
    /// them (stdout is a terminal; the rest of the text is escaped as written).
    pub escape: bool,
}

/// Prints the summary of each file (directories stand for the log files under
/// them; `s3://`, `https://`, ... URLs are read with range requests). A file
/// that cannot be read is reported and the others still printed; the command
/// then fails.
pub fn run(app: &App, paths: &[String], opts: InfoOptions, out: &mut dyn Write) -> CliResult {
    if opts.format == Format::Csv {
        return Err(CliError::msg(
            "info prints text (--format table), json or ndjson, not csv",
        ));
    }
    let files = expand(app, paths)?;
    let count = files.len();
    let limits = LogsqlOptions::from_config(app.ctx.state().config_options()).limits();
    let mut failed = Vec::new();
    let mut objects = Vec::new();
    let write = |out: &mut dyn Write, s: &str| {
        write!(out, "{s}")
            .and_then(|_| out.flush())
            .map_err(|e| CliError::io("writing output", e))
    };
    // Several files: one more timeline, across all of them.
    let distinct: std::collections::BTreeSet<&str> =
        files.iter().map(|f| f.name.as_str()).collect();
    let mut all = (opts.timeline && distinct.len() > 1).then(AllTimes::default);
    for (i, file) in files.into_iter().enumerate() {
        let described = match file.read {
            Ok((loc, cached)) => {
                let cameras = cameras(app, &loc, &cached.summary);
                app.rt
                    .block_on(
                        app.rt
                            .spawn_blocking(move || describe(&loc, &cached, opts, limits, cameras)),
                    )
                    .map_err(|e| CliError::msg(format!("info task failed: {e}")))?
            }
            Err(e) => Err(e.into()),
        };
        let described = described.map(|(description, times)| {
            if let (Some(all), Some(times)) = (all.as_mut(), times) {
                all.add(file.name.clone(), times);
            }
            description
        });
        match described {
            Ok(Described::Text(text)) => {
                if i > 0 {
                    write(out, "\n")?;
                }
                write(out, &text)?;
            }
            Ok(Described::Json(v)) if opts.format == Format::Ndjson => {
                write(out, &format!("{v}\n"))?;
            }
            Ok(Described::Json(v)) => objects.push(v),
            Err(e) if count == 1 => return Err(e),
            Err(e) => {
                eprintln!("error: {}", super::terminal::for_stderr(&e.to_string()));
                failed.push(file.name);
            }
        }
    }
    match all.and_then(|all| all.describe(opts)) {
        Some(Described::Text(text)) => write(out, &format!("\n{text}"))?,
        Some(Described::Json(v)) if opts.format == Format::Ndjson => write(out, &format!("{v}\n"))?,
        Some(Described::Json(v)) => objects.push(v),
        None => {}
    }
    if opts.format == Format::Json {
        let text = serde_json::to_string_pretty(&objects)
            .map_err(|e| CliError::msg(format!("writing JSON: {e}")))?;
        write(out, &format!("{text}\n"))?;
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::msg(format!(
            "{} of {} files could not be read: {}",
            failed.len(),
            count,
            failed.join(", ")
        )))
    }
}

/// A file `info` summarises: its name, and where it is with its summary, or
/// why it cannot be read.
struct File {
    name: String,
    read: Result<(FileLocation, CachedSummary), logsql_readers::Error>,
}

/// The files `paths` name, each with its summary read through the session's
/// summary cache, as queries list and read them: a directory or glob stands for
/// the log files in it (at any depth, as the session lists them), and one of them that
/// cannot be read as a log file is reported with the others, not fatal.
fn expand(app: &App, paths: &[String]) -> CliResult<Vec<File>> {
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
            out.push(File {
                name: path.clone(),
                read: Err(e),
            });
            continue;
        }
        let state = app.ctx.state();
        let files = app.rt.block_on(read(&state, path))?;
        if files.is_empty() {
            return Err(logsql_readers::Error::NoLogFiles { path: path.clone() }.into());
        }
        out.extend(files);
    }
    Ok(out)
}

/// The files `path` names, with their summaries (see [`expand`]).
async fn read(state: &SessionState, path: &str) -> CliResult<Vec<File>> {
    let mut resolved = resolve(state, path).await?;
    let names: Vec<String> = resolved
        .files
        .iter()
        .map(|(loc, _)| shown_name(path, &resolved, loc))
        .collect();
    for ((loc, _), name) in resolved.files.iter_mut().zip(names) {
        loc.name = name;
    }
    let file = |loc: &FileLocation, read: Result<CachedSummary, logsql_readers::Error>| File {
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

/// The name `info` shows for `loc`, one of the files `path` names: a local
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

/// Per-topic facts for the topic table.
#[derive(Default)]
struct TopicRow {
    types: Vec<String>,
    encodings: Vec<String>,
    count: Option<u64>,
}

/// One file's summary, as text or as a JSON object.
enum Described {
    Text(String),
    Json(Value),
}

/// What `info` reports about one file.
struct Facts {
    file: String,
    format: &'static str,
    size: u64,
    /// Reader properties shown as their own lines.
    properties: Vec<(String, String)>,
    indexed: bool,
    index_note: Option<String>,
    checksum: Option<Result<(), String>>,
    damage: Option<String>,
    messages: Option<u64>,
    count_note: Option<&'static str>,
    read_error: Option<String>,
    start: Option<u64>,
    end: Option<u64>,
    span: Option<u64>,
    chunks: usize,
    codecs: BTreeMap<String, Codec>,
    channels: usize,
    topics: BTreeMap<String, TopicRow>,
    attachments: usize,
    metadata: usize,
    timeline: Option<Timeline>,
    cameras: Vec<Camera>,
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

/// A camera topic and what its first image says: encoding and size, or why
/// it could not be read.
struct Camera {
    topic: String,
    first: Result<(String, u32, u32), String>,
}

/// Each camera topic of one file, with its first message's image as
/// `read_images` reads it (a JPEG or PNG header, a raw image's fields).
fn cameras(app: &App, loc: &FileLocation, summary: &Summary) -> Vec<Camera> {
    let topics: std::collections::BTreeSet<&str> = summary
        .channels
        .values()
        .filter(|c| {
            c.message_type
                .as_deref()
                .is_some_and(|t| IMAGE_TYPES.contains(&t))
        })
        .map(|c| c.topic.as_str())
        .collect();
    topics
        .into_iter()
        .map(|topic| {
            let sql = format!(
                "SELECT encoding, width, height FROM read_images({}, {}) LIMIT 1",
                super::quote(&loc.display_name()),
                super::quote(topic)
            );
            let first = app
                .rt
                .block_on(async { app.ctx.sql(&sql).await?.collect().await })
                .map_err(|e| short_cause(&super::error::CliError::from(e).to_string()))
                .and_then(|batches| first_image(&batches));
            Camera {
                topic: topic.to_string(),
                first,
            }
        })
        .collect()
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
fn first_image(
    batches: &[datafusion::arrow::record_batch::RecordBatch],
) -> Result<(String, u32, u32), String> {
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
type FileTimes = (BTreeMap<String, Vec<u64>>, u64);

/// A file's messages counted per topic from their headers.
type Counted = (BTreeMap<String, TopicCount>, HeaderWalk);

/// The summary of one file, as text or JSON, and its message times when the
/// timelines were read. Runs on a blocking thread (object stores block on it).
fn describe(
    loc: &FileLocation,
    cached: &CachedSummary,
    opts: InfoOptions,
    limits: Limits,
    cameras: Vec<Camera>,
) -> CliResult<(Described, Option<FileTimes>)> {
    let reader = loc.open()?;
    let (reader, format, summary) = (reader.as_ref(), &*cached.format, &*cached.summary);
    // Formats with their own established listing (CARLA's recorder info) print it.
    if opts.format == Format::Table
        && let Some(text) = format.info_text(reader, summary, opts.all)
    {
        return Ok((Described::Text(text?), None));
    }
    // One header-only read serves the timelines and, where the file states no
    // per-topic counts, the counts.
    let uncounted = summary.channel_message_counts.is_none() && !summary.chunks.is_empty();
    let mut times: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let counted = (opts.timeline || uncounted).then(|| {
        count_topics(format, reader, summary, limits, |topic, t| {
            if !opts.timeline {
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
    let mut facts = gather(format, reader, summary, opts.verify, counted.as_ref());
    facts.cameras = cameras;
    let mut times = counted
        .filter(|_| opts.timeline)
        .map(|(_, walk)| (times, walk.bytes_decompressed));
    facts.timeline = times
        .as_mut()
        .and_then(|(topics, bytes)| Timeline::from_times(topics, *bytes));
    let description = if opts.format == Format::Table {
        Described::Text(text(&facts, opts.ascii, opts.escape))
    } else {
        Described::Json(to_json(&facts))
    };
    Ok((description, times))
}

/// The per-topic message times of several files, merged for one timeline.
#[derive(Default)]
struct AllTimes {
    /// File names, in the order they were read.
    files: Vec<String>,
    /// Message times per topic, across the files.
    topics: BTreeMap<String, Vec<u64>>,
    /// Bytes decompressed to find them.
    bytes_decompressed: u64,
}

impl AllTimes {
    /// Adds one file's times.
    fn add(&mut self, file: String, (topics, bytes): FileTimes) {
        self.files.push(file);
        self.bytes_decompressed += bytes;
        for (topic, mut times) in topics {
            self.topics.entry(topic).or_default().append(&mut times);
        }
    }

    /// The timeline across every file, as text or JSON (`None` without messages).
    fn describe(mut self, opts: InfoOptions) -> Option<Described> {
        let timeline = Timeline::from_times(&mut self.topics, self.bytes_decompressed)?;
        let n = self.files.len();
        Some(if opts.format == Format::Table {
            Described::Text(format!(
                "all {n} files:\ntimeline:\n{}",
                timeline.text(opts.ascii)
            ))
        } else {
            let messages: usize = self.topics.values().map(Vec::len).sum();
            Described::Json(serde_json::json!({
                "files": self.files,
                "messages": messages,
                "timeline": timeline.json(),
            }))
        })
    }
}

/// Reads what `info` reports from the summary (and from the message headers,
/// `counted`, when the file states no per-topic counts).
fn gather(
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

/// A topic's mean message rate over the file's span, in Hz.
fn frequency(count: Option<u64>, span: Option<u64>) -> Option<f64> {
    match (count, span) {
        (Some(n), Some(d)) if d > 0 => Some(n as f64 / (d as f64 / 1e9)),
        _ => None,
    }
}

/// The summary as one JSON object.
fn to_json(f: &Facts) -> Value {
    let time = |t: Option<u64>| t.map(|ns| rfc3339(ns as i64));
    let topics: Vec<Value> = f
        .topics
        .iter()
        .map(|(topic, t)| {
            json!({
                "topic": topic,
                "message_types": t.types,
                "encodings": t.encodings,
                "messages": t.count,
                "frequency_hz": frequency(t.count, f.span),
            })
        })
        .collect();
    let compression: Vec<Value> = f
        .codecs
        .iter()
        .map(|(name, c)| {
            json!({
                "codec": name,
                "chunks": c.chunks,
                "compressed_bytes": c.compressed,
                "uncompressed_bytes": (!c.unknown).then_some(c.uncompressed),
            })
        })
        .collect();
    json!({
        "file": f.file,
        "format": f.format,
        "size_bytes": f.size,
        "properties": f.properties.iter().cloned().collect::<BTreeMap<_, _>>(),
        "indexed": f.indexed,
        "index": index_line(f.indexed, f.index_note.as_deref()),
        "checksum": f.checksum.as_ref().map(|r| match r {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("mismatch: {e}"),
        }),
        "damage": f.damage,
        "messages": f.messages,
        "messages_counted_from_headers": f.count_note.is_some(),
        "read_error": f.read_error,
        "start": time(f.start),
        "start_ns": f.start,
        "end": time(f.end),
        "end_ns": f.end,
        "duration_ns": f.span,
        "chunks": f.chunks,
        "compression": compression,
        "channels": f.channels,
        "topics": topics,
        "attachments": f.attachments,
        "metadata": f.metadata,
        "timeline": f.timeline.as_ref().map(Timeline::json),
        "cameras": f.cameras.iter().map(|c| match &c.first {
            Ok((encoding, width, height)) => json!({
                "topic": c.topic, "encoding": encoding, "width": width, "height": height,
            }),
            Err(e) => json!({ "topic": c.topic, "error": e }),
        }).collect::<Vec<Value>>(),
    })
}

/// The summary as aligned text.
fn text(f: &Facts, ascii: bool, escape: bool) -> String {
    let width = f
        .properties
        .iter()
        .map(|(k, _)| k.chars().count() + 2)
        .fold(LABEL, usize::max);
    let mut s = String::new();
    let mut line = |label: &str, value: &str| {
        let label = if label.is_empty() {
            String::new()
        } else {
            format!("{label}:")
        };
        let _ = writeln!(s, "{label:<width$}{value}");
    };
    line("file", &f.file);
    line("format", f.format);
    line("size", &format!("{} ({} bytes)", bytes(f.size), f.size));
    for (k, v) in &f.properties {
        line(k, if v.is_empty() { "(none)" } else { v });
    }
    line("index", &index_line(f.indexed, f.index_note.as_deref()));
    match &f.checksum {
        Some(Ok(())) => line("checksum", "ok (whole file verified)"),
        Some(Err(e)) => line("checksum", &format!("MISMATCH: {e}")),
        None => {}
    }
    if let Some(damage) = &f.damage {
        line("damage", damage);
        line(
            "",
            "(messages before the damage are readable; queries fail at it unless --on-error warn)",
        );
    }
    line(
        "messages",
        &f.messages.map_or("?".into(), |n| n.to_string()),
    );
    if let Some(note) = f.count_note {
        line("", &format!("({note})"));
    }
    if let Some(e) = &f.read_error {
        line("read error", e);
    }
    line("duration", &f.span.map_or("?".into(), duration));
    line("start", &f.start.map_or("?".into(), time_line));
    line("end", &f.end.map_or("?".into(), time_line));
    line("chunks", &f.chunks.to_string());
    for (i, c) in compression_lines(&f.codecs).iter().enumerate() {
        line(if i == 0 { "compression" } else { "" }, c);
    }
    line("channels", &f.channels.to_string());
    line("topics", &f.topics.len().to_string());
    if !f.topics.is_empty() {
        let mut rows = vec![
            ["topic", "message_type", "encoding", "messages", "frequency"]
                .map(String::from)
                .to_vec(),
        ];
        let cell = |s: String| match escape {
            true => super::terminal::escape(&s).into_owned(),
            false => s,
        };
        for (topic, t) in &f.topics {
            rows.push(vec![
                if topic.is_empty() {
                    "\"\"".into()
                } else {
                    cell(topic.clone())
                },
                cell(t.types.join(", ")),
                cell(t.encodings.join(", ")),
                t.count.map_or("?".into(), |n| n.to_string()),
                frequency(t.count, f.span).map_or("-".into(), |hz| format!("{hz:.2} Hz")),
            ]);
        }
        s.push_str(&align(&rows, &[false, false, false, true, true], "  "));
    }
    if !f.cameras.is_empty() {
        let rows: Vec<Vec<String>> = f
            .cameras
            .iter()
            .map(|c| match &c.first {
                Ok((enc, w, h)) => vec![c.topic.clone(), format!("{w}x{h}"), enc.clone()],
                Err(e) => vec![c.topic.clone(), "?".into(), e.clone()],
            })
            .collect();
        let _ = writeln!(s, "cameras:      (first image of each topic)");
        s.push_str(&align(&rows, &[false, true, false], "  "));
    }
    if let Some(t) = &f.timeline {
        let _ = writeln!(s, "timeline:");
        s.push_str(&t.text(ascii));
    }
    let _ = writeln!(s, "{:<width$}{}", "attachments:", f.attachments);
    let _ = writeln!(s, "{:<width$}{}", "metadata:", f.metadata);
    s
}

/// Where the summary came from: the file's index, or a recovery walk.
fn index_line(indexed: bool, note: Option<&str>) -> String {
    match (indexed, note) {
        (true, None) => "read from the file's index".into(),
        (true, Some(n)) => format!("read from the file's index ({n})"),
        (false, Some(n)) if n.starts_with("rebuilt by") => format!("none usable; summary {n}"),
        (false, Some(n)) if n.starts_with("none") => n.to_string(),
        (false, Some(n)) => format!("none usable; summary rebuilt by a recovery walk ({n})"),
        (false, None) => "none usable; summary rebuilt by a recovery walk of the file".into(),
    }
}

fn time_line(ns: u64) -> String {
    format!("{} ({ns} ns)", rfc3339(ns as i64))
}

/// Chunks, compressed and uncompressed bytes of one codec.
#[derive(Default)]
struct Codec {
    chunks: usize,
    compressed: u64,
    uncompressed: u64,
    /// Some chunk does not state its uncompressed size.
    unknown: bool,
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

/// One line per codec: chunk count, compressed and uncompressed sizes, ratio.
fn compression_lines(codecs: &BTreeMap<String, Codec>) -> Vec<String> {
    if codecs.is_empty() {
        return vec!["-".into()];
    }
    codecs
        .iter()
        .map(|(name, c)| {
            let plural = if c.chunks == 1 { "" } else { "s" };
            if name == "none" {
                return format!("none: {} chunk{plural}, {}", c.chunks, bytes(c.compressed));
            }
            let mut l = format!(
                "{name}: {} chunk{plural}, {} compressed",
                c.chunks,
                bytes(c.compressed)
            );
            if !c.unknown {
                let _ = write!(l, ", {} uncompressed", bytes(c.uncompressed));
                if c.compressed > 0 {
                    let _ = write!(
                        l,
                        " (ratio {:.2})",
                        c.uncompressed as f64 / c.compressed as f64
                    );
                }
            }
            l
        })
        .collect()
}

/// Columns padded to their widest cell, each line indented by `indent`.
fn align(rows: &[Vec<String>], right: &[bool], indent: &str) -> String {
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..ncols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|v| v.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut l = String::from(indent);
        for (c, cell) in row.iter().enumerate() {
            let w = widths[c];
            if c > 0 {
                l.push_str("  ");
            }
            if right.get(c).copied().unwrap_or(false) {
                let _ = write!(l, "{cell:>w$}");
            } else {
                let _ = write!(l, "{cell:<w$}");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_pads_columns() {
        let rows = vec![
            vec!["topic".to_string(), "messages".to_string()],
            vec!["/diagnostics".to_string(), "52".to_string()],
            vec!["/tf".to_string(), "774".to_string()],
        ];
        assert_eq!(
            align(&rows, &[false, true], "  "),
            "  topic         messages\n  /diagnostics        52\n  /tf                774\n"
        );
    }
}
