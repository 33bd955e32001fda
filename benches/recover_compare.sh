#!/usr/bin/env bash
# benches/recover_compare.sh: `logsql recover` of a damaged recording of about 1 GB,
# against what the same messages cost to scan and write as MCAP, and its peak memory.
#
#   bash benches/recover_compare.sh
#   SKIP_BUILD=1 RUNS=3 SIZE_MB=1024 bash benches/recover_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql --example gen_mcap (skip with SKIP_BUILD=1)
#  2. generates in $BENCH_DATA, if missing, recover-SIZE_MB.mcap with gen_mcap (zstd
#     chunks of mixed topics: IMU, odometry, camera-sized payloads; 376 s make ~194 MB)
#  3. damages a copy the ways recordings break: cut at 97% of its length (no summary, a
#     torn last chunk), a 64 KiB range zeroed at 40%, 16 bytes flipped at 70%
#  4. checks that recover writes exactly the messages a scan of the damaged copy reads
#     under --on-error warn (count, the sum of log times and of payload lengths)
#  5. times with hyperfine (--warmup 1 --runs RUNS; whole processes, wall clock):
#       recover   logsql recover DAMAGED OUT.mcap
#       baseline  logsql --on-error warn export DAMAGED OUT.mcap: the full scan plus the
#                 MCAP write of the same messages (no loss report, no time sort)
#  6. peak RSS (`/usr/bin/time -v`) of recover on the damaged copy, and of recover on a
#     damaged copy of a quarter of the size (memory must not grow with the file)
#  7. writes $BENCH_RESULTS/recover.json (table recover, in docs/performance.md:
#     `bash benches/run.sh --update-docs recover`) and checks the targets: peak RSS under
#     200 MB, and recover within 1.5x of the baseline's time.
#
# Environment: CARGO_TARGET_DIR, RUNS (3), SKIP_BUILD=1, BENCH_DATA, SIZE_MB (1024),
# CACHE=as-is (see benches/support/common.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-3}
size_mb=${SIZE_MB:-1024}
quarter_mb=$((size_mb / 4))
needs hyperfine bc
results_start recover

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --bin logsql --example gen_mcap"
    cargo build --release --bin logsql --example gen_mcap >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
mkdir -p "$data"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# damage CLEAN OUT: a copy of CLEAN cut at 97%, with a zeroed range and flipped bytes.
damage() {
    python3 - "$1" "$2" <<'PY'
import shutil, sys
src, out = sys.argv[1:]
shutil.copyfile(src, out)
with open(out, "r+b") as f:
    size = f.seek(0, 2)
    f.truncate(size * 97 // 100)
    f.seek(size * 40 // 100)
    f.write(bytes(64 * 1024))
    at = size * 70 // 100
    f.seek(at)
    flipped = bytes(b ^ 0xFF for b in f.read(16))
    f.seek(at)
    f.write(flipped)
PY
}

for mb in "$size_mb" "$quarter_mb"; do
    clean=$data/recover-$mb.mcap
    [[ -f $clean ]] || gen gen_mcap "$clean" --seconds $((376 * mb / 200))
    damage "$clean" "$tmp/damaged-$mb.mcap"
done
damaged=$tmp/damaged-$size_mb.mcap
settle_cache "$damaged" "$tmp/damaged-$quarter_mb.mcap" "$logsql"

log "checking the outputs"
# Payloads are read (sum of their lengths): a count or log times alone are answered from the
# message indexes, which also list the messages of a chunk that no longer decompresses.
sum_sql() { echo "SELECT count(*), sum(CAST(log_time AS BIGINT) % 1000000007), sum(length(data)) FROM '$1'"; }
want=$(logsql_row --on-error warn "$(sum_sql "$damaged")")
"$logsql" recover "$damaged" "$tmp/recovered.mcap" >"$tmp/report.txt"
got=$(logsql_row --on-error error "$(sum_sql "$tmp/recovered.mcap")")
same "recovered messages (count, log-time checksum) and those a warn scan reads" "$want" "$got"
messages=${got%% *}
lost=$(grep -c '^  lost\|^  problem' "$tmp/report.txt" || true)

read -r rec rec_sd rec_min _ < <(hyperfine_time recover "$logsql" recover "$damaged" "$tmp/out.mcap")
read -r base base_sd base_min _ < <(hyperfine_time baseline "$logsql" --on-error warn export "$damaged" "$tmp/base.mcap")

log "peak RSS"
rss=$(peak_rss "$logsql" recover "$damaged" "$tmp/out.mcap")
rss4=$(peak_rss "$logsql" recover "$tmp/damaged-$quarter_mb.mcap" "$tmp/out4.mcap")
rss_base=$(peak_rss "$logsql" --on-error warn export "$damaged" "$tmp/base.mcap")

ratio2() { echo "scale=2; $1 / $2" | bc -l; }
mb=$(du -m "$damaged" | cut -f1)
{
    tsv task time "peak RSS"
    tsv "\`logsql recover\` of a damaged $mb MB MCAP ($messages messages kept; $lost problems and losses reported)" "${rec} ± ${rec_sd} s (${rec_min})" "$rss MB ($rss4 MB on a damaged copy of a $quarter_mb MB file)"
    tsv "the same messages scanned and written as MCAP (\`logsql --on-error warn export\`)" "${base} ± ${base_sd} s (${base_min})" "$rss_base MB"
    tsv "recover / scan + write" "**$(ratio2 "$rec" "$base")x**" ""
} | results_table recover "Recovery of a damaged recording: $runs runs each (hyperfine, 1 warm-up), mean ± stddev (min); page cache: $BENCH_CACHE_STATE" -rr
check "recover's peak RSS under 200 MB" "$rss" "<" 200
check "recover within 1.5x of the scan plus MCAP write" "$(ratio2 "$rec" "$base")" "<=" 1.5
results_done
exit $ok
