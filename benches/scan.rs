//! Scan benchmarks: logsql against the official Rust `mcap` crate on a ~200 MB
//! zstd MCAP (`/imu` 200 Hz, `/camera/compressed` 10 Hz with ~50 kB images, `/tf`
//! 50 Hz, `/diagnostics` 1 Hz, 1 MiB chunks; see `benches/support/gen.rs`).
//!
//! ```text
//! cargo bench --bench scan                 # everything (a few minutes on 2 cores)
//! cargo bench --bench scan -- full_scan    # one group
//! ```
//!
//! The file is generated once into `target/bench-data/bench.mcap` (override with
//! `LOGSQL_BENCH_FILE`; `LOGSQL_BENCH_SECONDS` changes its length). Before
//! measuring, the bench checks that every reader agrees on the message count and
//! payload bytes and prints the scan metrics of the logsql queries (chunks and
//! bytes read by the full scan and by the 10% window).
//!
//! Groups:
//! - `full_scan`: every message's payload length summed, by (a) `mcap::MessageStream`
//!   over an mmap, (b) the sans-io `mcap::sans_io::IndexedReader` over an mmap (borrowed
//!   payloads, file order and log-time order; and in file order over `pread` into a
//!   reused buffer instead of an mmap), (c) logsql `SELECT count(*), sum(length(data))`
//!   with the default partitions (one per core) and with one partition;
//! - `window`: a 10% log_time window on `/imu`, by the `IndexedReader` with topic and
//!   time filters and by logsql (`WHERE topic = '/imu' AND log_time BETWEEN ...`);
//! - `header_only`: logsql `SELECT topic, count(*) ... GROUP BY topic`;
//! - `statistics`: logsql `SELECT count(*)` (answered from the summary).

#[path = "support/gen.rs"]
mod gen_support;
#[path = "support/mcap_indexed.rs"]
mod mcap_indexed;
use mcap_indexed::mcap_indexed;

use std::fs::File;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Int64Type, UInt64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::SessionContext;
use mcap::sans_io::indexed_reader::{
    IndexedReadEvent, IndexedReader, IndexedReaderOptions, ReadOrder,
};
use memmap2::Mmap;

/// The benchmark file, generated if missing.
fn bench_file() -> PathBuf {
    let path = std::env::var_os("LOGSQL_BENCH_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/bench.mcap")
        });
    let mut opts = gen_support::Options::default();
    if let Some(s) = std::env::var("LOGSQL_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        opts.seconds = s;
    }
    let started = std::time::Instant::now();
    if gen_support::ensure(&path, &opts).expect("generating the benchmark file") {
        eprintln!("generated {} in {:.1?}", path.display(), started.elapsed());
    }
    path
}

fn mmap(path: &PathBuf) -> Mmap {
    let file = File::open(path).expect("open bench file");
    // SAFETY: the benchmark file is not modified while mapped.
    unsafe { Mmap::map(&file).expect("mmap bench file") }
}

/// (messages, payload bytes) with `mcap::MessageStream` (copies every payload).
fn mcap_message_stream(buf: &[u8]) -> (u64, u64) {
    let (mut n, mut bytes) = (0u64, 0u64);
    for m in mcap::MessageStream::new(buf).expect("MessageStream") {
        let m = m.expect("message");
        n += 1;
        bytes += m.data.len() as u64;
    }
    (n, bytes)
}

