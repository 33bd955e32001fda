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
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), BENCH_VENV
# (default target/bench-decode-venv; created with mcap, mcap-ros1-support,
# mcap-ros2-support, mcap-protobuf-support).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/logsql-target}
venv=${BENCH_VENV:-$root/target/bench-decode-venv}
fixtures=$root/../shared/fixtures/mcap/decode
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        "mcap>=1.2,<2" mcap-ros1-support mcap-ros2-support mcap-protobuf-support
fi
# The bench writes target/bench-data/imu_pb.{fds,bin} (the protobuf IMU case) first.
echo "== logsql decoders (criterion: thrpt = messages/s, one core)"
cargo bench --bench decode -- --noplot 2>&1 | grep -E "^decode/|thrpt|SKIPPED"
echo "== official Python decoders (messages/s, one core)"
"$venv/bin/python" benches/python_decode.py tests/data/demo.mcap "$fixtures" target/bench-data
