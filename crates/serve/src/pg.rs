//! The Postgres-wire front end, on datafusion-postgres and pgwire: the
//! handlers (datafusion-postgres's session service over the server's one
//! session, behind its statement guard, with every `ASOF JOIN` spelling
//! rewritten to the form DataFusion plans and nested columns sent as JSON
//! text), made per connection ([`Handlers::connection`]) so each tells its
//! connection's activity, and TLS. Logins are [`crate::login`]'s, the accept
//! loop [`crate::connection`]'s.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion_postgres::hooks::cursor::CursorStatementHook;
use datafusion_postgres::hooks::set_show::SetShowHook;
use datafusion_postgres::hooks::transactions::TransactionStatementHook;
use datafusion_postgres::pgwire::api::auth::sasl::SASLAuthStartupHandler;
use datafusion_postgres::pgwire::api::auth::sasl::scram::ScramAuth;
use datafusion_postgres::pgwire::api::auth::{
    AuthSource, DefaultServerParameterProvider, StartupHandler,
};
use datafusion_postgres::pgwire::api::portal::Format;
use datafusion_postgres::pgwire::api::portal::Portal;
use datafusion_postgres::pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use datafusion_postgres::pgwire::api::results::{FieldInfo, Response};
use datafusion_postgres::pgwire::api::stmt::QueryParser;
use datafusion_postgres::pgwire::api::store::PortalStore;
use datafusion_postgres::pgwire::api::{
    ClientInfo, ClientPortalStore, ConnectionManager, PgWireServerHandlers, Type,
};
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::PgWireBackendMessage;
use datafusion_postgres::pgwire::tokio::tokio_rustls::TlsAcceptor;
use datafusion_postgres::pgwire::tokio::tokio_rustls::rustls;
use datafusion_postgres::pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use datafusion_postgres::pgwire::tokio::tokio_rustls::rustls::pki_types::{
    CertificateDer, PrivateKeyDer,
};
use datafusion_postgres::{DfSessionService, Parser, QueryHook};
use futures::{Sink, StreamExt};

use crate::activity::Activity;
use crate::cancel::{Cancels, RunningQueries};
use crate::config::Auth;
use crate::deadline::with_statement_timeout;
use crate::error::{ServeError, ServeResult};
use crate::json_text::NestedAsJson;
use crate::login::{Credentials, OpenStartup, Startup, StartupKind};
use crate::session::ServeSession;
use crate::statements::StatementGuard;

/// The handlers of one server: what its connections share.
pub struct Handlers {
    inner: Arc<DfSessionService>,
    parser: Arc<AsofParser>,
    connections: Arc<ConnectionManager>,
    running: Arc<RunningQueries>,
    auth: Option<Arc<Credentials>>,
    tls_only: bool,
}

impl Handlers {
    /// The handlers of a server over `session`, for `auth`, refusing
    /// plain connections if `tls_only`; their running answers are registered
    /// in the session's registry (shared with Flight SQL).
    pub fn new(session: &ServeSession, auth: &Auth, tls_only: bool) -> Self {
        let hooks: Vec<Arc<dyn QueryHook>> = vec![
            Arc::new(StatementGuard {
                writes: session.writes(),
            }),
            Arc::new(NestedAsJson),
            Arc::new(CursorStatementHook),
            Arc::new(SetShowHook),
            Arc::new(TransactionStatementHook),
        ];
        let ctx = Arc::new(session.context().clone());
        let inner = Arc::new(DfSessionService::new_with_hooks(ctx, hooks));
        let auth = match auth {
            Auth::Open => None,
            Auth::Password { user, password } => {
                Some(Arc::new(Credentials::new(user.clone(), password)))
            }
        };
        Self {
            parser: Arc::new(AsofParser(inner.query_parser())),
            inner,
            connections: Arc::new(ConnectionManager::new()),
            running: Arc::clone(session.running()),
            auth,
            tls_only,
        }
    }

    /// The handlers of one connection, telling `activity` what it does.
    pub fn connection(&self, activity: Arc<Activity>) -> ConnectionHandlers {
        let service = Arc::new(LogsqlService {
            inner: Arc::clone(&self.inner),
            parser: Arc::clone(&self.parser),
            running: Arc::clone(&self.running),
            activity: Arc::clone(&activity),
        });
        let kind = match &self.auth {
            None => StartupKind::Open(OpenStartup {
                connections: Arc::clone(&self.connections),
            }),
            Some(credentials) => {
                let scram = ScramAuth::new(Arc::clone(credentials) as Arc<dyn AuthSource>);
                StartupKind::Scram(Box::new(
                    SASLAuthStartupHandler::new(
                        Arc::new(DefaultServerParameterProvider::default()),
                    )
                    .with_scram(scram)
                    .with_connection_manager(Arc::clone(&self.connections)),
                ))
            }
        };
        ConnectionHandlers {
            service,
            startup: Arc::new(Startup {
                kind,
                tls_only: self.tls_only,
                activity,
            }),
            connections: Arc::clone(&self.connections),
            running: Arc::clone(&self.running),
        }
    }
}

