#!/usr/bin/env bash
# benches/lerobot_compare.sh: a robot recording to a LeRobot v3 dataset, `logsql dataset`
# against the path users write today in Python (the official `mcap` reader, `rosbags`,
# Pillow and LeRobot's own writer).
#
#   bash benches/lerobot_compare.sh
#   SKIP_BUILD=1 RUNS=2 SECONDS_SHORT=135 bash benches/lerobot_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql --example gen_robot (skip with SKIP_BUILD=1)
#  2. the LeRobot venv ($LOGSQL_LEROBOT_VENV, default ~/.cache/logsql-lerobot-venv: lerobot
#     brings torch, several GB; the same venv as tests/interop/run.sh's lerobot suite)
#  3. generates in $BENCH_DATA, if missing, with examples/gen_robot.rs: robot-S.mcap, S =
#     SECONDS_SHORT (135) seconds of joint states (100 Hz), commands (10 Hz), a 640x480 rgb8
#     camera (30 Hz) and a 640x480 JPEG wrist camera (15 Hz), about 2.1 MB a second; and one
#     4x as long (540 s by default: 1.1 GB) for the memory check and logsql's time on it
#  4. checks that both datasets have the same frames and episodes
#  5. times with hyperfine (--warmup 1 --runs RUNS; whole processes, wall clock):
#           python  python_lerobot.py convert (mcap reader, rosbags, Pillow, then
#                   LeRobotDataset.create(vcodec="h264", streaming_encoding=True), add_frame,
#                   save_episode, finalize: LeRobot's fastest path, libx264 in PyAV threads)
#           logsql  logsql dataset SPEC -o DIR (the spec's state, action and both cameras;
#                   OpenH264)
#  6. peak RSS (`/usr/bin/time -v`) of both on the short file, and of logsql on the 4x file,
#     whose one run also gives logsql's time on it (Python is timed on the short file only:
#     at its rate a run on the 4x file takes about 6 minutes)
#  7. writes $BENCH_RESULTS/lerobot.json (tables lerobot-detail and lerobot, the latter in
#     docs/performance.md: `bash benches/run.sh --update-docs lerobot`) and checks the
#     targets: logsql >= 5x faster than Python, under 60 s per GB of recording (on the 4x
#     file), and its peak RSS on the 4x file within 1.25x of the short file's.
#
# Environment: CARGO_TARGET_DIR, RUNS (2), SKIP_BUILD=1, BENCH_DATA, SECONDS_SHORT (135),
# LOGSQL_LEROBOT_VENV, CACHE=as-is (see benches/support/common.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-2}
short_s=${SECONDS_SHORT:-135}
long_s=$((short_s * 4))
pyl=$root/benches/python_lerobot.py
short=$data/robot-${short_s}s.mcap
long=$data/robot-${long_s}s.mcap
needs hyperfine bc
results_start lerobot

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --bin logsql --example gen_robot"
    cargo build --release --bin logsql --example gen_robot >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
lerobot_venv=${LOGSQL_LEROBOT_VENV:-$HOME/.cache/logsql-lerobot-venv}
if [[ ! -x "$lerobot_venv/bin/python" ]]; then
    log "creating $lerobot_venv"
    python3 -m venv "$lerobot_venv"
fi
py=$lerobot_venv/bin/python
if ! "$py" -c "import lerobot, mcap, rosbags, PIL" 2>/dev/null; then
    "$py" -m pip install --quiet --disable-pip-version-check "lerobot>=0.4,<0.5" "mcap>=1.2,<2" "rosbags>=0.11,<0.12" Pillow >&2
fi
export HF_HUB_OFFLINE=1
mkdir -p "$data"
for f in "$short:$short_s" "$long:$long_s"; do
    path=${f%:*}
    if [[ ! -f $path ]]; then
        gen gen_robot "$path.partial" --seconds "${f##*:}" --width 640 --height 480 --wrist
        mv "$path.partial" "$path"
    fi
done
settle_cache "$short" "$long" "$logsql"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec() { # spec INPUT: a dataset spec of the recording's state, action and both cameras
    cat <<EOF
input = "$1"
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
}
spec "$short" >"$tmp/short.toml"
spec "$long" >"$tmp/long.toml"

