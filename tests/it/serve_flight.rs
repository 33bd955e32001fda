//! `logsql serve --flight` (feature `flight`), driven by arrow-flight's Flight
//! SQL client over loopback: answers equal the CLI's for the same queries on
//! the same files (a `--table`, windows, `read_topic`, ASOF JOIN), reads
//! outside the roots and writes are refused, and with `--password-file` only
//! a client that logged in with the password gets answers.

use arrow_flight::sql::client::FlightSqlServiceClient;
use datafusion::arrow::csv::WriterBuilder;
use datafusion::arrow::record_batch::RecordBatch;
use futures::TryStreamExt;
use tonic::transport::Channel;

use super::serve::{Server, cli_rows, root};

/// A Flight SQL client of the server's Flight SQL port.
async fn client(server: &Server) -> FlightSqlServiceClient<Channel> {
    let port = server.flight_port.expect("started with --flight");
    let channel = Channel::from_shared(format!("http://127.0.0.1:{port}"))
        .expect("a URI")
        .connect()
        .await
        .expect("connect to Flight SQL");
    FlightSqlServiceClient::new(channel)
}

/// Runs `sql`; its rows as CSV without a header, or the server's error.
async fn query(client: &mut FlightSqlServiceClient<Channel>, sql: &str) -> Result<String, String> {
    let info = client
        .execute(sql.to_string(), None)
        .await
        .map_err(|e| e.to_string())?;
    let mut batches: Vec<RecordBatch> = Vec::new();
    for endpoint in info.endpoint {
        let ticket = endpoint.ticket.expect("a ticket");
        let stream = client.do_get(ticket).await.map_err(|e| e.to_string())?;
        batches.extend(
            stream
                .try_collect::<Vec<_>>()
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    let mut out = Vec::new();
    let mut writer = WriterBuilder::new().with_header(false).build(&mut out);
    for batch in &batches {
        writer.write(batch).expect("CSV");
    }
    drop(writer);
    Ok(String::from_utf8(out).expect("utf-8"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

#[test]
fn flight_sql_answers_equal_the_clis() {
    let dir = root();
    let f = dir.path().join("demo.mcap").display().to_string();
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--table",
        &format!("demo={f}"),
        "--flight",
        "127.0.0.1:0",
    ]);
    let queries = [
        "SELECT topic, count(*) AS n FROM demo GROUP BY topic ORDER BY topic".to_string(),
        format!(
            "SELECT count(*) AS n, CAST(round(avg(linear_acceleration['z']) * 1000000) AS BIGINT) \
             AS z FROM read_topic('{f}', '/imu')"
        ),
        "SELECT topic, CAST(date_bin(INTERVAL '1 second', log_time) AS BIGINT) AS s, \
         count(*) AS n FROM demo GROUP BY topic, s ORDER BY n DESC, topic, s LIMIT 5"
            .to_string(),
        format!(
            "SELECT count(*) AS n, sum(CAST(t.log_time - i.log_time AS BIGINT)) AS lag \
             FROM (SELECT log_time FROM '{f}' WHERE topic = '/tf') t \
             ASOF JOIN (SELECT log_time FROM '{f}' WHERE topic = '/imu') i \
             MATCH_CONDITION (t.log_time >= i.log_time)"
        ),
    ];
    runtime().block_on(async {
        let mut client = client(&server).await;
        for sql in &queries {
            let got = query(&mut client, sql).await.expect(sql);
            let want = cli_rows(&sql.replace("FROM demo", &format!("FROM '{f}'")));
            assert_eq!(got, want, "{sql}");
        }
        assert_eq!(
            query(&mut client, &queries[0]).await.unwrap(),
            "/camera/compressed,100\n/diagnostics,10\n/imu,2000\n/tf,500\n"
        );

        let outside = query(&mut client, "SELECT count(*) FROM '/etc/passwd'")
            .await
            .unwrap_err();
        assert!(outside.contains("outside the data roots"), "{outside}");
        let copy = format!("COPY (SELECT 1) TO '{}/x.csv'", dir.path().display());
        let write = query(&mut client, &copy).await.unwrap_err();
        assert!(write.contains("writes no files"), "{write}");
        let ddl = query(
            &mut client,
            &format!("CREATE EXTERNAL TABLE x STORED AS MCAP LOCATION '{f}'"),
        )
        .await
        .unwrap_err();
        assert!(ddl.contains("not allowed on a logsql server"), "{ddl}");
        // The server goes on.
        assert_eq!(
            query(&mut client, "SELECT count(*) FROM demo")
                .await
                .unwrap(),
            "2610\n"
        );
    });
}

#[test]
fn flight_sql_with_a_password_admits_only_clients_that_log_in() {
    let dir = root();
    let password_file = dir.path().join("password");
    crate::serve::write_password(&password_file, "a long flight password\n");
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--table",
        &format!("demo={}", dir.path().join("demo.mcap").display()),
        "--password-file",
        password_file.to_str().unwrap(),
        "--flight",
        "127.0.0.1:0",
    ]);
    runtime().block_on(async {
        let sql = "SELECT count(*) FROM demo";
        let mut anonymous = client(&server).await;
        let refused = query(&mut anonymous, sql).await.unwrap_err();
        assert!(
            refused.contains("needs a user name and password"),
            "{refused}"
        );

        let mut wrong = client(&server).await;
        let refused = wrong.handshake("logsql", "not it").await.unwrap_err();
        assert!(
            refused.to_string().contains("wrong user name or password"),
            "{refused}"
        );

        let mut client = client(&server).await;
        client
            .handshake("logsql", "a long flight password")
            .await
            .expect("log in");
        assert_eq!(query(&mut client, sql).await.unwrap(), "2610\n");

        let mut forged = self::client(&server).await;
        forged.set_token("not-the-token".to_string());
        let refused = query(&mut forged, sql).await.unwrap_err();
        assert!(
            refused.contains("unknown or expired bearer token"),
            "{refused}"
        );
    });
}

#[test]
fn flight_sql_binds_one_parameter_row_and_refuses_a_stream_without_end() {
    use arrow_flight::encode::FlightDataEncoderBuilder;
    use arrow_flight::sql::{
        ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult, Any,
        CommandPreparedStatementQuery, ProstMessageExt,
    };
    use arrow_flight::{Action, FlightDescriptor};
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use prost::Message;
    use std::sync::Arc;

    let dir = root();
    let server = Server::start(&[
        "--root",
        dir.path().to_str().unwrap(),
        "--flight",
        "127.0.0.1:0",
    ]);
    runtime().block_on(async {
        let mut client = client(&server).await;
        // A prepared statement with its one parameter row, as ADBC binds it.
        let mut prepared = client
            .prepare("SELECT $1 + 1 AS x".to_string(), None)
            .await
            .expect("prepare");
        let one = |v: Vec<i64>| {
            let schema = Arc::new(Schema::new(vec![Field::new("$1", DataType::Int64, false)]));
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(v))]).unwrap()
        };
        prepared.set_parameters(one(vec![41])).unwrap();
        let info = prepared.execute().await.expect("execute");
        let ticket = info.endpoint[0].ticket.clone().expect("a ticket");
        let batches: Vec<RecordBatch> = client
            .do_get(ticket)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let x = batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0);
        assert_eq!(x, 42);
        prepared.set_parameters(one(vec![1, 2])).unwrap();
        let two = prepared.execute().await.unwrap_err().to_string();
        assert!(two.contains("single row"), "{two}");

        // A client streaming parameter batches without end is stopped at
        // the bound, not buffered.
        let action = Action {
            r#type: "CreatePreparedStatement".to_string(),
            body: ActionCreatePreparedStatementRequest {
                query: format!(
                    "SELECT count(*) FROM '{}' WHERE topic = $1",
                    dir.path().join("demo.mcap").display()
                ),
                transaction_id: None,
            }
            .as_any()
            .encode_to_vec()
            .into(),
        };
        let mut results = client.do_action(action).await.expect("create");
        let created = results.try_next().await.unwrap().expect("a result");
        let created: ActionCreatePreparedStatementResult = Any::decode(created.body)
            .unwrap()
            .unpack()
            .unwrap()
            .expect("the result");
        let command = CommandPreparedStatementQuery {
            prepared_statement_handle: created.prepared_statement_handle,
        };
        let descriptor = FlightDescriptor::new_cmd(command.as_any().encode_to_vec());
        let megabyte = "x".repeat(1 << 20);
        let schema = Arc::new(Schema::new(vec![Field::new("$1", DataType::Utf8, false)]));
        let batches = (0..40).map(move |_| {
            Ok(RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(StringArray::from(vec![megabyte.as_str()]))],
            )
            .unwrap())
        });
        let data = FlightDataEncoderBuilder::new()
            .with_flight_descriptor(Some(descriptor))
            .build(futures::stream::iter(batches))
            .try_collect::<Vec<_>>()
            .await
            .unwrap();
        let refused = match client.do_put(futures::stream::iter(data)).await {
            Ok(mut answers) => answers
                .try_next()
                .await
                .map(|_| ())
                .unwrap_err()
                .to_string(),
            Err(e) => e.to_string(),
        };
        assert!(
            refused.contains("parameters are one row, sent in at most"),
            "{refused}"
        );
        // The server goes on.
        assert_eq!(query(&mut client, "SELECT 1 AS one").await.unwrap(), "1\n");
    });
}
