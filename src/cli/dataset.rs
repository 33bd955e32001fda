//! `logsql dataset SPEC.toml -o OUT_DIR [--print-sql]`: a LeRobot dataset
//! from a small spec instead of SQL.
//!
//! The spec names the recordings (`input`: a file, directory, glob or URL;
//! one episode per recording), `fps`, the features (a topic and one field,
//! or several fields, which become the feature's `names`), the cameras
//! (topics) and the task text; it becomes the query of
//! `COPY (...) TO 'dir' STORED AS LEROBOT` (`time_grid` with one `ASOF JOIN`
//! per topic), which `--print-sql` prints. The dataset is written through
//! the same writer, with a progress bar of episodes and frames.
//!
//! ```toml
//! input = "runs/"
//! fps = 30
//! robot_type = "so100"
//! task = "pick the cube"
//! images = "video"            # or "parquet"
//!
//! [features]
//! "observation.state" = { topic = "/joint_states", field = "position" }
//! "action" = { topic = "/cmd", fields = ["linear.x", "angular.z"] }
//!
//! [cameras]
//! "observation.images.front" = "/camera/front"
//! ```

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::DatasetArgs;
use super::error::{CliError, CliResult};
use super::{App, logger, quote};
use logsql::datasource::lerobot::{LeRobotOptions, write_dataset};

/// A feature's fields in the spec.
#[derive(Debug, Clone, PartialEq)]
enum Fields {
    /// `field = "a.b"`.
    One(String),
    /// `fields = ["a", "b"]`.
    Named(Vec<String>),
}

/// A parsed spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    input: String,
    fps: u32,
    robot_type: Option<String>,
    task: Option<String>,
    images: Option<String>,
    /// (key, topic, field paths: `field` is one, the field itself; `fields`
    /// a struct of them, whose names become the feature's `names`).
    features: Vec<(String, String, Fields)>,
    /// (key, topic).
    cameras: Vec<(String, String)>,
}

fn spec_err(path: &Path, m: impl std::fmt::Display) -> CliError {
    CliError::msg(format!("{}: {m}", path.display()))
}

impl Spec {
    /// Parses the TOML text of `path`.
    pub fn parse(path: &Path, text: &str) -> CliResult<Self> {
        let table: toml::Table = text.parse().map_err(|e| spec_err(path, e))?;
        let known = [
            "input",
            "fps",
            "robot_type",
            "task",
            "images",
            "features",
            "cameras",
        ];
        if let Some(k) = table.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(spec_err(
                path,
                format!("unknown key '{k}' (known: {})", known.join(", ")),
            ));
        }
        let text_of = |key: &str| -> CliResult<Option<String>> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(spec_err(path, format!("{key} must be text, not {v}"))),
            }
        };
        let input = text_of("input")?.ok_or_else(|| {
            spec_err(
                path,
                "input (the recordings: a file, directory or glob) is missing",
            )
        })?;
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
            input,
            fps,
            robot_type: text_of("robot_type")?,
            task: text_of("task")?,
            images: text_of("images")?,
            features,
            cameras,
        })
    }

    /// The `SELECT` giving one row per frame.
    pub fn select(&self) -> String {
        let input = quote(&self.input);
        // One join per distinct topic.
        let mut topics: BTreeMap<(String, bool), String> = BTreeMap::new();
        let mut alias = |topic: &str, image: bool| -> String {
            let n = topics.len();
            topics
                .entry((topic.to_string(), image))
                .or_insert_with(|| format!("t{n}"))
                .clone()
        };
        let mut columns = vec![
            "g.episode_index".to_string(),
            "g.log_time".to_string(),
            "g.file".to_string(),
        ];
        for (key, topic, fields) in &self.features {
            let a = alias(topic, false);
            let value = match fields {
                Fields::One(f) => field_expr(&a, f),
                Fields::Named(fs) => {
                    let parts: Vec<String> = fs
                        .iter()
                        .map(|f| format!("{}, {}", quote(f), field_expr(&a, f)))
                        .collect();
                    format!("named_struct({})", parts.join(", "))
                }
            };
            columns.push(format!("{value} AS {}", ident(key)));
        }
        for (key, topic) in &self.cameras {
            let a = alias(topic, true);
            columns.push(format!("{a}.image AS {}", ident(key)));
        }
        if let Some(task) = &self.task {
            columns.push(format!("{} AS task", quote(task)));
        }
        let mut joins: Vec<(String, String, bool)> = topics
            .into_iter()
            .map(|((topic, image), a)| (a, topic, image))
            .collect();
        joins.sort_by_key(|(a, _, _)| a[1..].parse::<usize>().unwrap_or(0));
        let mut sql = format!(
            "SELECT {}\nFROM time_grid({input}, {}) g",
            columns.join(",\n       "),
            self.fps
        );
        for (a, topic, image) in joins {
            let function = if image { "read_images" } else { "read_topic" };
            sql.push_str(&format!(
                "\nASOF JOIN {function}({input}, {}) {a} MATCH_CONDITION (g.log_time >= {a}.log_time) ON g.file = {a}.file",
                quote(&topic)
            ));
        }
        sql
    }

    /// The `OPTIONS` of the `COPY`, as (key, value).
    fn options(&self) -> Vec<(String, String)> {
        let mut o = vec![("fps".to_string(), self.fps.to_string())];
        if let Some(r) = &self.robot_type {
            o.push(("robot_type".into(), r.clone()));
        }
        if let Some(i) = &self.images {
            o.push(("images".into(), i.clone()));
        }
        o
    }

    /// The whole statement writing the dataset to `out`.
    pub fn copy_sql(&self, out: &str) -> String {
        let options: Vec<String> = self
            .options()
            .iter()
            .map(|(k, v)| format!("{k} {}", quote(v)))
            .collect();
        format!(
            "COPY (\n{}\n) TO {} STORED AS LEROBOT OPTIONS ({})",
            self.select(),
            quote(out),
            options.join(", ")
        )
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
        e.push_str(&format!("[{}]", quote(p)));
    }
    e
}