log "checking the outputs"
"$py" "$pyl" convert "$short" "$tmp/py" >/dev/null 2>&1
"$logsql" dataset "$tmp/short.toml" -o "$tmp/ls" >&2
read -r py_frames py_episodes < <("$py" "$pyl" count "$tmp/py")
read -r ls_frames ls_episodes < <("$py" "$pyl" count "$tmp/ls")
same "frames and episodes of both datasets" "$py_frames $py_episodes" "$ls_frames $ls_episodes"
frames=$py_frames
rm -rf "$tmp/py" "$tmp/ls"

# Each run writes a new dataset (neither writer overwrites one).
read -r py_t py_sd py_min _ < <(hyperfine_time python bash -c "rm -rf '$tmp/py' && '$py' '$pyl' convert '$short' '$tmp/py' >/dev/null 2>&1")
read -r ls_t ls_sd ls_min _ < <(hyperfine_time logsql bash -c "rm -rf '$tmp/ls' && '$logsql' dataset '$tmp/short.toml' -o '$tmp/ls' >/dev/null 2>&1")

log "peak RSS"
rm -rf "$tmp/py" "$tmp/ls"
py_rss=$(peak_rss "$py" "$pyl" convert "$short" "$tmp/py")
ls_rss=$(peak_rss "$logsql" dataset "$tmp/short.toml" -o "$tmp/ls")
read -r ls_rss4 ls_t4 < <(peak_rss_and_seconds "$logsql" dataset "$tmp/long.toml" -o "$tmp/ls4")
read -r frames4 _ < <("$py" "$pyl" count "$tmp/ls4")

ratio() { echo "scale=1; $1 / $2" | bc -l; }
ratio2() { echo "scale=2; $1 / $2" | bc -l; }
mb=$(du -m "$short" | cut -f1)
mb4=$(du -m "$long" | cut -f1)
per_gb() { echo "scale=0; $1 * 1024 / ${2:-$mb}" | bc -l; }
rate() { echo "scale=0; ${2:-$frames} / $1" | bc -l; }
versions=$(py_version lerobot torch av mcap rosbags)
{
    tsv task "python" logsql speed-up
    tsv "$frames frames, 2 cameras, from a ${short_s} s recording ($mb MB)" "${py_t} ± ${py_sd} s (${py_min})" "${ls_t} ± ${ls_sd} s (${ls_min})" "$(ratio "$py_t" "$ls_t")x"
    tsv "$frames4 frames, 2 cameras, from a ${long_s} s recording ($mb4 MB), one run" "" "${ls_t4} s" ""
    tsv "peak RSS, ${short_s} s / ${long_s} s recording" "${py_rss} MB (${short_s} s)" "${ls_rss} MB / ${ls_rss4} MB" ""
} | results_table lerobot-detail "A recording to a LeRobot dataset against the official mcap reader + rosbags + LeRobot's writer ($versions): $runs runs each (hyperfine, 1 warm-up), mean ± stddev (min); page cache: $BENCH_CACHE_STATE" ----
# The table of docs/performance.md (## LeRobot datasets).
{
    tsv task "python (mcap + rosbags + LeRobot)" logsql speed-up
    tsv "a ${short_s} s recording ($mb MB: 640x480 camera at 30 Hz, JPEG camera at 15 Hz, joints) to $frames frames" "$(rate "$py_t") frames/s ($(per_gb "$py_t") s per GB)" "$(rate "$ls_t") frames/s ($(per_gb "$ls_t") s per GB)" "**$(ratio "$py_t" "$ls_t")x**"
    tsv "a ${long_s} s recording ($mb4 MB) to $frames4 frames, one run" "" "$(rate "$ls_t4" "$frames4") frames/s ($(per_gb "$ls_t4" "$mb4") s per GB)" ""
    tsv "peak RSS, ${short_s} s and ${long_s} s recordings" "${py_rss} MB (${short_s} s)" "${ls_rss} MB and ${ls_rss4} MB" ""
} | results_table lerobot "A recording to a LeRobot dataset against the official mcap reader + rosbags + LeRobot's writer ($versions)" -rrr
check "logsql >= 5x faster than python" "$(ratio2 "$py_t" "$ls_t")" ">=" 5
check "logsql under 60 s per GB of recording (the ${long_s} s one, $mb4 MB)" "$(per_gb "$ls_t4" "$mb4")" "<" 60
check "peak RSS on the 4x recording within 1.25x of the short one's" "$(ratio2 "$ls_rss4" "$ls_rss")" "<=" 1.25
results_done
exit $ok
