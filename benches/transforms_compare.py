#!/usr/bin/env python3
"""Coordinate frames: tf_lookup's lookups per second, and logsql check over
100 recordings against logsql info over them.

1. A recording written by the official ``mcap`` writer (ROS1
   ``tf2_msgs/TFMessage``): a chain of five dynamic links ``map -> odom ->
   base_link -> arm1 -> arm2 -> arm3`` at 100 Hz for 60 s and a static
   ``arm3 -> tool`` (30,001 transforms). ``tf_lookup(file, 'map', 'tool',
   t)`` over N times spread over the minute (``generate_series``), each query
   a whole ``logsql`` process with ``--target-partitions 1`` (one core): the
   lookups per second are N over the time above the same query with one
   lookup (which reads the transforms once). Against the NumPy/SciPy
   reference of tests/interop/transforms_interop.py, per lookup, on 20,000
   of the same lookups.
2. 100 recordings of 40 s (``/imu`` at 200 Hz, ``/camera/front`` at 10 Hz,
   the official ``mcap`` writer): ``logsql check`` with rates and gaps
   (``healthy = false``: what the message times answer), against ``logsql
   info`` (whose timelines read the same times) and ``info --no-timeline``; and
   with every check (doctor's health, header stamps) against ``logsql
   doctor``.

Each command runs RUNS times (default 3); the best wall time. Writes
$BENCH_RESULTS/transforms.json (tables ``transforms-lookups`` and
``transforms-check``) through benches/support/results.py.

Usage: python3 benches/transforms_compare.py [--logsql target/release/logsql]
Needs ``pip install mcap numpy scipy`` (the interop venv has them).
Environment: LOOKUPS (default 5,000,000), RUNS, CARGO_TARGET_DIR.
"""

import argparse
import math
import os
import random
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches", "support"))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from results import Results  # noqa: E402

TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
LOOKUPS = int(os.environ.get("LOOKUPS", 5_000_000))
RUNS = int(os.environ.get("RUNS", 3))
START = 1_700_000_000_000_000_000
SECOND = 1_000_000_000
CHAIN = ["map", "odom", "base_link", "arm1", "arm2", "arm3"]


def best(cmd):
    out = None
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        out = proc
    return min(times), out


def ros1_string(s):
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def tf_message(items):
    out = struct.pack("<I", len(items))
    for stamp, parent, child, t, q in items:
        sec, nsec = divmod(stamp, SECOND)
        out += struct.pack("<III", 0, sec, nsec) + ros1_string(parent) + ros1_string(child)
        out += struct.pack("<7d", *t, *q)
    return out


def write_chain(path):
    from mcap.writer import Writer
    from transforms_interop import TFMESSAGE_ROS1

    rng = random.Random(3)
    with open(path, "wb") as f:
        w = Writer(f)
        w.start(profile="ros1", library="transforms_compare")
        schema = w.register_schema(name="tf2_msgs/TFMessage", encoding="ros1msg", data=TFMESSAGE_ROS1.encode())
        tf = w.register_channel(topic="/tf", message_encoding="ros1", schema_id=schema)
        static = w.register_channel(topic="/tf_static", message_encoding="ros1", schema_id=schema)
        w.add_message(static, log_time=START, publish_time=START,
                      data=tf_message([(START, "arm3", "tool", (0.1, 0, 0.2), (0, 0, 0, 1))]))
        for i in range(6000):
            t = START + i * SECOND // 100
            items = []
            for parent, child in zip(CHAIN, CHAIN[1:]):
                yaw = rng.uniform(-1, 1)
                items.append((t, parent, child, (rng.uniform(-1, 1), rng.uniform(-1, 1), 0.1),
                              (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))))
            w.add_message(tf, log_time=t, publish_time=t, data=tf_message(items))
        w.finish()


