"""logsql over S3: a real S3-compatible server (moto, from PyPI) on 127.0.0.1,
behind a byte-counting relay, so the bytes the server sends are counted
independently of logsql's own metrics.

Checks:
- a generated 60 s MCAP recording (about 6 MB, 1 s chunks), real fixtures
  (MCAP sample, ROS1 bag) and a hive-partitioned fleet give, read from
  `s3://`, exactly the rows they give read from disk;
- a 10% time window on one topic transfers at most 15% of the object's bytes;
- `topics()` transfers at most the summary plus 16 KB (footer window, magic
  sniff, HTTP headers);
- `CREATE EXTERNAL TABLE ... LOCATION 's3://...'` and hive partition columns work.

    python tests/interop/s3_interop.py --logsql target/debug/logsql [--gen target/debug/examples/gen_mcap]

Needs `moto[server]` and `boto3` in the interpreter running it (run.sh
installs them).
"""

import argparse
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import boto3

from common import Checks, Logsql

BUCKET = "logs"
START_NS = 1_700_000_000_000_000_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CountingRelay:
    """A TCP relay on 127.0.0.1 that counts the bytes the server sends back
    and notes the requests sent to it (method and path)."""

    METHOD = re.compile(rb"(?:^|\r\n)(GET|PUT|POST|HEAD|DELETE) /")

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.served = 0
        self.requests = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.sock.accept()
            server = socket.create_connection(("127.0.0.1", self.upstream))
            threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, True), daemon=True).start()

    def _pipe(self, src, dst, from_server):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self.lock:
                    if from_server:
                        self.served += len(data)
                    else:
                        for m in self.METHOD.finditer(data):
                            line = data[m.start(1) : data.find(b" HTTP/", m.start(1))]
                            self.requests.append(line.decode(errors="replace"))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def take(self):
        """The bytes served since the last call."""
        # Let in-flight responses drain before reading the counter.
        time.sleep(0.2)
        with self.lock:
            n, self.served = self.served, 0
        return n

    def take_requests(self):
        """The requests ("GET /bucket/key") sent since the last call."""
        time.sleep(0.2)
        with self.lock:
            out, self.requests = self.requests, []
        return out