/// The same as [`mcap_indexed`] in file order, but reading each chunk with `pread` into a
/// reused buffer instead of borrowing it from an mmap (what a reader over `ReadAt` does);
/// the summary is read with the sans-io `SummaryReader`.
fn mcap_indexed_pread(path: &PathBuf) -> (u64, u64) {
    use std::io::{Read, Seek};
    use std::os::unix::fs::FileExt;

    use mcap::sans_io::summary_reader::{SummaryReadEvent, SummaryReader};
    let mut file = File::open(path).expect("open");
    let summary = {
        let mut reader = SummaryReader::new();
        while let Some(event) = reader.next_event() {
            match event.expect("summary event") {
                SummaryReadEvent::ReadRequest(need) => {
                    let n = file.read(reader.insert(need)).expect("read");
                    reader.notify_read(n);
                }
                SummaryReadEvent::SeekRequest(to) => {
                    reader.notify_seeked(file.seek(to).expect("seek"))
                }
            }
        }
        reader.finish().expect("file has a summary")
    };
    let mut reader = IndexedReader::new_with_options(
        &summary,
        IndexedReaderOptions::new().with_order(ReadOrder::File),
    )
    .expect("IndexedReader");
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut buf = Vec::new();
    while let Some(event) = reader.next_event() {
        match event.expect("event") {
            IndexedReadEvent::ReadChunkRequest { offset, length } => {
                buf.resize(length, 0);
                file.read_exact_at(&mut buf, offset).expect("pread");
                reader
                    .insert_chunk_record_data(offset, &buf)
                    .expect("chunk");
            }
            IndexedReadEvent::Message { data, .. } => {
                n += 1;
                bytes += data.len() as u64;
            }
        }
    }
    (n, bytes)
}

/// An integer cell (count/sum come back as Int64 or UInt64).
fn int(batch: &RecordBatch, col: usize, row: usize) -> u64 {
    let c = batch.column(col);
    if c.is_null(row) {
        return 0;
    }
    match c.data_type() {
        datafusion::arrow::datatypes::DataType::Int64 => {
            c.as_primitive::<Int64Type>().value(row) as u64
        }
        datafusion::arrow::datatypes::DataType::UInt64 => c.as_primitive::<UInt64Type>().value(row),
        t => panic!("unexpected type {t}"),
    }
}

