#!/usr/bin/env bash
# benches/distributed_pinned.sh: distributed scale-out on one machine, measured
# honestly: `logsql worker` processes pinned to their own cores, a coordinator
# that does no scan work, and a CPU-bound query (every bz2 chunk of a fleet of
# ROS bags decompressed).
#
#   bash benches/distributed_pinned.sh [DIR]
#
# Steps:
#  1. cargo build --release --features distributed --bin logsql --example gen_bag
#     (skip with SKIP_BUILD=1)
#  2. DIR (default target/bench-data/fleet-bz2) gets FILES bz2 bags if it has
#     none: one `gen_bag --compression bz2 --seconds SECONDS` recording (level-9
#     bzip2 chunks of 768 KiB; the camera images are incompressible, so bz2
#     decompression dominates the scan) copied to robot=rN/runNNNN.bag;
#  3. two workers as separate OS processes, `taskset -c 0 logsql worker` and
#     `taskset -c 1 logsql worker` (each one's tokio runtime then has one thread);
#  4. the query
#       SELECT topic, count(*), sum(length(data)) FROM 'DIR/' GROUP BY topic ORDER BY topic
#     RUNS times each, interleaved, as
#       - one process pinned to core 0 (`taskset -c 0 logsql`), the reference result;
#       - one process on both cores (`logsql`);
#       - a coordinator `logsql --workers W0` (1 worker);
#       - a coordinator `logsql --workers W0,W1` (2 workers);
#     every result compared with the reference (the script fails on a difference);
#  5. writes the results through benches/support/results.py ($BENCH_RESULTS/distributed.json),
#     printed as markdown too: distributed-detail (median and minimum wall time of the whole
#     coordinator process, the coordinator's CPU time and each worker's CPU time during the
#     query, utime + stime from /proc/PID/stat) and distributed-pinned (the table of
#     docs/performance.md; `bash benches/run.sh --update-docs distributed`), and the
#     speed-up of 2 workers over 1 checked (target 1.8x; the script exits 1 below it).
#
# The coordinator does no scan work: with one worker, datafusion-distributed
# caps every stage at one task (`distributed.max_tasks_per_stage` 0 means "the
# number of workers") and a stage of one task whose consumer is one task is not
# distributed at all (its network boundary is removed), so the scan would run
# in the coordinator. Both coordinators therefore run
#   SET distributed.max_tasks_per_stage = 2
# first: the scan stage is two tasks, on the one worker or one on each. The
# worker CPU column shows where the decompression happened.
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), BENCH_DATA
# (target/bench-data; DIR defaults to its fleet-bz2), FILES (4), BAG_SECONDS (60,
# ~33 MB a bag), RUNS (5), PORT (first worker port, 50161; the second is
# PORT+1), GEN_BAG (the gen_bag binary; default the release example),
# SKIP_BUILD=1. Needs 2 cores, taskset (util-linux) and /usr/bin/time.
# The machine must be otherwise idle for the figure to mean anything: the load
# average is recorded with the results.
set -euo pipefail

# root, target, data, logsql; log, needs, results_*.
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
dir=${1:-$data/fleet-bz2}
files=${FILES:-4}
seconds=${BAG_SECONDS:-60}
runs=${RUNS:-5}
port=${PORT:-50161}
gen=${GEN_BAG:-$target/release/examples/gen_bag}

die() { echo "distributed_pinned: $*" >&2; exit 1; }

(( $(nproc) >= 2 )) || die "needs 2 cores, this machine has $(nproc)"
needs taskset
[[ -x /usr/bin/time ]] || die "needs /usr/bin/time (GNU time)"
results_start distributed

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --features distributed --bin logsql --example gen_bag"
    cargo build --release --features distributed --bin logsql --example gen_bag >&2
fi
[[ -x $logsql ]] || die "$logsql missing (build it, or set CARGO_TARGET_DIR)"
"$logsql" worker --help >/dev/null 2>&1 || die "$logsql was built without --features distributed"

# 2. The fleet, generated once.
mkdir -p "$dir"
if ! compgen -G "$dir/robot=*/*.bag" >/dev/null; then
    one=$dir/.one.bag
    log "generating $files bz2 bags of $seconds s into $dir"
    "$gen" "$one.tmp" --compression bz2 --seconds "$seconds" >&2
    mv "$one.tmp" "$one"
    for ((i = 0; i < files; i++)); do
        sub=$dir/robot=r$((i % 2))
        mkdir -p "$sub"
        cp "$one" "$sub/.run$i.tmp"
        mv "$sub/.run$i.tmp" "$(printf '%s/run%04d.bag' "$sub" "$i")"
    done
    rm -f "$one"
