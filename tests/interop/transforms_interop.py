#!/usr/bin/env python3
"""Interop test: coordinate frames. ``transforms()`` and ``tf_lookup()``
against an independent implementation: 4x4 matrices in NumPy, SciPy's
``Slerp`` for rotations, linear translation, tf2's rules (static links at
every time, a repeated stamp ignored, a leading ``/`` dropped, no
extrapolation).

Generated recordings, one transform tree written by the official writers in
five forms: a ROS1 bag and a ROS 2 bag (SQLite and MCAP storage) of
``tf2_msgs/TFMessage`` (``rosbags``), an MCAP of protobuf
``foxglove.FrameTransforms`` (``mcap-protobuf-support`` with
``foxglove-schemas-protobuf``) and an MCAP of JSON
``foxglove.FrameTransform`` (``mcap``). The tree: a chain of five dynamic
links ``map -> odom -> base_link -> arm1 -> arm2 -> arm3`` plus static links
(``arm3 -> tool``, ``base_link -> laser``, ``map -> landmark`` republished
with a new value) and an island (``island -> island_child``); stamps arrive
out of order, one repeats with another value, rotations turn by large and by
tiny angles. Lookups ask at stamps, between them, outside a link's data, in
both directions, through a common ancestor below the root, across the
island, for unknown frames and for a frame in itself.

Real recordings (the shared fixtures, and tests/public): ``rosbagjs-example.bag``
(ROS1 ``/tf`` and ``/tf_static``), ``compressed.mcap`` (ROS1 ``/tf`` in MCAP) and
the ros2-adapter TurtleBot3 bag (ROS 2 ``/tf``), read by ``rosbags`` and the
``mcap`` reader for the reference.

Checks: every transform ``transforms()`` gives equals what was written (or what
the official reader decodes); every lookup equals the reference within 1e-9
(position, and each entry of the rotation matrix), NULL exactly where the
reference has no answer; ``'strict'`` turns a missing link into an error that
names it.

Usage: transforms_interop.py --logsql PATH/TO/logsql [--keep DIR]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from common import Checks, Logsql

START = 1_700_000_000_000_000_000
SECOND = 1_000_000_000
REPO = Path(__file__).resolve().parents[2]

TFMESSAGE_ROS1 = """geometry_msgs/TransformStamped[] transforms
================================================================================
MSG: geometry_msgs/TransformStamped
std_msgs/Header header
string child_frame_id
geometry_msgs/Transform transform
================================================================================
MSG: std_msgs/Header
uint32 seq
time stamp
string frame_id
================================================================================
MSG: geometry_msgs/Transform
geometry_msgs/Vector3 translation
geometry_msgs/Quaternion rotation
================================================================================
MSG: geometry_msgs/Vector3
float64 x
float64 y
float64 z
================================================================================
MSG: geometry_msgs/Quaternion
float64 x
float64 y
float64 z
float64 w
"""

FRAME_TRANSFORM_JSON_SCHEMA = {
    "title": "foxglove.FrameTransform",
    "type": "object",
    "properties": {
        "timestamp": {
            "type": "object",
            "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
        },
        "parent_frame_id": {"type": "string"},
        "child_frame_id": {"type": "string"},
        "translation": {
            "type": "object",
            "properties": {k: {"type": "number"} for k in "xyz"},
        },
        "rotation": {
            "type": "object",
            "properties": {k: {"type": "number"} for k in "xyzw"},
        },
    },
}


# ---------------------------------------------------------------- the tree


def make_tree(seed):
    """Transforms as (log_time, topic, parent, child, stamp, t, q) in log order."""
    rng = np.random.default_rng(seed)
    chain = ["map", "odom", "base_link", "arm1", "arm2", "arm3"]
    rows = []
    # Statics first on /tf_static; the landmark is republished later.
    statics = [("arm3", "tool"), ("base_link", "laser"), ("map", "landmark"), ("island", "island_child")]
    log = START
    for parent, child in statics:
        rows.append((log, "/tf_static", parent, child, START, rng.uniform(-1, 1, 3), Rotation.random(random_state=rng).as_quat()))
        log += 1000
    # Dynamic links: 40 stamps each over 10 s, rotations a random walk with
    # a few big turns and a few tiny ones.
    pending = []
    for parent, child in zip(chain, chain[1:]):
        stamps = sorted(set(int(s) for s in rng.integers(START, START + 10 * SECOND, 40)))
        rot = Rotation.random(random_state=rng)
        for k, stamp in enumerate(stamps):
            if k % 9 == 4:
                step = Rotation.from_rotvec(rng.normal(size=3) * 1.2)  # a big turn
            elif k % 7 == 3:
                step = Rotation.from_rotvec(rng.normal(size=3) * 1e-6)  # a tiny one
            else:
                step = Rotation.from_rotvec(rng.normal(size=3) * 0.2)
            rot = step * rot
            q = rot.as_quat()
            if k % 2:
                q = -q  # the same rotation, the other sign
            name = "/" + parent if parent == "map" else parent  # tf2 drops the '/'
            pending.append((stamp, name, child, rng.uniform(-3, 3, 3), q))
    # Arrival: by stamp, but shuffled within windows (out of order).
    pending.sort(key=lambda r: r[0])
    for i in range(0, len(pending), 6):
        window = pending[i : i + 6]
        rng.shuffle(window)
        pending[i : i + 6] = window
    for stamp, parent, child, t, q in pending:
        rows.append((log, "/tf", parent, child, stamp, t, q))
        log += SECOND // 100
    # A repeated stamp of map -> odom with another value: ignored.
    first = next(r for r in rows if r[3] == "odom")
    rows.append((log, "/tf", first[2], "odom", first[4], first[5] + 10.0, first[6]))
    log += 1000
    rows.append((log, "/tf_static", "map", "landmark", START, rng.uniform(-1, 1, 3), Rotation.random(random_state=rng).as_quat()))
    return rows


# ---------------------------------------------------------------- the reference


def strip(name):
    return name[1:] if name.startswith("/") else name


class Reference:
    """tf2's lookup over 4x4 matrices, with SciPy's Slerp."""

    def __init__(self, transforms):
        """transforms: (parent, child, stamp, t, q, is_static) in log order."""
        self.static = {}
        self.dynamic = {}
        for parent, child, stamp, t, q, is_static in transforms:
            parent, child = strip(parent), strip(child)
            if not parent or not child or parent == child:
                continue
            q = np.asarray(q, dtype=float)
            if not np.all(np.isfinite(q)) or np.linalg.norm(q) == 0:
                continue
            if is_static:
                self.static[child] = (parent, np.asarray(t, float), q / np.linalg.norm(q))
            else:
                samples = self.dynamic.setdefault(child, {})
                samples.setdefault(stamp, (parent, np.asarray(t, float), q / np.linalg.norm(q)))
        self.frames = set(self.static) | set(self.dynamic)
        for table in (self.static, self.dynamic):
            for child, v in table.items():
                parents = [v[0]] if table is self.static else [p for p, _, _ in v.values()]
                self.frames.update(parents)

    @staticmethod
    def matrix(t, q):
        m = np.eye(4)
        m[:3, :3] = Rotation.from_quat(q).as_matrix()
        m[:3, 3] = t
        return m

    def link(self, child, time):
        """(parent, matrix) at time, 'root', or None (no data then)."""
        if child in self.static:
            parent, t, q = self.static[child]
            return parent, self.matrix(t, q)
        if child not in self.dynamic:
            return "root"
        samples = self.dynamic[child]
        stamps = sorted(samples)
        if time in samples:
            parent, t, q = samples[time]
            return parent, self.matrix(t, q)
        if time < stamps[0] or time > stamps[-1]:
            return None
        i = int(np.searchsorted(stamps, time))
        (p0, t0, q0), (p1, t1, q1) = samples[stamps[i - 1]], samples[stamps[i]]
        if p0 != p1:
            return p0, self.matrix(t0, q0)
        r = (time - stamps[i - 1]) / (stamps[i] - stamps[i - 1])
        rot = Slerp([0.0, 1.0], Rotation.from_quat([q0, q1]))([r])[0]
        m = np.eye(4)
        m[:3, :3] = rot.as_matrix()
        m[:3, 3] = t0 + (t1 - t0) * r
        return p0, m

    def lookup(self, target, source, time):
        """tf2's walk: the source up to the target, the root or a link with
        no data at time; then the target up until it meets that chain."""
        target, source = strip(target), strip(source)
        if target not in self.frames or source not in self.frames:
            return None
        if target == source:
            return np.eye(4)
        chain = {source: np.eye(4)}
        frame, m = source, np.eye(4)
        for _ in range(len(self.frames) + 1):
            step = self.link(frame, time)
            if step is None or step == "root":
                break
            parent, pm = step
            m = pm @ m
            frame = parent
            if frame == target:
                return m
            chain[frame] = m
        frame, t = target, np.eye(4)
        for _ in range(len(self.frames) + 1):
            if frame in chain:
                return np.linalg.inv(t) @ chain[frame]
            step = self.link(frame, time)
            if step is None or step == "root":
                return None
            parent, pm = step
            t = pm @ t
            frame = parent
        return None


# ---------------------------------------------------------------- writers


def ros_message(typestore, rows):
    msg_types = typestore.types
    TFMessage = msg_types["tf2_msgs/msg/TFMessage"]
    TransformStamped = msg_types["geometry_msgs/msg/TransformStamped"]
    Header = msg_types["std_msgs/msg/Header"]
    Time = msg_types["builtin_interfaces/msg/Time"]
    Transform = msg_types["geometry_msgs/msg/Transform"]
    Vector3 = msg_types["geometry_msgs/msg/Vector3"]
    Quaternion = msg_types["geometry_msgs/msg/Quaternion"]
    out = []
    for parent, child, stamp, t, q in rows:
        kw = {"stamp": Time(sec=stamp // SECOND, nanosec=stamp % SECOND), "frame_id": parent}
        if "seq" in Header.__dataclass_fields__:
            kw["seq"] = 0
        out.append(
            TransformStamped(
                header=Header(**kw),
                child_frame_id=child,
                transform=Transform(
                    translation=Vector3(x=float(t[0]), y=float(t[1]), z=float(t[2])),
                    rotation=Quaternion(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3])),
                ),
            )
        )
    return TFMessage(transforms=out)


def groups(rows):
    """Messages: consecutive rows of one topic, at most three per message."""
    out = []
    for row in rows:
        if out and out[-1][1] == row[1] and len(out[-1][2]) < 3:
            out[-1][2].append(row)
        else:
            out.append((row[0], row[1], [row]))
    return out


def write_ros1(path, rows):
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore, get_types_from_msg

    ts = get_typestore(Stores.ROS1_NOETIC)
    ts.register(get_types_from_msg(TFMESSAGE_ROS1, "tf2_msgs/msg/TFMessage"))
    with Writer(path) as w:
        conns = {}
        for log, topic, batch in groups(rows):
            if topic not in conns:
                conns[topic] = w.add_connection(topic, "tf2_msgs/msg/TFMessage", typestore=ts)
            msg = ros_message(ts, [r[2:] for r in batch])
            w.write(conns[topic], log, ts.serialize_ros1(msg, "tf2_msgs/msg/TFMessage"))


def write_ros2(path, rows, storage):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=8, storage_plugin=plugin) as w:
        conns = {}
        for log, topic, batch in groups(rows):
            if topic not in conns:
                conns[topic] = w.add_connection(topic, "tf2_msgs/msg/TFMessage", typestore=ts)
            msg = ros_message(ts, [r[2:] for r in batch])
            w.write(conns[topic], log, ts.serialize_cdr(msg, "tf2_msgs/msg/TFMessage"))


def write_protobuf(path, rows):
    from foxglove_schemas_protobuf.FrameTransform_pb2 import FrameTransform
    from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
    from mcap_protobuf.writer import Writer

    with open(path, "wb") as f, Writer(f) as w:
        for log, topic, batch in groups(rows):
            msg = FrameTransforms()
            for _, _, parent, child, stamp, t, q in batch:
                ft = FrameTransform(parent_frame_id=parent, child_frame_id=child)
                ft.timestamp.FromNanoseconds(stamp)
                ft.translation.x, ft.translation.y, ft.translation.z = map(float, t)
                ft.rotation.x, ft.rotation.y, ft.rotation.z, ft.rotation.w = map(float, q)
                msg.transforms.append(ft)
            w.write_message(topic, msg, log_time=log, publish_time=log)


def write_json(path, rows):
    from mcap.writer import Writer

    with open(path, "wb") as f:
        w = Writer(f)
        w.start(profile="", library="transforms_interop")
        schema = w.register_schema(
            name="foxglove.FrameTransform",
            encoding="jsonschema",
            data=json.dumps(FRAME_TRANSFORM_JSON_SCHEMA).encode(),
        )
        channels = {}
        for log, topic, parent, child, stamp, t, q in rows:
            if topic not in channels:
                channels[topic] = w.register_channel(topic=topic, message_encoding="json", schema_id=schema)
            body = {
                "timestamp": {"sec": stamp // SECOND, "nsec": stamp % SECOND},
                "parent_frame_id": parent,
                "child_frame_id": child,
                "translation": dict(zip("xyz", map(float, t))),
                "rotation": dict(zip("xyzw", map(float, q))),
            }
            w.add_message(channels[topic], log_time=log, publish_time=log, data=json.dumps(body).encode())
        w.finish()


# ---------------------------------------------------------------- comparing


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def logsql_lookups(logsql, path, asks):
    values = ", ".join(f"({i}, {sql_str(t)}, {sql_str(s)}, {time})" for i, (t, s, time) in enumerate(asks))
    sql = (
        f"SELECT id, tf_lookup({sql_str(path)}, tgt, src, t) AS p "
        f"FROM (VALUES {values}) AS q(id, tgt, src, t) ORDER BY id"
    )
    return {row["id"]: row["p"] for row in logsql.query(sql)}


def compare_lookups(ref, got, asks):
    problems = []
    answered = 0
    for i, (target, source, time) in enumerate(asks):
        want = ref.lookup(target, source, time)
        have = got.get(i)
        if want is None or have is None:
            if (want is None) != (have is None):
                problems.append(f"{source} in {target} at {time}: reference {'NULL' if want is None else 'a pose'}, logsql {have}")
            continue
        answered += 1
        m = np.eye(4)
        m[:3, :3] = Rotation.from_quat([have["qx"], have["qy"], have["qz"], have["qw"]]).as_matrix()
        m[:3, 3] = [have["x"], have["y"], have["z"]]
        err = np.abs(m - want).max()
        if err > 1e-9:
            problems.append(f"{source} in {target} at {time}: off by {err:.3g}")
        q = np.array([have["qx"], have["qy"], have["qz"], have["qw"]])
        if abs(np.linalg.norm(q) - 1) > 1e-12:
            problems.append(f"{source} in {target} at {time}: |q| = {np.linalg.norm(q)}")
    return problems, answered


def asks_for(ref, rng, stamps, n):
    """Lookups: pairs of known frames (and a few unknown), at stamps, between,
    and outside."""
    frames = sorted(ref.frames)
    lo, hi = min(stamps), max(stamps)
    asks = []
    for k in range(n):
        target, source = rng.choice(frames), rng.choice(frames)
        if k % 25 == 0:
            source = "no_such_frame"
        r = k % 5
        if r == 0:
            time = rng.choice(stamps)
        elif r == 1:
            time = lo - rng.randint(1, SECOND) if k % 2 else hi + rng.randint(1, SECOND)
        else:
            time = rng.randint(lo, hi)
        asks.append((target, source, int(time)))
    return asks


def generated(checks, logsql, work):
    rows = make_tree(7)
    written = [(strip(p), strip(c), stamp, t, q, topic == "/tf_static") for _, topic, p, c, stamp, t, q in rows]
    ref = Reference([(p, c, s, t, q, st) for p, c, s, t, q, st in written])
    rng = random.Random(11)
    stamps = [s for _, topic, _, _, s, _, _ in rows if topic == "/tf"]
    chain = ["map", "odom", "base_link", "arm1", "arm2", "arm3", "tool"]
    asks = asks_for(ref, rng, stamps, 1500)
    # The five-link chain at every stamp of its middle link, both ways.
    mid = sorted({s for _, topic, _, c, s, _, _ in rows if c == "arm1"})
    asks += [("map", "tool", s) for s in mid] + [("tool", "map", s) for s in mid]
    asks += [("laser", "arm3", s) for s in mid[:10]] + [("island_child", "map", mid[3]), ("landmark", "island", mid[4])]
    forms = {
        "ros1.bag": lambda p: write_ros1(p, rows),
        "ros2_sqlite": lambda p: write_ros2(p, rows, "sqlite3"),
        "ros2_mcap": lambda p: write_ros2(p, rows, "mcap"),
        "protobuf.mcap": lambda p: write_protobuf(p, rows),
        "json.mcap": lambda p: write_json(p, rows),
    }
    for name, write in forms.items():
        path = work / name
        write(path)
        source = str(path)

        def table(source=source):
            got = logsql.query(
                "SELECT parent_frame, child_frame, CAST(stamp AS BIGINT) AS stamp, translation, rotation, is_static, topic "
                f"FROM transforms({sql_str(source)})"
            )
            want = sorted((r[2], r[3], r[4], r[1]) for r in rows)
            have = sorted((g["parent_frame"], g["child_frame"], int(g["stamp"]), g["topic"]) for g in got)
            if want != have:
                return f"{len(have)} transforms, {len(want)} written; first differences {[w for w in want if w not in have][:3]}"
            values = {(g["parent_frame"], g["child_frame"], int(g["stamp"]), g["topic"], g["translation"]["x"]) for g in got}
            for r in rows:
                if (r[2], r[3], r[4], r[1], float(r[5][0])) not in values:
                    return f"translation of {r[2:5]} differs"
            if any(g["is_static"] != (g["topic"] == "/tf_static") for g in got):
                return "is_static is not the topic's"
            return None

        checks.check(f"generated {name}: transforms() holds every transform written", table)

        def lookups(source=source):
            got = logsql_lookups(logsql, source, asks)
            problems, answered = compare_lookups(ref, got, asks)
            if answered < 500:
                problems.append(f"only {answered} lookups had an answer")
            return "; ".join(problems[:5]) or None

        checks.check(f"generated {name}: {len(asks)} lookups equal the reference within 1e-9", lookups)

    def strict():
        path = str(work / "ros1.bag")
        proc = subprocess.run(
            [logsql.binary, f"SELECT tf_lookup({sql_str(path)}, 'map', 'tool', {START - SECOND}, 'strict')"],
            capture_output=True,
            text=True,
        )
        if proc.returncode == 0:
            return "a lookup before every stamp did not fail"
        if "outside" not in proc.stderr or '"arm2" -> "arm3"' not in proc.stderr:
            return f"the error does not name the link: {proc.stderr.strip()}"
        return None

    checks.check("strict: a time outside a link's data is an error naming the link", strict)


# ---------------------------------------------------------------- real files


def fixtures_dir():
    env = os.environ.get("LOGSQL_FIXTURES")
    return Path(env) if env else REPO.parent / "shared" / "fixtures"


def read_rosbag(path):
    """(parent, child, stamp, t, q, is_static) via rosbags' own reader."""
    from rosbags.highlevel import AnyReader

    out = []
    from rosbags.typesys import Stores, get_typestore

    with AnyReader([Path(path)], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as reader:
        conns = [c for c in reader.connections if c.topic in ("/tf", "/tf_static")]
        for conn, _, raw in reader.messages(connections=conns):
            msg = reader.deserialize(raw, conn.msgtype)
            for tr in msg.transforms:
                st = tr.header.stamp
                ns = st.sec * SECOND + (st.nanosec if hasattr(st, "nanosec") else st.nsec)
                t, q = tr.transform.translation, tr.transform.rotation
                out.append((tr.header.frame_id, tr.child_frame_id, ns, [t.x, t.y, t.z], [q.x, q.y, q.z, q.w], conn.topic == "/tf_static"))
    return out


def read_mcap_ros1(path):
    from mcap.reader import make_reader
    from mcap_ros1.decoder import DecoderFactory

    out = []
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, _, msg in reader.iter_decoded_messages(topics=["/tf", "/tf_static"]):
            for tr in msg.transforms:
                st = tr.header.stamp
                t, q = tr.transform.translation, tr.transform.rotation
                out.append((tr.header.frame_id, tr.child_frame_id, st.to_nsec(), [t.x, t.y, t.z], [q.x, q.y, q.z, q.w], channel.topic == "/tf_static"))
    return out


def real(checks, logsql):
    fixtures = fixtures_dir()
    files = [
        ("rosbagjs-example.bag", fixtures / "rosbag" / "rosbagjs-example.bag", read_rosbag),
        ("compressed.mcap", fixtures / "mcap" / "samples" / "compressed.mcap", read_mcap_ros1),
        ("ros2-adapter turtlebot3", REPO / "tests" / "public" / "ros2-adapter-turtlebot3-tf", read_rosbag),
    ]
    for name, path, read in files:
        if not path.exists():
            if os.environ.get("LOGSQL_REQUIRE_FIXTURES") == "1":
                checks.check(f"real {name}", lambda path=path: f"{path} is missing")
            else:
                print(f"skip real {name}: {path} is absent")
            continue
        official = read(str(path))
        ref = Reference(official)

        def table(path=path, official=official):
            got = logsql.query(
                f"SELECT parent_frame, child_frame, CAST(stamp AS BIGINT) AS stamp, translation, rotation, is_static FROM transforms({sql_str(str(path))})"
            )
            want = sorted((p, c, s, round(t[0], 12), round(q[3], 12), st) for p, c, s, t, q, st in official)
            have = sorted(
                (g["parent_frame"], g["child_frame"], int(g["stamp"]), round(g["translation"]["x"], 12), round(g["rotation"]["w"], 12), g["is_static"])
                for g in got
            )
            return None if want == have else f"{len(have)} transforms, the official reader {len(want)}"

        checks.check(f"real {name}: transforms() equals the official reader ({len(official)} transforms)", table)
        stamps = [s for _, _, s, _, _, st in official if not st]
        asks = asks_for(ref, random.Random(5), stamps, 600)
        # A file inside a directory: look up by the file logsql names.
        target = str(path)
        if path.is_dir():
            target = logsql.query(f"SELECT DISTINCT file FROM transforms({sql_str(str(path))})")[0]["file"]

        def lookups(target=target, ref=ref, asks=asks):
            got = logsql_lookups(logsql, target, asks)
            problems, answered = compare_lookups(ref, got, asks)
            if answered < 100:
                problems.append(f"only {answered} lookups had an answer")
            return "; ".join(problems[:5]) or None

        checks.check(f"real {name}: {len(asks)} lookups equal the reference within 1e-9", lookups)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    logsql = Logsql(args.logsql)
    checks = Checks()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="transforms_interop"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        generated(checks, logsql, work)
        real(checks, logsql)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