/// Runs `logsql dataset`.
pub fn run(app: &App, a: &DatasetArgs, out: &mut dyn Write) -> CliResult {
    let text = std::fs::read_to_string(&a.spec)
        .map_err(|e| CliError::io(a.spec.display().to_string(), e))?;
    let spec = Spec::parse(&a.spec, &text)?;
    let target = a.output.display().to_string();
    if a.print_sql {
        writeln!(out, "{};", spec.copy_sql(&target)).map_err(|e| CliError::io("stdout", e))?;
        return Ok(());
    }
    let map = spec.options().into_iter().collect();
    let options = LeRobotOptions::from_map(&map)?;
    // The grid's frames: the bar's length (leading frames without every
    // feature are dropped, so the count ends a little short of it).
    let count_sql = format!(
        "SELECT count(*) FROM time_grid({}, {})",
        quote(&spec.input),
        spec.fps
    );
    let batches = app
        .rt
        .block_on(async { logsql::sql(&app.ctx, &count_sql).await?.collect().await })?;
    let total = batches
        .first()
        .filter(|b| b.num_rows() > 0)
        .map(|b| b.column(0).as_primitive::<Int64Type>().value(0) as u64);
    let bar = progress_bar(total);
    let select = spec.select();
    log::debug!("dataset: {select}");
    let frames = app.rt.block_on(async {
        let stream = logsql::sql(&app.ctx, &select)
            .await?
            .execute_stream()
            .await?;
        let progress = |episodes: usize, frames: u64| {
            if let Some(b) = &bar {
                b.set_position(frames);
                b.set_message(format!("{episodes} episodes"));
            }
        };
        write_dataset(stream, &a.output, options, &progress).await
    });
    if let Some(b) = bar {
        logger::set_progress(None);
        b.finish_and_clear();
    }
    let frames = frames?;
    writeln!(out, "{target}: {frames} frames written").map_err(|e| CliError::io("stdout", e))?;
    Ok(())
}

/// A bar of frames on stderr when it is a terminal.
fn progress_bar(total: Option<u64>) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    let template =
        "{bar:40.cyan/blue} {human_pos}/{human_len} frames, {msg} ({per_sec}, eta {eta})";
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    logger::set_progress(Some(bar.clone()));
    Some(bar)
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
        let sql = spec.copy_sql("out");
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
            sql.contains("ASOF JOIN read_images('runs/', '/camera/front') t2"),
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
}
