#!/usr/bin/env python3
"""Interop test: ROS 2 bags (rosbag2, SQLite storage) written by the python
``rosbags`` writer, read by logsql.

Writes bags with ``rosbags.rosbag2.Writer`` (sqlite3 storage, versions 8 and 9,
uncompressed, per-message zstd and whole-file zstd), a split bag (two databases
written by the writer, listed in order by one ``metadata.yaml``, as ``ros2 bag
record --max-bag-size`` lays them out), and a Humble-like bag (the
``message_definitions`` and ``schema`` tables dropped, as rosbag2 before Iron
writes them). Reads every bag with the ``rosbags`` reader and with the
``logsql`` binary and compares:

- every message: topic, log_time, message_type, message_encoding, payload
  length and sha256 (as multisets), publish_time/sequence null;
- per-topic counts and min/max log_time (``topics()``);
- a time-window + topic query;
- decoded fields (``read_topic(..., 'flatten')``) against ``rosbags``'
  deserialised messages, for sensor_msgs/msg/Imu and std_msgs/msg/String (the
  Humble-like bag through logsql's bundled interface definitions).

Usage: ros2_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import hashlib
import math
import os
import random
import sqlite3
import sys
import tempfile

import numpy as np
from rosbags.rosbag2 import CompressionFormat, CompressionMode, Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from common import FIELDS, MESSAGE_SQL, Checks, Logsql, as_int, diff_multisets

BASE = 1_700_000_000_000_000_000
TS = get_typestore(Stores.ROS2_HUMBLE)
T = TS.types
IMU = "sensor_msgs/msg/Imu"
STRING = "std_msgs/msg/String"


def imu(rng, t):
    vec = T["geometry_msgs/msg/Vector3"]
    return T[IMU](
        header=T["std_msgs/msg/Header"](
            stamp=T["builtin_interfaces/msg/Time"](sec=t // 10**9, nanosec=t % 10**9), frame_id="imu_link"
        ),
        orientation=T["geometry_msgs/msg/Quaternion"](x=rng.random(), y=rng.random(), z=rng.random(), w=1.0),
        orientation_covariance=np.array([rng.random() for _ in range(9)], dtype=np.float64),
        angular_velocity=vec(x=rng.uniform(-1, 1), y=rng.uniform(-1, 1), z=rng.uniform(-1, 1)),
        angular_velocity_covariance=np.zeros(9, dtype=np.float64),
        linear_acceleration=vec(x=rng.uniform(-1, 1), y=rng.uniform(-1, 1), z=9.81),
        linear_acceleration_covariance=np.full(9, 0.01, dtype=np.float64),
    )


def write_bag(path, *, seed, version=8, compression=None, messages=400, start=BASE):
    rng = random.Random(seed)
    w = Writer(path, version=version, storage_plugin=StoragePlugin.SQLITE3)
    if compression is not None:
        w.set_compression(compression, CompressionFormat.ZSTD)
    w.open()
    cimu = w.add_connection("/imu", IMU, typestore=TS)
    cstr = w.add_connection("/chatter", STRING, typestore=TS)
    w.add_connection("/unused", STRING, typestore=TS)
    for i in range(messages):
        t = start + i * 10_000_000 + rng.randrange(1000)
        if i % 3 == 0:
            w.write(cstr, t, TS.serialize_cdr(T[STRING](data=f"hello {seed} {i}"), STRING))
        else:
            w.write(cimu, t, TS.serialize_cdr(imu(rng, t), IMU))
    w.close()


def write_split(path, keep_dir):
    """Two databases written one after the other, listed by one metadata.yaml."""
    parts = []
    for k in range(2):
        part = os.path.join(keep_dir, f"_part{k}")
        write_bag(part, seed=40 + k, messages=150, start=BASE + k * 10**10)
        parts.append(part)
    os.makedirs(path)
    names = []
    for k, part in enumerate(parts):
        src = [f for f in os.listdir(part) if f.endswith(".db3")][0]
        name = f"split_{k}.db3"
        os.rename(os.path.join(part, src), os.path.join(path, name))
        names.append(name)
    # The first part's metadata, with both files and the summed counts.
    with open(os.path.join(parts[0], "metadata.yaml")) as f:
        text = f.read()
    text = text.replace("_part0.db3", names[0])
    text = text.replace("  - " + names[0] + "\n", "  - " + names[0] + "\n  - " + names[1] + "\n")
    text = text.replace("message_count: 150", "message_count: 300")
    text = text.replace("message_count: 100", "message_count: 200").replace("message_count: 50", "message_count: 100")
    with open(os.path.join(path, "metadata.yaml"), "w") as f:
        f.write(text)


def humble_like(path, keep_dir):
    """A bag whose database holds no message definitions (rosbag2 before Iron)."""
    write_bag(path, seed=7, version=8)
    db = os.path.join(path, [f for f in os.listdir(path) if f.endswith(".db3")][0])
    con = sqlite3.connect(db)
    con.executescript("DROP TABLE message_definitions; DROP TABLE IF EXISTS schema;")
    con.commit()
    con.close()


def reader_rows(path):
    rows = []
    with Reader(path) as r:
        for conn, t, raw in r.messages():
            raw = bytes(raw)
            rows.append((conn.topic, t, None, None, conn.msgtype, "cdr", len(raw), hashlib.sha256(raw).hexdigest()))
    return rows


def logsql_rows(ls, path):
    return [tuple(as_int(r[f]) if f in ("log_time", "publish_time", "sequence", "len") else r[f] for f in FIELDS)
            for r in ls.query(MESSAGE_SQL.format(path=path + "/"))]


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def check_decoded(ls, path):
    expected = {}
    with Reader(path) as r:
        for conn, t, raw in r.messages():
            if conn.topic != "/imu":
                continue
            m = TS.deserialize_cdr(bytes(raw), conn.msgtype)
            expected[t] = m
    got = ls.query(
        f"SELECT CAST(log_time AS BIGINT) t, CAST(\"header.stamp\" AS BIGINT) stamp, \"header.frame_id\" frame, "
        f"\"orientation.x\" ox, \"angular_velocity.z\" az, \"linear_acceleration.y\" ay, orientation_covariance oc "
        f"FROM read_topic('{path}/', '/imu', 'flatten')"
    )
    if len(got) != len(expected):
        return f"{len(expected)} /imu messages expected, {len(got)} decoded"
    for row in got:
        m = expected.get(as_int(row["t"]))
        if m is None:
            return f"unexpected log_time {row['t']}"
        want = {
            "stamp": m.header.stamp.sec * 10**9 + m.header.stamp.nanosec,
            "frame": m.header.frame_id,
            "ox": m.orientation.x,
            "az": m.angular_velocity.z,
            "ay": m.linear_acceleration.y,
        }
        for k, v in want.items():
            g = as_int(row[k]) if k == "stamp" else row[k]
            if not close(g, v):
                return f"t={row['t']} {k}: logsql {g!r}, rosbags {v!r}"
        if not all(close(a, b) for a, b in zip(row["oc"], m.orientation_covariance.tolist())):
            return f"t={row['t']} orientation_covariance: logsql {row['oc']}, rosbags {m.orientation_covariance}"
    texts = ls.query(f"SELECT CAST(log_time AS BIGINT) t, data FROM read_topic('{path}/', '/chatter')")
    want = {}
    with Reader(path) as r:
        for conn, t, raw in r.messages():
            if conn.topic == "/chatter":
                want[t] = TS.deserialize_cdr(bytes(raw), conn.msgtype).data
    if {as_int(r["t"]): r["data"] for r in texts} != want:
        return "std_msgs/msg/String data differ"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    ls = Logsql(args.logsql)
    checks = Checks()
    work = args.keep or tempfile.mkdtemp(prefix="logsql-ros2-interop-")
    os.makedirs(work, exist_ok=True)
    bags = {
        "v8_plain": lambda p: write_bag(p, seed=1, version=8),
        "v9_plain": lambda p: write_bag(p, seed=2, version=9),
        "v9_message_zstd": lambda p: write_bag(p, seed=3, version=9, compression=CompressionMode.MESSAGE),
        "v8_file_zstd": lambda p: write_bag(p, seed=4, version=8, compression=CompressionMode.FILE),
        "split": lambda p: write_split(p, work),
        "humble_like": lambda p: humble_like(p, work),
    }
    for name, make in bags.items():
        path = os.path.join(work, name)
        if not os.path.exists(path):
            make(path)
        expected = reader_rows(path)
        checks.check(f"{name}: every message", lambda: diff_multisets(expected, logsql_rows(ls, path)))

        def topics():
            got = {r["topic"]: (as_int(r["message_count"]), r["start_time"] is not None) for r in
                   ls.query(f"SELECT topic, message_count, start_time FROM topics('{path}/')")}
            want = {}
            for topic, t, *_ in expected:
                n, _ = want.get(topic, (0, True))
                want[topic] = (n + 1, True)
            want["/unused"] = (0, False)
            return None if got == want else f"logsql {got}, rosbags {want}"

        checks.check(f"{name}: topics()", topics)

        def window():
            times = sorted(t for topic, t, *_ in expected if topic == "/imu")
            lo, hi = times[len(times) // 4], times[len(times) // 2]
            want = sum(1 for topic, t, *_ in expected if topic == "/imu" and lo <= t <= hi)
            got = ls.query(
                f"SELECT count(*) n FROM '{path}/' WHERE topic = '/imu' AND "
                f"CAST(log_time AS BIGINT) BETWEEN {lo} AND {hi}"
            )
            return None if as_int(got[0]["n"]) == want else f"logsql {got[0]['n']}, rosbags {want}"

        checks.check(f"{name}: time window and topic", window)
        checks.check(f"{name}: decoded fields", lambda: check_decoded(ls, path))
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
