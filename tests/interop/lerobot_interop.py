#!/usr/bin/env python3
"""Interop test: LeRobot v3 datasets written by logsql
(``COPY ... TO 'dir' STORED AS LEROBOT``) loaded by the official ``lerobot``
package, offline, and checked against an independent Python computation over
the source recordings read with the official readers.

Two recordings of the ``gen_robot`` example (built by ``cargo test`` beside
the logsql binary, in ``examples/``): joint states at 100 Hz and 500 Hz,
commands at 10 Hz, a raw ``rgb8`` camera at 30 Hz and a JPEG camera at 15 Hz.
logsql aligns them on ``time_grid(runs, 30)`` with ASOF JOIN and writes the
dataset (videos, then PNG frames in the data files). Checks:

- ``LeRobotDataset(repo_id, root=DIR, video_backend="pyav")`` loads it: the
  episode and frame counts, fps, features and shapes are right;
- ``dataset[i]`` for sampled ``i``: state and action equal a Python ASOF
  (latest message at or before each grid time, leading frames dropped until
  every stream has a message) over the recordings read with the official
  ``mcap`` reader and ``rosbags``' ROS1 deserializer; episode, frame index,
  timestamp and task are right; the camera frames LeRobot decodes from the
  video (its own timestamp tolerance checks run on every access) are within
  30 dB PSNR of the source frames (the JPEG ones decoded with Pillow);
- ``meta/episodes``: per-episode ``min``/``max``/``count`` exactly, ``mean``
  and ``std`` within 1e-6 relative of NumPy's, quantiles within 1e-6 of
  LeRobot's own ``get_feature_stats``; ``meta/stats.json`` equal to NumPy's
  over every frame (min/max/mean/std/count).

Then the issue's other inputs, written by the official writers
(``robot_inputs.py``: a 30 Hz JPEG camera, joints at 200 and 500 Hz, commands
at 10 Hz, two recordings each): an MCAP of ROS 2 CDR joint states and
foxglove protobuf compressed images (through SQL), a directory of ROS1 bags
and a directory of ROS 2 bag directories (through ``logsql dataset`` and a
spec), each checked as above against the same recordings read back with
``mcap``'s ROS 2 and protobuf decoders and ``rosbags``' ``AnyReader``.

Usage: lerobot_interop.py --logsql PATH/TO/logsql [--robot PATH/TO/gen_robot] [--keep DIR]
Needs the ``lerobot`` package (run.sh installs it into its own venv,
``LOGSQL_LEROBOT_VENV``). Prints one line per check and finally
``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import bisect
import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow.parquet as pq
from mcap.reader import make_reader
from PIL import Image
from rosbags.typesys import Stores, get_typestore

from common import Checks

FPS = 30
START = 1_700_000_000_000_000_000
RECORDINGS = [
    ("a.mcap", ["--seconds", "3", "--wrist"]),
    ("b.mcap", ["--seconds", "2", "--seed", "1", "--joint-hz", "500", "--wrist", "--start", str(START + 100_000_000_000)]),
]
TYPES = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/cmd": "sensor_msgs/msg/JointState",
    "/camera/front": "sensor_msgs/msg/Image",
    "/camera/wrist": "sensor_msgs/msg/CompressedImage",
}
SQL = """COPY (
  SELECT g.episode_index, g.log_time, g.file,
         j.position AS "observation.state", c.position AS action,
         f.image AS "observation.images.front", w.image AS "observation.images.wrist",
         'pick the cube' AS task
  FROM time_grid('{runs}/', 30) g
  ASOF JOIN read_topic('{runs}/', '/joint_states') j MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file
  ASOF JOIN read_topic('{runs}/', '/cmd') c MATCH_CONDITION (g.log_time >= c.log_time) ON g.file = c.file
  ASOF JOIN read_images('{runs}/', '/camera/front') f MATCH_CONDITION (g.log_time >= f.log_time) ON g.file = f.file
  ASOF JOIN read_images('{runs}/', '/camera/wrist') w MATCH_CONDITION (g.log_time >= w.log_time) ON g.file = w.file
) TO '{out}' STORED AS LEROBOT OPTIONS (fps '30', robot_type 'demo_arm'{extra})"""


def read_recording(path, store):
    """Every message of the file, decoded, by topic: [(log_time, value)]."""
    topics = {t: [] for t in TYPES}
    first, last = None, None
    with open(path, "rb") as f:
        for _schema, channel, message in make_reader(f).iter_messages(log_time_order=True):
            first = message.log_time if first is None else min(first, message.log_time)
            last = message.log_time if last is None else max(last, message.log_time)
            msg = store.deserialize_ros1(message.data, TYPES[channel.topic])
            if channel.topic in ("/joint_states", "/cmd"):
                value = np.asarray(msg.position, dtype=np.float32)
            elif channel.topic == "/camera/front":
                value = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.width, 3)
            else:
                value = np.asarray(Image.open(io.BytesIO(bytes(msg.data))).convert("RGB"))
            topics[channel.topic].append((message.log_time, value))
    return topics, first, last


def expected_frames(runs, store):
    """The dataset an independent ASOF gives over gen_robot's recordings."""
    recordings = []
    for name, _ in sorted(RECORDINGS):
        recordings.append((name, *read_recording(os.path.join(runs, name), store)))
    return asof_episodes(recordings)


