#!/usr/bin/env python3
"""Interop test: Apollo Cyber RT records written by the pip ``cyber_record``
writer (pure Python), read by logsql.

Writes records with ``cyber_record.record.Record(path, "w")`` (protobuf
messages from the protobuf runtime's own well-known types, so their ProtoDesc
trees are real; the default chunk size and tiny chunks that make many chunks;
a 300 KB message; out-of-order times; a message at time 0; raw payloads with
``write_raw``; a channel whose ``proto_desc`` is garbage, as Apollo's demo
writers store). Reads every record with the ``cyber_record`` reader (where it
can: it refuses garbage descriptors) and with an independent section walk over
``record_pb2``, and with the ``logsql`` binary, and compares:

- every message: topic, log_time, message_type, message_encoding, payload
  length and sha256 (as multisets), publish_time/sequence null;
- per-topic counts and min/max log_time (``GROUP BY topic``);
- ``count(*)`` and ``sum(length(data))``;
- a time-window + topic query;
- ``LIMIT``.

Also an *unclosed* copy of a record (header rewritten as at open:
``is_complete`` false, no index position or size; the index cut off, like a
crashed recorder): ``cyber_record`` refuses it, logsql must still return every
message; and a *torn* copy (cut inside the last chunk body): every message of
the complete chunks.

When ``../shared/fixtures/apollo`` exists, its complete files are compared too.

Usage: apollo_interop.py --logsql PATH/TO/logsql [--keep DIR]
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

from cyber_record.cyber.proto import proto_desc_pb2, record_pb2
from cyber_record.record import Record
from google.protobuf import struct_pb2, timestamp_pb2, wrappers_pb2

from common import FIELDS, MESSAGE_SQL, Checks, Logsql, as_int, diff_multisets

BASE = 1_700_000_000_000_000_000
FIRST_SECTION = 2064


def proto_desc_of(message_class):
    """The ProtoDesc tree of a message class's file (as the C++ recorder builds it)."""
    from google.protobuf import descriptor_pb2

    def fill(file_descriptor, node):
        fdp = descriptor_pb2.FileDescriptorProto()
        file_descriptor.CopyToProto(fdp)
        node.desc = fdp.SerializeToString()
        for dep in file_descriptor.dependencies:
            fill(dep, node.dependencies.add())

    root = proto_desc_pb2.ProtoDesc()
    fill(message_class.DESCRIPTOR.file, root)
    return root


