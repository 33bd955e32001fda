#!/usr/bin/env bash
# benches/clip_compare.sh: a 10 s clip (`logsql clip`) out of an indexed MCAP recording of
# about 1 GB and one of about 20 GB, against the official Python mcap reader and writer
# cutting the same window; and `intervals()` against decoding its condition's column with
# `read_topic`.
#
#   bash benches/clip_compare.sh
#   SKIP_BUILD=1 RUNS=3 SIZES="1024 20480" bash benches/clip_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql --example gen_mcap (skip with SKIP_BUILD=1)
#  2. a venv ($BENCH_VENV) with `pip install mcap`; in $BENCH_DATA, if missing, clip-MB.mcap
#     for each MB of SIZES by gen_mcap (zstd chunks of 1 MiB of mixed topics: 200 Hz IMU,
#     50 Hz tf, 10 Hz 50 kB camera frames; 376 s make ~194 MB)
#  3. the window: 10 s from the middle of each recording; checks that logsql's clip and the
#     Python clip hold the same messages (count, a log-time checksum, payload bytes)
#  4. times with hyperfine (--warmup 1 --runs RUNS; whole processes, page cache warm):
#       logsql   logsql clip REC --start T --end T+10s -o OUT.mcap
#       python   benches/support/mcap_clip.py clip (iter_messages over the time range: the
#                chunk index picks the chunks; the channels, schemas, metadata written)
#  5. one cold run of each (the recording's pages dropped from the page cache): wall time
#     and bytes read from storage (the child's ru_inblock, read-ahead included); the bytes
#     logsql's scan asked for (what `logsql clip` prints); the bytes of the chunks whose
#     time range overlaps the window and of the summary section (from the file's indexes)
#  6. intervals: SELECT count(*) FROM intervals(REC, '/imu', COND, '50 ms', '100 ms')
#     against SELECT count(*) FROM read_topic(REC, '/imu') WHERE COND on the smallest size
#  7. writes $BENCH_RESULTS/clip.json (table clip, in docs/performance.md:
#     `bash benches/run.sh --update-docs clip`) and checks the targets: each clip under 1 s
#     cold, the largest within 20% of the smallest, logsql's scan reading at most 1.5x the
#     overlapping chunks' bytes, intervals within 1.2x of read_topic.
#
# Environment: CARGO_TARGET_DIR, RUNS (5), SKIP_BUILD=1, BENCH_DATA, BENCH_VENV,
# SIZES (MB, "1024 20480"), CACHE=as-is (see benches/support/common.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-5}
read -r -a sizes <<<"${SIZES:-1024 20480}"
needs hyperfine bc
results_start clip

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --bin logsql --example gen_mcap"
    cargo build --release --bin logsql --example gen_mcap >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
bench_venv "mcap" "mcap>=1.2,<2"
clip_py=$root/benches/support/mcap_clip.py
mkdir -p "$data"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cold CMD...: "SECONDS BYTES": one run of CMD with the recording ($rec) dropped from the page
# cache first; BYTES are what it read from storage (ru_inblock x 512, read-ahead included).
cold() {
    drop_cache "$rec"
    python3 - "$@" <<'PY'
import os, subprocess, sys, time
cmd = sys.argv[1:]
t0 = time.monotonic()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
t = time.monotonic() - t0
if status != 0:
    sys.exit(f"{cmd} failed ({status})")
print(f"{t:.3f} {usage.ru_inblock * 512}")
PY
}
mib() { echo "scale=1; $1 / 1048576" | bc -l; }
ratio2() { echo "scale=2; $1 / $2" | bc -l; }
rfc() { python3 -c "import datetime, sys; n = int(sys.argv[1]); print(datetime.datetime.fromtimestamp(n // 10**9, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S') + '.%09dZ' % (n % 10**9))" "$1"; }

