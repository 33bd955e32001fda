"""The Arrow Flight SQL part of the ``serve`` interop suite: ``logsql serve
--flight`` driven by the ADBC Flight SQL driver (``adbc-driver-flightsql``)
and by ``pyarrow.flight`` (Flight SQL commands encoded here, as the protocol
defines them), each answer compared with the logsql CLI's; refusals (reads
outside the roots, writes, DDL, wrong passwords) checked."""

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pyarrow.flight as fl
import serve_load

FLIGHT_SQL = "type.googleapis.com/arrow.flight.protocol.sql."


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def statement_query(sql):
    """A Flight SQL ``CommandStatementQuery`` packed in a protobuf ``Any``."""
    command = _field(1, sql.encode())
    return _field(1, (FLIGHT_SQL + "CommandStatementQuery").encode()) + _field(2, command)


def _varint_at(data, i):
    """The varint at ``data[i:]`` and the index after it."""
    n = shift = 0
    while True:
        byte = data[i]
        n |= (byte & 0x7F) << shift
        i += 1
        shift += 7
        if not byte & 0x80:
            return n, i


def _enum_field_1(message):
    """Field 1 of a protobuf message holding one enum (0 when left out)."""
    if not message:
        return 0
    if message[0] != 0x08:
        raise ValueError(f"not an enum in field 1: {message!r}")
    return _varint_at(message, 1)[0]


CANCELLED, NOT_CANCELLABLE = 1, 3


def cancel_flight_info(client, info, options=None):
    """Arrow Flight's ``CancelFlightInfo`` action for ``info`` (its
    ``CancelFlightInfoRequest`` encoded here: pyarrow has no method for it);
    the ``CancelStatus`` answered (``CANCELLED`` or ``NOT_CANCELLABLE``)."""
    body = _field(1, info.serialize())
    results = list(client.do_action(fl.Action("CancelFlightInfo", body), options or fl.FlightCallOptions()))
    return _enum_field_1(results[0].body.to_pybytes())


def cancel_query(client, info, options=None):
    """Flight SQL's older ``CancelQuery`` action for ``info``; the
    ``CancelResult`` answered (same numbers as ``CancelStatus``)."""
    request = _field(1, info.serialize())
    body = _field(1, (FLIGHT_SQL + "ActionCancelQueryRequest").encode()) + _field(2, request)
    results = list(client.do_action(fl.Action("CancelQuery", body), options or fl.FlightCallOptions()))
    answer = results[0].body.to_pybytes()
    # An Any: the type URL (field 1), then the result message (field 2).
    length, i = _varint_at(answer, 1)
    i += length
    if answer[i] != 0x12:
        raise ValueError(f"not an Any: {answer!r}")
    length, i = _varint_at(answer, i + 1)
    return _enum_field_1(answer[i : i + length])


def pyarrow_query(client, sql, options=None):
    """``sql`` over Flight SQL with ``pyarrow.flight``: GetFlightInfo, then DoGet."""
    options = options or fl.FlightCallOptions()
    info = client.get_flight_info(fl.FlightDescriptor.for_command(statement_query(sql)), options)
    return client.do_get(info.endpoints[0].ticket, options).read_all()


def adbc_connect(port, user=None, password=None):
    kwargs = {}
    if user is not None:
        kwargs = {"username": user, "password": password}
    return flight_sql.connect(f"grpc://127.0.0.1:{port}", db_kwargs=kwargs, autocommit=True)


