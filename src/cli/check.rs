//! `logsql check SOURCE... --expect EXPECT.toml`: each recording against the
//! expectations ([`logsql::ops::check`]), printed as it is checked (text,
//! JSON, NDJSON) or at the end (JUnit XML, one test suite per recording, one
//! test case per check). The worst verdict is the exit status: 0 pass, 1
//! fail, 2 unreadable.

use std::io::Write;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use logsql::LogsqlOptions;
use logsql::ops::check::{Expect, Outcome, Report, Verdict, check, recordings};
use quick_xml::escape::escape;
use serde_json::{Value, json};

use super::App;
use super::args::{CheckArgs, Format};
use super::error::{CliError, CliResult};

/// Checks every recording and prints the reports; fails with the exit
/// status when one does not pass.
pub fn run(app: &App, args: &CheckArgs, format: Format, out: &mut dyn Write) -> CliResult {
    if format == Format::Csv {
        return Err(CliError::msg(
            "check prints text (--format table), json, ndjson or junit, not csv",
        ));
    }
    let path = args.expect.display().to_string();
    let text = std::fs::read_to_string(&args.expect).map_err(|e| CliError::io(&path, e))?;
    let expect = Expect::parse(&text).map_err(|e| CliError::msg(format!("{path}: {e}")))?;
    let state = app.ctx.state();
    let limits = LogsqlOptions::from_config(state.config_options()).limits();
    let sources = if args.sources.is_empty() {
        catalog_recordings(app)?
    } else {
        args.sources.clone()
    };
    let files = app
        .rt
        .block_on(recordings(&state, &sources))
        .map_err(|e| CliError::msg(e.to_string()))?;
    let mut worst = Verdict::Pass;
    let mut reports = Vec::new();
    let mut counts = [0usize; 3];
    for file in files {
        let report = app.rt.block_on(check(&state, file, &expect, limits));
        let verdict = report.verdict();
        worst = worst.max(verdict);
        counts[verdict.exit_status() as usize] += 1;
        match format {
            Format::Table => write(out, &text_report(&report))?,
            Format::Ndjson => write(out, &format!("{}\n", to_json(&report)))?,
            _ => reports.push(report),
        }
    }
    match format {
        Format::Json => {
            let all: Vec<Value> = reports.iter().map(to_json).collect();
            write(out, &format!("{:#}\n", Value::Array(all)))?;
        }
        Format::Junit => write(out, &junit(&reports))?,
        Format::Table => {
            let [pass, fail, unreadable] = counts;
            let n = pass + fail + unreadable;
            let s = if n == 1 { "" } else { "s" };
            write(
                out,
                &format!(
                    "{n} recording{s}: {pass} passed, {fail} failed, {unreadable} unreadable\n"
                ),
            )?;
        }
        _ => {}
    }
    if worst == Verdict::Pass {
        Ok(())
    } else {
        out.flush().map_err(|e| CliError::io("writing output", e))?;
        Err(CliError::Status(worst.exit_status()))
    }
}

/// Every recording of the session's catalog (`--catalog`), by location.
fn catalog_recordings(app: &App) -> CliResult<Vec<String>> {
    let configured = !LogsqlOptions::from_config(app.ctx.state().config_options())
        .catalog
        .is_empty();
    if !configured {
        return Err(CliError::msg(
            "check needs recordings: SOURCE... (files, directories, globs, URLs) or --catalog CAT",
        ));
    }
    let batches = app.rt.block_on(async {
        app.ctx
            .sql("SELECT location FROM recordings ORDER BY location")
            .await?
            .collect()
            .await
    })?;
    let mut out = Vec::new();
    for b in batches {
        let col = cast(b.column(0), &DataType::Utf8)?;
        let col = col.as_string::<i32>();
        out.extend(col.iter().flatten().map(str::to_string));
    }
    if out.is_empty() {
        return Err(CliError::msg("the catalog holds no recording"));
    }
    Ok(out)
}

fn write(out: &mut dyn Write, s: &str) -> CliResult {
    out.write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| CliError::io("writing output", e))
}

/// A check's name with its topic: `rate /imu`.
fn label(o: &Outcome) -> String {
    match &o.topic {
        Some(t) => format!("{} {t}", o.check),
        None => o.check.to_string(),
    }
}

/// The text report of one recording: its verdict, then each failed check.
pub fn text_report(r: &Report) -> String {
    if let Some(e) = &r.unreadable {
        return format!("UNREADABLE {}: {e}\n", r.file);
    }
    let failed: Vec<&Outcome> = r.outcomes.iter().filter(|o| !o.passed).collect();
    let n = r.outcomes.len();
    let mut s = if failed.is_empty() {
        format!("PASS {} ({n} checks)\n", r.file)
    } else {
        format!("FAIL {} ({} of {n} checks failed)\n", r.file, failed.len())
    };
    for o in failed {
        s.push_str(&format!("  FAIL {}: {}\n", label(o), o.detail));
    }
    s
}

/// One recording as JSON: `file`, `verdict`, `checks` (or `error`).
pub fn to_json(r: &Report) -> Value {
    let checks: Vec<Value> = r
        .outcomes
        .iter()
        .map(|o| {
            json!({
                "check": o.check,
                "topic": o.topic,
                "passed": o.passed,
                "value": o.value,
                "expected": o.expected,
                "detail": if o.passed { Value::Null } else { Value::from(o.detail.clone()) },
            })
        })
        .collect();
    json!({
        "file": r.file,
        "verdict": r.verdict().as_str(),
        "checks": checks,
        "error": r.unreadable,
    })
}

/// JUnit XML: a test suite per recording, a test case per check (a failed
/// check a `<failure>`, an unreadable recording one `<error>` case).
pub fn junit(reports: &[Report]) -> String {
    let mut body = String::new();
    let (mut tests, mut failures, mut errors) = (0, 0, 0);
    for r in reports {
        let file = escape(r.file.as_str());
        if let Some(e) = &r.unreadable {
            tests += 1;
            errors += 1;
            body.push_str(&format!(
                "  <testsuite name=\"{file}\" tests=\"1\" failures=\"0\" errors=\"1\">\n    \
                 <testcase classname=\"{file}\" name=\"read\">\n      \
                 <error message=\"{m}\" type=\"unreadable\">{m}</error>\n    </testcase>\n  </testsuite>\n",
                m = escape(e.as_str())
            ));
            continue;
        }
        let failed = r.outcomes.iter().filter(|o| !o.passed).count();
        tests += r.outcomes.len();
        failures += failed;
        body.push_str(&format!(
            "  <testsuite name=\"{file}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\">\n",
            r.outcomes.len()
        ));
        for o in &r.outcomes {
            let name = escape(label(o));
            if o.passed {
                body.push_str(&format!(
                    "    <testcase classname=\"{file}\" name=\"{name}\"/>\n"
                ));
            } else {
                body.push_str(&format!(
                    "    <testcase classname=\"{file}\" name=\"{name}\">\n      \
                     <failure message=\"{m}\" type=\"{check}\">value: {v}; expected: {x}</failure>\n    </testcase>\n",
                    m = escape(o.detail.as_str()),
                    check = o.check,
                    v = escape(o.value.as_str()),
                    x = escape(o.expected.as_str()),
                ));
            }
        }
        body.push_str("  </testsuite>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"logsql check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n\
         {body}</testsuites>\n"
    )
}