rows=()
cold_s=()
for mb in "${sizes[@]}"; do
    rec=$data/clip-$mb.mcap
    [[ -f $rec ]] || gen gen_mcap "$rec" --seconds $((376 * mb / 200))
    read -r first last < <("$py" "$clip_py" span "$rec")
    start=$(((first + last) / 2))
    end=$((start + 10 * 1000000000))
    s=$(rfc "$start")
    e=$(rfc "$end")
    settle_cache "$logsql"
    log "clip of $rec from $s to $e"
    "$logsql" clip "$rec" --start "$s" --end "$e" -o "$tmp/logsql.mcap" | tee "$tmp/clip.txt" >&2
    "$py" "$clip_py" clip "$rec" "$tmp/python.mcap" "$start" "$end" >/dev/null
    same "clip of $mb MB: messages, log-time checksum, payload bytes" \
        "$("$py" "$clip_py" sums "$tmp/python.mcap")" "$("$py" "$clip_py" sums "$tmp/logsql.mcap")"
    messages=$("$py" "$clip_py" sums "$tmp/logsql.mcap" | cut -d' ' -f1)
    # "...; 5.43 MiB read (5689677 bytes)" ends the clip's line: the scan's bytes_read metric.
    asked=$(grep -o '([0-9]* bytes)$' "$tmp/clip.txt" | tr -dc 0-9)
    read -r nchunks chunk_bytes tail_bytes < <("$py" "$clip_py" chunks "$rec" "$start" "$end")

    read -r l_mean l_sd l_min _ < <(hyperfine_time "logsql-$mb" "$logsql" clip "$rec" --start "$s" --end "$e" -o "$tmp/logsql.mcap")
    read -r p_mean p_sd p_min _ < <(hyperfine_time "python-$mb" "$py" "$clip_py" clip "$rec" "$tmp/python.mcap" "$start" "$end")
    read -r l_cold l_io < <(cold "$logsql" clip "$rec" --start "$s" --end "$e" -o "$tmp/logsql.mcap")
    read -r p_cold p_io < <(cold "$py" "$clip_py" clip "$rec" "$tmp/python.mcap" "$start" "$end")
    cold_s+=("$l_cold")
    size=$(stat -c %s "$rec")
    rows+=("$(tsv "$(mib "$size") MiB ($messages messages in the clip; $nchunks chunks of $(mib "$chunk_bytes") MiB overlap it; summary $(mib "$tail_bytes") MiB)" \
        "${l_mean} ± ${l_sd} s" "$l_cold s" "$(mib "$asked") MiB asked, $(mib "$l_io") MiB from storage" \
        "${p_mean} ± ${p_sd} s" "$p_cold s" "$(mib "$p_io") MiB from storage")")
    check "logsql clip of 10 s out of $(mib "$size") MiB under 1 s cold" "$l_cold" "<" 1
    check "logsql's scan reads at most 1.5x the overlapping chunks ($(mib "$asked") of $(mib "$chunk_bytes") MiB)" "$(ratio2 "$asked" "$chunk_bytes")" "<=" 1.5
done
{
    tsv "recording" "logsql clip, warm" "cold" "logsql read" "Python mcap, warm" "cold" "Python read"
    printf '%s\n' "${rows[@]}"
} | results_table clip "A 10 s clip from the middle of a generated indexed MCAP: $runs runs each (hyperfine, 1 warm-up), mean ± stddev, and one cold run (the recording dropped from the page cache); $(py_version mcap); page cache: $BENCH_CACHE_STATE" -rrrrrr
if ((${#sizes[@]} > 1)); then
    check "the clip out of the largest within 20% of the smallest (cold)" "$(ratio2 "${cold_s[-1]}" "${cold_s[0]}")" "<=" 1.2
fi

rec=$data/clip-${sizes[0]}.mcap
cond="linear_acceleration.x > 0.29"
log "intervals on $rec"
n_int=$(logsql_row "SELECT count(*) FROM intervals('$rec', '/imu', '$cond', '50 ms', '100 ms')")
n_rows=$(logsql_row "SELECT count(*) FROM read_topic('$rec', '/imu') WHERE $cond")
settle_cache "$rec"
read -r i_mean i_sd _ < <(hyperfine_time intervals "$logsql" "SELECT count(*) FROM intervals('$rec', '/imu', '$cond', '50 ms', '100 ms')")
read -r r_mean r_sd _ < <(hyperfine_time read_topic "$logsql" "SELECT count(*) FROM read_topic('$rec', '/imu') WHERE $cond")
{
    tsv query time answer
    tsv "\`intervals('$(basename "$rec")', '/imu', '$cond', '50 ms', '100 ms')\`" "${i_mean} ± ${i_sd} s" "$n_int intervals"
    tsv "\`read_topic('$(basename "$rec")', '/imu') WHERE $cond\` (the condition's column decoded)" "${r_mean} ± ${r_sd} s" "$n_rows messages"
    tsv "intervals / read_topic" "**$(ratio2 "$i_mean" "$r_mean")x**" ""
} | results_table intervals "intervals() against decoding its condition with read_topic, count(*) of each: $runs runs (hyperfine, 1 warm-up), mean ± stddev; page cache warm" -rr
check "intervals within 1.2x of read_topic decoding the condition" "$(ratio2 "$i_mean" "$r_mean")" "<=" 1.2
results_done
exit $ok
