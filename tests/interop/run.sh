#!/usr/bin/env bash
# Python interop tests: MCAP files written by the official Python `mcap` writer,
# ROS1 bags written by the python `rosbags` writer and Apollo records written by
# the pip `cyber_record` writer, BDDF files written by the official
# `bosdyn.bddf` writer (bosdyn-core), ROS 2 bags (SQLite storage) written by the
# python `rosbags` rosbag2 writer, each read back by the official reader and by
# the logsql binary and compared field by field (see mcap_interop.py,
# bag_interop.py, apollo_interop.py, bddf_interop.py, ros2_interop.py).
#
#   bash tests/interop/run.sh
#
# Environment:
#   LOGSQL_BIN   the logsql binary (default: $CARGO_TARGET_DIR/debug/logsql, else target/debug/logsql)
#   LOGSQL_VENV  the Python venv to create/use (default: target/interop-venv)
#   LOGSQL_INTEROP_KEEP  a directory to keep the generated .mcap/.bag files in (default: a temp dir)
#
# Needs python3 (with venv) and PyPI access the first time (pip install mcap rosbags
# cyber_record bosdyn-core mcap-ros1-support mcap-ros2-support mcap-protobuf-support moto[server]
# boto3, and for images Pillow numpy foxglove-schemas-protobuf). LOGSQL_INTEROP_SUITES picks suites
# (default: mcap bag apollo carla bddf ros2 mcap_writer s3 asof json serve points video images recover copy_bag mcp catalog moments transforms check;
# mcap_writer_interop.py reads MCAP files logsql wrote with the official reader and decoders;
# carla_interop.py
# checks logsql against an independent Python walk of CARLA files: no pip package exists;
# s3_interop.py reads from a moto S3 server on 127.0.0.1 through a byte-counting relay and
# needs the gen_mcap example beside the logsql binary, which `cargo test` builds;
# asof_interop.py compares ASOF JOIN with DuckDB's and needs pip `duckdb`;
# json_interop.py reads NaN and infinities of --format json / ndjson back with
# Python's json, DuckDB and, when installed, pandas; serve_interop.py drives
# `logsql serve` with psycopg 3 and pandas.read_sql through SQLAlchemy, and its
# Flight SQL (a binary built with `--features flight`; skipped otherwise, failed
# with LOGSQL_REQUIRE_FLIGHT=1) with adbc-driver-flightsql and pyarrow.flight;
# points_interop.py compares read_points with a NumPy structured-array reading
# of the same bytes and reads `export --as pcd|ply` files back, with pip `plyfile`;
# video_interop.py decodes the H.264 MP4 of logsql-media's encoder with PyAV, pip `av`,
# and needs the encode_video example beside the logsql binary, which `cargo test` builds;
# images_interop.py reads camera images the official writers recorded and compares
# them with Pillow and numpy references; recover_interop.py kills the official MCAP, ROS1 bag
# and ROS 2 writers with SIGKILL mid-write, recovers with `logsql recover` and opens the result
# with the official mcap reader, CRCs validated, and the `--to bag` / `--to db3` results with
# rosbags' own ROS1 and ROS 2 readers; copy_bag_interop.py reads the bags and ROS 2 bag
# directories of `COPY ... TO 'y.bag'` / `STORED AS DB3` (from MCAP files the official writer
# and rosbag2 recorded) with rosbags' readers, message for message; mcp_interop.py drives `logsql mcp`
# and `logsql serve --mcp` with the official MCP Python SDK, pip `mcp`, over stdio and streamable
# HTTP, and with the MCP Inspector's CLI over both (npm,
# installed into LOGSQL_MCP_INSPECTOR, default ~/.cache/logsql-mcp-inspector); catalog_interop.py
# indexes a fleet the official writers wrote (benches/support/fleet.py), checks the catalog
# against the official readers, reads it with DuckDB and pyarrow, and indexes an S3 fleet
# into an S3 catalog on moto, counting requests; moments_interop.py compares intervals() with
# DuckDB's gaps-and-islands answer and reads the clips of `logsql clips` / `clip` with the
# official mcap reader and rosbags; transforms_interop.py compares transforms() and
# tf_lookup() on trees rosbags, mcap-protobuf-support and mcap wrote (and on real /tf
# recordings) with an independent NumPy/SciPy lookup, pip `scipy`; check_interop.py runs
# `logsql check` on recordings with known faults and reads its JUnit XML with pip
# `junitparser`; lerobot_interop.py, not in the default list,
# loads the LeRobot datasets of `COPY ... STORED AS LEROBOT` with the official `lerobot`
# package, which brings torch (several GB): it gets its own venv, LOGSQL_LEROBOT_VENV
# (default ~/.cache/logsql-lerobot-venv), and needs the gen_robot example beside the
# logsql binary, which `cargo test` builds).
# Prints "N passed, M failed" last; exits non-zero on any mismatch.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
bin=${LOGSQL_BIN:-$target_dir/debug/logsql}
venv=${LOGSQL_VENV:-$root/target/interop-venv}

if [[ ! -x "$bin" ]]; then
    echo "logsql binary not found at $bin: build it first (cargo build) or set LOGSQL_BIN" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import mcap, zstandard, lz4, rosbags" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcap>=1.2,<2" "rosbags>=0.11,<0.12"
