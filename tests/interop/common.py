"""Shared by the interop suites: the logsql CLI wrapper, the message query and
its columns, the pass/fail bookkeeping, and the reading of a ROS bag logsql
wrote through rosbags' own readers."""

import hashlib
import json
import pathlib
import subprocess
from collections import Counter


class Logsql:
    def __init__(self, binary):
        self.binary = binary

    def query(self, sql):
        proc = subprocess.run(
            [self.binary, sql, "--format", "ndjson"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"logsql failed ({proc.returncode}) on {sql!r}:\n{proc.stderr.strip()}")
        rows = []
        for line in proc.stdout.splitlines():
            line = line.strip()
            if not line:
                continue
            value = json.loads(line)
            rows.extend(value if isinstance(value, list) else [value])
        return rows


def as_int(v):
    """Integers may come back as JSON numbers or strings."""
    return None if v is None else int(v)


MESSAGE_SQL = (
    "SELECT topic, CAST(log_time AS BIGINT) AS log_time, CAST(publish_time AS BIGINT) AS publish_time, "
    "sequence, message_type, message_encoding, length(data) AS len, encode(sha256(data), 'hex') AS sha "
    "FROM '{path}'"
)

FIELDS = ("topic", "log_time", "publish_time", "sequence", "message_type", "message_encoding", "len", "sha")


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, fn):
        try:
            problem = fn()
        except Exception as e:  # noqa: BLE001 - any error is a failed check
            problem = f"{type(e).__name__}: {e}"
        if problem:
            self.failed += 1
            print(f"FAIL {name}: {problem}")
        else:
            self.passed += 1
            print(f"ok   {name}")


def diff_multisets(expected, actual, limit=5):
    e, a = Counter(expected), Counter(actual)
    if e == a:
        return None
    missing = list((e - a).elements())[:limit]
    extra = list((a - e).elements())[:limit]
    return f"{sum(e.values())} expected vs {sum(a.values())} read; missing {missing}; unexpected {extra}"


def rosbags_view(out, kind):
    """OUT, a ROS1 bag (kind ``bag``) or a ROS 2 bag directory (``db3``),
    through rosbags' own reader: (topic, log time, sha256) per message in the
    reader's order, the connections, the index's message count, and every
    message deserialized by ``AnyReader`` (a message's ``data`` field where it
    has one, else the message)."""
    from rosbags.highlevel import AnyReader

    if kind == "bag":
        from rosbags.rosbag1 import Reader
    else:
        from rosbags.rosbag2 import Reader
    out = pathlib.Path(out)
    with Reader(out) as reader:
        rows = [(c.topic, t, hashlib.sha256(d).hexdigest()) for c, t, d in reader.messages()]
        conns = list(reader.connections)
        count = reader.message_count
    with AnyReader([out]) as reader:
        decoded = [getattr(m, "data", m) for m in (reader.deserialize(d, c.msgtype) for c, _, d in reader.messages())]
    return rows, conns, count, decoded


def check_rosbags_read(checks, label, out, kind, expected, whose):
    """What every suite checks of a bag logsql wrote: rosbags opens OUT and
    reads the messages of ``expected`` ((topic, log time, sha256), as
    ``whose`` read them), in log-time order, with their number in its index.
    Returns (connections, decoded messages), or None when rosbags cannot open it."""
    try:
        rows, conns, count, decoded = rosbags_view(out, kind)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        checks.check(f"{label}: rosbags opens the output", lambda e=e: f"{type(e).__name__}: {e}")
        return None
    checks.check(
        f"{label}: rosbags reads {whose} {len(expected)} messages",
        lambda: diff_multisets(expected, rows) or (None if expected else "no messages"),
    )
    times = [t for _, t, _ in rows]
    checks.check(f"{label}: in log-time order", lambda: None if times == sorted(times) else "not sorted")
    checks.check(
        f"{label}: its index states {len(expected)} messages",
        lambda: None if count == len(expected) else f"{count}",
    )
    return conns, decoded
