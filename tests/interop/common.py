"""Shared by the interop suites: the logsql CLI wrapper, the message query and
its columns, and the pass/fail bookkeeping."""

import json
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
