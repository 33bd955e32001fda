//! `logsql export`'s queries and its outputs, for any caller: the query of
//! an export (topics and a `[start, end)` window, pushed down to the chunk
//! indexes), the query of one decoded topic, the topics and the rows the
//! file summaries promise, a query's stream written to a Parquet file, and
//! queries written one after the other as one log (MCAP, a ROS1 bag, a ROS 2
//! bag: [`write_log_of`], which `logsql recover` writes its windows with);
//! every output appears only when complete.

use std::collections::BTreeSet;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::sql_literal;
use super::units::rfc3339;
use crate::LogsqlOptions;
use crate::atomic_write::AtomicFile;
use crate::write::drive::{Driven, StreamErrors};
use crate::write::sink::{LogSources, LogWrite, Report, write_log};
use crate::write::sources::ScannedFiles;
use crate::write::target::Target;

/// Encoded bytes buffered before a Parquet row group is flushed.
pub const ROW_GROUP_BYTES: usize = 128 * 1024 * 1024;

/// The `log_time` bounds of a window: `start` inclusive, `end` exclusive
/// (nanoseconds since the epoch).
pub fn time_filters(start: Option<i64>, end: Option<i64>) -> Vec<String> {
    let mut filters = Vec::new();
    if let Some(s) = start {
        filters.push(format!("log_time >= {}", sql_literal(&rfc3339(s))));
    }
    if let Some(e) = end {
        filters.push(format!("log_time < {}", sql_literal(&rfc3339(e))));
    }
    filters
}

/// ` WHERE log_time >= START AND log_time < END` (empty without bounds).
pub fn time_where(start: Option<i64>, end: Option<i64>) -> String {
    let filters = time_filters(start, end);
    match filters.is_empty() {
        true => String::new(),
        false => format!(" WHERE {}", filters.join(" AND ")),
    }
}

/// The query of a clip (`logsql clip`, `logsql clips`, MCP's
/// `export_clip`): every message of `input`, of `topics` (all when empty),
/// from `start` to `end` (ns, both included), in log-time order.
pub fn clip_sql(input: &str, topics: &BTreeSet<&str>, start: i64, end: i64) -> String {
    // `export_sql` takes an exclusive end.
    format!(
        "{} ORDER BY log_time",
        export_sql(input, topics, Some(start), Some(end.saturating_add(1)))
    )
}

/// The name of a clip's own metadata record (in MCAP clips).
pub const CLIP_RECORD: &str = "logsql.clip";

/// A clip's own metadata record ([`CLIP_RECORD`]): its `source` and window
/// (`start`, `end`: RFC 3339, both included); `logsql clips` adds the
/// moments and how they were found.
pub fn clip_metadata(source: &str, window: (i64, i64)) -> logsql_readers::model::MetadataInfo {
    logsql_readers::model::MetadataInfo {
        offset: None,
        name: CLIP_RECORD.to_string(),
        metadata: [
            ("source".to_string(), source.to_string()),
            ("start".to_string(), crate::units::rfc3339(window.0)),
            ("end".to_string(), crate::units::rfc3339(window.1)),
        ]
        .into(),
    }
}

/// The query of an export: every message of `input`, of `topics` (all when
/// empty), in the window.
pub fn export_sql(
    input: &str,
    topics: &BTreeSet<&str>,
    start: Option<i64>,
    end: Option<i64>,
) -> String {
    let mut filters = Vec::new();
    if !topics.is_empty() {
        let list: Vec<String> = topics.iter().map(|t| sql_literal(t)).collect();
        filters.push(format!("topic IN ({})", list.join(", ")));
    }
    filters.extend(time_filters(start, end));
    let mut sql = format!("SELECT * FROM {}", sql_literal(input));
    if !filters.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&filters.join(" AND "));
    }
    sql
}

/// The query of one topic's decoded fields as typed columns (`read_topic`,
/// struct fields flattened to `a.b` columns with `flatten`), in the window.
pub fn decoded_sql(
    input: &str,
    topic: &str,
    flatten: bool,
    start: Option<i64>,
    end: Option<i64>,
) -> String {
    format!(
        "SELECT * FROM read_topic({}, {}{}){}",
        sql_literal(input),
        sql_literal(topic),
        if flatten { ", 'flatten'" } else { "" },
        time_where(start, end)
    )
}

/// A file name for `topic`: `/camera/image_raw` -> `camera.image_raw`.
pub fn file_stem(topic: &str) -> String {
    let s: String = topic
        .trim_start_matches('/')
        .chars()
        .map(|c| match c {
            '/' => '.',
            c if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') => c,
            _ => '_',
        })
        .collect();
    if s.is_empty() { "root".to_string() } else { s }
}

