//! What each MCP tool does: the queries it runs through the server's
//! session and the answer it gives, text (and JSON) or PNG images. A
//! failure is the tool's answer, phrased for the agent ([`reply`]).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use futures::TryStreamExt;
use logsql::ops::sql_literal as quote;
use logsql::ops::units::{parse_time, rfc3339};
use logsql::ops::{frames, info, info_json};
use rmcp::model::{CallToolResult, ContentBlock};

use super::McpServer;
use super::answer::{Caps, collect};
use super::args;
use crate::error::ServeError;

/// Rows of a `query` answer by default, and at most.
const ROWS: (u32, u32) = (100, 10_000);
/// Bytes of JSON an answer holds at most.
const ANSWER_BYTES: usize = 512 * 1024;
/// Numeric fields `describe_topic` gives statistics of, at most.
const STATISTICS: usize = 32;
/// Recordings `list_recordings` names by default.
const RECORDINGS: u32 = 100;
/// Frames `sample_frames` shows by default, and at most.
const FRAMES: (u32, u32) = (4, 16);
/// A thumbnail's longer side by default, and at most.
const THUMBNAIL: (u32, u32) = (320, 1024);

/// What a tool answers, or why it could not.
pub(super) type Reply = Result<Vec<ContentBlock>, String>;

/// A tool's answer as its result: a failure is a result marked as an error
/// whose text the agent reads.
pub(super) fn reply(r: Reply) -> CallToolResult {
    match r {
        Ok(content) => CallToolResult::success(content),
        Err(why) => CallToolResult::error(vec![ContentBlock::text(why)]),
    }
}

/// A serve error as an agent reads it.
fn say(e: ServeError) -> String {
    match e {
        ServeError::DataFusion(e) => {
            let text = e.strip_backtrace();
            text.strip_prefix("External error: ")
                .unwrap_or(&text)
                .to_string()
        }
        e => e.to_string(),
    }
}

impl McpServer {
    /// `path` as the server reads it: relative paths from the first root; a
    /// path outside the roots is refused before anything is read.
    fn path(&self, path: &str) -> Result<String, String> {
        let path = path.trim();
        let local = !path.contains("://");
        let full = match (
            self.roots.first_local(),
            local && Path::new(path).is_relative(),
        ) {
            (Some(base), true) => base.join(path).display().to_string(),
            _ => path.to_string(),
        };
        let checked = if local {
            self.roots.check_local(Path::new(&full), path)
        } else {
            url::Url::parse(&full)
                .map_err(|e| datafusion::error::DataFusionError::Plan(format!("{path}: {e}")))
                .and_then(|u| self.roots.check_url(&u, path))
        };
        checked.map_err(|e| say(e.into()))?;
        Ok(full)
    }

    /// Runs `sql` through the session, every row kept.
    async fn rows(&self, sql: &str) -> Result<Vec<RecordBatch>, String> {
        let stream = self.session.query(sql).await.map_err(say)?;
        stream.try_collect().await.map_err(|e| say(e.into()))
    }

    /// Whether the session reads a catalog (`--catalog`).
    fn catalog(&self) -> bool {
        !logsql::LogsqlOptions::from_config(self.session.state().config_options())
            .catalog
            .is_empty()
    }

