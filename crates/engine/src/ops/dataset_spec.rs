//! The spec of `logsql dataset SPEC.toml` (a LeRobot dataset from a small
//! spec instead of SQL): parsed from TOML and compiled to the query of
//! `COPY (...) TO 'dir' STORED AS LEROBOT`.
//!
//! The spec names the recordings (`input`: a file, directory, glob or URL,
//! or a list of them; one episode per recording), where episodes are cut
//! (`[episodes]`: at gaps, or where a SQL condition becomes true), `fps`,
//! the features (a topic and one field, or several fields, which become the
//! feature's `names`), the cameras (topics) and the task text (constant,
//! from a topic, or from the recording's metadata); it becomes `time_grid`
//! with one `ASOF JOIN` per topic, window functions for the cuts
//! ([`Spec::copy_sql`], [`Spec::select`]).
//!
//! ```toml
//! input = ["runs/", "more/*.mcap"]
//! fps = 30
//! robot_type = "so100"
//! task = "pick the cube"      # or { topic = "/task", field = "data" }
//!                             # or { metadata = "episode", key = "task" }
//! images = "video"            # or "parquet"
//!
//! [episodes]
//! split_on_gap = "2s"
//! split_when = "\"observation.state\"[1] > 0.5"
//!
//! [features]
//! "observation.state" = { topic = "/joint_states", field = "position" }
//! "action" = { topic = "/cmd", fields = ["linear.x", "angular.z"] }
//!
//! [cameras]
//! "observation.images.front" = "/camera/front"
//!
//! [moments]                   # only the moments, one episode each
//! topic = "/joint_states"
//! when = "position[1] > 0.5"  # as intervals() takes it
//! max_gap = "200 ms"          # the rest optional
//! min_duration = "100 ms"
//! before = "1s"
//! after = "1s"
//! ```
//!
//! With `[moments]`, each moment `intervals(input, topic, when, max_gap,
//! min_duration)` gives, padded by `before` and `after` (padded windows of a
//! recording that overlap merge, as `logsql clips` merges them), is one
//! episode of the frames in it; `[episodes]` cuts may split it further.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use super::sql_literal;
use super::units::parse_duration;

/// A spec that cannot be used: the spec file's path, then what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// A feature's fields in the spec.
#[derive(Debug, Clone, PartialEq)]
enum Fields {
    /// `field = "a.b"`.
    One(String),
    /// `fields = ["a", "b"]`.
    Named(Vec<String>),
}

/// Where the task text comes from.
#[derive(Debug, Clone, PartialEq)]
enum Task {
    /// `task = "text"`: the same for every frame.
    Text(String),
    /// `task = { topic = "/task", field = "data" }`: the latest message's
    /// field at each frame (ASOF-joined like a feature).
    Topic { topic: String, field: String },
    /// `task = { metadata = "name", key = "key" }`: the value of `key` in
    /// the recording's metadata record `name`.
    Metadata { name: String, key: String },
}

/// A parsed spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    inputs: Vec<String>,
    fps: u32,
    robot_type: Option<String>,
    task: Option<Task>,
    images: Option<String>,
    /// (key, topic, field paths: `field` is one, the field itself; `fields`
    /// a struct of them, whose names become the feature's `names`).
    features: Vec<(String, String, Fields)>,
    /// (key, topic).
    cameras: Vec<(String, String)>,
    /// `[episodes] split_on_gap`: nanoseconds.
    split_on_gap: Option<u64>,
    /// `[episodes] split_when`: a SQL condition on a frame's row.
    split_when: Option<String>,
    /// `[moments]`: only the frames of moments, one episode each.
    moments: Option<Moments>,
}

/// The `[moments]` section: which stretches of each recording are episodes.
#[derive(Debug, Clone, PartialEq)]
struct Moments {
    topic: String,
    when: String,
    /// `intervals`' own arguments, as given (it parses them).
    max_gap: String,
    min_duration: String,
    /// Padding, nanoseconds.
    before: i64,
    after: i64,
}

