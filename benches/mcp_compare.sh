#!/usr/bin/env bash
# benches/mcp_compare.sh: an agent's first answer about a recording of about 1 GB from an
# MCP server started cold, logsql's (`logsql mcp`) against mcap-mcp-server (PyPI, which
# loads topics into DuckDB before it answers), both driven by the official MCP Python SDK
# over stdio (benches/support/mcp_first_answer.py).
#
#   bash benches/mcp_compare.sh
#   SKIP_BUILD=1 RUNS=3 SIZE_MB=1024 bash benches/mcp_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql --example gen_mcap (skip with SKIP_BUILD=1)
#  2. a venv ($BENCH_VENV) with `pip install mcp mcap-mcp-server[ros1]`; in $BENCH_DATA, if
#     missing, clip-SIZE_MB.mcap by gen_mcap (the recording of benches/clip_compare.sh:
#     200 Hz IMU, 50 Hz tf, 10 Hz 50 kB camera frames, zstd chunks of 1 MiB), linked into
#     a directory of its own (the servers' root)
#  3. RUNS runs of each, page cache warm, and one with the recording dropped from it: the
#     seconds from spawning the server to the answer of describing the recording
#     (describe_recording; get_recording_info) and to the answer of count(*) and the mean of
#     linear_acceleration.z over /imu (query of read_topic; load_recording, then query);
#     the two answers must agree
#  4. writes $BENCH_RESULTS/mcp.json (table mcp, in docs/performance.md:
#     `bash benches/run.sh --update-docs mcp`) and checks the target: logsql's first
#     answer under 0.5 s
#
# Environment: CARGO_TARGET_DIR, RUNS (5), SKIP_BUILD=1, BENCH_DATA, BENCH_VENV, SIZE_MB
# (1024), CACHE=as-is (see benches/support/common.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-5}
size_mb=${SIZE_MB:-1024}
needs bc
results_start mcp

if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "cargo build --release --bin logsql --example gen_mcap"
    cargo build --release --bin logsql --example gen_mcap >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
bench_venv "mcp, mcap_mcp_server, mcap_ros1" "mcp>=1.2,<2" "mcap-mcp-server[ros1]==0.5.1"
mkdir -p "$data"
rec=$data/clip-$size_mb.mcap
[[ -f $rec ]] || gen gen_mcap "$rec" --seconds $((376 * size_mb / 200))
root_dir=$data/mcp-root
mkdir -p "$root_dir"
name=$(basename "$rec")
[[ -f $root_dir/$name ]] || ln "$rec" "$root_dir/$name"
settle_cache "$logsql" "$rec"

# first KIND PROGRAM: one run's JSON line.
first() { "$py" benches/support/mcp_first_answer.py "$1" "$2" "$root_dir" "$name"; }
# series KIND PROGRAM: "describe_mean answer_mean answer_min cold_describe cold_answer ANSWER".
series() {
    local kind=$1 program=$2
    first "$kind" "$program" >/dev/null # warm-up
    for _ in $(seq "$runs"); do first "$kind" "$program"; done >"$tmp/$kind.jsonl"
    drop_cache "$rec"
    first "$kind" "$program" >"$tmp/$kind-cold.json"
    python3 - "$tmp/$kind.jsonl" "$tmp/$kind-cold.json" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
cold = json.load(open(sys.argv[2]))
d = statistics.mean(r["describe_s"] for r in runs)
a = [r["answer_s"] for r in runs]
n, z = runs[0]["answer"]
print(f"{d:.3f} {statistics.mean(a):.3f} {min(a):.3f} {cold['describe_s']:.3f} {cold['answer_s']:.3f} {n}:{z:.9f}")
PY
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

log "logsql mcp"
read -r l_d l_a l_min l_cd l_ca l_ans < <(series logsql "$logsql")
log "mcap-mcp-server"
read -r m_d m_a m_min m_cd m_ca m_ans < <(series mcap-mcp-server "$py")
same "count and mean of /imu linear_acceleration.z" "$m_ans" "$l_ans"
mb=$(du -m "$rec" | cut -f1)
{
    tsv server "describe" "first answer (mean, min)" "cold: describe" "cold: answer"
    tsv "\`logsql mcp\`" "$l_d s" "**$l_a s** ($l_min)" "$l_cd s" "$l_ca s"
    tsv "mcap-mcp-server $(py_version mcap-mcp-server | cut -d' ' -f2) (load_recording of /imu into DuckDB, then query)" "$m_d s" "$m_a s ($m_min)" "$m_cd s" "$m_ca s"
    tsv "mcap-mcp-server / logsql" "" "**$(echo "scale=1; $m_a / $l_a" | bc -l)x**" "" ""
} | results_table mcp "An agent's first answer about a $mb MB MCAP ($(echo "$l_ans" | cut -d: -f1) /imu messages), from spawning the server over stdio (the official MCP Python SDK, $(py_version mcp)): $runs runs each after a warm-up, page cache warm, and one with the recording dropped from the page cache" -rrrr
check "logsql's first answer about a $mb MB recording under 0.5 s (warm)" "$l_a" "<" 0.5
check "logsql's first answer under 0.5 s with the recording cold" "$l_ca" "<" 0.5
results_done
exit $ok
