#!/usr/bin/env bash
# benches/bag_compare.sh: the ROS bag speed targets of the bag issue, measured
# with the logsql CLI against the python `rosbags` reader on ~200 MB bags.
#
#   bash benches/bag_compare.sh
#
# Steps:
#  1. cargo build --release --example gen_bag --bin logsql     (skip with SKIP_BUILD=1)
#  2. generate target/bench-data/bench-lz4.bag and bench-bz2.bag if missing
#     (examples/gen_bag.rs: 367 s of /imu 200 Hz, /odom 50 Hz, /tf 50 Hz,
#     /camera/image/compressed 10 Hz ~50 kB, /chatter 2 Hz on two connections,
#     /tf_static; 768 KiB chunks; the same content in both files)
#  3. a venv in target/bench-venv with `pip install rosbags`
#  4. check that rosbags and logsql agree on (count, payload bytes)
#  5. time RUNS runs each (min and median of wall clock, whole processes):
#       python  rosbags Reader.messages(), raw bytes only          (lz4)
#       logsql  SELECT count(*), sum(length(data))                  (lz4)
#       python  rosbags messages(/imu, 10% window)                   (lz4)
#       logsql  ... WHERE topic = '/imu' AND log_time BETWEEN ...   (lz4)
#       logsql  full scan of the bz2 bag, --target-partitions 1 (one thread
#               decompresses every chunk) and 2 (chunks decompressed in parallel)
#  6. writes the results through benches/support/results.py ($BENCH_RESULTS/bag.json:
#     bag-detail, and bag, the table of docs/performance.md; `bash benches/run.sh
#     --update-docs bag`), printed as markdown too, and the targets checked:
#       lz4 full scan >= 5x faster than rosbags; bz2 2 partitions >= 1.7x faster than 1.
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), RUNS (5), SKIP_BUILD=1,
# BENCH_VENV (target/bench-venv), CACHE=as-is (leave the bags' page cache as it is: by
# default each is dropped from it and read once, as from disk; see settle_cache in
# benches/support/common.sh). Warm page cache; the machine is shared, so the minimum
# is the figure to quote.
set -euo pipefail

# root, target, data, venv, logsql; log, settle_cache, bench_venv, results_*.
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-5}
gen=$target/release/examples/gen_bag
lz4=$data/bench-lz4.bag
bz2=$data/bench-bz2.bag
results_start bag

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --example gen_bag --bin logsql"
    cargo build --release --example gen_bag --bin logsql >&2
fi
mkdir -p "$data"
[[ -f $lz4 ]] || { log "generating $lz4"; "$gen" "$lz4" --compression lz4 >&2; }
[[ -f $bz2 ]] || { log "generating $bz2"; "$gen" "$bz2" --compression bz2 >&2; }
settle_cache "$lz4" "$bz2" "$logsql"

bench_venv rosbags "rosbags>=0.11,<0.12"

py=$root/benches/python_rosbags_read.py

# Prints "min median" (seconds) of RUNS runs of the command.
timeit() {
    local times=()
    for _ in $(seq "$runs"); do
        local s e
        s=$(date +%s.%N)
        "$@" >/dev/null
        e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc -l)")
    done
    printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f %.3f\n", a[1], a[int((NR+1)/2)]}'
}

q() { "$logsql" "$@" --format csv | tail -n 1 | tr ',' ' '; }

read -r w0 w1 < <("$venv/bin/python" "$py" rosbag1 "$lz4" --window)
full_sql="SELECT count(*), sum(length(data)) FROM '$lz4'"
win_sql="SELECT count(*), sum(length(data)) FROM '$lz4' WHERE topic = '/imu' AND log_time BETWEEN to_timestamp_nanos($w0) AND to_timestamp_nanos($w1)"
bz2_sql="SELECT count(*), sum(length(data)) FROM '$bz2'"