/// The distinct topics of the log(s) `input` names, sorted.
pub async fn topics(ctx: &SessionContext, input: &str) -> Result<Vec<String>> {
    let sql = format!(
        "SELECT DISTINCT topic FROM topics({}) ORDER BY topic",
        sql_literal(input)
    );
    let mut topics = Vec::new();
    for batch in ctx.sql(&sql).await?.collect().await? {
        let column = batch.column(0).as_string::<i32>();
        topics.extend(column.iter().flatten().map(str::to_string));
    }
    Ok(topics)
}

/// The number of messages an export of `topics` (all when empty) of `input`
/// writes, from the file summaries, when every file states its counts.
pub async fn expected_rows(
    ctx: &SessionContext,
    input: &str,
    topics: &BTreeSet<&str>,
) -> Option<u64> {
    let state = ctx.state();
    let resolved = crate::surface::url_table::resolve(&state, input)
        .await
        .ok()?;
    let limits = crate::LogsqlOptions::from_config(state.config_options()).limits();
    let mut total = 0;
    for (loc, format) in resolved.log_files() {
        let cache = crate::storage::summary_cache::of(state.runtime_env());
        let cached = loc
            .summary_with_limits(Some(cache), format.clone(), limits)
            .await
            .ok()?;
        let summary = &cached.summary;
        total += if topics.is_empty() {
            summary.message_count?
        } else {
            let counts = summary.topic_message_counts()?;
            topics
                .iter()
                .map(|t| counts.get(t).copied().unwrap_or(0))
                .sum()
        };
    }
    Some(total)
}

/// What [`write_parquet`] wrote: the rows, and the error of a stream that
/// failed after delivering rows (the file then holds those rows, complete).
#[derive(Debug)]
pub struct Written {
    /// Rows written.
    pub rows: u64,
    /// The stream's error after `rows` rows, if it failed.
    pub failed: Option<DataFusionError>,
}

