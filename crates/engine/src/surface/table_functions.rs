//! Table functions answered from file summaries: `topics`, `chunks`,
//! `attachments` and `metadata`. Each takes a file, directory or glob.
//!
//! `topics` takes counts from the file's per-channel message counts when it
//! states them, and each topic's exact first/last time from the message
//! headers of the few chunks that decide it; otherwise it counts by reading
//! message headers ([`super::header_walk`], as `logsql info` counts). Headers
//! come from indexes where the format has them (a bag's index data, MCAP's
//! message indexes), never from payloads.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, ListBuilder, RecordBatch, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use super::header_walk::{count_topics, min_opt, walk_headers};
use super::url_table::resolve;
use crate::scanner::damage::report;
use crate::scanner::error::df_err;
use crate::scanner::options::{LogsqlOptions, OnError};
use crate::scanner::predicate::scalar_str;
use crate::scanner::schema::{
    map_array, map_field, str_array, timestamp_type, ts_array, u64_array,
};
use logsql_readers::formats::FormatReader;
use logsql_readers::limits::Limits;
use logsql_readers::model::{ChunkMeta, Summary};

/// `s` as a SQL string literal (`'it''s'`).
pub fn sql_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A literal argument of a table function as text (strings and integers).
pub(crate) fn literal_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Literal(v, _) => scalar_str(v).map(str::to_string).or_else(|| match v {
            ScalarValue::Int64(Some(i)) => Some(i.to_string()),
            ScalarValue::UInt64(Some(i)) => Some(i.to_string()),
            ScalarValue::Int32(Some(i)) => Some(i.to_string()),
            _ => None,
        }),
        _ => None,
    }
}

/// Plans a table function's table with `plan`, given the session state.
///
/// `call_with_args` is synchronous, but listing files and reading summaries
/// are async: `plan` runs on a scoped thread with a runtime of its own.
/// `what` names the call in the error of a planning thread that panicked.
pub(crate) fn plan_on_thread<F, Fut>(
    args: &TableFunctionArgs,
    what: &str,
    plan: F,
) -> Result<Arc<dyn TableProvider>>
where
    F: FnOnce(SessionState) -> Fut + Send,
    Fut: std::future::Future<Output = Result<Arc<dyn TableProvider>>>,
{
    let state = args
        .session()
        .as_any()
        .downcast_ref::<SessionState>()
        .ok_or_else(|| {
            DataFusionError::Internal("logsql table functions need a SessionState".into())
        })?
        .clone();
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            rt.block_on(plan(state))
        })
        .join()
        .unwrap_or_else(|_| {
            Err(DataFusionError::Internal(format!(
                "{what}: planning thread panicked"
            )))
        })
    })
}

/// Which summary view a table function shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SummaryView {
    /// One row per topic.
    Topics,
    /// One row per chunk.
    Chunks,
    /// One row per attachment.
    Attachments,
    /// One row per metadata record.
    Metadata,
    /// One row per channel (every format): id, topic, types, schema, metadata.
    Channels,
    /// One row per ROS connection: the channel view with ROS1 field names.
    Connections,
}

impl SummaryView {
    /// The SQL name of the function.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Topics => "topics",
            Self::Chunks => "chunks",
            Self::Attachments => "attachments",
            Self::Metadata => "metadata",
            Self::Channels => "channels",
            Self::Connections => "connections",
        }
    }

    /// Every view, in registration order.
    pub(crate) const ALL: [SummaryView; 6] = [
        Self::Topics,
        Self::Chunks,
        Self::Attachments,
        Self::Metadata,
        Self::Channels,
        Self::Connections,
    ];

    /// The table's schema.
    pub(crate) fn schema(self) -> SchemaRef {
        let s = |n: &str| Field::new(n, DataType::Utf8, false);
        let u = |n: &str, null| Field::new(n, DataType::UInt64, null);
        let t = |n: &str| Field::new(n, timestamp_type(), true);
        Arc::new(Schema::new(match self {
            Self::Topics => vec![
                s("topic"),
                Field::new("message_type", DataType::Utf8, true),
                s("message_encoding"),
                u("message_count", false),
                t("start_time"),
                t("end_time"),
            ],
            Self::Chunks => vec![
                s("file"),
                u("chunk_index", false),
                u("offset", false),
                u("length", false),
                s("compression"),
                u("compressed_size", false),
                u("uncompressed_size", true),
                t("start_time"),
                t("end_time"),
                u("message_count", true),
                Field::new(
                    "topics",
                    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
                    true,
                ),
            ],
            Self::Attachments => vec![
                s("file"),
                s("name"),
                s("media_type"),
                t("log_time"),
                t("create_time"),
                u("data_size", false),
                u("offset", false),
                u("length", false),
            ],
            Self::Metadata => vec![s("file"), s("name"), map_field("metadata")],
            Self::Channels => vec![
                s("file"),
                u("channel_id", false),
                s("topic"),
                Field::new("message_type", DataType::Utf8, true),
                s("message_encoding"),
                Field::new("schema_encoding", DataType::Utf8, true),
                Field::new("schema", DataType::Binary, true),
                map_field("metadata"),
            ],
            Self::Connections => vec![
                s("file"),
                u("connection_id", false),
                s("topic"),
                Field::new("message_type", DataType::Utf8, true),
                Field::new("md5sum", DataType::Utf8, true),
                Field::new("callerid", DataType::Utf8, true),
                Field::new("latching", DataType::Boolean, true),
                Field::new("message_definition", DataType::Utf8, true),
            ],
        }))
    }
}