impl Moments {
    /// The section, checked.
    fn parse(path: &Path, table: &toml::Value) -> Result<Self, SpecError> {
        let t = table
            .as_table()
            .ok_or_else(|| spec_err(path, "[moments] must be a table"))?;
        known_keys(
            path,
            " in [moments]",
            t,
            &[
                "topic",
                "when",
                "max_gap",
                "min_duration",
                "before",
                "after",
            ],
        )?;
        let text = |key: &str| -> Result<Option<String>, SpecError> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
                Some(v) => Err(spec_err(
                    path,
                    format!("[moments] {key} must be non-empty text, not {v}"),
                )),
            }
        };
        let duration = |key: &str| -> Result<(String, i64), SpecError> {
            let Some(s) = text(key)? else {
                return Ok(("0 s".to_string(), 0));
            };
            let d =
                parse_duration(&s).map_err(|e| spec_err(path, format!("[moments] {key}: {e}")))?;
            let ns = i64::try_from(d.as_nanos())
                .map_err(|_| spec_err(path, format!("[moments] {key}: too long")))?;
            Ok((s, ns))
        };
        let need = |key: &str, what: &str| -> Result<String, SpecError> {
            text(key)?.ok_or_else(|| spec_err(path, format!("[moments] needs {key}: {what}")))
        };
        Ok(Self {
            topic: need("topic", "the topic the condition judges")?,
            when: need(
                "when",
                "a SQL condition over the topic's fields, as intervals() takes it",
            )?,
            max_gap: duration("max_gap")?.0,
            min_duration: duration("min_duration")?.0,
            before: duration("before")?.1,
            after: duration("after")?.1,
        })
    }

    /// The padded, merged windows of `input`'s moments: `file`, `lo`, `hi`
    /// (nanoseconds, both included), disjoint within a recording.
    fn windows(&self, input: &str) -> String {
        format!(
            "SELECT file, min(lo) AS lo, max(hi) AS hi FROM (\n\
             SELECT file, lo, hi, sum(opens) OVER (PARTITION BY file ORDER BY lo ROWS UNBOUNDED PRECEDING) AS k FROM (\n\
             SELECT file, lo, hi, CASE WHEN lo <= max(hi) OVER (PARTITION BY file ORDER BY lo ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS opens FROM (\n\
             SELECT file, CAST(start_time AS BIGINT) - {before} AS lo, CAST(end_time AS BIGINT) + {after} AS hi\n\
             FROM intervals({input}, {topic}, {when}, {gap}, {min})))) GROUP BY file, k",
            before = self.before,
            after = self.after,
            topic = sql_literal(&self.topic),
            when = sql_literal(&self.when),
            gap = sql_literal(&self.max_gap),
            min = sql_literal(&self.min_duration),
        )
    }
}

fn spec_err(path: &Path, m: impl std::fmt::Display) -> SpecError {
    SpecError(format!("{}: {m}", path.display()))
}

/// Fails on a key of `table` (named `what`) not in `known`.
fn known_keys(
    path: &Path,
    what: &str,
    table: &toml::Table,
    known: &[&str],
) -> Result<(), SpecError> {
    if let Some(k) = table.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(spec_err(
            path,
            format!("unknown key '{k}'{what} (known: {})", known.join(", ")),
        ));
    }
    Ok(())
}