    /// `list_recordings` from the catalog's tables, with its filters; only
    /// recordings below the roots are listed.
    async fn list_catalogued(&self, a: &args::ListRecordings) -> Reply {
        let time = |t: &Option<String>, what: &str| -> Result<Option<i64>, String> {
            t.as_deref()
                .map(|t| parse_time(t).map_err(|e| format!("{what}: {t}: {e}")))
                .transpose()
        };
        let ts = |ns: i64| format!("arrow_cast({ns}, 'Timestamp(ns, \"UTC\")')");
        let mut filters = Vec::new();
        if let Some(d) = &a.device {
            filters.push(format!("r.device = {}", quote(d)));
        }
        if let Some(start) = time(&a.start, "start")? {
            filters.push(format!("r.end_time >= {}", ts(start)));
        }
        if let Some(end) = time(&a.end, "end")? {
            filters.push(format!("r.start_time <= {}", ts(end)));
        }
        if let Some(topic) = &a.topic {
            filters.push(format!(
                "r.location IN (SELECT location FROM topics WHERE topic = {})",
                quote(topic)
            ));
        }
        for (k, v) in &a.metadata {
            filters.push(format!("r.metadata[{}] = {}", quote(k), quote(v)));
        }
        if let Some(p) = &a.path {
            let full = self.path(p)?;
            filters.push(format!("starts_with(r.location, {})", quote(&full)));
        }
        let sql = format!(
            "SELECT r.location, r.device, CAST(r.start_time AS BIGINT), CAST(r.end_time AS BIGINT), \
             r.size, t.topic, t.message_type FROM recordings r LEFT JOIN topics t ON r.location = t.location{} \
             ORDER BY r.location, t.topic",
            if filters.is_empty() {
                String::new()
            } else {
                format!(" WHERE {}", filters.join(" AND "))
            }
        );
        // (device, start, end, size, topics) per location.
        type Entry = (Option<String>, i64, i64, u64, Vec<String>);
        let mut files: BTreeMap<String, Entry> = BTreeMap::new();
        for b in self.rows(&sql).await? {
            let text = |i: usize| {
                datafusion::arrow::compute::cast(
                    b.column(i),
                    &datafusion::arrow::datatypes::DataType::Utf8,
                )
            };
            let (loc, dev, topic, ty) = (
                text(0).map_err(|e| e.to_string())?,
                text(1).map_err(|e| e.to_string())?,
                text(5).map_err(|e| e.to_string())?,
                text(6).map_err(|e| e.to_string())?,
            );
            let (loc, dev, topic, ty) = (
                loc.as_string::<i32>(),
                dev.as_string::<i32>(),
                topic.as_string::<i32>(),
                ty.as_string::<i32>(),
            );
            let (start, end) = (
                b.column(2).as_primitive::<Int64Type>(),
                b.column(3).as_primitive::<Int64Type>(),
            );
            let size = datafusion::arrow::compute::cast(
                b.column(4),
                &datafusion::arrow::datatypes::DataType::UInt64,
            )
            .map_err(|e| e.to_string())?;
            let size = size.as_primitive::<datafusion::arrow::datatypes::UInt64Type>();
            for i in 0..b.num_rows() {
                let location = loc.value(i);
                let entry = files.entry(location.to_string()).or_insert_with(|| {
                    (
                        dev.is_valid(i).then(|| dev.value(i).to_string()),
                        if start.is_valid(i) { start.value(i) } else { 0 },
                        if end.is_valid(i) { end.value(i) } else { 0 },
                        if size.is_valid(i) { size.value(i) } else { 0 },
                        Vec::new(),
                    )
                });
                if topic.is_valid(i) {
                    let t = match ty.is_null(i) {
                        true => topic.value(i).to_string(),
                        false => format!("{} ({})", topic.value(i), ty.value(i)),
                    };
                    entry.4.push(t);
                }
            }
        }
        // The catalog may hold recordings beyond the roots: those are not shown.
        files.retain(|location, _| self.path(location).is_ok());
        let limit = a.limit.unwrap_or(RECORDINGS).max(1) as usize;
        let total = files.len();
        let mut text = String::new();
        for (file, (device, start, end, size, topics)) in files.iter().take(limit) {
            let device = device
                .as_deref()
                .map_or(String::new(), |d| format!(", device {d}"));
            text.push_str(&format!(
                "{file} ({} topics, {size} bytes, {} to {}{device})\n",
                topics.len(),
                rfc3339(*start),
                rfc3339(*end)
            ));
            for t in topics {
                text.push_str(&format!("  {t}\n"));
            }
        }
        text.push_str(&match total {
            0 => "no recordings found in the catalog".to_string(),
            n if n > limit => format!("{limit} of {n} recordings (raise limit for more)"),
            n => format!("{n} recordings (from the catalog)"),
        });
        Ok(vec![ContentBlock::text(text)])
    }

