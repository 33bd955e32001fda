#!/usr/bin/env python3
"""Interop test: MCAP files written by logsql (``COPY ... TO 'x.mcap'``), read by
the official Python ``mcap`` reader and decoded by the official decoders.

Every source (the repository's ``tests/data/demo.*`` of all five formats, and
when ``../shared/fixtures`` exists every fixture logsql reads) is copied to MCAP
with the ``logsql`` binary. Then:

- the official reader reads every message of the copy: topic, log_time,
  publish_time, sequence, schema name, message encoding, payload length and
  sha256 equal logsql's ``messages`` rows of the source (a missing publish_time
  is written as the log time, a missing sequence as 0);
- the copy's summary statistics count every message, per channel;
- messages of ``ros1``, ``cdr`` and ``protobuf`` channels decode with
  ``mcap-ros1-support``, ``mcap-ros2-support`` and ``mcap-protobuf-support`` to
  the values logsql's ``read_topic`` gives on the source (first messages of
  each topic, every scalar and list field compared).

Usage: mcap_writer_interop.py --logsql PATH/TO/logsql [--keep DIR] [--fixtures DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import hashlib
import math
import os
import shutil
import sys
import tempfile
from collections import Counter

from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory as ProtobufDecoders
from mcap_ros1.decoder import DecoderFactory as Ros1Decoders
from mcap_ros2.decoder import DecoderFactory as Ros2Decoders

from common import Checks, Logsql, diff_multisets

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SKIP_EXT = (".md", ".json", ".tsv", ".txt", ".sh", ".snap", ".binpb", ".ts", ".yaml", ".db3", ".db3-shm", ".db3-wal")
DECODED = ("ros1", "cdr", "protobuf")
# Messages per topic read; those of them whose log_time is unique are compared.
PER_TOPIC = 6


def sources(fixtures):
    out = [os.path.join(ROOT, "tests", "data", f"demo.{e}") for e in ("mcap", "bag", "record", "bddf", "log")]
    if fixtures and os.path.isdir(fixtures):
        for fmt in ("mcap", "rosbag", "apollo", "bddf", "carla"):
            for dirpath, dirnames, filenames in os.walk(os.path.join(fixtures, fmt)):
                dirnames[:] = sorted(d for d in dirnames if d not in ("expected", "conformance"))
                for name in sorted(filenames):
                    if not name.endswith(SKIP_EXT):
                        out.append(os.path.join(dirpath, name))
    return out


def q(path):
    return path.replace("'", "''")


def logsql_rows(ls, path):
    rows = ls.query(
        "SELECT topic, CAST(log_time AS BIGINT) AS log_time, "
        "CAST(coalesce(publish_time, log_time) AS BIGINT) AS publish_time, coalesce(sequence, 0) AS sequence, "
        "message_type, message_encoding, length(data) AS len, encode(sha256(data), 'hex') AS sha "
        f"FROM '{q(path)}'"
    )
    return [
        (r["topic"], int(r["log_time"]), int(r["publish_time"]), int(r["sequence"]), r["message_type"],
         r["message_encoding"], int(r["len"]), r["sha"])
        for r in rows
    ]


def official_rows(path):
    with open(path, "rb") as f:
        reader = make_reader(f)
        out = []
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            out.append((
                channel.topic, message.log_time, message.publish_time, message.sequence,
                schema.name if schema is not None else None, channel.message_encoding,
                len(message.data), hashlib.sha256(message.data).hexdigest(),
            ))
        return out


def check_statistics(path, expected):
    with open(path, "rb") as f:
        summary = make_reader(f).get_summary()
    if summary is None or summary.statistics is None:
        return "no summary statistics"
    stats = summary.statistics
    if stats.message_count != len(expected):
        return f"statistics count {stats.message_count}, {len(expected)} messages"
    per_topic = Counter()
    for cid, n in stats.channel_message_counts.items():
        per_topic[summary.channels[cid].topic] += n
    want = Counter(r[0] for r in expected)
    if per_topic != want:
        return f"per-topic counts {dict(per_topic)} vs {dict(want)}"
    return None


def field(obj, dotted):
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return None, False
        obj = getattr(obj, part)
    return obj, True


def same(a, b):
    """Whether a value logsql printed equals one a Python decoder gave."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) or isinstance(b, float):
            return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, dict):
        verdicts = []
        for k, v in a.items():
            got, present = field(b, k)
            if present and v is not None:
                verdicts.append(same(v, got))
        if False in verdicts:
            return False
        return True if True in verdicts else None
    if isinstance(a, list):
        try:
            b = list(b)
        except TypeError:
            return None
        if len(a) != len(b):
            return False
        verdicts = [same(x, y) for x, y in zip(a, b)]
        if False in verdicts:
            return False
        return True if True in verdicts else None
    return None  # not comparable (timestamps as text, enums by name, bytes)


