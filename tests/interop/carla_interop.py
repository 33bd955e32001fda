"""CARLA recorder files: the logsql CLI against an independent reading in
Python and against the expected query texts of the shared fixtures.

There is no official offline reader (the PyPI `carla` client only sends RPCs to
a running server), so the oracle is a plain `struct` walk over the packets
written from the format description (../shared/specs/carla.md), plus the
`expected/*.info*.txt` files (CARLA's `show_recorder_file_info` wording).

    python tests/interop/carla_interop.py --logsql target/debug/logsql [--fixtures DIR]

Checks per fixture: every message (topic, log_time, message_type, encoding,
length, sha256 of the packet body) as a multiset, `frame`/`elapsed` of every
FrameStart, the `positions` table row count, and `logsql info [--all]` byte
for byte against expected/.
"""

import argparse
import hashlib
import json
import math
import os
import struct
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Checks, Logsql, as_int, diff_multisets  # noqa: E402

NAMES = {
    0: ("frame_start", "FrameStart"), 1: ("frame_end", "FrameEnd"), 2: ("event_add", "EventAdd"),
    3: ("event_del", "EventDel"), 4: ("event_parent", "EventParent"), 5: ("collision", "Collision"),
    6: ("position", "Position"), 7: ("traffic_light", "State"), 8: ("vehicle_animation", "AnimVehicle"),
    9: ("walker_animation", "AnimWalker"), 10: ("vehicle_light", "VehicleLight"),
    11: ("scene_light", "SceneLight"), 12: ("kinematics", "Kinematics"), 13: ("bounding_box", "BoundingBox"),
    14: ("platform_time", "PlatformTime"), 15: ("physics_control", "PhysicsControl"),
    16: ("traffic_light_time", "TrafficLightTime"), 17: ("trigger_volume", "TriggerVolume"),
    18: ("frame_counter", "FrameCounter"), 19: ("bones", "WalkerBones"), 20: ("visual_time", "VisualTime"),
    21: ("wheels", "AnimVehicleWheels"), 22: ("biker", "AnimBiker"), 23: ("door", "VehicleDoor"),
    24: ("weather", "Weather"),
}
UE4DEV = {21: NAMES[23], 22: NAMES[21], 23: NAMES[22]}


class LenientLogsql(Logsql):
    """Reads damaged files too (`--on-error warn`): a truncated recording's
    readable packets are compared like any other file's."""

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
            if line.strip():
                value = json.loads(line)
                rows.extend(value if isinstance(value, list) else [value])
        return rows


def read_string(b, p):
    (n,) = struct.unpack_from("<H", b, p)
    return b[p + 2 : p + 2 + n], p + 2 + n


def walk(path):
    """(date, messages, frames, positions) from a plain packet walk."""
    b = open(path, "rb").read()
    p = 2
    magic, p = read_string(b, p)
    if magic != b"CARLA_RECORDER":
        return None
    (date,) = struct.unpack_from("<q", b, p)
    _, p = read_string(b, p + 8)
    packets = []
    while p + 5 <= len(b):
        pid, size = struct.unpack_from("<BI", b, p)
        if p + 5 + size > len(b):
            break
        packets.append((pid, b[p + 5 : p + 5 + size]))
        p += 5 + size
    # ids 21..23: the packet right after Collision in the first frame is the door.
    first = []
    for pid, _ in packets[1:]:
        if pid in (0, 1):
            break
        first.append(pid)
    ue4dev = 5 in first and first.index(5) + 1 < len(first) and first[first.index(5) + 1] == 21
    msgs, frames, positions = [], [], 0
    elapsed = 0.0
    for pid, body in packets:
        if pid == 0:
            fid, _, elapsed = struct.unpack_from("<Qdd", body)
            frames.append((fid, elapsed))
        if pid == 6:
            positions += struct.unpack_from("<H", body)[0]
        topic, name = (UE4DEV.get(pid) if ue4dev else None) or NAMES.get(pid, (f"unknown_{pid}", None))
        log_time = date * 1_000_000_000 + int(math.floor(elapsed * 1e9 + 0.5))
        msgs.append(
            (topic, log_time, None, None, f"carla.{name}" if name else None, "carla", len(body),
             hashlib.sha256(body).hexdigest())
        )
    return date, msgs, frames, positions