def asof_episodes(recordings):
    """The dataset an independent ASOF gives over `recordings`
    ([(name, {topic: [(log_time, value)]}, first, last)], one episode each): a
    list of episodes, each a list of frames {topic: value}."""
    episodes = []
    for name, topics, first, last in recordings:
        times = {t: [m[0] for m in msgs] for t, msgs in topics.items()}
        frames = []
        k = 0
        while True:
            t = first + round(k * 1e9 / FPS)
            if t > last:
                break
            k += 1
            row = {}
            for topic, msgs in topics.items():
                i = bisect.bisect_right(times[topic], t) - 1
                row[topic] = msgs[i][1] if i >= 0 else None
            if any(v is None for v in row.values()):
                if not frames:
                    continue
                raise AssertionError(f"{name}: a stream ends before {t}")
            frames.append(row)
        episodes.append(frames)
    return episodes


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def close(a, b, rel=1e-6, abs_=1e-9):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.all(np.abs(a - b) <= rel * np.abs(b) + abs_)


GEN_ROBOT_CAMERAS = {"observation.images.front": "/camera/front", "observation.images.wrist": "/camera/wrist"}


def check_dataset(c, label, out, episodes, video, cameras=GEN_ROBOT_CAMERAS, jpeg_front=False):
    """The checks of one dataset. `jpeg_front`: the front camera's source is
    JPEG, which logsql decodes with zune-jpeg and the reference with Pillow
    (libjpeg-turbo); the two agree within the images suite's 40 dB, so its mean
    is compared within 1/255 rather than exactly."""
    from lerobot.datasets.compute_stats import get_feature_stats
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("local/logsql", root=out, video_backend="pyav")
    total = sum(len(e) for e in episodes)
    starts = np.cumsum([0] + [len(e) for e in episodes])

    def counts():
        got = (ds.num_episodes, ds.num_frames, ds.fps)
        want = (len(episodes), total, FPS)
        return None if got == want else f"(episodes, frames, fps) {got}, expected {want}"

    c.check(f"{label}: LeRobotDataset loads it with the right counts and fps", counts)

    def features():
        f = ds.meta.features
        want = {
            "observation.state": ("float32", (6,)),
            "action": ("float32", (6,)),
            **{key: ("video" if video else "image", (48, 64, 3)) for key in cameras},
            "timestamp": ("float32", (1,)),
            "frame_index": ("int64", (1,)),
            "episode_index": ("int64", (1,)),
            "index": ("int64", (1,)),
            "task_index": ("int64", (1,)),
        }
        got = {k: (v["dtype"], tuple(v["shape"])) for k, v in f.items()}
        return None if got == want else f"features {got}, expected {want}"

    c.check(f"{label}: features, dtypes and shapes", features)

    samples = sorted({0, 1, int(starts[1]) - 1, int(starts[1]), int(starts[1]) + 7, total // 2, total - 1})

    def items():
        worst = float("inf")
        for i in samples:
            e = int(np.searchsorted(starts, i, side="right") - 1)
            k = i - int(starts[e])
            want = episodes[e][k]
            item = ds[i]
            if not np.array_equal(item["observation.state"].numpy(), want["/joint_states"]):
                return f"frame {i}: state {item['observation.state'].numpy()} != {want['/joint_states']}"
            if not np.array_equal(item["action"].numpy(), want["/cmd"]):
                return f"frame {i}: action {item['action'].numpy()} != {want['/cmd']}"
            if (int(item["episode_index"]), int(item["frame_index"]), int(item["index"])) != (e, k, i):
                return f"frame {i}: episode/frame/index {item['episode_index']}, {item['frame_index']}, {item['index']}"
            if abs(float(item["timestamp"]) - k / FPS) > 1e-6:
                return f"frame {i}: timestamp {float(item['timestamp'])} != {k / FPS}"
            if item["task"] != "pick the cube":
                return f"frame {i}: task {item['task']!r}"
            for key, topic in cameras.items():
                img = item[key].numpy()
                if img.shape != (3, 48, 64):
                    return f"frame {i}: {key} shape {img.shape}"
                got = np.clip(np.round(img.transpose(1, 2, 0) * 255.0), 0, 255)
                p = psnr(got, want[topic])
                worst = min(worst, p)
                if p < 30:
                    return f"frame {i}: {key} PSNR {p:.1f} dB < 30"
        print(f"     lowest PSNR over {len(samples)} sampled frames: {worst:.1f} dB")
        return None

    c.check(f"{label}: dataset[i] equals the Python ASOF (state, action, indices, timestamp, task, frames)", items)

    table = pq.read_table(os.path.join(out, "meta/episodes/chunk-000/file-000.parquet")).to_pylist()

    def episode_stats():
        for e, frames in enumerate(episodes):
            row = table[e]
            for key, topic in (("observation.state", "/joint_states"), ("action", "/cmd")):
                values = np.stack([f[topic] for f in frames])
                ref = get_feature_stats(values, axis=0, keepdims=False)
                s = {k: row[f"stats/{key}/{k}"] for k in ref}
                if s["count"] != [len(frames)]:
                    return f"episode {e} {key}: count {s['count']}"
                if not (np.array_equal(s["min"], values.min(0)) and np.array_equal(s["max"], values.max(0))):
                    return f"episode {e} {key}: min/max {s['min']} {s['max']}"
                v64 = values.astype(np.float64)
                if not close(s["mean"], v64.mean(0)) or not close(s["std"], v64.std(0), abs_=1e-7):
                    return f"episode {e} {key}: mean/std {s['mean']} {s['std']} vs {v64.mean(0)} {v64.std(0)}"
                for q in ("q01", "q10", "q50", "q90", "q99"):
                    if not close(s[q], ref[q], abs_=1e-6):
                        return f"episode {e} {key}: {q} {s[q]} vs LeRobot's {ref[q]}"
            frames_ts = np.arange(len(frames), dtype=np.float32) / np.float32(FPS)
            if not close(row["stats/timestamp/max"], [frames_ts.max()]):
                return f"episode {e}: timestamp max {row['stats/timestamp/max']}"
            front = np.stack([f["/camera/front"] for f in frames]).astype(np.float64) / 255.0
            got = np.asarray(row["stats/observation.images.front/mean"]).reshape(3)
            if not close(got, front.mean(axis=(0, 1, 2)), rel=0 if jpeg_front else 1e-6, abs_=1 / 255 if jpeg_front else 1e-9):
                return f"episode {e}: front camera mean {got} vs {front.mean(axis=(0, 1, 2))}"
        return None

    c.check(f"{label}: per-episode stats equal NumPy's and LeRobot's quantiles", episode_stats)

    def dataset_stats():
        with open(os.path.join(out, "meta/stats.json")) as f:
            stats = json.load(f)
        for key, topic in (("observation.state", "/joint_states"), ("action", "/cmd")):
            values = np.stack([f[topic] for frames in episodes for f in frames]).astype(np.float64)
            s = stats[key]
            if s["count"] != [total]:
                return f"{key}: count {s['count']}"
            if not (close(s["min"], values.min(0), rel=0) and close(s["max"], values.max(0), rel=0)):
                return f"{key}: min/max"
            if not close(s["mean"], values.mean(0)) or not close(s["std"], values.std(0), abs_=1e-7):
                return f"{key}: mean/std {s['mean']} {s['std']} vs {values.mean(0)} {values.std(0)}"
        return None

    c.check(f"{label}: meta/stats.json equals NumPy's over every frame", dataset_stats)


OFFICIAL_SQL = """COPY (
  SELECT g.episode_index, g.log_time,
         j.position AS "observation.state", c.position AS action,
         f.image AS "observation.images.front", 'pick the cube' AS task
  FROM time_grid('{runs}/', 30) g
  ASOF JOIN read_topic('{runs}/', '/joint_states') j MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file
  ASOF JOIN read_topic('{runs}/', '/cmd') c MATCH_CONDITION (g.log_time >= c.log_time) ON g.file = c.file
  ASOF JOIN read_images('{runs}/', '/camera/front') f MATCH_CONDITION (g.log_time >= f.log_time) ON g.file = f.file
) TO '{out}' STORED AS LEROBOT OPTIONS (fps '30', robot_type 'demo_arm')"""

OFFICIAL_SPEC = """input = "{runs}/"
fps = 30
robot_type = "demo_arm"
task = "pick the cube"

[features]
"observation.state" = {{ topic = "/joint_states", field = "position" }}
"action" = {{ topic = "/cmd", field = "position" }}

[cameras]
"observation.images.front" = "/camera/front"
"""


def check_official_inputs(c, logsql, tmp):
    """Recordings of the official writers (robot_inputs.py): an MCAP of ROS 2
    CDR joint states and foxglove protobuf images through SQL, a directory of
    ROS1 bags and one of ROS 2 bag directories through `logsql dataset`."""
    import robot_inputs

    for fmt in robot_inputs.FORMATS:
        runs = os.path.join(tmp, f"runs-{fmt}")
        if not os.path.exists(runs):
            robot_inputs.write(fmt, runs)
        episodes = asof_episodes(robot_inputs.read(fmt, runs))
        out = os.path.join(tmp, f"ds-{fmt}")
        if os.path.exists(out):
            import shutil

            shutil.rmtree(out)
        if fmt == "mcap":
            how = "COPY ... STORED AS LEROBOT"
            cmd = [logsql, OFFICIAL_SQL.format(runs=runs, out=out)]
        else:
            how = "logsql dataset"
            spec = os.path.join(tmp, f"spec-{fmt}.toml")
            with open(spec, "w") as f:
                f.write(OFFICIAL_SPEC.format(runs=runs))
            cmd = [logsql, "dataset", spec, "-o", out]
        label = {"mcap": "MCAP (ROS 2 CDR + foxglove protobuf)", "bag": "ROS1 bags", "db3": "ROS 2 bags (.db3)"}[fmt]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            c.check(f"{label}: {how}", lambda: proc.stderr.strip())
            continue
        cameras = {"observation.images.front": "/camera/front"}
        check_dataset(c, f"{label}, {how}", out, episodes, True, cameras, jpeg_front=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--robot")
    ap.add_argument("--keep")
    args = ap.parse_args()
    robot = args.robot or os.path.join(os.path.dirname(args.logsql), "examples", "gen_robot")
    c = Checks()
    tmp = args.keep or tempfile.mkdtemp(prefix="logsql-lerobot-")
    runs = os.path.join(tmp, "runs")
    os.makedirs(runs, exist_ok=True)
    for name, opts in RECORDINGS:
        subprocess.run([robot, os.path.join(runs, name), *opts], check=True)
    store = get_typestore(Stores.ROS1_NOETIC)
    episodes = expected_frames(runs, store)
    for label, extra, video in (("video", "", True), ("parquet images", ", images 'parquet'", False)):
        out = os.path.join(tmp, f"ds-{label.replace(' ', '-')}")
        if os.path.exists(out):
            import shutil

            shutil.rmtree(out)
        proc = subprocess.run(
            [args.logsql, SQL.format(runs=runs, out=out, extra=extra)], capture_output=True, text=True, timeout=600
        )
        if proc.returncode != 0:
            c.check(f"{label}: COPY ... STORED AS LEROBOT", lambda: proc.stderr.strip())
            continue
        check_dataset(c, label, out, episodes, video)
    check_official_inputs(c, args.logsql, tmp)
    print(f"{c.passed} passed, {c.failed} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
