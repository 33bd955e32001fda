#!/usr/bin/env python3
"""benches/serve_compare.py: `logsql serve` as its clients meet it (run by
benches/serve_compare.sh, which builds logsql and makes the venv).

    python serve_compare.py LOGSQL FILE RUNS

Two measures, each median of RUNS (after one warm-up) on the ~200 MB
benchmark MCAP (bench.mcap):

1. First-row latency of `SELECT topic, count(*) FROM 'FILE' GROUP BY topic`
   over Postgres wire (psycopg 3, one open connection as a dashboard keeps
   one, and a new connection per query), against the CLI's whole-process time
   for the same query (`logsql --format csv`, what a script pays today).
2. Rows per second of a full `SELECT * FROM 'FILE'` over Flight SQL (ADBC
   Flight SQL driver, `fetch_arrow_table`), against reading the same rows from
   a local Parquet export with pyarrow (`pyarrow.parquet.read_table`). Skipped,
   with a note, when the binary was built without the `flight` feature.

The answers are checked first: the per-topic counts over Postgres wire equal
the CLI's, and Flight SQL returns as many rows as the Parquet file holds.
Writes $BENCH_RESULTS/serve.json (table `serve`, in docs/performance.md).
"""

import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "support"))
# The serve interop suite's start(): the server on free ports, as its tests run it.
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "interop"))
from results import Results  # noqa: E402
from serve_start import start  # noqa: E402

import psycopg  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


def timed(runs, fn):
    """Median and minimum seconds of `runs` calls of fn, after one warm-up."""
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main():
    binary, path, runs = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3])
    root = os.path.dirname(path)
    query = f"SELECT topic, count(*) AS n FROM '{path}' GROUP BY topic ORDER BY topic"
    res = Results("serve")

    def cli():
        out = subprocess.run(
            [binary, "--format", "csv", query], capture_output=True, text=True, check=True
        ).stdout
        return [(r["topic"], int(r["n"])) for r in csv.DictReader(io.StringIO(out))]

    try:
        proc, pg, fl = start(binary, root, None, flight=True)
    except RuntimeError as e:
        if "built without Arrow Flight SQL" not in str(e):
            raise
        proc, pg, fl = start(binary, root, None)
    flight = fl is not None
    try:
        dsn = dict(host="127.0.0.1", port=pg, user="logsql", dbname="logsql")
        conn = psycopg.connect(**dsn, autocommit=True)
        got = conn.execute(query).fetchall()
        want = cli()
        if [(t, int(n)) for t, n in got] != want:
            sys.exit(f"MISMATCH: Postgres wire {got} against the CLI's {want}")
        print(f"== agree: {len(want)} topics, {sum(n for _, n in want)} messages", file=sys.stderr)

        def first_row():
            with conn.cursor() as cur:
                cur.execute(query)
                cur.fetchone()

        def connect_first_row():
            with psycopg.connect(**dsn, autocommit=True) as c:
                c.execute(query).fetchone()

        cli_med, cli_min = timed(runs, cli)
        pg_med, pg_min = timed(runs, first_row)
        pgc_med, pgc_min = timed(runs, connect_first_row)
        conn.close()
        ms = lambda s: f"{s * 1000:.0f} ms"  # noqa: E731
        rows = [
            [f"`logsql --format csv` (whole process)", f"{ms(cli_med)} ({ms(cli_min)})", "1.0x"],
            [
                "Postgres wire, open connection (psycopg)",
                f"{ms(pg_med)} ({ms(pg_min)})",
                f"**{cli_med / pg_med:.1f}x**",
            ],
            [
                "Postgres wire, new connection per query",
                f"{ms(pgc_med)} ({ms(pgc_min)})",
                f"{cli_med / pgc_med:.1f}x",
            ],
        ]
        mb = os.path.getsize(path) // 1_000_000
        res.table(
            "serve",
            f"First row of a per-topic count of a {mb} MB MCAP: median (min) of {runs} runs",
            ["client", "time to first row", "speed-up"],
            rows,
            align="-rr",
        )

        if flight:
            import adbc_driver_flightsql.dbapi as flight_sql

            with tempfile.TemporaryDirectory() as tmp:
                parquet = os.path.join(tmp, "messages.parquet")
                subprocess.run([binary, "export", path, parquet], check=True, capture_output=True)
                fconn = flight_sql.connect(f"grpc://127.0.0.1:{fl}", autocommit=True)
                full = f"SELECT * FROM '{path}'"

                def flight_scan():
                    with fconn.cursor() as cur:
                        cur.execute(full)
                        return cur.fetch_arrow_table().num_rows

                n = flight_scan()
                p = pq.read_table(parquet).num_rows
                if n != p:
                    sys.exit(f"MISMATCH: Flight SQL returned {n} rows, the Parquet export holds {p}")
                fl_med, fl_min = timed(runs, flight_scan)
                pq_med, pq_min = timed(runs, lambda: pq.read_table(parquet))
                fconn.close()
                rate = lambda s: f"{n / s / 1e6:.2f} M rows/s"  # noqa: E731
                res.table(
                    "serve-flight",
                    f"A full scan of the same file ({n} rows) over Flight SQL: median (min) of {runs} runs",
                    ["reader", "rows per second", "time"],
                    [
                        ["Flight SQL (ADBC), `SELECT *` of the MCAP", rate(fl_med), f"{fl_med:.2f} s ({fl_min:.2f})"],
                        ["pyarrow, a local Parquet export of it", rate(pq_med), f"{pq_med:.2f} s ({pq_min:.2f})"],
                    ],
                    align="-rr",
                )
        else:
            res.note("Flight SQL not measured: this logsql was built without the `flight` feature")
    finally:
        proc.terminate()
        proc.wait()
    res.done()


if __name__ == "__main__":
    main()
