#!/usr/bin/env python3
"""Interop test: ``logsql serve`` driven by Python's Postgres clients, psycopg 3
(simple and parameterised queries, timestamps, ``bytea``) and
``pandas.read_sql`` through SQLAlchemy, and by Arrow Flight SQL clients (the
ADBC Flight SQL driver and ``pyarrow.flight``) when the binary has Flight SQL,
each answer compared with the logsql CLI's for the same query on the same file
(the demo recording); reads outside the roots, writes and wrong passwords are
refused.

Usage: serve_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pandas as pd
import psycopg
import sqlalchemy as sa
from common import Checks, Logsql
from serve_start import start

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "tests", "data", "demo.mcap")


def expect(checks, name, passed, detail):
    """Records check ``name``: failed with ``detail`` unless ``passed``."""
    checks.check(name, lambda: None if passed else detail)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    checks = Checks()
    cli = Logsql(args.logsql)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or tmp
        os.makedirs(root, exist_ok=True)
        demo = os.path.join(root, "demo.mcap")
        shutil.copy(DEMO, demo)
        proc, port, _ = start(args.logsql, root, demo)
        try:
            run(checks, cli, port, demo)
        finally:
            proc.kill()
            proc.wait()
        run_flight(checks, cli, args.logsql, root, demo)
        run_cancels(checks, args.logsql, root, demo)
        run_load(checks, cli, args.logsql, root, demo)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


import serve_load  # noqa: E402
from serve_load import ENDLESS_COUNT, ENDLESS_ROWS  # noqa: E402


def run_load(checks, cli, binary, root, demo):
    """The bounded load run (serve_load.py), over Flight SQL too when the
    binary has it."""
    extra = ["--query-timeout", "60s", "--max-connections", "128"]
    try:
        proc, port, fport = start(binary, root, demo, *extra, flight=True)
    except RuntimeError as e:
        if "built without Arrow Flight SQL" not in str(e):
            raise
        proc, port, fport = start(binary, root, demo, *extra)
    try:
        serve_load.run(checks, cli, proc, port, fport, demo)
    finally:
        proc.kill()
        proc.wait()


def run_cancels(checks, binary, root, demo):
    """A cancelled or abandoned query stops and frees its slot: the server
    runs one query at a time (``--max-queries 1``), so the query after it
    runs only once the stopped one let go of its slot (within the timeout,
    the wait would fail naming the slots)."""
    flight = True
    try:
        proc, port, fport = start(
            binary, root, demo, "--max-queries", "1", "--query-timeout", "90s", flight=True
        )
    except RuntimeError as e:
        if "built without Arrow Flight SQL" not in str(e):
            raise
        flight = False
        proc, port, fport = start(binary, root, demo, "--max-queries", "1", "--query-timeout", "90s")

    def next_query_runs():
        """The next query's answer, or its error (a slot never freed times it out)."""
        try:
            with psycopg.connect(host="127.0.0.1", port=port, user="logsql", dbname="logsql") as conn:
                return conn.execute("SELECT count(*) FROM demo").fetchone()[0]
        except psycopg.Error as e:
            return str(e)

    try:
        conn = psycopg.connect(host="127.0.0.1", port=port, user="logsql", dbname="logsql")
        outcome = {}

        def long_query():
            try:
                conn.execute(ENDLESS_COUNT).fetchall()
                outcome["error"] = None
            except psycopg.Error as e:
                outcome["error"] = e

        with serve_load.cancelling(conn):
            long_query()
        conn.close()
        expect(
            checks,
            "psycopg: conn.cancel() stops a running query with query_canceled",
            isinstance(outcome.get("error"), psycopg.errors.QueryCanceled),
            repr(outcome),
        )
        got = next_query_runs()
        expect(checks, "psycopg: after a cancel the server runs the next query (slot freed)", got == 2610, got)

        psql = shutil.which("psql")
        if psql:
            client = subprocess.Popen(
                [psql, "-X", "-h", "127.0.0.1", "-p", str(port), "-U", "logsql", "-d", "logsql", "-c", ENDLESS_ROWS],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.5)
            client.kill()
            client.wait()
            got = next_query_runs()
            expect(
                checks,
                "psql killed mid-stream: the server stops its query and runs the next (slot freed)",
                got == 2610,
                got,
            )

        if flight:
            run_flight_cancels(checks, fport, next_query_runs)
        if proc.poll() is not None:
            expect(checks, "the server is still running after the cancels", False, proc.returncode)
    finally:
        proc.kill()
        proc.wait()


