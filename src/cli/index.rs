//! `logsql index SOURCE... --catalog CAT`: the run is
//! [`logsql::ops::index`]; this module shows its progress (a bar on a
//! terminal's stderr) and prints what it changed, as text or JSON.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use logsql::ops::index::{IndexOptions, IndexProgress, IndexReport};
use serde_json::json;

use super::App;
use super::args::{Args, Format, IndexArgs};
use super::error::{CliError, CliResult};
use super::logger;

/// Runs `logsql index`.
pub fn run(app: &App, args: &Args, index: &IndexArgs, out: &mut dyn Write) -> CliResult {
    let Some(catalog) = &args.catalog else {
        return Err(CliError::msg(
            "logsql index needs --catalog CAT: the directory or object-store prefix to write the catalog to",
        ));
    };
    let options = IndexOptions {
        sources: index.sources.clone(),
        catalog: catalog.clone(),
        dry_run: index.dry_run,
        device_key: index.device_key.clone(),
    };
    let bar = Bar::new();
    let report = app
        .rt
        .block_on(logsql::ops::index::index(&app.ctx, &options, &|p| {
            bar.show(p)
        }));
    bar.finish();
    let report = report?;
    let text = match args.format {
        Format::Table => text(&report),
        Format::Json => format!("{:#}\n", to_json(&report)),
        Format::Ndjson => format!("{}\n", to_json(&report)),
        Format::Csv | Format::Junit => {
            return Err(CliError::msg(
                "index prints text (--format table), json or ndjson, not csv or junit",
            ));
        }
    };
    out.write_all(text.as_bytes())
        .map_err(|e| CliError::io("writing output", e))
}

/// The progress bar on stderr, when it is a terminal.
struct Bar(Mutex<Option<ProgressBar>>);

impl Bar {
    fn new() -> Self {
        Self(Mutex::new(None))
    }

    fn show(&self, progress: IndexProgress) {
        let mut bar = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match progress {
            IndexProgress::Listed { to_read, .. } => {
                if std::io::stderr().is_terminal() && to_read > 0 && bar.is_none() {
                    let b =
                        ProgressBar::with_draw_target(Some(to_read), ProgressDrawTarget::stderr());
                    let template = "{bar:40.cyan/blue} {human_pos}/{human_len} recordings ({per_sec}, eta {eta})";
                    if let Ok(style) = ProgressStyle::with_template(template) {
                        b.set_style(style);
                    }
                    b.enable_steady_tick(Duration::from_millis(120));
                    logger::set_progress(Some(b.clone()));
                    *bar = Some(b);
                }
            }
            IndexProgress::Read { .. } => {
                if let Some(b) = bar.as_ref() {
                    b.inc(1);
                }
            }
            IndexProgress::Writing => {
                if let Some(b) = bar.as_ref() {
                    b.set_message("writing the catalog");
                }
            }
        }
    }

    fn finish(&self) {
        if let Some(b) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            b.finish_and_clear();
            logger::set_progress(None);
        }
    }
}

/// The report as text: counts, then each recording added, changed or
/// removed (with --dry-run), and each that could not be read or is damaged.
fn text(r: &IndexReport) -> String {
    let mut s = String::new();
    let head = if r.dry_run {
        format!("{} (dry run: nothing written)", r.catalog)
    } else {
        match r.generation {
            Some(g) => format!("{}: generation {g}", r.catalog),
            None => format!("{}: unchanged", r.catalog),
        }
    };
    s.push_str(&format!("{head}, {} recordings\n", r.recordings));
    let would = if r.dry_run { "to " } else { "" };
    s.push_str(&format!("  {would}add     {}\n", r.added.len()));
    s.push_str(&format!("  {would}change  {}\n", r.changed.len()));
    s.push_str(&format!("  {would}remove  {}\n", r.removed.len()));
    s.push_str(&format!("  unchanged {}\n", r.unchanged));
    if r.dry_run {
        for (sign, list) in [("+", &r.added), ("~", &r.changed), ("-", &r.removed)] {
            for location in list {
                s.push_str(&format!("{sign} {location}\n"));
            }
        }
    }
    for (location, why) in &r.unreadable {
        s.push_str(&format!("unreadable {location}: {why}\n"));
    }
    for (location, why) in &r.damaged {
        s.push_str(&format!("damaged {location}: {why}\n"));
    }
    s
}

fn to_json(r: &IndexReport) -> serde_json::Value {
    let pairs = |v: &[(String, String)]| {
        v.iter()
            .map(|(l, why)| json!({"location": l, "reason": why}))
            .collect::<Vec<_>>()
    };
    json!({
        "catalog": r.catalog,
        "dry_run": r.dry_run,
        "generation": r.generation,
        "recordings": r.recordings,
        "added": r.added,
        "changed": r.changed,
        "removed": r.removed,
        "unchanged": r.unchanged,
        "unreadable": pairs(&r.unreadable),
        "damaged": pairs(&r.damaged),
    })
}
