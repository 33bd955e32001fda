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