    pub(super) async fn list(&self, a: args::ListRecordings) -> Reply {
        if self.catalog() {
            return self.list_catalogued(&a).await;
        }
        if a.device.is_some() || a.start.is_some() || a.end.is_some() || !a.metadata.is_empty() {
            return Err(
                "device, start, end and metadata filter a catalog's recordings: the server must be started with --catalog CAT (one `logsql index` wrote)"
                    .to_string(),
            );
        }
        let paths: Vec<String> = match &a.path {
            Some(p) => vec![self.path(p)?],
            None => self.roots.names(),
        };
        let limit = a.limit.unwrap_or(RECORDINGS).max(1) as usize;
        let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for path in &paths {
            let sql = format!(
                "SELECT file, topic, message_type FROM channels({}) ORDER BY file, topic",
                quote(path)
            );
            for batch in self.rows(&sql).await? {
                let (file, topic, ty) = (
                    batch.column(0).as_string::<i32>(),
                    batch.column(1).as_string::<i32>(),
                    batch.column(2).as_string::<i32>(),
                );
                for i in 0..batch.num_rows() {
                    let entry = files.entry(file.value(i).to_string()).or_default();
                    let t = match ty.is_null(i) {
                        true => topic.value(i).to_string(),
                        false => format!("{} ({})", topic.value(i), ty.value(i)),
                    };
                    let wanted = a.topic.as_deref().is_none_or(|w| w == topic.value(i));
                    if wanted && !entry.contains(&t) {
                        entry.push(t);
                    }
                }
            }
        }
        if a.topic.is_some() {
            files.retain(|_, topics| !topics.is_empty());
        }
        let total = files.len();
        let mut text = String::new();
        for (file, topics) in files.iter().take(limit) {
            let size = std::fs::metadata(file.strip_prefix("file://").unwrap_or(file))
                .map(|m| format!(", {} bytes", m.len()))
                .unwrap_or_default();
            text.push_str(&format!("{file} ({} topics{size})\n", topics.len()));
            for t in topics {
                text.push_str(&format!("  {t}\n"));
            }
        }
        text.push_str(&match total {
            0 => "no recordings found".to_string(),
            n if n > limit => format!("{limit} of {n} recordings (raise limit for more)"),
            n => format!("{n} recordings"),
        });
        Ok(vec![ContentBlock::text(text)])
    }

