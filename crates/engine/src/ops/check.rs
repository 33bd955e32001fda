//! `logsql check`: expectations of recordings (an `EXPECT.toml`) turned
//! into a pass or a fail per recording, check by check.
//!
//! ```toml
//! [recording]
//! required_topics = ["/imu", "/camera/front"]
//! min_duration = "10s"
//! max_duration = "2h"
//! healthy = true            # doctor finds no problem (default; local files)
//!
//! [topics."/imu"]
//! rate = 200                # Hz, from the message count over the topic's span
//! rate_tolerance = 0.1      # 10% (default)
//! max_gap = "50ms"          # largest time between two messages
//! min_messages = 1000
//! monotonic_stamps = true   # header.stamp never goes back (in log-time order)
//! max_stamp_skew = "20ms"   # |header.stamp - log_time| at most this
//! ```
//!
//! A topic named under `[topics]` must be there. Message times come from the
//! same header read `logsql info --timeline` makes (indexes where the format
//! keeps per-message times, no payload decoded); only the stamp checks decode
//! the topic (`read_topic`'s `header.stamp`). Each recording gives a
//! [`Report`]: its outcomes, or why it could not be read.
//!
//! The same checks from SQL: `check_recordings(source, expectations)` (the
//! expectations as TOML text), one row per check of each recording: `file`,
//! `verdict`, `check`, `topic`, `passed`, `value`, `expected`, `detail` (an
//! unreadable recording is one row, check `read`, with its error).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::execution::SessionState;
use datafusion::prelude::{DataFrame, SessionContext};
use logsql_readers::limits::Limits;
use serde::Deserialize;

use super::info::{self, Gather, InfoFile};
use super::sql_literal;
use crate::LogsqlOptions;
use crate::storage::roots::DataRoots;
use crate::surface::table_functions::{literal_text, plan_on_thread};
use crate::units::{duration, parse_duration, rfc3339};

/// Expectations that cannot be used: what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectError(pub String);

impl fmt::Display for ExpectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExpectError {}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecording {
    #[serde(default)]
    required_topics: Vec<String>,
    min_duration: Option<String>,
    max_duration: Option<String>,
    healthy: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopic {
    rate: Option<f64>,
    rate_tolerance: Option<f64>,
    max_gap: Option<String>,
    min_messages: Option<u64>,
    monotonic_stamps: Option<bool>,
    max_stamp_skew: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    recording: RawRecording,
    #[serde(default)]
    topics: BTreeMap<String, RawTopic>,
}

/// What one topic must hold to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicExpect {
    /// Messages per second, and the fraction it may be off by.
    pub rate: Option<(f64, f64)>,
    /// The longest time between two messages, ns.
    pub max_gap: Option<u64>,
    /// The fewest messages.
    pub min_messages: Option<u64>,
    /// Header stamps never decrease in log-time order.
    pub monotonic_stamps: bool,
    /// The largest |header.stamp - log_time|, ns.
    pub max_stamp_skew: Option<u64>,
}

/// Parsed expectations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    /// Topics that must have messages.
    pub required_topics: Vec<String>,
    /// The shortest span (first to last message), ns.
    pub min_duration: Option<u64>,
    /// The longest span, ns.
    pub max_duration: Option<u64>,
    /// Whether doctor must find no problem.
    pub healthy: bool,
    /// Per topic.
    pub topics: BTreeMap<String, TopicExpect>,
}

fn ns(what: &str, text: &Option<String>) -> Result<Option<u64>, ExpectError> {
    text.as_deref()
        .map(|t| {
            parse_duration(t)
                .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
                .map_err(|e| ExpectError(format!("{what}: {e}")))
        })
        .transpose()
}

