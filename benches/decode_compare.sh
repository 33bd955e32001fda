#!/usr/bin/env bash
# benches/decode_compare.sh: decode rate of logsql's decoders (cargo bench --bench
# decode, criterion, one core) against the official Python MCAP decoders
# (benches/python_decode.py) on the same messages:
#   protobuf_imu   an IMU-shaped protobuf message (benches/support/imu_pb.rs, ~330 bytes)
#   ros1_imu       /imu of tests/data/demo.mcap (ROS1 sensor_msgs/Imu, 320 bytes)
#   cdr_imu        /imu of ../shared/fixtures/mcap/decode/ros2.mcap (CDR)
#   protobuf_pose  /fixture/pose of protobuf.mcap (foxglove.PoseInFrame)
#   json_state     /state of json.mcap
#
#   bash benches/decode_compare.sh
#
# Writes the results through benches/support/results.py ($BENCH_RESULTS/decode.json),
# printed as markdown too: decode-detail (every case, both rates) and decode (the table of
# docs/performance.md; `bash benches/run.sh --update-docs decode`). A case whose fixture
# is missing is left out (criterion prints it as SKIPPED).
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), BENCH_VENV
# (default target/bench-decode-venv, not the other comparisons' venv: the decoders need
# their own protobuf; created with mcap, mcap-ros1-support, mcap-ros2-support,
# mcap-protobuf-support).
set -euo pipefail

# root, target; log, bench_venv, py_version, results_*.
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
venv=${BENCH_VENV:-$root/target/bench-decode-venv}
fixtures=$root/../shared/fixtures/mcap/decode
results_start decode

bench_venv "mcap, mcap_ros1, mcap_ros2, mcap_protobuf" \
    "mcap>=1.2,<2" mcap-ros1-support mcap-ros2-support mcap-protobuf-support
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The bench writes target/bench-data/imu_pb.{fds,bin} (the protobuf IMU case; always under
# the repository, whatever BENCH_DATA says) first.
log "logsql decoders (criterion: thrpt = messages/s, one core)"
cargo bench --bench decode -- --noplot >"$tmp/criterion.txt" 2>&1 ||
    { cat "$tmp/criterion.txt" >&2; exit 1; }
grep -E "^decode/|thrpt|SKIPPED" "$tmp/criterion.txt" >&2 || true
log "official Python decoders (messages/s, one core)"
"$py" benches/python_decode.py tests/data/demo.mcap "$fixtures" "$root/target/bench-data" >"$tmp/python.txt"
cat "$tmp/python.txt" >&2
versions="Python $("$py" -c 'import platform; print(platform.python_version())') with $(py_version mcap mcap-ros1-support mcap-ros2-support mcap-protobuf-support protobuf)"

python3 - "$tmp/criterion.txt" "$tmp/python.txt" "$versions" <<'EOF'
import os, re, sys
sys.path.insert(0, os.path.join(os.getcwd(), "benches", "support"))
from results import Results

criterion, python, versions = sys.argv[1:]
UNIT = {"elem/s": 1, "Kelem/s": 1e3, "Melem/s": 1e6, "Gelem/s": 1e9}
# logsql: decode/NAME ... thrpt: [low MID high] (the middle estimate); bytes per message
# from the bench's own line "decode/NAME: TOPIC (DECODER), N bytes per message on average".
rust, size, name = {}, {}, None
for line in open(criterion):
    m = re.match(r"decode/(\w+): .*, (\d+) bytes per message", line)
    if m:
        size[m.group(1)] = int(m.group(2))
        continue
    m = re.match(r"decode/(\w+)(\s+time:|\s*$)", line)
    if m:
        name = m.group(1)
    m = re.search(r"thrpt:\s*\[\S+ \S+ (\S+) (\w*elem/s)", line)
    if m and name and name not in rust:
        rust[name] = float(m.group(1)) * UNIT[m.group(2)]
# Python: "NAME[ (what)]<TAB>RATE msg/s<TAB>(... ms per BATCH)"
py = {}
for line in open(python):
    parts = line.rstrip("\n").split("\t")
    if len(parts) >= 2 and parts[1].endswith(" msg/s"):
        py[parts[0]] = float(parts[1].split()[0])


def rate(x):
    return f"{x / 1e6:.2f} M/s" if x >= 1e6 else f"{x / 1e3:.1f} k/s"


def ratio(r):
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x"


# (python case, logsql case, the doc's label with {b} for the bytes per message)
cases = [
    ("ros1_imu", "ros1_imu", "ROS1 `sensor_msgs/Imu` ({b} B, demo file)"),
    ("cdr_imu", "cdr_imu", "ROS 2 CDR `sensor_msgs/msg/Imu` ({b} B, `ros2.mcap`)"),
    ("protobuf_imu (parse + read every field)", "protobuf_imu",
     "protobuf IMU-shaped message ({b} B, `benches/support/imu_pb.rs`): parse + read every field"),
    ("protobuf_imu (parse only)", "protobuf_imu", "the same, upb parse only (fields materialise lazily, on access)"),
    ("protobuf_pose", "protobuf_pose", "protobuf `foxglove.PoseInFrame` ({b} B, `protobuf.mcap`), parse only"),
    ("json_state", "json_state", "JSON with a JSON Schema ({b} B, `json.mcap`), `json.loads`"),
]
detail, doc, values = [], [], []
for p, r, label in cases:
    if p not in py or r not in rust:
        print(f"== decode: {p}: no figure on the {'Python' if p not in py else 'logsql'} side, left out",
              file=sys.stderr)
        continue
    b = size.get(r, "?")
    detail.append([p, str(b), f"{py[p]:,.0f}", f"{rust[r]:,.0f}", ratio(rust[r] / py[p])])
    doc.append([label.format(b=b), rate(py[p]), rate(rust[r]), ratio(rust[r] / py[p])])
    values.append({"case": p, "bytes": b, "python_msgs_per_s": py[p], "logsql_msgs_per_s": rust[r]})
if not doc:
    sys.exit("decode: no case has figures on both sides")
res = Results.resume(os.environ["BENCH_NAME"])
res.table("decode-detail",
          f"Messages per second on one core: logsql's decoders (criterion, batches of 10,000 decoded into the "
          f"scan's column builder) and the official Python decoders ({versions}; best of 5)",
          ["case", "bytes per message", "Python (msg/s)", "logsql (msg/s)", "logsql / Python"],
          detail, "-rrrr", values=values)
# The table of docs/performance.md (## Decoding).
res.table("decode", f"Decode rate of logsql's decoders (criterion, one core) against the official Python decoders "
          f"({versions})", ["messages", "Python", "logsql", ""], doc, "-rrr")
EOF
results_done
