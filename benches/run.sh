#!/usr/bin/env bash
# benches/run.sh: the one entry point of logsql's benchmarks. It runs the
# comparisons in benches/ in turn, as whole processes on the ~200 MB benchmark
# files each script generates (target/bench-data). Each comparison writes its
# results as data, $BENCH_RESULTS/NAME.json (tables of figures, the machine's
# facts and the command; benches/support/results.py), and prints the same
# tables as markdown, kept as $BENCH_RESULTS/NAME.md.
#
#   bash benches/run.sh                    # every comparison (about an hour on 2 cores)
#   bash benches/run.sh raw compare        # only these (names below)
#   bash benches/run.sh --update-docs raw  # and then the figures of docs/performance.md:
#                                          # NAME.json copied to benches/results/, and
#                                          # benches/support/report.py regenerates the doc
#
# docs/performance.md's figure tables are generated from benches/results/*.json
# (`python3 benches/support/report.py`; `--check` compares). --update-docs (or
# UPDATE_DOCS=1) replaces the committed results of each comparison that
# completed (a missed target is a result; a script that stopped half-way leaves
# no NAME.json), then regenerates the doc: review `git diff` and commit the data
# and the doc together. The files of benches/results/ that no comparison writes
# (targets, mcap-inprocess, newest, info, distributed-example) are edited by hand.
# Every comparison below writes its results file (none prints markdown only).
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
#   media         camera thumbnails and video against mcap + Pillow + PyAV         media_compare.sh
#   serve         psql first-row latency, Flight SQL full scans                    serve_compare.sh
#   recover       recover of a damaged ~1 GB MCAP: time against scan + write, RSS  recover_compare.sh
#   lerobot       a recording to a LeRobot dataset against LeRobot's own writer     lerobot_compare.sh
#   catalog       logsql index and fleet questions on 10,000 recordings             catalog_compare.sh
#   transforms    tf_lookup lookups per second; logsql check over 100 recordings    transforms_compare.py
#   clip          a 10 s clip of a 1 GB and a 20 GB MCAP against Python mcap; intervals clip_compare.sh
#   mcp           an agent's first answer from a cold MCP server, against mcap-mcp-server mcp_compare.sh
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), RUNS,
# SKIP_BUILD=1 (as each script takes them), BENCH_RESULTS (default
# target/bench-results), UPDATE_DOCS=1 (as --update-docs). A machine busy with
# other work gives noisy figures: run it idle.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/logsql-target}"
export BENCH_RESULTS="${BENCH_RESULTS:-target/bench-results}"
results=$BENCH_RESULTS
mkdir -p "$results"

all=(compare raw bag ros2 formats mcap-write decode asof memory distributed media recover serve lerobot catalog transforms clip mcp)
update_docs=${UPDATE_DOCS:-}
selected=()
for arg in "$@"; do
    case $arg in
    --update-docs) update_docs=1 ;;
    -*) echo "unknown option '$arg' (--update-docs)" >&2; exit 2 ;;
    *) selected+=("$arg") ;;
    esac
done
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
    media) bash benches/media_compare.sh ;;
    recover) bash benches/recover_compare.sh ;;
    serve) bash benches/serve_compare.sh ;;
    lerobot) bash benches/lerobot_compare.sh ;;
    catalog) bash benches/catalog_compare.sh ;;
    transforms) "${LOGSQL_BENCH_PYTHON:-python3}" benches/transforms_compare.py ;;
    clip) bash benches/clip_compare.sh ;;
    mcp) bash benches/mcp_compare.sh ;;
    *)
        echo "unknown comparison '$1' (one of: ${all[*]})" >&2
        return 2
        ;;
    esac
}

failed=()
complete=()
for name in "${selected[@]}"; do
    echo "== $name" >&2
    rm -f "$results/$name.json" "$results/$name.json.partial"
    if BENCH_COMMAND="bash benches/run.sh $name" run_one "$name" | tee "$results/$name.md"; then
        :
    else
        failed+=("$name")
    fi
    if [[ -f "$results/$name.json" ]]; then
        complete+=("$name")
    else
        echo "== $name wrote no $results/$name.json (it stopped half-way)" >&2
    fi
done
echo "== reports in $results/: NAME.json (data), NAME.md" >&2
if [[ -n "$update_docs" ]]; then
    for name in "${complete[@]}"; do
        cp "$results/$name.json" "benches/results/$name.json"
    done
    echo "== benches/results/: ${complete[*]:-nothing} updated" >&2
    python3 benches/support/report.py
fi
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "failed (or a target missed): ${failed[*]}" >&2
    exit 1
fi