/// The handlers of one connection (pgwire asks them once, when it connects).
pub struct ConnectionHandlers {
    service: Arc<LogsqlService>,
    startup: Arc<Startup>,
    connections: Arc<ConnectionManager>,
    running: Arc<RunningQueries>,
}

impl PgWireServerHandlers for ConnectionHandlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.service)
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::clone(&self.service)
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::clone(&self.startup)
    }

    fn cancel_handler(&self) -> Arc<impl datafusion_postgres::pgwire::api::cancel::CancelHandler> {
        Arc::new(Cancels::new(
            Arc::clone(&self.connections),
            Arc::clone(&self.running),
        ))
    }
}

/// datafusion-postgres's prepared statement: its text, and its parse and plan.
type DfStatement = (String, Option<(Statement, LogicalPlan)>);

/// datafusion-postgres's session service, with each statement's `ASOF JOIN`
/// rewritten first ([`logsql_asof::sql::normalize`]).
pub struct LogsqlService {
    inner: Arc<DfSessionService>,
    parser: Arc<AsofParser>,
    running: Arc<RunningQueries>,
    /// The connection's activity: busy while a statement runs and its rows
    /// stream.
    activity: Arc<Activity>,
}

/// A statement's text with its `ASOF JOIN`s in the form DataFusion plans
/// (unchanged when it has none or does not parse: the parser says why).
fn normalize(sql: &str) -> String {
    logsql::sql::normalize(sql).unwrap_or_else(|_| sql.to_string())
}

/// The `statement_timeout` a client set (`SET statement_timeout`, kept by
/// datafusion-postgres in the client's metadata, in milliseconds).
fn statement_timeout<C: ClientInfo>(client: &C) -> Option<std::time::Duration> {
    client
        .metadata()
        .get("statement_timeout_ms")
        .and_then(|ms| ms.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map(std::time::Duration::from_millis)
}

/// `sql` refused if it nests deeper than logsql plans
/// ([`logsql::complexity`]), as Postgres's `statement_too_complex` (54001),
/// before anything parses it for planning.
fn not_too_complex(sql: &str) -> PgWireResult<()> {
    logsql::complexity::check(sql).map_err(|e| {
        PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".to_string(),
            "54001".to_string(),
            e.to_string(),
        )))
    })
}

#[async_trait]
impl SimpleQueryHandler for LogsqlService {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let _busy = self.activity.busy();
        not_too_complex(query)?;
        let timeout = statement_timeout(client);
        let query = normalize(query);
        let statement = SimpleQueryHandler::do_query(&*self.inner, client, &query);
        let mut responses = with_statement_timeout(timeout, statement).await?;
        self.running.watch(client, &mut responses);
        for response in &mut responses {
            busy_while_streaming(&self.activity, response);
        }
        Ok(responses)
    }
}

#[async_trait]
impl ExtendedQueryHandler for LogsqlService {
    type Statement = DfStatement;
    type QueryParser = AsofParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        Arc::clone(&self.parser)
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let _busy = self.activity.busy();
        let timeout = statement_timeout(client);
        let statement = ExtendedQueryHandler::do_query(&*self.inner, client, portal, max_rows);
        let mut response = with_statement_timeout(timeout, statement).await?;
        self.running
            .watch(client, std::slice::from_mut(&mut response));
        busy_while_streaming(&self.activity, &mut response);
        Ok(response)
    }
}

/// `response`'s rows keeping the connection busy until they are sent (or
/// dropped).
fn busy_while_streaming(activity: &Arc<Activity>, response: &mut Response) {
    if let Response::Query(query) = response {
        let busy = activity.busy();
        let rows = std::mem::replace(&mut query.data_rows, Box::pin(futures::stream::empty()));
        query.data_rows = Box::pin(rows.inspect(move |_| {
            let _ = &busy;
        }));
    }
}

/// datafusion-postgres's parser of prepared statements, after the `ASOF
/// JOIN` rewrite.
pub struct AsofParser(Arc<Parser>);

#[async_trait]
impl QueryParser for AsofParser {
    type Statement = DfStatement;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        not_too_complex(sql)?;
        self.0.parse_sql(client, &normalize(sql), types).await
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        self.0.get_parameter_types(stmt)
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        self.0.get_result_schema(stmt, column_format)
    }
}

/// The TLS acceptor of a certificate chain and key (PEM files).
pub fn tls_acceptor(cert: &Path, key: &Path) -> ServeResult<TlsAcceptor> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ServeError::Tls(format!("TLS certificate {}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(ServeError::Tls(format!(
            "TLS certificate {}: no certificate in it",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| ServeError::Tls(format!("TLS key {}: {e}", key.display())))?;
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServeError::Tls(format!("TLS certificate and key: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
