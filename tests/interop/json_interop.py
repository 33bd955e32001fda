#!/usr/bin/env python3
"""Interop test: NaN and ±infinity in logsql's JSON and NDJSON output read back
as the same floats by Python's ``json``, DuckDB's ``read_json`` and pandas'
``read_json`` (when pandas is installed), and SQL NULL as null / NaN-free NULL.

logsql writes the floats JSON has no literal for as the bare tokens ``NaN``,
``Infinity`` and ``-Infinity`` (docs/cli.md); the Rust test
``cli_wild::json_output_writes_nan_and_infinity_as_tokens_not_null`` checks the
exact text without Python.

Usage: json_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import duckdb
from common import Checks

SQL = (
    "SELECT * FROM (VALUES (1, CAST('NaN' AS DOUBLE)), (2, CAST('inf' AS DOUBLE)), "
    "(3, CAST('-inf' AS DOUBLE)), (4, CAST(NULL AS DOUBLE)), (5, 0.5)) AS t(id, x) ORDER BY id"
)


def expected(x):
    """The value of row ``x`` as a comparable token."""
    if x is None:
        return "null"
    if math.isnan(x):
        return "nan"
    return repr(float(x))


WANT = ["nan", "inf", "-inf", "null", "0.5"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or tmp
        os.makedirs(out, exist_ok=True)
        paths = {}
        for fmt in ("json", "ndjson"):
            text = subprocess.run(
                [args.logsql, "--format", fmt, SQL], capture_output=True, text=True, check=True
            ).stdout
            paths[fmt] = os.path.join(out, f"floats.{fmt}")
            with open(paths[fmt], "w") as f:
                f.write(text)

        def python_json():
            rows = json.load(open(paths["json"]))
            got = [expected(r["x"]) for r in rows]
            return None if got == WANT else f"read {got}"

        def python_ndjson():
            rows = [json.loads(line) for line in open(paths["ndjson"])]
            got = [expected(r["x"]) for r in rows]
            return None if got == WANT else f"read {got}"

        def duck(fmt):
            def check():
                rows = duckdb.sql(f"SELECT x FROM read_json('{paths[fmt]}') ORDER BY id").fetchall()
                got = [expected(r[0]) for r in rows]
                return None if got == WANT else f"read {got}"

            return check

        checks.check("python json: json", python_json)
        checks.check("python json: ndjson", python_ndjson)
        checks.check("duckdb read_json: json", duck("json"))
        checks.check("duckdb read_json: ndjson", duck("ndjson"))
        try:
            import pandas as pd
        except ImportError:
            print("skip pandas: not installed")
        else:
            # pandas keeps no NULL apart from NaN in a float column: null reads as NaN.
            want = ["nan", "inf", "-inf", "nan", "0.5"]

            def pandas(fmt):
                def check():
                    df = pd.read_json(paths[fmt], lines=fmt == "ndjson")
                    got = [expected(v) for v in df["x"].tolist()]
                    return None if got == want else f"read {got}"

                return check

            checks.check("pandas read_json: json", pandas("json"))
            checks.check("pandas read_json: ndjson", pandas("ndjson"))
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
