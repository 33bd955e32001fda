#!/usr/bin/env python3
"""Interop test: ROS1 bags written by the python ``rosbags`` writer, read by logsql.

Writes bags with ``rosbags.rosbag1.Writer`` (uncompressed, bz2 and lz4 chunks;
the default 1 MiB chunk threshold and tiny thresholds that make many chunks;
a message larger than a chunk; a connection added mid-recording; two
connections on one topic; a message at time 0; out-of-order times; a bag
with connections but no messages; an empty bag). Reads every bag with the
``rosbags`` reader and with the ``logsql`` binary and compares:

- every message: topic, log_time, message_type, message_encoding, payload
  length and sha256 (as multisets), publish_time/sequence null;
- per-topic counts and min/max log_time (``GROUP BY topic``);
- ``count(*)`` (answered from the index) and ``sum(length(data))``;
- a time-window + topic query (chunk pruning and index-data skipping);
- ``LIMIT``;
- ``connections()``: id, topic, type, md5sum, callerid, latching, definition.

Also an *unindexed* copy of a bag (``index_pos`` zeroed and the index section
cut off, like a recording that was killed): ``rosbags`` refuses it, logsql
must still return every message of the original.

Usage: bag_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import hashlib
import os
import random
import struct
import sys
import tempfile

import numpy as np
from rosbags.rosbag1 import Reader, Writer
from rosbags.typesys import Stores, get_typestore
from common import FIELDS, MESSAGE_SQL, Checks, Logsql, as_int, diff_multisets

BASE = 1_700_000_000_000_000_000

TYPESTORE = get_typestore(Stores.ROS1_NOETIC)
STRING = "std_msgs/msg/String"
IMAGE = "sensor_msgs/msg/CompressedImage"
BLOB_DEF = "# opaque bytes\nuint8[] data\nstring note\n"
BLOB_MD5 = "0123456789abcdef0123456789abcdef"


def ros1_name(msgtype):
    return msgtype.replace("/msg/", "/")


def string_msg(text):
    cls = TYPESTORE.types[STRING]
    return bytes(TYPESTORE.serialize_ros1(cls(data=text), STRING))


def image_msg(rng, seq, t, size):
    Header = TYPESTORE.types["std_msgs/msg/Header"]
    Time = TYPESTORE.types["builtin_interfaces/msg/Time"]
    Img = TYPESTORE.types[IMAGE]
    msg = Img(
        header=Header(seq=seq, stamp=Time(sec=t // 10**9, nanosec=t % 10**9), frame_id="camera"),
        format="jpeg",
        data=np.frombuffer(rng.randbytes(size), dtype=np.uint8),
    )
    return bytes(TYPESTORE.serialize_ros1(msg, IMAGE))


def write_bag(path, *, seed, compression=None, threshold=None, messages=600, no_messages=False, empty=False):
    rng = random.Random(seed)
    w = Writer(path)
    if compression is not None:
        w.set_compression(compression)
    if threshold is not None:
        w.chunk_threshold = threshold
    w.open()
    if empty:
        w.close()
        return
    chatter_a = w.add_connection("/chatter", STRING, typestore=TYPESTORE, callerid="/talker_a", latching=0)
    chatter_b = w.add_connection("/chatter", STRING, typestore=TYPESTORE, callerid="/talker_b", latching=1)
    camera = w.add_connection("/camera/image/compressed", IMAGE, typestore=TYPESTORE, callerid="/cam")
    blob = w.add_connection("/blob", "custom_msgs/msg/Blob", msgdef=BLOB_DEF, md5sum=BLOB_MD5)
    if no_messages:
        w.close()
        return
    late = None
    t = BASE
    for i in range(messages):
        if i == messages // 2:
            late = w.add_connection("/late", STRING, typestore=TYPESTORE)
        t += rng.choice([0, 1, 1000, 3_000_000, 20_000_000])
        ts = t
        if i == 1:
            ts = 0  # a message at time 0
        elif rng.random() < 0.1:
            ts = t - rng.randrange(1, 40_000_000)  # out of order
        kind = rng.randrange(5 if late is not None else 4)
        if kind == 0:
            conn, data = rng.choice([chatter_a, chatter_b]), string_msg(f"hello {i}")
        elif kind == 1:
            size = 300_000 if rng.random() < 0.02 else rng.randrange(100, 5000)  # some bigger than a chunk
            conn, data = camera, image_msg(rng, i, ts, size)
        elif kind == 2:
            conn, data = blob, rng.randbytes(rng.choice([0, 1, 17, 900]))
        elif kind == 3:
            conn, data = chatter_a, string_msg("")
        else:
            conn, data = late, string_msg(f"late {i}")
        w.write(conn, ts, data)
    w.close()


def unindexed_copy(src, dst):
    """index_pos := 0 and the index section cut off: a killed recording."""
    data = bytearray(open(src, "rb").read())
    at = data.index(b"index_pos=", 13) + len("index_pos=")
    (index_pos,) = struct.unpack_from("<Q", data, at)
    data[at : at + 8] = b"\0" * 8
    with open(dst, "wb") as f:
        f.write(bytes(data[:index_pos]))


def python_messages(path):
    out = []
    with Reader(path) as r:
        for conn, ts, raw in r.messages():
            raw = bytes(raw)
            out.append(
                {
                    "topic": conn.topic,
                    "log_time": ts,
                    "message_type": ros1_name(conn.msgtype),
                    "message_encoding": "ros1",
                    "len": len(raw),
                    "sha": hashlib.sha256(raw).hexdigest(),
                    "publish_time": None,
                    "sequence": None,
                }
            )
    return out


def python_connections(path):
    with Reader(path) as r:
        return sorted(
            (
                c.id,
                c.topic,
                ros1_name(c.msgtype),
                c.digest,
                c.ext.callerid,
                None if c.ext.latching is None else bool(c.ext.latching),
                c.msgdef.data if hasattr(c.msgdef, "data") else c.msgdef,
            )
            for c in r.connections
        )


def normalise(row):
    return (
        row["topic"],
        as_int(row["log_time"]),
        as_int(row.get("publish_time")),
        as_int(row.get("sequence")),
        row.get("message_type"),
        row["message_encoding"],
        as_int(row["len"]),
        row["sha"] or hashlib.sha256(b"").hexdigest(),
    )


def compare_file(checks, logsql, name, path, ref, conns=None):
    qpath = path.replace("'", "''")

    def messages():
        rows = logsql.query(MESSAGE_SQL.format(path=qpath))
        return diff_multisets([tuple(m[f] for f in FIELDS) for m in ref], [normalise(r) for r in rows])

    def per_topic():
        rows = logsql.query(
            "SELECT topic, count(*) AS n, CAST(min(log_time) AS BIGINT) AS lo, CAST(max(log_time) AS BIGINT) AS hi "
            f"FROM '{qpath}' GROUP BY topic ORDER BY topic"
        )
        got = {r["topic"]: (as_int(r["n"]), as_int(r["lo"]), as_int(r["hi"])) for r in rows}
        want = {}
        for m in ref:
            n, lo, hi = want.get(m["topic"], (0, None, None))
            t = m["log_time"]
            want[m["topic"]] = (n + 1, t if lo is None else min(lo, t), t if hi is None else max(hi, t))
        return None if got == want else f"expected {want}, got {got}"

    def totals():
        rows = logsql.query(f"SELECT count(*) AS n, sum(length(data)) AS bytes FROM '{qpath}'")
        got = (as_int(rows[0]["n"]), as_int(rows[0]["bytes"]) or 0)
        want = (len(ref), sum(m["len"] for m in ref))
        return None if got == want else f"expected (count, bytes) {want}, got {got}"

    def count_only():
        got = as_int(logsql.query(f"SELECT count(*) AS n FROM '{qpath}'")[0]["n"])
        return None if got == len(ref) else f"expected {len(ref)}, got {got}"

    def window():
        if not ref:
            rows = logsql.query(f"SELECT count(*) AS n FROM '{qpath}' WHERE topic = '/chatter'")
            return None if as_int(rows[0]["n"]) == 0 else f"expected 0 rows, got {rows}"
        times = sorted(m["log_time"] for m in ref if m["log_time"] > 0)
        lo, hi = times[len(times) // 3], times[len(times) // 2]
        for topic in ("/chatter", "/camera/image/compressed"):
            rows = logsql.query(
                MESSAGE_SQL.format(path=qpath)
                + f" WHERE topic = '{topic}' AND log_time BETWEEN to_timestamp_nanos({lo}) AND to_timestamp_nanos({hi})"
            )
            expected = [tuple(m[f] for f in FIELDS) for m in ref if m["topic"] == topic and lo <= m["log_time"] <= hi]
            if not expected:
                return f"test bug: empty window for {topic}"
            problem = diff_multisets(expected, [normalise(r) for r in rows])
            if problem:
                return f"{topic}: {problem}"
            rows = logsql.query(
                f"SELECT count(*) AS n FROM '{qpath}' WHERE topic = '{topic}' "
                f"AND log_time BETWEEN to_timestamp_nanos({lo}) AND to_timestamp_nanos({hi})"
            )
            if as_int(rows[0]["n"]) != len(expected):
                return f"{topic}: header-only count {rows[0]['n']} != {len(expected)}"
        return None

    def limit():
        rows = logsql.query(f"SELECT topic FROM '{qpath}' LIMIT 7")
        want = min(7, len(ref))
        return None if len(rows) == want else f"expected {want} rows, got {len(rows)}"

    def connections():
        rows = logsql.query(
            "SELECT connection_id, topic, message_type, md5sum, callerid, latching, message_definition "
            f"FROM connections('{qpath}') ORDER BY connection_id"
        )
        got = sorted(
            (
                as_int(r["connection_id"]),
                r["topic"],
                r["message_type"],
                r["md5sum"],
                r.get("callerid"),
                r.get("latching"),
                r["message_definition"],
            )
            for r in rows
        )
        return None if got == conns else f"expected {conns}, got {got}"

    checks.check(f"{name}: every message (topic, time, type, encoding, payload sha256)", messages)
    checks.check(f"{name}: per-topic count, min/max log_time", per_topic)
    checks.check(f"{name}: count(*), sum(length(data))", totals)
    checks.check(f"{name}: count(*) alone", count_only)
    checks.check(f"{name}: topic + log_time window", window)
    checks.check(f"{name}: LIMIT", limit)
    if conns is not None:
        checks.check(f"{name}: connections()", connections)


CASES = [
    ("none", dict()),
    ("bz2", dict(compression=Writer.CompressionFormat.BZ2)),
    ("lz4", dict(compression=Writer.CompressionFormat.LZ4)),
    ("small-chunks-none", dict(threshold=4096)),
    ("small-chunks-bz2", dict(compression=Writer.CompressionFormat.BZ2, threshold=8192)),
    ("small-chunks-lz4", dict(compression=Writer.CompressionFormat.LZ4, threshold=5000, messages=1500)),
    ("connections-only", dict(compression=Writer.CompressionFormat.LZ4, no_messages=True)),
    ("empty", dict(empty=True)),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logsql", required=True, help="path of the logsql binary")
    parser.add_argument("--keep", help="write the files here (kept) instead of a temp dir")
    args = parser.parse_args()
    if not os.access(args.logsql, os.X_OK):
        print(f"logsql binary {args.logsql} not found or not executable (build it first)")
        print("0 passed, 1 failed")
        return 1
    logsql = Logsql(os.path.abspath(args.logsql))
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="logsql-bag-interop-") as tmp:
        out_dir = args.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        for i, (name, kwargs) in enumerate(CASES):
            path = os.path.join(out_dir, f"{name}.bag")
            if os.path.exists(path):
                os.remove(path)
            write_bag(path, seed=2000 + i, **kwargs)
            ref = python_messages(path)
            compare_file(checks, logsql, name, path, ref, python_connections(path))
            if name in ("bz2", "small-chunks-lz4"):
                # The same content as a killed recording: no index at all.
                cut = os.path.join(out_dir, f"{name}-unindexed.bag")
                unindexed_copy(path, cut)
                compare_file(checks, logsql, f"{name}-unindexed", cut, ref)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