def run_flight_cancels(checks, fport, next_query_runs):
    """Flight SQL's cancels on the one-slot server of ``run_cancels``: a
    ``CancelFlightInfo`` (and the older ``CancelQuery``) stops a running
    query while its client reads nothing, the client's stream ends with the
    cancel, and a dropped ``DoGet`` stream (ADBC's ``adbc_cancel()``) frees
    the slot too."""
    import pyarrow.flight as fl
    import serve_flight

    client = fl.FlightClient(f"grpc://127.0.0.1:{fport}")
    endless = fl.FlightDescriptor.for_command(serve_flight.statement_query(ENDLESS_ROWS))

    def started():
        """A running endless query: its FlightInfo, reader and first batch's rows."""
        info = client.get_flight_info(endless)
        reader = client.do_get(info.endpoints[0].ticket)
        return info, reader, reader.read_chunk().data.num_rows

    info, reader, first = started()
    status = serve_flight.cancel_flight_info(client, info)
    got = next_query_runs()
    expect(
        checks,
        "pyarrow.flight: CancelFlightInfo of a running query answers CANCELLED, and the next query runs (slot freed)",
        first > 0 and status == serve_flight.CANCELLED and got == 2610,
        f"{first} rows, status {status}, then {got}",
    )
    try:
        # Chunk by chunk: read_all() turns a CANCELLED status into a KeyboardInterrupt.
        while True:
            reader.read_chunk()
    except StopIteration:
        ended = "the stream ended without an error"
    except fl.FlightCancelledError as e:
        ended = None if "query cancelled" in str(e) else str(e)
    except fl.FlightError as e:
        ended = f"{type(e).__name__}: {e}"
    expect(checks, "pyarrow.flight: the cancelled query's stream ends with a cancelled error", ended is None, ended)
    status = serve_flight.cancel_flight_info(client, info)
    expect(
        checks,
        "pyarrow.flight: CancelFlightInfo of a query that has stopped answers NOT_CANCELLABLE",
        status == serve_flight.NOT_CANCELLABLE,
        status,
    )

    info, reader, first = started()
    status = serve_flight.cancel_query(client, info)
    got = next_query_runs()
    expect(
        checks,
        "pyarrow.flight: Flight SQL's CancelQuery stops a running query too (slot freed)",
        first > 0 and status == serve_flight.CANCELLED and got == 2610,
        f"{first} rows, status {status}, then {got}",
    )
    reader.cancel()

    info, reader, first = started()
    reader.cancel()
    got = next_query_runs()
    expect(
        checks,
        "pyarrow.flight: a DoGet stream dropped after its first batch frees the slot",
        first > 0 and got == 2610,
        f"{first} rows, then {got}",
    )
    client.close()

    # ADBC's cancel stops its own DoGet call (no CancelFlightInfo): the server
    # sees the stream go and frees the slot all the same.
    conn = serve_flight.adbc_connect(fport)
    try:
        cur = conn.cursor()
        cur.execute(ENDLESS_ROWS)
        reader = cur.fetch_record_batch()
        first = reader.read_next_batch().num_rows
        cur.adbc_cancel()
        try:
            while True:
                reader.read_next_batch()
        except StopIteration:
            ended = "the stream ended without an error"
        except Exception as e:  # the driver's own error type
            ended = None if "cancel" in str(e).lower() else str(e)
        got = next_query_runs()
        expect(
            checks,
            "ADBC Flight SQL: cursor.adbc_cancel() stops a running query, and the next query runs (slot freed)",
            first > 0 and ended is None and got == 2610,
            f"{first} rows, {ended}, then {got}",
        )
        cur.close()
    finally:
        conn.close()


def run_flight(checks, cli, binary, root, demo):
    """The Flight SQL checks (serve_flight.py), on a server without a
    password and on one with ``--password-file``; skipped, saying why, when
    the binary was built without Flight SQL (unless LOGSQL_REQUIRE_FLIGHT=1)."""
    try:
        proc, _, port = start(binary, root, demo, flight=True)
    except RuntimeError as e:
        if "built without Arrow Flight SQL" not in str(e):
            raise
        if os.environ.get("LOGSQL_REQUIRE_FLIGHT") == "1":
            checks.check("Flight SQL: the binary serves Flight SQL", lambda: str(e))
        else:
            print("skipped Flight SQL: the binary was built without it (cargo build --features flight)")
        return
    import serve_flight

    try:
        serve_flight.run_open(checks, cli, port, demo)
    finally:
        proc.kill()
        proc.wait()
    password = "correct horse battery staple"
    password_file = os.path.join(root, "flight-password")
    with open(password_file, "w") as f:
        f.write(password + "\n")
    os.chmod(password_file, 0o600)  # serve refuses a file others may read
    proc, _, port = start(binary, root, demo, "--password-file", password_file, flight=True)
    try:
        serve_flight.run_password(checks, cli, port, demo, password)
    finally:
        proc.kill()
        proc.wait()


