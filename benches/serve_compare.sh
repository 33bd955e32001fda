#!/usr/bin/env bash
# benches/serve_compare.sh: `logsql serve` measured from its clients (the method is in
# benches/serve_compare.py's header): first-row latency over Postgres wire against
# the CLI's whole process, and a full scan over Flight SQL against pyarrow reading a
# Parquet export.
#
#   bash benches/serve_compare.sh
#   SKIP_BUILD=1 RUNS=10 bash benches/serve_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql --example gen_mcap, with the `flight` feature
#     when protoc is installed (skip with SKIP_BUILD=1; without it, Flight is skipped)
#  2. target/bench-data/bench.mcap (gen_mcap, 376 s, ~194 MB), generated if missing
#  3. a venv ($BENCH_VENV) with psycopg, pyarrow and adbc-driver-flightsql
#  4. benches/serve_compare.py: $BENCH_RESULTS/serve.json
#
# Environment: CARGO_TARGET_DIR, RUNS (10), SKIP_BUILD=1, BENCH_VENV, BENCH_DATA,
# CACHE=as-is (see benches/support/common.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
runs=${RUNS:-10}
mcap=$data/bench.mcap

if [[ -z "${SKIP_BUILD:-}" ]]; then
    features=()
    command -v protoc >/dev/null && features=(--features flight)
    log "cargo build --release --bin logsql --example gen_mcap ${features[*]}"
    cargo build --release --bin logsql --example gen_mcap "${features[@]}" >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
mkdir -p "$data"
[[ -f $mcap ]] || gen gen_mcap "$mcap" --seconds 376
bench_venv "psycopg, pyarrow, adbc_driver_flightsql" "psycopg[binary]>=3.2" pyarrow adbc-driver-flightsql
settle_cache "$mcap" "$logsql"
"$py" benches/serve_compare.py "$logsql" "$mcap" "$runs"
