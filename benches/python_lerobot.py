"""The path users write today from a robot recording to a LeRobot v3 dataset, for
benches/lerobot_compare.sh: the official `mcap` reader, `rosbags`' ROS1 deserializer,
Pillow for JPEG frames, and LeRobot's own writer (`LeRobotDataset.create`, `add_frame`,
`save_episode`, `finalize`) with H.264 video and LeRobot's streaming encoder, its fastest
path (frames go straight to PyAV encoder threads, no PNG files).

  python python_lerobot.py convert IN.mcap OUT_DIR   # the dataset; prints "frames episodes"
  python python_lerobot.py count DIR                 # a dataset's "frames episodes" (meta/info.json)

Alignment as `logsql dataset` does it: a 30 fps grid from the recording's first to its last
message, each frame taking every topic's latest message at or before its time, and the
frames before every topic has a message left out. The recording is the one of
examples/gen_robot.rs: /joint_states and /cmd (sensor_msgs/JointState), /camera/front
(sensor_msgs/Image rgb8) and /camera/wrist (sensor_msgs/CompressedImage JPEG).
"""

import io
import json
import sys
from pathlib import Path

import numpy as np
from mcap.reader import make_reader
from PIL import Image
from rosbags.typesys import Stores, get_typestore

FPS = 30
TYPES = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/cmd": "sensor_msgs/msg/JointState",
    "/camera/front": "sensor_msgs/msg/Image",
    "/camera/wrist": "sensor_msgs/msg/CompressedImage",
}
KEYS = {
    "/joint_states": "observation.state",
    "/cmd": "action",
    "/camera/front": "observation.images.front",
    "/camera/wrist": "observation.images.wrist",
}


def pixels(topic, msg):
    if topic == "/camera/front":
        return np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
    return np.asarray(Image.open(io.BytesIO(msg.data.tobytes())).convert("RGB"))


def frames(path):
    """(values by feature key) of each grid frame, in time order, streaming."""
    store = get_typestore(Stores.ROS1_NOETIC)
    with open(path, "rb") as f:
        reader = make_reader(f)
        stats = reader.get_summary().statistics
        start, end = stats.message_start_time, stats.message_end_time
        latest = {}
        n = 0

        def grid(i):
            return start + round(i * 1e9 / FPS)

        for _schema, channel, message in reader.iter_messages(log_time_order=True):
            while grid(n) < message.log_time and grid(n) <= end:
                if len(latest) == len(KEYS):
                    yield dict(latest)
                n += 1
            msg = store.deserialize_ros1(message.data, TYPES[channel.topic])
            key = KEYS[channel.topic]
            if key.startswith("observation.images."):
                latest[key] = pixels(channel.topic, msg)
            else:
                latest[key] = np.asarray(msg.position, dtype=np.float32)
        while grid(n) <= end:
            if len(latest) == len(KEYS):
                yield dict(latest)
            n += 1


def convert(path, out):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    first = next(frames(path))
    features = {}
    for key, value in first.items():
        if key.startswith("observation.images."):
            features[key] = {
                "dtype": "video",
                "shape": value.shape,
                "names": ["height", "width", "channels"],
            }
        else:
            features[key] = {
                "dtype": "float32",
                "shape": value.shape,
                "names": [f"j{i}" for i in range(value.shape[0])],
            }
    dataset = LeRobotDataset.create(
        repo_id="bench/robot",
        fps=FPS,
        root=out,
        robot_type="demo_arm",
        features=features,
        use_videos=True,
        vcodec="h264",
        streaming_encoding=True,
    )
    count = 0
    for frame in frames(path):
        frame["task"] = "pick the cube"
        dataset.add_frame(frame)
        count += 1
    dataset.save_episode()
    dataset.finalize()
    print(count, 1)


def count(root):
    info = json.loads((Path(root) / "meta" / "info.json").read_text())
    print(info["total_frames"], info["total_episodes"])


if __name__ == "__main__":
    if sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "count":
        count(sys.argv[2])
    else:
        sys.exit(__doc__)
