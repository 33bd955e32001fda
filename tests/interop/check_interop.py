#!/usr/bin/env python3
"""Interop test: ``logsql check``, the data-quality gate.

Recordings written by the official ``mcap`` writer (ROS1 encoding): a 40 s
run with ``/imu`` at 200 Hz (a ``std_msgs/Header`` stamped 1 ms before its
log time) and ``/camera/front`` at 10 Hz, clean, and one copy per known
fault: ``/imu`` at 80% of its rate, a 3 s gap in ``/imu``, no
``/camera/front``, an early end (6 s), and header stamps that go back. One
``EXPECT.toml`` asks for all of it. Checks:

- every faulty recording fails exactly the checks of its fault, and the
  clean one passes every check (JSON report);
- the exit status is 0 on the clean recording alone, 1 with a failing one,
  2 with an unreadable one;
- the JUnit XML is read by ``junitparser`` (PyPI): one suite per recording,
  its failures exactly the faulty checks, each failure's message naming the
  topic.

Usage: check_interop.py --logsql PATH/TO/logsql [--keep DIR]
"""

import argparse
import json
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from junitparser import Failure, JUnitXml
from mcap.writer import Writer

from common import Checks

START = 1_700_000_000_000_000_000
SECOND = 1_000_000_000
STAMPED = b"std_msgs/Header header\nfloat64 value\n================================================================================\nMSG: std_msgs/Header\nuint32 seq\ntime stamp\nstring frame_id\n"

EXPECT = """
[recording]
required_topics = ["/imu", "/camera/front"]
min_duration = "10s"

[topics."/imu"]
rate = 200
rate_tolerance = 0.1
max_gap = "50ms"
monotonic_stamps = true
max_stamp_skew = "20ms"

[topics."/camera/front"]
rate = 10
"""

# What each recording must fail, exactly: (check, topic).
FAULTS = {
    "clean.mcap": set(),
    "slow.mcap": {("rate", "/imu")},
    "gap.mcap": {("max_gap", "/imu")},
    "missing.mcap": {("required_topic", "/camera/front")},
    "short.mcap": {("min_duration", None)},
    "stamps.mcap": {("monotonic_stamps", "/imu")},
}


def message(seq, stamp, value):
    sec, nsec = divmod(stamp, SECOND)
    frame = b"imu"
    return struct.pack("<III", seq, sec, nsec) + struct.pack("<I", len(frame)) + frame + struct.pack("<d", value)


def write(path, fault):
    seconds = 6 if fault == "short.mcap" else 40
    imu_hz = 160 if fault == "slow.mcap" else 200
    with open(path, "wb") as f:
        w = Writer(f)
        w.start(profile="ros1", library="check_interop")
        schema = w.register_schema(name="logsql_test/Stamped", encoding="ros1msg", data=STAMPED)
        imu = w.register_channel(topic="/imu", message_encoding="ros1", schema_id=schema)
        cam = w.register_channel(topic="/camera/front", message_encoding="ros1", schema_id=schema)
        events = []
        for i in range(seconds * imu_hz):
            t = START + i * SECOND // imu_hz
            if fault == "gap.mcap" and START + 20 * SECOND <= t < START + 23 * SECOND:
                continue
            stamp = t - 1_000_000
            if fault == "stamps.mcap" and i % 1000 == 500:
                stamp = t - 10_000_000  # 5 ms before the one before it
            events.append((t, imu, i, stamp))
        if fault != "missing.mcap":
            for i in range(seconds * 10 + 1):
                t = START + i * SECOND // 10
                events.append((t, cam, i, t))
        events.sort(key=lambda e: (e[0], e[1]))
        for t, channel, seq, stamp in events:
            w.add_message(channel, log_time=t, publish_time=t, data=message(seq, stamp, 1.0), sequence=seq)
        w.finish()


def run(logsql, *args):
    return subprocess.run([logsql, "check", *args], capture_output=True, text=True, timeout=300)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    checks = Checks()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="check_interop"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for name in FAULTS:
            write(work / name, name)
        expect = work / "EXPECT.toml"
        expect.write_text(EXPECT)
        files = [str(work / n) for n in FAULTS]

        proc = run(args.logsql, *files, "--expect", str(expect), "--format", "json")
        reports = {Path(r["file"]).name: r for r in json.loads(proc.stdout)} if proc.stdout else {}

        for name, faults in FAULTS.items():

            def exact(name=name, faults=faults):
                r = reports.get(name)
                if r is None:
                    return f"no report ({proc.stderr.strip()})"
                failed = {(c["check"], c["topic"]) for c in r["checks"] if not c["passed"]}
                if failed != faults:
                    return f"failed {sorted(failed, key=str)}, expected {sorted(faults, key=str)}"
                want = "pass" if not faults else "fail"
                if r["verdict"] != want:
                    return f"verdict {r['verdict']}"
                if len(r["checks"]) < 8:
                    return f"only {len(r['checks'])} checks"
                return None

            checks.check(f"{name}: fails exactly {sorted(faults, key=str) or 'nothing'}", exact)

        def statuses():
            clean = run(args.logsql, str(work / "clean.mcap"), "--expect", str(expect))
            bad = proc.returncode
            (work / "junk.mcap").write_bytes(b"not a recording at all")
            unreadable = run(args.logsql, str(work / "clean.mcap"), str(work / "junk.mcap"), "--expect", str(expect))
            got = (clean.returncode, bad, unreadable.returncode)
            if got != (0, 1, 2):
                return f"exit statuses {got}, expected (0, 1, 2): {unreadable.stdout} {unreadable.stderr}"
            if "PASS" not in clean.stdout or "UNREADABLE" not in unreadable.stdout:
                return f"text reports: {clean.stdout!r} {unreadable.stdout!r}"
            return None

        checks.check("exit status: 0 pass, 1 fail, 2 unreadable", statuses)

        def junit():
            out = run(args.logsql, *files, "--expect", str(expect), "--format", "junit")
            path = work / "report.xml"
            path.write_text(out.stdout)
            xml = JUnitXml.fromfile(str(path))
            suites = {Path(s.name).name: s for s in xml}
            if set(suites) != set(FAULTS):
                return f"suites {sorted(suites)}"
            for name, faults in FAULTS.items():
                suite = suites[name]
                failed = []
                for case in suite:
                    results = [r for r in case.result if isinstance(r, Failure)]
                    if results:
                        failed.append(case.name)
                        topic = case.name.split(" ", 1)[1] if " " in case.name else None
                        if topic and topic not in (results[0].message or ""):
                            return f"{name}: failure message {results[0].message!r} does not name {topic}"
                want = sorted(f"{c} {t}" if t else c for c, t in faults)
                if sorted(failed) != want:
                    return f"{name}: JUnit failures {sorted(failed)}, expected {want}"
                if suite.failures != len(faults) or suite.tests < 8:
                    return f"{name}: suite counts tests={suite.tests} failures={suite.failures}"
            return None

        checks.check("JUnit XML read by junitparser: a suite per recording, failures exactly the faults", junit)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
