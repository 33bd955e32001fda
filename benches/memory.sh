#!/usr/bin/env bash
# Bounded memory under load: peak RSS of a full scan of a ~2 GB file of each
# format with the release CLI, and of 8 concurrent full scans in one process
# (examples/concurrent_scan.rs, one SessionContext).
#
#   benches/memory.sh                 # ~2 GB per format (about 10 GB of disk)
#   SIZE_MB=500 benches/memory.sh     # smaller files
#   KEEP=1 benches/memory.sh          # keep the generated files
#
# Files are written under $DATA (default target/bench-data/memory) and deleted
# at the end unless KEEP=1; an existing file of the right name is reused.
# Binaries come from $CARGO_TARGET_DIR (default ~/.cache/logsql-target) and are
# built (release, with `nice`) when missing. Target: every peak RSS < 300 MB.
#
# Each scan is `SELECT count(*), sum(length(data)) FROM 'FILE'` (every chunk
# read and decompressed, every payload touched), plus for CARLA the typed
# table `SELECT count(*), sum(x) FROM positions('FILE')`. Peak RSS is
# "Maximum resident set size" of `/usr/bin/time -v`.
#
# Writes the results through benches/support/results.py: $BENCH_RESULTS/memory.json,
# tables memory-detail (every scan, its wall time and result) and memory (the table
# of docs/performance.md; `bash benches/run.sh --update-docs memory`), printed as
# markdown too.
set -euo pipefail
# results_start, results_table, results_done, tsv (and the cd to the repository).
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
results_start memory

SIZE_MB=${SIZE_MB:-2000}
DATA=${DATA:-target/bench-data/memory}
KEEP=${KEEP:-0}
CONCURRENT=${CONCURRENT:-8}
TARGET=${CARGO_TARGET_DIR:-$HOME/.cache/logsql-target}
PROFILE=${PROFILE:-release} # `debug` only to try the script out: figures need release
BIN=$TARGET/$PROFILE/logsql
EX=$TARGET/$PROFILE/examples
# The generators need no DataFusion: GEN may point at a release build without it.
GEN=${GEN:-$EX}
LIMIT_MB=300

need=(gen_mcap gen_bag gen_record gen_bddf gen_carla concurrent_scan)
missing=0
[[ -x $BIN && -x $EX/concurrent_scan ]] || missing=1
for e in "${need[@]:0:5}"; do [[ -x $GEN/$e ]] || missing=1; done
if ((missing)); then
  echo "building release binaries in $TARGET ..." >&2
  args=(--bin logsql)
  for e in "${need[@]}"; do args+=(--example "$e"); done
  CARGO_TARGET_DIR=$TARGET nice cargo build --release "${args[@]}"
  GEN=$EX
fi

mkdir -p "$DATA"
avail_mb=$(df -Pm "$DATA" | awk 'NR==2 {print $4}')
if ((avail_mb < SIZE_MB * 6)); then
  echo "need about $((SIZE_MB * 6)) MB free in $DATA, have $avail_mb MB" >&2
  exit 1
fi

# Scale factors: each generator's default makes about 200 MB.
mcap=$DATA/big.mcap bag=$DATA/big.bag record=$DATA/big.record bddf=$DATA/big.bddf carla=$DATA/big.log
gen() { # file command...
  local f=$1
  shift
  if [[ ! -s $f ]]; then
    echo "generating $f ..." >&2
    nice "$@" >/dev/null
  fi
}
gen "$mcap" "$GEN/gen_mcap" "$mcap" --seconds $((376 * SIZE_MB / 200))
gen "$bag" "$GEN/gen_bag" "$bag" --seconds $((367 * SIZE_MB / 200))
gen "$record" "$GEN/gen_record" "$record" --size-mb "$SIZE_MB"
gen "$bddf" "$GEN/gen_bddf" "$bddf" --mb "$SIZE_MB"
gen "$carla" "$GEN/gen_carla" "$carla" --frames $((10250 * SIZE_MB / 200))

# Runs a command under /usr/bin/time -v; prints "peak_kb seconds" then the command's output.
measure() {
  local log
  log=$(mktemp)
  local out
  out=$(/usr/bin/time -v "$@" 2>"$log")
  local kb secs
  kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  rm -f "$log"
  echo "$kb $secs"
  echo "$out"
}

fail=0
detail=$(mktemp)
doc=$(mktemp)
tsv scan "file size" "peak RSS" "wall time" "< ${LIMIT_MB} MB" result >"$detail"
tsv scan file "peak RSS" >"$doc"
size_mb() { # files... -> total size in MB (10^6 bytes)
  local total=0 f
  for f in "$@"; do total=$((total + $(stat -c %s "$f"))); done
  echo $((total / 1000000))
}
report() { # label size_mb peak_kb elapsed result
  local mb=$(($3 / 1024))
  local verdict=ok
  ((mb < LIMIT_MB)) || { verdict="OVER ${LIMIT_MB} MB"; fail=1; }
  tsv "$1" "$2 MB" "$mb MB" "$4" "$verdict" "$5" >>"$detail"
}
gb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.2f GB", b / 1e9 }'; }
declare -A doc_label=([mcap]="MCAP" [bag]="ROS1 bag" [record]="Apollo" [bddf]="BDDF, SHA1 verified" [log]="CARLA")
for f in "$mcap" "$bag" "$record" "$bddf" "$carla"; do
  res=$(measure "$BIN" --format csv "SELECT count(*) AS messages, sum(length(data)) AS bytes FROM '$f'")
  read -r kb secs <<<"$(head -1 <<<"$res")"
  report "messages ${f##*.}" "$(size_mb "$f")" "$kb" "$secs" "$(tail -n +2 <<<"$res" | tail -1)"
  peak="$((kb / 1024)) MB"
  [[ $f == "$carla" ]] && carla_peak=$peak || tsv "${doc_label[${f##*.}]}" "$(gb "$f")" "$peak" >>"$doc"
done
res=$(measure "$BIN" --format csv "SELECT count(*) AS rows, sum(x) AS sum_x FROM positions('$carla')")
read -r kb secs <<<"$(head -1 <<<"$res")"
report "positions log" "$(size_mb "$carla")" "$kb" "$secs" "$(tail -n +2 <<<"$res" | tail -1)"
tsv CARLA "$(gb "$carla")" "$carla_peak (\`positions()\` $((kb / 1024)) MB)" >>"$doc"

res=$(measure "$EX/concurrent_scan" -n "$CONCURRENT" "$mcap" "$bag" "$record" "$bddf" "$carla")
read -r kb secs <<<"$(head -1 <<<"$res")"
report "$CONCURRENT concurrent (one process)" "$(size_mb "$mcap" "$bag" "$record" "$bddf" "$carla")" "$kb" "$secs" "$(tail -1 <<<"$res")"
tsv "$CONCURRENT concurrent scans in one process" "" "$((kb / 1024)) MB" >>"$doc"
results_table memory-detail "Peak RSS of full scans of ~$SIZE_MB MB files ($PROFILE build; target: under $LIMIT_MB MB)" -rrr-- <"$detail"
results_table memory "Peak RSS of full scans of ~$SIZE_MB MB files, and of $CONCURRENT concurrent scans in one process ($PROFILE build)" -rr <"$doc"
echo
tail -n +2 <<<"$res" | sed 's/^/    /'
results_done
rm -f "$detail" "$doc"

if [[ $KEEP != 1 ]]; then
  rm -f "$mcap" "$bag" "$record" "$bddf" "$carla"
fi
exit $fail
