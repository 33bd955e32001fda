#!/usr/bin/env bash
# benches/mcap_write_compare.sh: the MCAP writer's speed targets,
# measured with the logsql CLI against the official Python libraries
# (`rosbags` reader + `mcap` writer) on the ~200 MB benchmark files.
#
#   bash benches/mcap_write_compare.sh
#   SKIP_BUILD=1 RUNS=10 bash benches/mcap_write_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql --example gen_bag --example gen_mcap
#     (skip with SKIP_BUILD=1; then the binaries must exist)
#  2. generate in $BENCH_DATA (target/bench-data) if missing:
#       bench-lz4.bag  gen_bag --compression lz4 (367 s, 114,505 messages, ~196 MB;
#                      the bag of benches/bag_compare.sh)
#       bench.mcap     gen_mcap (376 s, 98,136 messages, ~194 MB, zstd; the file of
#                      benches/compare.sh)
#  3. a venv ($BENCH_VENV, default target/bench-venv) with rosbags, mcap and zstandard
#  4. checks the outputs: the Python `mcap` reader reads logsql's files and Python's
#     with the same (count, payload bytes, topics), equal to logsql's count of the input
#  5. times with hyperfine (--warmup 1 --runs RUNS; wall clock, whole processes, warm
#     page cache, outputs written to $BENCH_OUT, default a temporary directory under /tmp):
#     (a) the bag converted to a zstd MCAP (1 MiB chunks, default level, summary and indexes):
#           python  benches/python_mcap_write.py bag2mcap (rosbags.rosbag1.Reader ->
#                   mcap.writer.Writer, CompressionType.ZSTD)
#           logsql  logsql export bench-lz4.bag out.mcap
#     (b) /imu and /camera/compressed in a 10% window (45% to 55% of the span) of
#         bench.mcap into a new MCAP:
#           python  python_mcap_write.py window (mcap reader iter_messages(topics,
#                   starting_at, ending_before, log-time order) -> mcap writer)
#           logsql  logsql export bench.mcap out.mcap --topic /imu --topic /camera/compressed
#                   --start <45%>ns --end <55%>ns
#     (c) the conversion's baseline, "a full scan plus zstd compression of the same bytes":
#           logsql  SELECT count(*), sum(length(data)) FROM 'bench-lz4.bag'  (the scan)
#           zstd    zstd -3 -T1 over a file of every payload of the bag concatenated (the
#                   same bytes the MCAP's chunks hold, minus record headers; level 3 is
#                   the level the `mcap` crate and the Python writer use by default; one
#                   thread; the file read from the page cache, output to /dev/null)
#         the baseline is the sum of the two means
#       logsql  SELECT 1 (process start-up)
#  6. writes the results through benches/support/results.py ($BENCH_RESULTS/mcap-write.json),
#     printed as markdown too: mcap-write-detail (timings and output sizes),
#     mcap-write-baseline (c), and mcap-write (the table of docs/performance.md; `bash
#     benches/run.sh --update-docs mcap-write`), and the targets checked: (a) and (b) logsql
#     >= 10x faster than Python; (a) <= 2x the baseline (c).
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), RUNS (5),
# SKIP_BUILD=1, BENCH_VENV (target/bench-venv), BENCH_DATA (target/bench-data),
# BENCH_OUT (where the outputs go; default a temporary directory, deleted at the end),
# CACHE=as-is (leave the inputs' page cache as it is: by default each is dropped from it
# and read once, as from disk; see settle_cache in benches/support/common.sh).
set -euo pipefail

# root, target, data, venv, logsql; log, gen, needs, settle_cache, bench_venv, py_version,
# hyperfine_time, logsql_row, same, results_*.
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-5}
pyw=$root/benches/python_mcap_write.py
bag=$data/bench-lz4.bag
mcap=$data/bench.mcap
needs hyperfine zstd bc
results_start mcap-write

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --bin logsql --example gen_bag --example gen_mcap"
    cargo build --release --bin logsql --example gen_bag --example gen_mcap >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
