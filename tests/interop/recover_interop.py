"""logsql recover against recordings the official writers left behind when killed.

Each writer (the official Python ``mcap`` writer, ``rosbags``' ROS1 bag writer,
``rosbags``' ROS 2 sqlite3 writer) runs in a child process that records until
the file has grown past a threshold, and is then killed with SIGKILL: the
recording has no footer, index or summary (ROS 2: no metadata.yaml, and the
database's last transaction left in its journal), and its last record may be
cut. Copies of a complete official MCAP are also cut at
random offsets and have bytes flipped in a chunk. For each damaged input:

- ``logsql doctor`` reports problems (exit status 1), naming the kind injected;
- ``logsql recover IN OUT.mcap`` succeeds and never changes IN;
- the official ``mcap`` reader opens OUT with CRC validation, both through
  its summary (``make_reader(..., validate_crcs=True)``) and record by record,
  finds its messages in log-time order, and its messages (topic, log time,
  payload hash) equal what logsql reads from the damaged input under
  ``--on-error warn``;
- every message the official reader can still read from a damaged MCAP input
  is among them;
- metadata and attachments written before the kill are in OUT.

The killed ROS1 bag (and cuts of its recovered copy) is also recovered with
``--to bag``, and the killed ROS 2 bag with ``--to db3``: ``rosbags``' own
readers (``rosbags.rosbag1.Reader``, ``rosbags.rosbag2.Reader``) open OUT
through its index or ``metadata.yaml``, read the same messages (topic, log
time, payload hash) in time order, with the connection's type and md5sum
(ROS1) or the topic's type and count (ROS 2), and deserialize them;
``logsql doctor`` calls OUT healthy.

Usage: recover_interop.py --logsql PATH/TO/logsql [--keep DIR]
"""

import argparse
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

from mcap.reader import make_reader
from mcap.stream_reader import StreamReader
from mcap.records import Message as McapMessage

from common import Checks, Logsql, check_rosbags_read, diff_multisets

MCAP_WRITER = textwrap.dedent(
    """
    import json, sys, time
    from mcap.writer import Writer, CompressionType
    out = open(sys.argv[1], "wb")
    w = Writer(out, chunk_size=8192, compression=CompressionType.ZSTD)
    w.start(profile="", library="recover-interop")
    w.add_metadata("recording", {"robot": "r1", "site": "lab"})
    w.add_attachment(log_time=1, create_time=1, name="calib.yaml", media_type="text/yaml", data=b"k: 1\\n")
    sid = w.register_schema(name="Counter", encoding="jsonschema", data=b'{"type":"object"}')
    a = w.register_channel(topic="/counter", message_encoding="json", schema_id=sid)
    b = w.register_channel(topic="/blob", message_encoding="application/octet-stream", schema_id=0)
    i = 0
    while True:
        t = 1_700_000_000_000_000_000 + i * 1_000_000
        w.add_message(channel_id=a, log_time=t, publish_time=t, sequence=i, data=json.dumps({"i": i}).encode())
        w.add_message(channel_id=b, log_time=t + 500, publish_time=t + 500, sequence=i, data=bytes([i % 251]) * (i % 700))
        i += 1
        if i % 200 == 0:
            out.flush()
            time.sleep(0.001)
    """
)

BAG_WRITER = textwrap.dedent(
    """
    import sys, time
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore
    ts = get_typestore(Stores.ROS1_NOETIC)
    STRING = "std_msgs/msg/String"
    w = Writer(sys.argv[1])
    w.set_compression(Writer.CompressionFormat.LZ4)
    w.chunk_threshold = 8192
    w.open()
    c = w.add_connection("/chatter", STRING, typestore=ts)
    i = 0
    while True:
        t = 1_700_000_000_000_000_000 + i * 1_000_000
        w.write(c, t, bytes(ts.serialize_ros1(ts.types[STRING](data=f"hello {i} " + "x" * (i % 300)), STRING)))
        i += 1
        if i % 200 == 0:
            w.bio.flush() if hasattr(w, "bio") else None
            time.sleep(0.001)
    """
)

DB3_WRITER = textwrap.dedent(
    """
    import sys, time
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    ts = get_typestore(Stores.ROS2_HUMBLE)
    STRING = "std_msgs/msg/String"
    w = Writer(sys.argv[1], version=8, storage_plugin=StoragePlugin.SQLITE3)
    w.open()
    c = w.add_connection("/chatter", STRING, typestore=ts)
    i = 0
    while True:
        t = 1_700_000_000_000_000_000 + i * 1_000_000
        w.write(c, t, bytes(ts.serialize_cdr(ts.types[STRING](data=f"hello {i}"), STRING)))
        i += 1
        if i % 200 == 0:
            # rosbags commits once, at close; `ros2 bag record` commits as it
            # goes. Commit like the recorder, so a kill leaves messages.
            w.storage.conn.commit()
            time.sleep(0.001)
    """
)