log "checking that rosbags and logsql agree"
a=$("$venv/bin/python" "$py" rosbag1 "$lz4"); b=$(q "$full_sql")
[[ "$a" == "$b" ]] || { echo "full scan: rosbags $a, logsql $b" >&2; exit 1; }
a=$("$venv/bin/python" "$py" rosbag1 "$lz4" /imu "$w0" "$w1"); b=$(q "$win_sql")
[[ "$a" == "$b" ]] || { echo "window: rosbags $a, logsql $b" >&2; exit 1; }
a=$(q "$bz2_sql"); b=$(q "$full_sql")
[[ "$a" == "$b" ]] || { echo "bz2 vs lz4: $a vs $b" >&2; exit 1; }
log "agree: $b (count, payload bytes); window /imu $(q "$win_sql")"

log "timing ($runs runs each)"
read -r py_full py_full_med < <(timeit "$venv/bin/python" "$py" rosbag1 "$lz4")
read -r ls_full ls_full_med < <(timeit "$logsql" "$full_sql" --format csv)
read -r py_win py_win_med < <(timeit "$venv/bin/python" "$py" rosbag1 "$lz4" /imu "$w0" "$w1")
read -r ls_win ls_win_med < <(timeit "$logsql" "$win_sql" --format csv)
read -r bz_1 bz_1_med < <(timeit "$logsql" --target-partitions 1 "$bz2_sql" --format csv)
read -r bz_2 bz_2_med < <(timeit "$logsql" --target-partitions 2 "$bz2_sql" --format csv)

ratio() { echo "scale=1; $1 / $2" | bc -l; }
r2() { printf '%.2f' "$1"; }
{
    tsv "task ($(du -m "$lz4" | cut -f1) MB bag, 114,505 messages)" "python rosbags" logsql speed-up
    tsv "lz4: every message's raw bytes" "${py_full} s (median ${py_full_med})" "${ls_full} s (median ${ls_full_med})" "$(ratio "$py_full" "$ls_full")x"
    tsv "lz4: /imu in a 10% time window" "${py_win} s (median ${py_win_med})" "${ls_win} s (median ${ls_win_med})" "$(ratio "$py_win" "$ls_win")x"
    tsv "bz2: every message, 1 partition (one thread decompresses every chunk)" "" "${bz_1} s (median ${bz_1_med})" ""
    tsv "bz2: every message, 2 partitions (chunks decompressed in parallel)" "" "${bz_2} s (median ${bz_2_med})" "$(ratio "$bz_1" "$bz_2")x vs 1 partition"
} | results_table bag-detail "ROS1 bags against python rosbags: min and median of $runs runs (page cache: $BENCH_CACHE_STATE)" "----"
# The table of docs/performance.md (## ROS1 bags), from this run's minima.
{
    tsv what "python \`rosbags\`" logsql ""
    tsv "lz4 bag, every message's raw bytes" "$(r2 "$py_full") s" "$(r2 "$ls_full") s" "$(ratio "$py_full" "$ls_full")x"
    tsv "lz4 bag, /imu in a 10% window" "$(r2 "$py_win") s" "$(r2 "$ls_win") s" "$(ratio "$py_win" "$ls_win")x"
    tsv "bz2 bag, full scan on 1 partition vs 2" "" "$(printf '%.1f' "$bz_1") s vs $(printf '%.1f' "$bz_2") s" "$(ratio "$bz_1" "$bz_2")x"
} | results_table bag "ROS1 bags against python rosbags $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("rosbags"))'): minimum of $runs runs" "-rrr"
ok=0
if (( $(echo "$py_full / $ls_full >= 5" | bc -l) )); then results_note "target met: lz4 full scan >= 5x faster than rosbags"; else results_note "TARGET MISSED: lz4 full scan < 5x faster than rosbags"; ok=1; fi
if (( $(echo "$bz_1 / $bz_2 >= 1.7" | bc -l) )); then results_note "target met: bz2 on 2 partitions >= 1.7x faster than one thread"; else results_note "TARGET MISSED: bz2 on 2 partitions < 1.7x faster than one thread"; ok=1; fi
results_done
exit $ok