def start_moto(port):
    exe = shutil.which("moto_server") or os.path.join(os.path.dirname(sys.executable), "moto_server")
    proc = subprocess.Popen(
        [exe, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("moto_server did not start")


def mcap_summary_size(path):
    """Bytes from the summary section's start to the end of the file (footer, magic)."""
    with open(path, "rb") as f:
        f.seek(-8 - 29, os.SEEK_END)
        footer = f.read(29)
        size = f.seek(0, os.SEEK_END)
    assert footer[0] == 0x02, "no MCAP footer"
    summary_start = struct.unpack_from("<Q", footer, 9)[0]
    return size - summary_start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--gen", help="the gen_mcap example binary (default: examples/gen_mcap beside --logsql)")
    ap.add_argument("--fixtures", default=os.path.join(os.path.dirname(__file__), "../../../shared/fixtures"))
    args = ap.parse_args()
    gen = args.gen or os.path.join(os.path.dirname(os.path.abspath(args.logsql)), "examples", "gen_mcap")

    moto_port = free_port()
    moto = start_moto(moto_port)
    relay = CountingRelay(moto_port)
    env = {
        "AWS_ENDPOINT": f"http://127.0.0.1:{relay.port}",
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    }
    os.environ.update(env)
    s3 = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{moto_port}",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )
    s3.create_bucket(Bucket=BUCKET)
    logsql = Logsql(args.logsql)
    checks = Checks()
    tmp = tempfile.mkdtemp(prefix="logsql-s3-")
    try:
        big = os.path.join(tmp, "big.mcap")
        subprocess.run(
            [gen, big, "--seconds", "60", "--image-bytes", "8000", "--chunk-size", "131072"],
            check=True,
            capture_output=True,
        )
        s3.upload_file(big, BUCKET, "big.mcap")
        size = os.path.getsize(big)
        uploads = {"big.mcap": big}
        for key, rel in [
            ("samples/compressed.mcap", "mcap/samples/compressed.mcap"),
            ("bags/rosbagjs-example-bz2.bag", "rosbag/rosbagjs-example-bz2.bag"),
        ]:
            local = os.path.join(args.fixtures, rel)
            if os.path.exists(local):
                s3.upload_file(local, BUCKET, key)
                uploads[key] = local
            else:
                print(f"SKIPPED fixture {rel}: not found under {args.fixtures}")
        fleet = os.path.join(tmp, "fleet")
        for robot in ("r1", "r2"):
            os.makedirs(os.path.join(fleet, f"robot={robot}"))
            shutil.copy(big, os.path.join(fleet, f"robot={robot}", "run.mcap"))
            s3.upload_file(big, BUCKET, f"fleet/robot={robot}/run.mcap")

        count_sql = "SELECT topic, count(*) AS n, sum(length(data)) AS bytes FROM '{}' GROUP BY topic ORDER BY topic"

        def same_rows(key, local):
            def check():
                remote = logsql.query(count_sql.format(f"s3://{BUCKET}/{key}"))
                here = logsql.query(count_sql.format(local))
                if not here:
                    return "no rows on disk"
                return None if remote == here else f"s3 {remote} vs disk {here}"

            return check

        for key, local in uploads.items():
            checks.check(f"s3://{BUCKET}/{key} reads the rows the local file gives", same_rows(key, local))

        def window():
            relay.take()
            lo, hi = START_NS + 24_000_000_000, START_NS + 30_000_000_000
            sql = (
                "SELECT count(*) AS n, sum(length(data)) AS b FROM '{}' "
                f"WHERE topic = '/imu' AND log_time >= to_timestamp_nanos({lo}) AND log_time < to_timestamp_nanos({hi})"
            )
            remote = logsql.query(sql.format(f"s3://{BUCKET}/big.mcap"))
            served = relay.take()
            here = logsql.query(sql.format(big))
            if remote != here:
                return f"s3 {remote} vs disk {here}"
            if int(remote[0]["n"]) != 1200:
                return f"{remote[0]['n']} /imu messages in 6 s, expected 1200"
            share = served / size
            print(f"     10% window on /imu: {served} of {size} bytes served ({share:.1%})")
            return None if share <= 0.15 else f"{served} bytes served, {share:.1%} of the object (limit 15%)"

        checks.check("a 10% time window on one topic transfers at most 15% of the object", window)

        def topics():
            relay.take()
            rows = logsql.query(f"SELECT topic, message_count FROM topics('s3://{BUCKET}/big.mcap') ORDER BY topic")
            served = relay.take()
            summary = mcap_summary_size(big)
            print(f"     topics(): {served} bytes served, summary {summary} bytes")
            if [r["topic"] for r in rows] != ["/camera/compressed", "/diagnostics", "/imu", "/tf"]:
                return f"topics {rows}"
            # The summary, plus the message indexes of the first and last chunk
            # of each topic (exact first/last times without decompressing).
            return None if served <= summary + 65_536 else f"{served} bytes served for a {summary}-byte summary"

        checks.check("topics() transfers the summary plus the message indexes of a few chunks", topics)

        def hive():
            sql = f"SELECT robot, count(*) AS n FROM 's3://{BUCKET}/fleet/' WHERE topic = '/tf' GROUP BY robot ORDER BY robot"
            remote = logsql.query(sql)
            expected = [{"robot": "r1", "n": 3000}, {"robot": "r2", "n": 3000}]
            got = [{"robot": r["robot"], "n": int(r["n"])} for r in remote]
            return None if got == expected else f"{got}"

        checks.check("a hive-partitioned fleet on S3 has partition columns", hive)

        def external_table():
            sql = (
                f"CREATE EXTERNAL TABLE fleet STORED AS MCAP LOCATION 's3://{BUCKET}/fleet/'; "
                "SELECT count(*) AS n FROM fleet WHERE robot = 'r2'"
            )
            rows = logsql.query(sql)
            local = logsql.query(f"SELECT count(*) AS n FROM '{big}'")
            got = [int(r["n"]) for r in rows if "n" in r]
            want = [int(r["n"]) for r in local]
            return None if got == want else f"{rows} vs {local}"

        checks.check("CREATE EXTERNAL TABLE over s3://", external_table)

        def copy_to_s3():
            repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            images = os.path.join(repo, "tests", "data", "images.mcap")
            out = f"s3://{BUCKET}/out"
            imu = f"SELECT topic, log_time, length(data) AS n FROM '{big}' WHERE topic = '/imu'"
            for name, sql in [
                ("imu.parquet", f"COPY ({imu}) TO '{out}/imu.parquet'"),
                ("imu.csv", f"COPY ({imu}) TO '{out}/imu.csv'"),
                ("imu.mcap", f"COPY (SELECT * FROM '{big}' WHERE topic = '/imu') TO '{out}/imu.mcap'"),
                ("clip.mp4", f"COPY (SELECT log_time, image FROM read_images('{images}', '/cam/jpeg')) TO '{out}/clip.mp4'"),
            ]:
                proc = subprocess.run([args.logsql, "--format", "csv", sql], capture_output=True, text=True)
                if proc.returncode != 0:
                    return f"{name}: {proc.stderr.strip()}"
            want = logsql.query(f"SELECT count(*) AS n FROM ({imu})")
            for name in ("imu.parquet", "imu.csv", "imu.mcap"):
                rows = logsql.query(f"SELECT count(*) AS n FROM '{out}/{name}'")
                if rows != want:
                    return f"{name} read back: {rows}, the local query {want}"
            clip = s3.get_object(Bucket=BUCKET, Key="out/clip.mp4")["Body"].read()
            if clip[4:8] != b"ftyp":
                return f"clip.mp4 starts with {clip[:8]!r}"
            # A failing COPY leaves the object of that name as it was, and no new one.
            before = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="out/")["Contents"]}
            for name in ("imu.parquet", "imu.mcap", "fail.parquet", "fail.mp4"):
                select = f"SELECT topic, log_time, data, 1 / (length(data) - length(data)) AS x FROM '{big}'"
                if name.endswith(".mp4"):
                    select = f"SELECT log_time, image FROM read_images('{images}', '/cam/bad')"
                proc = subprocess.run([args.logsql, f"COPY ({select}) TO '{out}/{name}'"], capture_output=True, text=True)
                if proc.returncode == 0:
                    return f"a failing COPY to {name} succeeded"
            after = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="out/")["Contents"]}
            return None if after == before else f"objects before {before}, after {after}"

        checks.check("COPY to s3:// in Parquet, CSV, MCAP and MP4, and a failing COPY leaves the objects as they were", copy_to_s3)

        def dataset_from_s3():
            # Two recordings of gen_robot under one prefix, read in one
            # partition: the scans keep their (file, log_time) order across
            # the objects (the objects' names bound `file`), so the frames
            # are merged, never sorted with their images, as on disk.
            robot = os.path.join(os.path.dirname(os.path.abspath(args.logsql)), "examples", "gen_robot")
            runs = os.path.join(tmp, "runs")
            os.makedirs(runs)
            for name, opts in (("a.mcap", []), ("b.mcap", ["--seed", "1", "--start", str(START_NS + 100_000_000_000)])):
                subprocess.run([robot, os.path.join(runs, name), *opts], check=True, capture_output=True)
                s3.upload_file(os.path.join(runs, name), BUCKET, f"runs/{name}")
            query = (
                "SELECT g.episode_index, count(j.position) AS n, count(i.image) AS images FROM time_grid('{0}', 30) g "
                "ASOF JOIN read_topic('{0}', '/joint_states') j MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file "
                "ASOF JOIN read_images('{0}', '/camera/front') i MATCH_CONDITION (g.log_time >= i.log_time) ON g.file = i.file "
                "GROUP BY g.episode_index ORDER BY g.episode_index"
            )
            remote = query.format(f"s3://{BUCKET}/runs/")
            plan = subprocess.run(
                [args.logsql, "--format", "csv", f"SET datafusion.execution.target_partitions = 1; EXPLAIN {remote}"],
                capture_output=True,
                text=True,
            )
            if plan.returncode != 0:
                return plan.stderr.strip()
            if "SortExec" in plan.stdout:
                return f"the frames are sorted:\n{plan.stdout}"
            got, want = logsql.query(remote), logsql.query(query.format(runs + "/"))
            return None if got == want and len(got) == 2 else f"s3 {got} vs disk {want}"

        checks.check("a dataset query over recordings on S3 merges them in order, as on disk", dataset_from_s3)

        def distributed():
            # (Without the feature, `worker` is taken as SQL and --help prints
            # the CLI's own help.)
            probe = subprocess.run([args.logsql, "worker", "--help"], capture_output=True, text=True)
            if probe.returncode != 0 or "--listen" not in probe.stdout:
                if os.environ.get("LOGSQL_INTEROP_DISTRIBUTED") == "1":
                    return "the binary has no `worker` subcommand (built without --features distributed)"
                print("     SKIPPED: the binary was built without the distributed feature")
                return None
            addresses = [f"127.0.0.1:{free_port()}" for _ in range(2)]
            # The workers read s3:// with their own environment (the AWS_* above),
            # below the bucket's fleet prefix only, and take the token the
            # coordinator sends.
            env = dict(os.environ, LOGSQL_WORKER_TOKEN="s3-interop-token-0123456789")
            workers = [
                subprocess.Popen(
                    [args.logsql, "worker", "--listen", a, "--data-root", f"s3://{BUCKET}/fleet"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
                for a in addresses
            ]
            try:
                for a in addresses:
                    host, port = a.split(":")
                    deadline = time.time() + 30
                    while True:
                        try:
                            socket.create_connection((host, int(port)), timeout=1).close()
                            break
                        except OSError:
                            if time.time() > deadline:
                                return f"worker {a} did not start"
                            time.sleep(0.05)
                sql = (
                    f"SELECT robot, topic, count(*) AS n, sum(length(data)) AS bytes FROM 's3://{BUCKET}/fleet/' "
                    "GROUP BY robot, topic ORDER BY robot, topic"
                )
                here = logsql.query(sql)
                # 1 MiB partitions: each 5.7 MB object is split across tasks and workers.
                split = "SET distributed.file_scan_config_bytes_per_partition = 1048576; "
                proc = subprocess.run(
                    [args.logsql, "--workers", ",".join(addresses), "--format", "ndjson", split + sql],
                    capture_output=True,
                    text=True,
                    timeout=300,
                    env=env,
                )
                if proc.returncode != 0:
                    return f"distributed query failed: {proc.stderr.strip()}"
                remote = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
                return None if remote == here else f"on workers {remote} vs one process {here}"
            finally:
                for w in workers:
                    w.kill()
                    w.wait()

        checks.check("a fleet on S3 queried through two `logsql worker` processes", distributed)
    finally:
        moto.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