impl Expect {
    /// Parses an `EXPECT.toml`'s text.
    pub fn parse(text: &str) -> Result<Self, ExpectError> {
        let raw: Raw = toml::from_str(text).map_err(|e| ExpectError(e.to_string()))?;
        let mut topics = BTreeMap::new();
        for (name, t) in raw.topics {
            let what = |field: &str| format!("[topics.\"{name}\"] {field}");
            let rate = match (t.rate, t.rate_tolerance) {
                (Some(r), tol) if r > 0.0 && r.is_finite() => {
                    let tol = tol.unwrap_or(0.1);
                    if !(0.0..1.0).contains(&tol) {
                        return Err(ExpectError(format!(
                            "{}: {tol} is not a fraction from 0 to 1 (0.1 is 10%)",
                            what("rate_tolerance")
                        )));
                    }
                    Some((r, tol))
                }
                (Some(r), _) => {
                    return Err(ExpectError(format!(
                        "{}: {r} is not a rate in Hz above 0",
                        what("rate")
                    )));
                }
                (None, Some(_)) => {
                    return Err(ExpectError(format!(
                        "{}: given without a rate",
                        what("rate_tolerance")
                    )));
                }
                (None, None) => None,
            };
            let expect = TopicExpect {
                rate,
                max_gap: ns(&what("max_gap"), &t.max_gap)?,
                min_messages: t.min_messages,
                monotonic_stamps: t.monotonic_stamps.unwrap_or(false),
                max_stamp_skew: ns(&what("max_stamp_skew"), &t.max_stamp_skew)?,
            };
            topics.insert(name, expect);
        }
        Ok(Expect {
            required_topics: raw.recording.required_topics,
            min_duration: ns("[recording] min_duration", &raw.recording.min_duration)?,
            max_duration: ns("[recording] max_duration", &raw.recording.max_duration)?,
            healthy: raw.recording.healthy.unwrap_or(true),
            topics,
        })
    }

    fn needs_times(&self) -> bool {
        self.topics
            .values()
            .any(|t| t.rate.is_some() || t.max_gap.is_some())
    }
}

/// One check of one recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The check: `health`, `required_topic`, `min_duration`, `max_duration`,
    /// `present`, `rate`, `max_gap`, `min_messages`, `monotonic_stamps`,
    /// `max_stamp_skew`.
    pub check: &'static str,
    /// The topic it is about, if any.
    pub topic: Option<String>,
    /// Whether it held.
    pub passed: bool,
    /// What was found.
    pub value: String,
    /// What was expected.
    pub expected: String,
    /// A sentence for a failure (where and how much); empty on a pass.
    pub detail: String,
}

/// One recording's checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The recording, as `logsql info` names it.
    pub file: String,
    /// Every check made, in the order of the expectations.
    pub outcomes: Vec<Outcome>,
    /// Why the recording could not be read at all.
    pub unreadable: Option<String>,
}

/// A recording's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Every check held.
    Pass,
    /// A check failed.
    Fail,
    /// The recording could not be read.
    Unreadable,
}

impl Verdict {
    /// `pass`, `fail` or `unreadable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unreadable => "unreadable",
        }
    }

    /// The exit status: 0, 1 or 2.
    pub fn exit_status(self) -> u8 {
        self as u8
    }
}

