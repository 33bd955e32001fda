//! The Arrow Flight SQL side of `logsql serve`, on datafusion-flight-sql-server
//! (over the same session as the Postgres wire: its tables, table functions,
//! plan guard and query limits): a [`FlightService`] in front of the crate's
//! that checks each client's credentials, checks each statement with the
//! [`StatementGuard`] and rewrites its `ASOF JOIN`s, then hands the request on.
//!
//! Logging in: without a password every client may query; with one, a client
//! sends `authorization: Basic base64(user:password)` (with the handshake, as
//! ADBC and `pyarrow.flight` do, or with any call) and gets back a bearer
//! token (`authorization: Bearer ...`) it sends with the calls that follow.
//!
//! A query runs while its `DoGet` stream is read: a client that cancels or
//! drops the stream (or the connection) drops the query's plan, so its scans
//! stop and its memory and slot are freed.

use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;

use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::{ActionCreatePreparedStatementRequest, Any, Command, ProstMessageExt};
use arrow_flight::{
    Action, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo, HandshakeRequest,
    HandshakeResponse, PollInfo, SchemaResult, Ticket,
};
use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use datafusion::execution::SessionState;
use datafusion::execution::context::SQLOptions;
use datafusion::sql::parser::DFParser;
use datafusion_flight_sql_server::service::FlightSqlService;
use datafusion_flight_sql_server::state::{CommandTicket, QueryHandle};
use datafusion_postgres::pgwire::api::auth::sasl::scram::random_nonce;
use futures::Stream;
use prost::Message;
use subtle::ConstantTimeEq;
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tonic::{Request, Response, Status, Streaming};

use super::statements::StatementGuard;
use crate::cli::error::{CliError, CliResult};

/// The `CreatePreparedStatement` action's type.
const CREATE_PREPARED_STATEMENT: &str = "CreatePreparedStatement";

/// Base64 as basic auth sends it, padded or not (Go's Flight client, under
/// ADBC, leaves the padding out).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Who may query over Flight SQL.
enum FlightLogin {
    /// Any client that reaches the address.
    Open,
    /// The one user with its password, and the bearer token given to
    /// clients that logged in with them (one per server process).
    Password {
        user: String,
        password: String,
        token: String,
    },
}

impl FlightLogin {
    /// Checks the `authorization` header of a call; on a good `Basic` login,
    /// returns the bearer token to hand back.
    #[allow(clippy::result_large_err)]
    fn check(&self, metadata: &MetadataMap) -> Result<Option<&str>, Status> {
        let FlightLogin::Password {
            user,
            password,
            token,
        } = self
        else {
            return Ok(None);
        };
        let header = metadata
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                Status::unauthenticated(
                    "this server needs a user name and password (Flight SQL basic auth)",
                )
            })?;
        let same = |a: &str, b: &str| bool::from(a.as_bytes().ct_eq(b.as_bytes()));
        if let Some(given) = strip_prefix_ignore_case(header, "Bearer ") {
            return match same(given.trim(), token) {
                true => Ok(None),
                false => Err(Status::unauthenticated(
                    "unknown bearer token: log in again with the user name and password",
                )),
            };
        }
        let given = strip_prefix_ignore_case(header, "Basic ")
            .and_then(|b| BASE64.decode(b.trim()).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                Status::unauthenticated("the authorization header is neither Basic nor Bearer")
            })?;
        let (given_user, given_password) = given.split_once(':').unwrap_or((&given, ""));
        // Both compared, whichever fails, so the time says nothing of which.
        let user_ok = same(given_user, user);
        let password_ok = same(given_password, password);
        match user_ok && password_ok {
            true => Ok(Some(token)),
            false => Err(Status::unauthenticated("wrong user name or password")),
        }
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Whether a command carries a statement (SQL or a Substrait plan).
fn is_statement(command: &Command) -> bool {
    matches!(
        command,
        Command::CommandStatementQuery(_)
            | Command::CommandPreparedStatementQuery(_)
            | Command::CommandStatementSubstraitPlan(_)
    )
}

/// The Flight SQL service of a server: login and statement checks in front of
/// datafusion-flight-sql-server's service.
pub struct LogsqlFlight {
    inner: FlightSqlService,
    login: FlightLogin,
    guard: StatementGuard,
    /// The session's catalog, listed when a client asks for every catalog.
    catalog: String,
}

