//! The Arrow Flight SQL front end, on datafusion-flight-sql-server (over the
//! server's one session, as the Postgres wire: its tables, table functions,
//! plan guard and query limits): a [`FlightService`] in front of the crate's
//! that checks each client's credentials ([`login`]), vets each statement
//! with the session's statement checks ([`ServeSession::vet`]: `ASOF JOIN`s
//! rewritten, what a shared session must not run refused), then hands the
//! request on.
//!
//! Logging in: without a password every client may query; with one, a client
//! sends `authorization: Basic base64(user:password)` (with the handshake, as
//! ADBC and `pyarrow.flight` do, or with any call) and gets back a bearer
//! token (`authorization: Bearer ...`) it sends with the calls that follow.
//!
//! A query runs while its `DoGet` stream is read: a client that cancels or
//! drops the stream (or the connection) drops the query's plan, so its scans
//! stop and its memory and slot are freed. The ticket of each statement's
//! `FlightInfo` carries a random query id, under which its `DoGet` is
//! registered in the server's [`RunningQueries`]: a `CancelFlightInfo`
//! action (or Flight SQL's older `CancelQuery`) with that `FlightInfo`, from
//! any client, stops the query the same way ([`tickets`]).

mod login;
mod parameters;
mod tickets;

use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::{
    ActionCancelQueryRequest, ActionCancelQueryResult, ActionCreatePreparedStatementRequest, Any,
    Command, ProstMessageExt,
};
use arrow_flight::{
    Action, ActionType, CancelFlightInfoRequest, CancelFlightInfoResult, CancelStatus, Criteria,
    Empty, FlightData, FlightDescriptor, FlightInfo, HandshakeRequest, HandshakeResponse, PollInfo,
    SchemaResult, Ticket,
};
use datafusion_flight_sql_server::service::FlightSqlService;
use datafusion_flight_sql_server::state::{CommandTicket, QueryHandle};
use futures::{Stream, StreamExt};
use prost::Message;
use tonic::metadata::MetadataValue;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tonic::{Request, Response, Status, Streaming};

use crate::cancel::{QueryKey, RunningQueries};
use crate::config::Auth;
use crate::error::{ServeError, ServeResult};
use crate::session::ServeSession;
use login::FlightLogin;
use tickets::{cancellable, cancelled, is_statement, query_id, tag_tickets};

/// The `CreatePreparedStatement` action's type.
const CREATE_PREPARED_STATEMENT: &str = "CreatePreparedStatement";

/// Arrow Flight's action that cancels the query of a `FlightInfo`.
const CANCEL_FLIGHT_INFO: &str = "CancelFlightInfo";

/// Flight SQL's older action of the same (deprecated for `CancelFlightInfo`).
const CANCEL_QUERY: &str = "CancelQuery";

/// A one-result action answer.
fn action_result(body: Vec<u8>) -> Stream_<arrow_flight::Result> {
    let result = arrow_flight::Result { body: body.into() };
    Box::pin(futures::stream::once(async move { Ok(result) }))
}

/// The Flight SQL service of a server: login and statement checks in front of
/// datafusion-flight-sql-server's service.
pub struct LogsqlFlight {
    inner: FlightSqlService,
    login: FlightLogin,
    session: ServeSession,
    /// The session's catalog, listed when a client asks for every catalog.
    catalog: String,
    /// The server's running queries (shared with the Postgres wire).
    running: Arc<RunningQueries>,
}

impl LogsqlFlight {
    /// The service over `session` (the server's one session, whose
    /// running queries it registers its `DoGet`s in), for `auth`.
    pub fn new(session: &ServeSession, auth: &Auth) -> Self {
        let state = session.state();
        let catalog = state.config().options().catalog.default_catalog.clone();
        Self {
            inner: FlightSqlService::new(state).with_sql_options(session.sql_options()),
            login: FlightLogin::new(auth),
            session: session.clone(),
            catalog,
            running: Arc::clone(session.running()),
        }
    }

    /// Stops the running queries of `info`'s tickets: `Cancelled` if one
    /// ran, else `NotCancellable` (it ended, its `DoGet` has not started, or
    /// the tickets name no query of this server).
    fn cancel(&self, info: &FlightInfo) -> CancelStatus {
        let mut cancelled = false;
        for ticket in info.endpoint.iter().filter_map(|e| e.ticket.as_ref()) {
            if let Some(id) = query_id(&ticket.ticket) {
                cancelled |= self.running.cancel(&QueryKey::Ticket(id), &[]);
            }
        }
        if cancelled {
            log::info!("Flight SQL cancel: stopping a running query");
            CancelStatus::Cancelled
        } else {
            CancelStatus::NotCancellable
        }
    }

    /// Checks `request`'s credentials; the bearer token to hand back after a
    /// `Basic` login.
    #[allow(clippy::result_large_err)]
    fn admit<T>(&self, request: &Request<T>) -> Result<Option<String>, Status> {
        self.login.check(request.metadata())
    }

