#!/usr/bin/env bash
# benches/mcap_write_compare.sh: the MCAP-writing targets of issue 20, measured
# with the logsql CLI against the official Python libraries (rosbags reader +
# mcap writer) on the ~200 MB benchmark recordings.
#
#   bash benches/mcap_write_compare.sh
#
# Steps:
#  1. cargo build --release --example gen_bag --example gen_mcap --bin logsql (skip with SKIP_BUILD=1)
#  2. generate target/bench-data/bench-lz4.bag and bench.mcap if missing
#     (the files of benches/bag_compare.sh and benches/compare.sh)
#  3. a venv in target/bench-venv with `pip install rosbags mcap`
#  4. time RUNS runs each (min and median of wall clock, whole processes):
#       python  bag -> zstd MCAP: rosbags Reader + mcap Writer (1 MiB zstd chunks)
#       logsql  export bench-lz4.bag out.mcap              (zstd, 1 MiB chunks, log_time order)
#       logsql  COPY (SELECT * FROM bag) TO out.mcap       (the same, in the scan's order)
#       python  /imu and /tf in a 10% window of bench.mcap -> MCAP: mcap reader + writer
#       logsql  export bench.mcap win.mcap --topic /imu --topic /tf --start --end
#       logsql  SELECT count(*), sum(length(data)) FROM bag  (the full scan alone)
#       zstd -3 of the same message bytes (an uncompressed MCAP copy; `zstd -T0`)
#  5. checks every output has the input's message count, prints a markdown
#     table and the issue's targets: logsql >= 10x faster than Python on both
#     tasks; the full conversion within 2x of the full scan plus zstd.
#
# Environment: CARGO_TARGET_DIR (default target), RUNS (3), SKIP_BUILD=1,
# BENCH_VENV (target/bench-venv). Warm page cache; the machine is shared, so
# the minimum is the figure to quote.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
runs=${RUNS:-3}
venv=${BENCH_VENV:-$root/target/bench-venv}
data=$root/target/bench-data
out=$(mktemp -d)
logsql=$target/release/logsql
bag=$data/bench-lz4.bag
mcap=$data/bench.mcap

log() { echo "== $*" >&2; }

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --example gen_bag --example gen_mcap --bin logsql"
    cargo build --release --example gen_bag --example gen_mcap --bin logsql >&2
fi
mkdir -p "$data"
[[ -f $bag ]] || { log "generating $bag"; "$target/release/examples/gen_bag" "$bag" --compression lz4 >&2; }
[[ -f $mcap ]] || { log "generating $mcap"; "$target/release/examples/gen_mcap" "$mcap" --seconds 376 >&2; }

if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import rosbags, mcap" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "rosbags>=0.11,<0.12" "mcap>=1.2,<2"
fi

py=$(mktemp --suffix=.py)
trap 'rm -f "$py"; rm -rf "$out"' EXIT
cat >"$py" <<'EOF'
"""bag OUT: a ROS1 bag to MCAP (ros1 profile). window IN OUT T1,T2 LO HI: topics of an MCAP
in [LO, HI) to a new MCAP. range IN: prints the 45%..55% window of an MCAP."""
import sys
from mcap.reader import make_reader
from mcap.writer import CompressionType, Writer

cmd = sys.argv[1]
if cmd == "bag":
    from rosbags.rosbag1 import Reader
    with Reader(sys.argv[2]) as r, open(sys.argv[3], "wb") as f:
        w = Writer(f, compression=CompressionType.ZSTD, chunk_size=1024 * 1024)
        w.start(profile="ros1", library="python mcap")
        ids = {}
        for c in r.connections:
            # rosbags names types the ROS 2 way (`pkg/msg/Type`).
            sid = w.register_schema(c.msgtype.replace("/msg/", "/"), "ros1msg", c.msgdef.data.encode())
            meta = {"callerid": c.ext.callerid or "", "latching": str(c.ext.latching or 0)}
            ids[c.id] = w.register_channel(c.topic, "ros1", sid, meta)
        n = 0
        for c, t, raw in r.messages():
            w.add_message(ids[c.id], log_time=t, publish_time=t, data=raw)
            n += 1
        w.finish()
    print(n)
elif cmd == "window":
    src, dst, topics, lo, hi = sys.argv[2], sys.argv[3], sys.argv[4].split(","), int(sys.argv[5]), int(sys.argv[6])
    with open(src, "rb") as f, open(dst, "wb") as o:
        w = Writer(o, compression=CompressionType.ZSTD, chunk_size=1024 * 1024)
        w.start(profile="", library="python mcap")
        schemas, channels, n = {}, {}, 0
        for s, c, m in make_reader(f).iter_messages(topics=topics, start_time=lo, end_time=hi):
            if c.id not in channels:
                if s is not None and s.id not in schemas:
                    schemas[s.id] = w.register_schema(s.name, s.encoding, s.data)
                channels[c.id] = w.register_channel(c.topic, c.message_encoding, schemas[s.id] if s else 0, c.metadata)
            w.add_message(channels[c.id], log_time=m.log_time, publish_time=m.publish_time, data=m.data, sequence=m.sequence)
            n += 1
        w.finish()
    print(n)