async fn run(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Runs `sql` and returns its batches and the scan metrics summed over the plan.
async fn run_with_metrics(
    ctx: &SessionContext,
    sql: &str,
) -> (Vec<RecordBatch>, Vec<(String, usize)>) {
    let df = ctx.sql(sql).await.expect("plan");
    let task = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await.expect("physical plan");
    let batches = collect(Arc::clone(&plan), task).await.expect("execute");
    let mut metrics = Vec::new();
    fn walk(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<(String, usize)>) {
        if let Some(m) = plan.metrics() {
            for name in [
                "chunks_total",
                "chunks_read",
                "bytes_read",
                "bytes_decompressed",
                "messages_read",
            ] {
                if let Some(v) = m.sum_by_name(name) {
                    out.push((name.to_string(), v.as_usize()));
                }
            }
        }
        for child in plan.children() {
            walk(child, out);
        }
    }
    walk(&plan, &mut metrics);
    (batches, metrics)
}

fn metric(metrics: &[(String, usize)], name: &str) -> usize {
    metrics
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .sum()
}

fn benches(c: &mut Criterion) {
    let path = bench_file();
    let file_bytes = std::fs::metadata(&path).expect("stat").len();
    let map = mmap(&path);
    let quoted = path.display().to_string().replace('\'', "''");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let ctx = logsql::session_context();
    // One partition: logsql on one core, like the single-threaded mcap readers.
    let ctx1 = logsql::session_context_with_config(
        datafusion::prelude::SessionConfig::new().with_target_partitions(1),
    );

    // The 10% window: from 45% to 55% of the file's time span.
    let summary = mcap::Summary::read(&map)
        .expect("summary")
        .expect("summary present");
    let stats = summary.stats.as_ref().expect("statistics record");
    let (start, end) = (stats.message_start_time, stats.message_end_time);
    let span = end - start;
    let (w0, w1) = (start + span * 45 / 100, start + span * 55 / 100);
    let q_full = format!("SELECT count(*), sum(length(data)) FROM '{quoted}'");
    let q_window = format!(
        "SELECT count(*), sum(length(data)) FROM '{quoted}' WHERE topic = '/imu' \
         AND log_time BETWEEN to_timestamp_nanos({w0}) AND to_timestamp_nanos({w1})"
    );
    let q_group =
        format!("SELECT topic, count(*) AS n FROM '{quoted}' GROUP BY topic ORDER BY topic");
    let q_count = format!("SELECT count(*) FROM '{quoted}'");
    let window_opts = || {
        IndexedReaderOptions::new()
            .include_topics(["/imu"])
            .starting_at(w0)
            .ending_at(w1)
            .with_order(ReadOrder::File)
    };

    // Agreement and metrics, once.
    let stream = mcap_message_stream(&map);
    let indexed = mcap_indexed(
        &map,
        IndexedReaderOptions::new().with_order(ReadOrder::File),
    );
    let (full, full_metrics) = rt.block_on(run_with_metrics(&ctx, &q_full));
    let logsql_full = (int(&full[0], 0, 0), int(&full[0], 1, 0));
    assert_eq!(stream, indexed, "MessageStream and IndexedReader disagree");
    assert_eq!(
        stream,
        mcap_indexed_pread(&path),
        "IndexedReader over pread disagrees"
    );
    assert_eq!(
        stream, logsql_full,
        "logsql and the mcap crate disagree on (count, payload bytes)"
    );
    let (win, win_metrics) = rt.block_on(run_with_metrics(&ctx, &q_window));
    let logsql_win = (int(&win[0], 0, 0), int(&win[0], 1, 0));
    let mcap_win = mcap_indexed(&map, window_opts());
    assert_eq!(
        mcap_win, logsql_win,
        "logsql and the mcap crate disagree on the window"
    );
    let chunk_bytes: u64 = summary.chunk_indexes.iter().map(|c| c.chunk_length).sum();
    eprintln!(
        "bench file {}: {} bytes, {} chunks ({} chunk bytes), {} messages, {} payload bytes, span {:.1} s",
        path.display(),
        file_bytes,
        summary.chunk_indexes.len(),
        chunk_bytes,
        stream.0,
        stream.1,
        span as f64 / 1e9
    );
    for (label, m) in [
        ("full scan", &full_metrics),
        ("10% /imu window", &win_metrics),
    ] {
        eprintln!(
            "logsql {label}: chunks_read={}/{} bytes_read={} ({:.1}% of chunk bytes) bytes_decompressed={} messages_read={}",
            metric(m, "chunks_read"),
            metric(m, "chunks_total"),
            metric(m, "bytes_read"),
            100.0 * metric(m, "bytes_read") as f64 / chunk_bytes as f64,
            metric(m, "bytes_decompressed"),
            metric(m, "messages_read"),
        );
    }
    eprintln!(
        "window: {} messages; bytes_read window/full = {:.1}%",
        logsql_win.0,
        100.0 * metric(&win_metrics, "bytes_read") as f64
            / metric(&full_metrics, "bytes_read").max(1) as f64
    );

    let mut g = c.benchmark_group("full_scan");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.bench_function("mcap_message_stream_mmap", |b| {
        b.iter(|| black_box(mcap_message_stream(&map)))
    });
    g.bench_function("mcap_indexed_reader_file_order", |b| {
        b.iter(|| {
            black_box(mcap_indexed(
                &map,
                IndexedReaderOptions::new().with_order(ReadOrder::File),
            ))
        })
    });
    g.bench_function("mcap_indexed_reader_log_time_order", |b| {
        b.iter(|| black_box(mcap_indexed(&map, IndexedReaderOptions::new())))
    });
    g.bench_function("mcap_indexed_reader_file_order_pread", |b| {
        b.iter(|| black_box(mcap_indexed_pread(&path)))
    });
    g.bench_function("logsql_count_sum_length", |b| {
        b.iter(|| black_box(rt.block_on(run(&ctx, &q_full))))
    });
    g.bench_function("logsql_count_sum_length_1_partition", |b| {
        b.iter(|| black_box(rt.block_on(run(&ctx1, &q_full))))
    });
    g.finish();

    let mut g = c.benchmark_group("window");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("mcap_indexed_reader_imu_10pct", |b| {
        b.iter(|| black_box(mcap_indexed(&map, window_opts())))
    });
    g.bench_function("logsql_imu_10pct", |b| {
        b.iter(|| black_box(rt.block_on(run(&ctx, &q_window))))
    });
    g.finish();

    let mut g = c.benchmark_group("header_only");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("logsql_group_by_topic", |b| {
        b.iter(|| black_box(rt.block_on(run(&ctx, &q_group))))
    });
    g.finish();

    let mut g = c.benchmark_group("statistics");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.bench_function("logsql_count_star", |b| {
        b.iter(|| black_box(rt.block_on(run(&ctx, &q_count))))
    });
    g.finish();
}

criterion_group!(scan, benches);
criterion_main!(scan);
