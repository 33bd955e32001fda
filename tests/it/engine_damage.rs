//! Damaged files through SQL: every readable row reaches the user before an
//! error, at every partition count and in every plan shape.
//!
//! The reference is the byte-level reader itself (the [`FormatReader`] trait, no
//! DataFusion): the messages it recovers from a cut file are what a query must
//! return, whatever `logsql.on_error` says; the policy only decides whether an
//! error follows the rows.

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use logsql_readers::formats::{self, FormatReader};
use logsql_readers::io::BytesReader;
use logsql_readers::model::{Flow, Message, Selection};

use crate::fixtures;

/// One message as a query returns it: topic, log time (ns), payload.
pub(crate) type Row = (String, i64, Vec<u8>);

/// What the reader recovers from `bytes`: every message of every chunk its
/// summary lists (chunks that fail give what they gave), and whether it met
/// damage (`Some(unfinished)`: only the end of the file is missing).
pub(crate) fn reader_prefix(
    format: &dyn FormatReader,
    name: &str,
    bytes: &[u8],
) -> (Vec<Row>, Option<bool>) {
    let file = BytesReader::new(name, bytes.to_vec());
    let summary = match format.summary(&file) {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Some(e.is_unfinished_recording())),
    };
    let mut unfinished = summary.damage.as_ref().map(|d| d.is_unfinished_recording());
    let mut rows = Vec::new();
    for chunk in &summary.chunks {
        let mut sink = |m: Message<'_>| {
            rows.push((m.channel.topic.clone(), m.log_time as i64, m.data.to_vec()));
            Flow::Continue
        };
        if let Err(e) = format.read_chunk(&file, &summary, chunk, &Selection::all(), &mut sink) {
            unfinished = Some(unfinished.unwrap_or(true) && e.is_unfinished_recording());
        }
    }
    (rows, unfinished)
}

/// Runs `sql` and returns every batch the stream delivered and the error that
/// ended it, if any.
pub(crate) async fn rows_then_error(
    ctx: &SessionContext,
    sql: &str,
) -> (Vec<RecordBatch>, Option<String>) {
    let df = ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut stream = df
        .execute_stream()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut batches = Vec::new();
    while let Some(next) = stream.next().await {
        match next {
            Ok(b) => batches.push(b),
            Err(e) => {
                assert!(
                    stream.next().await.is_none(),
                    "{sql}: the error ends the stream"
                );
                return (batches, Some(e.to_string()));
            }
        }
    }
    (batches, None)
}

/// `(topic, log_time, data)` rows of batches with those three columns.
pub(crate) fn message_rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let topic = b.column(0).as_string::<i32>();
        let time = b.column(1).as_primitive::<Int64Type>();
        let data = b.column(2).as_binary_view();
        for i in 0..b.num_rows() {
            out.push((
                topic.value(i).to_string(),
                time.value(i),
                data.value(i).to_vec(),
            ));
        }
    }
    out
}

fn session(partitions: usize, policy: &str) -> SessionContext {
    let ctx = logsql::session_context_with_config(
        SessionConfig::new().with_target_partitions(partitions),
    );
    let state = ctx.state_ref();
    state
        .write()
        .config_mut()
        .options_mut()
        .set("logsql.on_error", policy)
        .unwrap();
    ctx
}