/// Registers the summary table functions on `ctx`.
pub fn register(ctx: &SessionContext) {
    for view in SummaryView::ALL {
        ctx.register_udtf(view.name(), Arc::new(SummaryFunction { view }));
    }
}

#[derive(Debug)]
struct SummaryFunction {
    view: SummaryView,
}

impl TableFunctionImpl for SummaryFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let path = match args.exprs() {
            [Expr::Literal(v, _)] => scalar_str(v).map(str::to_string),
            _ => None,
        };
        let Some(path) = path else {
            return Err(DataFusionError::Plan(format!(
                "{}() takes one string argument: a file, directory or glob, e.g. {}('run.mcap')",
                self.view.name(),
                self.view.name()
            )));
        };
        Ok(Arc::new(SummaryTable {
            view: self.view,
            path,
        }))
    }
}

/// The table a summary function returns; computed when scanned.
#[derive(Debug)]
struct SummaryTable {
    view: SummaryView,
    path: String,
}

#[async_trait]
impl TableProvider for SummaryTable {
    fn schema(&self) -> SchemaRef {
        self.view.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let state = state
            .as_any()
            .downcast_ref::<SessionState>()
            .ok_or_else(|| {
                DataFusionError::Internal("logsql table functions need a SessionState".into())
            })?;
        let options = LogsqlOptions::from_config(state.config_options());
        let on_error = options.on_error;
        let policy = Policy {
            on_error,
            limits: options.limits(),
        };
        let pool = options.descriptor_pool()?;
        let resolved = resolve(state, &self.path).await?;
        // A damaged file of a directory or glob: a warning or an error by the
        // `on_error` policy, as when it is named alone.
        for e in resolved.unrecognised_errors().await? {
            crate::scanner::damage::report(on_error, e, None)?;
        }
        let mut files = Vec::new();
        for ((loc, _), summary) in resolved.summaries(state).await? {
            let mut cached = match summary {
                Ok(cached) => cached,
                Err(e) => {
                    crate::scanner::damage::report(on_error, e, None)?;
                    continue;
                }
            };
            if let (Some(pool), SummaryView::Channels) = (&pool, self.view) {
                // Schemas from the user's descriptor set, for channels the file names only by type.
                let mut summary = (*cached.summary).clone();
                let mut channels: Vec<_> = summary.channels.values().cloned().collect();
                if logsql_decode::descriptors::attach(pool, &mut channels) > 0 {
                    summary.channels = channels.into_iter().map(|c| (c.id, c)).collect();
                    cached = cached.with_summary(summary);
                }
            }
            files.push((loc.clone(), cached));
        }
        if files.is_empty() {
            return Err(DataFusionError::Plan(format!(
                "{}('{}'): no log file found there",
                self.view.name(),
                self.path
            )));
        }
        let view = self.view;
        let batch = tokio::task::spawn_blocking(move || build(view, &files, policy))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))??;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.schema(),
            projection.cloned(),
        )?)
    }
}

type Files = [(
    crate::storage::object_io::FileLocation,
    crate::storage::summary_cache::CachedSummary,
)];

