#!/usr/bin/env python3
"""ASOF JOIN: logsql against DuckDB on the same machine, in the same run.

1. Parquet: LEFT x RIGHT rows (default 10,000,000 x 1,000,000) written by
   DuckDB into target/bench-data/asof/ (once), then
   ``SELECT count(*), count(r.v), sum(r.v) FROM l ASOF [LEFT] JOIN r ...``
   by DuckDB (``ASOF LEFT JOIN ... ON l.t >= r.t``) and by the logsql binary
   (``MATCH_CONDITION (l.t >= r.t)``), with and without an equality key; both
   results must be equal.
2. The benchmark MCAP (target/bench-data/bench.mcap, made by ``cargo bench
   --bench scan`` or benches/compare.sh), when present: /imu ASOF JOIN /tf,
   decoded, against decoding the two topics alone.

Each query runs RUNS times (default 3) as its own process. Writes the best
wall time and the peak RSS of each (from wait4) through
benches/support/results.py: $BENCH_RESULTS/asof.json, table `asof` (the table
of docs/performance.md; `bash benches/run.sh --update-docs asof`), printed as
markdown too.

Usage: python3 benches/asof_compare.py [--logsql target/release/logsql]
Needs ``pip install duckdb``. Environment: LEFT, RIGHT, RUNS, CARGO_TARGET_DIR.
"""

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches", "support"))
from results import Results  # noqa: E402

TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
LEFT = int(os.environ.get("LEFT", 10_000_000))
RIGHT = int(os.environ.get("RIGHT", 1_000_000))
RUNS = int(os.environ.get("RUNS", 3))


def output(cmd):
    """The stdout of ``cmd`` (exits on failure)."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed: {proc.stderr}")
    return proc.stdout


def measured(cmd):
    """Best wall time over RUNS and peak RSS (MiB) of ``cmd``."""
    best, rss, out = None, 0, ""
    for _ in range(RUNS):
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execvp(cmd[0], cmd)
        _, status, usage = os.wait4(pid, 0)
        elapsed = time.perf_counter() - start
        if status != 0:
            sys.exit(f"{' '.join(cmd[:3])} failed ({status})")
        best = elapsed if best is None else min(best, elapsed)
        rss = max(rss, usage.ru_maxrss / 1024)
    return best, rss, output(cmd).strip()


def duck(sql):
    code = (
        "import duckdb; duckdb.sql('SET enable_progress_bar = false'); "
        f"print(duckdb.sql({sql!r}).fetchall())"
    )
    return [sys.executable, "-c", code]


def logsql(binary, sql):
    return [binary, sql, "--format", "csv"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", default=os.path.join(TARGET, "release", "logsql"))
    args = ap.parse_args()
    import duckdb

    res = Results("asof")

    data = os.path.join(ROOT, "target", "bench-data", "asof")
    os.makedirs(data, exist_ok=True)
    l_path, r_path = os.path.join(data, f"l_{LEFT}.parquet"), os.path.join(data, f"r_{RIGHT}.parquet")
    step = 100 * LEFT // RIGHT
    if not os.path.exists(l_path):
        duckdb.sql(
            f"COPY (SELECT i * 100 + (i * 7919) % 100 AS t, (i * 2654435761) % 16 AS k "
            f"FROM range({LEFT}) r(i)) TO '{l_path}' (FORMAT parquet)"
        )
    if not os.path.exists(r_path):
        duckdb.sql(
            f"COPY (SELECT i * {step} + (i * 7919) % {step} AS t, (i * 2654435761) % 16 AS k, i AS v "
            f"FROM range({RIGHT}) r(i)) TO '{r_path}' (FORMAT parquet)"
        )
    rows = []
    for keyed in (False, True):
        d_on = "l.k = r.k AND " if keyed else ""
        s_on = " ON l.k = r.k" if keyed else ""
        d_sql = (
            f"SELECT count(*), count(r.v), sum(r.v) FROM read_parquet('{l_path}') l "
            f"ASOF LEFT JOIN read_parquet('{r_path}') r ON {d_on}l.t >= r.t"
        )
        s_sql = (
            f"SELECT count(*) AS n, count(r.v) AS m, sum(r.v) AS s FROM '{l_path}' l "
            f"ASOF JOIN '{r_path}' r MATCH_CONDITION (l.t >= r.t){s_on}"
        )
        dt, drss, dout = measured(duck(d_sql))
        st, srss, sout = measured(logsql(args.logsql, s_sql))
        d_vals = dout.strip("[]()").replace(" ", "").split(",")
        s_vals = sout.splitlines()[-1].split(",")
        same = [int(x) for x in d_vals] == [int(x) for x in s_vals]
        label = (f"the same, 16 keys (`ON l.k = r.k`)" if keyed
                 else f"{LEFT:,} x {RIGHT:,} rows of Parquet, no key")
        rows.append([label, "DuckDB", f"{dt:.3f} s", f"{drss:.0f} MiB", ", ".join(d_vals), ""])
        rows.append(["", "logsql", f"{st:.3f} s", f"{srss:.0f} MiB",
                     "same" if same else ", ".join(s_vals) + " (**MISMATCH**)", f"**{st / dt:.2f}x**"])
    mcap = os.environ.get("LOGSQL_BENCH_FILE", os.path.join(ROOT, "target", "bench-data", "bench.mcap"))
    if os.path.exists(mcap):
        imu = f"read_topic('{mcap}', '/imu')"
        tf = f"read_topic('{mcap}', '/tf')"
        decode = (
            f"SELECT (SELECT count(linear_acceleration.x) FROM {imu}) AS imu, "
            f"(SELECT count(transforms) FROM {tf}) AS tf"
        )
        join = (
            f"SELECT count(i.linear_acceleration.x) AS imu, count(t.transforms) AS tf FROM {imu} i "
            f"ASOF JOIN {tf} t MATCH_CONDITION (i.log_time >= t.log_time)"
        )
        dt, drss, dout = measured(logsql(args.logsql, decode))
        jt, jrss, jout = measured(logsql(args.logsql, join))
        cells = lambda out: ", ".join(out.splitlines()[-1].split(","))
        rows.append(["benchmark MCAP: decode /imu and /tf alone", "logsql", f"{dt:.3f} s", f"{drss:.0f} MiB",
                     cells(dout), ""])
        rows.append(["benchmark MCAP: /imu ASOF JOIN /tf, decoded", "logsql", f"{jt:.3f} s", f"{jrss:.0f} MiB",
                     cells(jout), f"**{jt / dt:.2f}x** of decoding"])
    res.table("asof", f"ASOF JOIN against DuckDB {duckdb.__version__}: each query a whole process, best of {RUNS}, "
              "peak RSS from wait4",
              ["query", "engine", f"best of {RUNS}", "peak RSS", "result (count, matched, sum)", "logsql / DuckDB"],
              rows, "--rr-r")
    res.done()


if __name__ == "__main__":
    main()