/// Streams `stream` into a Parquet file at `output` (zstd, a row group per
/// [`ROW_GROUP_BYTES`] of encoded data), written to an exclusively created
/// temporary file beside it and renamed over it when complete; `progress`
/// hears the rows written so far.
///
/// A stream that fails after delivering rows (a damaged file: the engine
/// delivers every readable row first) leaves a complete file of those rows
/// and returns the error in [`Written::failed`]; one that fails before any
/// row leaves no file and returns the error.
pub async fn write_parquet(
    mut stream: SendableRecordBatchStream,
    output: &Path,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<Written> {
    let io = |what: String| {
        move |e: std::io::Error| DataFusionError::External(format!("{what}: {e}").into())
    };
    let temp = format!("{} (its temporary file)", output.display());
    let mut target = AtomicFile::create(output).map_err(io(temp.clone()))?;
    let file = target.file().try_clone().map_err(io(temp.clone()))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_created_by(format!("logsql {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut writer = ArrowWriter::try_new(BufWriter::new(file), stream.schema(), Some(props))?;
    let mut rows = 0u64;
    let mut failed = None;
    while let Some(next) = stream.next().await {
        let batch = match next {
            Ok(batch) => batch,
            Err(e) if rows > 0 => {
                failed = Some(e);
                break;
            }
            Err(e) => return Err(e),
        };
        writer.write(&batch)?;
        rows += batch.num_rows() as u64;
        progress(rows);
        if writer.in_progress_size() >= ROW_GROUP_BYTES {
            writer.flush()?;
        }
    }
    // Writes the footer.
    let mut buf = writer.into_inner()?;
    buf.flush().map_err(io(temp))?;
    drop(buf);
    target.commit().map_err(io(output.display().to_string()))?;
    Ok(Written { rows, failed })
}

/// Streams the result of `sql` into a Parquet file at `output`, as
/// [`write_parquet`] does.
pub async fn write_parquet_of(
    ctx: &SessionContext,
    sql: &str,
    output: &Path,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<Written> {
    let stream = crate::sql(ctx, sql).await?.execute_stream().await?;
    write_parquet(stream, output, progress).await
}

/// The session a write over `input` plans its queries in: for one local
/// file, `ctx` reading it in one partition (its scan in the file's time
/// order then needs no merge of partitions, whose `SortPreservingMergeExec`
/// copies every payload once more, while the writer compressing chunks is
/// the bottleneck, not the scan); a directory or glob keeps the configured
/// partitions (its files are merged in time order).
fn write_session(ctx: &SessionContext, input: &str) -> SessionContext {
    if !Path::new(input).is_file() {
        return ctx.clone();
    }
    let mut one = ctx.state();
    one.config_mut().options_mut().execution.target_partitions = 1;
    SessionContext::new_with_state(one)
}

/// Writes the rows of `sqls` (queries over `input`), one query after the
/// other as one stream, into one log at `output` as `write` says (an MCAP
/// file, a ROS1 bag or a ROS 2 bag directory: [`crate::write::sink`]),
/// published only when complete. Channels, schemas, metadata and
/// attachments come only from the files the queries scan; `progress` hears
/// the rows written so far.
///
/// A stream that fails after delivering rows (a damaged file) completes the
/// output and returns the error in [`Driven::stream_error`]; one that fails
/// before any row leaves nothing and returns the error.
pub async fn write_log_of(
    ctx: &SessionContext,
    input: &str,
    sqls: &[String],
    output: &Path,
    write: &LogWrite,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<Driven<Report>> {
    Ok(
        write_log_with(ctx, input, sqls, output, write, Vec::new(), progress)
            .await?
            .driven,
    )
}

/// [`write_log_of`], with metadata records of the output's own (`metadata`:
/// a clip's window and source) written after the source's, where the format
/// has metadata records (MCAP).
pub async fn write_log_with(
    ctx: &SessionContext,
    input: &str,
    sqls: &[String],
    output: &Path,
    write: &LogWrite,
    metadata: Vec<logsql_readers::model::MetadataInfo>,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<WindowsWritten> {
    let ctx = write_session(ctx, input);
    let mut plans: Vec<Arc<dyn ExecutionPlan>> = Vec::with_capacity(sqls.len());
    for sql in sqls {
        plans.push(ctx.sql(sql).await?.create_physical_plan().await?);
    }
    let Some(first) = plans.first() else {
        return Err(DataFusionError::Plan(format!(
            "{}: nothing to write (no query)",
            output.display()
        )));
    };
    let scanned = ScannedFiles::of_plan(first);
    let schema = first.schema();
    let task = ctx.task_ctx();
    let executed = plans.clone();
    let batches = futures::stream::iter(plans).flat_map(move |plan| {
        match execute_stream(plan, Arc::clone(&task)) {
            Ok(stream) => stream.boxed(),
            Err(e) => futures::stream::once(async { Err(e) }).boxed(),
        }
    });
    let stream: SendableRecordBatchStream =
        Box::pin(RecordBatchStreamAdapter::new(schema, batches));
    let sources = LogSources {
        scanned: &scanned,
        env: ctx.runtime_env(),
        pool: LogsqlOptions::from_config(ctx.state().config_options()).descriptor_pool()?,
        extra_metadata: metadata,
    };
    let driven = write_log(
        stream,
        write,
        &Target::Local(output.to_path_buf()),
        sources,
        StreamErrors::KeepRows,
        &|p| progress(p.rows),
        std::future::pending(),
    )
    .await?;
    let bytes_read = executed.iter().map(bytes_read).sum();
    Ok(WindowsWritten { driven, bytes_read })
}

/// What [`write_log_with`] wrote: the writer's report, and what the scans
/// of its queries read.
#[derive(Debug)]
pub struct WindowsWritten {
    /// The writer's report and the input's error, if any.
    pub driven: Driven<Report>,
    /// The bytes the scans read (the sum of their `bytes_read` metrics, the
    /// figure `EXPLAIN ANALYZE` shows): the chunks and indexes of the messages
    /// (a summary read while the query was planned is not in it).
    pub bytes_read: u64,
}

/// The bytes the scans in `plan` read (their `bytes_read` metrics).
fn bytes_read(plan: &Arc<dyn ExecutionPlan>) -> u64 {
    let own = plan
        .metrics()
        .and_then(|m| m.sum_by_name("bytes_read"))
        .map_or(0, |v| v.as_usize() as u64);
    own + plan.children().into_iter().map(bytes_read).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_queries() {
        assert_eq!(file_stem("/camera/image_raw"), "camera.image_raw");
        assert_eq!(file_stem("/"), "root");
        assert_eq!(file_stem("/a b:c"), "a_b_c");
        let topics = BTreeSet::from(["/imu", "/it's"]);
        assert_eq!(
            export_sql("x.mcap", &topics, Some(0), Some(1_000_000_000)),
            "SELECT * FROM 'x.mcap' WHERE topic IN ('/imu', '/it''s') AND \
             log_time >= '1970-01-01T00:00:00Z' AND log_time < '1970-01-01T00:00:01Z'"
        );
        assert_eq!(
            decoded_sql("x.mcap", "/imu", true, None, None),
            "SELECT * FROM read_topic('x.mcap', '/imu', 'flatten')"
        );
    }

    #[test]
    fn export_sql_quotes_and_filters() {
        let topics: BTreeSet<&str> = ["/tf", "/it's"].into_iter().collect();
        assert_eq!(
            export_sql(
                "logs/*.mcap",
                &topics,
                Some(1_000_000_000),
                Some(2_500_000_000)
            ),
            "SELECT * FROM 'logs/*.mcap' WHERE topic IN ('/it''s', '/tf') \
             AND log_time >= '1970-01-01T00:00:01Z' AND log_time < '1970-01-01T00:00:02.500Z'"
        );
        assert_eq!(
            export_sql("a.mcap", &BTreeSet::new(), None, None),
            "SELECT * FROM 'a.mcap'"
        );
    }
}
