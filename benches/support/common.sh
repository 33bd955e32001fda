# benches/support/common.sh, sourced by the comparison scripts first thing:
#   source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
# It sets the paths every script uses and cds to the repository; gives logging,
# the benchmark-data generators, the venv of the Python readers, the checks that
# both sides agree, how busy the machine is with other processes, and the
# results writer (results_start, results_table, results_note, results_done:
# benches/support/results.py, one JSON file a comparison in $BENCH_RESULTS).
#
#   root     the repository                      target   $CARGO_TARGET_DIR (default
#   data     $BENCH_DATA (target/bench-data)              $HOME/.cache/logsql-target, exported)
#   venv     $BENCH_VENV (target/bench-venv)     logsql   $target/release/logsql
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$HOME/.cache/logsql-target}
export CARGO_TARGET_DIR=$target
data=${BENCH_DATA:-$root/target/bench-data}
venv=${BENCH_VENV:-$root/target/bench-venv}
logsql=$target/release/logsql
# The command line of the script that sourced this (for its results file).
bench_argv=("${0#"$root"/}" "$@")

# log MESSAGE...: a progress line on stderr.
log() { echo "== $*" >&2; }

# gen NAME OUT ARGS...: runs examples/NAME.rs (release) to write OUT.
gen() {
    local bin=$target/release/examples/$1 out=$2
    shift 2
    [[ -x "$bin" ]] || { echo "missing $bin to generate $out (build it, or unset SKIP_BUILD)" >&2; exit 1; }
    log "generating $out"
    "$bin" "$out" "$@" >&2
}

# The busy and total CPU jiffies so far (non-idle and all time in /proc/stat).
cpu_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

# others: the cores busy with other processes over 1 s while the caller sleeps.
# (The load average would count the previous benchmark itself, so this is what
# flags a busy machine.)
others() {
    local b0 t0 b1 t1
    read -r b0 t0 < <(cpu_jiffies)
    sleep 1
    read -r b1 t1 < <(cpu_jiffies)
    awk -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v n="$(nproc)" 'BEGIN { printf "%.2f", (t > 0 ? n * b / t : 0) }'
}

# settle_cache PATH...: puts the files (directories: every file under them) in
# the page cache as a file read from disk is: their cached pages are dropped
# (posix_fadvise DONTNEED, after fsync so that none is dirty) and the file is
# read once front to back, so that the kernel's read-ahead caches it in large
# folios. Without this the state depends on how the file was written: pages a
# writer left behind in small writes (SQLite's 4 KiB pages, a Python writer's
# buffered writes) stay cached in 4 KiB folios, which makes every read of them
# dearer, and makes a memory map of them much dearer than one of large folios
# (the raw baselines read through maps). The programs timed are settled the
# same way: a binary the linker or `cp` has just written sits in small folios,
# and every page of it that a process touches is then mapped in at a cost
# (`logsql "SELECT 1"`: 6-7 ms of CPU against 3.7 ms once settled); an
# installed program read back from disk is in large folios. CACHE=as-is skips
# this; the state it leaves is $BENCH_CACHE_STATE, for the scripts' reports.
if [[ "${CACHE:-settle}" == as-is ]]; then
    export BENCH_CACHE_STATE="files cached as earlier use left them (CACHE=as-is)"
else
    export BENCH_CACHE_STATE="each file and program dropped from the page cache and read once, as from disk"
fi
settle_cache() {
    [[ "${CACHE:-settle}" == as-is ]] && return 0
    log "page cache: dropping and re-reading $*"
    page_cache settle "$@"
}

# drop_cache PATH...: the files (directories: every file under them) dropped from the page
# cache (posix_fadvise DONTNEED, after fsync so that none is dirty): the next read of them is
# from disk (a cold run). Unlike settle_cache, CACHE=as-is does not skip it.
drop_cache() { page_cache drop "$@"; }

# page_cache drop|settle PATH...: what drop_cache and settle_cache do (settle: each file also
# read once front to back after it is dropped).
page_cache() {
    python3 - "$@" <<'PY'
import os, sys
mode, tops = sys.argv[1], sys.argv[2:]
for top in tops:
    if os.path.isdir(top):
        paths = [os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs]
    else:
        paths = [top]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            while mode == "settle" and os.read(fd, 1 << 20):
                pass
        finally:
            os.close(fd)
PY
}

# needs TOOL...: exits unless every TOOL is installed.
needs() {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null || { echo "$t is needed (apt-get install $t)" >&2; exit 1; }
    done
}

