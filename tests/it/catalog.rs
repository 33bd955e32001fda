//! The fleet catalog as users meet it: `logsql index` (the CLI, its report
//! as JSON), the catalog's tables through `--catalog` and the table
//! functions, refreshes after recordings were added, rewritten and deleted,
//! and the commit protocol under a SIGKILL and two runs at once.
//!
//! Every fixture folder is indexed, and each recording's catalogued topics
//! must equal what `topics()` reads from the file itself.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use serde_json::Value;

use crate::cli::{logsql, ok, stderr};
use crate::fixtures;
use crate::gen_support::{self, START_NS};
use crate::sql::query;

const FORMATS: [&str; 6] = ["mcap", "rosbag", "ros2", "apollo", "bddf", "carla"];
const HOUR: u64 = 3_600_000_000_000;

/// `logsql index SOURCES --catalog CAT --format json [extra]`, its report.
fn index(sources: &[&Path], cat: &Path, extra: &[&str]) -> Value {
    let mut args: Vec<String> = vec!["index".into()];
    args.extend(sources.iter().map(|s| s.display().to_string()));
    args.extend(["--catalog".into(), cat.display().to_string()]);
    args.extend(["--format".into(), "json".into()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serde_json::from_str(&ok(&args)).expect("index prints JSON")
}

/// A session reading `cat` as its catalog (`SET logsql.catalog`).
async fn session(cat: &Path) -> SessionContext {
    let ctx = logsql::session_context();
    query(&ctx, &format!("SET logsql.catalog = '{}'", cat.display())).await;
    ctx
}

/// `sql`'s result as a table.
async fn table(ctx: &SessionContext, sql: &str) -> String {
    pretty_format_batches(&query(ctx, sql).await)
        .unwrap()
        .to_string()
}

/// A generated recording of 10 s starting `hours` after [`START_NS`].
fn recording(path: &Path, hours: u64, seconds: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let opts = gen_support::Options {
        seconds,
        image_bytes: 1000,
        chunk_size: 65536,
        start: START_NS + hours * HOUR,
        ..Default::default()
    };
    gen_support::generate(path, &opts).unwrap();
}

/// `robot=r{1,2}/day=0{1,2}/run{i}.mcap` for `i` in `range`.
fn fleet(dir: &Path, range: std::ops::Range<u64>) -> Vec<PathBuf> {
    range
        .map(|i| {
            let path = dir.join(format!(
                "robot=r{}/day=0{}/run{i}.mcap",
                i % 2 + 1,
                i / 3 + 1
            ));
            recording(&path, i, 10);
            path
        })
        .collect()
}

fn count(report: &Value, key: &str) -> usize {
    match &report[key] {
        Value::Array(a) => a.len(),
        v => v.as_u64().unwrap_or_else(|| panic!("{key} in {report}")) as usize,
    }
}

#[tokio::test]
async fn every_fixture_is_catalogued_as_topics_reads_it() {
    let Some(dirs) = FORMATS
        .iter()
        .map(|f| fixtures::dir(f))
        .collect::<Option<Vec<PathBuf>>>()
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cat = tmp.path().join("cat");
    let demo = fixtures::test_data("");
    let mut sources: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    sources.push(&demo);
    let report = index(&sources, &cat, &[]);
    assert_eq!(report["generation"], 1, "{report}");
    let ctx = session(&cat).await;
    // Each format is there, read from summaries and indexes.
    let by_format = table(
        &ctx,
        "SELECT format, count(*) > 0 AS some FROM recordings WHERE format IS NOT NULL GROUP BY format ORDER BY format",
    )
    .await;
    for format in ["bag", "bddf", "carla", "mcap", "record", "ros2"] {
        assert!(by_format.contains(&format!("| {format} ")), "{by_format}");
    }
    // An empty file named like a bag is listed with its error.
    let unreadable = table(
        &ctx,
        "SELECT health, health_reason IS NOT NULL AS why FROM recordings WHERE location LIKE '%rosbagjs-empty-file.bag'",
    )
    .await;
    assert!(unreadable.contains("| unreadable | true |"), "{unreadable}");
    // Every readable recording's topics are topics()'s, and its message
    // count their sum.
    let healthy = query(
        &ctx,
        "SELECT location FROM recordings WHERE health IN ('indexed', 'unindexed') ORDER BY location",
    )
    .await;
    let locations: Vec<String> = healthy
        .iter()
        .flat_map(|b| {
            let a = b.column(0).as_string::<i32>();
            (0..a.len())
                .map(|i| a.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        locations.len() > 400,
        "{} healthy recordings",
        locations.len()
    );
    let plain = logsql::session_context();
    for location in &locations {
        let file = location.replace('\'', "''");
        let columns = "topic, message_type, message_encoding, message_count, start_time, end_time";
        let direct = table(
            &plain,
            &format!("SELECT {columns} FROM topics('{file}') ORDER BY topic"),
        )
        .await;
        let catalogued = table(
            &ctx,
            &format!("SELECT {columns} FROM topics WHERE location = '{file}' ORDER BY topic"),
        )
        .await;
        assert_eq!(catalogued, direct, "{location}");
        let sums = table(
            &ctx,
            &format!(
                "SELECT r.message_count = coalesce(sum(t.message_count), 0) AS same \
                 FROM recordings r LEFT JOIN topics t ON t.location = r.location \
                 WHERE r.location = '{file}' GROUP BY r.message_count"
            ),
        )
        .await;
        assert!(sums.contains("| true |"), "{location}: {sums}");
    }
    // The chunk index: each recording's chunks, as chunks() lists them.
    let file = fixtures::test_data("demo.mcap").display().to_string();
    let columns =
        "chunk_index, \"offset\", compressed_size, start_time, end_time, message_count, topics";
    assert_eq!(
        table(
            &ctx,
            &format!(
                "SELECT {columns} FROM catalog_chunks('{}') WHERE location = '{file}' ORDER BY chunk_index",
                cat.display()
            )
        )
        .await,
        table(
            &plain,
            &format!("SELECT {columns} FROM chunks('{file}') ORDER BY chunk_index")
        )
        .await
    );
    // Its facts beyond topics(): metadata, attachments, largest gaps.
    let facts = table(
        &ctx,
        &format!(
            "SELECT metadata['robot'] AS robot, attachments[1]['name'] AS attachment, chunk_count \
             FROM recordings WHERE location = '{file}'"
        ),
    )
    .await;
    assert!(
        facts.contains("| demo-bot-1 | calibration.yaml | 15 "),
        "{facts}"
    );
    let gaps = table(
        &ctx,
        &format!(
            "SELECT topic, largest_gap, rate FROM topics WHERE location = '{file}' ORDER BY topic"
        ),
    )
    .await;
    assert!(
        gaps.contains("| /imu               | 0.005       | 200.0"),
        "{gaps}"
    );
    assert!(
        gaps.contains("| /diagnostics       | 1.0         | 1.0"),
        "{gaps}"
    );
}

#[tokio::test]
async fn a_refresh_reads_only_what_changed_and_equals_a_fresh_index() {
    let tmp = tempfile::tempdir().unwrap();
    let fleet_dir = tmp.path().join("fleet");
    let files = fleet(&fleet_dir, 0..6);
    let cat = tmp.path().join("cat");
    let first = index(&[&fleet_dir], &cat, &[]);
    assert_eq!(
        (count(&first, "added"), count(&first, "recordings")),
        (6, 6),
        "{first}"
    );
    let ctx = session(&cat).await;
    assert_eq!(
        table(
            &ctx,
            "SELECT partitions['robot'] AS robot, device, count(*) AS n, sum(message_count) AS messages \
             FROM recordings GROUP BY 1, 2 ORDER BY 1"
        )
        .await,
        "+-------+--------+---+----------+\n\
         | robot | device | n | messages |\n\
         +-------+--------+---+----------+\n\
         | r1    | r1     | 3 | 7830     |\n\
         | r2    | r2     | 3 | 7830     |\n\
         +-------+--------+---+----------+"
    );
    // Nothing changed: nothing is written.
    let same = index(&[&fleet_dir], &cat, &[]);
    assert_eq!(
        (count(&same, "unchanged"), same["generation"].clone()),
        (6, Value::Null)
    );
    // One added, one rewritten (a 20-second recording), one deleted.
    fleet(&fleet_dir, 6..7);
    std::fs::remove_file(&files[1]).unwrap();
    recording(&files[2], 2, 20);
    let dry = index(&[&fleet_dir], &cat, &["--dry-run"]);
    assert_eq!(
        (
            count(&dry, "added"),
            count(&dry, "changed"),
            count(&dry, "removed"),
            count(&dry, "unchanged")
        ),
        (1, 1, 1, 4),
        "{dry}"
    );
    assert_eq!(
        std::fs::read_dir(cat.join("_log")).unwrap().count(),
        1,
        "a dry run commits nothing"
    );
    let refresh = index(&[&fleet_dir], &cat, &[]);
    assert_eq!(refresh["generation"], 2, "{refresh}");
    assert_eq!(
        (
            count(&refresh, "added"),
            count(&refresh, "changed"),
            count(&refresh, "removed")
        ),
        (1, 1, 1)
    );
    // The refreshed catalog holds what a fresh index of the fleet holds.
    let fresh = tmp.path().join("fresh");
    index(&[&fleet_dir], &fresh, &[]);
    let fresh_ctx = session(&fresh).await;
    for sql in [
        "SELECT * EXCEPT (indexed_at) FROM recordings ORDER BY location",
        "SELECT * FROM topics ORDER BY location, topic",
    ] {
        assert_eq!(
            table(&ctx, sql).await,
            table(&fresh_ctx, sql).await,
            "{sql}"
        );
    }
    let rewritten = table(
        &ctx,
        &format!(
            "SELECT duration FROM recordings WHERE location = '{}'",
            files[2].display()
        ),
    )
    .await;
    assert!(rewritten.contains("| 19.995 "), "{rewritten}");
    // Recordings the other sources hold are not this source's to remove.
    let other = tmp.path().join("other");
    fleet(&other, 7..8);
    let more = index(&[&other], &cat, &[]);
    assert_eq!(
        (
            count(&more, "added"),
            count(&more, "removed"),
            count(&more, "recordings")
        ),
        (1, 0, 7)
    );
}

#[tokio::test]
async fn the_catalog_refuses_what_it_cannot_keep() {
    let tmp = tempfile::tempdir().unwrap();
    let fleet_dir = tmp.path().join("fleet");
    fleet(&fleet_dir, 0..1);
    // A directory holding other files is not made a catalog.
    let err = stderr(&logsql(&[
        "index",
        &fleet_dir.display().to_string(),
        "--catalog",
        &fleet_dir.display().to_string(),
    ]));
    assert!(err.contains("not a logsql catalog"), "{err}");
    // No catalog yet.
    let cat = tmp.path().join("cat");
    let out = logsql(&[
        "--catalog",
        &cat.display().to_string(),
        "SELECT count(*) FROM recordings",
    ]);
    assert!(
        stderr(&out).contains("no catalog there yet (run: logsql index"),
        "{}",
        stderr(&out)
    );
    index(&[&fleet_dir], &cat, &[]);
    // A catalog keeps the device key it was made with.
    let out = logsql(&[
        "index",
        &fleet_dir.display().to_string(),
        "--catalog",
        &cat.display().to_string(),
        "--device-key",
        "site",
    ]);
    assert!(
        stderr(&out).contains("a catalog keeps one"),
        "{}",
        stderr(&out)
    );
    // A commit of a newer layout is refused, naming both versions.
    let newer = serde_json::json!({"layout": "logsql-catalog", "version": 99, "generation": 2});
    std::fs::write(
        cat.join("_log/00000000000000000002.json"),
        newer.to_string(),
    )
    .unwrap();
    let out = logsql(&[
        "--catalog",
        &cat.display().to_string(),
        "SELECT count(*) FROM recordings",
    ]);
    assert!(
        stderr(&out).contains("catalog layout version 99 is newer than this logsql reads (1)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_killed_run_leaves_the_previous_catalog_and_two_runs_both_land() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    fleet(&a, 0..2);
    // Many small recordings, so that a run takes long enough to be killed.
    for dir in ["mcap", "rosbag", "bddf"] {
        if let Some(src) = fixtures::dir(dir) {
            copy_tree(&src, &b.join(dir));
        }
    }
    fleet(&b, 2..3);
    let cat = tmp.path().join("cat");
    let first = index(&[&a], &cat, &[]);
    let before = recordings_count(&cat);
    assert_eq!(before, count(&first, "recordings"));
    let after = before
        + count(
            &index(&[&b], &tmp.path().join("scratch"), &[]),
            "recordings",
        );
    let bin = env!("CARGO_BIN_EXE_logsql");
    for delay_ms in [5, 20, 60, 150] {
        let mut child = Command::new(bin)
            .args([
                "index",
                &b.display().to_string(),
                "--catalog",
                &cat.display().to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        // Before the kill or after it, the catalog is one whole generation.
        let n = recordings_count(&cat);
        assert!(
            n == before || n == after,
            "killed after {delay_ms} ms ({status:?}): {n} recordings, not {before} or {after}"
        );
        if n != before {
            break;
        }
    }
    index(&[&b], &cat, &[]);
    // Two runs at once on one catalog: both land, one on top of the other.
    let c = tmp.path().join("c");
    let d = tmp.path().join("d");
    fleet(&c, 3..5);
    fleet(&d, 5..7);
    let runs: Vec<_> = [&c, &d]
        .iter()
        .map(|src| {
            Command::new(bin)
                .args([
                    "index",
                    &src.display().to_string(),
                    "--catalog",
                    &cat.display().to_string(),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let report = index(&[&a, &b, &c, &d], &cat, &["--dry-run"]);
    assert_eq!(
        (count(&report, "added"), count(&report, "removed")),
        (0, 0),
        "{report}"
    );
}

/// The catalog's recordings, counted through the CLI.
fn recordings_count(cat: &Path) -> usize {
    let out = ok(&[
        "--catalog",
        &cat.display().to_string(),
        "--format",
        "csv",
        "SELECT count(*) AS n FROM recordings",
    ]);
    out.lines().nth(1).unwrap().trim().parse().unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else if path.is_file() {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The queries a catalogued scan must answer as an uncatalogued one does.
fn same_answer_queries(fleet: &str) -> Vec<String> {
    let window = |lo: u64, hi: u64| {
        format!("log_time BETWEEN to_timestamp_nanos({lo}) AND to_timestamp_nanos({hi})")
    };
    vec![
        format!("SELECT topic, count(*) AS n FROM '{fleet}' GROUP BY topic ORDER BY topic"),
        format!(
            "SELECT file, count(*) AS n FROM '{fleet}' WHERE {} GROUP BY file ORDER BY file",
            window(START_NS + 2 * HOUR, START_NS + 2 * HOUR + 3_000_000_000)
        ),
        format!(
            "SELECT robot, count(*) AS n FROM '{fleet}' WHERE topic = '/imu' AND {} GROUP BY robot ORDER BY robot",
            window(START_NS, START_NS + 4 * HOUR)
        ),
        format!("SELECT count(*) AS n FROM '{fleet}' WHERE topic = '/no/such/topic'"),
        format!(
            "SELECT file, log_time FROM '{fleet}' WHERE topic = '/tf' ORDER BY log_time DESC, file LIMIT 5"
        ),
        format!(
            "SELECT count(*) AS n, min(log_time) AS lo FROM read_topic('{fleet}', '/imu') WHERE {}",
            window(START_NS + HOUR, START_NS + HOUR + 1_000_000_000)
        ),
        format!(
            "SELECT count(*) AS n FROM '{fleet}' WHERE {} AND topic IN ('/imu', '/tf')",
            window(START_NS + 10 * HOUR, START_NS + 11 * HOUR)
        ),
    ]
}

#[tokio::test]
async fn catalogued_scans_answer_as_uncatalogued_ones_and_open_only_what_may_match() {
    let tmp = tempfile::tempdir().unwrap();
    let fleet_dir = tmp.path().join("fleet");
    let files = fleet(&fleet_dir, 0..8);
    // Real files of every format beside the generated fleet.
    let mut fixture_dirs = Vec::new();
    for format in FORMATS {
        if let Some(dir) = fixtures::dir(format) {
            copy_tree(&dir, &fleet_dir.join(format!("robot=fx/day=00/{format}")));
            fixture_dirs.push(format);
        }
    }
    let cat = tmp.path().join("cat");
    index(&[&fleet_dir], &cat, &[]);
    let fleet_path = format!("{}/", fleet_dir.display());
    let plain = logsql::session_context();
    query(&plain, "SET logsql.on_error = 'warn'").await;
    let catalogued = session(&cat).await;
    query(&catalogued, "SET logsql.on_error = 'warn'").await;
    let compare = |label: &'static str| {
        let (plain, catalogued, fleet_path) = (&plain, &catalogued, &fleet_path);
        async move {
            for sql in same_answer_queries(fleet_path) {
                assert_eq!(
                    table(catalogued, &sql).await,
                    table(plain, &sql).await,
                    "{label}: {sql}"
                );
            }
        }
    };
    compare("as indexed").await;
    // A one-hour window opens the one recording in it.
    let window = format!(
        "SELECT count(*) FROM '{fleet_path}' WHERE topic = '/imu' AND log_time BETWEEN \
         to_timestamp_nanos({}) AND to_timestamp_nanos({})",
        START_NS + 5 * HOUR,
        START_NS + 5 * HOUR + 2_000_000_000
    );
    let fresh = session(&cat).await;
    query(&fresh, "SET logsql.on_error = 'warn'").await;
    let plan = crate::sql::analyze(&fresh, &window).await;
    // Every healthy recording but the one in the window is ruled out
    // unopened; the damaged fixtures, which the catalog does not stand for,
    // are read as without it (so their damage is reported as without it).
    let count_of = |condition: &'static str| {
        let fresh = &fresh;
        async move {
            let sql = format!("SELECT count(*) FROM recordings WHERE {condition}");
            crate::sql::ints(fresh, &sql).await[0] as u64
        }
    };
    let healthy = count_of("health IN ('indexed', 'unindexed')").await;
    // (A file no format recognises is reported from the listing, unopened.)
    let damaged = count_of("health IN ('damaged', 'unreadable') AND format IS NOT NULL").await;
    assert!(healthy > 400, "{healthy}");
    assert_eq!(
        crate::sql::metric(&plan, "files_pruned_by_catalog"),
        healthy - 1,
        "{plan}"
    );
    assert_eq!(
        crate::sql::metric(&plan, "files_unknown_to_catalog"),
        damaged,
        "{plan}"
    );
    // Added, rewritten and deleted since the index run: read as without a catalog.
    fleet(&fleet_dir, 8..9);
    recording(&files[3], 3, 20);
    std::fs::remove_file(&files[5]).unwrap();
    compare("after changes").await;
    let plan = crate::sql::analyze(&catalogued, &window).await;
    let unknown = 2 + damaged;
    assert_eq!(
        crate::sql::metric(&plan, "files_unknown_to_catalog"),
        unknown,
        "{plan}"
    );
    // EXPLAIN ANALYZE through the CLI names what the catalog pruned.
    let out = ok(&[
        "--catalog",
        &cat.display().to_string(),
        "--on-error",
        "warn",
        &format!("EXPLAIN ANALYZE {window}"),
    ]);
    assert!(out.contains("files_pruned_by_catalog="), "{out}");
    assert!(
        out.contains(&format!("files_unknown_to_catalog={unknown}")),
        "{out}"
    );
}

#[test]
fn serve_catalog_serves_recordings_and_topics_to_psql() {
    if !crate::serve::psql_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let fleet_dir = tmp.path().join("fleet");
    fleet(&fleet_dir, 0..4);
    let cat = tmp.path().join("cat");
    index(&[&fleet_dir], &cat, &[]);
    let root = tmp.path().display().to_string();
    let catalog = cat.display().to_string();
    let server = crate::serve::Server::start(&["--root", &root, "--catalog", &catalog]);
    assert_eq!(
        server.ok("SELECT device, count(*) FROM recordings GROUP BY device ORDER BY device"),
        "r1,2\nr2,2\n"
    );
    assert_eq!(
        server.ok("SELECT count(DISTINCT location) FROM topics"),
        "4\n"
    );
    let window = format!(
        "SELECT robot, count(*) FROM '{}/' WHERE topic = '/imu' AND log_time BETWEEN \
         to_timestamp_nanos({}) AND to_timestamp_nanos({}) GROUP BY robot",
        fleet_dir.display(),
        START_NS + HOUR,
        START_NS + HOUR + 999_000_000
    );
    assert_eq!(server.ok(&window), "r2,200\n");
    // A catalog outside the roots is not read.
    let outside = tempfile::tempdir().unwrap();
    let err = server.err(&format!(
        "SELECT count(*) FROM recordings('{}')",
        outside.path().display()
    ));
    assert!(err.contains("outside") || err.contains("root"), "{err}");
}
