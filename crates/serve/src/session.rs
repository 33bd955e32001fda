//! The one session a server's front ends serve ([`ServeSession`]), made by
//! [`Policy::session`](crate::Policy::session): the statement checks every
//! front end applies ([`ServeSession::vet`]) and the one way a front end
//! without a SQL layer of its own runs a statement ([`ServeSession::query`]).
//! The plan guard and the query limits are the session's own (its last
//! physical optimizer rule), so they hold however a statement reaches it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::execution::SessionState;
use datafusion::execution::context::SQLOptions;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::DFParser;

use crate::cancel::RunningQueries;
use crate::error::{ServeError, ServeResult};
use crate::statements::StatementGuard;

/// A server's session under its policy (see the module documentation).
/// Clones share the session and its running queries.
#[derive(Clone)]
pub struct ServeSession {
    ctx: SessionContext,
    guard: Arc<StatementGuard>,
    running: Arc<RunningQueries>,
    /// The directory writes go below (`--allow-write`), when local.
    write_dir: Option<PathBuf>,
}

impl std::fmt::Debug for ServeSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeSession")
            .field("session_id", &self.ctx.session_id())
            .field("writes", &self.guard.writes)
            .finish_non_exhaustive()
    }
}

impl ServeSession {
    pub(crate) fn new(
        ctx: SessionContext,
        guard: StatementGuard,
        running: Arc<RunningQueries>,
    ) -> Self {
        Self {
            ctx,
            guard: Arc::new(guard),
            running,
            write_dir: None,
        }
    }

