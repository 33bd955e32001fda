"""A fleet of small recordings for the catalog benchmark (benches/catalog_compare.sh).

    python benches/support/fleet.py OUT_DIR N

writes N recordings under OUT_DIR in hive directories robot=rR/day=DDDD/, R in 0..9
and DDDD the recording's day, each recording one minute long and starting one hour
after the one before (recording i starts at 2026-01-01T00:00:00Z + i hours), so a
one-hour window holds exactly one. Every recording has /imu (50 Hz), /odom (10 Hz)
and /status (1 Hz) as JSON messages, written by the official writers: every 20th
recording a ROS1 bag (rosbags' rosbag1 writer), the one after it a ROS 2 .db3 bag
directory (rosbags' rosbag2 writer), the others MCAP (the mcap package's writer,
zstd chunks, with Foxglove device metadata naming the robot). A file OUT_DIR/.done
marks a complete fleet; an existing one is left as it is.
"""

import json
import os
import sys

from mcap.writer import Writer as McapWriter

START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
HOUR_NS = 3_600_000_000_000
SECONDS = 60
TOPICS = [("/imu", 50), ("/odom", 10), ("/status", 1)]


def messages(i):
    """(topic, log time, payload) of recording i, in time order."""
    start = START_NS + i * HOUR_NS
    out = []
    for topic, hz in TOPICS:
        step = 1_000_000_000 // hz
        for k in range(SECONDS * hz):
            t = start + k * step
            body = {"seq": k, "value": (i * 7919 + k * 104729) % 1000 / 10.0}
            out.append((topic, t, json.dumps(body).encode()))
    out.sort(key=lambda m: m[1])
    return out


def write_mcap(path, i, robot):
    with open(path, "wb") as f:
        w = McapWriter(f)
        w.start(profile="", library="logsql benches/support/fleet.py")
        schema = w.register_schema(name="Sample", encoding="jsonschema", data=b'{"type":"object"}')
        ids = {t: w.register_channel(topic=t, message_encoding="json", schema_id=schema) for t, _ in TOPICS}
        w.add_metadata("foxglove", {"deviceName": robot})
        w.add_metadata("run", {"site": "lab" if i % 3 else "field", "index": str(i)})
        for topic, t, data in messages(i):
            w.add_message(channel_id=ids[topic], log_time=t, publish_time=t, data=data)
        w.finish()


def ros_msgs(i):
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    string = store.types["std_msgs/msg/String"]
    return store, string


def write_bag(path, i):
    from rosbags.rosbag1 import Writer

    store, string = ros_msgs(i)
    with Writer(path) as w:
        conns = {t: w.add_connection(t, string.__msgtype__, typestore=store) for t, _ in TOPICS}
        for topic, t, data in messages(i):
            raw = store.serialize_ros1(string(data=data.decode()), string.__msgtype__)
            w.write(conns[topic], t, raw)


def write_db3(path, i):
    from rosbags.rosbag2 import Writer

    store, string = ros_msgs(i)
    with Writer(path, version=8) as w:
        conns = {t: w.add_connection(t, string.__msgtype__, typestore=store) for t, _ in TOPICS}
        for topic, t, data in messages(i):
            raw = store.serialize_cdr(string(data=data.decode()), string.__msgtype__)
            w.write(conns[topic], t, raw)


def main_args(out, n):
    """Writes the fleet of `n` recordings under `out` (see the module documentation)."""
    if os.path.exists(os.path.join(out, ".done")):
        return
    for i in range(n):
        robot = f"r{i % 10}"
        day = f"{i // 24:04d}"
        d = os.path.join(out, f"robot={robot}", f"day={day}")
        os.makedirs(d, exist_ok=True)
        if i % 20 == 0:
            path = os.path.join(d, f"run{i}.bag")
            if not os.path.exists(path):
                write_bag(path, i)
        elif i % 20 == 1:
            path = os.path.join(d, f"run{i}")
            if not os.path.exists(path):
                write_db3(path, i)
        else:
            path = os.path.join(d, f"run{i}.mcap")
            if not os.path.exists(path):
                write_mcap(path, i, robot)
        if i % 500 == 0:
            print(f"{i}/{n}", file=sys.stderr, flush=True)
    open(os.path.join(out, ".done"), "w").close()


if __name__ == "__main__":
    main_args(sys.argv[1], int(sys.argv[2]))
