//! Which statements a server runs. Its session is shared by every client, so
//! nothing a client says may change what the others see or where the
//! session reads: queries, `EXPLAIN`, `SHOW`, transactions and cursors run;
//! `SET` of a Postgres client setting (time zone, date style, statement
//! timeout, ...) applies to that client only, savepoints are answered and do
//! nothing; `SET` of session options
//! (`datafusion.*`, `logsql.*`), `SELECT ... INTO` (a table every client
//! would see) and every DDL statement (`CREATE`, `DROP`, `ALTER`, `PREPARE`,
//! ...) are refused; `COPY` and `INSERT` run only with
//! `--allow-write` (and then write only below its directory, which the plan
//! guard checks). Over Flight SQL, which has no per-client settings (and
//! through [`ServeSession::query`](crate::ServeSession::query)), a statement
//! is checked as DataFusion parsed it ([`StatementGuard::refusal`]), and
//! `SET` is refused.

use std::ops::ControlFlow;

use async_trait::async_trait;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Query, Select, Set, Statement, Visit, Visitor};
use datafusion_postgres::QueryHook;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::pgwire::api::ClientInfo;
use datafusion_postgres::pgwire::api::results::{Response, Tag};
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError, PgWireResult};

/// Postgres settings datafusion-postgres keeps per client (or answers
/// without touching the session).
const CLIENT_SETTINGS: &[&str] = &[
    "statement_timeout",
    "datestyle",
    "bytea_output",
    "intervalstyle",
    "application_name",
    "extra_float_digits",
    "search_path",
];

/// The hook refusing statements a shared server session must not run; it
/// comes before datafusion-postgres's own hooks.
#[derive(Debug)]
pub struct StatementGuard {
    /// Whether `COPY` and `INSERT` may run (`--allow-write`).
    pub writes: bool,
}

/// What to do with a statement.
enum Verdict {
    /// Run it as datafusion-postgres would.
    Run,
    /// Answer with this command tag and do nothing (a Postgres setting
    /// logsql has no use for, a savepoint of a transaction that writes
    /// nothing).
    Ignore(&'static str),
    /// Refuse it, saying why.
    Refuse(String),
}

impl StatementGuard {
    fn verdict(&self, statement: &Statement) -> Verdict {
        match statement {
            Statement::Query(query) if selects_into(query) => Verdict::Refuse(
                "SELECT ... INTO is not allowed on a logsql server: the table it makes would be \
                 shared by every client (select the rows, or COPY them to a file with \
                 --allow-write)"
                    .to_string(),
            ),
            Statement::Query(_)
            | Statement::ShowTables { .. }
            | Statement::ShowColumns { .. }
            | Statement::ShowVariable { .. }
            | Statement::ShowVariables { .. }
            | Statement::ShowStatus { .. }
            | Statement::ShowCatalogs { .. }
            | Statement::ShowSchemas { .. }
            | Statement::ShowFunctions { .. }
            | Statement::StartTransaction { .. }
            | Statement::Commit { .. }
            | Statement::Rollback { .. }
            | Statement::Declare { .. }
            | Statement::Fetch { .. }
            | Statement::Close { .. } => Verdict::Run,
            Statement::Explain { statement, .. } => self.verdict(statement),
            Statement::ExplainTable { .. } => Verdict::Run,
            Statement::Copy { .. } | Statement::Insert(_) => self.verdict_of_writes(),
            Statement::Set(set) => set_verdict(set),
            Statement::Savepoint { .. } => Verdict::Ignore("SAVEPOINT"),
            Statement::ReleaseSavepoint { .. } => Verdict::Ignore("RELEASE"),
            other => Verdict::Refuse(format!(
                "{} is not allowed on a logsql server: its tables and options are shared by \
                 every client and set when it starts",
                statement_kind(other)
            )),
        }
    }