    /// The session writing below `dir` (the write root, when it is local).
    pub(crate) fn with_write_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.write_dir = dir;
        self
    }

    /// The local directory writes go below, when writes are allowed there.
    pub fn write_dir(&self) -> Option<&Path> {
        self.write_dir.as_deref().filter(|_| self.guard.writes)
    }

    /// The guarded session (shared by every client: nothing a client runs
    /// may change it, which [`ServeSession::vet`] sees to).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// A snapshot of the session's state, for front ends that plan on a
    /// state of their own.
    pub fn state(&self) -> SessionState {
        self.ctx.state()
    }

    /// Whether `COPY` and `INSERT` may run (below the write root).
    pub fn writes(&self) -> bool {
        self.guard.writes
    }

    /// What DataFusion itself allows a client's statements: no DDL, no
    /// statements that change the session, DML only when writes are allowed.
    pub fn sql_options(&self) -> SQLOptions {
        SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(self.writes())
            .with_allow_statements(false)
    }

    /// `sql` with its `ASOF JOIN`s written in the form DataFusion plans, or
    /// [`ServeError::Refused`] with why one of its statements may not run (a
    /// `CREATE`, a `SET`, `SELECT ... INTO`, a write without a write root, a
    /// statement nesting too deep to plan, ...). Text that does
    /// not parse is returned as it is: the planner says why.
    pub fn vet(&self, sql: &str) -> ServeResult<String> {
        logsql::complexity::check(sql).map_err(|e| ServeError::Refused(e.to_string()))?;
        let sql = logsql::sql::normalize(sql).unwrap_or_else(|_| sql.to_string());
        if let Ok(statements) = DFParser::parse_sql(&sql) {
            for statement in &statements {
                if let Some(why) = self.guard.refusal(statement) {
                    return Err(ServeError::Refused(why));
                }
            }
        }
        Ok(sql)
    }

    /// Runs one statement as a client's: vetted ([`ServeSession::vet`]),
    /// planned within [`ServeSession::sql_options`], its plan checked by the
    /// plan guard, and its rows streamed under the query limits (a slot, the
    /// time and memory limits). Dropping the stream stops the query and
    /// frees its slot.
    pub async fn query(&self, sql: &str) -> ServeResult<SendableRecordBatchStream> {
        let sql = self.vet(sql)?;
        let df = self.ctx.sql_with_options(&sql, self.sql_options()).await?;
        Ok(df.execute_stream().await?)
    }

    /// The server's running queries, by what a cancel request names.
    pub(crate) fn running(&self) -> &Arc<RunningQueries> {
        &self.running
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use datafusion::arrow::array::{Array, Int64Array};
    use datafusion::prelude::SessionConfig;
    use futures::TryStreamExt;

    use crate::config::ServeConfig;
    use crate::error::ServeError;
    use crate::policy::Policy;

    fn demo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/demo.mcap")
    }

    /// A data root holding a copy of the demo recording, and the policy of
    /// a server reading below it (writing below `write`, if given).
    fn policy(write: Option<&Path>) -> (tempfile::TempDir, Policy) {
        let root = tempfile::tempdir().expect("a temporary directory");
        std::fs::copy(demo(), root.path().join("demo.mcap")).expect("copy the demo recording");
        let config = ServeConfig {
            roots: vec![root.path().display().to_string()],
            write_root: write.map(|w| w.display().to_string()),
            ..Default::default()
        };
        let policy = Policy::new(&config).expect("a policy");
        (root, policy)
    }

    async fn session(policy: &Policy) -> super::ServeSession {
        let config = policy.session_config(SessionConfig::new().with_information_schema(true));
        policy
            .session(logsql::session_context_with_config(config))
            .await
            .expect("a guarded session")
    }

    async fn count(session: &super::ServeSession, sql: &str) -> Result<i64, ServeError> {
        let batches: Vec<_> = session.query(sql).await?.try_collect().await?;
        let column = batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("a count")
            .clone();
        assert_eq!(column.len(), 1);
        Ok(column.value(0))
    }

    #[tokio::test]
    async fn queries_run_below_the_roots_only() {
        let (root, policy) = policy(None);
        let session = session(&policy).await;
        let inside = root.path().join("demo.mcap");
        let n = count(
            &session,
            &format!("SELECT count(*) FROM '{}'", inside.display()),
        )
        .await
        .expect("a query below the root");
        let expected = {
            let plain = logsql::session_context();
            let batches = plain
                .sql(&format!("SELECT count(*) FROM '{}'", demo().display()))
                .await
                .expect("plan")
                .collect()
                .await
                .expect("run");
            let c = batches[0].column(0);
            c.as_any()
                .downcast_ref::<Int64Array>()
                .expect("a count")
                .value(0)
        };
        assert!(expected > 0);
        assert_eq!(n, expected);
        let e = count(
            &session,
            &format!("SELECT count(*) FROM '{}'", demo().display()),
        )
        .await
        .expect_err("a file outside the roots");
        assert!(e.to_string().contains("outside the data roots"), "{e}");
        let e = count(
            &session,
            &format!(
                "SELECT count(*) FROM '{}/../demo.mcap'",
                root.path().display()
            ),
        )
        .await
        .expect_err("a path climbing out");
        assert!(e.to_string().contains("outside the data roots"), "{e}");
    }

    #[tokio::test]
    async fn what_a_shared_session_must_not_run_is_refused() {
        let (root, policy) = policy(None);
        let session = session(&policy).await;
        let refused = |sql: &str| {
            let sql = sql.to_string();
            let session = session.clone();
            async move {
                match session.query(&sql).await {
                    Err(ServeError::Refused(why)) => why,
                    Err(e) => panic!("{sql}: refused for another reason: {e}"),
                    Ok(_) => panic!("{sql}: ran"),
                }
            }
        };
        let why = refused("CREATE TABLE t AS SELECT 1").await;
        assert_eq!(
            why,
            "CREATE TABLE is not allowed on a logsql server: its tables and options are shared \
             by every client and set when it starts"
        );
        let why = refused("CREATE EXTERNAL TABLE t STORED AS CSV LOCATION '/tmp/x.csv'").await;
        assert!(
            why.starts_with("CREATE EXTERNAL TABLE is not allowed"),
            "{why}"
        );
        let why = refused("SET datafusion.execution.batch_size = 1").await;
        assert!(why.starts_with("SET"), "{why}");
        let copy = format!(
            "COPY (SELECT 1) TO '{}' STORED AS CSV",
            root.path().join("out.csv").display()
        );
        let why = refused(&copy).await;
        assert_eq!(
            why,
            "this server writes no files (start it with --allow-write DIR to allow COPY and \
             INSERT below DIR)"
        );
        assert!(!root.path().join("out.csv").exists());
        // The session is unchanged: a query still runs.
        assert_eq!(
            count(&session, "SELECT count(*) FROM (VALUES (1), (2))")
                .await
                .expect("a query"),
            2
        );
    }

    #[tokio::test]
    async fn writes_go_below_the_write_root_only() {
        let write = tempfile::tempdir().expect("a temporary directory");
        let (root, policy) = policy(Some(write.path()));
        let session = session(&policy).await;
        assert!(session.writes());
        let target = write.path().join("out.csv");
        let sql = format!(
            "COPY (SELECT 1 AS a) TO '{}' STORED AS CSV",
            target.display()
        );
        let batches: Vec<_> = session
            .query(&sql)
            .await
            .expect("a COPY below the write root")
            .try_collect()
            .await
            .expect("it runs");
        assert!(!batches.is_empty());
        assert_eq!(std::fs::read_to_string(&target).expect("written"), "a\n1\n");
        let elsewhere = root.path().join("out.csv");
        let sql = format!(
            "COPY (SELECT 1 AS a) TO '{}' STORED AS CSV",
            elsewhere.display()
        );
        let e = match session.query(&sql).await {
            Ok(stream) => stream
                .try_collect::<Vec<_>>()
                .await
                .map(|_| ())
                .map_err(ServeError::from),
            Err(e) => Err(e),
        }
        .expect_err("a COPY outside the write root");
        assert!(e.to_string().contains("outside"), "{e}");
        assert!(!elsewhere.exists());
    }

    #[tokio::test]
    async fn a_session_without_the_roots_is_refused() {
        let (_root, policy) = policy(None);
        let e = policy
            .session(logsql::session_context())
            .await
            .expect_err("a session without data roots");
        assert_eq!(
            e.to_string(),
            "the session has no data roots: make it from Policy::session_config"
        );
    }

    #[test]
    fn a_server_needs_a_root() {
        let e = Policy::new(&ServeConfig::default()).expect_err("no root");
        assert_eq!(e.to_string(), "logsql serve needs at least one --root");
    }
}
