"""The official `rosbags` reader as a whole process, for the bag and ROS 2 benchmarks.

    python python_rosbags_read.py rosbag1|rosbag2 BAG                  -> "count bytes"
    python python_rosbags_read.py rosbag1|rosbag2 BAG TOPIC START END  -> the same, of TOPIC
                                                                          with START <= t <= END
    python python_rosbags_read.py rosbag1|rosbag2 BAG --window         -> the 45%-55% bounds

Counts every message's raw bytes (no deserialisation). Used by benches/bag_compare.sh
(ROS1 bags) and benches/ros2_compare.sh (rosbag2 directories).
"""

import sys

if sys.argv[1] == "rosbag1":
    from rosbags.rosbag1 import Reader
elif sys.argv[1] == "rosbag2":
    from rosbags.rosbag2 import Reader
else:
    sys.exit(f"unknown reader {sys.argv[1]!r}: rosbag1 or rosbag2")

args = sys.argv[2:]
with Reader(args[0]) as r:
    if len(args) > 1 and args[1] == "--window":
        lo, hi = r.start_time, r.end_time - 1  # rosbags' end_time is exclusive
        span = hi - lo
        print(lo + span * 45 // 100, lo + span * 55 // 100)
        sys.exit(0)
    conns = [c for c in r.connections if c.topic == args[1]] if len(args) > 1 else []
    start = int(args[2]) if len(args) > 2 else None
    stop = int(args[3]) + 1 if len(args) > 3 else None  # rosbags' stop is exclusive
    n = b = 0
    for _c, _t, raw in r.messages(connections=conns, start=start, stop=stop):
        n += 1
        b += len(raw)
print(n, b)