impl LogsqlFlight {
    /// The service over `state` (the server's session), for `login` (`None`:
    /// open; `Some((user, password))`: basic auth), writing only if `writes`.
    pub fn new(state: SessionState, login: Option<(String, String)>, writes: bool) -> Self {
        let options = SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(writes)
            .with_allow_statements(false);
        let login = match login {
            None => FlightLogin::Open,
            Some((user, password)) => FlightLogin::Password {
                user,
                password,
                token: random_nonce(),
            },
        };
        let catalog = state.config().options().catalog.default_catalog.clone();
        Self {
            inner: FlightSqlService::new(state).with_sql_options(options),
            login,
            guard: StatementGuard { writes },
            catalog,
        }
    }

    /// Checks `request`'s credentials; the bearer token to hand back after a
    /// `Basic` login.
    #[allow(clippy::result_large_err)]
    fn admit<T>(&self, request: &Request<T>) -> Result<Option<String>, Status> {
        Ok(self.login.check(request.metadata())?.map(str::to_string))
    }

    /// `sql` with its `ASOF JOIN`s rewritten, or why it may not run.
    #[allow(clippy::result_large_err)]
    fn vet_sql(&self, sql: &str) -> Result<String, Status> {
        let sql = logsql::sql::normalize(sql).unwrap_or_else(|_| sql.to_string());
        // A statement that does not parse goes on: the planner says why.
        if let Ok(statements) = DFParser::parse_sql(&sql) {
            for statement in &statements {
                if let Some(why) = self.guard.refusal(statement) {
                    return Err(Status::permission_denied(why));
                }
            }
        }
        Ok(sql)
    }

    /// A Flight SQL command with its statement vetted ([`Self::vet_sql`]).
    #[allow(clippy::result_large_err)]
    fn vet_command(&self, command: Command) -> Result<Command, Status> {
        Ok(match command {
            Command::CommandStatementQuery(mut query) => {
                query.query = self.vet_sql(&query.query)?;
                Command::CommandStatementQuery(query)
            }
            Command::CommandPreparedStatementQuery(mut prepared) => {
                let handle = QueryHandle::try_decode(prepared.prepared_statement_handle.clone())
                    .map_err(|e| Status::invalid_argument(e.to_string()))?;
                let sql = self.vet_sql(handle.query())?;
                let params = handle.parameters().map(|p| p.to_vec().into());
                prepared.prepared_statement_handle = QueryHandle::new(sql, params).encode();
                Command::CommandPreparedStatementQuery(prepared)
            }
            Command::CommandStatementSubstraitPlan(_) => {
                return Err(Status::permission_denied(
                    "this server runs SQL only, not Substrait plans",
                ));
            }
            other => other,
        })
    }

    /// A `GetDbSchemas` or `GetTables` ticket without a catalog (every
    /// catalog, as ADBC's `get_objects` asks) made to name the session's one
    /// catalog: datafusion-flight-sql-server lists schemas and tables of a
    /// named catalog only.
    fn every_catalog(&self, ticket: &[u8]) -> Option<prost::bytes::Bytes> {
        let command = Command::try_from(Any::decode(ticket).ok()?).ok()?;
        let any = match command {
            Command::CommandGetDbSchemas(mut get) if get.catalog.is_none() => {
                get.catalog = Some(self.catalog.clone());
                get.as_any()
            }
            Command::CommandGetTables(mut get) if get.catalog.is_none() => {
                get.catalog = Some(self.catalog.clone());
                get.as_any()
            }
            _ => return None,
        };
        Some(any.encode_to_vec().into())
    }

    /// A request's descriptor with its command vetted.
    #[allow(clippy::result_large_err)]
    fn vet_descriptor(
        &self,
        mut request: Request<FlightDescriptor>,
    ) -> Result<Request<FlightDescriptor>, Status> {
        self.admit(&request)?;
        let descriptor = request.get_mut();
        if !descriptor.cmd.is_empty() {
            let any = Any::decode(descriptor.cmd.clone())
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            if let Ok(command) = Command::try_from(any) {
                descriptor.cmd = self.vet_command(command)?.into_any().encode_to_vec().into();
            }
        }
        Ok(request)
    }
}

