"""Starts ``logsql serve`` on free loopback ports for the serve interop suite
and for benches/serve_compare.py (which imports this file by path): Python's
standard library only."""

import re
import subprocess
import threading


def start(binary, root, demo, *extra, flight=False):
    """``logsql serve --root ROOT`` (with ``--table demo=DEMO`` unless ``demo``
    is None, then ``extra``) on free loopback ports; returns (process,
    Postgres port, Flight SQL port or None). Raises RuntimeError with the
    server's output if it ends before listening (a binary without Flight
    SQL, asked for it, says "built without Arrow Flight SQL")."""
    args = [binary, "serve", "--pg", "127.0.0.1:0", "--root", root]
    if demo is not None:
        args += ["--table", f"demo={demo}"]
    if flight:
        args += ["--flight", "127.0.0.1:0"]
    proc = subprocess.Popen(
        args + list(extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    pg = fl = None
    for line in proc.stderr:
        seen.append(line)
        m = re.search(r"Postgres wire on 127\.0\.0\.1:(\d+)", line)
        if m:
            pg = int(m.group(1))
        m = re.search(r"Arrow Flight SQL on 127\.0\.0\.1:(\d+)", line)
        if m:
            fl = int(m.group(1))
        if pg and (fl or not flight):
            # Keep draining stderr so the server never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, pg, fl
    proc.wait()
    raise RuntimeError("logsql serve ended before listening:\n" + "".join(seen))
