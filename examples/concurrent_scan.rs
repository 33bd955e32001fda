//! Runs N full scans at once on one `SessionContext`, for the memory benchmark
//! (`benches/memory.sh` measures the process's peak RSS with `/usr/bin/time -v`).
//!
//! ```text
//! cargo run --release --example concurrent_scan -- [-n 8] [--query SQL] FILE...
//! ```
//!
//! Scan `i` (0-based) reads `FILE[i % len]`, so 8 scans over 5 files read two
//! of them twice. The default query is
//! `SELECT count(*), sum(length(data)) FROM '{file}'` (`{file}` is replaced).
//! Each scan prints its file, result and time; the last line is the total time.

const USAGE: &str = "usage: concurrent_scan [-n N] [--query SQL-with-{file}] FILE...";

#[tokio::main]
async fn main() -> datafusion::error::Result<()> {
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use std::time::Instant;

    let mut n = 8usize;
    let mut query =
        "SELECT count(*) AS messages, sum(length(data)) AS bytes FROM '{file}'".to_string();
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-n" => n = args.next().and_then(|v| v.parse().ok()).expect(USAGE),
            "--query" => query = args.next().expect(USAGE),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => files.push(a),
        }
    }
    assert!(!files.is_empty(), "{USAGE}");

    let ctx = logsql::session_context();
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let file = files[i % files.len()].clone();
            let sql = query.replace("{file}", &file);
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                let batches = ctx.sql(&sql).await?.collect().await?;
                let table = pretty_format_batches(&batches)?.to_string();
                Ok::<_, datafusion::error::DataFusionError>((i, file, table, t.elapsed()))
            })
        })
        .collect();
    for task in futures::future::join_all(tasks).await {
        let (i, file, table, took) = task.expect("scan task")?;
        let row: Vec<&str> = table
            .lines()
            .nth(3)
            .unwrap_or("")
            .trim_matches(|c: char| c == '|' || c.is_whitespace())
            .split('|')
            .map(str::trim)
            .collect();
        let row = row.join(", ");
        println!("scan {i}: {file}: {row} ({:.1} s)", took.as_secs_f64());
    }
    println!(
        "{n} concurrent scans in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