fi
if ! "$venv/bin/python" -c "import cyber_record" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "cyber_record==0.1.13"
fi
if ! "$venv/bin/python" -c "import bosdyn.bddf" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "bosdyn-core>=5,<6"
fi
if [[ " ${LOGSQL_INTEROP_SUITES:-mcap_writer} " == *" mcap_writer "* ]] && ! "$venv/bin/python" -c "import mcap_ros1, mcap_ros2, mcap_protobuf" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcap-ros1-support>=0.7,<1" "mcap-ros2-support>=0.5,<1" "mcap-protobuf-support>=0.5,<1"
fi
if [[ " ${LOGSQL_INTEROP_SUITES:-images} " == *" images "* ]] && ! "$venv/bin/python" -c "import PIL, numpy, mcap_ros2, mcap_protobuf, foxglove_schemas_protobuf" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "Pillow>=10,<14" numpy "mcap-ros2-support>=0.5,<1" "mcap-protobuf-support>=0.5,<1" "foxglove-schemas-protobuf>=0.3,<1"
fi
if [[ " ${LOGSQL_INTEROP_SUITES:-s3 catalog} " =~ " "(s3|catalog)" " ]] && ! "$venv/bin/python" -c "import moto.server, boto3" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]>=5,<6" "boto3>=1.34,<2"
fi

if [[ " ${LOGSQL_INTEROP_SUITES:-serve} " == *" serve "* ]] && ! "$venv/bin/python" -c "import psycopg, pandas, sqlalchemy" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "psycopg[binary]>=3.2,<4" "pandas>=2,<3" "sqlalchemy>=2,<3"
fi
if [[ " ${LOGSQL_INTEROP_SUITES:-serve catalog} " =~ " "(serve|catalog)" " ]] && ! "$venv/bin/python" -c "import adbc_driver_flightsql, pyarrow.flight" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "adbc-driver-flightsql>=1,<2" "adbc-driver-manager>=1,<2" "pyarrow>=16"
fi

if [[ " ${LOGSQL_INTEROP_SUITES:-points} " == *" points "* ]] && ! "$venv/bin/python" -c "import mcap_ros2, mcap_protobuf, plyfile" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcap-ros2-support>=0.5,<1" "mcap-protobuf-support>=0.5,<1" "plyfile>=1,<2"
fi

if [[ " ${LOGSQL_INTEROP_SUITES:-video} " == *" video "* ]] && ! "$venv/bin/python" -c "import av, numpy" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "av>=12,<20" numpy
fi

if [[ " ${LOGSQL_INTEROP_SUITES:-asof json catalog moments} " =~ " "(asof|json|catalog|moments)" " ]] && ! "$venv/bin/python" -c "import duckdb, pyarrow" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "duckdb>=1.1,<2" "pyarrow>=16"
fi

if [[ " ${LOGSQL_INTEROP_SUITES:-transforms} " == *" transforms "* ]] && ! "$venv/bin/python" -c "import scipy, numpy, mcap_ros1, mcap_protobuf, foxglove_schemas_protobuf" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "scipy>=1.11,<2" numpy "mcap-ros1-support>=0.7,<1" "mcap-protobuf-support>=0.5,<1" "foxglove-schemas-protobuf>=0.3,<1"
fi

if [[ " ${LOGSQL_INTEROP_SUITES:-check} " == *" check "* ]] && ! "$venv/bin/python" -c "import junitparser, mcap" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "junitparser>=3,<6" "mcap>=1.2,<2"
fi

if [[ " ${LOGSQL_INTEROP_SUITES:-mcp} " == *" mcp "* ]] && ! "$venv/bin/python" -c "import mcp" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp>=1.9,<2"
fi

if [[ " ${LOGSQL_INTEROP_SUITES:-} " == *" lerobot "* ]]; then
    lerobot_venv=${LOGSQL_LEROBOT_VENV:-$HOME/.cache/logsql-lerobot-venv}
    if [[ ! -x "$lerobot_venv/bin/python" ]]; then
        python3 -m venv "$lerobot_venv"
    fi
    if ! "$lerobot_venv/bin/python" -c "import lerobot, mcap, mcap_ros2, mcap_protobuf, foxglove_schemas_protobuf, rosbags, PIL, av" 2>/dev/null; then
        "$lerobot_venv/bin/python" -m pip install --quiet --disable-pip-version-check "lerobot>=0.4,<0.5" "mcap>=1.2,<2" "rosbags>=0.11,<0.12" Pillow av \
            "mcap-ros2-support>=0.5,<1" "mcap-protobuf-support>=0.5,<1" "foxglove-schemas-protobuf>=0.3,<1"
    fi
fi

args=(--logsql "$bin")
if [[ -n "${LOGSQL_INTEROP_KEEP:-}" ]]; then
    args+=(--keep "$LOGSQL_INTEROP_KEEP")
fi
# Run every suite, then print the combined count last.
passed=0
failed=0
for suite in ${LOGSQL_INTEROP_SUITES:-mcap bag apollo carla bddf ros2 mcap_writer s3 asof json serve points video images recover copy_bag mcp catalog moments transforms check}; do
    log=$(mktemp)
    status=0
    python="$venv/bin/python"
    if [[ $suite == lerobot ]]; then
        # Offline: the dataset is loaded from its directory, never the Hub.
        python="$lerobot_venv/bin/python"
        export HF_HUB_OFFLINE=1
    fi
    "$python" "$root/tests/interop/${suite}_interop.py" "${args[@]}" >"$log" 2>&1 || status=$?
    # The suite's own closing line, labelled; everything else as is.
    sed -E "s/^([0-9]+ passed, [0-9]+ failed)$/${suite}: \\1/" "$log"
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)
    rm -f "$log"
    if [[ -z "$last" ]]; then
        echo "${suite}: the suite did not finish (exit $status)"
        failed=$((failed + 1))
        continue
    fi
    p=${last%% passed*}
    f=${last#*, }
    f=${f%% failed*}
    passed=$((passed + p))
    failed=$((failed + f))
    if [[ $status -ne 0 && $f -eq 0 ]]; then
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