mkdir -p "$data"
[[ -f $bag ]] || gen gen_bag "$bag" --compression lz4
[[ -f $mcap ]] || gen gen_mcap "$mcap"
settle_cache "$bag" "$mcap" "$logsql"

bench_venv "rosbags, mcap, zstandard" "rosbags>=0.11,<0.12" "mcap>=1.2,<2" zstandard

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${BENCH_OUT:-$tmp}
mkdir -p "$out"

read -r w0 w1 < <("$py" "$pyw" bounds "$mcap" 10)
topics=/imu,/camera/compressed
export_win=("$logsql" export "$mcap" "$out/ls_win.mcap" --topic /imu --topic /camera/compressed --start "${w0}ns" --end "${w1}ns")

log "checking the outputs"
"$py" "$pyw" bag2mcap "$bag" "$out/py_bag.mcap" >/dev/null
"$logsql" export "$bag" "$out/ls_bag.mcap" >&2
py_bag=$("$py" "$pyw" read "$out/py_bag.mcap")
ls_bag=$("$py" "$pyw" read "$out/ls_bag.mcap")
same "bag -> MCAP: python mcap reader on python's and logsql's output" "$py_bag" "$ls_bag"
read -r n_bag b_bag _ <<<"$ls_bag"
same "bag -> MCAP: logsql's count of the bag" "$(logsql_row "SELECT count(*), sum(length(data)) FROM '$bag'")" "$n_bag $b_bag"
same "bag -> MCAP: logsql reads its own output" "$(logsql_row "SELECT count(*), sum(length(data)) FROM '$out/ls_bag.mcap'")" "$n_bag $b_bag"
"$py" "$pyw" window "$mcap" "$out/py_win.mcap" "$topics" "$w0" "$w1" >/dev/null
"${export_win[@]}" >&2
py_win=$("$py" "$pyw" read "$out/py_win.mcap")
ls_win=$("$py" "$pyw" read "$out/ls_win.mcap")
same "window -> MCAP: python mcap reader on python's and logsql's output" "$py_win" "$ls_win"
read -r n_win b_win _ <<<"$ls_win"
same "window -> MCAP: logsql's count of the window" \
    "$(logsql_row "SELECT count(*), sum(length(data)) FROM '$mcap' WHERE topic IN ('/imu', '/camera/compressed') AND log_time >= to_timestamp_nanos($w0) AND log_time < to_timestamp_nanos($w1)")" \
    "$n_win $b_win"
"$py" "$pyw" payloads "$bag" "$out/payloads.bin"
same "payload file size" "$(stat -c %s "$out/payloads.bin")" "$b_bag"
sizes="python $(stat -c %s "$out/py_bag.mcap") bytes, logsql $(stat -c %s "$out/ls_bag.mcap") bytes"
win_sizes="python $(stat -c %s "$out/py_win.mcap") bytes, logsql $(stat -c %s "$out/ls_win.mcap") bytes"
zstd_size=$(zstd -q -3 -T1 -c "$out/payloads.bin" | wc -c)

read -r py_a py_a_sd py_a_min _ < <(hyperfine_time py_bag "$py" "$pyw" bag2mcap "$bag" "$out/py_bag.mcap")
read -r ls_a ls_a_sd ls_a_min _ < <(hyperfine_time ls_bag "$logsql" export "$bag" "$out/ls_bag.mcap")
read -r py_b py_b_sd py_b_min _ < <(hyperfine_time py_win "$py" "$pyw" window "$mcap" "$out/py_win.mcap" "$topics" "$w0" "$w1")
read -r ls_b ls_b_sd ls_b_min _ < <(hyperfine_time ls_win "${export_win[@]}")
read -r scan scan_sd scan_min _ < <(hyperfine_time ls_scan "$logsql" --format csv "SELECT count(*), sum(length(data)) FROM '$bag'")
read -r zs zs_sd zs_min _ < <(hyperfine_time zstd bash -c "zstd -q -3 -T1 -c '$out/payloads.bin' >/dev/null")
read -r one one_sd _ < <(hyperfine_time ls_startup "$logsql" --format csv "SELECT 1")

