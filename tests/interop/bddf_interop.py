#!/usr/bin/env python3
"""Interop test: BDDF files written by the official ``bosdyn.bddf.DataWriter``
(bosdyn-core), read by the official ``DataReader`` and by logsql.

Writes files with protobuf-typed message series (channel name != type name),
a non-protobuf series with a 4-key spec and additional indexes, POD series
(float64[3], int32 scalar, uint16 scalar, float32[2,2]), a series registered
mid-file, a series registered but never written, out-of-order timestamps, a
file with no series at all, and a big image-like series. Compares:

- every message: topic, log_time, message_type, message_encoding, payload
  length and sha256 (as multisets) against ``DataReader.read(i, k)``;
- per-topic counts and min/max log_time;
- ``count(*)`` (answered from the index) and ``sum(length(data))``;
- a time-window + topic query;
- the ``series()`` table: identifier hash, block count, total bytes;
- the ``pod()`` table: every sample against ``struct.unpack`` of the payloads;
- copies without the trailer, and cut before the index: ``DataReader`` refuses
  them; logsql (``--on-error warn``) returns every complete block.

Usage: bddf_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import hashlib
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

from bosdyn.api import bddf_pb2
from bosdyn.bddf import DataReader, DataWriter
from common import FIELDS, MESSAGE_SQL, Checks, Logsql, as_int, diff_multisets

BASE = 1_700_000_000_000_000_000
POD_FMT = {1: "b", 2: "h", 3: "i", 4: "q", 5: "B", 6: "H", 7: "I", 8: "Q", 9: "f", 10: "d"}
PROTOBUF = "application/protobuf"


def write_file(path, *, seed, no_series=False, out_of_order=False, images=0):
    rng = random.Random(seed)
    with open(path, "wb") as f:
        w = DataWriter(f, annotations={"bosdyn:robot-nickname": f"interop-{seed}"})
        if no_series:
            w._close()  # pylint: disable=protected-access
            return
        ch = "bosdyn:channel"
        state = w.add_message_series(ch, {ch: "bosdyn.api.RobotState"}, PROTOBUF, "bosdyn.api.RobotState")
        cam = w.add_message_series(ch, {ch: "camera/left"}, PROTOBUF, "bosdyn.api.ImageResponse")
        csv = w.add_message_series(
            "acme:log", {"sensor": "lidar", "Z": "x", "a": "ü", "b-key": "2"}, "text/csv", "acme.Csv",
            annotations={"units": "m"}, additional_index_names=["sequence", "rx_ns"])
        imu = w.add_pod_series(ch, {ch: "imu"}, bddf_pb2.TYPE_FLOAT64, [3])
        cell = w.add_pod_series(ch, {ch: "cell_mv"}, bddf_pb2.TYPE_INT32)
        u16 = w.add_pod_series("acme:signals", {"varname": "u16"}, bddf_pb2.TYPE_UINT16)
        mat = w.add_pod_series(ch, {ch: "rot"}, bddf_pb2.TYPE_FLOAT32, [2, 2])
        w.add_message_series(ch, {ch: "never/written"}, PROTOBUF, "bosdyn.api.Event")
        late = None
        seq = 0
        for k in range(400):
            t = BASE + k * 10_000_000
            if out_of_order and k % 50 == 25:
                t -= 15_000_000
            w.write_data(state, t, rng.randbytes(rng.randint(100, 1500)))
            if k % 10 == 0:
                w.write_data(imu, t + 1, struct.pack("<30d", *[rng.uniform(-10, 10) for _ in range(30)]))
                w.write_data(u16, t + 2, struct.pack("<5H", *[rng.randint(0, 65535) for _ in range(5)]))
            if k % 25 == 0:
                w.write_data(cell, t + 3, struct.pack("<16i", *[rng.randint(-2**31, 2**31 - 1) for _ in range(16)]))
                w.write_data(mat, t + 4, struct.pack("<8f", *[rng.uniform(-1, 1) for _ in range(8)]))
            if k % 7 == 0:
                w.write_data(csv, t + 5, f"{k},{rng.random()}\n".encode(), [seq, t + 123])
                seq += 1
            if images and k % (400 // images) == 0:
                w.write_data(cam, t + 6, rng.randbytes(rng.randint(20_000, 60_000)))
            if k == 200:
                late = w.add_message_series(ch, {ch: "bosdyn.api.OperatorComment"}, PROTOBUF,
                                            "bosdyn.api.OperatorComment")
            if late is not None and k % 40 == 0:
                w.write_data(late, t + 7, f"comment {k}".encode())
        w._close()  # pylint: disable=protected-access


def topic_of(desc):
    spec = dict(desc.series_identifier.spec)
    if "bosdyn:channel" in spec:
        return spec["bosdyn:channel"]
    kv = ",".join(f"{k}={spec[k]}" for k in sorted(spec, key=lambda s: s.encode()))
    return f"{desc.series_identifier.series_type}:{kv}"


def type_of(desc):
    if desc.WhichOneof("DataType") == "pod_type":
        name = bddf_pb2.PodTypeEnum.Name(desc.pod_type.pod_type)
        dims = list(desc.pod_type.dimension)
        return (name + "[" + ", ".join(map(str, dims)) + "]" if dims else name), "pod"
    mt = desc.message_type
    return mt.type_name, ("protobuf" if mt.content_type == PROTOBUF else mt.content_type)


def official(path):
    """Every block through the official DataReader: (messages, series info)."""
    msgs, series = [], []
    with open(path, "rb") as f:
        r = DataReader(f)
        for i in range(len(r.file_index.series_identifiers)):
            d = r.series_descriptor(i)
            topic = topic_of(d)
            mtype, enc = type_of(d)
            blocks = []
            for k in range(r.num_data_blocks(i)):
                _, ts, data = r.read(i, k)
                blocks.append((ts, bytes(data)))
                msgs.append((topic, ts, None, None, mtype, enc, len(data), hashlib.sha256(data).hexdigest()))
            series.append({"index": i, "topic": topic, "desc": d, "blocks": blocks,
                           "total": r.total_bytes(i), "hash": r.file_index.series_identifier_hashes[i]})
    return msgs, series


def logsql_messages(ls, path, extra=""):
    rows = ls.query(MESSAGE_SQL.format(path=path) + extra)
    return [tuple(as_int(r[k]) if k in ("log_time", "len", "sequence", "publish_time") else r[k]
                  for k in FIELDS) for r in rows]


def run_warn(binary, sql):
    proc = subprocess.run([binary, sql, "--format", "ndjson", "--on-error", "warn"],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"logsql failed ({proc.returncode}) on {sql!r}:\n{proc.stderr.strip()}")
    rows = []
    for line in proc.stdout.splitlines():
        if line.strip():
            v = json.loads(line)
            rows.extend(v if isinstance(v, list) else [v])
    return rows, proc.stderr


def check_file(checks, ls, path, name):
    expected, series = official(path)
    checks.check(f"{name}: every message", lambda: diff_multisets(expected, logsql_messages(ls, path)))

    def counts():
        rows = ls.query(f"SELECT topic, count(*) AS n, CAST(min(log_time) AS BIGINT) AS lo, "
                        f"CAST(max(log_time) AS BIGINT) AS hi FROM '{path}' GROUP BY topic")
        got = {r["topic"]: (as_int(r["n"]), as_int(r["lo"]), as_int(r["hi"])) for r in rows}
        want = {s["topic"]: (len(s["blocks"]), min(t for t, _ in s["blocks"]), max(t for t, _ in s["blocks"]))
                for s in series if s["blocks"]}
        return None if got == want else f"{got} != {want}"
    checks.check(f"{name}: per-topic counts and times", counts)

    def totals():
        r = ls.query(f"SELECT count(*) AS n, sum(length(data)) AS b FROM '{path}'")[0]
        want = (len(expected), sum(m[6] for m in expected))
        got = (as_int(r["n"]), as_int(r["b"]) if r["b"] is not None else 0)
        return None if got == want else f"{got} != {want}"
    checks.check(f"{name}: count(*) and bytes", totals)

    if expected:
        lo, hi = BASE + 1_000_000_000, BASE + 2_500_000_000

        def window():
            sql = (f" WHERE log_time BETWEEN to_timestamp_nanos({lo}) AND to_timestamp_nanos({hi})"
                   " AND topic = 'bosdyn.api.RobotState'")
            want = [m for m in expected if lo <= m[1] <= hi and m[0] == "bosdyn.api.RobotState"]
            return diff_multisets(want, logsql_messages(ls, path, sql))
        checks.check(f"{name}: time window + topic", window)

    def series_table():
        rows = ls.query(f"SELECT series_index, topic, identifier_hash, hash_ok, block_count, total_bytes "
                        f"FROM series('{path}') ORDER BY series_index")
        got = [(as_int(r["series_index"]), r["topic"], as_int(r["identifier_hash"]), r["hash_ok"],
                as_int(r["block_count"]), as_int(r["total_bytes"])) for r in rows]
        want = [(s["index"], s["topic"], s["hash"], True, len(s["blocks"]), s["total"]) for s in series]
        return None if got == want else f"{got} != {want}"
    checks.check(f"{name}: series()", series_table)

    for s in series:
        d = s["desc"]
        if d.WhichOneof("DataType") != "pod_type" or not s["blocks"]:
            continue
        code = POD_FMT[d.pod_type.pod_type]
        per = 1
        for x in d.pod_type.dimension:
            per *= x

        def pod(s=s, code=code, per=per):
            num = float if code in "fd" else int
            want = []
            for ts, data in s["blocks"]:
                vals = struct.unpack("<%d%s" % (len(data) // struct.calcsize(code), code), data)
                for j in range(len(vals) // per):
                    want.append((ts, j, [num(x) for x in vals[j * per:(j + 1) * per]]))
            rows = ls.query(f"SELECT CAST(log_time AS BIGINT) AS t, sample, value FROM pod('{path}', '{s['topic']}')")
            got = []
            for r in rows:
                v = r["value"] if isinstance(r["value"], list) else [r["value"]]
                if code == "f":  # float32 printed as text may not round-trip: compare as float32
                    v = [struct.unpack("<f", struct.pack("<f", float(x)))[0] for x in v]
                got.append((as_int(r["t"]), as_int(r["sample"]), [num(x) for x in v]))
            if code == "f":
                want = [(t, j, [struct.unpack("<f", struct.pack("<f", x))[0] for x in v]) for t, j, v in want]
            key = lambda row: (row[0], row[1], json.dumps(row[2]))
            if sorted(got, key=key) == sorted(want, key=key):
                return None
            return f"{len(got)} rows vs {len(want)}; first {got[:1]} vs {want[:1]}"
        checks.check(f"{name}: pod({s['topic']})", pod)
    return expected


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    ls = Logsql(args.logsql)
    checks = Checks()
    tmp = args.keep or tempfile.mkdtemp(prefix="bddf-interop-")
    os.makedirs(tmp, exist_ok=True)

    plain = os.path.join(tmp, "plain.bddf")
    write_file(plain, seed=1, images=8)
    expected = check_file(checks, ls, plain, "plain")
    ooo = os.path.join(tmp, "out_of_order.bddf")
    write_file(ooo, seed=2, out_of_order=True)
    check_file(checks, ls, ooo, "out_of_order")

    empty = os.path.join(tmp, "no_series.bddf")
    write_file(empty, seed=3, no_series=True)

    def no_series():
        r = ls.query(f"SELECT count(*) AS n FROM '{empty}'")[0]
        return None if as_int(r["n"]) == 0 else f"{r}"
    checks.check("no_series: readable, 0 messages (the official readers crash)", no_series)

    with open(plain, "rb") as f:
        data = f.read()
    with open(plain, "rb") as f:
        first_sbi = min(DataReader(f).file_index.series_block_index_offsets)
    for label, cut in [("no-trailer", len(data) - 40), ("before-index", first_sbi)]:
        p = os.path.join(tmp, f"cut-{label}.bddf")
        with open(p, "wb") as f:
            f.write(data[:cut])

        def refuses(p=p):
            try:
                with open(p, "rb") as f:
                    DataReader(f)
            except Exception:  # noqa: BLE001
                return None
            return "the official DataReader read it"
        checks.check(f"cut {label}: official DataReader refuses", refuses)

        def recovers(p=p):
            rows, err = run_warn(args.logsql, MESSAGE_SQL.format(path=p))
            got = [tuple(as_int(r[k]) if k in ("log_time", "len", "sequence", "publish_time") else r[k]
                         for k in FIELDS) for r in rows]
            problem = diff_multisets(expected, got)
            if problem:
                return problem
            # A cut file is an unfinished recording: one warning, saying so.
            return None if "unfinished bddf file" in err else f"no truncation warning: {err[:300]}"
        checks.check(f"cut {label}: logsql returns every block", recovers)

    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
