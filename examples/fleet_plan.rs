//! The fleet benchmark: a directory of many small MCAP recordings (hive
//! partitioned by robot and day, one recording an hour), and a one-hour-window
//! query over all of them. Prints the planning and execution times, cold
//! (summaries not yet read) and warm (summaries cached), and the scan metrics
//! that show which files and chunks were read.
//!
//! ```text
//! cargo run --release --example fleet_plan -- DIR [--files 1000]
//! ```
//!
//! DIR is created and filled on the first run (2 s recordings, about 25 KB
//! each); later runs reuse it.

#[path = "../benches/support/gen.rs"]
mod gen_support;

use std::path::PathBuf;
use std::time::Instant;

use datafusion::physical_plan::collect;

const HOUR: u64 = 3_600_000_000_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: fleet_plan DIR [--files N]")?);
    let mut files = 1000u64;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--files" => files = args.next().ok_or("--files needs a value")?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let started = Instant::now();
    let mut made = 0;
    for i in 0..files {
        let sub = dir.join(format!("robot=r{}/day={}", i % 10, i / 240));
        std::fs::create_dir_all(&sub)?;
        let opts = gen_support::Options {
            seconds: 2,
            image_bytes: 200,
            chunk_size: 8192,
            start: gen_support::START_NS + i * HOUR,
            ..Default::default()
        };
        if gen_support::ensure(&sub.join(format!("run{i:05}.mcap")), &opts)? {
            made += 1;
        }
    }
    if made > 0 {
        println!("generated {made} files in {:.1?}", started.elapsed());
    }

    let ctx = logsql::session_context();
    // One hour in the middle of the fleet: exactly one recording's two seconds.
    let lo = gen_support::START_NS + files / 2 * HOUR;
    let sql = format!(
        "SELECT topic, count(*) AS n FROM '{}/' \
         WHERE log_time >= to_timestamp_nanos({lo}) AND log_time < to_timestamp_nanos({}) \
         GROUP BY topic ORDER BY topic",
        dir.display(),
        lo + HOUR
    );
    for run in ["cold", "warm", "warm"] {
        let t = Instant::now();
        let df = ctx.sql(&sql).await?;
        let plan = df.create_physical_plan().await?;
        let planned = t.elapsed();
        let batches = collect(plan.clone(), ctx.task_ctx()).await?;
        let total = t.elapsed();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        println!("{run}: planned in {planned:.1?}, done in {total:.1?}, {rows} rows");
    }
    // The metrics of the last run.
    let t = format!("EXPLAIN ANALYZE {sql}");
    let out = ctx.sql(&t).await?.collect().await?;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&out)?.to_string();
    for line in text.lines().filter(|l| l.contains("DataSourceExec")) {
        println!("metrics: {}", plan_metrics(line));
    }
    Ok(())
}

/// The `metrics=[...]` part of a plan line, or the line.
fn plan_metrics(line: &str) -> &str {
    line.find("metrics=[")
        .map(|i| line[i..].trim_end_matches([' ', '|']))
        .unwrap_or(line.trim())
}
