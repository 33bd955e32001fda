#!/usr/bin/env bash
# benches/compare.sh: a reproducible comparison of the logsql CLI with the official
# Python MCAP reader on the ~200 MB benchmark file, plus logsql's scan metrics and
# peak memory. (The comparison with the official Rust `mcap` crate is the criterion
# bench: `cargo bench --bench scan`.)
#
#   bash benches/compare.sh
#
# Steps:
#  1. cargo build --release --examples --bins          (skip with SKIP_BUILD=1)
#  2. generate target/bench-data/bench.mcap if missing  (examples/gen_mcap.rs: 376 s of
#     /imu 200 Hz, /camera/compressed 10 Hz ~50 kB, /tf 50 Hz, /diagnostics 1 Hz; zstd, 1 MiB chunks)
#  3. a venv in target/bench-venv with `pip install mcap` (the official Python reader)
#  4. check that Python and logsql agree on (count, payload bytes), full and windowed
#  5. time, with hyperfine if installed (else RUNS runs of /usr/bin/time, mean and min):
#       python  make_reader(f).iter_messages()                 (log-time order, indexed)
#       python  iter_messages(log_time_order=False)             (file order)
#       python  iter_messages(topics=['/imu'], 10% window)
#       rust    the official `mcap` crate's IndexedReader, one thread (benches/baselines/mcap.rs)
#       logsql  SELECT count(*), sum(length(data)) FROM 'bench.mcap'
#       logsql  ... WHERE topic = '/imu' AND log_time BETWEEN <45% of span> AND <55% of span>
#  6. peak RSS (/usr/bin/time -v) of the logsql full scan, and the scan metrics
#     (chunks_total, chunks_read, bytes_read) of both logsql queries from EXPLAIN ANALYZE
#  7. writes the results (benches/support/results.py) to $BENCH_RESULTS/compare.json
#     and prints them as markdown: timings, metrics, the requirements checked, and the
#     table of docs/performance.md (id mcap-python). `bash benches/run.sh --update-docs
#     compare` regenerates the doc's figures from them.
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), LOGSQL_BENCH_FILE (default
# target/bench-data/bench.mcap), LOGSQL_BENCH_SECONDS (376), RUNS (10), SKIP_BUILD=1,
# BENCH_VENV (target/bench-venv), CACHE=as-is (leave the file's page cache as it is: by
# default it is dropped from it and read once, as from disk; see settle_cache in
# benches/support/common.sh). Timings are warm page cache, wall clock, whole
# processes (startup included on both sides).
set -euo pipefail

# root, target, data, venv, logsql; log, settle_cache, bench_venv, logsql_row, results_*.
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
file=${LOGSQL_BENCH_FILE:-$data/bench.mcap}
runs=${RUNS:-10}
gen=$target/release/examples/gen_mcap
baseline=$target/release/examples/mcap_baseline
results_start compare

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --examples --bins"
    cargo build --release --examples --bins >&2
fi
for b in "$logsql" "$gen" "$baseline"; do
    [[ -x "$b" ]] || { echo "missing $b (build first, or unset SKIP_BUILD)" >&2; exit 1; }
done

if [[ ! -f "$file" ]]; then
    log "generating $file"
    "$gen" "$file" --seconds "${LOGSQL_BENCH_SECONDS:-376}" >&2
fi

bench_venv mcap "mcap>=1.2,<2"
pyread=$root/benches/python_read.py
mcap_version=$("$py" -c "from importlib.metadata import version; print(version('mcap'))")

read -r w0 w1 < <("$py" "$pyread" "$file" --window 10)
sql_file=${file//\'/\'\'}
q_full="SELECT count(*), sum(length(data)) FROM '$sql_file'"
q_window="SELECT count(*), sum(length(data)) FROM '$sql_file' WHERE topic = '/imu' AND log_time BETWEEN to_timestamp_nanos($w0) AND to_timestamp_nanos($w1)"

log "checking that Python and logsql agree"
py_full=$("$py" "$pyread" "$file")
ls_full=$(logsql_row "$q_full")
py_window=$("$py" "$pyread" "$file" --topic /imu --start "$w0" --end "$w1")
ls_window=$(logsql_row "$q_window")
rs_full=$("$baseline" "$file")
if [[ "$py_full" != "$ls_full" || "$py_full" != "$rs_full" || "$py_window" != "$ls_window" ]]; then
    echo "MISMATCH: full python='$py_full' logsql='$ls_full' rust='$rs_full'; window python='$py_window' logsql='$ls_window'" >&2
    exit 1
fi

settle_cache "$file" "$logsql" "$baseline"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# time NAME CMD...: prints "mean stddev min" (seconds) of RUNS runs of CMD.
time_cmd() {
    local name=$1
    shift
    local cmd
    cmd=$(printf '%q ' "$@")
    log "timing $name"
    if command -v hyperfine >/dev/null; then
        hyperfine --shell bash --warmup 1 --runs "$runs" --style none --export-json "$tmp/$name.json" "$cmd" >&2
        "$py" -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(r['mean'], r['stddev'] or 0, r['min'], r['user'] + r['system'])" "$tmp/$name.json"
    else
        "$@" >/dev/null # warm-up
        : >"$tmp/$name.times"
        for _ in $(seq "$runs"); do
            /usr/bin/time -f %e -a -o "$tmp/$name.times" "$@" >/dev/null
        done
        "$py" -c "
import statistics, sys
t = [float(x) for x in open(sys.argv[1]) if x.strip()]
print(statistics.mean(t), statistics.stdev(t) if len(t) > 1 else 0, min(t), 0)" "$tmp/$name.times"
    fi
}

read -r py_full_t py_full_sd py_full_min py_full_cpu < <(time_cmd py_full "$py" "$pyread" "$file")
read -r py_fo_t py_fo_sd py_fo_min py_fo_cpu < <(time_cmd py_file_order "$py" "$pyread" "$file" --file-order)
read -r py_win_t py_win_sd py_win_min py_win_cpu < <(time_cmd py_window "$py" "$pyread" "$file" --topic /imu --start "$w0" --end "$w1")
read -r rs_full_t rs_full_sd rs_full_min rs_full_cpu < <(time_cmd rust_full "$baseline" "$file")
read -r ls_full_t ls_full_sd ls_full_min ls_full_cpu < <(time_cmd logsql_full "$logsql" --format csv "$q_full")
read -r ls_win_t ls_win_sd ls_win_min ls_win_cpu < <(time_cmd logsql_window "$logsql" --format csv "$q_window")
read -r ls_one_t ls_one_sd ls_one_min ls_one_cpu < <(time_cmd logsql_startup "$logsql" --format csv "SELECT 1")

log "peak RSS"
rss_kb() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}'; }
ls_full_rss=$(rss_kb "$logsql" --format csv "$q_full")
ls_win_rss=$(rss_kb "$logsql" --format csv "$q_window")
py_full_rss=$(rss_kb "$py" "$pyread" "$file")

log "scan metrics (EXPLAIN ANALYZE)"
# metric PLANFILE NAME: the value on the scan (DataSourceExec) line, as a number
# (EXPLAIN ANALYZE prints counts rounded with K/M/G suffixes, e.g. bytes_read=192.2 M).
metric() {
    grep 'DataSourceExec' "$1" | grep -o "$2=[0-9.]* \?[KMGT]\?" | head -n 1 | cut -d= -f2 |
        "$py" -c "
import sys
v = sys.stdin.read().split()
if v:
    print(round(float(v[0]) * {'': 1, 'K': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12}[v[1] if len(v) > 1 else '']))"
}
"$logsql" --format csv "EXPLAIN ANALYZE $q_full" >"$tmp/full.plan"
"$logsql" --format csv "EXPLAIN ANALYZE $q_window" >"$tmp/window.plan"
full_chunks_total=$(metric "$tmp/full.plan" chunks_total)
full_chunks_read=$(metric "$tmp/full.plan" chunks_read)
full_bytes=$(metric "$tmp/full.plan" bytes_read)
win_chunks_total=$(metric "$tmp/window.plan" chunks_total)
win_chunks_read=$(metric "$tmp/window.plan" chunks_read)
win_bytes=$(metric "$tmp/window.plan" bytes_read)
if [[ -z "$full_bytes" || -z "$win_bytes" ]]; then
    echo "could not find bytes_read= in EXPLAIN ANALYZE output:" >&2
    cat "$tmp/full.plan" "$tmp/window.plan" >&2
    exit 1
fi

file_bytes=$(stat -c %s "$file")
read -r n_msgs n_bytes <<<"$py_full"
read -r n_win _ <<<"$py_window"

"$py" - <<EOF
import os, sys
sys.path.insert(0, "$root/benches/support")
from results import Results
res = Results.resume(os.environ["BENCH_NAME"])
f = lambda x: float(x)
rows = [
    ("python mcap $mcap_version: all messages, log-time order", "$py_full_t", "$py_full_sd", "$py_full_min", "$py_full_cpu", "$py_full_rss"),
    ("python mcap $mcap_version: all messages, file order", "$py_fo_t", "$py_fo_sd", "$py_fo_min", "$py_fo_cpu", ""),
    ("python mcap $mcap_version: /imu, 10% window", "$py_win_t", "$py_win_sd", "$py_win_min", "$py_win_cpu", ""),
    ("rust mcap crate (examples/mcap_baseline): IndexedReader, one thread", "$rs_full_t", "$rs_full_sd", "$rs_full_min", "$rs_full_cpu", ""),
    ("logsql: SELECT count(*), sum(length(data))", "$ls_full_t", "$ls_full_sd", "$ls_full_min", "$ls_full_cpu", "$ls_full_rss"),
    ("logsql: /imu, 10% window", "$ls_win_t", "$ls_win_sd", "$ls_win_min", "$ls_win_cpu", "$ls_win_rss"),
    ("logsql: SELECT 1 (process start-up, for reference)", "$ls_one_t", "$ls_one_sd", "$ls_one_min", "$ls_one_cpu", ""),
]
mb = lambda kb: f"{int(kb) / 1024:.0f}" if kb else ""
res.table("compare-timings",
    "File: $file: $file_bytes bytes, $n_msgs messages, $n_bytes payload bytes; window: $n_win /imu messages. "
    "Runs: $runs per command, warm page cache ($BENCH_CACHE_STATE), $(nproc) cores; " + ("hyperfine" if "$(command -v hyperfine || true)" else "/usr/bin/time loop"),
    ["command", "mean (s)", "stddev (s)", "min (s)", "CPU user+sys (s)", "peak RSS (MB)"],
    [[name, f"{f(mean):.3f}", f"{f(sd):.3f}", f"{f(mn):.3f}", f"{f(cpu):.3f}", mb(rss)] for name, mean, sd, mn, cpu, rss in rows],
    "-rrrrr")
res.table("compare-metrics",
    "logsql scan metrics (bytes as EXPLAIN ANALYZE rounds them; cargo bench --bench scan prints exact values)",
    ["logsql scan metrics", "chunks_read / chunks_total", "bytes_read"],
    [["full scan", "$full_chunks_read / $full_chunks_total", "~$full_bytes"],
     ["/imu 10% window", "$win_chunks_read / $win_chunks_total", "~$win_bytes"]], "-rr")
speedup_py = f("$py_full_t") / f("$ls_full_t")
speedup_py_fo = f("$py_fo_t") / f("$ls_full_t")
window_speedup = f("$ls_full_t") / f("$ls_win_t")
startup = f("$ls_one_t")
window_speedup_net = (f("$ls_full_t") - startup) / max(f("$ls_win_t") - startup, 1e-6)
frac = int("$win_bytes") / int("$full_bytes")
rss_mb = int("$ls_full_rss") / 1024
ok = lambda b: "yes" if b else "**NO**"
wall_rs = f("$ls_full_t") / f("$rs_full_t")
cpu_rs = f("$ls_full_cpu") / max(f("$rs_full_cpu"), 1e-6)
res.table("compare-requirements", "The requirements checked", ["requirement", "measured", "met"], [
    ["full scan >= 5x faster than python (log-time order)", f"{speedup_py:.1f}x (file order: {speedup_py_fo:.1f}x)", ok(speedup_py >= 5)],
    ["10% window reads <= 15% of the chunk bytes", f"{100 * frac:.1f}%", ok(frac <= 0.15)],
    ["10% window >= 5x faster than the full scan (whole processes)", f"{window_speedup:.1f}x", ok(window_speedup >= 5)],
    ["same, less process start-up (SELECT 1)", f"{window_speedup_net:.1f}x", ok(window_speedup_net >= 5)],
    ["full scan peak RSS < 300 MB", f"{rss_mb:.0f} MB", ok(rss_mb < 300)],
    ["full scan wall <= 1.0x the Rust mcap crate (whole processes)", f"{wall_rs:.2f}x", ok(wall_rs <= 1.0)],
    ["full scan CPU <= 1.3x the Rust mcap crate", f"{cpu_rs:.2f}x", ok(cpu_rs <= 1.3)],
], "-rc")
# The table of docs/performance.md (## MCAP: whole processes against the official Python reader).
res.table("mcap-python",
    "MCAP whole processes against the official Python reader (Python mcap $mcap_version): mean wall time and peak RSS",
    ["command", "time", "peak RSS"], [
    ["Python \`mcap\`, iterate every message (log-time order)", f"{f('$py_full_t'):.3f} s", f"{mb('$py_full_rss')} MB"],
    ["logsql CLI, full scan", f"{f('$ls_full_t'):.3f} s (**{speedup_py:.1f}x**)", f"{mb('$ls_full_rss')} MB"],
    ["Python \`mcap\`, /imu in a 10% window", f"{f('$py_win_t'):.3f} s", ""],
    ["logsql CLI, /imu in a 10% window", f"{f('$ls_win_t'):.3f} s", f"{mb('$ls_win_rss')} MB"],
], "-rr")
EOF
results_done