    pub(super) async fn describe(&self, a: args::DescribeRecording) -> Reply {
        let path = self.path(&a.path)?;
        let state = self.session.state();
        let mut files = info::files(&state, std::slice::from_ref(&path))
            .await
            .map_err(|e| e.to_string())?;
        if files.len() != 1 {
            return Err(format!(
                "{}: describe_recording takes one log file; this names {} (see list_recordings)",
                a.path,
                files.len()
            ));
        }
        let (loc, cached) = files.remove(0).read.map_err(|e| e.to_string())?;
        let render = |e: datafusion::error::DataFusionError| say(e.into());
        let cameras = info::cameras(self.session.context(), &loc, &cached.summary, &render).await;
        let limits = logsql::LogsqlOptions::from_config(state.config_options()).limits();
        let what = info::Gather {
            verify: false,
            timeline: true,
        };
        let (mut facts, _) = tokio::task::spawn_blocking(move || {
            info::gather(&loc, &cached, what, limits).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| format!("describe_recording failed: {e}"))??;
        facts.cameras = cameras;
        let json = info_json::facts(&facts);
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
        Ok(vec![ContentBlock::text(text)])
    }

    pub(super) async fn topic(&self, a: args::DescribeTopic) -> Reply {
        let path = self.path(&a.path)?;
        let samples = a.samples.unwrap_or(3).min(20);
        let (p, t) = (quote(&path), quote(&a.topic));
        let sql = format!(
            "SELECT message_type, message_encoding, message_count, start_time, end_time \
             FROM topics({p}) WHERE topic = {t}"
        );
        let caps = Caps {
            rows: 10,
            bytes: ANSWER_BYTES,
        };
        let facts = self.session.query(&sql).await.map_err(say)?;
        let facts = collect(facts, caps).await.map_err(|e| say(e.into()))?;
        if facts.rows() == 0 {
            return Err(format!(
                "{}: no topic {} (describe_recording lists the topics)",
                a.path, a.topic
            ));
        }
        let stream = self
            .session
            .query(&format!(
                "SELECT * FROM read_topic({p}, {t}) LIMIT {samples}"
            ))
            .await
            .map_err(say)?;
        let rows = collect(
            stream,
            Caps {
                rows: samples as usize,
                bytes: ANSWER_BYTES,
            },
        )
        .await
        .map_err(|e| say(e.into()))?;
        let mut text = format!(
            "topic {} of {}\n{}\n\ncolumns of read_topic({p}, {t}):\n",
            a.topic,
            a.path,
            facts.table().map_err(|e| say(e.into()))?
        );
        for (name, ty) in &rows.columns {
            text.push_str(&format!("  {name}: {ty}\n"));
        }
        text.push_str(&format!(
            "\nsample rows:\n{}",
            rows.table().map_err(|e| say(e.into()))?
        ));
        if a.statistics.unwrap_or(true) {
            text.push_str(&self.field_statistics(&p, &t).await?);
        }
        Ok(vec![ContentBlock::text(text)])
    }

    /// The minimum, maximum and mean of each numeric field of a topic (the
    /// first [`STATISTICS`] of them), over every message, as text lines.
    async fn field_statistics(&self, p: &str, t: &str) -> Result<String, String> {
        let flat = format!("read_topic({p}, {t}, 'flatten')");
        let stream = self
            .session
            .query(&format!("SELECT * FROM {flat} LIMIT 0"))
            .await
            .map_err(say)?;
        let numeric: Vec<String> = stream
            .schema()
            .fields()
            .iter()
            .filter(|f| f.data_type().is_numeric())
            .map(|f| f.name().clone())
            .take(STATISTICS)
            .collect();
        drop(stream);
        if numeric.is_empty() {
            return Ok(String::new());
        }
        let column = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
        let aggregates: Vec<String> = numeric
            .iter()
            .flat_map(|n| {
                let c = column(n);
                [
                    format!("CAST(min({c}) AS DOUBLE)"),
                    format!("CAST(max({c}) AS DOUBLE)"),
                    format!("avg(CAST({c} AS DOUBLE))"),
                ]
            })
            .collect();
        let sql = format!("SELECT count(*), {} FROM {flat}", aggregates.join(", "));
        let batches = self.rows(&sql).await?;
        let Some(b) = batches.iter().find(|b| b.num_rows() > 0) else {
            return Ok(String::new());
        };
        let count = b.column(0).as_primitive::<Int64Type>().value(0);
        let value = |i: usize| {
            let c = b.column(i).as_primitive::<Float64Type>();
            match c.is_null(0) {
                true => "null".to_string(),
                false => format!("{}", c.value(0)),
            }
        };
        let mut text = format!("\nfield statistics over its {count} messages:\n");
        for (k, name) in numeric.iter().enumerate() {
            let i = 1 + 3 * k;
            text.push_str(&format!(
                "  {name}: min {}, max {}, mean {}\n",
                value(i),
                value(i + 1),
                value(i + 2)
            ));
        }
        Ok(text)
    }

    pub(super) async fn run_query(&self, a: args::Query) -> Reply {
        let rows = a.max_rows.unwrap_or(ROWS.0).clamp(1, ROWS.1) as usize;
        let stream = self.session.query(&a.sql).await.map_err(say)?;
        let answer = collect(
            stream,
            Caps {
                rows,
                bytes: ANSWER_BYTES,
            },
        )
        .await
        .map_err(|e| say(e.into()))?;
        let table = answer.table().map_err(|e| say(e.into()))?;
        Ok(vec![
            ContentBlock::text(table),
            ContentBlock::text(answer.json_text()),
        ])
    }

    pub(super) async fn frames(&self, a: args::SampleFrames) -> Reply {
        let path = self.path(&a.path)?;
        let size = a.size.unwrap_or(THUMBNAIL.0).clamp(16, THUMBNAIL.1);
        let mut times = Vec::new();
        for s in a.times.iter().take(FRAMES.1 as usize) {
            times.push(parse_time(s).map_err(|e| format!("times: {s}: {e}"))?);
        }
        if times.is_empty() {
            let span = self.rows(&frames::span_sql(&path, &a.topic)).await?;
            let bounds = span.first().filter(|b| b.num_rows() > 0).and_then(|b| {
                let (first, last) = (
                    b.column(0).as_primitive::<Int64Type>(),
                    b.column(1).as_primitive::<Int64Type>(),
                );
                (first.is_valid(0) && last.is_valid(0)).then(|| (first.value(0), last.value(0)))
            });
            let Some((first, last)) = bounds else {
                return Err(format!(
                    "{}: no messages of topic {} (describe_recording lists the topics)",
                    a.path, a.topic
                ));
            };
            times = frames::spread(first, last, a.count.unwrap_or(FRAMES.0).clamp(1, FRAMES.1));
        }
        let mut content = Vec::new();
        let mut shown = Vec::new();
        for at in times {
            let sql = frames::thumbnail_sql(&path, &a.topic, size, at);
            for batch in self.rows(&sql).await? {
                let (times, pngs) = (
                    batch.column(0).as_primitive::<Int64Type>(),
                    batch.column(1).as_binary::<i32>(),
                );
                for i in 0..batch.num_rows() {
                    if pngs.is_null(i) || shown.contains(&times.value(i)) {
                        continue;
                    }
                    shown.push(times.value(i));
                    let data = base64::engine::general_purpose::STANDARD.encode(pngs.value(i));
                    content.push(ContentBlock::text(format!(
                        "{} frame at {}",
                        a.topic,
                        rfc3339(times.value(i))
                    )));
                    content.push(ContentBlock::image(data, "image/png"));
                }
            }
        }
        if content.is_empty() {
            return Err(format!(
                "{}: no image of {} at or after the times asked decoded",
                a.path, a.topic
            ));
        }
        Ok(content)
    }
}

/// A name for a file or directory in the write directory: letters, digits,
/// `-`, `_` and `.`, not starting with `.`, at most 100 characters.
fn plain_name(name: &str) -> Result<&str, String> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(name)
    } else {
        Err(format!(
            "name {name:?}: a plain file name of letters, digits, '-', '_' and '.' (no directory, not starting with '.'), at most 100 characters"
        ))
    }
}

