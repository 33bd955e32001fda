#!/usr/bin/env bash
# Builds the fuzz targets and runs each for a bounded time; fails on any
# crash, hang (-timeout) or out-of-memory (-rss_limit_mb).
#
#   bash tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 30); TARGETs default to all of them. One
# libFuzzer process at a time (one core). Each target's corpus,
# $LOGSQL_FUZZ_HOME/corpus/<target>, is seeded first when empty (seed.sh);
# new coverage is added to it. Crashing inputs go to
# $LOGSQL_FUZZ_HOME/artifacts/<target>/, logs to $LOGSQL_FUZZ_HOME/logs/<target>/.
# Nothing is written inside the repository.
#
# Environment:
#   LOGSQL_FUZZ_HOME   default $HOME/.cache/logsql-fuzz (also holds the target dir)
#   CARGO_TARGET_DIR   default $LOGSQL_FUZZ_HOME/target
#   FUZZ_MAX_LEN       largest input in bytes (default: per target, see max_len_of)
#   FUZZ_BUILD_ARGS    `cargo fuzz build` flags (default "-s address": release
#                      with debug assertions, overflow checks and AddressSanitizer;
#                      "-s none" leaves ASan out, about 3x the executions)
#   LIBFUZZER_ARGS     extra libFuzzer flags (e.g. "-runs=10000000")
set -euo pipefail

fuzz_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$fuzz_dir/../.." && pwd)
home=${LOGSQL_FUZZ_HOME:-$HOME/.cache/logsql-fuzz}
export LOGSQL_FUZZ_HOME=$home
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$home/target}
all_targets=(mcap bag bag_write apollo bddf carla ros2 db3_write ros2_metadata ros1msg cdr protobuf json points images)

seconds=30
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    [[ " ${all_targets[*]} " == *" $t "* ]] || {
        echo "run.sh: unknown target $t (known: ${all_targets[*]})" >&2
        exit 2
    }
done

# Largest input per target. Large enough for complete small files of the
# format (a ROS bag's header record alone is padded to 4 KiB; most MCAP
# conformance files are under 1 KiB; Apollo's chunk sections are cheap to walk),
# small enough for thousands of executions a second: larger seeds are cut to
# it, which keeps the torn-file paths busy. Decoder inputs are under 4 KiB.
max_len_of() {
    case $1 in
        apollo | ros2 | db3_write) echo 65536 ;;
        mcap | bag | bag_write | bddf | images) echo 16384 ;;
        carla) echo 8192 ;;
        *) echo 4096 ;;
    esac
}

cd "$repo"
# Release build with debug assertions and overflow checks (cargo fuzz's
# default profile) under AddressSanitizer: an out-of-bounds access or a
# use-after-free in an `unsafe` block of logsql or of a dependency (arrow's
# unchecked constructors, the decompressors) is a finding even when it does
# not crash. ASan costs about 3x the executions; FUZZ_BUILD_ARGS="-s none"
# trades it for speed in long local runs.
# shellcheck disable=SC2086 # FUZZ_BUILD_ARGS is a list of flags
nice cargo +nightly fuzz build --fuzz-dir tests/fuzz ${FUZZ_BUILD_ARGS:--s address}
bin_dir=$CARGO_TARGET_DIR/$(rustc +nightly -vV | sed -n 's/^host: //p')/release

failed=()
summary=()
for t in "${targets[@]}"; do
    corpus=$home/corpus/$t
    if [ -z "$(ls -A "$corpus" 2>/dev/null)" ]; then
        bash "$fuzz_dir/seed.sh" "$t"
    fi
    mkdir -p "$home/artifacts/$t" "$home/logs/$t"
    log=$home/logs/$t/run-$(date -u +%Y%m%dT%H%M%SZ).log
    echo "== $t: ${seconds}s, corpus $corpus, log $log"
    status=0
    # shellcheck disable=SC2086 # LIBFUZZER_ARGS is a list of flags
    (cd "$home/logs/$t" && nice "$bin_dir/$t" "$corpus" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -max_len="${FUZZ_MAX_LEN:-$(max_len_of "$t")}" -print_final_stats=1 \
        -artifact_prefix="$home/artifacts/$t/" ${LIBFUZZER_ARGS:-}) >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ $status -ne 0 ]; then
        echo "!! $t FAILED (exit $status); tail of $log:"
        tail -n 40 "$log"
        failed+=("$t")
        summary+=("$t: FAILED after ${runs:-?} executions (${rate:-?}/s), see $log")
    else
        summary+=("$t: ${runs:-?} executions, ${rate:-?} exec/s, no crash")
    fi
done

echo "== fuzz summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
echo "fuzz: $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
    echo "crashing inputs: $home/artifacts/<target>/ (reproduce: <binary> <file>)" >&2
    exit 1
fi
