#!/usr/bin/env python3
"""Interop test: MCAP files written by the official Python writer, read by logsql.

Writes several MCAP files with ``mcap.writer.Writer`` (zstd, lz4 and uncompressed
chunks, no chunking, tiny chunks, no indexes at all, an empty file), each with
several channels (one schemaless json channel, two channels sharing a topic, a
channel registered mid-recording), out-of-order and identical log times, empty
and larger-than-a-chunk payloads. Then reads every file with the official
Python reader and with the ``logsql`` binary, and compares field by field:

- every message: topic, log_time, publish_time, sequence, message_type,
  message_encoding, payload length and sha256 (as multisets);
- per-topic counts and min/max log_time (``GROUP BY topic``);
- ``count(*)`` and ``sum(length(data))``;
- a sha256 over (topic, log_time, data) in canonical order;
- a time-window + topic query (exercises chunk pruning) against Python's filter.

Usage: mcap_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
from collections import defaultdict

from mcap.reader import make_reader
from mcap.writer import CompressionType, IndexType, Writer
from common import FIELDS, MESSAGE_SQL, Checks, Logsql, as_int, diff_multisets

BASE = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z in ns

STRING_MSG = b"string data\n"
POINT_SCHEMA = json.dumps(
    {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}
).encode()


def ros1_string(s: bytes) -> bytes:
    return len(s).to_bytes(4, "little") + s


def write_file(path, *, seed, messages=400, empty=False, **writer_kwargs):
    """Writes one MCAP with the official writer. Returns nothing: the reference is
    always what the official reader reads back."""
    rng = random.Random(seed)
    with open(path, "wb") as f:
        w = Writer(f, **writer_kwargs)
        w.start(profile="", library="logsql-interop-test")
        s_str = w.register_schema("std_msgs/String", "ros1msg", STRING_MSG)
        s_pt = w.register_schema("demo/Point", "jsonschema", POINT_SCHEMA)
        s_blob = w.register_schema("demo/Blob", "protobuf", b"\x0a\x04blob")
        chatter = w.register_channel("/chatter", "ros1", s_str, {"callerid": "/talker"})
        points = w.register_channel("/points", "json", s_pt)
        events = w.register_channel("/events", "json", 0)  # schemaless
        blob_a = w.register_channel("/blob", "protobuf", s_blob, {"sensor": "a"})
        blob_b = w.register_channel("/blob", "protobuf", s_blob, {"sensor": "b"})  # same topic
        w.add_metadata("run", {"robot": "r2", "site": "lab"})
        w.add_attachment(BASE, BASE, "notes.txt", "text/plain", b"hello attachment\n")
        if empty:
            w.finish()
            return
        late = None
        seqs = defaultdict(int)
        t = BASE
        for i in range(messages):
            if i == messages // 2:
                # A channel that first appears mid-recording.
                late = w.register_channel("/late", "cdr", s_blob)
            t += rng.choice([0, 0, 1, 1000, 250_000, 3_000_000])  # many identical times
            log_time = t
            if rng.random() < 0.15:  # out of order: jump back up to 50 ms
                log_time = max(BASE, t - rng.randrange(1, 50_000_000))
            publish_time = log_time - rng.randrange(0, 1_000_000)
            kind = rng.randrange(6 if late is not None else 5)
            if kind == 0:
                ch = chatter
                data = ros1_string(f"hello {i}".encode())
            elif kind == 1:
                ch = points
                data = json.dumps({"x": rng.random(), "y": i}).encode()
            elif kind == 2:
                ch = events
                data = b"" if rng.random() < 0.3 else json.dumps({"event": i}).encode()
            elif kind == 3:
                ch = rng.choice([blob_a, blob_b])
                n = rng.choice([0, 1, 17, 300, 4096])
                data = rng.randbytes(n)
            elif kind == 4:
                ch = blob_a
                # Occasionally a payload bigger than small chunks.
                data = rng.randbytes(70_000 if rng.random() < 0.05 else 900)
            else:
                ch = late
                data = rng.randbytes(rng.randrange(0, 64))
            seqs[ch] += 1
            seq = seqs[ch] if rng.random() > 0.1 else 0
            w.add_message(ch, log_time=log_time, data=data, publish_time=publish_time, sequence=seq)
        w.finish()


def python_messages(path):
    """Every message as the official reader yields it (file order)."""
    out = []
    with open(path, "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            out.append(
                {
                    "topic": channel.topic,
                    "log_time": message.log_time,
                    "publish_time": message.publish_time,
                    "sequence": message.sequence,
                    "message_type": schema.name if schema is not None and schema.id != 0 else None,
                    "message_encoding": channel.message_encoding,
                    "len": len(message.data),
                    "sha": hashlib.sha256(message.data).hexdigest(),
                    "data": message.data,
                }
            )
    return out


def normalise(row):
    return (
        row["topic"],
        as_int(row["log_time"]),
        as_int(row["publish_time"]),
        as_int(row["sequence"]),
        row.get("message_type"),
        row["message_encoding"],
        as_int(row["len"]),
        row["sha"],
    )


def canonical_digest(msgs):
    """sha256 over (topic, log_time, data) of every message, sorted canonically."""
    h = hashlib.sha256()
    for m in sorted(msgs, key=lambda m: (m["log_time"], m["topic"], m["sha"], m["publish_time"], m["sequence"])):
        h.update(m["topic"].encode() + b"\0" + m["log_time"].to_bytes(8, "little") + m["data"])
    return h.hexdigest()


def compare_file(checks, logsql, name, path):
    ref = python_messages(path)
    qpath = path.replace("'", "''")

    def messages():
        rows = logsql.query(MESSAGE_SQL.format(path=qpath))
        expected = [tuple(m[f] for f in FIELDS) for m in ref]
        return diff_multisets(expected, [normalise(r) for r in rows])

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
        got = (as_int(rows[0]["n"]), as_int(rows[0]["bytes"]) if rows[0]["bytes"] is not None else 0)
        want = (len(ref), sum(m["len"] for m in ref))
        return None if got == want else f"expected (count, bytes) {want}, got {got}"

    def count_only():
        rows = logsql.query(f"SELECT count(*) AS n FROM '{qpath}'")
        got = as_int(rows[0]["n"])
        return None if got == len(ref) else f"expected {len(ref)}, got {got}"

    def digest():
        # Fetch payloads themselves (hex) and hash in canonical order on both sides.
        rows = logsql.query(
            f"SELECT topic, CAST(log_time AS BIGINT) AS log_time, CAST(publish_time AS BIGINT) AS publish_time, "
            f"sequence, encode(data, 'hex') AS hex FROM '{qpath}'"
        )
        got = [
            {
                "topic": r["topic"],
                "log_time": as_int(r["log_time"]),
                "publish_time": as_int(r["publish_time"]),
                "sequence": as_int(r["sequence"]),
                "data": bytes.fromhex(r["hex"] or ""),
            }
            for r in rows
        ]
        for g in got:
            g["sha"] = hashlib.sha256(g["data"]).hexdigest()
        want, have = canonical_digest(ref), canonical_digest(got)
        return None if want == have else f"canonical sha256 {want} != {have}"

    def window():
        if not ref:
            rows = logsql.query(f"SELECT count(*) AS n FROM '{qpath}' WHERE topic = '/blob'")
            return None if as_int(rows[0]["n"]) == 0 else f"expected 0 rows, got {rows}"
        times = sorted(m["log_time"] for m in ref)
        lo = times[len(times) // 4]
        hi = times[len(times) // 2]
        topic = "/blob"
        rows = logsql.query(
            MESSAGE_SQL.format(path=qpath)
            + f" WHERE topic = '{topic}' AND log_time BETWEEN to_timestamp_nanos({lo}) AND to_timestamp_nanos({hi})"
        )
        expected = [tuple(m[f] for f in FIELDS) for m in ref if m["topic"] == topic and lo <= m["log_time"] <= hi]
        if not expected:
            return "test bug: empty window"
        return diff_multisets(expected, [normalise(r) for r in rows])

    def limit():
        if not ref:
            return None
        rows = logsql.query(f"SELECT topic FROM '{qpath}' LIMIT 7")
        want = min(7, len(ref))
        return None if len(rows) == want else f"expected {want} rows, got {len(rows)}"

    checks.check(f"{name}: every message (topic, times, sequence, type, encoding, payload sha256)", messages)
    checks.check(f"{name}: per-topic count, min/max log_time", per_topic)
    checks.check(f"{name}: count(*), sum(length(data))", totals)
    checks.check(f"{name}: count(*) alone", count_only)
    checks.check(f"{name}: canonical sha256 over (topic, log_time, data)", digest)
    checks.check(f"{name}: topic + log_time window", window)
    checks.check(f"{name}: LIMIT", limit)


CASES = [
    ("zstd", dict(compression=CompressionType.ZSTD)),
    ("lz4", dict(compression=CompressionType.LZ4)),
    ("uncompressed", dict(compression=CompressionType.NONE)),
    ("unchunked", dict(use_chunking=False)),
    ("small-chunks-zstd", dict(compression=CompressionType.ZSTD, chunk_size=2048)),
    ("small-chunks-lz4", dict(compression=CompressionType.LZ4, chunk_size=5000)),
    (
        "no-index-no-stats",
        dict(
            compression=CompressionType.ZSTD,
            chunk_size=8192,
            index_types=IndexType.NONE,
            use_statistics=False,
            use_summary_offsets=False,
            repeat_channels=False,
            repeat_schemas=False,
        ),
    ),
    ("no-message-index", dict(compression=CompressionType.ZSTD, chunk_size=8192, index_types=IndexType.CHUNK)),
    ("empty", dict(compression=CompressionType.ZSTD, empty=True)),
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
    with tempfile.TemporaryDirectory(prefix="logsql-interop-") as tmp:
        out_dir = args.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        for i, (name, kwargs) in enumerate(CASES):
            path = os.path.join(out_dir, f"{name}.mcap")
            kwargs = dict(kwargs)
            empty = kwargs.pop("empty", False)
            write_file(path, seed=1000 + i, empty=empty, **kwargs)
            compare_file(checks, logsql, name, path)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