def walk_end(path):
    """Offset after the last whole packet."""
    b = open(path, "rb").read()
    p = 2
    _, p = read_string(b, p)
    _, p = read_string(b, p + 8)
    while p + 5 <= len(b):
        _, size = struct.unpack_from("<BI", b, p)
        if p + 5 + size > len(b):
            break
        p += 5 + size
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    ap.add_argument("--fixtures")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    fixtures = args.fixtures or os.path.join(
        os.environ.get("LOGSQL_FIXTURES", os.path.join(root, "..", "shared", "fixtures")), "carla"
    )
    logsql = LenientLogsql(args.logsql)
    checks = Checks()
    if not os.path.isdir(fixtures):
        print(f"SKIPPED: {fixtures} not found")
        print("0 passed, 0 failed")
        return 0
    for name in sorted(os.listdir(fixtures)):
        if not name.endswith(".log"):
            continue
        path = os.path.join(fixtures, name)
        walked = walk(path)
        if walked is None or not walked[1]:
            continue
        _, msgs, frames, positions = walked

        def messages(path=path, msgs=msgs):
            rows = logsql.query(
                "SELECT topic, CAST(log_time AS BIGINT) AS log_time, CAST(publish_time AS BIGINT) AS publish_time, "
                "sequence, message_type, message_encoding, length(data) AS len, encode(sha256(data), 'hex') AS sha "
                f"FROM '{path}'"
            )
            got = [
                (r["topic"], as_int(r["log_time"]), as_int(r.get("publish_time")), as_int(r.get("sequence")),
                 r.get("message_type"), r["message_encoding"], as_int(r["len"]), r["sha"])
                for r in rows
            ]
            return diff_multisets(Counter(msgs), Counter(got))

        def frame_columns(path=path, frames=frames):
            rows = logsql.query(f"SELECT frame, elapsed FROM '{path}' WHERE topic = 'frame_start' ORDER BY frame")
            got = [(as_int(r["frame"]), float(r["elapsed"])) for r in rows]
            return None if got == frames else f"frame/elapsed differ: {got[:3]} vs {frames[:3]}"

        def position_rows(path=path, positions=positions):
            rows = logsql.query(f"SELECT count(*) AS n FROM positions('{path}')")
            n = as_int(rows[0]["n"])
            return None if n == positions else f"positions: {n} rows, walk says {positions}"

        def damage(path=path, truncated=os.path.getsize(path) != walk_end(path)):
            proc = subprocess.run([args.logsql, f"SELECT count(*) FROM '{path}'"], capture_output=True, text=True)
            if not truncated:
                return None if proc.returncode == 0 else proc.stderr.strip()
            # An unfinished recording: a warning by default, an error when strict.
            if proc.returncode != 0 or "unfinished carla file" not in proc.stderr:
                return f"expected a warning for the cut recording, got {proc.returncode}: {proc.stderr.strip()}"
            strict = subprocess.run([args.logsql, "--on-error", "error", f"SELECT count(*) FROM '{path}'"],
                                    capture_output=True, text=True)
            ok = strict.returncode != 0 and "truncated carla file" in strict.stderr
            return None if ok else f"expected a truncation error, got {strict.returncode}: {strict.stderr.strip()}"

        checks.check(f"{name}: messages", messages)
        checks.check(f"{name}: damage", damage)
        checks.check(f"{name}: frame/elapsed", frame_columns)
        checks.check(f"{name}: positions", position_rows)

    expected = os.path.join(fixtures, "expected")
    for e in sorted(os.listdir(expected)):
        if ".info" not in e:
            continue
        base, kind = e.split(".info", 1)
        log = os.path.join(fixtures, base + ".log")
        cmd = [args.logsql, "info"] + (["--all"] if kind.startswith("_all") else []) + [log]

        def info(cmd=cmd, e=e):
            want = open(os.path.join(expected, e), encoding="utf-8").read()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if want.startswith("File is not a CARLA recorder"):
                # logsql refuses the file at detection, with a clear error.
                return None if proc.returncode != 0 and "not a recognised log file" in proc.stderr else proc.stderr
            if proc.stdout == want:
                return None
            got = proc.stdout.splitlines()
            for i, (a, b) in enumerate(zip(got, want.splitlines())):
                if a != b:
                    return f"line {i + 1}: {a!r} != {b!r}"
            return f"lengths differ ({len(got)} vs {len(want.splitlines())} lines); stderr {proc.stderr.strip()[:200]}"

        checks.check(f"info {e}", info)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