impl Report {
    /// Pass, fail or unreadable.
    pub fn verdict(&self) -> Verdict {
        if self.unreadable.is_some() {
            Verdict::Unreadable
        } else if self.outcomes.iter().all(|o| o.passed) {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }
}

/// The recordings `sources` name (files, directories, globs, URLs), as
/// `logsql info` lists them; each is then checked with [`check`].
pub async fn recordings(
    state: &SessionState,
    sources: &[String],
) -> Result<Vec<InfoFile>, info::InfoError> {
    info::files(state, sources).await
}

/// Checks one recording against `expect`.
pub async fn check(
    state: &SessionState,
    file: InfoFile,
    expect: &Expect,
    limits: Limits,
) -> Report {
    let name = file.name.clone();
    let unreadable = |e: String| Report {
        file: name.clone(),
        outcomes: Vec::new(),
        unreadable: Some(e),
    };
    let (loc, cached) = match file.read {
        Ok(read) => read,
        Err(e) => return unreadable(e.to_string()),
    };
    let what = Gather {
        verify: false,
        timeline: expect.needs_times(),
    };
    let blocking = {
        let (loc, cached) = (loc.clone(), cached.clone());
        tokio::task::spawn_blocking(move || info::gather(&loc, &cached, what, limits))
    };
    let (facts, times) = match blocking.await {
        Ok(Ok(got)) => got,
        Ok(Err(e)) => return unreadable(e.to_string()),
        Err(e) => return unreadable(format!("the read stopped: {e}")),
    };
    if let Some(e) = &facts.read_error {
        return unreadable(e.clone());
    }
    let mut out = Vec::new();
    if expect.healthy && loc.local {
        let path = std::path::PathBuf::from(format!("/{}", loc.meta.location));
        let checked =
            tokio::task::spawn_blocking(move || super::doctor::check_path(&path, &limits)).await;
        out.push(health(checked.map_err(|e| e.to_string())));
    }
    let count = |topic: &str| -> Option<u64> {
        let row = facts.topics.get(topic)?;
        Some(row.count.unwrap_or(1))
    };
    for topic in &expect.required_topics {
        let n = count(topic).unwrap_or(0);
        out.push(Outcome {
            check: "required_topic",
            topic: Some(topic.clone()),
            passed: n > 0,
            value: format!("{n} messages"),
            expected: "messages".into(),
            detail: if n > 0 {
                String::new()
            } else {
                format!("topic {topic} has no messages")
            },
        });
    }
    let span = facts.span.unwrap_or(0);
    if let Some(min) = expect.min_duration {
        out.push(bound("min_duration", span, min, span >= min, |_| {
            format!(
                "the recording lasts {} (first to last message), shorter than {}",
                duration(span),
                duration(min)
            )
        }));
    }
    if let Some(max) = expect.max_duration {
        out.push(bound("max_duration", span, max, span <= max, |_| {
            format!(
                "the recording lasts {}, longer than {}",
                duration(span),
                duration(max)
            )
        }));
    }
    let times = times.map(|(t, _)| t).unwrap_or_default();
    for (topic, t) in &expect.topics {
        let n = count(topic).unwrap_or(0);
        let present = n > 0;
        // A required topic's absence is reported once, above.
        let required = expect.required_topics.contains(topic);
        if !required || present {
            out.push(Outcome {
                check: "present",
                topic: Some(topic.clone()),
                passed: present,
                value: format!("{n} messages"),
                expected: "messages".into(),
                detail: if present {
                    String::new()
                } else {
                    format!("topic {topic} is missing")
                },
            });
        }
        if !present {
            continue;
        }
        let mut ts = times.get(topic).cloned().unwrap_or_default();
        ts.sort_unstable();
        topic_checks(topic, t, n, &ts, &mut out);
        if t.monotonic_stamps || t.max_stamp_skew.is_some() {
            match stamps(state, &loc.name, topic).await {
                Ok(s) => stamp_checks(topic, t, &s, &mut out),
                Err(e) => out.push(Outcome {
                    check: if t.monotonic_stamps {
                        "monotonic_stamps"
                    } else {
                        "max_stamp_skew"
                    },
                    topic: Some(topic.clone()),
                    passed: false,
                    value: "no stamps".into(),
                    expected: "header.stamp".into(),
                    detail: format!("the stamps of {topic} could not be read: {e}"),
                }),
            }
        }
    }
    Report {
        file: name,
        outcomes: out,
        unreadable: None,
    }
}

fn health(checked: Result<super::doctor::Checked, String>) -> Outcome {
    let (passed, value, detail) = match checked {
        Err(e) => (false, "not checked".to_string(), e),
        Ok(c) => match c.report {
            Err(e) => (false, "unreadable".into(), e.to_string()),
            Ok(r) if r.healthy() => (true, "healthy".into(), String::new()),
            Ok(r) => {
                let problems: Vec<String> = r
                    .problems
                    .iter()
                    .filter(|p| p.severity != logsql_readers::doctor::Severity::Info)
                    .map(|p| p.message.clone())
                    .collect();
                let shown = problems
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ");
                let n = problems.len();
                let s = if n == 1 { "" } else { "s" };
                (false, format!("{n} problem{s}"), format!("doctor: {shown}"))
            }
        },
    };
    Outcome {
        check: "health",
        topic: None,
        passed,
        value,
        expected: "healthy".into(),
        detail,
    }
}

fn bound(
    check: &'static str,
    value: u64,
    expected: u64,
    passed: bool,
    detail: impl Fn(u64) -> String,
) -> Outcome {
    Outcome {
        check,
        topic: None,
        passed,
        value: duration(value),
        expected: duration(expected),
        detail: if passed { String::new() } else { detail(value) },
    }
}

/// Rate, gaps and counts from the topic's message times (sorted).
fn topic_checks(topic: &str, t: &TopicExpect, n: u64, ts: &[u64], out: &mut Vec<Outcome>) {
    let outcome = |check, passed, value: String, expected: String, detail: String| Outcome {
        check,
        topic: Some(topic.to_string()),
        passed,
        value,
        expected,
        detail: if passed { String::new() } else { detail },
    };
    if let Some(min) = t.min_messages {
        out.push(outcome(
            "min_messages",
            n >= min,
            n.to_string(),
            format!("at least {min}"),
            format!("{topic} has {n} messages, fewer than {min}"),
        ));
    }
    if let Some((rate, tol)) = t.rate {
        let span = match (ts.first(), ts.last()) {
            (Some(a), Some(b)) if b > a => Some(b - a),
            _ => None,
        };
        let got = span.map(|s| (ts.len() - 1) as f64 / (s as f64 / 1e9));
        let passed = got.is_some_and(|g| (g - rate).abs() <= tol * rate);
        let value = got.map_or("-".to_string(), |g| format!("{g:.2} Hz"));
        let off = got.map_or(String::new(), |g| {
            format!(" ({:+.1}%)", (g / rate - 1.0) * 100.0)
        });
        out.push(outcome(
            "rate",
            passed,
            value.clone(),
            format!("{rate} Hz ± {}%", tol * 100.0),
            format!(
                "{topic} runs at {value}{off}, expected {rate} Hz ± {}%",
                tol * 100.0
            ),
        ));
    }
    if let Some(max) = t.max_gap {
        let gap = ts
            .windows(2)
            .map(|w| (w[1] - w[0], w[0]))
            .max_by_key(|(g, _)| *g);
        let (g, at) = gap.unwrap_or((0, 0));
        out.push(outcome(
            "max_gap",
            g <= max,
            duration(g),
            format!("at most {}", duration(max)),
            format!(
                "{topic} is silent for {} from {} (at most {} expected)",
                duration(g),
                rfc3339(at as i64),
                duration(max)
            ),
        ));
    }
}

/// What the stamps of a topic say.
struct Stamps {
    /// Messages with a stamp below the one before, and the first one's log time.
    backwards: (i64, Option<i64>),
    /// The largest |stamp - log_time| and its log time.
    skew: Option<(i64, i64)>,
}

async fn stamps(
    state: &SessionState,
    file: &str,
    topic: &str,
) -> datafusion::error::Result<Stamps> {
    let read = format!("read_topic({}, {})", sql_literal(file), sql_literal(topic));
    let sql = format!(
        "WITH s AS (SELECT CAST(log_time AS BIGINT) AS t, CAST(header.stamp AS BIGINT) AS s FROM {read}), \
         o AS (SELECT t, s, lag(s) OVER (ORDER BY t) AS prev FROM s) \
         SELECT count(*) FILTER (WHERE s < prev), min(t) FILTER (WHERE s < prev), \
         max(abs(s - t)), first_value(t ORDER BY abs(s - t) DESC NULLS LAST) FROM o"
    );
    let plan = state.create_logical_plan(&sql).await?;
    let batches = DataFrame::new(state.clone(), plan).collect().await?;
    let b = &batches[0];
    let col = |i: usize| -> datafusion::error::Result<Option<i64>> {
        let a = cast(b.column(i), &DataType::Int64)?;
        let a = a.as_primitive::<Int64Type>();
        Ok(a.is_valid(0).then(|| a.value(0)))
    };
    Ok(Stamps {
        backwards: (col(0)?.unwrap_or(0), col(1)?),
        skew: col(2)?.zip(col(3)?),
    })
}

fn stamp_checks(topic: &str, t: &TopicExpect, s: &Stamps, out: &mut Vec<Outcome>) {
    if t.monotonic_stamps {
        let (n, first) = s.backwards;
        out.push(Outcome {
            check: "monotonic_stamps",
            topic: Some(topic.to_string()),
            passed: n == 0,
            value: format!("{n} stamps go back"),
            expected: "none go back".into(),
            detail: match first {
                Some(at) if n > 0 => format!(
                    "{topic}: {n} header stamps are earlier than the one before, the first at log time {}",
                    rfc3339(at)
                ),
                _ => String::new(),
            },
        });
    }
    if let Some(max) = t.max_stamp_skew {
        let (skew, at) = s.skew.unwrap_or((0, 0));
        let passed = skew.unsigned_abs() <= max;
        out.push(Outcome {
            check: "max_stamp_skew",
            topic: Some(topic.to_string()),
            passed,
            value: duration(skew.unsigned_abs()),
            expected: format!("at most {}", duration(max)),
            detail: if passed {
                String::new()
            } else {
                format!(
                    "{topic}: a header stamp is {} from its log time {} (at most {} expected)",
                    duration(skew.unsigned_abs()),
                    rfc3339(at),
                    duration(max)
                )
            },
        });
    }
}

/// Registers `check_recordings(source, expectations)`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udtf("check_recordings", Arc::new(CheckFunction));
}