fi
bags=("$dir"/robot=*/*.bag)
bytes=$(du -cb "${bags[@]}" | tail -1 | cut -f1)
sql="SELECT topic, count(*), sum(length(data)) FROM '$dir/' GROUP BY topic ORDER BY topic"

# 3. The workers.
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
w0=127.0.0.1:$port
w1=127.0.0.1:$((port + 1))
taskset -c 0 "$logsql" worker --listen "$w0" 2>"$tmp/w0.log" &
pids+=($!)
taskset -c 1 "$logsql" worker --listen "$w1" 2>"$tmp/w1.log" &
pids+=($!)
for w in "$w0" "$w1"; do
    for ((i = 0; ; i++)); do
        (exec 3<>"/dev/tcp/${w%:*}/${w#*:}") 2>/dev/null && break
        (( i < 100 )) || die "worker $w did not start: $(cat "$tmp"/w*.log)"
        sleep 0.1
    done
done

tck=$(getconf CLK_TCK)
# CPU seconds (user + system, all threads) a process has used so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

set_tasks="SET distributed.max_tasks_per_stage = 2"
modes=(local1 local2 w1 w2)
declare -A label=(
    [local1]="one process, \`taskset -c 0 logsql\`"
    [local2]="one process, both cores"
    [w1]="1 worker (core 0)"
    [w2]="2 workers (cores 0 and 1)"
)

# One run of MODE: appends "wall coordinator_cpu worker0_cpu worker1_cpu" to
# $tmp/MODE.times and checks the result against the reference.
run() {
    local mode=$1 a0 a1 b0 b1 start end
    local -a argv
    case $mode in
        local1) argv=(taskset -c 0 "$logsql") ;;
        local2) argv=("$logsql") ;;
        w1) argv=("$logsql" --workers "$w0" -c "$set_tasks") ;;
        w2) argv=("$logsql" --workers "$w0,$w1" -c "$set_tasks") ;;
    esac
    a0=$(cpu_ticks "${pids[0]}")
    a1=$(cpu_ticks "${pids[1]}")
    start=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$tmp/time" "${argv[@]}" -q --format csv "$sql" >"$tmp/out" 2>"$tmp/err" ||
        die "$mode failed: $(cat "$tmp/err")"
    end=$(date +%s%N)
    b0=$(cpu_ticks "${pids[0]}")
    b1=$(cpu_ticks "${pids[1]}")
    if [[ ! -f $tmp/reference ]]; then
        cp "$tmp/out" "$tmp/reference"
    elif ! cmp -s "$tmp/out" "$tmp/reference"; then
        diff "$tmp/reference" "$tmp/out" >&2 || true
        die "$mode: result differs from the single-process result"
    fi
    awk -v w="$(( (end - start) / 1000000 ))" -v a0="$a0" -v a1="$a1" -v b0="$b0" -v b1="$b1" -v t="$tck" \
        '{ printf "%.3f %.2f %.2f %.2f\n", w / 1000, $1 + $2, (b0 - a0) / t, (b1 - a1) / t }' \
        "$tmp/time" >>"$tmp/$mode.times"
}

fleet="${#bags[@]} bz2 bags in $dir, $(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }')"
log "fleet: $fleet; query: $sql"
log "runs: $runs each, interleaved; workers: taskset -c 0 / -c 1 $logsql worker; coordinators: $set_tasks"
log "warm-up (page cache) and reference result"
run local1
rm -f "$tmp"/*.times
for ((r = 1; r <= runs; r++)); do
    for m in "${modes[@]}"; do run "$m"; done
    log "run $r/$runs done"
done

# The median of column COL of FILE (the middle value; the upper one of an even count).
median_of() { sort -g -k"$2,$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int(NR / 2) + 1] }'; }
min_of() { sort -g -k"$2,$2" "$1" | awk -v c="$2" 'NR == 1 { print $c }'; }
s2() { printf '%.2f s' "$1"; }
detail=$tmp/detail.tsv doc=$tmp/doc.tsv
tsv mode "median wall" "min wall" "coordinator CPU" "worker 0 CPU" "worker 1 CPU" >"$detail"
tsv mode "wall (median)" "coordinator (or the one process) CPU" "worker 0 CPU" "worker 1 CPU" >"$doc"
declare -A median
for m in "${modes[@]}"; do
    f=$tmp/$m.times
    med=$(median_of "$f" 1) min=$(min_of "$f" 1)
    cc=$(median_of "$f" 2) c0=$(median_of "$f" 3) c1=$(median_of "$f" 4)
    median[$m]=$med
    tsv "${label[$m]}" "$(s2 "$med")" "$(s2 "$min")" "$(s2 "$cc")" "$(s2 "$c0")" "$(s2 "$c1")" >>"$detail"
    # The one-process rows have no workers: their CPU is in the coordinator column.
    if [[ $m == local* ]]; then
        tsv "${label[$m]}" "$(s2 "$med")" "$(s2 "$cc")" "" "" >>"$doc"
    else
        tsv "${label[$m]}" "$(s2 "$med")" "$(s2 "$cc")" "$(s2 "$c0")" "$(s2 "$c1")" >>"$doc"
    fi
done
results_table distributed-detail "Scale-out with pinned workers: $fleet; query: $sql; $runs interleaved runs of each mode (workers: taskset -c 0 / -c 1 logsql worker; coordinators: $set_tasks). CPU columns: medians of the seconds each process used during one query, the one-process rows in the coordinator column; the worker columns show which process decompressed" -rrrrr <"$detail"
results_table distributed-pinned "Scale-out with pinned workers: ${#bags[@]} bz2 bags, medians of $runs interleaved runs" ----- <"$doc"
results_note "result (checked equal in every run): $(tr '\n' ';' <"$tmp/reference" | sed 's/;$//; s/;/; /g')"
speedup=$(awk -v a="${median[w1]}" -v b="${median[w2]}" 'BEGIN { printf "%.2f", a / b }')
ok=0
if awk -v s="$speedup" 'BEGIN { exit !(s >= 1.8) }'; then
    results_note "target met: 2 workers run the query ${speedup}x faster than 1 worker (target 1.8x)"
else
    results_note "TARGET MISSED: 2 workers run the query ${speedup}x faster than 1 worker (target 1.8x)"
    ok=1
fi
results_note "$(awk -v a="${median[w1]}" -v c="${median[local1]}" 'BEGIN { printf "1 worker vs one process on one core: %.2fx the time", a / c }')"
results_done
exit $ok
