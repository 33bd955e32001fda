#!/usr/bin/env python3
"""benches/support/results.py: the results of a comparison as data.

Every comparison in benches/ writes its figures to one JSON file,
$BENCH_RESULTS/<name>.json (default target/bench-results), and prints the same
tables as markdown on stdout (the report benches/run.sh keeps as <name>.md).
benches/support/report.py renders the committed copies (benches/results/) into
docs/performance.md.

The file:

    {
      "comparison": "raw",                       # the file's name, run.sh's name
      "command": "bash benches/run.sh raw",      # what produced it
      "env": {"RUNS": "30"},                     # the benchmark settings that were set
      "machine": {"cores": 2, "cpu": "...", "memory_gib": 24, ...},
      "tables": [
        {"id": "raw-full",                       # unique over every results file
         "caption": "...",                       # what the table shows (not rendered)
         "columns": ["format", "wall", ...],
         "align": ["", "right", ...],            # per column: "", "left", "right", "center"
         "rows": [["MCAP (zstd)", "0.86x", ...], ...]}   # markdown cells as displayed
      ],
      "notes": ["target met: ..."]               # lines of the report outside tables
    }

A table may also carry "values": one object of raw numbers per row, for
programs; the docs render "rows" only.

From Python (the scripts' embedded reports, asof_compare.py):

    sys.path.insert(0, "benches/support"); from results import Results
    r = Results("raw")               # a new $BENCH_RESULTS/raw.json.partial
    r.table("raw-full", "caption", ["a", "b"], [["x", "1"]], align="-r")
    r.note("a line")
    r.done()                         # renamed to raw.json: the run is complete

From shell (benches/support/common.sh wraps these as results_start,
results_table, results_note, results_done):

    results.py start NAME [COMMAND]
    results.py table NAME ID CAPTION [ALIGN] < TSV    # header line, then rows; tab-separated
    results.py note NAME TEXT...
    results.py done NAME

ALIGN is one character per column: "-" (none), "l", "r" or "c". A file is
written as NAME.json.partial and renamed to NAME.json by `done`, so a
comparison that stopped half-way leaves no NAME.json behind.
"""

import json
import os
import platform
import sys

ALIGN = {"-": "", "l": "left", "r": "right", "c": "center"}
# The settings of the comparison scripts recorded with their results when set.
ENV = (
    "RUNS", "PERF_RUNS", "FORMATS", "CACHE", "SKIP_BUILD", "BENCH_DATA", "DB3_SECONDS",
    "SIZE_MB", "CONCURRENT", "FILES", "BAG_SECONDS", "LEFT", "RIGHT", "LOGSQL_BENCH_FILE",
    "LOGSQL_BENCH_SECONDS", "OLD", "NEW", "SECONDS_SHORT",
)


def results_dir():
    d = os.environ.get("BENCH_RESULTS") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        "target", "bench-results")
    os.makedirs(d, exist_ok=True)
    return d


def read(path):
    with open(path) as f:
        return f.read()


def loadavg():
    return " ".join(read("/proc/loadavg").split()[:3])