# bench_venv [IMPORTS PIP-SPEC...]: $venv (created when missing) with the packages
# installed unless `import IMPORTS` already works; sets $py to its python. Without
# arguments it only creates the venv (a script installing packages one case at a time).
bench_venv() {
    if [[ ! -x "$venv/bin/python" ]]; then
        log "creating $venv"
        python3 -m venv "$venv"
    fi
    py=$venv/bin/python
    [[ $# -gt 0 ]] || return 0
    local imports=$1
    shift
    if ! "$py" -c "import $imports" 2>/dev/null; then
        "$py" -m pip install --quiet --disable-pip-version-check "$@" >&2
    fi
}

# py_version PACKAGE...: "name version" of each installed distribution in $py's
# environment (for captions), comma-separated.
py_version() {
    "$py" - "$@" <<'PY'
import importlib.metadata as m, sys
print(", ".join(f"{n} {m.version(n)}" for n in sys.argv[1:]))
PY
}

# hyperfine_time NAME CMD...: $runs runs of CMD under hyperfine (--shell bash, --warmup 1;
# wall clock, whole processes) into $tmp/NAME.json (the caller sets runs and tmp); prints
# "mean stddev min median cpu" (seconds, 3 decimals; cpu: mean user + system time).
hyperfine_time() {
    local name=$1
    shift
    log "timing $name"
    hyperfine --shell bash --warmup 1 --runs "$runs" --style none \
        --export-json "$tmp/$name.json" "$(printf '%q ' "$@")" >&2
    python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['results'][0]
print('%.3f %.3f %.3f %.3f %.3f' % (r['mean'], r['stddev'] or 0, r['min'], r['median'], r['user'] + r['system']))" "$tmp/$name.json"
}

# peak_rss CMD...: the peak resident set size of CMD in MB (`/usr/bin/time -v`).
peak_rss() {
    /usr/bin/time -v "$@" 2>&1 >/dev/null | awk '/Maximum resident set size/ { printf "%.0f", $6 / 1024 }'
}

# peak_rss_and_seconds CMD...: "MB SECONDS", the peak RSS and the wall-clock time of one run
# of CMD (`/usr/bin/time -v`; its stdout discarded).
peak_rss_and_seconds() {
    /usr/bin/time -v "$@" 2>&1 >/dev/null | awk '
        /Maximum resident set size/ { mb = $6 / 1024 }
        /Elapsed \(wall clock\) time/ {
            n = split($NF, part, ":"); s = 0
            for (i = 1; i <= n; i++) s = s * 60 + part[i]
        }
        END { printf "%.0f %.1f\n", mb, s }'
}

# plan_metric PLANFILE NAME: a scan metric of an EXPLAIN ANALYZE output as printed
# ("192.2 M"; empty when absent): its first NAME= (the scan metrics are on the scan's line;
# to_num makes a number of it).
plan_metric() {
    grep -o "[ ,\[]$2=[0-9.]*\( [KMBGT]\)\?" "$1" | head -n 1 | cut -d= -f2 || true
}

# logsql_row ARGS...: the one row logsql prints as CSV (after its header), as "a b c".
logsql_row() { "$logsql" --format csv "$@" | tail -n 1 | tr -d '\r' | tr ',' ' '; }

# sqlq TEXT: TEXT quoted for an SQL string literal (quotes doubled).
sqlq() { printf '%s' "${1//\'/\'\'}"; }

# same WHAT REFERENCE LOGSQL: exits unless the two answers are equal.
same() {
    if [[ "$2" != "$3" ]]; then
        echo "MISMATCH ($1): reference='$2' logsql='$3'" >&2
        exit 1
    fi
    log "agree ($1): $2"
}

# to_num "192.2 M": a metric as EXPLAIN ANALYZE prints it (4 digits, K/M/B/G/T), as a number.
to_num() {
    python3 -c "
import sys
v = sys.argv[1].split()
print(round(float(v[0]) * {'': 1, 'K': 1e3, 'M': 1e6, 'B': 1e9, 'G': 1e9, 'T': 1e12}[v[1] if len(v) > 1 else '']) if v else '')" "$1"
}

# The results writer (benches/support/results.py; the file's format is in its header).
# results_start NAME: a new $BENCH_RESULTS/NAME.json.partial with the machine's facts and
# the command ($BENCH_COMMAND, which benches/run.sh sets, or this script's command line).
# results_table ID CAPTION [ALIGN]: a table from stdin (tab-separated: a header line, then
# the rows), printed as markdown too; ALIGN has one of - l r c per column.
# results_note TEXT...: a line of the report (a target checked). results_done: renames the
# file to NAME.json, the mark of a complete run (benches/run.sh --update-docs copies only those).
results_py=$root/benches/support/results.py
results_start() {
    bench_name=$1
    export BENCH_NAME=$1 # for the scripts' embedded Python: Results.resume(os.environ["BENCH_NAME"])
    python3 "$results_py" start "$bench_name" "${BENCH_COMMAND:-bash ${bench_argv[*]}}"
}
results_table() { python3 "$results_py" table "$bench_name" "$@"; }
results_note() { python3 "$results_py" note "$bench_name" "$@"; }
results_done() { python3 "$results_py" done "$bench_name"; }
# check WHAT VALUE CMP LIMIT: notes in the results whether a target is met (`VALUE CMP LIMIT`,
# evaluated by bc); a missed one sets ok=1, which the scripts exit with.
ok=0
check() {
    if (($(echo "$2 $3 $4" | bc -l))); then
        results_note "target met: $1 ($2)"
    else
        results_note "TARGET MISSED: $1 ($2)"
        ok=1
    fi
}
# tsv CELL...: one tab-separated line (a row for results_table).
tsv() { local IFS=$'\t'; printf '%s\n' "$*"; }