const USAGE: &str = "check_recordings() takes a path (a file, directory, glob or URL) and the expectations as TOML text, e.g. check_recordings('runs/', '[topics.\"/imu\"]\nrate = 200')";

#[derive(Debug)]
struct CheckFunction;

impl TableFunctionImpl for CheckFunction {
    fn call_with_args(
        &self,
        args: TableFunctionArgs,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let texts: Vec<Option<String>> = args.exprs().iter().map(literal_text).collect();
        let [Some(path), Some(toml)] = texts.as_slice() else {
            return Err(DataFusionError::Plan(USAGE.into()));
        };
        let expect = Expect::parse(toml).map_err(|e| {
            DataFusionError::Plan(format!("check_recordings(): the expectations: {e}"))
        })?;
        let path = path.clone();
        let what = format!("check_recordings('{path}', ...)");
        plan_on_thread(&args, &what, |state| async move {
            if let Some(roots) = DataRoots::of(state.config())
                && !path.contains("://")
            {
                roots.check_local(std::path::Path::new(&path), &path)?;
            }
            let limits = LogsqlOptions::from_config(state.config_options()).limits();
            let files = recordings(&state, std::slice::from_ref(&path))
                .await
                .map_err(|e| DataFusionError::Plan(e.to_string()))?;
            let mut reports = Vec::new();
            for file in files {
                reports.push(check(&state, file, &expect, limits).await);
            }
            let batch = table(&reports)?;
            let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
            Ok(Arc::new(table) as Arc<dyn TableProvider>)
        })
    }
}

