//! Embedding logsql in your own DataFusion application: one call registers the
//! log formats, url tables and table functions on a `SessionContext` you own.
//!
//! ```text
//! cargo run --example embed -- tests/data/demo.mcap
//! ```

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

#[tokio::main]
async fn main() -> Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tests/data/demo.mcap".into());

    // Your context, your configuration; logsql adds to it.
    let ctx = SessionContext::new();
    logsql::register(&ctx)?;

    // A file, directory or glob is a table; the format comes from the file's content.
    ctx.sql(&format!(
        "SELECT topic, count(*) AS messages, max(log_time) - min(log_time) AS span \
         FROM '{path}' GROUP BY topic ORDER BY topic"
    ))
    .await?
    .show()
    .await?;

    // Or a named table over many files, joinable with anything else DataFusion reads.
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE runs STORED AS MCAP LOCATION '{path}'"
    ))
    .await?;
    let df = ctx
        .sql("SELECT topic, count(*) AS n FROM runs WHERE topic = '/imu' GROUP BY topic")
        .await?;
    df.show().await?;
    Ok(())
}