fn build(view: SummaryView, files: &Files, policy: Policy) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = match view {
        SummaryView::Topics => topics_columns(files, policy)?,
        SummaryView::Chunks => {
            let rows: Vec<(&str, &Summary, &logsql_readers::model::ChunkMeta)> = files
                .iter()
                .flat_map(|(loc, c)| {
                    c.summary
                        .chunks
                        .iter()
                        .map(move |ch| (loc.name.as_str(), c.summary.as_ref(), ch))
                })
                .collect();
            let mut topics = ListBuilder::new(StringBuilder::new());
            for (_, s, c) in &rows {
                match &c.channels {
                    Some(ids) => {
                        let mut names: Vec<&str> = ids
                            .iter()
                            .filter_map(|id| s.channels.get(id))
                            .map(|ch| ch.topic.as_str())
                            .collect();
                        names.sort_unstable();
                        names.dedup();
                        names
                            .into_iter()
                            .for_each(|n| topics.values().append_value(n));
                        topics.append(true);
                    }
                    None => topics.append(false),
                }
            }
            vec![
                str_array(rows.iter().map(|r| Some(r.0))),
                u64_array(rows.iter().map(|r| Some(r.2.index as u64))),
                u64_array(rows.iter().map(|r| Some(r.2.offset))),
                u64_array(rows.iter().map(|r| Some(r.2.length))),
                str_array(rows.iter().map(|r| {
                    Some(if r.2.compression.is_empty() {
                        "none"
                    } else {
                        r.2.compression.as_str()
                    })
                })),
                u64_array(rows.iter().map(|r| Some(r.2.compressed_size))),
                u64_array(rows.iter().map(|r| r.2.uncompressed_size)),
                ts_array(rows.iter().map(|r| r.2.start_time)),
                ts_array(rows.iter().map(|r| r.2.end_time)),
                u64_array(rows.iter().map(|r| r.2.message_count)),
                Arc::new(topics.finish()),
            ]
        }
        SummaryView::Attachments => {
            let rows: Vec<_> = files
                .iter()
                .flat_map(|(loc, c)| {
                    c.summary
                        .attachments
                        .iter()
                        .map(move |a| (loc.name.as_str(), a))
                })
                .collect();
            vec![
                str_array(rows.iter().map(|r| Some(r.0))),
                str_array(rows.iter().map(|r| Some(r.1.name.as_str()))),
                str_array(rows.iter().map(|r| Some(r.1.media_type.as_str()))),
                ts_array(rows.iter().map(|r| Some(r.1.log_time))),
                ts_array(rows.iter().map(|r| Some(r.1.create_time))),
                u64_array(rows.iter().map(|r| Some(r.1.data_size))),
                u64_array(rows.iter().map(|r| Some(r.1.offset))),
                u64_array(rows.iter().map(|r| Some(r.1.length))),
            ]
        }
        SummaryView::Metadata => {
            let rows: Vec<_> = files
                .iter()
                .flat_map(|(loc, c)| {
                    c.summary
                        .metadata
                        .iter()
                        .map(move |m| (loc.name.as_str(), m))
                })
                .collect();
            vec![
                str_array(rows.iter().map(|r| Some(r.0))),
                str_array(rows.iter().map(|r| Some(r.1.name.as_str()))),
                map_array(rows.iter().map(|r| &r.1.metadata))?,
            ]
        }
        SummaryView::Channels | SummaryView::Connections => {
            let rows: Vec<(&str, &logsql_readers::model::Channel)> = files
                .iter()
                .flat_map(|(loc, c)| {
                    c.summary
                        .channels
                        .values()
                        .map(move |ch| (loc.name.as_str(), ch))
                })
                .collect();
            let meta = |key: &'static str| {
                rows.iter()
                    .map(move |r| r.1.metadata.get(key).map(String::as_str))
            };
            let mut columns = vec![
                str_array(rows.iter().map(|r| Some(r.0))),
                u64_array(rows.iter().map(|r| Some(r.1.id))),
                str_array(rows.iter().map(|r| Some(r.1.topic.as_str()))),
                str_array(rows.iter().map(|r| r.1.message_type.as_deref())),
            ];
            if view == SummaryView::Channels {
                columns.extend([
                    str_array(rows.iter().map(|r| Some(r.1.message_encoding.as_str()))),
                    str_array(rows.iter().map(|r| r.1.schema_encoding.as_deref())),
                    Arc::new(
                        rows.iter()
                            .map(|r| r.1.schema.as_deref())
                            .collect::<BinaryArray>(),
                    ) as ArrayRef,
                    map_array(rows.iter().map(|r| &r.1.metadata))?,
                ]);
            } else {
                let latching =
                    meta("latching").map(|v| v.map(|v| v == "1" || v.eq_ignore_ascii_case("true")));
                columns.extend([
                    str_array(meta("md5sum")),
                    str_array(meta("callerid")),
                    Arc::new(latching.collect::<BooleanArray>()) as ArrayRef,
                    str_array(rows.iter().map(|r| {
                        r.1.schema
                            .as_deref()
                            .and_then(|s| std::str::from_utf8(s).ok())
                    })),
                ]);
            }
            columns
        }
    };
    Ok(RecordBatch::try_new(view.schema(), columns)?)
}