impl McpServer {
    /// Where a new file or directory `name` goes: the write directory's,
    /// when writes are allowed and nothing is there yet.
    fn output(&self, name: &str, tool: &str) -> Result<std::path::PathBuf, String> {
        let dir = self.session.write_dir().ok_or_else(|| {
            format!("{tool} writes files: the server must be started with --allow-write DIR")
        })?;
        let out = dir.join(plain_name(name)?);
        if out.exists() {
            return Err(format!(
                "{name} exists in the write directory: choose another name"
            ));
        }
        Ok(out)
    }

    pub(super) async fn clip(&self, a: args::ExportClip) -> Reply {
        let path = self.path(&a.path)?;
        let time = |t: &str, what: &str| parse_time(t).map_err(|e| format!("{what}: {t}: {e}"));
        let (start, end) = (time(&a.start, "start")?, time(&a.end, "end")?);
        if end < start {
            return Err(format!("end ({}) is before start ({})", a.end, a.start));
        }
        let format = a.format.as_deref().unwrap_or("mcap");
        let name = match format {
            "mcap" | "bag" if !a.name.ends_with(&format!(".{format}")) => {
                format!("{}.{format}", a.name)
            }
            "mcap" | "bag" | "db3" => a.name.clone(),
            other => return Err(format!("format {other}: mcap, bag or db3")),
        };
        let out = self.output(&name, "export_clip")?;
        let write = logsql::write::sink::LogWrite::of_format(format, &Default::default())
            .map_err(|e| say(e.into()))?
            .ok_or_else(|| format!("no writer for {format}"))?;
        let topics: std::collections::BTreeSet<&str> =
            a.topics.iter().map(String::as_str).collect();
        let sql = logsql::ops::export::clip_sql(&path, &topics, start, end);
        let written = logsql::ops::export::write_log_with(
            self.session.context(),
            &path,
            std::slice::from_ref(&sql),
            &out,
            &write,
            vec![logsql::ops::export::clip_metadata(&a.path, (start, end))],
            &|_| {},
        )
        .await
        .map_err(|e| say(e.into()))?;
        let driven = written.driven;
        let mut text = format!(
            "wrote {}: {} messages of {} from {} to {} ({} read)",
            out.display(),
            driven.report.rows,
            a.path,
            rfc3339(start),
            rfc3339(end),
            logsql::ops::units::bytes(written.bytes_read)
        );
        if let Some(e) = driven.stream_error {
            text.push_str(&format!(
                " (the recording is damaged: every readable message of the window was written; {})",
                say(e.into())
            ));
        }
        Ok(vec![ContentBlock::text(text)])
    }

