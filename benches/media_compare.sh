#!/usr/bin/env bash
# benches/media_compare.sh: camera images, measured with the logsql CLI against the
# path users write today in Python (the official `mcap` reader, Pillow, PyAV).
#
#   bash benches/media_compare.sh
#   SKIP_BUILD=1 RUNS=5 SECONDS_SHORT=30 bash benches/media_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql (skip with SKIP_BUILD=1)
#  2. a venv ($BENCH_VENV) with mcap, numpy, Pillow and av (PyAV)
#  3. generates in $BENCH_DATA, if missing, with benches/python_media.py gen: camera-S.mcap,
#     a 640x480 30 fps JPEG camera topic /camera/front (ros1 sensor_msgs/CompressedImage,
#     JPEG quality 85, zstd chunks, the official `mcap` writer) of S = SECONDS_SHORT (60)
#     seconds, and one 4x as long for the memory check
#  4. checks that both sides agree: the thumbnail count, the video frame count, and the
#     times of logsql's frames (PyAV decodes them at 1/30 s steps)
#  5. times with hyperfine (--warmup 1 --runs RUNS; whole processes, wall clock):
#     (a) thumbnails: every image as a 160-pixel PNG thumbnail
#           python  python_media.py thumbs (mcap reader, Pillow open/thumbnail/save PNG)
#           logsql  SELECT count(*), sum(length(image_thumbnail(image, 160)))
#                   FROM read_images(FILE, '/camera/front')
#     (b) video: the topic as an H.264 MP4, one frame per message at its log time
#           python  python_media.py video (mcap reader, Pillow decode, PyAV libx264 with
#                   baseline profile, quantizer 19 (logsql's default quality), preset
#                   ultrafast: the fastest x264 preset, so the comparison is conservative)
#           logsql  logsql export FILE clip.mp4 --topic /camera/front (OpenH264, quantizer 19)
#  6. peak RSS (`/usr/bin/time -v`) of (a) and (b) on the short and the 4x file
#  7. writes $BENCH_RESULTS/media.json (tables media-detail and media, the latter in
#     docs/performance.md: `bash benches/run.sh --update-docs media`) and checks the
#     targets: logsql >= 3x faster than Python for (a) and (b), the video export >= 4x
#     real time, and logsql's peak RSS on the 4x file within 1.25x of the short file's.
#
# Environment: CARGO_TARGET_DIR, RUNS (3), SKIP_BUILD=1, BENCH_VENV, BENCH_DATA,
# SECONDS_SHORT (60), CACHE=as-is (see benches/support/common.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-3}
short_s=${SECONDS_SHORT:-60}
long_s=$((short_s * 4))
pym=$root/benches/python_media.py
short=$data/camera-${short_s}s.mcap
long=$data/camera-${long_s}s.mcap
topic=/camera/front
needs hyperfine bc
results_start media

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --bin logsql"
    cargo build --release --bin logsql >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
bench_venv "mcap, numpy, PIL, av" "mcap>=1.2,<2" numpy pillow av
mkdir -p "$data"
for f in "$short:$short_s" "$long:$long_s"; do
    path=${f%:*}
    if [[ ! -f $path ]]; then
        log "generating $path"
        "$py" "$pym" gen "$path.partial" "${f##*:}" >&2
        mv "$path.partial" "$path"
    fi
done
settle_cache "$short" "$long" "$logsql"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
thumb_sql="SELECT count(*), sum(length(image_thumbnail(image, 160))) FROM read_images('$short', '$topic')"

log "checking the outputs"
read -r py_thumbs _ < <("$py" "$pym" thumbs "$short" 160)
read -r ls_thumbs _ <<<"$(logsql_row "$thumb_sql")"
same "thumbnails: python's count and logsql's" "$py_thumbs" "$ls_thumbs"
frames=$py_thumbs
"$py" "$pym" video "$short" "$tmp/py.mp4" >/dev/null
"$logsql" export "$short" "$tmp/ls.mp4" --topic "$topic" >&2
read -r py_frames _ < <("$py" "$pym" frames "$tmp/py.mp4")
read -r ls_frames ls_times < <("$py" "$pym" frames "$tmp/ls.mp4")
same "video: PyAV's frame count of python's MP4 and of logsql's" "$py_frames" "$ls_frames"
same "video: logsql's first frame times" "$ls_times" "0.0000 0.0333 0.0667 0.1000 0.1333"
sizes="python $(stat -c %s "$tmp/py.mp4") bytes, logsql $(stat -c %s "$tmp/ls.mp4") bytes"