/// Per-topic facts of one file: (type, encoding, count, start, end).
pub(crate) type TopicRow = (Option<String>, String, u64, Option<u64>, Option<u64>);

fn topics_columns(files: &Files, policy: Policy) -> Result<Vec<ArrayRef>> {
    let mut all: BTreeMap<String, TopicRow> = BTreeMap::new();
    for (loc, cached) in files {
        for (topic, row) in file_topics(loc, cached.format.as_ref(), &cached.summary, policy)? {
            let e = all
                .entry(topic)
                .or_insert((row.0.clone(), row.1.clone(), 0, None, None));
            e.2 += row.2;
            e.3 = min_opt(e.3, row.3);
            e.4 = e.4.max(row.4);
        }
    }
    Ok(vec![
        str_array(all.keys().map(|k| Some(k.as_str()))),
        str_array(all.values().map(|r| r.0.as_deref())),
        str_array(all.values().map(|r| Some(r.1.as_str()))),
        u64_array(all.values().map(|r| Some(r.2))),
        ts_array(all.values().map(|r| r.3)),
        ts_array(all.values().map(|r| r.4)),
    ])
}

/// The topics of one file: counts from the summary when it states them, with
/// each topic's exact first/last time from the fewest chunks that decide it
/// ([`channel_times`]); else counts and times from a scan of message headers.
pub(crate) fn file_topics(
    loc: &crate::storage::object_io::FileLocation,
    format: &dyn FormatReader,
    summary: &Summary,
    policy: Policy,
) -> Result<BTreeMap<String, TopicRow>> {
    let mut out: BTreeMap<String, TopicRow> = BTreeMap::new();
    let row_of = |out: &mut BTreeMap<String, TopicRow>, ch: &logsql_readers::model::Channel| {
        out.entry(ch.topic.clone())
            .or_insert_with(|| {
                (
                    ch.message_type.clone(),
                    ch.message_encoding.clone(),
                    0,
                    None,
                    None,
                )
            })
            .clone()
    };
    if let Some(counts) = &summary.channel_message_counts {
        let times = match format.channel_spans(summary) {
            Some(spans) => spans.map_err(df_err)?,
            None => channel_times(loc, format, summary, counts, policy)?,
        };
        for ch in summary.channels.values() {
            row_of(&mut out, ch);
            let bounds = times.get(&ch.id).copied().unwrap_or_default();
            let n = counts.get(&ch.id).copied().unwrap_or(0);
            let e = out.get_mut(&ch.topic).expect("inserted above");
            e.2 += n;
            if n > 0 {
                e.3 = min_opt(e.3, bounds.0.or(summary.start_time));
                e.4 = e.4.max(bounds.1.or(summary.end_time));
            }
        }
        return Ok(out);
    }
    for ch in summary.channels.values() {
        row_of(&mut out, ch);
    }
    let file = loc.open().map_err(df_err)?;
    let (counts, walk) = count_topics(format, file.as_ref(), summary, policy.limits, |_, _| {});
    for (topic, c) in counts {
        let e = out
            .entry(topic)
            .or_insert((c.message_type, c.message_encoding, 0, None, None));
        e.2 += c.count;
        e.3 = min_opt(e.3, c.first);
        e.4 = e.4.max(c.last);
    }
    for e in walk.errors.into_iter().chain(summary.damage.clone()) {
        report(policy.on_error, e, None)?;
    }
    Ok(out)
}

/// How the table functions read: the session's damage policy and the
/// decompression limits of its `logsql.max_*` options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    pub(crate) on_error: OnError,
    pub(crate) limits: Limits,
}

/// First and last `log_time` of a channel.
type Span = (Option<u64>, Option<u64>);

