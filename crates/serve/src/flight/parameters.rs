//! `DoPut` over Flight SQL: what it does on a logsql server, bind a
//! prepared query's parameters (one row), read within a bound. The
//! parameter stream a client sends is read only up to
//! [`MAX_PARAMETER_BYTES`] (and [`MAX_PARAMETER_MESSAGES`] messages), so a
//! client streaming batches without end is refused at the bound instead of
//! being buffered (datafusion-flight-sql-server keeps every batch until the
//! stream ends, then counts the rows). Updates, ingestion and Substrait
//! plans are not run here.

use arrow_flight::decode::{DecodedPayload, FlightDataDecoder};
use arrow_flight::sql::{Any, Command, DoPutPreparedStatementResult};
use arrow_flight::{FlightData, PutResult};
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion_flight_sql_server::state::QueryHandle;
use futures::TryStreamExt;
use prost::Message;
use prost::bytes::Bytes;
use tonic::{Status, Streaming};

use super::Stream_;

/// The most bytes of parameter messages a `DoPut` may send.
pub(super) const MAX_PARAMETER_BYTES: usize = 16 << 20;

/// The most parameter messages a `DoPut` may send.
pub(super) const MAX_PARAMETER_MESSAGES: usize = 64;

/// What a message costs to hold: its bytes and a bound for the rest.
fn held(message: &FlightData) -> usize {
    message.data_header.len() + message.data_body.len() + message.app_metadata.len() + 128
}

fn invalid(e: impl std::fmt::Display) -> Status {
    Status::invalid_argument(e.to_string())
}

/// Binds the parameters `stream` sends to the prepared query its first
/// message names, and answers with the handle that carries them.
pub(super) async fn do_put(
    mut stream: Streaming<FlightData>,
) -> Result<Stream_<PutResult>, Status> {
    let first = stream
        .message()
        .await?
        .ok_or_else(|| invalid("DoPut sent no message"))?;
    let command = first
        .flight_descriptor
        .as_ref()
        .map(|d| d.cmd.clone())
        .ok_or_else(|| invalid("DoPut's first message has no flight descriptor"))?;
    let query = match Command::try_from(Any::decode(command).map_err(invalid)?).map_err(invalid)? {
        Command::CommandPreparedStatementQuery(query) => query,
        other => {
            return Err(Status::unimplemented(format!(
                "{}: a logsql server runs queries only (DoPut binds a prepared query's \
                 parameters)",
                other.type_url()
            )));
        }
    };
    let mut handle =
        QueryHandle::try_decode(query.prepared_statement_handle).map_err(Status::from)?;
    let mut bytes = held(&first);
    let mut messages = vec![first];
    while let Some(message) = stream.message().await? {
        bytes += held(&message);
        if bytes > MAX_PARAMETER_BYTES || messages.len() >= MAX_PARAMETER_MESSAGES {
            return Err(Status::resource_exhausted(format!(
                "a prepared query's parameters are one row, sent in at most {} messages of {} \
                 in all (Flight SQL DoPut)",
                MAX_PARAMETER_MESSAGES,
                logsql::ops::units::bytes(MAX_PARAMETER_BYTES as u64)
            )));
        }
        messages.push(message);
    }
    let parameters = encode_one_row(messages).await?;
    handle.set_parameters(Some(parameters));
    let result = DoPutPreparedStatementResult {
        prepared_statement_handle: Some(Bytes::from(handle)),
    };
    let answer = PutResult {
        app_metadata: result.encode_to_vec().into(),
    };
    Ok(Box::pin(futures::stream::iter([Ok(answer)])))
}

/// The parameter row `messages` carry, as an Arrow IPC stream (what the
/// prepared query's handle keeps).
async fn encode_one_row(messages: Vec<FlightData>) -> Result<Bytes, Status> {
    let mut decoder = FlightDataDecoder::new(futures::stream::iter(messages.into_iter().map(Ok)));
    let mut writer: Option<StreamWriter<Vec<u8>>> = None;
    let mut rows = 0;
    while let Some(decoded) = decoder.try_next().await.map_err(Status::from)? {
        match decoded.payload {
            DecodedPayload::None => {}
            DecodedPayload::Schema(schema) => match writer {
                None => writer = Some(StreamWriter::try_new(Vec::new(), &schema).map_err(invalid)?),
                Some(_) => {
                    return Err(invalid(
                        "parameter flight data must contain a single schema",
                    ));
                }
            },
            DecodedPayload::RecordBatch(batch) => {
                rows += batch.num_rows();
                if rows > 1 {
                    return Err(invalid("parameters should contain a single row"));
                }
                let writer = writer
                    .as_mut()
                    .ok_or_else(|| invalid("parameter flight data must have a known schema"))?;
                writer.write(&batch).map_err(invalid)?;
            }
        }
    }
    let mut writer = writer.ok_or_else(|| invalid("parameter flight data must have a schema"))?;
    writer.finish().map_err(invalid)?;
    Ok(writer.into_inner().map_err(invalid)?.into())
}
