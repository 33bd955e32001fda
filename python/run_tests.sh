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
# pyarrow, pandas, polars, pytest; mcap and rosbags, the official readers COPY's
# outputs are read back with). pytest's last line is "N passed ...".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${LOGSQL_PY_VENV:-$HOME/.cache/logsql-pyvenv}

if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import maturin, datafusion, pyarrow, pandas, polars, pytest, mcap, rosbags" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "maturin>=1.8,<2" "datafusion>=55,<56" pyarrow pandas polars pytest "mcap>=1.2,<2" "rosbags>=0.11,<0.12"
fi

wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
"$venv/bin/maturin" build --manifest-path "$root/python/Cargo.toml" \
    --interpreter "$venv/bin/python" --out "$wheels"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --force-reinstall --no-deps "$wheels"/*.whl
# From outside the source tree, so `import logsql` is the installed package.
cd "$wheels"

# A real version mismatch: the same wheel beside datafusion-python 54 must
# refuse to hand it a table, with the message that says what to install, and
# logsql.sql() (no datafusion-python involved) must still work.
old_venv=${LOGSQL_PY_VENV_DF54:-$HOME/.cache/logsql-pyvenv-df54}
if [[ ! -x "$old_venv/bin/python" ]]; then
    python3 -m venv "$old_venv"
fi
if ! "$old_venv/bin/python" -c "import datafusion, pyarrow" 2>/dev/null; then
    "$old_venv/bin/python" -m pip install --quiet --disable-pip-version-check "datafusion==54.1.0" pyarrow
fi
"$old_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --force-reinstall --no-deps "$wheels"/*.whl
"$old_venv/bin/python" - "$root/tests/data/demo.mcap" <<'PY'
import sys
import datafusion, logsql
assert datafusion.__version__.startswith("54."), datafusion.__version__
try:
    logsql.table(sys.argv[1])
except ImportError as e:
    message = str(e)
    assert "built on DataFusion 55" in message and "pip install 'datafusion>=55,<56'" in message, message
    print(f"version mismatch refused as expected: {message}")
else:
    raise SystemExit("logsql.table() accepted datafusion-python 54")
assert logsql.sql(f"SELECT count(*) AS n FROM '{sys.argv[1]}'").to_pydict() == {"n": [2610]}
PY

"$venv/bin/python" -m pytest -q "$root/python/tests"
