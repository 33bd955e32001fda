"""ROS bags written by ``COPY ... TO`` from the logsql CLI, read back by rosbags.

Sources are MCAP files other tools wrote: one the official Python ``mcap``
writer records here (ROS1 ``std_msgs/String`` for the bag, ROS 2 CDR for the
ROS 2 bag, several topics, out of time order), and, with ``../shared``
present, the MCAP project's ROS1 sample (``mcap/samples/compressed.mcap``)
and rosbag2's own MCAP recording (``ros2/mcap/talker/talker.mcap``). For each:

- ``COPY (SELECT * FROM 'x.mcap') TO 'y.bag'`` and
  ``COPY (SELECT * FROM 'x.mcap') TO 'dir/' STORED AS DB3`` succeed and state
  the rows written;
- ``rosbags.rosbag1.Reader`` / ``rosbags.rosbag2.Reader`` open the output
  through its index or ``metadata.yaml`` and read the messages the official
  ``mcap`` reader reads from the source, message for message (topic, log
  time, payload hash), with the index's count;
- each connection has the source channel's type, a ROS1 connection the
  md5sum rosbags computes from its definition (stated or not in the source),
  a ROS 2 topic its count;
- ``rosbags.highlevel.AnyReader`` deserializes every message with the
  definitions the output carries (the strings read back are the ones written).

Usage: copy_bag_interop.py --logsql PATH/TO/logsql [--keep DIR]
"""

import argparse
import hashlib
import os
import pathlib
import struct
import sys
import tempfile

from mcap.reader import make_reader
from mcap.writer import Writer

from common import Checks, Logsql, check_rosbags_read

FIXTURES = pathlib.Path(
    os.environ.get("LOGSQL_FIXTURES", pathlib.Path(__file__).resolve().parents[3] / "shared" / "fixtures")
)

STRING_ROS1 = "string data\n"
STRING_ROS2 = "string data\n"


def ros1_string(text):
    raw = text.encode()
    return struct.pack("<I", len(raw)) + raw


def cdr_string(text):
    raw = text.encode() + b"\0"
    body = b"\x00\x01\x00\x00" + struct.pack("<I", len(raw)) + raw
    return body + b"\0" * (-len(body) % 4)


def write_source(path, encoding):
    """An MCAP of two String topics from the official writer, times interleaved and out of order."""
    with open(path, "wb") as f:
        w = Writer(f, chunk_size=2048)
        w.start(profile="ros1" if encoding == "ros1" else "ros2", library="copy-bag-interop")
        if encoding == "ros1":
            sid = w.register_schema(name="std_msgs/String", encoding="ros1msg", data=STRING_ROS1.encode())
            message_encoding, serialize = "ros1", ros1_string
        else:
            sid = w.register_schema(name="std_msgs/msg/String", encoding="ros2msg", data=STRING_ROS2.encode())
            message_encoding, serialize = "cdr", cdr_string
        chatter = w.register_channel("/chatter", message_encoding, sid)
        status = w.register_channel("/status", message_encoding, sid)
        order = list(range(300))
        order = order[::2] + order[1::2]  # the odd times come after all the even ones
        for i in order:
            channel = chatter if i % 3 else status
            t = 1_700_000_000_000_000_000 + i * 10_000_000
            w.add_message(channel, log_time=t, publish_time=t, data=serialize(f"hello {i}"), sequence=i)
        w.finish()


def official_messages(path):
    """(topic, log time, sha256) of every message, by the official mcap reader."""
    with open(path, "rb") as f:
        return [
            (channel.topic, message.log_time, hashlib.sha256(message.data).hexdigest())
            for _, channel, message in make_reader(f).iter_messages(log_time_order=False)
        ]


def ros_type(name):
    """rosbags' spelling of a type name: ``pkg/msg/Type`` (ROS1's ``pkg/Type`` too)."""
    parts = name.split("/")
    return f"{parts[0]}/msg/{parts[1]}" if len(parts) == 2 else name


