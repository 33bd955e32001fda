#!/usr/bin/env python3
"""Interop test: moments. ``intervals()`` against DuckDB's answer to the
gaps-and-islands query, and the clips of ``logsql clips`` / ``logsql clip``
read by the official readers.

Recordings written by the official ``mcap`` writer (``mcap-ros1-support``):
three of a ``/speed`` topic (``std_msgs/Float64``-like ``float64 data``) at
50 Hz with noise, short blips above the threshold,
moments at a recording's first and last message, a NaN (which DataFusion and
DuckDB both order above every number), and a ``/other`` topic at 10 Hz. The speeds are also written to Parquet here (pyarrow); DuckDB runs the
gaps-and-islands query over them. Checks:

- for several conditions, merge gaps and minimum durations, ``intervals``
  gives DuckDB's rows (file, start, end, messages) exactly;
- each clip of ``logsql clips`` (MCAP and ``--as bag``), read by the official
  ``mcap`` reader and by ``rosbags``, holds exactly the source's messages of
  its padded window (topic, log time, payload), with the same channels and
  schemas;
- ``logsql clip --start --end`` holds the window, both ends included.
- events appended by ``INSERT INTO events SELECT ... FROM intervals(...)``
  are DuckDB's islands when DuckDB reads the events directory, pyarrow reads
  the table, and psycopg appends through ``logsql serve --allow-write``.

Needs ``mcap``, ``rosbags``, ``duckdb``, ``pyarrow`` and ``psycopg``.

Usage: moments_interop.py --logsql PATH/TO/logsql [--keep DIR]
"""

import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from mcap.reader import make_reader
from mcap.writer import Writer

from common import Checks

START = 1_700_000_000_000_000_000
FLOAT64 = b"float64 data\n"


def write_recording(path, seed):
    """50 Hz /speed and 10 Hz /other for 6 s; returns [(t, speed)]."""
    rng = random.Random(seed)
    rows = []
    with open(path, "wb") as f:
        w = Writer(f)
        w.start(profile="ros1", library="moments_interop")
        schema = w.register_schema(name="std_msgs/Float64", encoding="ros1msg", data=FLOAT64)
        speed = w.register_channel(topic="/speed", message_encoding="ros1", schema_id=schema)
        other = w.register_channel(topic="/other", message_encoding="ros1", schema_id=schema)
        n = 300
        for i in range(n):
            t = START + seed * 100_000_000_000 + i * 20_000_000
            v = 1.0 + 0.3 * math.sin(i / 17.0 + seed) + rng.gauss(0, 0.05)
            if 40 <= i < 90 or 200 <= i < 230:
                v += 1.5  # moments
            if i in (120, 121, 250):
                v += 2.0  # blips
            if i == 0 or i == n - 1:
                v = 3.0  # at the first and last message
            if i == 60:
                v = float("nan")  # a value the condition judges false
            rows.append((t, v))
            w.add_message(speed, log_time=t, publish_time=t, data=struct.pack("<d", v), sequence=i)
            if i % 5 == 2:
                w.add_message(other, log_time=t + 1, publish_time=t + 1, data=struct.pack("<d", i), sequence=i)
        w.finish()
    return rows


def logsql(binary, *args):
    proc = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"logsql {args}: {proc.stderr.strip()}")
    return proc.stdout


def ndjson(binary, sql):
    return [json.loads(l) for l in logsql(binary, "--format", "ndjson", sql).splitlines() if l.strip()]


DUCKDB_ISLANDS = """
WITH m AS (SELECT file, t, coalesce({cond}, false) AS c FROM speeds),
starts AS (SELECT file, t, c, c AND NOT coalesce(lag(c) OVER (PARTITION BY file ORDER BY t), false) AS s FROM m),
runs AS (SELECT file, t, c, sum(CASE WHEN s THEN 1 ELSE 0 END) OVER (PARTITION BY file ORDER BY t ROWS UNBOUNDED PRECEDING) AS run FROM starts),
islands AS (SELECT file, min(t) AS lo, max(t) AS hi, count(*) AS n FROM runs WHERE c GROUP BY file, run),
gaps AS (SELECT *, lo - lag(hi) OVER (PARTITION BY file ORDER BY lo) AS gap FROM islands),
groups AS (SELECT *, sum(CASE WHEN coalesce(gap <= {gap}, false) THEN 0 ELSE 1 END) OVER (PARTITION BY file ORDER BY lo ROWS UNBOUNDED PRECEDING) AS g FROM gaps)
SELECT file, min(lo), max(hi), sum(n)::BIGINT FROM groups GROUP BY file, g HAVING max(hi) - min(lo) >= {min} ORDER BY 1, 2
"""


