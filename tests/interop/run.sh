#!/usr/bin/env bash
# Python interop test for the MCAP reader: files written by the official Python
# `mcap` writer, read back by the official reader and by the logsql binary, compared
# field by field (see mcap_interop.py).
#
#   bash tests/interop/run.sh
#
# Environment:
#   LOGSQL_BIN   the logsql binary (default: $CARGO_TARGET_DIR/debug/logsql, else target/debug/logsql)
#   LOGSQL_VENV  the Python venv to create/use (default: target/interop-venv)
#   LOGSQL_INTEROP_KEEP  a directory to keep the generated .mcap files in (default: a temp dir)
#
# Needs python3 (with venv) and PyPI access the first time (pip install mcap).
# Prints "N passed, M failed" last; exits non-zero on any mismatch.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
bin=${LOGSQL_BIN:-$target_dir/debug/logsql}
venv=${LOGSQL_VENV:-$root/target/interop-venv}

if [[ ! -x "$bin" ]]; then
    echo "logsql binary not found at $bin: build it first (cargo build) or set LOGSQL_BIN" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import mcap, zstandard, lz4" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcap>=1.2,<2"
fi

args=(--logsql "$bin")
if [[ -n "${LOGSQL_INTEROP_KEEP:-}" ]]; then
    args+=(--keep "$LOGSQL_INTEROP_KEEP")
fi
exec "$venv/bin/python" "$root/tests/interop/mcap_interop.py" "${args[@]}"