    /// `sql` with its `ASOF JOIN`s rewritten, or why it may not run
    /// ([`ServeSession::vet`]).
    #[allow(clippy::result_large_err)]
    fn vet_sql(&self, sql: &str) -> Result<String, Status> {
        self.session.vet(sql).map_err(|e| match e {
            ServeError::Refused(why) => Status::permission_denied(why),
            other => Status::internal(other.to_string()),
        })
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

pub(crate) type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl FlightService for LogsqlFlight {
    type HandshakeStream = Stream_<HandshakeResponse>;
    type ListFlightsStream = <FlightSqlService as FlightService>::ListFlightsStream;
    type DoGetStream = Stream_<FlightData>;
    type DoPutStream = Stream_<arrow_flight::PutResult>;
    type DoExchangeStream = <FlightSqlService as FlightService>::DoExchangeStream;
    type DoActionStream = Stream_<arrow_flight::Result>;
    type ListActionsStream = Stream_<ActionType>;

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
        let mut response = self.inner.get_flight_info(request).await?;
        tag_tickets(response.get_mut());
        Ok(response)
    }

    async fn poll_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        let request = self.vet_descriptor(request)?;
        let mut response = self.inner.poll_flight_info(request).await?;
        if let Some(info) = response.get_mut().info.as_mut() {
            tag_tickets(info);
        }
        Ok(response)
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
        let id = query_id(ticket);
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
        let Some(id) = id else {
            return self.inner.do_get(request).await;
        };
        let (token, registration) = self.running.register(QueryKey::Ticket(id), Vec::new());
        let response = tokio::select! {
            biased;
            _ = token.cancelled() => return Err(cancelled()),
            response = self.inner.do_get(request) => response?,
        };
        Ok(response.map(|stream| cancellable(stream, token, registration)))
    }

    async fn do_put(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        // Binds a prepared statement's parameters, read within a bound
        // (updates are not run): the statement is vetted when it runs, in
        // `do_get`.
        self.admit(&request)?;
        parameters::do_put(request.into_inner())
            .await
            .map(Response::new)
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
        let invalid = |e: prost::DecodeError| Status::invalid_argument(e.to_string());
        if action.r#type == CANCEL_FLIGHT_INFO {
            let cancel = CancelFlightInfoRequest::decode(action.body.clone()).map_err(invalid)?;
            let info = cancel.info.ok_or_else(|| {
                Status::invalid_argument("CancelFlightInfo without the FlightInfo to cancel")
            })?;
            let result = CancelFlightInfoResult::new(self.cancel(&info));
            return Ok(Response::new(action_result(result.encode_to_vec())));
        } else if action.r#type == CANCEL_QUERY {
            let any = Any::decode(action.body.clone()).map_err(invalid)?;
            let cancel = any
                .unpack::<ActionCancelQueryRequest>()
                .ok()
                .flatten()
                .ok_or_else(|| Status::invalid_argument("CancelQuery without its request"))?;
            let info = FlightInfo::decode(cancel.info).map_err(invalid)?;
            // Its CancelResult numbers CANCELLED and NOT_CANCELLABLE as CancelStatus does.
            let result = ActionCancelQueryResult {
                result: self.cancel(&info) as i32,
            };
            return Ok(Response::new(action_result(
                result.as_any().encode_to_vec(),
            )));
        } else if action.r#type == CREATE_PREPARED_STATEMENT {
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
        let inner = self.inner.list_actions(request).await?.into_inner();
        let cancel = ActionType {
            r#type: CANCEL_FLIGHT_INFO.to_string(),
            description: "Stops the running query of a FlightInfo \
                          (CancelFlightInfoRequest; answers CancelFlightInfoResult)"
                .into(),
        };
        Ok(Response::new(Box::pin(
            inner.chain(futures::stream::once(async move { Ok(cancel) })),
        )))
    }
}

/// Flight SQL's TLS configuration of a certificate chain and key (PEM files).
pub fn tls_config(cert: &Path, key: &Path) -> ServeResult<ServerTlsConfig> {
    let read = |file: &Path| {
        std::fs::read(file).map_err(|e| ServeError::io(format!("TLS {}", file.display()), e))
    };
    Ok(ServerTlsConfig::new().identity(Identity::from_pem(read(cert)?, read(key)?)))
}

/// Binds the Flight SQL listener on `addr`; its address (port 0 picks one).
pub async fn bind(addr: SocketAddr) -> ServeResult<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::io(format!("listening on {addr} (--flight)"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| ServeError::io("the Flight SQL listening address", e))?;
    Ok((listener, local))
}

/// The gRPC server of Flight SQL, with TLS when `tls` is given (checked
/// here, before anything listens).
pub fn server(tls: Option<ServerTlsConfig>) -> ServeResult<Server> {
    let builder = Server::builder();
    match tls {
        None => Ok(builder),
        Some(tls) => builder
            .tls_config(tls)
            .map_err(|e| ServeError::Tls(format!("Flight SQL TLS certificate and key: {e}"))),
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