elif cmd == "range":
    with open(sys.argv[2], "rb") as f:
        st = make_reader(f).get_summary().statistics
    span = st.message_end_time - st.message_start_time
    print(st.message_start_time + span * 45 // 100, st.message_start_time + span * 55 // 100)
EOF

# Prints "min median" (seconds) of RUNS runs of the command.
timeit() {
    local times=()
    for _ in $(seq "$runs"); do
        local s e
        s=$(date +%s.%N)
        "$@" >/dev/null
        e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc -l)")
    done
    printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f %.3f\n", a[1], a[int((NR+1)/2)]}'
}

count() { "$logsql" "SELECT count(*) FROM '$1'" --format csv | tail -n 1; }

read -r lo hi < <("$venv/bin/python" "$py" range "$mcap")
start="${lo}ns"
end="${hi}ns"
total=$(count "$bag")

log "checking the outputs"
n=$("$venv/bin/python" "$py" bag "$bag" "$out/py.mcap")
[[ "$n" == "$total" && "$(count "$out/py.mcap")" == "$total" ]] || { echo "python conversion: $n of $total" >&2; exit 1; }
"$logsql" export "$bag" "$out/ls.mcap" >&2
[[ "$(count "$out/ls.mcap")" == "$total" ]] || { echo "logsql conversion lost messages" >&2; exit 1; }
pw=$("$venv/bin/python" "$py" window "$mcap" "$out/pyw.mcap" /imu,/tf "$lo" "$hi")
"$logsql" export "$mcap" "$out/lsw.mcap" --topic /imu --topic /tf --start "$start" --end "$end" >&2
[[ "$(count "$out/lsw.mcap")" == "$pw" ]] || { echo "window: python $pw, logsql $(count "$out/lsw.mcap")" >&2; exit 1; }
"$logsql" "COPY (SELECT * FROM '$bag') TO '$out/raw.mcap' OPTIONS (compression 'none')" >/dev/null
log "agree: $total messages converted; window /imu,/tf: $pw messages"

log "timing ($runs runs each)"
read -r py_conv py_conv_med < <(timeit "$venv/bin/python" "$py" bag "$bag" "$out/py.mcap")
read -r ls_conv ls_conv_med < <(timeit "$logsql" export "$bag" "$out/ls.mcap")
read -r ls_copy ls_copy_med < <(timeit "$logsql" "COPY (SELECT * FROM '$bag') TO '$out/copy.mcap'")
read -r py_win py_win_med < <(timeit "$venv/bin/python" "$py" window "$mcap" "$out/pyw.mcap" /imu,/tf "$lo" "$hi")
read -r ls_win ls_win_med < <(timeit "$logsql" export "$mcap" "$out/lsw.mcap" --topic /imu --topic /tf --start "$start" --end "$end")
read -r scan scan_med < <(timeit "$logsql" "SELECT count(*), sum(length(data)) FROM '$bag'" --format csv)
read -r zs zs_med < <(timeit zstd -q -3 -T0 -c "$out/raw.mcap")

ratio() { echo "scale=1; $1 / $2" | bc -l; }
base=$(echo "$scan + $zs" | bc -l)
cat <<EOF

| task | python (rosbags + mcap) | logsql | speed-up |
|---|---|---|---|
| $(du -m "$bag" | cut -f1) MB lz4 bag ($total messages) -> zstd MCAP | ${py_conv} s (median ${py_conv_med}) | export: ${ls_conv} s (median ${ls_conv_med}); COPY: ${ls_copy} s (median ${ls_copy_med}) | $(ratio "$py_conv" "$ls_conv")x |
| /imu + /tf, 10% window of the $(du -m "$mcap" | cut -f1) MB MCAP ($pw messages) -> MCAP | ${py_win} s (median ${py_win_med}) | ${ls_win} s (median ${ls_win_med}) | $(ratio "$py_win" "$ls_win")x |
| full scan of the bag (logsql) + zstd -3 of its $(du -m "$out/raw.mcap" | cut -f1) MB of messages | | ${scan} s + ${zs} s = ${base} s | export: $(ratio "$ls_conv" "$base")x of it |

EOF
ok=0
if (( $(echo "$py_conv / $ls_conv >= 10" | bc -l) )); then echo "target met: conversion >= 10x faster than Python"; else echo "TARGET MISSED: conversion < 10x faster than Python"; ok=1; fi
if (( $(echo "$py_win / $ls_win >= 10" | bc -l) )); then echo "target met: window extraction >= 10x faster than Python"; else echo "TARGET MISSED: window extraction < 10x faster than Python"; ok=1; fi
if (( $(echo "$ls_conv <= 2 * $base" | bc -l) )); then echo "target met: conversion within 2x of a full scan plus zstd"; else echo "TARGET MISSED: conversion slower than 2x a full scan plus zstd"; ok=1; fi
exit $ok