impl Spec {
    /// Parses the TOML text of `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, SpecError> {
        let table: toml::Table = text.parse().map_err(|e| spec_err(path, e))?;
        known_keys(
            path,
            "",
            &table,
            &[
                "input",
                "fps",
                "robot_type",
                "task",
                "images",
                "episodes",
                "features",
                "cameras",
                "moments",
            ],
        )?;
        let text_of = |key: &str| -> Result<Option<String>, SpecError> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(spec_err(path, format!("{key} must be text, not {v}"))),
            }
        };
        let bad_input = || {
            spec_err(
                path,
                "input (the recordings: a file, directory, glob or URL, or a list of them) is missing",
            )
        };
        let inputs = match table.get("input") {
            Some(toml::Value::String(s)) => vec![s.clone()],
            Some(toml::Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| spec_err(path, "input: every entry must be text"))?,
            Some(v) => {
                return Err(spec_err(
                    path,
                    format!("input must be text or a list of text, not {v}"),
                ));
            }
            None => return Err(bad_input()),
        };
        let fps = match table.get("fps") {
            Some(toml::Value::Integer(n)) if (1..=100_000).contains(n) => *n as u32,
            Some(v) => {
                return Err(spec_err(
                    path,
                    format!("fps must be a whole number of frames per second, not {v}"),
                ));
            }
            None => return Err(spec_err(path, "fps is missing")),
        };
        let task = match table.get("task") {
            None => None,
            Some(toml::Value::String(s)) => Some(Task::Text(s.clone())),
            Some(toml::Value::Table(t)) => {
                known_keys(path, " in task", t, &["topic", "field", "metadata", "key"])?;
                let get = |k: &str| t.get(k).and_then(|v| v.as_str()).map(str::to_string);
                match (get("topic"), get("field"), get("metadata"), get("key")) {
                    (Some(topic), Some(field), None, None) => Some(Task::Topic { topic, field }),
                    (None, None, Some(name), Some(key)) => Some(Task::Metadata { name, key }),
                    _ => {
                        return Err(spec_err(
                            path,
                            "task must be text, { topic = \"/task\", field = \"data\" } or { metadata = \"name\", key = \"key\" }",
                        ));
                    }
                }
            }
            Some(v) => return Err(spec_err(path, format!("task must be text, not {v}"))),
        };
        let (mut split_on_gap, mut split_when) = (None, None);
        if let Some(e) = table.get("episodes") {
            let e = e
                .as_table()
                .ok_or_else(|| spec_err(path, "[episodes] must be a table"))?;
            known_keys(path, " in [episodes]", e, &["split_on_gap", "split_when"])?;
            if let Some(v) = e.get("split_on_gap") {
                let text = v.as_str().ok_or_else(|| {
                    spec_err(path, "split_on_gap must be a duration such as \"2s\"")
                })?;
                let d = parse_duration(text)
                    .map_err(|e| spec_err(path, format!("split_on_gap: {e}")))?;
                if d.is_zero() {
                    return Err(spec_err(path, "split_on_gap must be above 0"));
                }
                split_on_gap = Some(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            }
            if let Some(v) = e.get("split_when") {
                let text = v
                    .as_str()
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| spec_err(path, "split_when must be a SQL condition (text)"))?;
                split_when = Some(text.to_string());
            }
        }
        let mut features = Vec::new();
        if let Some(f) = table.get("features") {
            let f = f
                .as_table()
                .ok_or_else(|| spec_err(path, "[features] must be a table"))?;
            for (key, v) in f {
                let t = v.as_table().ok_or_else(|| {
                    spec_err(
                        path,
                        format!("feature \"{key}\" must be {{ topic = \"...\", field = \"...\" }}"),
                    )
                })?;
                let topic = t
                    .get("topic")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| spec_err(path, format!("feature \"{key}\" needs a topic")))?;
                let fields = match (t.get("field"), t.get("fields")) {
                    (Some(toml::Value::String(f)), None) => Fields::One(f.clone()),
                    (None, Some(toml::Value::Array(a))) if !a.is_empty() => Fields::Named(
                        a.iter()
                            .map(|v| v.as_str().map(str::to_string))
                            .collect::<Option<_>>()
                            .ok_or_else(|| {
                                spec_err(path, format!("feature \"{key}\": fields must be text"))
                            })?,
                    ),
                    _ => {
                        return Err(spec_err(
                            path,
                            format!(
                                "feature \"{key}\" needs field = \"name\" or fields = [\"a\", \"b\"] (one of them)"
                            ),
                        ));
                    }
                };
                features.push((key.clone(), topic.to_string(), fields));
            }
        }
        let mut cameras = Vec::new();
        if let Some(c) = table.get("cameras") {
            let c = c
                .as_table()
                .ok_or_else(|| spec_err(path, "[cameras] must be a table"))?;
            for (key, v) in c {
                let topic = v.as_str().ok_or_else(|| {
                    spec_err(path, format!("camera \"{key}\" must be a topic name"))
                })?;
                cameras.push((key.clone(), topic.to_string()));
            }
        }
        if features.is_empty() && cameras.is_empty() {
            return Err(spec_err(
                path,
                "no [features] and no [cameras]: nothing to write",
            ));
        }
        Ok(Self {
            inputs,
            fps,
            robot_type: text_of("robot_type")?,
            task,
            images: text_of("images")?,
            features,
            cameras,
            split_on_gap,
            split_when,
            moments: table
                .get("moments")
                .map(|m| Moments::parse(path, m))
                .transpose()?,
        })
    }

    /// Whether the rows need numbering into episodes in SQL (several inputs
    /// or cuts), rather than `time_grid`'s one episode per recording.
    fn numbered(&self) -> bool {
        self.inputs.len() > 1
            || self.split_on_gap.is_some()
            || self.split_when.is_some()
            || self.moments.is_some()
    }

    /// The rows of input `n` (`input`): one per frame of `time_grid`, with a
    /// join per topic. Numbered (see [`Self::numbered`]), they carry the
    /// input's number and the recording's `episode_index` as `input` and
    /// `recording`, and (with `split_on_gap`) as `last_message` the time
    /// (nanoseconds) of the stalest of the feature and camera topics' latest
    /// messages: a frame is that far from a gap.
    fn frames(&self, n: usize, input: &str) -> String {
        let input = sql_literal(input);
        // One join per distinct topic.
        let mut topics: BTreeMap<(String, bool), String> = BTreeMap::new();
        let mut alias = |topic: &str, image: bool| -> String {
            let n = topics.len();
            topics
                .entry((topic.to_string(), image))
                .or_insert_with(|| format!("t{n}"))
                .clone()
        };
        let mut columns = if self.numbered() {
            vec![
                format!("{n} AS input"),
                "g.episode_index AS recording".to_string(),
            ]
        } else {
            vec!["g.episode_index".to_string()]
        };
        columns.push("g.log_time".into());
        columns.push("g.file".into());
        if self.moments.is_some() {
            columns.push("g.moment".into());
        }
        let mut watched = Vec::new();
        for (key, topic, fields) in &self.features {
            let a = alias(topic, false);
            let value = match fields {
                Fields::One(f) => field_expr(&a, f),
                Fields::Named(fs) => {
                    let parts: Vec<String> = fs
                        .iter()
                        .map(|f| format!("{}, {}", sql_literal(f), field_expr(&a, f)))
                        .collect();
                    format!("named_struct({})", parts.join(", "))
                }
            };
            columns.push(format!("{value} AS {}", ident(key)));
            watched.push(a);
        }
        for (key, topic) in &self.cameras {
            let a = alias(topic, true);
            columns.push(format!("{a}.image AS {}", ident(key)));
            watched.push(a);
        }
        let mut metadata_join = None;
        match &self.task {
            Some(Task::Text(task)) => columns.push(format!("{} AS task", sql_literal(task))),
            Some(Task::Topic { topic, field }) => {
                let a = alias(topic, false);
                columns.push(format!("{} AS task", field_expr(&a, field)));
            }
            Some(Task::Metadata { name, key }) => {
                columns.push("m.task".into());
                metadata_join = Some(format!(
                    "\nLEFT JOIN (SELECT file, max(metadata[{}]) AS task FROM metadata({input}) WHERE name = {} GROUP BY file) m ON g.file = m.file",
                    sql_literal(key),
                    sql_literal(name)
                ));
            }
            None => {}
        }
        if self.split_on_gap.is_some() {
            watched.sort();
            watched.dedup();
            let times: Vec<String> = watched
                .iter()
                .map(|a| format!("CAST({a}.log_time AS BIGINT)"))
                .collect();
            let latest = match times.as_slice() {
                [one] => one.clone(),
                _ => format!("least({})", times.join(", ")),
            };
            columns.push(format!("{latest} AS last_message"));
        }
        let mut joins: Vec<(String, String, bool)> = topics
            .into_iter()
            .map(|((topic, image), a)| (a, topic, image))
            .collect();
        joins.sort_by_key(|(a, _, _)| a[1..].parse::<usize>().unwrap_or(0));
        let grid = match &self.moments {
            None => format!("time_grid({input}, {})", self.fps),
            // Only the frames of the windows, each with its window's start;
            // the few windows are the join's build side, the grid streams
            // through it in its order.
            Some(m) => format!(
                "(SELECT f.episode_index, f.log_time, f.file, w.lo AS moment\n\
                 FROM ({windows}) w\n\
                 JOIN time_grid({input}, {fps}) f ON f.file = w.file \
                 AND CAST(f.log_time AS BIGINT) BETWEEN w.lo AND w.hi)",
                fps = self.fps,
                windows = m.windows(&input),
            ),
        };
        let mut sql = format!("SELECT {}\nFROM {grid} g", columns.join(",\n       "));
        for (a, topic, image) in joins {
            // Images unchecked: one that does not decode reaches the writer,
            // which names it and (skip_bad_episodes) skips its episode.
            let (function, mode) = match image {
                true => ("read_images", ", 'unchecked'"),
                false => ("read_topic", ""),
            };
            sql.push_str(&format!(
                "\nASOF JOIN {function}({input}, {}{mode}) {a} MATCH_CONDITION (g.log_time >= {a}.log_time) ON g.file = {a}.file",
                sql_literal(&topic)
            ));
        }
        if let Some(j) = metadata_join {
            sql.push_str(&j);
        }
        sql
    }

    /// The `SELECT` giving one row per frame, grouped by episode in time
    /// order.
    pub fn select(&self) -> String {
        if !self.numbered() {
            return format!(
                "{}\nORDER BY g.episode_index, g.log_time",
                self.frames(0, &self.inputs[0])
            );
        }
        let branches: Vec<String> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(n, input)| self.frames(n, input))
            .collect();
        let mut sql = format!("WITH frames AS (\n{}\n)", branches.join("\nUNION ALL\n"));
        // Every window runs over the frames in the order they come in
        // (input, recording, log_time), without PARTITION BY, so none needs a
        // sort: a sort would hold every frame, images included. `lag` over a
        // recording's first frame sees the previous recording's last, hence
        // the `same` guard.
        let same = "lag(input) OVER w = input AND lag(recording) OVER w = recording";
        // A frame starts an episode where the condition becomes true, or
        // after a gap: where `last_message` jumps by more than the gap, or
        // where the frame before was left out; frames further than the gap
        // from `last_message` are left out.
        let mut cuts = Vec::new();
        if self.moments.is_some() {
            cuts.push("moment <> lag(moment) OVER w".to_string());
        }
        if let Some(c) = &self.split_when {
            cuts.push(format!("({c}) AND NOT coalesce(lag({c}) OVER w, false)"));
        }
        let mut keep = String::new();
        if let Some(gap) = self.split_on_gap {
            cuts.push(format!("last_message - lag(last_message) OVER w > {gap}"));
            cuts.push(format!(
                "lag(CAST(log_time AS BIGINT) - last_message) OVER w > {gap}"
            ));
            keep = format!(
                "\nWHERE last_message IS NULL OR CAST(log_time AS BIGINT) - last_message <= {gap}"
            );
        }
        let cut = match cuts.is_empty() {
            true => "false".to_string(),
            false => format!(
                "coalesce({same}\n        AND ({}), false)",
                cuts.join("\n             OR ")
            ),
        };
        sql.push_str(&format!(
            ",\ncuts AS (\nSELECT *, {cut} AS cut\nFROM frames\nWINDOW w AS (ORDER BY input, recording, log_time)\n),\n\
             kept AS (\nSELECT *, cut OR NOT coalesce({same}, false) AS starts\nFROM cuts{keep}\n\
             WINDOW w AS (ORDER BY input, recording, log_time)\n)"
        ));
        // The episode: the frames starting one so far, counted in an
        // unsigned sum (which DataFusion knows never decreases).
        let mut columns = vec![
            "CAST(sum(CAST(starts AS BIGINT UNSIGNED)) OVER (ORDER BY input, recording, log_time ROWS UNBOUNDED PRECEDING) AS BIGINT) - 1 AS episode_index".to_string(),
            "log_time".into(),
            "file".into(),
        ];
        columns.extend(self.features.iter().map(|(k, _, _)| ident(k)));
        columns.extend(self.cameras.iter().map(|(k, _)| ident(k)));
        if self.task.is_some() {
            columns.push("task".into());
        }
        sql.push_str(&format!(
            "\nSELECT {}\nFROM kept\nORDER BY input, recording, log_time",
            columns.join(",\n       ")
        ));
        sql
    }

    /// The `OPTIONS` of the `COPY`, as (key, value).
    pub fn options(&self, skip_bad_episodes: bool) -> Vec<(String, String)> {
        let mut o = vec![("fps".to_string(), self.fps.to_string())];
        if let Some(r) = &self.robot_type {
            o.push(("robot_type".into(), r.clone()));
        }
        if let Some(i) = &self.images {
            o.push(("images".into(), i.clone()));
        }
        if skip_bad_episodes {
            o.push(("skip_bad_episodes".into(), "true".into()));
        }
        if self.numbered() {
            // In (input, recording, log_time) order, episodes numbered along
            // it: grouped by episode in time order, which the writer checks.
            o.push(("presorted".into(), "true".into()));
        }
        o
    }

    /// The whole statement writing the dataset to `out`.
    pub fn copy_sql(&self, out: &str, skip_bad_episodes: bool) -> String {
        let options: Vec<String> = self
            .options(skip_bad_episodes)
            .iter()
            .map(|(k, v)| format!("{k} {}", sql_literal(v)))
            .collect();
        format!(
            "COPY (\n{}\n) TO {} STORED AS LEROBOT OPTIONS ({})",
            self.select(),
            sql_literal(out),
            options.join(", ")
        )
    }

    /// The frames of every input's grid (the progress bar's length); with
    /// `[moments]`, those of the moments' windows.
    pub fn count_sql(&self) -> String {
        let grids: Vec<String> = self
            .inputs
            .iter()
            .map(|i| {
                let (input, fps) = (sql_literal(i), self.fps);
                match &self.moments {
                    None => format!("SELECT 1 FROM time_grid({input}, {fps})"),
                    Some(m) => format!(
                        "SELECT 1 FROM ({}) w JOIN time_grid({input}, {fps}) f ON f.file = w.file \
                         AND CAST(f.log_time AS BIGINT) BETWEEN w.lo AND w.hi",
                        m.windows(&input)
                    ),
                }
            })
            .collect();
        format!("SELECT count(*) FROM ({})", grids.join(" UNION ALL "))
    }

    /// `[episodes] split_when`, the SQL condition that starts an episode.
    pub fn split_when(&self) -> Option<&str> {
        self.split_when.as_deref()
    }

    /// The same spec without `[episodes] split_when`.
    pub fn without_split_when(&self) -> Self {
        Spec {
            split_when: None,
            ..self.clone()
        }
    }

    /// `message` with each feature and camera it names followed by its
    /// topic (the writer knows the columns, the spec their topics).
    pub fn with_topics(&self, message: &str) -> String {
        let mut m = message.to_string();
        for (key, topic, fields) in &self.features {
            let field = match fields {
                Fields::One(f) => f.clone(),
                Fields::Named(fs) => fs.join(", "),
            };
            let named = format!("feature \"{key}\"");
            m = m.replace(&named, &format!("{named} (topic {topic}, field {field})"));
        }
        for (key, topic) in &self.cameras {
            let named = format!("camera \"{key}\"");
            m = m.replace(&named, &format!("{named} (topic {topic})"));
        }
        m
    }
}