read -r py_a py_a_sd py_a_min _ < <(hyperfine_time py_thumbs "$py" "$pym" thumbs "$short" 160)
read -r ls_a ls_a_sd ls_a_min _ < <(hyperfine_time ls_thumbs "$logsql" --format csv "$thumb_sql")
read -r py_b py_b_sd py_b_min _ < <(hyperfine_time py_video "$py" "$pym" video "$short" "$tmp/py.mp4")
read -r ls_b ls_b_sd ls_b_min _ < <(hyperfine_time ls_video "$logsql" export "$short" "$tmp/ls.mp4" --topic "$topic")

log "peak RSS"
rss_a=$(peak_rss "$logsql" --format csv "$thumb_sql")
rss_a4=$(peak_rss "$logsql" --format csv "${thumb_sql//$short/$long}")
rss_b=$(peak_rss "$logsql" export "$short" "$tmp/ls.mp4" --topic "$topic")
rss_b4=$(peak_rss "$logsql" export "$long" "$tmp/ls4.mp4" --topic "$topic")
py_rss_b=$(peak_rss "$py" "$pym" video "$short" "$tmp/py.mp4")

ratio() { printf '%.1f' "$(echo "scale=3; $1 / $2" | bc -l)"; }
ratio2() { echo "scale=2; $1 / $2" | bc -l; }
rate() { echo "scale=0; $frames / $1" | bc -l; }
versions=$(py_version mcap pillow av numpy)
mb=$(du -m "$short" | cut -f1)
realtime=$(echo "scale=1; $short_s / $ls_b" | bc -l)
{
    tsv task "python" logsql speed-up
    tsv "(a) $frames thumbnails (160 px PNG)" "${py_a} ± ${py_a_sd} s (${py_a_min})" "${ls_a} ± ${ls_a_sd} s (${ls_a_min})" "$(ratio "$py_a" "$ls_a")x"
    tsv "(b) $frames frames to H.264 MP4 ($sizes)" "${py_b} ± ${py_b_sd} s (${py_b_min})" "${ls_b} ± ${ls_b_sd} s (${ls_b_min})" "$(ratio "$py_b" "$ls_b")x"
    tsv "peak RSS of (a), ${short_s} s / ${long_s} s recording" "" "${rss_a} MB / ${rss_a4} MB" ""
    tsv "peak RSS of (b), ${short_s} s / ${long_s} s recording" "${py_rss_b} MB (${short_s} s)" "${rss_b} MB / ${rss_b4} MB" ""
} | results_table media-detail "Camera images against the official mcap reader + Pillow + PyAV ($versions): $runs runs each (hyperfine, 1 warm-up), mean ± stddev (min); page cache: $BENCH_CACHE_STATE" ----
# The table of docs/performance.md (## Camera images).
{
    tsv task "python (mcap + Pillow + PyAV)" logsql speed-up
    tsv "(a) thumbnails of a ${short_s} s 640x480 30 fps JPEG camera ($mb MB, $frames images)" "$(rate "$py_a") images/s" "$(rate "$ls_a") images/s" "**$(ratio "$py_a" "$ls_a")x**"
    tsv "(b) the same camera as an H.264 MP4" "$(rate "$py_b") frames/s" "$(rate "$ls_b") frames/s (${realtime}x real time)" "**$(ratio "$py_b" "$ls_b")x**"
    tsv "peak RSS of (b), ${short_s} s and ${long_s} s recordings" "${py_rss_b} MB (${short_s} s)" "${rss_b} MB and ${rss_b4} MB" ""
} | results_table media "Camera images against the official mcap reader + Pillow + PyAV ($versions)" -rrr
check "(a) logsql >= 3x faster than python" "$(ratio2 "$py_a" "$ls_a")" ">=" 3
check "(b) logsql >= 3x faster than python" "$(ratio2 "$py_b" "$ls_b")" ">=" 3
check "(b) the video export >= 4x real time" "$realtime" ">=" 4
check "(b) peak RSS on the 4x recording within 1.25x of the short one's" "$(ratio2 "$rss_b4" "$rss_b")" "<=" 1.25
results_done
exit $ok