type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl FlightService for LogsqlFlight {
    type HandshakeStream = Stream_<HandshakeResponse>;
    type ListFlightsStream = <FlightSqlService as FlightService>::ListFlightsStream;
    type DoGetStream = <FlightSqlService as FlightService>::DoGetStream;
    type DoPutStream = <FlightSqlService as FlightService>::DoPutStream;
    type DoExchangeStream = <FlightSqlService as FlightService>::DoExchangeStream;
    type DoActionStream = <FlightSqlService as FlightService>::DoActionStream;
    type ListActionsStream = <FlightSqlService as FlightService>::ListActionsStream;

    async fn handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        let token = self.admit(&request)?;
        let mut response: Response<Self::HandshakeStream> =
            Response::new(Box::pin(futures::stream::empty()));
        if let Some(token) = token {
            let value = MetadataValue::try_from(format!("Bearer {token}"))
                .map_err(|e| Status::internal(e.to_string()))?;
            response.metadata_mut().insert("authorization", value);
        }
        Ok(response)
    }

    async fn list_flights(
        &self,
        request: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        self.admit(&request)?;
        self.inner.list_flights(request).await
    }

    async fn get_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let request = self.vet_descriptor(request)?;
        self.inner.get_flight_info(request).await
    }

    async fn poll_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        let request = self.vet_descriptor(request)?;
        self.inner.poll_flight_info(request).await
    }

    async fn get_schema(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<SchemaResult>, Status> {
        let request = self.vet_descriptor(request)?;
        self.inner.get_schema(request).await
    }

    async fn do_get(
        &self,
        mut request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        self.admit(&request)?;
        let ticket = &mut request.get_mut().ticket;
        // A statement's ticket (the others, of catalog commands, go on as they are).
        if let Ok(CommandTicket { command }) = CommandTicket::try_decode(ticket.clone())
            && is_statement(&command)
        {
            *ticket = CommandTicket::new(self.vet_command(command)?)
                .try_encode()
                .map_err(|e| Status::internal(e.to_string()))?;
        } else if let Some(listing) = self.every_catalog(ticket) {
            *ticket = listing;
        }
        self.inner.do_get(request).await
    }

    async fn do_put(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        // Binds a prepared statement's parameters (updates are not
        // implemented): the statement is vetted when it runs, in `do_get`.
        self.admit(&request)?;
        self.inner.do_put(request).await
    }

    async fn do_exchange(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        self.admit(&request)?;
        self.inner.do_exchange(request).await
    }

    async fn do_action(
        &self,
        mut request: Request<Action>,
    ) -> Result<Response<Self::DoActionStream>, Status> {
        self.admit(&request)?;
        let action = request.get_mut();
        if action.r#type == CREATE_PREPARED_STATEMENT {
            let any = Any::decode(action.body.clone())
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            if let Ok(Some(mut create)) = any.unpack::<ActionCreatePreparedStatementRequest>() {
                create.query = self.vet_sql(&create.query)?;
                action.body = create.as_any().encode_to_vec().into();
            }
        } else if action.r#type.contains("Substrait") {
            return Err(Status::permission_denied(
                "this server runs SQL only, not Substrait plans",
            ));
        }
        self.inner.do_action(request).await
    }

    async fn list_actions(
        &self,
        request: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        self.admit(&request)?;
        self.inner.list_actions(request).await
    }
}

/// Flight SQL's TLS configuration of a certificate chain and key (PEM files).
pub fn tls_config(cert: &Path, key: &Path) -> CliResult<ServerTlsConfig> {
    let read = |file: &Path| {
        std::fs::read(file).map_err(|e| CliError::io(format!("TLS {}", file.display()), e))
    };
    Ok(ServerTlsConfig::new().identity(Identity::from_pem(read(cert)?, read(key)?)))
}

/// Binds the Flight SQL listener on `addr`; its address (port 0 picks one).
pub async fn bind(addr: SocketAddr) -> CliResult<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CliError::io(format!("listening on {addr} (--flight)"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::io("the Flight SQL listening address", e))?;
    Ok((listener, local))
}

/// The gRPC server of Flight SQL, with TLS when `tls` is given (checked
/// here, before anything listens).
pub fn server(tls: Option<ServerTlsConfig>) -> CliResult<Server> {
    let builder = Server::builder();
    match tls {
        None => Ok(builder),
        Some(tls) => builder
            .tls_config(tls)
            .map_err(|e| CliError::msg(format!("Flight SQL TLS certificate and key: {e}"))),
    }
}

/// Serves `service` on `listener` with `server` until the process ends.
pub async fn serve(mut server: Server, listener: tokio::net::TcpListener, service: LogsqlFlight) {
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    if let Err(e) = server
        .add_service(FlightServiceServer::new(service))
        .serve_with_incoming(incoming)
        .await
    {
        eprintln!("error: the Flight SQL server stopped: {e}");
    }
}