def run(checks, cli, port, demo):
    counts_sql = "SELECT topic, count(*) AS n FROM demo GROUP BY topic ORDER BY topic"
    want = [(r["topic"], r["n"]) for r in cli.query(counts_sql.replace("demo", f"'{demo}'", 1))]
    with psycopg.connect(host="127.0.0.1", port=port, user="logsql", dbname="logsql") as conn:
        got = conn.execute(counts_sql).fetchall()
        expect(checks, "psycopg: per-topic counts equal the CLI's", got == want, f"{got} != {want}")

        got = conn.execute(
            "SELECT count(*) FROM demo WHERE topic = %s AND sequence >= %s", ["/imu", 1000]
        ).fetchone()[0]
        want_n = cli.query(
            f"SELECT count(*) AS n FROM '{demo}' WHERE topic = '/imu' AND sequence >= 1000"
        )[0]["n"]
        expect(checks, "psycopg: a parameterised count equals the CLI's", got == want_n, f"{got} != {want_n}")

        row = conn.execute(
            "SELECT log_time, data FROM demo WHERE topic = '/tf' ORDER BY log_time LIMIT 1"
        ).fetchone()
        ref = cli.query(
            f"SELECT CAST(log_time AS BIGINT) AS ns, length(data) AS len, encode(data, 'hex') AS hex "
            f"FROM '{demo}' WHERE topic = '/tf' ORDER BY log_time LIMIT 1"
        )[0]
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        ns = (row[0] - epoch) // datetime.timedelta(microseconds=1) * 1000
        expect(checks, 
            "psycopg: log_time is an aware datetime at the CLI's instant",
            row[0].tzinfo is not None and ns == ref["ns"],
            f"{row[0]!r} vs {ref['ns']} ns",
        )
        expect(checks, 
            "psycopg: data is bytes equal to the CLI's",
            isinstance(row[1], bytes) and row[1].hex() == ref["hex"],
            f"{type(row[1])} of {len(row[1])} bytes vs {ref['len']}",
        )

        got = conn.execute(
            f"SELECT count(*), round(avg(linear_acceleration['z']), 6) "
            f"FROM read_topic('{demo}', '/imu')"
        ).fetchone()
        ref = cli.query(
            f"SELECT count(*) AS n, round(avg(linear_acceleration['z']), 6) AS z "
            f"FROM read_topic('{demo}', '/imu')"
        )[0]
        expect(checks, 
            "psycopg: read_topic aggregate equals the CLI's",
            got[0] == ref["n"] and abs(float(got[1]) - ref["z"]) < 1e-9,
            f"{got} vs {ref}",
        )

        sql = (
            f"SELECT linear_acceleration, orientation_covariance FROM read_topic('{demo}', '/imu') "
            f"WHERE header['seq'] >= {{}} ORDER BY log_time LIMIT 3"
        )
        ref = cli.query(sql.format(5))
        want_json = [(r["linear_acceleration"], r["orientation_covariance"]) for r in ref]
        for how, got_rows in [
            ("simple query", conn.execute(sql.format(5)).fetchall()),
            ("parameterised", conn.execute(sql.format("%s"), [5]).fetchall()),
        ]:
            expect(
                checks,
                f"psycopg: nested struct and list columns arrive as JSON text equal to the CLI's ({how})",
                all(isinstance(v, str) for row in got_rows for v in row)
                and [(json.loads(a), json.loads(b)) for a, b in got_rows] == want_json,
                f"{got_rows[:1]} vs {want_json[:1]}",
            )

        try:
            conn.execute("SELECT count(*) FROM '/etc/passwd'")
            expect(checks, "psycopg: a read outside the roots is refused", False, "it ran")
        except psycopg.Error as e:
            conn.rollback()
            expect(checks, 
                "psycopg: a read outside the roots is refused",
                "outside the data roots" in str(e),
                str(e),
            )

    def pandas_counts():
        engine = sa.create_engine(f"postgresql+psycopg://logsql@127.0.0.1:{port}/logsql")
        try:
            frame = pd.read_sql(counts_sql, engine)
        finally:
            engine.dispose()
        got = list(zip(frame["topic"], frame["n"].astype(int)))
        return None if got == want else f"{got} != {want}"

    checks.check("pandas.read_sql (SQLAlchemy): per-topic counts equal the CLI's", pandas_counts)

if __name__ == "__main__":
    main()
