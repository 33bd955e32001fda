#!/usr/bin/env python3
"""benches/support/report.py: docs/performance.md's figure tables, generated
from the committed results (benches/results/*.json, written by the comparisons
through benches/support/results.py).

docs/performance.md is its own template: its prose is written by hand, and each
figure table sits between two markers,

    <!-- table: raw-full -->
    | ... the table, generated ... |
    <!-- end -->

where `raw-full` is the id of a table in one of the results files (ids are
unique over all of them). This replaces what is between each pair of markers
with the table rendered from the data and leaves every other line as it is.

    python3 benches/support/report.py            # rewrites docs/performance.md
    python3 benches/support/report.py --check    # exits 1 (and prints the diff)
                                                 # if it differs from the data
    bash benches/run.sh --update-docs [NAMES]    # runs comparisons, copies their
                                                 # results here, then this

Options: --results DIR (default benches/results), --doc FILE (default
docs/performance.md). Python 3 standard library only.
"""

import argparse
import difflib
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results import markdown  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN = re.compile(r"^<!-- table: (\S+) -->$")
END = "<!-- end -->"
KEYS = ("id", "caption", "columns", "align", "rows")


class Error(Exception):
    pass


def load_tables(results):
    """id -> (table, file) of every table of every results file in RESULTS."""
    tables = {}
    paths = sorted(glob.glob(os.path.join(results, "*.json")))
    if not paths:
        raise Error(f"no results files (*.json) in {results}")
    for path in paths:
        name = os.path.relpath(path, ROOT)
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise Error(f"{name}: {e}") from e
        for t in data.get("tables", []):
            missing = [k for k in KEYS if k not in t]
            if missing:
                raise Error(f"{name}: a table without {', '.join(missing)}")
            n = len(t["columns"])
            if len(t["align"]) != n or any(len(r) != n for r in t["rows"]):
                raise Error(f"{name}: table {t['id']}: rows or align not {n} columns wide")
            if t["id"] in tables:
                raise Error(f"{name}: table id {t['id']} is also in {tables[t['id']][1]}")
            tables[t["id"]] = (t, name)
    return tables


def generate(doc_text, tables, doc_name="docs/performance.md"):
    """DOC_TEXT with every marked table replaced by its rendering; the ids used."""
    out, used = [], []
    lines = doc_text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        m = BEGIN.match(line.rstrip("\n"))
        if not m:
            if line.rstrip("\n") == END:
                raise Error(f"{doc_name}:{i}: {END} without a table marker before it")
            continue
        tid, start = m.group(1), i
        while i < len(lines) and lines[i].rstrip("\n") != END:
            if BEGIN.match(lines[i].rstrip("\n")):
                raise Error(f"{doc_name}:{i + 1}: a table marker inside table {tid} (line {start})")
            i += 1
        if i == len(lines):
            raise Error(f"{doc_name}:{start}: table {tid} has no {END}")
        if tid not in tables:
            raise Error(f"{doc_name}:{start}: no table '{tid}' in the results files")
        out.append(markdown(tables[tid][0]))
        out.append(lines[i])
        used.append(tid)
        i += 1
    return "".join(out), used


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="do not write: exit 1 if the document differs from what the data generates")
    ap.add_argument("--results", default=os.path.join(ROOT, "benches", "results"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args(argv)
    doc_name = os.path.relpath(args.doc, ROOT)
    try:
        with open(args.doc) as f:
            current = f.read()
        new, used = generate(current, load_tables(args.results), doc_name)
    except (Error, OSError) as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 2
    if args.check:
        if new == current:
            print(f"{doc_name}: its {len(used)} tables are what {os.path.relpath(args.results, ROOT)}/ generates",
                  file=sys.stderr)
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(keepends=True), new.splitlines(keepends=True),
            doc_name, doc_name + " (generated)"))
        print(f"{doc_name} differs from what {os.path.relpath(args.results, ROOT)}/ generates: "
              "run python3 benches/support/report.py (or edit the data, not the tables)", file=sys.stderr)
        return 1
    if new != current:
        with open(args.doc, "w") as f:
            f.write(new)
        print(f"{doc_name}: {len(used)} tables regenerated", file=sys.stderr)
    else:
        print(f"{doc_name}: unchanged ({len(used)} tables)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
