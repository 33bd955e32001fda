"""Robot recordings written by the official writers, and read back by the
official readers, for the LeRobot interop suite.

Three formats, each holding what a robot-learning bridge reads:

- ``mcap``: an MCAP of ``mcap`` 's own writer, ROS 2 CDR ``sensor_msgs/msg/
  JointState`` (schema text from ``rosbags``, bytes from its CDR serializer)
  and ``foxglove.CompressedImage`` protobuf messages (descriptors from
  ``foxglove-schemas-protobuf``);
- ``bag``: a ROS1 bag of ``rosbags.rosbag1.Writer`` with ``sensor_msgs/
  JointState`` and ``sensor_msgs/CompressedImage``;
- ``db3``: ROS 2 bags (SQLite) of ``rosbags.rosbag2.Writer``, one directory per
  recording, with the ROS 2 types.

Mixed rates as a robot records them: a 30 Hz JPEG camera, joint states at
200 Hz in one recording and 500 Hz in the other, commands at 10 Hz. Each
format gets two recordings (two episodes), the second starting 100 s later.

``write(fmt, runs)`` writes them below ``runs``; ``read(fmt, runs)`` reads
them back with the official readers into ``[(name, topics, first, last)]``
where ``topics`` maps a topic to ``[(log_time, value)]`` (float32 positions,
RGB arrays decoded by Pillow).
"""

import io
import math
import os

import numpy as np
from PIL import Image

START = 1_700_000_000_000_000_000
WIDTH, HEIGHT = 64, 48
JOINTS = 6
CAMERA_HZ = 30
COMMAND_HZ = 10
# (name, seconds, joint rate, start)
RECORDINGS = [
    ("a", 2.0, 200, START),
    ("b", 1.5, 500, START + 100_000_000_000),
]
TOPICS = ("/joint_states", "/cmd", "/camera/front")
FORMATS = ("mcap", "bag", "db3")


def joint_position(seed, j, t):
    return 0.5 * math.sin(0.7 * t * (j + 1) + seed) + 0.1 * j


def command(seed, j, t):
    return 0.3 * math.cos(0.4 * t * (j + 2) + seed)