def lookups(res, binary, data):
    path = os.path.join(data, "chain.mcap")
    if not os.path.exists(path):
        write_chain(path)
    span = 59 * SECOND

    def sql(n):
        return (
            f"SELECT count(p) FROM (SELECT tf_lookup('{path}', 'map', 'tool', t) AS p FROM "
            f"(SELECT {START} + value * {span // n} AS t FROM generate_series(1, {n})))"
        )

    one, _ = best([binary, "--target-partitions", "1", "--format", "csv", sql(1)])
    many, proc = best([binary, "--target-partitions", "1", "--format", "csv", sql(LOOKUPS)])
    found = proc.stdout.strip().splitlines()[-1]
    rate = LOOKUPS / max(many - one, 1e-9)
    # The reference, per lookup.
    from mcap.reader import make_reader
    from mcap_ros1.decoder import DecoderFactory
    from transforms_interop import Reference

    rows = []
    with open(path, "rb") as f:
        for _, channel, _, msg in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            for tr in msg.transforms:
                t, q = tr.transform.translation, tr.transform.rotation
                rows.append((tr.header.frame_id, tr.child_frame_id, tr.header.stamp.to_nsec(),
                             [t.x, t.y, t.z], [q.x, q.y, q.z, q.w], channel.topic == "/tf_static"))
    ref = Reference(rows)
    n_ref = 20_000
    t0 = time.perf_counter()
    for i in range(1, n_ref + 1):
        ref.lookup("map", "tool", START + i * (span // n_ref))
    ref_rate = n_ref / (time.perf_counter() - t0)
    res.table(
        "transforms-lookups",
        "tf_lookup on a chain of five dynamic links and a static one, one core",
        ["lookups", "engine", "time", "lookups per second", "target"],
        [
            [f"{LOOKUPS:,} (`map` <- `tool`)", "logsql, one core", f"{many:.3f} s ({one:.3f} s of it reading the file)",
             f"**{rate / 1e6:.2f} M/s**", "at least 1 M/s" + (" (met)" if rate >= 1e6 else " (**missed**)")],
            [f"{n_ref:,}, the same", "NumPy/SciPy reference, per lookup", "", f"{ref_rate / 1e3:.1f} k/s", ""],
        ],
        align="--rrl",
    )
    res.note(f"tf_lookup: {found} of {LOOKUPS} lookups answered")
    return rate >= 1e6


def fleet(res, binary, data):
    from check_interop import EXPECT, write

    runs = os.path.join(data, "check-fleet")
    if not os.path.isdir(runs) or len(os.listdir(runs)) < 100:
        os.makedirs(runs, exist_ok=True)
        for i in range(100):
            write(os.path.join(runs, f"run{i:03}.mcap"), "clean.mcap")
    rates = os.path.join(data, "rates.toml")
    with open(rates, "w") as f:
        f.write(
            "[recording]\nhealthy = false\nrequired_topics = [\"/imu\", \"/camera/front\"]\nmin_duration = \"10s\"\n"
            "[topics.\"/imu\"]\nrate = 200\nmax_gap = \"50ms\"\n[topics.\"/camera/front\"]\nrate = 10\n"
        )
    full = os.path.join(data, "full.toml")
    with open(full, "w") as f:
        f.write(EXPECT)
    cases = [
        ("`logsql info DIR --no-timeline` (summaries)", [binary, "info", runs, "--no-timeline"]),
        ("`logsql info DIR` (summaries and every message time)", [binary, "info", runs]),
        ("`logsql check DIR` (rates, gaps, durations)", [binary, "check", runs, "--expect", rates]),
        ("`logsql doctor DIR`", [binary, "doctor", runs]),
        ("`logsql check DIR` (every check: health, stamps)", [binary, "check", runs, "--expect", full]),
    ]
    rows = []
    for label, cmd in cases:
        t, proc = best(cmd)
        rows.append([label, f"{t:.3f} s", f"{t / 100 * 1000:.1f} ms", "ok" if proc.returncode == 0 else f"exit {proc.returncode}"])
    res.table(
        "transforms-check",
        "logsql check over 100 recordings of 40 s (8,401 messages each) against logsql info and doctor",
        ["command", "100 recordings", "per recording", "status"],
        rows,
        align="-rr-",
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", default=os.path.join(TARGET, "release", "logsql"))
    args = ap.parse_args()
    data = os.path.join(ROOT, "target", "bench-data", "transforms")
    os.makedirs(data, exist_ok=True)
    res = Results("transforms")
    met = lookups(res, args.logsql, data)
    fleet(res, args.logsql, data)
    res.done()
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
