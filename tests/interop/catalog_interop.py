"""Interop test: the fleet catalog (`logsql index`) against the official
writers and readers, and read without logsql.

A fleet of recordings written by the official writers (the `mcap` package,
rosbags' rosbag1 and rosbag2 writers: benches/support/fleet.py) in hive
directories is indexed by the logsql binary. Checks:
- each recording's catalogued message count, per topic and in all, and its
  first and last log time equal what the official readers read from the file;
- DuckDB (read_json of the newest commit, read_parquet of its tables) and
  pyarrow read the catalog's tables without logsql, with the rows logsql
  shows through `--catalog`;
- the device comes from Foxglove's device metadata (MCAP) or the hive key
  `robot` (bags);
- on S3 (moto on 127.0.0.1 behind a request-counting relay): a fleet under
  `s3://` is indexed into a catalog under `s3://`; a run with nothing new
  makes no request beyond the listings and the newest commit; a run after
  new objects makes at most 4 requests per new object (its first bytes, its
  footer window, its summary, its message indexes for the gaps); the
  catalog's tables read from S3 too.

    python tests/interop/catalog_interop.py --logsql target/debug/logsql

Needs `mcap`, `rosbags`, `duckdb`, `pyarrow`, `moto[server]` and `boto3`.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import duckdb
import pyarrow.parquet as pq

from common import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benches", "support"))
import fleet  # noqa: E402  (benches/support/fleet.py: the fleet's writers)

N = 24


def run(binary, *args, env=None):
    proc = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"logsql {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr.strip()}")
    return proc.stdout


def rows(binary, catalog, sql, env=None):
    out = run(binary, "--catalog", catalog, "--format", "ndjson", sql, env=env)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def official_counts(path):
    """{topic: (count, first, last)} of a recording, read by its official reader."""
    out = {}

    def add(topic, t):
        n, lo, hi = out.get(topic, (0, t, t))
        out[topic] = (n + 1, min(lo, t), max(hi, t))

    if path.endswith(".mcap"):
        from mcap.reader import make_reader

        with open(path, "rb") as f:
            for _, channel, message in make_reader(f).iter_messages():
                add(channel.topic, message.log_time)
    else:
        from rosbags.highlevel import AnyReader
        from pathlib import Path

        with AnyReader([Path(path)]) as reader:
            for conn, t, _ in reader.messages():
                add(conn.topic, t)
    return out


def ns(text):
    """RFC 3339 UTC with nanoseconds to integer nanoseconds."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", text)
    import calendar

    secs = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    frac = (m.group(2) or "").ljust(9, "0")[:9]
    return secs * 1_000_000_000 + int(frac)


def newest_commit(catalog):
    return json.load(open(sorted(glob.glob(os.path.join(catalog, "_log", "*.json")))[-1]))


def local_checks(checks, binary, tmp):
    fleet_dir = os.path.join(tmp, "fleet")
    fleet.main_args(fleet_dir, N)
    catalog = os.path.join(tmp, "catalog")
    report = json.loads(run(binary, "index", fleet_dir, "--catalog", catalog, "--format", "json"))
    checks.check("index: every recording added", lambda: None if len(report["added"]) == N else report)

    recordings = {r["location"]: r for r in rows(binary, catalog, "SELECT * FROM recordings")}
    topics = rows(binary, catalog, "SELECT location, topic, message_count, start_time, end_time FROM topics")

    def against_official():
        for location, rec in recordings.items():
            want = official_counts(location)
            got = {t["topic"]: (t["message_count"], ns(t["start_time"]), ns(t["end_time"])) for t in topics if t["location"] == location}
            if got != want:
                return f"{location}: catalog {got} vs official {want}"
            total = sum(n for n, _, _ in want.values())
            if rec["message_count"] != total:
                return f"{location}: {rec['message_count']} messages vs {total}"
            if ns(rec["start_time"]) != min(lo for _, lo, _ in want.values()):
                return f"{location}: start {rec['start_time']}"
        return None

    checks.check("catalogued counts and times equal the official readers'", against_official)

    def devices():
        for location, rec in recordings.items():
            robot = re.search(r"robot=(r\d+)", location).group(1)
            if rec["device"] != robot:
                return f"{location}: device {rec['device']}"
            if location.endswith(".mcap") and rec["metadata"].get("site") not in ("lab", "field"):
                return f"{location}: metadata {rec['metadata']}"
        return None

    checks.check("device from Foxglove metadata and hive keys", devices)

    def duckdb_reads():
        commit = newest_commit(catalog)
        con = duckdb.connect()
        con.execute(
            "SET VARIABLE cat = (SELECT ? || tables.recordings FROM read_json(?) ORDER BY generation DESC LIMIT 1)",
            [catalog + "/", os.path.join(catalog, "_log", "*.json")],
        )
        got = dict(con.execute("SELECT location, message_count FROM read_parquet(getvariable('cat'))").fetchall())
        want = {loc: r["message_count"] for loc, r in recordings.items()}
        if got != want:
            return f"DuckDB {got} vs logsql {want}"
        n = con.execute(f"SELECT count(*) FROM read_parquet('{catalog}/{commit['tables']['topics']}')").fetchone()[0]
        return None if n == len(topics) else f"DuckDB {n} topic rows vs {len(topics)}"

    checks.check("DuckDB reads the catalog without logsql", duckdb_reads)

    def pyarrow_reads():
        commit = newest_commit(catalog)
        table = pq.read_table(os.path.join(catalog, commit["tables"]["recordings"]))
        got = sorted(zip(table.column("location").to_pylist(), table.column("device").to_pylist()))
        want = sorted((loc, r["device"]) for loc, r in recordings.items())
        return None if got == want else f"pyarrow {got[:3]} vs logsql {want[:3]}"

    checks.check("pyarrow reads the catalog without logsql", pyarrow_reads)

    def catalogued_query():
        window = "log_time BETWEEN '2026-01-01T05:00:00Z' AND '2026-01-01T05:59:59Z'"
        sql = f"SELECT robot, count(*) AS n FROM '{fleet_dir}/' WHERE topic = '/imu' AND {window} GROUP BY robot"
        with_catalog = rows(binary, catalog, sql)
        without = [json.loads(line) for line in run(binary, "--format", "ndjson", sql).splitlines()]
        if with_catalog != without or with_catalog != [{"robot": "r5", "n": 3000}]:
            return f"{with_catalog} vs {without}"
        plan = run(binary, "--catalog", catalog, f"EXPLAIN ANALYZE {sql}")
        pruned = re.search(r"files_pruned_by_catalog=(\d+)", plan)
        return None if pruned and int(pruned.group(1)) == N - 1 else plan

    checks.check("a one-hour window opens the one recording in it", catalogued_query)