def machine():
    """Facts about this machine that bear on the figures."""
    facts = {"cores": os.cpu_count(), "kernel": platform.release(), "arch": platform.machine()}
    try:
        for line in read("/proc/cpuinfo").splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in read("/proc/meminfo").splitlines():
            if line.startswith("MemTotal:"):
                facts["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
                break
        facts["load_average_start"] = loadavg()
    except OSError:
        pass
    if os.environ.get("BENCH_CACHE_STATE"):
        facts["page_cache"] = os.environ["BENCH_CACHE_STATE"]
    return facts


def align_list(align, n):
    """ALIGN as a string of -/l/r/c (or a list already) -> a list of n names."""
    if align is None:
        return [""] * n
    if isinstance(align, str):
        align = [ALIGN[c] for c in align]
    if len(align) != n:
        raise ValueError(f"{len(align)} alignments for {n} columns")
    return list(align)


def cell(v):
    return "" if v is None else str(v)


def dumps(v, indent=""):
    """JSON with one line per row: lists and objects of scalars stay on one line."""
    scalar = lambda x: not isinstance(x, (list, dict))
    inner = indent + " "
    if isinstance(v, list) and v and not all(map(scalar, v)):
        return "[\n" + ",\n".join(inner + dumps(x, inner) for x in v) + "\n" + indent + "]"
    if isinstance(v, dict) and v and not all(map(scalar, v.values())) or isinstance(v, dict) and len(v) > 4:
        items = (inner + json.dumps(k) + ": " + dumps(x, inner) for k, x in v.items())
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    return json.dumps(v, ensure_ascii=False)


def markdown(table):
    """A table as markdown: header, separator, rows (an empty cell as `| |`)."""
    sep = {"": "---", "left": ":---", "right": "---:", "center": ":---:"}

    def line(cells):
        return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"

    out = [line(table["columns"]), "|" + "|".join(sep[a] for a in table["align"]) + "|"]
    out += [line([cell(c).replace("\n", " ") for c in row]) for row in table["rows"]]
    return "\n".join(out) + "\n"


class Results:
    """The results file of one comparison, written as it grows."""

    def __init__(self, name, command=None, directory=None, fresh=True):
        self.name = name
        self.dir = directory or results_dir()
        os.makedirs(self.dir, exist_ok=True)
        self.partial = os.path.join(self.dir, name + ".json.partial")
        if not fresh:
            with open(self.partial) as f:
                self.data = json.load(f)
            return
        if command is None:
            command = os.environ.get("BENCH_COMMAND") or " ".join(
                ["python3" if sys.argv[0].endswith(".py") else "bash"] + sys.argv)
        self.data = {
            "comparison": name,
            "command": command,
            "env": {k: os.environ[k] for k in ENV if os.environ.get(k)},
            "machine": machine(),
            "tables": [],
        }
        final = os.path.join(self.dir, name + ".json")
        if os.path.exists(final):
            os.remove(final)
        self._write()

    @classmethod
    def resume(cls, name, directory=None):
        return cls(name, directory=directory, fresh=False)

    def _write(self):
        with open(self.partial, "w") as f:
            f.write(dumps(self.data) + "\n")

    def table(self, id, caption, columns, rows, align=None, values=None, quiet=False):
        """Adds a table (rows of cells; None is an empty cell) and prints it as markdown."""
        columns = [cell(c) for c in columns]
        rows = [[cell(c) for c in row] for row in rows]
        for row in rows:
            if len(row) != len(columns):
                raise ValueError(f"table {id}: a row of {len(row)} cells for {len(columns)} columns: {row}")
        t = {"id": id, "caption": caption, "columns": columns,
             "align": align_list(align, len(columns)), "rows": rows}
        if values is not None:
            t["values"] = values
        self.data["tables"].append(t)
        try:
            self.data["machine"]["load_average_end"] = loadavg()
        except OSError:
            pass
        self._write()
        if not quiet:
            print()
            print(caption)
            print()
            print(markdown(t), end="")
        return t

    def note(self, text, quiet=False):
        """A line of the report outside the tables (a target checked, a remark)."""
        self.data.setdefault("notes", []).append(text)
        self._write()
        if not quiet:
            print(text)

    def done(self):
        """The run is complete: NAME.json.partial becomes NAME.json."""
        final = os.path.join(self.dir, self.name + ".json")
        os.replace(self.partial, final)
        print(f"== results: {final}", file=sys.stderr)
        return final


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    op, name = argv[0], argv[1]
    if op == "start":
        Results(name, command=argv[2] if len(argv) > 2 else None)
    elif op == "table":
        if len(argv) < 4:
            sys.exit("usage: results.py table NAME ID CAPTION [ALIGN] < TSV")
        lines = [l.rstrip("\n") for l in sys.stdin if l.strip()]
        if not lines:
            sys.exit(f"results.py table {argv[2]}: no header line on stdin")
        columns = lines[0].split("\t")
        rows = [l.split("\t") for l in lines[1:]]
        Results.resume(name).table(argv[2], argv[3], columns, rows, argv[4] if len(argv) > 4 else None)
    elif op == "note":
        Results.resume(name).note(" ".join(argv[2:]))
    elif op == "done":
        Results.resume(name).done()
    else:
        sys.exit(f"unknown operation '{op}' (start, table, note, done)")


if __name__ == "__main__":
    main(sys.argv[1:])
