#!/usr/bin/env python3
"""Interop test: logsql's ASOF JOIN against DuckDB's, row for row.

Topic pairs of recordings (the demo files of ``tests/data`` in every format
and a few shared fixtures when present) are exported to Parquet by logsql
(``COPY ... TO``), and small synthetic tables (ties, NULL times and keys,
empty sides, keys without matches) by DuckDB. Each pair is joined by DuckDB
(``ASOF [LEFT] JOIN ... ON``) and by the logsql binary, in both of its
spellings (``MATCH_CONDITION`` and DuckDB's ``ON``), for ``>=``, ``>``,
``<=``, ``<``, with and without an equality key, and the results are
compared as multisets of (left id, matched right time, matched right key),
the key left out without an equality key.

Ties among right rows with equal keys and time are compared by their time
only: which of the tied rows DuckDB returns is not specified (DuckDB 1.5
returned the first in input order here, logsql takes the last).

Usage: asof_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import glob
import os
import sys
import tempfile

import duckdb
from common import Checks, Logsql, as_int, diff_multisets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.environ.get("LOGSQL_FIXTURES", "/work/shared/fixtures")
OPS = (">=", ">", "<=", "<")


def recordings():
    """The demo recordings, then up to two shared fixtures per format."""
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "demo.*")))
    files = [f for f in files if not f.endswith(".sh")]
    for pattern in ("mcap/samples/*.mcap", "rosbag/*.bag", "apollo/**/*.record*", "bddf/**/*.bddf"):
        files += sorted(glob.glob(os.path.join(FIXTURES, pattern), recursive=True))[:2]
    return files


def export_pair(logsql, path, out):
    """Exports the two busiest topics of ``path`` as ``a.parquet`` / ``b.parquet``
    (id, k = topic, t = log_time in ns), and all messages keyed by topic as
    ``ka.parquet`` / ``kb.parquet`` (``kb`` every other message, 1 ms later).
    Returns False when the file has fewer than two topics with messages."""
    q = path.replace("'", "''")
    try:
        topics = logsql.query(
            f"SELECT topic, count(*) AS n FROM '{q}' GROUP BY topic ORDER BY n DESC, topic LIMIT 2"
        )
    except RuntimeError:
        return False
    if len(topics) < 2:
        return False
    base = f"SELECT row_number() OVER (ORDER BY log_time, topic) AS id, topic AS k, CAST(log_time AS BIGINT) AS t FROM '{q}'"
    for name, where in (("a", topics[0]["topic"]), ("b", topics[1]["topic"])):
        w = where.replace("'", "''")
        logsql.query(f"COPY ({base} WHERE topic = '{w}') TO '{out}/{name}.parquet'")
    logsql.query(f"COPY ({base}) TO '{out}/ka.parquet'")
    logsql.query(
        f"COPY (SELECT id, k, t + 1000000 AS t FROM ({base}) WHERE id % 2 = 0) TO '{out}/kb.parquet'"
    )
    return True


def synthetic(out):
    """Small tables with ties, NULLs, an empty side and unmatched keys."""
    con = duckdb.connect()
    tables = {
        "sa": "SELECT * FROM (VALUES (1, 'x', 10), (2, 'x', 20), (3, 'x', 25), (4, 'y', 10), (5, 'y', 5), "
        "(6, 'z', 7), (7, NULL, 20), (8, 'x', NULL), (9, 'x', 20), (10, 'y', 100)) v(id, k, t)",
        "sb": "SELECT * FROM (VALUES (101, 'x', 10), (102, 'x', 15), (103, 'x', 20), (104, 'x', 20), "
        "(105, 'y', 6), (106, 'y', 11), (107, NULL, 1), (108, 'x', NULL), (109, 'w', 3)) v(id, k, t)",
        "empty": "SELECT * FROM (VALUES (1, 'x', 1)) v(id, k, t) WHERE false",
    }
    for name, sql in tables.items():
        con.execute(f"COPY ({sql}) TO '{out}/{name}.parquet' (FORMAT parquet)")


def duck_rows(left, right, op, keyed, outer):
    join = "ASOF LEFT JOIN" if outer else "ASOF JOIN"
    key = "l.k = r.k AND " if keyed else ""
    sql = (
        f"SELECT l.id AS id, r.t AS rt, r.k AS rk FROM read_parquet('{left}') l "
        f"{join} read_parquet('{right}') r ON {key}l.t {op} r.t"
    )
    return [(int(i), as_int(t), k if t is not None else None) for i, t, k in duckdb.sql(sql).fetchall()]


def logsql_rows(logsql, left, right, op, keyed, spelling):
    if spelling == "match_condition":
        on = " ON l.k = r.k" if keyed else ""
        join = f"ASOF JOIN '{right}' r MATCH_CONDITION (l.t {op} r.t){on}"
    else:
        key = "l.k = r.k AND " if keyed else ""
        word = "ASOF LEFT JOIN" if spelling == "duckdb_left" else "ASOF JOIN"
        join = f"{word} '{right}' r ON {key}l.t {op} r.t"
    rows = logsql.query(f"SELECT l.id AS id, r.t AS rt, r.k AS rk FROM '{left}' l {join}")
    return [(as_int(r["id"]), as_int(r.get("rt")), r.get("rk") if r.get("rt") is not None else None) for r in rows]


def compare(checks, logsql, name, left, right, keyed_only=False):
    for op in OPS:
        for keyed in ((True,) if keyed_only else (False, True)):
            want_outer = duck_rows(left, right, op, keyed, True)
            want_inner = duck_rows(left, right, op, keyed, False)
            for spelling, want in (
                ("match_condition", want_outer),
                ("duckdb_left", want_outer),
                ("duckdb_inner", want_inner),
            ):
                label = f"{name} {op} {'keyed' if keyed else 'no key'} {spelling}"

                def run(want=want, spelling=spelling, op=op, keyed=keyed):
                    got = logsql_rows(logsql, left, right, op, keyed, spelling)
                    if not keyed:
                        # Without keys, tied right rows may differ in k.
                        want, got = [w[:2] for w in want], [g[:2] for g in got]
                    return diff_multisets(want, got)

                checks.check(label, run)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    logsql = Logsql(args.logsql)
    checks = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or tmp
        os.makedirs(out, exist_ok=True)
        syn = os.path.join(out, "synthetic")
        os.makedirs(syn, exist_ok=True)
        synthetic(syn)
        p = lambda n: os.path.join(syn, f"{n}.parquet")  # noqa: E731
        compare(checks, logsql, "synthetic", p("sa"), p("sb"))
        compare(checks, logsql, "synthetic reversed", p("sb"), p("sa"))
        compare(checks, logsql, "empty right", p("sa"), p("empty"))
        compare(checks, logsql, "empty left", p("empty"), p("sb"))
        for i, path in enumerate(recordings()):
            d = os.path.join(out, f"rec{i}")
            os.makedirs(d, exist_ok=True)
            name = os.path.relpath(path, FIXTURES) if path.startswith(FIXTURES) else os.path.basename(path)
            if not export_pair(logsql, path, d):
                print(f"skip {name}: fewer than two topics with messages")
                continue
            pq = lambda n: os.path.join(d, f"{n}.parquet")  # noqa: E731
            compare(checks, logsql, f"{name} topics", pq("a"), pq("b"))
            compare(checks, logsql, f"{name} per topic", pq("ka"), pq("kb"), keyed_only=True)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
