#!/usr/bin/env bash
# benches/run.sh: the one entry point of logsql's benchmarks. It runs every
# comparison in benches/ in turn, as whole processes on the ~200 MB benchmark
# files each script generates (target/bench-data), and keeps each script's
# report (markdown tables) in $BENCH_RESULTS, from which docs/performance.md's
# tables are taken.
#
#   bash benches/run.sh                    # every comparison (about an hour on 2 cores)
#   bash benches/run.sh raw compare        # only these (names below)
#
# Comparisons (each script's header says what it times and against what):
#   compare       MCAP: the official Python `mcap` reader and Rust `mcap` crate   compare.sh
#   raw           every format's full scan against a hand-written raw reader      raw_compare.sh
#   bag           ROS1 bags against `rosbags`                                      bag_compare.sh
#   ros2          ROS 2 .db3 bags against `rosbags`                                ros2_compare.sh
#   formats       Apollo, BDDF and CARLA against their Python readers              formats_compare.sh
#   mcap-write    MCAP export against the Python `rosbags` + `mcap` writer         mcap_write_compare.sh
#   decode        the payload decoders against the official Python decoders       decode_compare.sh
#   asof          ASOF JOIN against DuckDB                                         asof_compare.py
#   memory        peak RSS of full scans of ~2 GB files                            memory.sh
#   distributed   `logsql worker` scale-out on pinned cores                        distributed_pinned.sh
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), RUNS,
# SKIP_BUILD=1 (as each script takes them), BENCH_RESULTS (default
# target/bench-results). A machine busy with other work gives noisy figures:
# run it idle.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/logsql-target}"
results="${BENCH_RESULTS:-target/bench-results}"
mkdir -p "$results"

all=(compare raw bag ros2 formats mcap-write decode asof memory distributed)
selected=("$@")
[[ ${#selected[@]} -eq 0 ]] && selected=("${all[@]}")

run_one() {
    case "$1" in
    compare) bash benches/compare.sh ;;
    raw) bash benches/raw_compare.sh ;;
    bag) bash benches/bag_compare.sh ;;
    ros2) bash benches/ros2_compare.sh ;;
    formats) bash benches/formats_compare.sh ;;
    mcap-write) bash benches/mcap_write_compare.sh ;;
    decode) bash benches/decode_compare.sh ;;
    asof) python3 benches/asof_compare.py ;;
    memory) bash benches/memory.sh ;;
    distributed) bash benches/distributed_pinned.sh ;;
    *)
        echo "unknown comparison '$1' (one of: ${all[*]})" >&2
        return 2
        ;;
    esac
}

failed=()
for name in "${selected[@]}"; do
    echo "== $name" >&2
    if run_one "$name" | tee "$results/$name.md"; then
        :
    else
        failed+=("$name")
    fi
done
echo "== reports in $results/" >&2
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "failed: ${failed[*]}" >&2
    exit 1
fi