def official_types(path):
    with open(path, "rb") as f:
        return sorted({(c.topic, ros_type(s.name)) for s, c, _ in make_reader(f).iter_messages(log_time_order=False)})


def ros1_md5(conn):
    """The md5sum rosbags computes from the connection's own definition."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.EMPTY)
    store.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
    return store.generate_msgdef(conn.msgtype, ros_version=1)[1]


def check_copy(checks, ls, name, src, out, kind, strings=None):
    target = f"{out}/" if kind == "db3" else out
    tail = " STORED AS DB3" if kind == "db3" else ""
    try:
        rows = ls.query(f"COPY (SELECT * FROM '{src}') TO '{target}'{tail}")
        written = int(rows[0]["count"])
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        checks.check(f"{name} -> {kind}: COPY succeeds", lambda e=e: f"{e}")
        return
    expected = official_messages(src)
    checks.check(
        f"{name} -> {kind}: COPY states {len(expected)} rows",
        lambda: None if written == len(expected) else f"{written}",
    )
    read = check_rosbags_read(checks, f"{name} -> {kind}", out, kind, expected, "the official reader's")
    if read is None:
        return
    conns, decoded = read
    types = official_types(src)
    checks.check(
        f"{name} -> {kind}: connections carry the source's types {types}",
        lambda: (lambda have: None if have == types else f"{have}")(sorted({(c.topic, c.msgtype) for c in conns})),
    )
    if kind == "bag":
        checks.check(
            f"{name} -> bag: every md5sum is the one rosbags computes from the definition",
            lambda: "; ".join(f"{c.topic}: {c.digest} vs {ros1_md5(c)}" for c in conns if c.digest != ros1_md5(c))
            or None,
        )
    else:
        per_topic = {}
        for topic, _, _ in expected:
            per_topic[topic] = per_topic.get(topic, 0) + 1
        checks.check(
            f"{name} -> db3: every topic's count",
            lambda: "; ".join(f"{c.topic}: {c.msgcount}" for c in conns if c.msgcount != per_topic.get(c.topic))
            or None,
        )
    checks.check(
        f"{name} -> {kind}: rosbags deserializes all {len(expected)} messages",
        lambda: None if len(decoded) == len(expected) else f"{len(decoded)}",
    )
    if strings is not None:
        checks.check(
            f"{name} -> {kind}: the strings read back are the ones written",
            lambda: None if sorted(decoded) == sorted(strings) else f"{sorted(decoded)[:3]}",
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    ls = Logsql(args.logsql)
    checks = Checks()
    tmp = tempfile.TemporaryDirectory()
    work = pathlib.Path(args.keep or tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    strings = [f"hello {i}" for i in range(300)]

    ros1 = work / "official-ros1.mcap"
    write_source(ros1, "ros1")
    check_copy(checks, ls, "official mcap writer, ROS1", ros1, work / "official-ros1.bag", "bag", strings)
    ros2 = work / "official-ros2.mcap"
    write_source(ros2, "ros2")
    check_copy(checks, ls, "official mcap writer, ROS 2", ros2, work / "official-ros2", "db3", strings)

    for relative, kind in [("mcap/samples/compressed.mcap", "bag"), ("ros2/mcap/talker/talker.mcap", "db3")]:
        src = FIXTURES / relative
        if not src.is_file():
            if os.environ.get("LOGSQL_REQUIRE_FIXTURES") == "1":
                checks.check(f"fixture {relative}", lambda src=src: f"{src} is missing (LOGSQL_REQUIRE_FIXTURES=1)")
            else:
                print(f"skip {relative}: {src} not found (set LOGSQL_FIXTURES or check out ../shared)")
            continue
        out = work / (pathlib.Path(relative).stem + (".bag" if kind == "bag" else "-db3"))
        check_copy(checks, ls, relative, src, out, kind)

    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
