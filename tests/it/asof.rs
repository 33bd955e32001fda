//! `ASOF JOIN`: both SQL spellings, the operator's semantics (ties, NULLs,
//! tolerance, outer/inner), plans, and real recordings.

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};

/// A logsql context with `target_partitions` partitions.
fn context(target_partitions: usize) -> SessionContext {
    logsql::session_context_with_config(
        SessionConfig::new().with_target_partitions(target_partitions),
    )
}

/// The result of `sql` through [`logsql::sql`], as a pretty table.
async fn text(ctx: &SessionContext, sql: &str) -> String {
    let batches = logsql::sql(ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    pretty_format_batches(&batches).unwrap().to_string()
}

/// The error of `sql` through [`logsql::sql`].
async fn error(ctx: &SessionContext, sql: &str) -> String {
    match logsql::sql(ctx, sql).await {
        Err(e) => e.to_string(),
        Ok(df) => match df.collect().await {
            Err(e) => e.to_string(),
            Ok(b) => panic!("{sql}: expected an error, got\n{}", pretty_format_batches(&b).unwrap()),
        },
    }
}

/// Two small tables: `l(k, t, name)` and `r(k, t, v)`.
async fn tables(ctx: &SessionContext) {
    for sql in [
        "CREATE TABLE l(k INT, t BIGINT, name VARCHAR) AS VALUES \
         (1, 10, 'a'), (1, 20, 'b'), (1, 25, 'c'), (2, 10, 'd'), (2, 5, 'e'), (3, 7, 'f'), \
         (NULL, 20, 'g'), (1, NULL, 'h')",
        "CREATE TABLE r(k INT, t BIGINT, v INT) AS VALUES \
         (1, 10, 100), (1, 15, 150), (1, 20, 200), (1, 20, 201), (2, 6, 60), (2, 11, 110), \
         (NULL, 1, 999), (1, NULL, 998)",
    ] {
        ctx.sql(sql).await.unwrap().collect().await.unwrap();
    }
}

#[tokio::test]
async fn snowflake_spelling_with_keys() {
    let ctx = context(1);
    tables(&ctx).await;
    let got = text(
        &ctx,
        "SELECT l.name, l.k, l.t, r.t AS rt, r.v FROM l ASOF JOIN r \
         MATCH_CONDITION (l.t >= r.t) ON l.k = r.k ORDER BY l.name",
    )
    .await;
    println!("{got}");
}