    pub(super) async fn dataset(&self, a: args::ExportDataset) -> Reply {
        let out = self.output(&a.name, "export_dataset")?;
        let spec = logsql::ops::dataset_spec::Spec::parse(Path::new("spec"), &a.spec)
            .map_err(|e| e.to_string())?;
        let sql = spec.copy_sql(&out.display().to_string(), false);
        let rows = self.rows(&sql).await?;
        let frames = rows
            .first()
            .filter(|b| b.num_rows() > 0)
            .map(|b| {
                datafusion::arrow::compute::cast(
                    b.column(0),
                    &datafusion::arrow::datatypes::DataType::Int64,
                )
            })
            .transpose()
            .map_err(|e| e.to_string())?
            .map(|c| c.as_primitive::<Int64Type>().value(0));
        let info = std::fs::read_to_string(out.join("meta").join("info.json")).ok();
        let episodes = info
            .as_deref()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .and_then(|v| v["total_episodes"].as_u64());
        Ok(vec![ContentBlock::text(format!(
            "wrote the LeRobot dataset {}: {} frames, {} episodes",
            out.display(),
            frames.map_or("?".to_string(), |f| f.to_string()),
            episodes.map_or("?".to_string(), |e| e.to_string())
        ))])
    }
}

impl McpServer {
    pub(super) async fn draw(&self, a: args::Plot) -> Reply {
        use logsql::ops::chart::Chart;
        use logsql::ops::chart_image::{self as image, ImageType, Look};
        let kind = match a.kind.as_deref().unwrap_or("line") {
            "line" => image::Kind::Line,
            "scatter" => image::Kind::Scatter,
            "step" => image::Kind::Step,
            other => return Err(format!("kind {other}: line, scatter or step")),
        };
        let mut stream = self.session.query(&a.sql).await.map_err(say)?;
        let mut chart = Chart::new(stream.schema().as_ref()).map_err(|e| e.to_string())?;
        while let Some(batch) = futures::StreamExt::next(&mut stream).await {
            let batch = batch.map_err(|e| say(e.into()))?;
            chart.push(&batch).map_err(|e| e.to_string())?;
        }
        let look = Look {
            kind,
            title: a.title.clone(),
            width: a.width.unwrap_or(1000).clamp(200, 2000),
            height: a.height.unwrap_or(500).clamp(150, 1500),
        };
        let png = image::draw(&chart, &look, ImageType::Png).map_err(|e| e.to_string())?;
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        let data = base64::engine::general_purpose::STANDARD.encode(&png);
        Ok(vec![
            ContentBlock::text(format!(
                "{} against {}: {} x {} PNG",
                names.join(", "),
                chart.x_name,
                look.width,
                look.height
            )),
            ContentBlock::image(data, "image/png"),
        ])
    }
}