def official_messages(path, lo, hi):
    """(topic, log_time, payload) of an MCAP or bag, by the official readers."""
    if str(path).endswith(".mcap"):
        with open(path, "rb") as f:
            r = make_reader(f)
            return sorted((c.topic, m.log_time, bytes(m.data)) for _, c, m in r.iter_messages())
    from rosbags.rosbag1 import Reader

    with Reader(Path(path)) as r:
        return sorted((c.topic, t, bytes(raw)) for c, t, raw in r.messages())


def source_messages(path, lo, hi):
    with open(path, "rb") as f:
        r = make_reader(f)
        return sorted((c.topic, m.log_time, bytes(m.data)) for _, c, m in r.iter_messages()
                      if lo <= m.log_time <= hi)


def ns_of(text):
    """Nanoseconds since the epoch of an RFC 3339 UTC time (9 digits at most)."""
    if not text:
        return None
    from datetime import datetime, timezone

    body = text.rstrip("Z")
    whole, _, frac = body.partition(".")
    secs = int(datetime.fromisoformat(whole).replace(tzinfo=timezone.utc).timestamp())
    return secs * 10**9 + int((frac + "000000000")[:9])


def events_checks(checks, binary, out, fleet, db):
    """Events appended from intervals (the CLI's INSERT, and psycopg through
    ``logsql serve --allow-write``), read by DuckDB and pyarrow without
    logsql."""
    events = out / "events"
    want = [tuple(r) for r in db.execute(DUCKDB_ISLANDS.format(cond="v > 2.0", gap=100_000_000, min=0)).fetchall()]

    def insert_then_duckdb():
        logsql(binary, "--events", str(events),
               "INSERT INTO events (device, recording, start_time, end_time, type, properties) "
               "SELECT 'r', file, start_time, end_time, 'fast', MAP {'messages': CAST(messages AS VARCHAR)} "
               f"FROM intervals('{fleet}/', '/speed', 'data > 2.0', '100 ms')")
        got = db.execute(
            "SELECT recording, epoch_ns(start_time), epoch_ns(end_time), CAST(properties['messages'] AS BIGINT) "
            f"FROM read_parquet('{events}/*.parquet') WHERE type = 'fast' ORDER BY 1, 2").fetchall()
        got = [tuple(r) for r in got]
        if not want:
            return "DuckDB found no interval: the check tests nothing"
        return None if got == want else f"DuckDB reads {got[:3]}... ({len(got)}), islands {want[:3]}... ({len(want)})"

    checks.check("INSERT INTO events SELECT ... FROM intervals(...): DuckDB reads the events directory, the islands' rows", insert_then_duckdb)

    def pyarrow_reads():
        table = pq.read_table(str(events))
        if table.num_rows != len(want):
            return f"pyarrow reads {table.num_rows} rows, not {len(want)}"
        first = table.sort_by([("recording", "ascending"), ("start_time", "ascending")]).to_pylist()[0]
        props = dict(first["properties"])
        ok = first["type"] == "fast" and int(props["messages"]) == want[0][3] and len(first["id"]) == 36
        return None if ok else f"first row {first}"

    checks.check("pyarrow reads the events table: a UUID id, the type, the properties map", pyarrow_reads)

    def psycopg_inserts():
        import psycopg
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from serve_start import start

        proc, port, _ = start(binary, str(out), None, "--allow-write", str(events), "--events", str(events))
        try:
            with psycopg.connect(host="127.0.0.1", port=port, user="logsql", dbname="logsql", autocommit=True) as conn:
                conn.execute("INSERT INTO events (device, start_time, type) "
                             "VALUES ('r9', TIMESTAMP '2024-05-01 12:00:00', 'from_psql')")
                n = conn.execute("SELECT count(*) FROM events WHERE type = 'from_psql'").fetchone()[0]
        finally:
            proc.kill()
            proc.wait()
        rows = ndjson(binary, f"SELECT device, CAST(start_time AS BIGINT) AS t FROM events('{events}') WHERE type = 'from_psql'")
        want_rows = [{"device": "r9", "t": 1714564800 * 10**9}]
        return None if n == 1 and rows == want_rows else f"the server counted {n}; a new process reads {rows}"

    checks.check("psycopg: INSERT INTO events through logsql serve --allow-write, read by a new process", psycopg_inserts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="logsql-moments-") as tmp:
        out = Path(args.keep or tmp)
        fleet = out / "fleet"
        fleet.mkdir(parents=True, exist_ok=True)
        table = {"file": [], "t": [], "v": []}
        for seed in range(3):
            path = fleet / f"r{seed}.mcap"
            for t, v in write_recording(path, seed):
                table["file"].append(str(path))
                table["t"].append(t)
                table["v"].append(v)
        pq.write_table(pa.table(table), out / "speeds.parquet")
        db = duckdb.connect()
        db.execute(f"CREATE VIEW speeds AS SELECT * FROM '{out / 'speeds.parquet'}'")
        cases = [
            ("data > 2.0", "v > 2.0", "0 s", 0, "0 s", 0),
            ("data > 2.0", "v > 2.0", "100 ms", 100_000_000, "0 s", 0),
            ("data > 2.0", "v > 2.0", "0 s", 0, "100 ms", 100_000_000),
            ("data > 2.0", "v > 2.0", "2 s", 2_000_000_000, "0.5 s", 500_000_000),
            ("data < 0.9 OR data > 2.2", "v < 0.9 OR v > 2.2", "40 ms", 40_000_000, "0 s", 0),
        ]
        for cond, duck, gap, gap_ns, min_d, min_ns in cases:
            def same(cond=cond, duck=duck, gap=gap, gap_ns=gap_ns, min_d=min_d, min_ns=min_ns):
                want = [tuple(r) for r in db.execute(DUCKDB_ISLANDS.format(cond=duck, gap=gap_ns, min=min_ns)).fetchall()]
                got = [(r["file"], r["lo"], r["hi"], r["messages"]) for r in ndjson(
                    args.logsql,
                    f"SELECT file, CAST(start_time AS BIGINT) AS lo, CAST(end_time AS BIGINT) AS hi, messages "
                    f"FROM intervals('{fleet}/', '/speed', '{cond}', '{gap}', '{min_d}') ORDER BY file, lo")]
                if not want:
                    return "DuckDB found no interval: the case tests nothing"
                return None if got == want else f"logsql {got[:4]}... ({len(got)}), DuckDB {want[:4]}... ({len(want)})"

            checks.check(f"intervals('{cond}', '{gap}', '{min_d}') equals DuckDB's gaps and islands", same)

        events_checks(checks, args.logsql, out, fleet, db)

        for fmt in ["mcap", "bag"]:
            def clips(fmt=fmt):
                d = out / f"clips_{fmt}"
                said = logsql(args.logsql, "clips", f"{fleet}/", "--topic", "/speed", "--when", "data > 2.0",
                              "--max-gap", "100 ms", "--before", "200 ms", "--after", "300 ms", "-o", str(d),
                              "--as", fmt)
                lines = [l for l in said.splitlines() if ": " in l and " messages of " in l]
                if len(lines) < 6:
                    return f"{len(lines)} clips: {said}"
                for line in lines:
                    clip, rest = line.split(": ", 1)
                    source = rest.split(" messages of ", 1)[1].split(" from ", 1)[0]
                    span = rest.split(" from ", 1)[1].split(" (", 1)[0]
                    first, last = span.split(" to ")
                    bounds = ndjson(args.logsql, f"SELECT CAST(TIMESTAMP '{first}' AS BIGINT) AS a, CAST(TIMESTAMP '{last}' AS BIGINT) AS b")[0]
                    want = source_messages(source if os.path.isabs(source) else os.path.abspath(source), bounds["a"], bounds["b"])
                    got = official_messages(clip, bounds["a"], bounds["b"])
                    if got != want:
                        return f"{clip}: {len(got)} messages, the source's window holds {len(want)}"
                return None

            checks.check(f"logsql clips --as {fmt}: every clip, read by the official reader, holds exactly its window", clips)

        def one_clip():
            src = fleet / "r1.mcap"
            lo = START + 100_000_000_000 + 40 * 20_000_000
            hi = START + 100_000_000_000 + 89 * 20_000_000
            clip = out / "one.mcap"
            logsql(args.logsql, "clip", str(src), "--start", f"{lo}ns", "--end", f"{hi}ns", "-o", str(clip))
            want = source_messages(src, lo, hi)
            got = official_messages(clip, lo, hi)
            if not any(m[1] == hi for m in got):
                return "the message at --end is missing"
            with open(clip, "rb") as f:
                schemas = {s.name for s in make_reader(f).get_summary().schemas.values()}
            if schemas != {"std_msgs/Float64"}:
                return f"schemas {schemas}"
            with open(clip, "rb") as f:
                records = {m.name: dict(m.metadata) for m in make_reader(f).iter_metadata()}
            record = records.get("logsql.clip", {})
            if record.get("source") != str(src) or ns_of(record.get("start")) != lo or ns_of(record.get("end")) != hi:
                return f"the clip's logsql.clip metadata, read by the official reader: {record}"
            return None if got == want else f"{len(got)} messages, the window holds {len(want)}"

        checks.check("logsql clip --start --end: the window, both ends included, with its schema and a logsql.clip record of its source and window", one_clip)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