def size_of(path):
    """Bytes in `path` (a file, or a directory's files) while a writer changes it.

    SQLite creates and deletes its `-journal` beside the database as it
    commits, so a file listed a moment ago may be gone: it counts as empty.
    """

    def one(file):
        try:
            return os.path.getsize(file)
        except FileNotFoundError:
            return 0

    if os.path.isdir(path):
        return sum(one(os.path.join(path, f)) for f in os.listdir(path))
    return one(path)


def killed_mid_write(script, path, grow_to):
    """Runs `script` writing `path` and SIGKILLs it once `path` holds `grow_to` bytes."""
    child = subprocess.Popen([sys.executable, "-c", script, path])
    deadline = time.time() + 120
    try:
        while size_of(path) < grow_to:
            if child.poll() is not None:
                raise RuntimeError(f"the writer exited ({child.returncode}) before {grow_to} bytes")
            if time.time() > deadline:
                raise RuntimeError("the writer did not grow the file in time")
            time.sleep(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


def run(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)


def logsql_messages(ls, path, policy):
    sql = (
        f"SELECT topic, CAST(log_time AS BIGINT) AS t, encode(sha256(data), 'hex') AS h FROM '{path}'"
    )
    proc = subprocess.run(
        [ls.binary, "--on-error", policy, "--format", "ndjson", sql], capture_output=True, text=True, timeout=300
    )
    if proc.returncode != 0:
        raise RuntimeError(f"logsql --on-error {policy} failed on {path}: {proc.stderr.strip()}")
    import json

    return [(r["topic"], int(r["t"]), r["h"]) for r in map(json.loads, filter(None, proc.stdout.splitlines()))]


def official_messages(path):
    """Messages of a valid MCAP through its summary, CRCs validated, in file order."""
    with open(path, "rb") as f:
        reader = make_reader(f, validate_crcs=True)
        rows = [
            (channel.topic, message.log_time, hashlib.sha256(message.data).hexdigest())
            for _, channel, message in reader.iter_messages(log_time_order=False)
        ]
        metadata = [m.name for m in reader.iter_metadata()]
        attachments = [a.name for a in reader.iter_attachments()]
    return rows, metadata, attachments


def official_stream(path):
    """Every record, CRCs validated, front to back (raises on any problem)."""
    with open(path, "rb") as f:
        return sum(1 for r in StreamReader(f, validate_crcs=True).records if isinstance(r, McapMessage))


def official_prefix(path):
    """What the official stream reader yields from a damaged MCAP before it stops."""
    channels, rows = {}, []
    with open(path, "rb") as f:
        try:
            for r in StreamReader(f, validate_crcs=True, skip_magic=False).records:
                if type(r).__name__ == "Channel":
                    channels[r.id] = r.topic
                elif isinstance(r, McapMessage):
                    rows.append((channels.get(r.channel_id, ""), r.log_time, hashlib.sha256(r.data).hexdigest()))
        except Exception:  # noqa: BLE001 - the damage stops it; what came before counts
            pass
    return rows


def check_recovery(checks, ls, name, damaged, out, kinds, mcap_input=False, extras=()):
    before = open(damaged, "rb").read() if os.path.isfile(damaged) else None
    doc = run(ls.binary, "doctor", "--format", "json", damaged)

    def doctor_names():
        import json

        if doc.returncode != 1:
            return f"exit {doc.returncode}: {doc.stdout}{doc.stderr}"
        found = {p["kind"] for r in json.loads(doc.stdout) for p in r["problems"]}
        missing = [k for k in kinds if k not in found]
        return f"doctor found {sorted(found)}, not {missing}" if missing else None

    checks.check(f"{name}: doctor names {', '.join(kinds)}", doctor_names)
    rec = run(ls.binary, "recover", damaged, out)
    checks.check(f"{name}: recover succeeds", lambda: None if rec.returncode == 0 else rec.stdout + rec.stderr)
    if rec.returncode != 0:
        return
    if before is not None:
        checks.check(f"{name}: input unchanged", lambda: None if open(damaged, "rb").read() == before else "changed")
    expected = logsql_messages(ls, damaged, "warn")
    rows, metadata, attachments = official_messages(out)
    checks.check(
        f"{name}: official reader (CRCs validated) reads what logsql reads under warn ({len(expected)} messages)",
        lambda: diff_multisets(expected, rows) or (None if expected else "no messages"),
    )
    checks.check(f"{name}: official stream reader validates every record", lambda: None if official_stream(out) == len(rows) else "count differs")
    times = [t for _, t, _ in rows]
    checks.check(f"{name}: recovered messages in log-time order", lambda: None if times == sorted(times) else "not sorted")
    checks.check(
        f"{name}: logsql reads the recovery with --on-error error",
        lambda: diff_multisets(expected, logsql_messages(ls, out, "error")),
    )
    if mcap_input:
        prefix = official_prefix(damaged)
        checks.check(
            f"{name}: includes the {len(prefix)} messages the official reader reads from the damaged file",
            lambda: (lambda miss: f"{len(miss)} missing" if miss else None)(
                [r for r in prefix if r not in set(rows)]
            ),
        )
    for kind, want in extras:
        got = metadata if kind == "metadata" else attachments
        checks.check(f"{name}: {kind} {want} kept", lambda got=got, want=want: None if want in got else f"{got}")


def check_native_recovery(checks, ls, name, damaged, out, to, conns):
    """`recover --to bag|db3`: rosbags' reader reads OUT as logsql reads the damaged input."""
    rec = run(ls.binary, "recover", damaged, out, "--to", to)
    checks.check(f"{name} --to {to}: recover succeeds", lambda: None if rec.returncode == 0 else rec.stdout + rec.stderr)
    if rec.returncode != 0:
        return
    expected = logsql_messages(ls, damaged, "warn")
    read = check_rosbags_read(checks, f"{name} --to {to}", out, to, expected, "what logsql reads under warn:")
    if read is None:
        return
    got_conns = sorted((c.topic, c.msgtype, c.digest if to == "bag" else c.msgcount) for c in read[0])
    texts = read[1]
    want = [(t, ty, len(expected) if d is None else d) for t, ty, d in conns]
    checks.check(f"{name} --to {to}: connections {want}", lambda: None if got_conns == want else f"{got_conns}")
    checks.check(
        f"{name} --to {to}: rosbags deserializes every message",
        lambda: None if len(texts) == len(expected) and all(x.startswith("hello ") for x in texts) else f"{texts[:3]}",
    )
    doc = run(ls.binary, "doctor", out)
    checks.check(f"{name} --to {to}: doctor calls it healthy", lambda: None if doc.returncode == 0 else doc.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    ls = Logsql(args.logsql)
    checks = Checks()
    work = args.keep or tempfile.mkdtemp(prefix="logsql-recover-")
    os.makedirs(work, exist_ok=True)
    rng = random.Random(39)
    extras = [("metadata", "recording"), ("attachment", "calib.yaml")]

    # The official MCAP writer, killed.
    killed = os.path.join(work, "killed.mcap")
    killed_mid_write(MCAP_WRITER, killed, 400_000)
    check_recovery(checks, ls, "mcap writer killed", killed, killed + ".out.mcap",
                   ["missing-index"], mcap_input=True, extras=extras)

    # A complete official MCAP (the killed one, recovered), cut at random offsets
    # and with bytes flipped inside chunk data.
    complete = killed + ".out.mcap"
    if os.path.exists(complete):
        data = open(complete, "rb").read()
        for n in range(3):
            at = rng.randrange(len(data) // 4, len(data) - 64)
            cut = os.path.join(work, f"cut{n}.mcap")
            open(cut, "wb").write(data[:at])
            check_recovery(checks, ls, f"mcap cut at {at}", cut, cut + ".out.mcap",
                           ["missing-index"], mcap_input=True, extras=extras)
        flipped = bytearray(data)
        at = len(data) // 2
        flipped[at:at + 8] = bytes(b ^ 0xFF for b in flipped[at:at + 8])
        path = os.path.join(work, "flipped.mcap")
        open(path, "wb").write(flipped)
        check_recovery(checks, ls, f"mcap bytes flipped at {at}", path, path + ".out.mcap",
                       ["checksum"], mcap_input=True)

    # rosbags' ROS1 writer, killed.
    bag = os.path.join(work, "killed.bag")
    killed_mid_write(BAG_WRITER, bag, 400_000)
    check_recovery(checks, ls, "rosbags bag writer killed", bag, bag + ".out.mcap", ["missing-index"])
    chatter = [("/chatter", "std_msgs/msg/String", "992ce8a1687cec8c8bd883ec73ca41d1")]
    check_native_recovery(checks, ls, "rosbags bag writer killed", bag, bag + ".out.bag", "bag", chatter)
    # The recovered bag (complete, indexed) cut at random offsets past its
    # first chunk (which holds the connection record: a cut inside it
    # leaves nothing to read).
    if os.path.exists(bag + ".out.bag"):
        data = open(bag + ".out.bag", "rb").read()
        offsets = [int(r["offset"]) for r in ls.query(f"SELECT \"offset\" FROM chunks('{bag}.out.bag') ORDER BY 1")]
        first = offsets[1] if len(offsets) > 1 else len(data) - 65
        for n in range(2):
            at = rng.randrange(first + 64, len(data) - 64)
            cut = os.path.join(work, f"cut{n}.bag")
            open(cut, "wb").write(data[:at])
            check_native_recovery(checks, ls, f"bag cut at {at}", cut, cut + ".out.bag", "bag", chatter)

    # rosbags' ROS 2 sqlite3 writer, killed: no metadata.yaml.
    db3_dir = os.path.join(work, "killed_ros2")
    shutil.rmtree(db3_dir, ignore_errors=True)
    killed_mid_write(DB3_WRITER, db3_dir, 200_000)
    check_recovery(checks, ls, "rosbags rosbag2 writer killed", db3_dir, db3_dir + ".out.mcap",
                   ["unclosed-recording"])
    check_native_recovery(checks, ls, "rosbags rosbag2 writer killed", db3_dir, db3_dir + ".out", "db3",
                          [("/chatter", "std_msgs/msg/String", None)])

    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
