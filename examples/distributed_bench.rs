//! The distributed benchmark: the same fleet queries in one process and on 1
//! and 2 datafusion-distributed workers (in this process, on loopback gRPC),
//! median wall time of several runs each.
//!
//! ```text
//! cargo run --release --features distributed --example distributed_bench -- DIR [--files 16] [--runs 5]
//! ```
//!
//! DIR is filled on the first run with generated 60-second MCAP recordings
//! (`robot=rN/` hive directories, ~3 MB each); later runs reuse it.

#[path = "../benches/support/gen.rs"]
mod gen_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use datafusion::prelude::{SessionConfig, SessionContext};
use logsql::DataRoots;
use logsql::distributed::{
    ClusterAuth, StaticWorkers, Token, WorkerOptions, coordinator_context, serve_listener,
};

const HOUR: u64 = 3_600_000_000_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: distributed_bench DIR [--files N] [--runs N]";
    let dir = PathBuf::from(args.next().ok_or(usage)?);
    let (mut files, mut runs) = (16u64, 5usize);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--files" => files = args.next().ok_or(usage)?.parse()?,
            "--runs" => runs = args.next().ok_or(usage)?.parse()?,
            other => return Err(format!("unknown argument {other}; {usage}").into()),
        }
    }
    let mut bytes = 0;
    for i in 0..files {
        let sub = dir.join(format!("robot=r{}", i % 4));
        std::fs::create_dir_all(&sub)?;
        let path = sub.join(format!("run{i:04}.mcap"));
        let opts = gen_support::Options {
            seconds: 60,
            image_bytes: 4000,
            chunk_size: 256 * 1024,
            start: gen_support::START_NS + i * HOUR,
            ..Default::default()
        };
        gen_support::ensure(&path, &opts)?;
        bytes += std::fs::metadata(&path)?.len();
    }
    let root = dir.display();
    println!(
        "{files} files, {:.1} MB, {} cores",
        bytes as f64 / 1e6,
        std::thread::available_parallelism()?
    );
    let queries = [
        (
            "full scan",
            format!(
                "SELECT topic, count(*), sum(length(data)) FROM '{root}/' GROUP BY topic ORDER BY topic"
            ),
        ),
        (
            "decoded /imu",
            format!(
                "SELECT robot, count(*), avg(linear_acceleration.x) FROM read_topic('{root}/', '/imu') \
                 GROUP BY robot ORDER BY robot"
            ),
        ),
    ];

    // The workers take a token, as deployed ones do, and read below the data.
    let auth = ClusterAuth {
        token: Some(Token::new("distributed-bench-token")?),
        ..ClusterAuth::default()
    };
    let options = WorkerOptions {
        auth: auth.clone(),
        roots: DataRoots::parse(&[root.to_string()])?,
        insecure: false,
        memory_limit: None,
    };
    let mut addresses = Vec::new();
    for _ in 0..2 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        addresses.push(listener.local_addr()?.to_string());
        tokio::spawn(serve_listener(listener, options.clone()));
    }
    let sessions: Vec<(String, SessionContext)> = vec![
        ("one process".into(), logsql::session_context()),
        (
            "1 worker".into(),
            coordinator_context(
                SessionConfig::new(),
                StaticWorkers::parse(&addresses[..1])?,
                auth.clone(),
            )?,
        ),
        (
            "2 workers".into(),
            coordinator_context(
                SessionConfig::new(),
                StaticWorkers::parse(&addresses)?,
                auth.clone(),
            )?,
        ),
    ];
    for (name, sql) in &queries {
        let mut reference = None;
        for (mode, ctx) in &sessions {
            let mut times = Vec::new();
            for _ in 0..runs.max(1) {
                let started = Instant::now();
                let batches = ctx.sql(sql).await?.collect().await?;
                times.push(started.elapsed());
                let text =
                    datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
                match &reference {
                    None => reference = Some(text),
                    Some(r) if *r != text => {
                        return Err(format!("{mode}: {name} differs:\n{text}\nvs\n{r}").into());
                    }
                    Some(_) => {}
                }
            }
            times.sort();
            let median: Duration = times[times.len() / 2];
            println!(
                "{name:>14} | {mode:>11} | median {median:>9.1?} of {} runs",
                times.len()
            );
        }
    }
    Ok(())
}