def write_record(path, *, seed, chunk_threshold=None, messages=800, garbage_desc=False):
    rng = random.Random(seed)
    kwargs = {} if chunk_threshold is None else {"chunk_threshold": chunk_threshold}
    rec = Record(path, mode="w", **kwargs)
    t = BASE
    blob_desc = proto_desc_of(wrappers_pb2.BytesValue)
    for i in range(messages):
        t += rng.choice([1000, 3_000_000, 10_000_000, 50_000_000])
        ts = t
        if i == 3:
            ts = 0  # a message at time 0
        elif rng.random() < 0.05:
            ts = t - rng.randrange(1, 40_000_000)  # out of order
        kind = rng.randrange(4)
        if kind == 0:
            msg = timestamp_pb2.Timestamp(seconds=ts // 10**9, nanos=ts % 10**9)
            rec.write("/clock", msg, ts)
        elif kind == 1:
            msg = struct_pb2.Struct()
            msg.update({"i": i, "name": f"obstacle {i}", "ok": bool(i % 2)})
            rec.write("/apollo/perception/obstacles", msg, ts)
        elif kind == 2:
            size = 300_000 if i == 100 else rng.randrange(1, 4000)
            payload = wrappers_pb2.BytesValue(value=rng.randbytes(size)).SerializeToString()
            rec.write_raw("/apollo/sensor/blob", payload, "google.protobuf.BytesValue", blob_desc, ts)
        else:
            rec.write("/chatter", wrappers_pb2.StringValue(value=f"hello {i}"), ts)
    rec.close()
    if garbage_desc:
        replace_proto_desc(path, "/chatter", b"test ....")


def replace_proto_desc(path, channel, desc):
    """Rewrites a closed record with `desc` as `channel`'s proto_desc (in its
    Channel section and its index ChannelCache), as Apollo's demo writers store
    it; the pip writer refuses such bytes."""
    data = open(path, "rb").read()
    (hsize,) = struct.unpack_from("<q", data, 8)
    header = record_pb2.Header()
    header.ParseFromString(data[16 : 16 + hsize])
    sections = []
    pos = FIRST_SECTION
    while pos < header.index_position:
        (kind,) = struct.unpack_from("<I", data, pos)
        (size,) = struct.unpack_from("<q", data, pos + 8)
        body = data[pos + 16 : pos + 16 + size]
        if kind == 4:
            ch = record_pb2.Channel()
            ch.ParseFromString(body)
            if ch.name == channel:
                ch.proto_desc = desc
                body = ch.SerializeToString()
        sections.append((pos, kind, body))
        pos += 16 + size
    (isize,) = struct.unpack_from("<q", data, pos + 8)
    index = record_pb2.Index()
    index.ParseFromString(data[pos + 16 : pos + 16 + isize])
    out = bytearray(FIRST_SECTION)
    moved = {}
    for old, kind, body in sections:
        moved[old] = len(out)
        out += struct.pack("<Iiq", kind, 0, len(body)) + body
    for entry in index.indexes:
        entry.position = moved[entry.position]
        if entry.HasField("channel_cache") and entry.channel_cache.name == channel:
            entry.channel_cache.proto_desc = desc
    header.index_position = len(out)
    raw = index.SerializeToString()
    out += struct.pack("<Iiq", 3, 0, len(raw)) + raw
    header.size = len(out)
    raw = header.SerializeToString()
    out[0:16] = struct.pack("<Iiq", 0, 0, len(raw))
    out[16 : 16 + len(raw)] = raw
    out[16 + len(raw)] = data[16 + hsize]  # the writer's padding style
    with open(path, "wb") as f:
        f.write(bytes(out))


def walk_messages(path):
    """Every message of every complete chunk body, from the raw sections
    (independent of both readers): stops at INDEX, at header.size when the
    file is closed, and at a torn or unknown section."""
    data = open(path, "rb").read()
    (hsize,) = struct.unpack_from("<q", data, 8)
    header = record_pb2.Header()
    header.ParseFromString(data[16 : 16 + hsize])
    end = header.size if header.is_complete and 0 < header.size <= len(data) else len(data)
    types = {}
    pos = FIRST_SECTION
    out = []
    while pos + 16 <= end:
        (kind,) = struct.unpack_from("<I", data, pos)
        (size,) = struct.unpack_from("<q", data, pos + 8)
        if kind > 4 or size < 0 or pos + 16 + size > end or kind == 3:
            break
        body = data[pos + 16 : pos + 16 + size]
        if kind == 4:
            ch = record_pb2.Channel()
            ch.ParseFromString(body)
            types.setdefault(ch.name, ch.message_type)
        elif kind == 2:
            cb = record_pb2.ChunkBody()
            cb.ParseFromString(body)
            for m in cb.messages:
                out.append(
                    {
                        "topic": m.channel_name,
                        "log_time": m.time,
                        "publish_time": None,
                        "sequence": None,
                        "message_type": types.get(m.channel_name),
                        "message_encoding": "protobuf",
                        "len": len(m.content),
                        "sha": hashlib.sha256(m.content).hexdigest(),
                    }
                )
        pos += 16 + size
    return out


def official_messages(path):
    """(topic, time, sha256 of the re-serialized message) from cyber_record's indexed reader."""
    out = []
    for topic, msg, t in Record(path).read_messages():
        raw = msg.SerializeToString() if hasattr(msg, "SerializeToString") else bytes(msg)
        out.append((topic, t, hashlib.sha256(raw).hexdigest()))
    return out


def unclosed_copy(src, dst):
    """The header as written at open (is_complete false, no index/size/counts), index cut off."""
    data = bytearray(open(src, "rb").read())
    (hsize,) = struct.unpack_from("<q", data, 8)
    header = record_pb2.Header()
    header.ParseFromString(bytes(data[16 : 16 + hsize]))
    index_position = header.index_position
    for f in ("index_position", "chunk_number", "channel_number", "begin_time", "end_time", "message_number", "size"):
        setattr(header, f, 0)
    header.is_complete = False
    raw = header.SerializeToString()
    # Keep the writer's padding style ('0' then NULs for C++, all NUL for pip).
    slot = raw + data[16 + hsize : 17 + hsize] + bytes(2048 - len(raw) - 1)
    data[8:16] = struct.pack("<q", len(raw))
    data[16:2064] = slot
    with open(dst, "wb") as f:
        f.write(bytes(data[:index_position]))


def torn_copy(src, dst, cut=1000):
    """An unclosed copy cut `cut` bytes before its end (inside the last body)."""
    unclosed_copy(src, dst)
    data = open(dst, "rb").read()
    with open(dst, "wb") as f:
        f.write(data[: len(data) - cut])


class TolerantLogsql(Logsql):
    """The CLI with ``--on-error warn``: damaged files return what is readable."""

    def query(self, sql):
        proc = subprocess.run(
            [self.binary, sql, "--format", "ndjson", "--on-error", "warn"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"logsql failed ({proc.returncode}) on {sql!r}:\n{proc.stderr.strip()}")
        rows = []
        for line in proc.stdout.splitlines():
            line = line.strip()
            if line:
                value = json.loads(line)
                rows.extend(value if isinstance(value, list) else [value])
        return rows


def torn_fails_by_default(logsql, path):
    """A torn recording is unfinished: by default its complete messages and one
    warning that says so; with --on-error error, the rows and then an error."""
    run = lambda *extra: subprocess.run(
        [logsql.binary, f"SELECT count(*) AS n FROM '{path}'", "--format", "ndjson", *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )
    proc = run()
    if proc.returncode != 0:
        return f"an unfinished recording is no error by default: {proc.stderr.strip()}"
    if "unfinished record file" not in proc.stderr or os.path.basename(path) not in proc.stderr:
        return f"the warning should name the file and say the recording is unfinished: {proc.stderr.strip()}"
    strict = run("--on-error", "error")
    if strict.returncode == 0:
        return "expected an error for the torn recording with --on-error error"
    if "incomplete" not in strict.stderr or os.path.basename(path) not in strict.stderr:
        return f"the error should name the file and say the recording is incomplete: {strict.stderr.strip()}"
    if strict.stdout != proc.stdout:
        return f"the strict run printed other rows before its error: {strict.stdout!r} vs {proc.stdout!r}"
    return None


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


def compare_file(checks, logsql, name, path, ref, official=None):
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

    def window():
        times = sorted(m["log_time"] for m in ref if m["log_time"] > 0)
        if not times:
            return None
        lo, hi = times[len(times) // 3], times[2 * len(times) // 3]
        topic = ref[len(ref) // 2]["topic"]
        rows = logsql.query(
            "SELECT topic, CAST(log_time AS BIGINT) AS log_time, encode(sha256(data), 'hex') AS sha "
            f"FROM '{qpath}' WHERE topic = '{topic}' "
            f"AND log_time BETWEEN to_timestamp_nanos({lo}) AND to_timestamp_nanos({hi})"
        )
        want = [(m["topic"], m["log_time"], m["sha"]) for m in ref if m["topic"] == topic and lo <= m["log_time"] <= hi]
        got = [(r["topic"], as_int(r["log_time"]), r["sha"]) for r in rows]
        return diff_multisets(want, got)

    def limit():
        rows = logsql.query(f"SELECT topic FROM '{qpath}' LIMIT 7")
        want = min(7, len(ref))
        return None if len(rows) == want else f"expected {want} rows, got {len(rows)}"

    def early():
        # Messages at time 0 (and any before the first second) sit below their
        # chunk header's begin time in several writers: pruning must not drop them.
        rows = logsql.query(f"SELECT count(*) AS n FROM '{qpath}' WHERE log_time < to_timestamp_nanos(1000000000)")
        want = sum(1 for m in ref if m["log_time"] < 10**9)
        got = as_int(rows[0]["n"])
        return None if got == want else f"expected {want}, got {got}"

    checks.check(f"{name}: messages", messages)
    checks.check(f"{name}: messages before 1 s (time 0)", early)
    checks.check(f"{name}: per-topic counts and times", per_topic)
    checks.check(f"{name}: count and bytes", totals)
    checks.check(f"{name}: time window + topic", window)
    checks.check(f"{name}: LIMIT", limit)
    if official is not None:

        def agrees():
            mine = sorted((m["topic"], m["log_time"], m["sha"]) for m in ref)
            return diff_multisets(mine, official)

        checks.check(f"{name}: section walk agrees with cyber_record", agrees)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    logsql = Logsql(args.logsql)
    tolerant = TolerantLogsql(args.logsql)
    checks = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or tmp
        os.makedirs(out, exist_ok=True)
        cases = [
            ("default", dict(seed=1)),
            ("medium-chunks", dict(seed=4, chunk_threshold=64 * 1024)),
            ("small-chunks", dict(seed=2, chunk_threshold=4096, messages=1500)),
        ]
        for name, kw in cases:
            path = os.path.join(out, f"{name}.record")
            write_record(path, **kw)
            ref = walk_messages(path)
            compare_file(checks, logsql, name, path, ref, official_messages(path))
            # The unclosed and torn copies.
            unclosed = os.path.join(out, f"{name}-unclosed.record")
            unclosed_copy(path, unclosed)
            compare_file(checks, logsql, f"{name} unclosed", unclosed, ref)
            torn = os.path.join(out, f"{name}-torn.record")
            torn_copy(path, torn)
            torn_ref = walk_messages(torn)

            def torn_is_prefix(torn_ref=torn_ref, ref=ref):
                if len(torn_ref) >= len(ref):
                    return f"the torn copy should lose its last chunk ({len(torn_ref)} of {len(ref)})"
                return None

            checks.check(f"{name} torn: loses the last chunk", torn_is_prefix)
            checks.check(f"{name} torn: an error by default", lambda torn=torn: torn_fails_by_default(logsql, torn))
            compare_file(checks, tolerant, f"{name} torn", torn, torn_ref)
        garbage = os.path.join(out, "garbage-desc.record")
        write_record(garbage, seed=3, garbage_desc=True)
        compare_file(checks, logsql, "garbage proto_desc", garbage, walk_messages(garbage))

        fixtures = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "fixtures", "apollo")
        fixtures = os.environ.get("LOGSQL_FIXTURES_APOLLO", fixtures)
        for rel in [
            "generated/small.record",
            "generated/builtin_schema.record",
            "generated/segmented.record.00001",
            "real/example.record.00000",
        ]:
            path = os.path.join(fixtures, rel)
            if os.path.exists(path):
                compare_file(checks, logsql, rel, path, walk_messages(path), official_messages(path))
        for rel in ["generated/legacy_index_positions.record", "real/mytest.record", "generated/crash_incomplete.record"]:
            path = os.path.join(fixtures, rel)
            if os.path.exists(path):
                compare_file(checks, logsql, rel, path, walk_messages(path))
        path = os.path.join(fixtures, "generated/crash_torn_tail.record")
        if os.path.exists(path):
            compare_file(checks, tolerant, "generated/crash_torn_tail.record", path, walk_messages(path))

    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
