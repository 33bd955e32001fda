#!/usr/bin/env python3
"""Interop test: ``logsql serve`` driven by Python's Postgres clients, psycopg 3
(simple and parameterised queries, timestamps, ``bytea``) and
``pandas.read_sql`` through SQLAlchemy, each answer compared with the logsql
CLI's for the same query on the same file (the demo recording).

Usage: serve_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import pandas as pd
import psycopg
import sqlalchemy as sa
from common import Checks, Logsql

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "tests", "data", "demo.mcap")


def expect(checks, name, passed, detail):
    """Records check ``name``: failed with ``detail`` unless ``passed``."""
    checks.check(name, lambda: None if passed else detail)


def start(binary, root, demo):
    """``logsql serve`` on a free loopback port; returns (process, port)."""
    proc = subprocess.Popen(
        [binary, "serve", "--pg", "127.0.0.1:0", "--root", root, "--table", f"demo={demo}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    for line in proc.stderr:
        seen.append(line)
        m = re.search(r"Postgres wire on 127\.0\.0\.1:(\d+)", line)
        if m:
            # Keep draining stderr so the server never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, int(m.group(1))
    proc.wait()
    raise RuntimeError("logsql serve ended before listening:\n" + "".join(seen))


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
        proc, port = start(args.logsql, root, demo)
        try:
            run(checks, cli, port, demo)
        finally:
            proc.kill()
            proc.wait()
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


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
