#!/usr/bin/env python3
"""Tests of benches/support/report.py and results.py (Python 3 stdlib, no
benchmark runs): the committed docs/performance.md is what benches/results/
generates (report.py --check), and the check fails on a table edited by hand,
an unknown id or a missing end marker. Run by .ci/run:

    python3 benches/support/test_report.py
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report  # noqa: E402
import results  # noqa: E402


def quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return fn(*args)


class CommittedDocs(unittest.TestCase):
    def test_performance_md_is_generated_from_the_data(self):
        # The real check: the committed docs equal what the committed data generates.
        self.assertEqual(report.main(["--check"]), 0)


class Check(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.results = os.path.join(d, "results")
        r = results.Results("demo", command="bash benches/run.sh demo", directory=self.results)
        quiet(r.table, "demo-t", "a caption", ["what", "time", ""], [["full scan", "0.045 s", "**12.6x**"], ["window", None, ""]], "-rr")
        quiet(r.done)
        self.doc = os.path.join(d, "doc.md")
        self.write("# Doc\n\nProse.\n\n<!-- table: demo-t -->\n<!-- end -->\n\nMore prose.\n")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, text):
        with open(self.doc, "w") as f:
            f.write(text)

    def run_report(self, *args):
        return quiet(report.main, ["--results", self.results, "--doc", self.doc, *args])

    def test_generate_then_check(self):
        self.assertEqual(self.run_report("--check"), 1)  # the table is not there yet
        self.assertEqual(self.run_report(), 0)
        with open(self.doc) as f:
            text = f.read()
        self.assertIn("| what | time | |\n|---|---:|---:|\n| full scan | 0.045 s | **12.6x** |\n| window | | |\n", text)
        self.assertTrue(text.startswith("# Doc\n\nProse.\n\n<!-- table: demo-t -->\n|"))
        self.assertTrue(text.endswith("<!-- end -->\n\nMore prose.\n"))
        self.assertEqual(self.run_report("--check"), 0)
        # a figure edited by hand in the docs
        self.write(text.replace("0.045 s", "0.040 s"))
        self.assertEqual(self.run_report("--check"), 1)

    def test_data_changed(self):
        self.run_report()
        path = os.path.join(self.results, "demo.json")
        with open(path) as f:
            data = json.load(f)
        data["tables"][0]["rows"][0][1] = "0.050 s"
        with open(path, "w") as f:
            f.write(results.dumps(data))
        self.assertEqual(self.run_report("--check"), 1)

    def test_errors(self):
        self.write("<!-- table: nosuch -->\n<!-- end -->\n")
        self.assertEqual(self.run_report("--check"), 2)
        self.write("<!-- table: demo-t -->\n| a |\n")
        self.assertEqual(self.run_report("--check"), 2)

    def test_shell_writer(self):
        # results.py's command line, as benches/support/common.sh calls it
        import subprocess
        env = dict(os.environ, BENCH_RESULTS=self.results)
        py = [sys.executable, os.path.join(HERE, "results.py")]
        subprocess.run(py + ["start", "sh", "bash benches/x.sh"], env=env, check=True)
        self.assertFalse(os.path.exists(os.path.join(self.results, "sh.json")))
        out = subprocess.run(py + ["table", "sh", "sh-t", "cap", "-r"], env=env, check=True, text=True,
                             input="name\tsize\nMCAP\t1.94 GB\n", capture_output=True).stdout
        self.assertIn("| MCAP | 1.94 GB |", out)
        subprocess.run(py + ["note", "sh", "target", "met"], env=env, check=True, capture_output=True)
        subprocess.run(py + ["done", "sh"], env=env, check=True, capture_output=True)
        with open(os.path.join(self.results, "sh.json")) as f:
            data = json.load(f)
        self.assertEqual(data["tables"][0]["rows"], [["MCAP", "1.94 GB"]])
        self.assertEqual(data["tables"][0]["align"], ["", "right"])
        self.assertEqual(data["notes"], ["target met"])
        self.assertEqual(data["machine"]["cores"], os.cpu_count())


if __name__ == "__main__":
    print("== docs/performance.md's tables equal what benches/results/ generates (report.py --check)",
          file=sys.stderr)
    unittest.main()
