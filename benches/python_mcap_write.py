"""The Python side of benches/mcap_write_compare.sh: the same MCAP writing jobs as
logsql's `export`, done with the official libraries (`rosbags` to read ROS1 bags,
`mcap` to read and write MCAP, zstd chunks of 1 MiB, the writers' defaults).

    python python_mcap_write.py bag2mcap IN.bag OUT.mcap
        every message of a ROS1 bag into a zstd MCAP (ros1 profile: schema
        `ros1msg` with the connection's full definition, message encoding `ros1`,
        callerid/latching as channel metadata); prints the messages written
    python python_mcap_write.py window IN.mcap OUT.mcap TOPIC,TOPIC START END
        the messages of the topics with START <= log_time < END, in log-time
        order, into a new zstd MCAP with their schemas and channels as they were;
        prints the messages written
    python python_mcap_write.py bounds IN.mcap PCT
        START END of a PCT% window centred in the file (statistics record)
    python python_mcap_write.py read IN.mcap
        "count payload_bytes topics" of a file (the check of logsql's output)
    python python_mcap_write.py payloads IN.bag OUT.bin
        every payload of a bag concatenated (the zstd baseline's input)
"""

import os
import sys

from mcap.reader import make_reader
from mcap.writer import CompressionType, Writer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from mcap_clip import copy_messages  # noqa: E402


def bag2mcap(src, dst):
    from rosbags.rosbag1 import Reader

    n = 0
    with Reader(src) as r, open(dst, "wb") as f:
        w = Writer(f, compression=CompressionType.ZSTD)
        w.start(profile="ros1", library="python mcap + rosbags")
        schemas, channels = {}, {}
        for c in r.connections:
            key = (c.msgtype, c.msgdef.data)
            if key not in schemas:
                schemas[key] = w.register_schema(
                    name=c.msgtype, encoding="ros1msg", data=c.msgdef.data.encode()
                )
            meta = {"md5sum": c.digest}
            if c.ext.callerid is not None:
                meta["callerid"] = c.ext.callerid
            if c.ext.latching is not None:
                meta["latching"] = str(c.ext.latching)
            channels[c.id] = w.register_channel(
                topic=c.topic, message_encoding="ros1", schema_id=schemas[key], metadata=meta
            )
        for c, t, raw in r.messages():
            w.add_message(channels[c.id], log_time=t, data=raw, publish_time=t)
            n += 1
        w.finish()
    print(n)


def window(src, dst, topics, start, end):
    with open(src, "rb") as f, open(dst, "wb") as out:
        reader = make_reader(f)
        header = reader.get_header()
        w = Writer(out, compression=CompressionType.ZSTD)
        w.start(profile=header.profile, library="python mcap")
        n = copy_messages(
            w,
            reader.iter_messages(
                topics=topics.split(","), starting_at=start, ending_before=end, log_time_order=True
            ),
        )
        w.finish()
    print(n)


def bounds(src, pct):
    with open(src, "rb") as f:
        s = make_reader(f).get_summary().statistics
    lo, hi = s.message_start_time, s.message_end_time
    span = hi - lo
    half = span * pct // 200
    print(lo + span // 2 - half, lo + span // 2 + half)


def read(src):
    n = b = 0
    topics = set()
    with open(src, "rb") as f:
        for _schema, channel, message in make_reader(f).iter_messages(log_time_order=False):
            n += 1
            b += len(message.data)
            topics.add(channel.topic)
    print(n, b, ",".join(sorted(topics)))


def payloads(src, dst):
    from rosbags.rosbag1 import Reader

    with Reader(src) as r, open(dst, "wb") as out:
        for _c, _t, raw in r.messages():
            out.write(raw)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "bag2mcap":
        bag2mcap(*args)
    elif cmd == "window":
        window(args[0], args[1], args[2], int(args[3]), int(args[4]))
    elif cmd == "bounds":
        bounds(args[0], int(args[1]))
    elif cmd == "read":
        read(*args)
    elif cmd == "payloads":
        payloads(*args)
    else:
        sys.exit(f"unknown command {cmd}")