ratio() { echo "scale=1; $1 / $2" | bc -l; }
ratio2() { echo "scale=2; $1 / $2" | bc -l; }
base=$(echo "$scan + $zs" | bc -l)
versions=$(py_version rosbags mcap zstandard)
bag_mb=$(du -m "$bag" | cut -f1)
mcap_mb=$(du -m "$mcap" | cut -f1)
# count N: N with thousands separators.
count() { python3 -c 'import sys; print(f"{int(sys.argv[1]):,}")' "$1"; }
{
    tsv task "python (rosbags / mcap)" logsql speed-up
    tsv "(a) $bag_mb MB lz4 bag -> zstd MCAP ($n_bag messages; $sizes)" "${py_a} ± ${py_a_sd} s (${py_a_min})" "${ls_a} ± ${ls_a_sd} s (${ls_a_min})" "$(ratio "$py_a" "$ls_a")x"
    tsv "(b) 10% window of /imu + /camera/compressed of the $mcap_mb MB MCAP -> MCAP ($n_win messages; $win_sizes)" "${py_b} ± ${py_b_sd} s (${py_b_min})" "${ls_b} ± ${ls_b_sd} s (${ls_b_min})" "$(ratio "$py_b" "$ls_b")x"
} | results_table mcap-write-detail "MCAP export against the Python libraries ($versions): $runs runs each (hyperfine, 1 warm-up), mean ± stddev (min); page cache: $BENCH_CACHE_STATE" ----
{
    tsv "(c) baseline of (a)" time
    tsv "logsql full scan of the bag (\`count(*), sum(length(data))\`)" "${scan} ± ${scan_sd} s"
    tsv "\`zstd -3 -T1\` of the $b_bag payload bytes (to $zstd_size bytes)" "${zs} ± ${zs_sd} s"
    tsv "baseline: scan + zstd" "$(printf '%.3f' "$base") s"
    tsv "logsql export (a)" "${ls_a} s = $(ratio2 "$ls_a" "$base")x the baseline"
    tsv "\`SELECT 1\` (logsql start-up)" "${one} ± ${one_sd} s"
} | results_table mcap-write-baseline "The baseline of (a): a full scan plus zstd of the same bytes (means of $runs runs)" --
# The table of docs/performance.md (## Writing MCAP).
{
    tsv task "python (rosbags / mcap)" logsql speed-up
    tsv "(a) $bag_mb MB lz4 bag -> zstd MCAP ($(count "$n_bag") messages)" "${py_a} ± ${py_a_sd} s" "${ls_a} ± ${ls_a_sd} s" "**$(ratio "$py_a" "$ls_a")x**"
    tsv "(b) 10% window of /imu + /camera/compressed of the $mcap_mb MB MCAP -> MCAP ($(count "$n_win") messages)" "${py_b} ± ${py_b_sd} s" "${ls_b} ± ${ls_b_sd} s" "**$(ratio "$py_b" "$ls_b")x**"
    tsv "(c) baseline: logsql full scan of the bag ${scan} s + \`zstd -3 -T1\` of the payloads ${zs} s = $(printf '%.3f' "$base") s" "" "export ${ls_a} s" "**$(printf '%.2f' "$(ratio2 "$ls_a" "$base")")x** of the baseline"
} | results_table mcap-write "MCAP export against the Python rosbags + mcap writer ($versions)" -rrr
check "(a) logsql >= 10x faster than python" "$(ratio2 "$py_a" "$ls_a")" ">=" 10
check "(b) logsql >= 10x faster than python" "$(ratio2 "$py_b" "$ls_b")" ">=" 10
check "(a) within 2x of a full scan plus zstd of the same bytes" "$(ratio2 "$ls_a" "$base")" "<=" 2
results_done
exit $ok
