#!/usr/bin/env bash
# benches/catalog_compare.sh: the fleet catalog on a fleet of 10,000 small recordings:
# indexing, a refresh, and fleet questions with and without the catalog, against the
# official Python mcap reader reading every summary.
#
#   bash benches/catalog_compare.sh
#   SKIP_BUILD=1 RUNS=3 FLEET=10000 bash benches/catalog_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql (skip with SKIP_BUILD=1)
#  2. a venv ($BENCH_VENV) with `pip install mcap rosbags`, and the fleet, if missing:
#     $BENCH_DATA/fleet-FLEET/ by benches/support/fleet.py (hive directories robot=rR/day=D,
#     one-minute recordings one hour apart, /imu /odom /status as JSON; every 20th a ROS1
#     bag, the one after it a ROS 2 .db3 bag directory, the others MCAP, all written by the
#     official writers; about 1.2 GB for 10,000)
#  3. `logsql index` of the whole fleet into a new catalog (timed once), then a refresh
#     after 1% new recordings (copies of existing ones under new names, timed once; they
#     are removed and indexed away again afterwards)
#  4. checks that the catalogued and the uncatalogued one-hour question give the same rows
#  5. times with hyperfine (--warmup 1 --runs RUNS; whole processes; page cache warm):
#       without   SELECT robot, count(*) FROM 'fleet/' WHERE log_time in one hour GROUP BY robot
#       with      the same with --catalog (one recording matches: the others are not opened)
#       coverage  SELECT device, count(*), sum(duration) / 3600 FROM recordings GROUP BY device
#       python    the official mcap reader: every MCAP file's summary, keeping the files
#                 whose statistics overlap the hour (what a script without logsql reads)
#     and once each with the fleet's and the catalog's pages dropped from the page cache
#     (posix_fadvise DONTNEED: cold files, warm directories)
#  6. what the catalogued query read: the catalog's table files and the scan's bytes_read
#  7. writes $BENCH_RESULTS/catalog.json (table catalog, in docs/performance.md:
#     `bash benches/run.sh --update-docs catalog`)
#
# Environment: CARGO_TARGET_DIR, RUNS (5), SKIP_BUILD=1, BENCH_DATA, BENCH_VENV, FLEET (10000).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-5}
n=${FLEET:-10000}
needs hyperfine bc
results_start catalog

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --bin logsql"
    cargo build --release --bin logsql >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
bench_venv "mcap, rosbags" "mcap>=1.2,<2" "rosbags>=0.11,<0.12"
fleet=$data/fleet-$n
if [[ ! -f $fleet/.done ]]; then
    log "generating $fleet ($n recordings)"
    "$py" benches/support/fleet.py "$fleet" "$n"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$fleet/robot=r0/day=new"' EXIT
cat=$tmp/catalog

seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); printf '%.2f' "$(echo "$t1 - $t0" | bc -l)"; }
log "indexing $n recordings"
index_s=$(seconds "$logsql" index "$fleet/" --catalog "$cat")
rate=$(echo "$n / $index_s" | bc)
mkdir -p "$fleet/robot=r0/day=new"
i=0
for f in "$fleet"/robot=r2/day=*/*.mcap; do
    cp "$f" "$fleet/robot=r0/day=new/copy$i.mcap"
    i=$((i + 1))
    [[ $i -ge $((n / 100)) ]] && break
done
log "refreshing after $i new recordings"
refresh_s=$(seconds "$logsql" index "$fleet/" --catalog "$cat")
rm -rf "$fleet/robot=r0/day=new"
"$logsql" index "$fleet/" --catalog "$cat" >/dev/null

# Recording 5000 (or the middle one) starts at 2026-01-01 + 5000 h.
mid=$((n / 2))
lo=$(date -u -d "2026-01-01T00:00:00Z + $mid hours" +%Y-%m-%dT%H:%M:%SZ)
hi=$(date -u -d "2026-01-01T00:59:59Z + $mid hours" +%Y-%m-%dT%H:%M:%SZ)
sql="SELECT robot, count(*) AS n FROM '$fleet/' WHERE log_time BETWEEN '$lo' AND '$hi' GROUP BY robot"
coverage="SELECT device, count(*) AS recordings, sum(duration) / 3600 AS hours FROM recordings GROUP BY device ORDER BY device"
want=$(logsql_row "$sql")
got=$(logsql_row --catalog "$cat" "$sql")
same "the one-hour question with and without the catalog" "$want" "$got"
cat >"$tmp/summaries.py" <<'PY'
import glob, sys
from mcap.reader import make_reader
fleet, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hits = []
for path in glob.glob(fleet + "/**/*.mcap", recursive=True):
    with open(path, "rb") as f:
        s = make_reader(f).get_summary().statistics
        if s.message_start_time <= hi and s.message_end_time >= lo:
            hits.append(path)
print(len(hits))
PY
lo_ns=$(($(date -u -d "$lo" +%s) * 1000000000))
hi_ns=$(($(date -u -d "$hi" +%s) * 1000000000))

read -r without without_sd _ < <(hyperfine_time without "$logsql" "$sql")
read -r with with_sd _ < <(hyperfine_time with "$logsql" --catalog "$cat" "$sql")
read -r cov cov_sd _ < <(hyperfine_time coverage "$logsql" --catalog "$cat" "$coverage")
read -r pyt pyt_sd _ < <(hyperfine_time python "$py" "$tmp/summaries.py" "$fleet" "$lo_ns" "$hi_ns")

drop_cache "$fleet" "$cat"
cold_with=$(seconds "$logsql" --catalog "$cat" "$sql")
drop_cache "$fleet" "$cat"
cold_without=$(seconds "$logsql" "$sql")

plan=$("$logsql" --catalog "$cat" "EXPLAIN ANALYZE $sql")
scan_bytes=$(grep -o 'bytes_read=[0-9.]* [KMG]*' <<<"$plan" | head -1 | cut -d= -f2)
metric() { grep -o "$1=[0-9.]*[ KM]*" <<<"$plan" | head -1 | cut -d= -f2 | sed 's/ *$//'; }
opened=$(metric summary_cache_misses)
pruned=$(metric files_pruned_by_catalog)
cat_kb=$(du -sk "$cat"/gen-"$(printf '%020d' "$(ls "$cat/_log" | sort | tail -1 | sed 's/^0*//; s/\.json$//')")"-* | cut -f1)
fleet_mb=$(du -sm "$fleet" | cut -f1)

{
    tsv task time "what it reads"
    tsv "\`logsql index\` of $n recordings ($fleet_mb MB), new catalog" "$index_s s (**$rate recordings/s**)" "summaries and indexes; catalog $((cat_kb)) KB"
    tsv "refresh after $i new recordings" "**$refresh_s s**" "the listing, the new recordings"
    tsv "one hour, \`GROUP BY robot\`, without catalog" "$without ± $without_sd s (cold: $cold_without s)" "every recording's summary"
    tsv "the same with \`--catalog\`" "**$with ± $with_sd s** (cold: **$cold_with s**)" "the catalog, the listing, $opened recording ($scan_bytes bytes; $pruned not opened)"
    tsv "fleet coverage from \`recordings\` (devices, hours)" "$cov ± $cov_sd s" "the recordings table"
    tsv "official \`mcap\` reader, every MCAP summary (Python)" "$pyt ± $pyt_sd s" "every MCAP recording's summary"
} | results_table catalog "The fleet catalog on $n recordings: $runs runs each (hyperfine, 1 warm-up), mean ± stddev, page cache warm; cold: fleet and catalog pages dropped" -rr
results_done
exit $ok