/// One fixture of each format, cut at six places: the query at 1, 2 and 8
/// partitions, under each policy, returns exactly the reader's prefix; the
/// error follows the rows when the policy says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_files_return_the_readers_prefix_at_every_partition_count() {
    let files = [
        ("mcap", "samples/compressed.mcap"),
        ("rosbag", "rosbagjs-example-bz2.bag"),
        ("rosbag", "robot_localization-test1.bag"),
        ("apollo", "real/mytest.record"),
        ("bddf", "basic.bddf"),
        ("carla", "synth_0916_basic.log"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (format_dir, relative) in files {
        let Some(path) = fixtures::file(format_dir, relative) else {
            return;
        };
        let bytes = std::fs::read(&path).unwrap();
        let format = formats::detect(&BytesReader::new("probe", bytes.clone())).unwrap();
        for sixth in 1..=6 {
            let cut = bytes.len() * sixth / 7;
            let file = tmp.path().join(format!(
                "cut{sixth}-{}",
                path.file_name().unwrap().to_string_lossy()
            ));
            std::fs::write(&file, &bytes[..cut]).unwrap();
            let name = file.display().to_string();
            let (mut expected, damage) = reader_prefix(format.as_ref(), &name, &bytes[..cut]);
            expected.sort();
            let sql = format!("SELECT topic, CAST(log_time AS BIGINT) AS t, data FROM '{name}'");
            for partitions in [1, 2, 8] {
                for policy in ["auto", "error", "warn"] {
                    let ctx = session(partitions, policy);
                    let (batches, error) = rows_then_error(&ctx, &sql).await;
                    let mut got = message_rows(&batches);
                    got.sort();
                    let what = format!(
                        "{relative} cut at {cut} of {}, {partitions} partitions, on_error {policy}",
                        bytes.len()
                    );
                    assert_eq!(got.len(), expected.len(), "{what}: {error:?}");
                    assert!(got == expected, "{what}: other rows than the reader's");
                    let fails = match (policy, damage) {
                        (_, None) | ("warn", _) => false,
                        ("error", Some(_)) => true,
                        (_, Some(unfinished)) => !unfinished,
                    };
                    assert_eq!(error.is_some(), fails, "{what}: {error:?}");
                    if let Some(e) = error {
                        assert!(e.contains(&name) && e.contains("byte"), "{what}: {e}");
                        assert!(
                            e.contains(&format!("the query returned {} row", got.len())),
                            "{what}: the note counts the rows: {e}"
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 6 * 6 * 3 * 3);
}

/// The rows of `sql` as text lines, sorted (any partition order).
fn lines(batches: &[RecordBatch]) -> Vec<String> {
    let text = datafusion::arrow::util::pretty::pretty_format_batches(batches)
        .unwrap()
        .to_string();
    let mut rows: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

/// A corrupt chunk in the middle of a file, in every plan shape and at 1, 2 and
/// 16 partitions: the strict run delivers what the `warn` run delivers, then
/// fails (corruption fails under the default too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_plan_shape_delivers_its_rows_before_the_error() {
    let Some(mcap) = fixtures::file("mcap", "samples/compressed.mcap") else {
        return;
    };
    let Some(carla) = fixtures::file("carla", "synth_0916_basic.log") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // A flipped byte inside a zstd chunk two thirds in: that chunk fails its checksum.
    let mut bytes = std::fs::read(&mcap).unwrap();
    let at = bytes.len() * 2 / 3;
    bytes[at] ^= 0xFF;
    let dir = tmp.path().join("fleet");
    std::fs::create_dir(&dir).unwrap();
    let bad = dir.join("bad.mcap");
    std::fs::write(&bad, &bytes).unwrap();
    std::fs::copy(&mcap, dir.join("good.mcap")).unwrap();
    // A CARLA recording cut in its second half (an unfinished recording).
    let log = std::fs::read(&carla).unwrap();
    let bad_carla = tmp.path().join("bad_carla.log");
    std::fs::write(&bad_carla, &log[..log.len() * 3 / 5]).unwrap();
    let b = bad.display().to_string();
    let d = dir.display().to_string();
    let c = bad_carla.display().to_string();
    // (query, whether its damage is corruption, which fails under `auto` too)
    let queries = [
        (
            format!("SELECT topic, log_time, md5(data) FROM '{b}'"),
            true,
        ),
        (
            format!("SELECT md5(data) FROM '{b}' WHERE topic = '/tf'"),
            true,
        ),
        (
            format!("SELECT topic, md5(data) FROM '{b}' LIMIT 5000"),
            true,
        ),
        (
            format!("SELECT topic, count(*), sum(length(data)) FROM '{b}' GROUP BY topic"),
            true,
        ),
        (
            format!(
                "SELECT file, topic, count(*), sum(length(data)) FROM '{d}' GROUP BY file, topic"
            ),
            true,
        ),
        (
            format!("SELECT log_time, transforms FROM read_topic('{b}', '/tf')"),
            true,
        ),
        (
            format!("SELECT count(*), sum(x) FROM positions('{c}')"),
            false,
        ),
        (
            format!("SELECT frame, count(*) FROM '{c}' GROUP BY frame"),
            false,
        ),
    ];
    for (sql, corrupt) in &queries {
        for partitions in [1, 2, 16] {
            let (lenient, error) = rows_then_error(&session(partitions, "warn"), sql).await;
            assert!(error.is_none(), "{sql}: {error:?}");
            assert!(!lines(&lenient).is_empty(), "{sql}: no rows at all");
            for policy in ["auto", "error"] {
                let (strict, error) = rows_then_error(&session(partitions, policy), sql).await;
                let what = format!("{sql} at {partitions} partitions, on_error {policy}");
                assert_eq!(lines(&strict), lines(&lenient), "{what}");
                if policy == "auto" && !corrupt {
                    assert!(
                        error.is_none(),
                        "{what}: an unfinished recording is no error: {error:?}"
                    );
                } else {
                    let e = error.unwrap_or_else(|| panic!("{what}: no error"));
                    assert!(e.contains("bad") && e.contains("byte"), "{what}: {e}");
                }
            }
        }
    }
}

/// Under `warn`, a count is the rows that decode: on cut files and on files
/// with a flipped byte (a chunk that no longer decompresses, whose message
/// index and the summary's counts still list its messages), `count(*)`,
/// `count(log_time)`, per-topic counts and `min` / `max(log_time)` equal
/// what `SELECT topic, log_time, data` returns, in every format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_under_warn_are_the_rows_that_decode() {
    let demo = |name: &str| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name)
    };
    let mut sources = vec![
        demo("demo.mcap"),
        demo("demo.bag"),
        demo("demo.record"),
        demo("demo.bddf"),
        demo("demo.log"),
    ];
    // Fixtures of every format, intact and damaged by their writers (cut,
    // crashed, unclosed): each is checked as it is and cut and flipped.
    for (format_dir, relative) in [
        ("mcap", "samples/compressed.mcap"),
        ("mcap", "samples/chunk_not_closed.mcap"),
        ("rosbag", "rosbagjs-example-lz4.bag"),
        ("rosbag", "robot_localization-test1.bag"),
        ("rosbag", "rosbag-rs-dummy-truncated.bag"),
        ("apollo", "generated/crash_incomplete.record"),
        ("apollo", "generated/crash_torn_tail.record"),
        ("bddf", "truncated.before-index.bddf"),
        ("bddf", "truncated.mid-block.bddf"),
        ("bddf", "truncated.no-trailer.bddf"),
        ("carla", "synth_0916_truncated.log"),
    ] {
        match fixtures::file(format_dir, relative) {
            Some(p) => sources.push(p),
            None => return,
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let ctx = session(2, "warn");
    let one = |batches: &[RecordBatch]| -> String {
        let text = datafusion::arrow::util::pretty::pretty_format_batches(batches)
            .unwrap()
            .to_string();
        text.lines().nth(3).unwrap_or_default().to_string()
    };
    let mut damaged = 0;
    for source in &sources {
        let bytes = std::fs::read(source).unwrap();
        let stem = source.file_name().unwrap().to_string_lossy().to_string();
        let mut variants: Vec<(String, Vec<u8>)> = vec![(format!("whole-{stem}"), bytes.clone())];
        for k in [1, 2, 3] {
            variants.push((
                format!("cut{k}-{stem}"),
                bytes[..bytes.len() * k / 4].to_vec(),
            ));
            let mut flipped = bytes.clone();
            let at = bytes.len() * k / 4;
            for b in &mut flipped[at..(at + 16).min(bytes.len())] {
                *b ^= 0x5a;
            }
            variants.push((format!("flip{k}-{stem}"), flipped));
        }
        for (name, content) in variants {
            let file = tmp.path().join(&name);
            std::fs::write(&file, &content).unwrap();
            let f = file.display().to_string();
            let rows_sql = format!("SELECT topic, CAST(log_time AS BIGINT) AS t, data FROM '{f}'");
            // A file too damaged to plan a scan of (a bag cut inside its
            // header) fails a count the same way.
            if !plans(&ctx, &rows_sql).await {
                let count = format!("SELECT count(*) FROM '{f}'");
                assert!(
                    !plans(&ctx, &count).await,
                    "{name}: the rows fail to plan, the count does not"
                );
                continue;
            }
            let (rows, _) = rows_then_error(&ctx, &rows_sql).await;
            let rows = message_rows(&rows);
            if rows.len() as u64 != full_count(&ctx, source).await {
                damaged += 1;
            }
            let n = rows.len().to_string();
            let (lo, hi) = (
                rows.iter().map(|r| r.1).min(),
                rows.iter().map(|r| r.1).max(),
            );
            for (sql, want) in [
                (format!("SELECT count(*) FROM '{f}'"), format!("| {n} |")),
                (
                    format!("SELECT count(log_time) FROM '{f}'"),
                    format!("| {n} |"),
                ),
                (
                    format!(
                        "SELECT sum(n) FROM (SELECT topic, count(*) AS n FROM '{f}' GROUP BY topic)"
                    ),
                    match rows.is_empty() {
                        true => "|     |".to_string(),
                        false => format!("| {n} |"),
                    },
                ),
            ] {
                let (batches, error) = rows_then_error(&ctx, &sql).await;
                assert!(error.is_none(), "{sql}: {error:?}");
                let got = one(&batches).replace(' ', "");
                assert_eq!(got, want.replace(' ', ""), "{sql}");
            }
            if let (Some(lo), Some(hi)) = (lo, hi) {
                let sql = format!(
                    "SELECT CAST(min(log_time) AS BIGINT), CAST(max(log_time) AS BIGINT) FROM '{f}'"
                );
                let (batches, _) = rows_then_error(&ctx, &sql).await;
                assert_eq!(
                    one(&batches).replace(' ', ""),
                    format!("|{lo}|{hi}|"),
                    "{sql}"
                );
            }
        }
    }
    // The sweep met chunks that lose messages (else it proves nothing).
    assert!(
        damaged >= 10,
        "only {damaged} damaged variants lost messages"
    );
}

/// Whether `sql` plans and starts (a file can be too damaged to open).
async fn plans(ctx: &SessionContext, sql: &str) -> bool {
    match ctx.sql(sql).await {
        Ok(df) => df.execute_stream().await.is_ok(),
        Err(_) => false,
    }
}

/// The messages of an intact file.
async fn full_count(ctx: &SessionContext, file: &std::path::Path) -> u64 {
    let (batches, _) = rows_then_error(
        ctx,
        &format!(
            "SELECT topic, CAST(log_time AS BIGINT) AS t, data FROM '{}'",
            file.display()
        ),
    )
    .await;
    message_rows(&batches).len() as u64
}