def adbc_table(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def rows(table):
    """The rows of an Arrow table as tuples of Python values."""
    columns = [c.to_pylist() for c in table.columns]
    return list(zip(*columns))


def cli_rows(cli, sql, demo):
    """The CLI's rows for ``sql`` (``demo`` as the file's path), as tuples in column order."""
    return [tuple(r.values()) for r in cli.query(sql.replace("FROM demo", f"FROM '{demo}'"))]


def queries(demo):
    """Queries whose answers must equal the CLI's: counts, windows,
    ``read_topic``, both ASOF JOIN spellings."""
    return serve_load.queries(demo) + [
        "SELECT topic, sequence, CAST(log_time - lag(log_time) OVER (PARTITION BY topic "
        "ORDER BY log_time) AS BIGINT) AS gap FROM demo WHERE topic = '/tf' "
        "ORDER BY log_time LIMIT 5 OFFSET 1",
        f"SELECT count(*) AS n, sum(CAST(t.log_time - i.log_time AS BIGINT)) AS lag "
        f"FROM (SELECT log_time FROM '{demo}' WHERE topic = '/tf') t "
        f"ASOF LEFT JOIN (SELECT log_time FROM '{demo}' WHERE topic = '/imu') i "
        f"ON t.log_time >= i.log_time",
    ]


def refused(checks, name, run, needle):
    """Records check ``name``: ``run()`` must raise an error mentioning ``needle``."""

    def check():
        try:
            run()
        except Exception as e:  # the clients' own error types
            return None if needle in str(e) else f"refused, but: {e}"
        return "it ran"

    checks.check(name, check)


def run_open(checks, cli, port, demo):
    """Checks against a server without a password."""
    conn = adbc_connect(port)
    try:
        for sql in queries(demo):
            want = cli_rows(cli, sql, demo)

            def same(sql=sql, want=want):
                got = rows(adbc_table(conn, sql))
                return None if got == want else f"{got} != {want}"

            checks.check(f"ADBC Flight SQL equals the CLI: {sql[:60]}", same)

        def nested():
            sql = f"SELECT linear_acceleration FROM read_topic('{demo}', '/imu') ORDER BY log_time LIMIT 3"
            table = adbc_table(conn, sql)
            if not pa.types.is_struct(table.schema.field(0).type):
                return f"not a struct: {table.schema}"
            got = table.column(0).to_pylist()
            want = [r["linear_acceleration"] for r in cli.query(sql)]
            return None if got == want else f"{got} != {want}"

        checks.check("ADBC Flight SQL: a read_topic struct arrives as an Arrow struct", nested)

        def tables():
            objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
            names = {
                t["table_name"]
                for c in objects
                for s in c["catalog_db_schemas"] or []
                for t in s["db_schema_tables"] or []
            }
            return None if "demo" in names else f"no demo in {sorted(names)}"

        checks.check("ADBC Flight SQL: the --table table is listed", tables)

        def prepared():
            with conn.cursor() as cur:
                cur.execute("SELECT count(*) AS n FROM demo WHERE topic = $1", parameters=("/imu",))
                got = cur.fetchone()[0]
            return None if got == 2000 else f"{got} != 2000"

        checks.check("ADBC Flight SQL: a parameterised count", prepared)

        refused(
            checks,
            "ADBC Flight SQL: a read outside the roots is refused",
            lambda: adbc_table(conn, "SELECT count(*) FROM '/etc/passwd'"),
            "outside the data roots",
        )
        refused(
            checks,
            "ADBC Flight SQL: COPY TO is refused without --allow-write",
            lambda: adbc_table(conn, "COPY (SELECT 1) TO '/tmp/logsql-flight-refused.csv'"),
            "writes no files",
        )
        refused(
            checks,
            "ADBC Flight SQL: CREATE EXTERNAL TABLE is refused",
            lambda: adbc_table(
                conn, f"CREATE EXTERNAL TABLE x STORED AS MCAP LOCATION '{demo}'"
            ),
            "not allowed on a logsql server",
        )
        # A hostile client's statements fail alone: one nesting 5,000 levels
        # (it overflowed the server's stack), a value of a terabyte (it
        # aborted the server while planning), a table every client would see.
        refused(
            checks,
            "ADBC Flight SQL: a statement nesting 5,000 levels is refused",
            lambda: adbc_table(conn, "SELECT " + "+".join(["1"] * 5000)),
            "statement too complex",
        )
        refused(
            checks,
            "ADBC Flight SQL: a value of a terabyte is refused before it is made",
            lambda: adbc_table(conn, "SELECT length(repeat(arrow_cast('x', 'LargeUtf8'), 1000000000000))"),
            "logsql.max_value_bytes",
        )
        refused(
            checks,
            "ADBC Flight SQL: SELECT ... INTO is refused",
            lambda: adbc_table(conn, "SELECT 42 AS x INTO t"),
            "SELECT ... INTO is not allowed",
        )
        # The server goes on after refusals.
        got = rows(adbc_table(conn, "SELECT count(*) FROM demo"))
        checks.check(
            "ADBC Flight SQL: the server answers after refusals",
            lambda: None if got == [(2610,)] else f"{got}",
        )
    finally:
        conn.close()

    client = fl.FlightClient(f"grpc://127.0.0.1:{port}")
    sql = queries(demo)[0]
    want = cli_rows(cli, sql, demo)

    def same():
        got = rows(pyarrow_query(client, sql))
        return None if got == want else f"{got} != {want}"

    checks.check("pyarrow.flight: per-topic counts equal the CLI's", same)
    refused(
        checks,
        "pyarrow.flight: a read outside the roots is refused",
        lambda: pyarrow_query(client, "SELECT * FROM '../../etc/passwd'"),
        "outside the data roots",
    )
    client.close()


def run_password(checks, cli, port, demo, password):
    """Checks against a server with ``--password-file``."""
    sql = queries(demo)[0]
    want = cli_rows(cli, sql, demo)

    conn = adbc_connect(port, "logsql", password)
    try:
        got = rows(adbc_table(conn, sql))
        checks.check(
            "ADBC Flight SQL with the password: per-topic counts equal the CLI's",
            lambda: None if got == want else f"{got} != {want}",
        )
    finally:
        conn.close()

    refused(
        checks,
        "ADBC Flight SQL: a wrong password is refused",
        lambda: adbc_table(adbc_connect(port, "logsql", "wrong"), sql),
        "wrong user name or password",
    )
    refused(
        checks,
        "ADBC Flight SQL: no password is refused",
        lambda: adbc_table(adbc_connect(port), sql),
        "needs a user name and password",
    )

    client = fl.FlightClient(f"grpc://127.0.0.1:{port}")
    header = client.authenticate_basic_token("logsql", password)
    options = fl.FlightCallOptions(headers=[header])

    def same():
        got = rows(pyarrow_query(client, sql, options))
        return None if got == want else f"{got} != {want}"

    checks.check("pyarrow.flight with the bearer token: per-topic counts equal the CLI's", same)
    # Each login gets a token of its own; the first still works after the second.
    second = client.authenticate_basic_token("logsql", password)
    checks.check("pyarrow.flight: each login gets its own bearer token",
                 lambda: None if second != header else f"{second} == {header}")
    checks.check("pyarrow.flight: the first login's token still works", same)
    refused(
        checks,
        "pyarrow.flight: a wrong password is refused",
        lambda: client.authenticate_basic_token("logsql", "wrong"),
        "wrong user name or password",
    )
    bad = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer not-the-token")])
    refused(
        checks,
        "pyarrow.flight: an unknown bearer token is refused",
        lambda: pyarrow_query(client, sql, bad),
        "unknown or expired bearer token",
    )
    client.close()