/// The rows of `check_recordings`.
fn table(reports: &[Report]) -> datafusion::error::Result<RecordBatch> {
    let mut cols: [Vec<Option<String>>; 7] = Default::default();
    let mut passed = Vec::new();
    for r in reports {
        let mut row =
            |check: &str, topic: Option<&str>, ok: bool, v: &str, x: &str, d: Option<&str>| {
                let values = [
                    Some(r.file.as_str()),
                    Some(r.verdict().as_str()),
                    Some(check),
                    topic,
                    Some(v),
                    Some(x),
                    d,
                ];
                for (c, v) in cols.iter_mut().zip(values) {
                    c.push(v.map(str::to_string));
                }
                passed.push(ok);
            };
        if let Some(e) = &r.unreadable {
            row("read", None, false, "unreadable", "readable", Some(e));
        }
        for o in &r.outcomes {
            let detail = (!o.passed).then_some(o.detail.as_str());
            row(
                o.check,
                o.topic.as_deref(),
                o.passed,
                &o.value,
                &o.expected,
                detail,
            );
        }
    }
    let names = [
        "file", "verdict", "check", "topic", "value", "expected", "detail",
    ];
    let mut fields: Vec<Field> = names
        .iter()
        .map(|n| Field::new(*n, DataType::Utf8, matches!(*n, "topic" | "detail")))
        .collect();
    fields.insert(4, Field::new("passed", DataType::Boolean, false));
    let mut arrays: Vec<ArrayRef> = cols
        .into_iter()
        .map(|c| Arc::new(StringArray::from(c)) as ArrayRef)
        .collect();
    arrays.insert(4, Arc::new(BooleanArray::from(passed)));
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations_parse_and_say_what_is_wrong() {
        let e = Expect::parse(
            "[recording]\nrequired_topics = [\"/imu\"]\nmin_duration = \"10s\"\n\
             [topics.\"/imu\"]\nrate = 200\nmax_gap = \"50ms\"\nmonotonic_stamps = true\n",
        )
        .unwrap();
        assert_eq!(e.min_duration, Some(10_000_000_000));
        assert!(e.healthy);
        let imu = &e.topics["/imu"];
        assert_eq!(
            (imu.rate, imu.max_gap),
            (Some((200.0, 0.1)), Some(50_000_000))
        );
        assert!(imu.monotonic_stamps);
        let bad = |t: &str| Expect::parse(t).unwrap_err().to_string();
        assert!(bad("[topics.\"/a\"]\nrate = -1").contains("not a rate"));
        assert!(bad("[topics.\"/a\"]\nrate_tolerance = 0.2").contains("without a rate"));
        assert!(bad("[topics.\"/a\"]\nmax_gap = \"soon\"").contains("max_gap"));
        assert!(bad("[recording]\nmin_durration = \"1s\"").contains("unknown field"));
    }
}
