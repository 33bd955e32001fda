#!/usr/bin/env bash
# benches/ab_compare.sh: two builds of logsql side by side in one run, on the
# ~200 MB benchmark file of every format: a full scan and a 10% time window of
# each, as whole processes, the two binaries timed in turn (hyperfine), so a
# change is judged against the build before it on the same machine state.
#
#   OLD=/path/to/old/logsql NEW=/path/to/new/logsql bash benches/ab_compare.sh
#   FORMATS="mcap bag-lz4" RUNS=20 OLD=... NEW=... bash benches/ab_compare.sh
#
# The queries (defaults: all cores as partitions):
#   full    SELECT count(*), sum(length(data)) FROM 'FILE'
#           (CARLA: SELECT count(*), sum(x), sum(yaw) FROM positions('FILE'))
#   window  the same with WHERE log_time BETWEEN the 45% and 55% points of the
#           file's time span (from min/max log_time)
# Both binaries must print the same result for each query (the script fails
# otherwise). Writes the results through benches/support/results.py
# ($BENCH_RESULTS/ab.json, table ab: mean wall time and mean user+system CPU of
# each, and NEW/OLD ratios; not one of docs/performance.md's tables) and prints
# the table as markdown; each row is logged on stderr as it is measured.
#
# The files are the ones benches/run.sh's comparisons generate in BENCH_DATA
# (default target/bench-data; examples/gen_*.rs, release); missing ones are
# skipped with a note. Environment: OLD, NEW (required), FORMATS ("mcap bag-lz4
# bag-bz2 record bddf carla db3"), RUNS (10), BENCH_DATA, BENCH_RESULTS.
set -euo pipefail
: "${OLD:?OLD=path of the old logsql binary}" "${NEW:?NEW=path of the new logsql binary}"
# root, data; log, needs, results_*, tsv (and the cd to the repository: relative OLD and
# NEW are paths in it).
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
export BENCH_CACHE_STATE="files cached as earlier use left them (ab_compare.sh does not settle them)"
formats=${FORMATS:-mcap bag-lz4 bag-bz2 record bddf carla db3}
runs=${RUNS:-10}
needs hyperfine
results_start ab

declare -A file=(
    [mcap]=$data/bench.mcap [bag-lz4]=$data/bench-lz4.bag [bag-bz2]=$data/bench-bz2.bag
    [record]=$data/bench.record [bddf]=$data/bench.bddf [carla]=$data/bench.log
    [db3]=$data/bench-db3
)

# sql FORMAT FILE [WHERE]: the query of a format.
sql() {
    local w=${3:+ WHERE $3}
    case $1 in
    carla) echo "SELECT count(*), sum(x), sum(yaw) FROM positions('$2')$w" ;;
    *) echo "SELECT count(*), sum(length(data)) FROM '$2'$w" ;;
    esac
}

# window FORMAT FILE: the WHERE clause of the 10% window in the middle of the span.
window() {
    local from=messages
    [[ $1 == carla ]] && from="positions('$2')" || from="'$2'"
    local span
    span=$("$NEW" --format csv "SELECT CAST(min(log_time) AS BIGINT), CAST(max(log_time) AS BIGINT) FROM $from" | tail -1)
    python3 - "$span" <<'PY'
import sys
lo, hi = (int(x) for x in sys.argv[1].split(","))
a, b = lo + (hi - lo) * 45 // 100, lo + (hi - lo) * 55 // 100
print(f"log_time BETWEEN to_timestamp_nanos({a}) AND to_timestamp_nanos({b})")
PY
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=$tmp/rows.tsv
tsv format query "old wall ms" "new wall ms" "new/old wall" "old CPU ms" "new CPU ms" "new/old CPU" >"$rows"
for f in $formats; do
    path=${file[$f]:-}
    [[ -n $path ]] || { echo "unknown format '$f'" >&2; exit 2; }
    [[ -e $path ]] || { echo "skipped $f: $path is missing (benches/run.sh generates it)" >&2; continue; }
    for q in full window; do
        where=""
        [[ $q == window ]] && where=$(window "$f" "$path")
        query=$(sql "$f" "$path" "$where")
        a=$("$OLD" --format csv "$query")
        b=$("$NEW" --format csv "$query")
        [[ "$a" == "$b" ]] || { echo "$f $q: old and new differ: $a / $b" >&2; exit 1; }
        hyperfine -N --warmup 2 --runs "$runs" --export-json "$tmp/$f-$q.json" \
            -n old "$OLD --format csv \"$query\"" -n new "$NEW --format csv \"$query\"" >/dev/null 2>&1 ||
            hyperfine --warmup 2 --runs "$runs" --export-json "$tmp/$f-$q.json" \
                -n old "$OLD --format csv \"$query\"" -n new "$NEW --format csv \"$query\"" >/dev/null
        python3 - "$tmp/$f-$q.json" "$f" "$q" <<'PY' | tee -a "$rows" >&2
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
o, n = r["old"], r["new"]
wo, wn = o["mean"] * 1e3, n["mean"] * 1e3
co, cn = (o["user"] + o["system"]) * 1e3, (n["user"] + n["system"]) * 1e3
print("\t".join([sys.argv[2], sys.argv[3], f"{wo:.1f}", f"{wn:.1f}", f"{wn / wo:.2f}", f"{co:.1f}", f"{cn:.1f}", f"{cn / co:.2f}"]))
PY
    done
done
results_table ab "Two builds side by side: OLD=$OLD, NEW=$NEW; hyperfine --warmup 2 --runs $runs, the two in turn; mean wall and mean user+system CPU" --rrrrrr <"$rows"
results_done