def jpeg(n, seed):
    """A JPEG frame whose gradient moves with the frame number."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    rgb = np.stack(
        [(x * 4 + n * 3 + seed * 40) % 256, (y * 5 + n * 2) % 256, ((x + y) * 2 + n) % 256], axis=-1
    ).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, format="JPEG", quality=95)
    return out.getvalue()


def messages(seed, seconds, joint_hz, start):
    """Every message of one recording in time order: (topic, log_time, kind, payload)
    where kind is 'joints' (positions) or 'jpeg' (bytes)."""
    out = []
    for topic, hz in (("/joint_states", joint_hz), ("/cmd", COMMAND_HZ), ("/camera/front", CAMERA_HZ)):
        n = 0
        while n / hz <= seconds:
            t = n / hz
            log_time = start + round(t * 1e9)
            if topic == "/joint_states":
                out.append((topic, log_time, "joints", [joint_position(seed, j, t) for j in range(JOINTS)]))
            elif topic == "/cmd":
                out.append((topic, log_time, "joints", [command(seed, j, t) for j in range(JOINTS)]))
            else:
                out.append((topic, log_time, "jpeg", jpeg(n, seed)))
            n += 1
    out.sort(key=lambda m: (m[1], TOPICS.index(m[0])))
    return out


def ros_message(store, kind, payload, log_time, seq, ros1):
    """A typestore message object: JointState or CompressedImage."""
    prefix = "sensor_msgs/msg/"
    Time = store.types["builtin_interfaces/msg/Time"]
    Header = store.types["std_msgs/msg/Header"]
    stamp = Time(sec=log_time // 1_000_000_000, nanosec=log_time % 1_000_000_000)
    header = Header(seq=seq, stamp=stamp, frame_id="base") if ros1 else Header(stamp=stamp, frame_id="base")
    if kind == "joints":
        return prefix + "JointState", store.types[prefix + "JointState"](
            header=header,
            name=[f"joint{j}" for j in range(JOINTS)],
            position=np.asarray(payload, dtype=np.float64),
            velocity=np.zeros(JOINTS),
            effort=np.zeros(JOINTS),
        )
    return prefix + "CompressedImage", store.types[prefix + "CompressedImage"](
        header=header, format="jpeg", data=np.frombuffer(payload, dtype=np.uint8)
    )


def write(fmt, runs):
    """Writes the two recordings of `fmt` below `runs` (created)."""
    from rosbags.typesys import Stores, get_typestore

    os.makedirs(runs, exist_ok=True)
    for seed, (name, seconds, joint_hz, start) in enumerate(RECORDINGS):
        msgs = messages(seed, seconds, joint_hz, start)
        if fmt == "mcap":
            write_mcap(os.path.join(runs, f"{name}.mcap"), msgs, get_typestore(Stores.ROS2_HUMBLE))
        elif fmt == "bag":
            write_rosbags(os.path.join(runs, f"{name}.bag"), msgs, get_typestore(Stores.ROS1_NOETIC), ros1=True)
        elif fmt == "db3":
            write_rosbags(os.path.join(runs, name), msgs, get_typestore(Stores.ROS2_HUMBLE), ros1=False)
        else:
            raise ValueError(fmt)


def write_mcap(path, msgs, store):
    from foxglove_schemas_protobuf.CompressedImage_pb2 import CompressedImage
    from google.protobuf.timestamp_pb2 import Timestamp
    from mcap.writer import Writer
    from mcap_protobuf.schema import build_file_descriptor_set

    with open(path, "wb") as f:
        w = Writer(f)
        w.start(profile="ros2", library="logsql interop (mcap writer)")
        text, _ = store.generate_msgdef("sensor_msgs/msg/JointState", ros_version=2)
        joint_schema = w.register_schema("sensor_msgs/msg/JointState", "ros2msg", text.encode())
        image_schema = w.register_schema(
            CompressedImage.DESCRIPTOR.full_name,
            "protobuf",
            build_file_descriptor_set(CompressedImage).SerializeToString(),
        )
        channels = {
            "/joint_states": w.register_channel("/joint_states", "cdr", joint_schema),
            "/cmd": w.register_channel("/cmd", "cdr", joint_schema),
            "/camera/front": w.register_channel("/camera/front", "protobuf", image_schema),
        }
        for seq, (topic, log_time, kind, payload) in enumerate(msgs):
            if kind == "joints":
                msgtype, msg = ros_message(store, kind, payload, log_time, seq, ros1=False)
                data = bytes(store.serialize_cdr(msg, msgtype))
            else:
                stamp = Timestamp(seconds=log_time // 1_000_000_000, nanos=log_time % 1_000_000_000)
                data = CompressedImage(timestamp=stamp, frame_id="base", data=payload, format="jpeg").SerializeToString()
            w.add_message(channels[topic], log_time=log_time, data=data, publish_time=log_time, sequence=seq)
        w.finish()


def write_rosbags(path, msgs, store, ros1):
    if ros1:
        from rosbags.rosbag1 import Writer

        writer = Writer(path)
    else:
        from rosbags.rosbag2 import Writer

        writer = Writer(path, version=9)
    with writer:
        connections = {}
        for seq, (topic, log_time, kind, payload) in enumerate(msgs):
            msgtype, msg = ros_message(store, kind, payload, log_time, seq, ros1)
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=store)
            data = store.serialize_ros1(msg, msgtype) if ros1 else store.serialize_cdr(msg, msgtype)
            writer.write(connections[topic], log_time, bytes(data))


def value(topic, decoded):
    """What a frame holds of a decoded message: float32 positions, or the
    JPEG's RGB pixels as Pillow decodes them."""
    if topic == "/camera/front":
        return np.asarray(Image.open(io.BytesIO(bytes(decoded.data))).convert("RGB"))
    return np.asarray(decoded.position, dtype=np.float32)


def read(fmt, runs):
    """The recordings below `runs` read back with the official readers, in
    name order: [(name, {topic: [(log_time, value)]}, first, last)]."""
    out = []
    for name, *_ in RECORDINGS:
        topics = {t: [] for t in TOPICS}
        if fmt == "mcap":
            from mcap.reader import make_reader
            from mcap_protobuf.decoder import DecoderFactory as ProtobufDecoders
            from mcap_ros2.decoder import DecoderFactory as Ros2Decoders

            with open(os.path.join(runs, f"{name}.mcap"), "rb") as f:
                reader = make_reader(f, decoder_factories=[Ros2Decoders(), ProtobufDecoders()])
                for _s, channel, message, decoded in reader.iter_decoded_messages(log_time_order=True):
                    topics[channel.topic].append((message.log_time, value(channel.topic, decoded)))
        else:
            from pathlib import Path

            from rosbags.highlevel import AnyReader
            from rosbags.typesys import Stores, get_typestore

            store = get_typestore(Stores.ROS1_NOETIC if fmt == "bag" else Stores.ROS2_HUMBLE)
            path = Path(runs) / (f"{name}.bag" if fmt == "bag" else name)
            with AnyReader([path], default_typestore=store) as reader:
                for conn, log_time, raw in reader.messages():
                    msg = reader.deserialize(raw, conn.msgtype)
                    topics[conn.topic].append((log_time, value(conn.topic, msg)))
        for msgs in topics.values():
            msgs.sort(key=lambda m: m[0])
        times = [m[0] for msgs in topics.values() for m in msgs]
        out.append((name, topics, min(times), max(times)))
    return out
