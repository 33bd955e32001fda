#!/usr/bin/env bash
# benches/ros2_compare.sh: the ROS 2 (.db3) speed and pushdown targets,
# measured with the logsql CLI against the Python `rosbags` reader on a ~200 MB bag.
#
#   bash benches/ros2_compare.sh
#   SKIP_BUILD=1 RUNS=10 bash benches/ros2_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql --example gen_db3      (skip with SKIP_BUILD=1)
#  2. generate the bag directory $BENCH_DATA/bench-db3/ if missing: examples/gen_db3.rs
#     --bench --seconds $DB3_SECONDS (350: ~200 MB) --yaml, one database bench_0.db3
#     (rosbag2's Iron+ layout, timestamp index, 4 KiB pages) with the benchmark's topics
#     (/imu 200 Hz, /camera/image/compressed 10 Hz ~50 kB, /tf 50 Hz, /chatter and
#     /odom_rate 10 Hz) and the directory's metadata.yaml
#  3. a venv ($BENCH_VENV, default target/bench-venv) with `pip install rosbags`
#  4. checks that rosbags and logsql agree on (count, payload bytes), full and windowed
#  5. times with hyperfine (--warmup 1 --runs RUNS; wall clock, whole processes, warm
#     page cache, start-up included on both sides; also the CPU time, user + system, which
#     moves less than the wall clock when other work shares the machine):
#       python  rosbags.rosbag2.Reader(dir).messages(): every message's raw bytes
#       logsql  SELECT count(*), sum(length(data)) FROM 'bench-db3/'
#       python  rosbags messages(/imu, 10% window: 45% to 55% of the span)
#       logsql  ... WHERE topic = '/imu' AND log_time BETWEEN <45%> AND <55%>
#       logsql  SELECT * FROM topics('bench-db3/')  and  logsql info (per-topic counts)
#       logsql  SELECT 1 (process start-up)
#  6. the scan metrics of both logsql scans (EXPLAIN ANALYZE: chunks, messages, bytes_read
#     = the pages SQLite read times the page size) against the database's page count
#  7. writes the results through benches/support/results.py ($BENCH_RESULTS/ros2.json),
#     printed as markdown too: ros2-detail (timings), ros2-scan (the scan metrics), ros2
#     (the table of docs/performance.md: this run's full scan in its page-cache state;
#     `bash benches/run.sh --update-docs ros2`), and the targets checked: full scan >= 5x
#     faster than rosbags; the 10% /imu window reads < 15% of the pages.
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), RUNS (5),
# SKIP_BUILD=1, BENCH_VENV (target/bench-venv), BENCH_DATA (target/bench-data),
# DB3_SECONDS (350; fewer for a quick run), CACHE=as-is (leave the bag's page cache as it
# is: by default the database is dropped from it and read once, as from disk, since the
# generator's 4 KiB SQLite writes leave it cached in 4 KiB folios, which alone makes
# logsql's scan about a third slower (0.051 s against 0.038 s); see settle_cache in benches/support/common.sh).
set -euo pipefail

# root, target, data, venv, logsql; log, needs, settle_cache, bench_venv, py_version,
# hyperfine_time, logsql_row, same, plan_metric, to_num, results_*.
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-5}
seconds=${DB3_SECONDS:-350}
gen=$target/release/examples/gen_db3
bag=$data/bench-db3
db=$bag/bench_0.db3
needs hyperfine bc
results_start ros2

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --bin logsql --example gen_db3"
    cargo build --release --bin logsql --example gen_db3 >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
if [[ ! -f $db || ! -f $bag/metadata.yaml ]]; then
    [[ -x "$gen" ]] || { echo "missing $gen to generate $bag (build it, or unset SKIP_BUILD)" >&2; exit 1; }
    log "generating $bag"
    mkdir -p "$bag"
    "$gen" "$db" --bench --seconds "$seconds" --yaml >&2
fi

bench_venv rosbags "rosbags>=0.11,<0.12"

settle_cache "$bag" "$logsql"
pyr=$root/benches/python_rosbags_read.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

read -r w0 w1 < <("$py" "$pyr" rosbag2 "$bag" --window)
q_full="SELECT count(*), sum(length(data)) FROM '$bag/'"
q_win="$q_full WHERE topic = '/imu' AND log_time BETWEEN to_timestamp_nanos($w0) AND to_timestamp_nanos($w1)"

log "checking that rosbags and logsql agree"
full=$(logsql_row "$q_full")
same "full scan" "$("$py" "$pyr" rosbag2 "$bag")" "$full"
win=$(logsql_row "$q_win")
same "/imu, 10% window" "$("$py" "$pyr" rosbag2 "$bag" /imu "$w0" "$w1")" "$win"
topics_n=$(logsql_row "SELECT sum(message_count) FROM topics('$bag/')")
read -r full_n _ <<<"$full"
same "topics() counts add up to the rows" "$full_n" "$topics_n"

read -r py_full py_full_sd py_full_min _ py_full_cpu < <(hyperfine_time py_full "$py" "$pyr" rosbag2 "$bag")
read -r ls_full ls_full_sd ls_full_min _ ls_full_cpu < <(hyperfine_time ls_full "$logsql" --format csv "$q_full")
read -r py_win py_win_sd py_win_min _ py_win_cpu < <(hyperfine_time py_win "$py" "$pyr" rosbag2 "$bag" /imu "$w0" "$w1")
read -r ls_win ls_win_sd ls_win_min _ ls_win_cpu < <(hyperfine_time ls_win "$logsql" --format csv "$q_win")
read -r ls_topics ls_topics_sd _ _ _ < <(hyperfine_time ls_topics "$logsql" --format csv "SELECT * FROM topics('$bag/')")
read -r ls_info ls_info_sd _ _ _ < <(hyperfine_time ls_info "$logsql" info "$db")
read -r ls_one ls_one_sd _ _ _ < <(hyperfine_time ls_startup "$logsql" --format csv "SELECT 1")