def s3_checks(checks, binary, tmp):
    import boto3
    from s3_interop import CountingRelay, free_port, start_moto

    port = free_port()
    moto = start_moto(port)
    relay = CountingRelay(port)
    try:
        endpoint = f"http://127.0.0.1:{relay.port}"
        env = dict(os.environ)
        env.update(
            AWS_ACCESS_KEY_ID="test",
            AWS_SECRET_ACCESS_KEY="test",
            AWS_REGION="us-east-1",
            AWS_ENDPOINT=endpoint,
            AWS_ALLOW_HTTP="true",
        )
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
        s3.create_bucket(Bucket="fleet")
        fleet_dir = os.path.join(tmp, "fleet")
        mcaps = sorted(glob.glob(os.path.join(fleet_dir, "**", "*.mcap"), recursive=True))
        first, later = mcaps[:10], mcaps[10:13]
        for path in first:
            s3.upload_file(path, "fleet", "runs/" + os.path.relpath(path, fleet_dir))
        source, catalog = "s3://fleet/runs/", "s3://fleet/catalog/"
        relay.take_requests()
        report = json.loads(run(binary, "index", source, "--catalog", catalog, "--format", "json", env=env))
        relay.take_requests()
        checks.check(
            "S3: a fleet indexed into a catalog on S3",
            lambda: None if len(report["added"]) == len(first) and report["generation"] == 1 else report,
        )
        again = json.loads(run(binary, "index", source, "--catalog", catalog, "--format", "json", env=env))
        seen = relay.take_requests()
        per_object = [r for r in seen if "/runs/" in r and not r.startswith("GET /fleet?")]

        checks.check(
            "S3: an unchanged fleet costs no request per object",
            lambda: None if again["unchanged"] == len(first) and not per_object else (again, seen),
        )
        for path in later:
            s3.upload_file(path, "fleet", "runs/" + os.path.relpath(path, fleet_dir))
        relay.take_requests()
        more = json.loads(run(binary, "index", source, "--catalog", catalog, "--format", "json", env=env))
        seen = relay.take_requests()
        object_requests = [r for r in seen if "/runs/" in r and not r.startswith("GET /fleet?")]
        checks.check(
            "S3: at most 4 requests per new object",
            lambda: None
            if len(more["added"]) == len(later) and len(object_requests) <= 4 * len(later)
            else (more, object_requests),
        )
        sql = "SELECT count(*) AS n FROM recordings"
        checks.check(
            "S3: the catalog's tables read from S3",
            lambda: None if rows(binary, catalog, sql, env=env) == [{"n": len(first) + len(later)}] else "wrong count",
        )
    finally:
        moto.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--logsql", required=True)
    parser.add_argument("--keep")
    args = parser.parse_args()
    checks = Checks()
    tmp = args.keep or tempfile.mkdtemp(prefix="logsql-catalog-")
    os.makedirs(tmp, exist_ok=True)
    local_checks(checks, args.logsql, tmp)
    try:
        import moto.server  # noqa: F401
    except ImportError:
        print("SKIPPED: S3 checks: moto is not installed")
    else:
        s3_checks(checks, args.logsql, tmp)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
