#!/usr/bin/env bash
# Builds the logsql Python package (a debug wheel, maturin) into a venv and runs
# its tests (python/tests/) with pytest. Run by .ci/run; by hand:
#
#   bash python/run_tests.sh
#
# Environment:
#   LOGSQL_PY_VENV   the venv to create/use (default: $HOME/.cache/logsql-pyvenv)
#   CARGO_TARGET_DIR shared with the Rust build (default: target/)
# Needs python3 >= 3.10 with venv, and PyPI the first time (maturin, datafusion 55,
# pyarrow, pandas, polars, pytest). pytest's last line is "N passed ...".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${LOGSQL_PY_VENV:-$HOME/.cache/logsql-pyvenv}

if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import maturin, datafusion, pyarrow, pandas, polars, pytest" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "maturin>=1.8,<2" "datafusion>=55,<56" pyarrow pandas polars pytest
fi

wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
"$venv/bin/maturin" build --manifest-path "$root/python/Cargo.toml" \
    --interpreter "$venv/bin/python" --out "$wheels"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --force-reinstall --no-deps "$wheels"/*.whl
# From outside the source tree, so `import logsql` is the installed package.
cd "$wheels"
"$venv/bin/python" -m pytest -q "$root/python/tests"
