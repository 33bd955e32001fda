//! The tickets of a Flight SQL server's statements: each carries a random
//! query id ([`tag_tickets`]) under which its `DoGet` is registered in the
//! server's running queries, so a `CancelFlightInfo` naming it stops that
//! query ([`cancellable`]).

use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::Command;
use arrow_flight::{FlightData, FlightInfo};
use datafusion_flight_sql_server::service::FlightSqlService;
use datafusion_flight_sql_server::state::CommandTicket;
use datafusion_postgres::pgwire::api::auth::sasl::scram::random_nonce;
use futures::StreamExt;
use prost::Message;
use prost::bytes::Bytes;
use tonic::Status;

use super::Stream_;
use crate::cancel::Registration;

/// A statement's ticket as this server hands it out: datafusion-flight-sql-server's
/// (its command in field 2) with a query id in a field that crate's decoding
/// skips.
#[derive(Clone, PartialEq, Message)]
struct QueryTicket {
    #[prost(bytes = "bytes", tag = "2")]
    command: Bytes,
    #[prost(string, tag = "15")]
    query_id: String,
}

/// The query id `ticket` carries, if any.
pub(super) fn query_id(ticket: &Bytes) -> Option<String> {
    QueryTicket::decode(ticket.clone())
        .ok()
        .map(|t| t.query_id)
        .filter(|id| !id.is_empty())
}

/// `info` with a fresh query id in the ticket of each statement endpoint.
pub(super) fn tag_tickets(info: &mut FlightInfo) {
    for endpoint in &mut info.endpoint {
        let Some(ticket) = endpoint.ticket.as_mut() else {
            continue;
        };
        let statement = CommandTicket::try_decode(ticket.ticket.clone())
            .is_ok_and(|CommandTicket { command }| is_statement(&command));
        if let (true, Ok(mut tagged)) = (statement, QueryTicket::decode(ticket.ticket.clone())) {
            tagged.query_id = random_nonce();
            ticket.ticket = tagged.encode_to_vec().into();
        }
    }
}

/// The error a cancelled query's `DoGet` ends with.
pub(super) fn cancelled() -> Status {
    Status::cancelled("query cancelled: a client cancelled it (CancelFlightInfo)")
}

/// `stream` run by a task of its own, stopping at `token` (the stream is
/// dropped then, so the query's plan is, even while the client reads
/// nothing) or when the client goes away; a stopped stream ends with
/// [`cancelled`]. `registration` is dropped with the task.
pub(super) fn cancellable(
    mut stream: <FlightSqlService as FlightService>::DoGetStream,
    token: tokio_util::sync::CancellationToken,
    registration: Registration,
) -> Stream_<FlightData> {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let stopped = token.clone();
    tokio::spawn(async move {
        let _registration = registration;
        loop {
            let item = tokio::select! {
                biased;
                _ = token.cancelled() => return,
                _ = tx.closed() => return,
                item = stream.next() => item,
            };
            let Some(item) = item else { return };
            tokio::select! {
                biased;
                _ = token.cancelled() => return,
                sent = tx.send(item) => if sent.is_err() { return },
            }
        }
    });
    Box::pin(futures::stream::unfold(
        Some((rx, stopped)),
        |state| async move {
            let (mut rx, stopped) = state?;
            match rx.recv().await {
                Some(item) => Some((item, Some((rx, stopped)))),
                None if stopped.is_cancelled() => Some((Err(cancelled()), None)),
                None => None,
            }
        },
    ))
}

/// Whether a command carries a statement (SQL or a Substrait plan).
pub(super) fn is_statement(command: &Command) -> bool {
    matches!(
        command,
        Command::CommandStatementQuery(_)
            | Command::CommandPreparedStatementQuery(_)
            | Command::CommandStatementSubstraitPlan(_)
    )
}