/// The exact first and last `log_time` of every channel with messages, by
/// reading the message headers (indexes where the format has them: a bag's
/// index data, MCAP's message indexes) of as few chunks as the summary allows.
///
/// A chunk listing one channel alone gives its times from the summary. Else,
/// for a channel's first time, the chunks listing it are read by increasing
/// start time until the next one starts after the earliest message found
/// (symmetrically for the last time): in a file whose chunks follow time order,
/// that is the first and last chunk of each channel. A chunk that lists no
/// channels (an MCAP chunk without message indexes) is read unless the listed
/// chunks already hold every message the file states. A chunk that cannot be
/// read is reported as `on_error` says, and then counts with its bounds.
fn channel_times(
    loc: &crate::storage::object_io::FileLocation,
    format: &dyn FormatReader,
    summary: &Summary,
    counts: &BTreeMap<u64, u64>,
    policy: Policy,
) -> Result<BTreeMap<u64, Span>> {
    let mut chunks = ChunkTimes::new(loc, format, summary, policy);
    let mut out: BTreeMap<u64, Span> = BTreeMap::new();
    let merge = |out: &mut BTreeMap<u64, Span>, id: u64, (lo, hi): Span| {
        let e = out.entry(id).or_default();
        *e = (min_opt(e.0, lo), e.1.max(hi));
    };
    let unlisted: Vec<&ChunkMeta> = summary
        .chunks
        .iter()
        .filter(|c| c.channels.is_none())
        .collect();
    let listed_total: Option<u64> = summary
        .chunks
        .iter()
        .filter(|c| c.channels.is_some())
        .map(|c| c.message_count)
        .sum();
    if listed_total.is_none() || listed_total != summary.message_count {
        for chunk in unlisted {
            for (&id, &span) in chunks.read(chunk)? {
                merge(&mut out, id, span);
            }
        }
    }
    for (&id, _) in counts.iter().filter(|&(_, &n)| n > 0) {
        let mut holding: Vec<&ChunkMeta> = summary
            .chunks
            .iter()
            .filter(|c| c.channels.as_ref().is_some_and(|ids| ids.contains(&id)))
            .collect();
        // First time: chunks by start (unknown first), until one starts later.
        holding.sort_by_key(|c| c.start_time);
        let mut lo = None;
        for chunk in &holding {
            if let (Some(lo), Some(start)) = (lo, chunk.start_time)
                && start >= lo
            {
                break;
            }
            lo = min_opt(lo, chunks.of(chunk, id)?.0);
        }
        // Last time: chunks by end, latest (or unknown) first.
        holding.sort_by_key(|c| std::cmp::Reverse(c.end_time.unwrap_or(u64::MAX)));
        let mut hi = None;
        for chunk in &holding {
            if let (Some(hi), Some(end)) = (hi, chunk.end_time)
                && end <= hi
            {
                break;
            }
            hi = hi.max(chunks.of(chunk, id)?.1);
        }
        merge(&mut out, id, (lo, hi));
    }
    Ok(out)
}

/// Per-channel times of the chunks of one file, each chunk read at most once.
struct ChunkTimes<'a> {
    loc: &'a crate::storage::object_io::FileLocation,
    format: &'a dyn FormatReader,
    summary: &'a Summary,
    policy: Policy,
    file: Option<Box<dyn logsql_readers::io::ReadAt>>,
    read: BTreeMap<u64, BTreeMap<u64, Span>>,
}

impl<'a> ChunkTimes<'a> {
    fn new(
        loc: &'a crate::storage::object_io::FileLocation,
        format: &'a dyn FormatReader,
        summary: &'a Summary,
        policy: Policy,
    ) -> Self {
        Self {
            loc,
            format,
            summary,
            policy,
            file: None,
            read: BTreeMap::new(),
        }
    }

    /// Channel `id`'s times in `chunk`: the chunk's bounds when it lists that
    /// channel alone, else from its message headers.
    fn of(&mut self, chunk: &ChunkMeta, id: u64) -> Result<Span> {
        if chunk.channels.as_deref() == Some(&[id][..])
            && chunk.start_time.is_some()
            && chunk.end_time.is_some()
        {
            return Ok((chunk.start_time, chunk.end_time));
        }
        Ok(self.read(chunk)?.get(&id).copied().unwrap_or_default())
    }

    /// Every channel's times in `chunk`, from its message headers.
    fn read(&mut self, chunk: &ChunkMeta) -> Result<&BTreeMap<u64, Span>> {
        if !self.read.contains_key(&chunk.offset) {
            if self.file.is_none() {
                self.file = Some(self.loc.open().map_err(df_err)?);
            }
            let file = self.file.as_deref().expect("opened above");
            let mut times: BTreeMap<u64, Span> = BTreeMap::new();
            let walk = walk_headers(
                self.format,
                file,
                self.summary,
                [chunk],
                self.policy.limits,
                |id, _, t| {
                    let e = times.entry(id).or_default();
                    *e = (
                        min_opt(e.0, t.iter().min().copied()),
                        e.1.max(t.iter().max().copied()),
                    );
                },
            );
            for e in walk.errors {
                report(self.policy.on_error, e, None)?;
                // Unreadable: its bounds stand for every channel it lists.
                for &id in chunk.channels.iter().flatten() {
                    let t = times.entry(id).or_default();
                    *t = (min_opt(t.0, chunk.start_time), t.1.max(chunk.end_time));
                }
            }
            self.read.insert(chunk.offset, times);
        }
        Ok(&self.read[&chunk.offset])
    }
}