/// A double-quoted SQL identifier.
fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// `alias."a"['b']['c']` for the field path `a.b.c`.
fn field_expr(alias: &str, path: &str) -> String {
    let mut parts = path.split('.');
    let mut e = format!("{alias}.{}", ident(parts.next().unwrap_or(path)));
    for p in parts {
        e.push_str(&format!("[{}]", sql_literal(p)));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_becomes_one_join_per_topic() {
        let spec = Spec::parse(
            Path::new("s.toml"),
            r#"
input = "runs/"
fps = 30
task = "it's"
[features]
"observation.state" = { topic = "/joint_states", field = "position" }
"action" = { topic = "/cmd", fields = ["linear.x", "angular.z"] }
[cameras]
"observation.images.front" = "/camera/front"
"#,
        )
        .unwrap();
        let sql = spec.copy_sql("out", false);
        assert!(
            sql.contains("t1.\"position\" AS \"observation.state\""),
            "{sql}"
        );
        assert!(
            sql.contains("named_struct('linear.x', t0.\"linear\"['x'], 'angular.z', t0.\"angular\"['z']) AS \"action\""),
            "{sql}"
        );
        assert!(sql.contains("'it''s' AS task"), "{sql}");
        assert!(
            sql.contains("ASOF JOIN read_images('runs/', '/camera/front', 'unchecked') t2"),
            "{sql}"
        );
        assert!(
            sql.ends_with("TO 'out' STORED AS LEROBOT OPTIONS (fps '30')"),
            "{sql}"
        );
        let e =
            Spec::parse(Path::new("s.toml"), "input = 'x'\nfps = 30\nfeatuers = 1").unwrap_err();
        assert!(e.to_string().contains("unknown key 'featuers'"), "{e}");
    }

    #[test]
    fn episodes_inputs_and_tasks_are_checked() {
        let parse = |body: &str| {
            Spec::parse(
                Path::new("s.toml"),
                &format!(
                    "fps = 30\n{body}\n[features]\n\"s\" = {{ topic = \"/j\", field = \"p\" }}\n"
                ),
            )
        };
        let e = |body: &str| parse(body).unwrap_err().to_string();
        assert!(e("input = 3").contains("input must be text or a list of text"));
        assert!(e("input = ['a', 1]").contains("every entry must be text"));
        assert!(e("input = 'a'\ntask = { topic = '/t' }").contains("task must be text, {"));
        assert!(
            e("input = 'a'\n[episodes]\nsplit_on_gap = 'soon'")
                .contains("'soon' is not a duration")
        );
        assert!(e("input = 'a'\n[episodes]\nsplit_on_gap = '0s'").contains("above 0"));
        assert!(
            e("input = 'a'\n[episodes]\nsplit = '1s'")
                .contains("unknown key 'split' in [episodes]")
        );
        assert!(e("input = 'a'\n[moments]\nwhen = 'x > 1'").contains("[moments] needs topic"));
        assert!(e("input = 'a'\n[moments]\ntopic = '/j'").contains("[moments] needs when"));
        assert!(
            e("input = 'a'\n[moments]\ntopic = '/j'\nwhen = 'x'\nbefore = 'soon'")
                .contains("[moments] before: 'soon' is not a duration")
        );
        assert!(
            e("input = 'a'\n[moments]\ntopic = '/j'\nwhen = 'x'\npad = '1s'")
                .contains("unknown key 'pad' in [moments]")
        );
        let moments = parse(
            "input = 'a'\n[moments]\ntopic = '/j'\nwhen = 'p > 1'\nmax_gap = '1s'\nafter = '2s'",
        )
        .unwrap()
        .select();
        assert!(
            moments.contains("FROM intervals('a', '/j', 'p > 1', '1s', '0 s')"),
            "{moments}"
        );
        assert!(
            moments.contains(
                "CAST(start_time AS BIGINT) - 0 AS lo, CAST(end_time AS BIGINT) + 2000000000 AS hi"
            ),
            "{moments}"
        );
        assert!(
            moments.contains("moment <> lag(moment) OVER w"),
            "{moments}"
        );
        let spec = parse("input = ['a', 'b']\ntask = { metadata = 'ep', key = 'task' }").unwrap();
        let sql = spec.select();
        assert!(sql.contains("FROM time_grid('b', 30) g"), "{sql}");
        assert!(sql.contains("metadata('b') WHERE name = 'ep'"), "{sql}");
        assert!(sql.contains("       m.task\n"), "{sql}");
        assert_eq!(
            spec.count_sql(),
            "SELECT count(*) FROM (SELECT 1 FROM time_grid('a', 30) UNION ALL SELECT 1 FROM time_grid('b', 30))"
        );
        let one = parse("input = 'a'\n[episodes]\nsplit_on_gap = '1s'").unwrap();
        assert!(
            one.select()
                .contains("CAST(t0.log_time AS BIGINT) AS last_message"),
            "one topic: no least()"
        );
    }
}