    /// Why a statement as DataFusion parses it (its extensions `CREATE
    /// EXTERNAL TABLE`, `COPY ... TO`, `EXPLAIN`, `RESET` included) may not
    /// run over Flight SQL (or any front end without per-client settings),
    /// if it may not.
    pub fn refusal(&self, statement: &DFStatement) -> Option<String> {
        let refused = |kind: &str| {
            Some(format!(
                "{kind} is not allowed on a logsql server: its tables and options are shared by \
                 every client and set when it starts"
            ))
        };
        match statement {
            DFStatement::Statement(statement) => match self.verdict(statement) {
                Verdict::Run if !matches!(**statement, Statement::Set(_)) => None,
                Verdict::Refuse(why) => Some(why),
                Verdict::Run | Verdict::Ignore(_) => refused(&statement_kind(statement)),
            },
            DFStatement::CopyTo(_) => match self.verdict_of_writes() {
                Verdict::Refuse(why) => Some(why),
                _ => None,
            },
            DFStatement::Explain(explain) => self.refusal(&explain.statement),
            DFStatement::CreateExternalTable(_) => refused("CREATE EXTERNAL TABLE"),
            DFStatement::Reset(_) => refused("RESET"),
        }
    }

    /// Whether `COPY` and `INSERT` run.
    fn verdict_of_writes(&self) -> Verdict {
        match self.writes {
            true => Verdict::Run,
            false => Verdict::Refuse(
                "this server writes no files (start it with --allow-write DIR to allow \
                 COPY and INSERT below DIR)"
                    .to_string(),
            ),
        }
    }

    fn check(&self, statement: &Statement) -> Option<PgWireResult<Response>> {
        match self.verdict(statement) {
            Verdict::Run => None,
            Verdict::Ignore(tag) => Some(Ok(Response::Execution(Tag::new(tag)))),
            Verdict::Refuse(why) => Some(Err(refusal(why))),
        }
    }
}

/// Whether `query` (anywhere in it) is a `SELECT ... INTO`, which DataFusion
/// plans as `CREATE TABLE AS`.
fn selects_into(query: &Query) -> bool {
    struct Into;
    impl Visitor for Into {
        type Break = ();
        fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
            match select.into {
                Some(_) => ControlFlow::Break(()),
                None => ControlFlow::Continue(()),
            }
        }
    }
    query.visit(&mut Into).is_break()
}

/// `SET` of a client setting runs, of a session option (a dotted name:
/// `datafusion.*`, `logsql.*`) is refused, of anything else is ignored.
fn set_verdict(set: &Set) -> Verdict {
    match set {
        Set::SingleAssignment { variable, .. } => {
            let name = variable.to_string().to_ascii_lowercase();
            if CLIENT_SETTINGS.contains(&name.as_str()) {
                Verdict::Run
            } else if name.contains('.') {
                Verdict::Refuse(format!(
                    "SET {name}: a server's session options are shared by every client and set \
                     when it starts"
                ))
            } else {
                Verdict::Ignore("SET")
            }
        }
        Set::SetTimeZone { local: false, .. } => Verdict::Run,
        _ => Verdict::Ignore("SET"),
    }
}

/// The first words of a statement, for messages (`CREATE EXTERNAL TABLE`).
fn statement_kind(statement: &Statement) -> String {
    let text = statement.to_string();
    let words: Vec<&str> = text
        .split_whitespace()
        // Its leading keywords (sqlparser prints them in capitals), not the
        // names that follow: `CREATE TABLE`, not `CREATE TABLE T`.
        .take_while(|w| w.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .take(3)
        .collect();
    match words.is_empty() {
        true => "this statement".to_string(),
        false => words.join(" "),
    }
}

/// A refused statement as a Postgres error (SQLSTATE 42501,
/// insufficient_privilege).
fn refusal(why: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_string(),
        "42501".to_string(),
        why,
    )))
}

