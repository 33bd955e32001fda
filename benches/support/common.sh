# benches/support/common.sh, sourced by the comparison scripts (after they set
# $target, the cargo target directory of the release build): logging, the
# benchmark-data generators, and how busy the machine is with other processes.

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
    python3 - "$@" <<'PY'
import os, sys
for top in sys.argv[1:]:
    if os.path.isdir(top):
        paths = [os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs]
    else:
        paths = [top]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            while os.read(fd, 1 << 20):
                pass
        finally:
            os.close(fd)
PY
}