"$logsql" --format csv "EXPLAIN ANALYZE $q_full" >"$tmp/full.plan"
"$logsql" --format csv "EXPLAIN ANALYZE $q_win" >"$tmp/win.plan"
pragma() { "$py" -c "import sqlite3,sys; print(sqlite3.connect('file:'+sys.argv[1]+'?immutable=1', uri=True).execute('PRAGMA ' + sys.argv[2]).fetchone()[0])" "$db" "$1"; }
page_size=$(pragma page_size)
pages=$(pragma page_count)
full_bytes=$(plan_metric "$tmp/full.plan" bytes_read)
win_bytes=$(plan_metric "$tmp/win.plan" bytes_read)
if [[ -z "$full_bytes" || -z "$win_bytes" ]]; then
    echo "could not find bytes_read= in EXPLAIN ANALYZE output:" >&2
    cat "$tmp/full.plan" "$tmp/win.plan" >&2
    exit 1
fi
win_pages=$(( $(to_num "$win_bytes") / page_size ))
full_pages=$(( $(to_num "$full_bytes") / page_size ))
counts=$("$logsql" info "$db" | sed -n "s/^topic_counts: *//p")

ratio() { echo "scale=1; $1 / $2" | bc -l; }
pct() { echo "scale=1; 100 * $1 / $2" | bc -l; }
size_mb=$(( $(stat -L -c %s "$db") / 1000000 ))
if [[ "${CACHE:-settle}" == as-is ]]; then
    cache_state="as earlier use left it (\`CACHE=as-is\`)"
else
    cache_state="settled (read from disk)"
fi
setting="$(py_version rosbags); $runs runs each (hyperfine, 1 warm-up), mean ± stddev (min); page cache: $BENCH_CACHE_STATE"
{
    tsv "task ($size_mb MB .db3, $full_n messages, $pages pages of $page_size bytes)" "python rosbags" logsql speed-up "CPU (user+sys) rosbags / logsql"
    tsv "every message's raw bytes" "${py_full} ± ${py_full_sd} s (${py_full_min})" "${ls_full} ± ${ls_full_sd} s (${ls_full_min})" "$(ratio "$py_full" "$ls_full")x" "${py_full_cpu} s / ${ls_full_cpu} s"
    tsv "/imu in a 10% time window" "${py_win} ± ${py_win_sd} s (${py_win_min})" "${ls_win} ± ${ls_win_sd} s (${ls_win_min})" "$(ratio "$py_win" "$ls_win")x" "${py_win_cpu} s / ${ls_win_cpu} s"
    tsv "\`topics('bench-db3/')\` (counts from $counts)" "" "${ls_topics} ± ${ls_topics_sd} s" "" ""
    tsv "\`logsql info bench_0.db3\`" "" "${ls_info} ± ${ls_info_sd} s" "" ""
    tsv "\`SELECT 1\` (process start-up)" "" "${ls_one} ± ${ls_one_sd} s" "" ""
} | results_table ros2-detail "ROS 2 .db3 bag against python rosbags: $setting" -----
{
    tsv "logsql scan (EXPLAIN ANALYZE)" "chunks read / total" "messages read" "bytes read (SQLite pages x $page_size)" "pages read / $pages"
    tsv full "$(plan_metric "$tmp/full.plan" chunks_read) / $(plan_metric "$tmp/full.plan" chunks_total)" "$(plan_metric "$tmp/full.plan" messages_read)" "$full_bytes" "$full_pages ($(pct "$full_pages" "$pages")%)"
    tsv "/imu 10% window" "$(plan_metric "$tmp/win.plan" chunks_read) / $(plan_metric "$tmp/win.plan" chunks_total)" "$(plan_metric "$tmp/win.plan" messages_read)" "$win_bytes" "$win_pages ($(pct "$win_pages" "$pages")%)"
} | results_table ros2-scan "logsql's scan metrics of the .db3 bag (as EXPLAIN ANALYZE rounds them)" -----
# The table of docs/performance.md (## ROS 2 bags): one row, this run's page-cache state.
{
    tsv "page cache" "rosbags wall" "logsql wall" "wall speed-up" "CPU rosbags / logsql"
    tsv "$cache_state" "${py_full} ± ${py_full_sd} s (min ${py_full_min})" "${ls_full} ± ${ls_full_sd} s (min ${ls_full_min})" "$(ratio "$py_full" "$ls_full")x" "${py_full_cpu} s / ${ls_full_cpu} s"
} | results_table ros2 "ROS 2 .db3 full scan against $(py_version rosbags) in this run's page-cache state ($runs runs, hyperfine)" -rrrr
ok=0
if (($(echo "$py_full / $ls_full >= 5" | bc -l))); then
    results_note "target met: full scan >= 5x faster than rosbags ($(ratio "$py_full" "$ls_full")x)"
else
    results_note "TARGET MISSED: full scan $(ratio "$py_full" "$ls_full")x faster than rosbags (target 5x)"
    ok=1
fi
if ((win_pages * 100 < pages * 15)); then
    results_note "target met: the 10% /imu window reads $(pct "$win_pages" "$pages")% of the pages (< 15%)"
else
    results_note "TARGET MISSED: the 10% /imu window reads $(pct "$win_pages" "$pages")% of the pages (target < 15%)"
    ok=1
fi
results_done
exit $ok