#[async_trait]
impl QueryHook for StatementGuard {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        self.check(statement)
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        match self.verdict(statement) {
            Verdict::Refuse(why) => Some(Err(refusal(why))),
            // An ignored statement is answered at execution.
            Verdict::Run | Verdict::Ignore(_) => None,
        }
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        _session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        self.check(statement)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn parse(sql: &str) -> DFStatement {
        let mut statements = DFParser::parse_sql(sql).expect("parses");
        assert_eq!(statements.len(), 1, "{sql}");
        statements.pop_front().expect("one statement")
    }

    /// The verdict on `sql` as a Postgres client's statement reaches the
    /// hook: parsed by sqlparser in the Postgres dialect (so `EXPLAIN` is a
    /// sqlparser statement, not DataFusion's extension).
    fn verdict(guard: &StatementGuard, sql: &str) -> Verdict {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).expect("parses");
        assert_eq!(statements.len(), 1, "{sql}");
        guard.verdict(&statements.pop().expect("one statement"))
    }

    #[test]
    fn postgres_clients_keep_their_settings_and_transactions() {
        let guard = StatementGuard { writes: false };
        for sql in [
            "SELECT 1",
            "SHOW TABLES",
            "BEGIN",
            "COMMIT",
            "SET TIME ZONE 'UTC'",
            "SET datestyle = 'ISO'",
            "SET application_name = 'psql'",
        ] {
            assert!(matches!(verdict(&guard, sql), Verdict::Run), "{sql}");
        }
        assert!(matches!(
            verdict(&guard, "SAVEPOINT a"),
            Verdict::Ignore("SAVEPOINT")
        ));
        assert!(matches!(
            verdict(&guard, "SET client_min_messages = 'warning'"),
            Verdict::Ignore("SET")
        ));
        match verdict(&guard, "SET logsql.on_error = 'skip'") {
            Verdict::Refuse(why) => assert_eq!(
                why,
                "SET logsql.on_error: a server's session options are shared by every client and \
                 set when it starts"
            ),
            _ => panic!("SET of a session option runs"),
        }
        for sql in [
            "SELECT 42 AS x INTO t",
            "SELECT 'forged' AS topic INTO \"ROOT/future.mcap\"",
            "SELECT 1 UNION SELECT 2 INTO t",
            "EXPLAIN SELECT 1 INTO t",
        ] {
            match verdict(&guard, sql) {
                Verdict::Refuse(why) => assert!(why.starts_with("SELECT ... INTO is not"), "{why}"),
                _ => panic!("{sql} runs"),
            }
        }
        match verdict(&guard, "DROP TABLE t") {
            Verdict::Refuse(why) => assert!(why.starts_with("DROP TABLE is not allowed"), "{why}"),
            _ => panic!("DROP runs"),
        }
    }

    #[test]
    fn without_per_client_settings_set_is_refused_and_writes_follow_the_server() {
        let reading = StatementGuard { writes: false };
        let writing = StatementGuard { writes: true };
        assert_eq!(reading.refusal(&parse("SELECT 1")), None);
        assert_eq!(reading.refusal(&parse("EXPLAIN SELECT 1")), None);
        let why = reading
            .refusal(&parse("SET TIME ZONE 'UTC'"))
            .expect("refused");
        assert!(why.starts_with("SET TIME ZONE is not allowed"), "{why}");
        let why = reading.refusal(&parse("RESET datafusion.execution.batch_size"));
        assert!(why.expect("refused").starts_with("RESET is not allowed"));
        let copy = "COPY (SELECT 1) TO '/tmp/out.csv' STORED AS CSV";
        assert!(reading.refusal(&parse(copy)).is_some());
        assert_eq!(writing.refusal(&parse(copy)), None);
        let explain_copy = format!("EXPLAIN {copy}");
        assert!(reading.refusal(&parse(&explain_copy)).is_some());
        assert!(
            writing
                .refusal(&parse("CREATE VIEW v AS SELECT 1"))
                .is_some()
        );
    }
}
