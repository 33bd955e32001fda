#!/usr/bin/env bash
# benches/ab_write.sh: two builds of logsql side by side in one run, on the
# writers: the same robot recording written as MCAP, as an MP4 video and as a
# LeRobot dataset, as whole processes, the two binaries timed in turn
# (hyperfine), so a change to the write side is judged against the build
# before it on the same machine state.
#
#   OLD=/path/to/old/logsql NEW=/path/to/new/logsql bash benches/ab_write.sh
#   RUNS=5 SECONDS_LONG=120 OLD=... NEW=... bash benches/ab_write.sh
#
# The recording is examples/gen_robot.rs's (release; SECONDS_LONG seconds, 60
# by default: 640x480 rgb8 camera at 30 Hz, 640x480 JPEG wrist camera at 15 Hz,
# joint states at 100 Hz, commands at 10 Hz, about 2.1 MB a second), written to
# $BENCH_DATA if missing. The writes:
#   mcap     logsql export REC out.mcap                       (the MCAP writer)
#   mp4      logsql export REC clip.mp4 --topic /camera/front  (decode, 4:2:0, H.264)
#   lerobot  logsql dataset SPEC -o DIR  (state, action and both cameras, 30 fps)
# Both binaries' outputs must hold the same (the MCAP's message count and payload
# bytes, the video's bytes, the dataset's frames: the script fails otherwise).
# Writes $BENCH_RESULTS/ab-write.json (table ab-write: mean wall time and
# mean user+system CPU of each, and NEW/OLD ratios) and prints the table.
# Environment: OLD, NEW (required), RUNS (3), SECONDS_LONG (60), BENCH_DATA,
# BENCH_RESULTS, SKIP_BUILD=1 (gen_robot must then exist).
set -euo pipefail
: "${OLD:?OLD=path of the old logsql binary}" "${NEW:?NEW=path of the new logsql binary}"
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
export BENCH_CACHE_STATE="files cached as earlier use left them (ab_write.sh does not settle them)"
runs=${RUNS:-3}
seconds=${SECONDS_LONG:-60}
rec=$data/robot-${seconds}s.mcap
needs hyperfine
results_start ab-write

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --example gen_robot"
    cargo build --release --example gen_robot >&2
fi
mkdir -p "$data"
if [[ ! -f $rec ]]; then
    gen gen_robot "$rec.partial" --seconds "$seconds" --width 640 --height 480 --wrist
    mv "$rec.partial" "$rec"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/spec.toml" <<EOF
input = "$rec"
fps = 30
task = "pick the cube"
robot_type = "demo_arm"
[features]
"observation.state" = { topic = "/joint_states", field = "position" }
"action" = { topic = "/cmd", field = "position" }
[cameras]
"observation.images.front" = "/camera/front"
"observation.images.wrist" = "/camera/wrist"
EOF

# write NAME BIN OUT: the command line of write NAME by BIN into OUT.
write() {
    case $1 in
    mcap) echo "'$2' export '$rec' '$3'" ;;
    mp4) echo "'$2' export '$rec' '$3' --topic /camera/front" ;;
    lerobot) echo "'$2' dataset '$tmp/spec.toml' -o '$3'" ;;
    esac
}
# rows NAME OUT: what the output of NAME holds, as NEW reads it.
rows() {
    case $1 in
    mcap) "$NEW" --format csv "SELECT count(*), sum(length(data)) FROM '$2'" | tail -1 ;;
    mp4) md5sum <"$2" | cut -d' ' -f1 ;;
    lerobot) "$NEW" --format csv "SELECT count(*) FROM '$2/data/'" | tail -1 ;;
    esac
}
out() { case $1 in mcap) echo "$tmp/$2.mcap" ;; mp4) echo "$tmp/$2.mp4" ;; lerobot) echo "$tmp/$2-ds" ;; esac; }

table=$tmp/rows.tsv
tsv write "old wall s" "new wall s" "new/old wall" "old CPU s" "new CPU s" "new/old CPU" >"$table"
for w in mcap mp4 lerobot; do
    o=$(out "$w" old) n=$(out "$w" new)
    rm -rf "$o" "$n"
    bash -c "$(write "$w" "$OLD" "$o")" >/dev/null 2>&1
    bash -c "$(write "$w" "$NEW" "$n")" >/dev/null 2>&1
    a=$(rows "$w" "$o") b=$(rows "$w" "$n")
    [[ "$a" == "$b" ]] || { echo "$w: old and new outputs differ: $a / $b" >&2; exit 1; }
    log "$w: both wrote $b"
    hyperfine --warmup 1 --runs "$runs" --export-json "$tmp/$w.json" \
        -n old "rm -rf '$o' && $(write "$w" "$OLD" "$o") >/dev/null 2>&1" \
        -n new "rm -rf '$n' && $(write "$w" "$NEW" "$n") >/dev/null 2>&1" >/dev/null
    python3 - "$tmp/$w.json" "$w" <<'PY' | tee -a "$table" >&2
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
o, n = r["old"], r["new"]
co, cn = o["user"] + o["system"], n["user"] + n["system"]
print("\t".join([sys.argv[2], f"{o['mean']:.2f}", f"{n['mean']:.2f}", f"{n['mean'] / o['mean']:.2f}", f"{co:.2f}", f"{cn:.2f}", f"{cn / co:.2f}"]))
PY
done
results_table ab-write "Two builds' writers side by side on a ${seconds} s robot recording: OLD=$OLD, NEW=$NEW; hyperfine --warmup 1 --runs $runs, the two in turn; mean wall and mean user+system CPU" -rrrrrr <"$table"
results_done