def check_decoded(ls, src, out, counts):
    """Compares the first messages of every decodable topic of the copy."""
    with open(out, "rb") as f:
        reader = make_reader(f, decoder_factories=[Ros1Decoders(), ProtobufDecoders(), Ros2Decoders()])
        summary = reader.get_summary()
        channels = [c for c in summary.channels.values() if c.message_encoding in DECODED and c.schema_id != 0]
        topics = sorted({c.topic for c in channels if summary.schemas[c.schema_id].encoding})
        first = {}
        skipped = []
        for topic in topics:
            try:
                for _s, channel, message, decoded in reader.iter_decoded_messages(topics=[topic], log_time_order=True):
                    first.setdefault(topic, []).append((message.log_time, decoded, channel.message_encoding))
                    if len(first[topic]) >= PER_TOPIC:
                        break
            except Exception as e:  # noqa: BLE001 - a schema the decoder cannot build
                skipped.append(f"{topic}: {type(e).__name__}")
    compared = 0
    for topic, msgs in first.items():
        try:
            rows = ls.query(
                f"SELECT CAST(log_time AS BIGINT) AS lt, * EXCEPT (log_time, publish_time, file) "
                f"FROM read_topic('{q(src)}', '{q(topic)}', 'flatten') ORDER BY log_time LIMIT {PER_TOPIC}"
            )
        except RuntimeError as e:
            skipped.append(f"{topic}: logsql cannot decode the source ({str(e).splitlines()[-1][:80]})")
            continue
        # Messages that share a log_time may come in either order: only unique times are compared.
        times = Counter(int(r["lt"]) for r in rows) + Counter(m[0] for m in msgs)
        by_time = {m[0]: m for m in msgs if times[m[0]] == 2}
        pairs = [(r, by_time[int(r["lt"])]) for r in rows if int(r["lt"]) in by_time]
        if not pairs:
            return f"{topic}: no message with a unique log_time among the first {PER_TOPIC}"
        for row, (log_time, decoded, encoding) in pairs:
            fields = 0
            for name, value in row.items():
                if name == "lt" or value is None:
                    continue
                got, present = field(decoded, name)
                if not present:
                    continue
                verdict = same(value, got)
                if verdict is False:
                    return f"{topic} @ {log_time}: {name} = {value!r} (logsql) vs {got!r} (decoder)"
                if verdict:
                    fields += 1
            if fields == 0 and any(v is not None for k, v in row.items() if k != "lt"):
                return f"{topic} @ {log_time}: no field could be compared"
            compared += fields
            counts[encoding] += 1
    if skipped:
        print(f"     ({os.path.basename(src)}: not decoded: {'; '.join(skipped)[:300]})")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    ap.add_argument(
        "--fixtures",
        default=os.environ.get("LOGSQL_FIXTURES", os.path.join(ROOT, "..", "shared", "fixtures")),
    )
    args = ap.parse_args()
    ls = Logsql(args.logsql)
    checks = Checks()
    out_dir = args.keep or tempfile.mkdtemp(prefix="logsql-mcap-writer-")
    os.makedirs(out_dir, exist_ok=True)
    counts = Counter()
    copied = 0
    for i, src in enumerate(sources(args.fixtures)):
        name = os.path.relpath(src, ROOT) if src.startswith(ROOT) else os.path.basename(src)
        try:
            expected = logsql_rows(ls, src)
        except RuntimeError:
            print(f"     (skipped {name}: not a log logsql reads)")
            continue
        out = os.path.join(out_dir, f"{i:03d}_{os.path.basename(src)}.mcap")
        try:
            ls.query(f"COPY (SELECT * FROM '{q(src)}') TO '{q(out)}'")
        except RuntimeError as e:
            checks.check(f"{name}: COPY to MCAP", lambda e=e: str(e))
            continue
        copied += 1
        checks.check(f"{name}: official reader reads {len(expected)} messages",
                     lambda: diff_multisets(expected, official_rows(out)))
        checks.check(f"{name}: statistics", lambda: check_statistics(out, expected))
        if any(r[5] in DECODED for r in expected):
            checks.check(f"{name}: decoded fields", lambda: check_decoded(ls, src, out, counts))
    print(f"     decoded messages compared by encoding: {dict(counts)}")
    checks.check("ros1, cdr and protobuf messages were decoded", lambda: None if all(counts[e] > 0 for e in DECODED) or (copied <= 5 and counts["ros1"] > 0 and counts["protobuf"] > 0) else f"{dict(counts)}")
    if not args.keep:
        shutil.rmtree(out_dir, ignore_errors=True)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
