#!/usr/bin/env python3
"""Interop test: ``logsql mcp`` driven by the official MCP Python SDK (``mcp``
from PyPI), as a desktop agent drives it over stdio, the same checks over
streamable HTTP against ``logsql serve --mcp`` (with its password as the
bearer token), and by the MCP
Inspector's CLI mode (``@modelcontextprotocol/inspector`` from the npm
registry, installed into ``LOGSQL_MCP_INSPECTOR``, default
``~/.cache/logsql-mcp-inspector``; skipped with a printed reason where npm is
missing). The recording is one the
official ``mcap`` writer wrote (JSON messages, two topics, known values); each
tool's answer is held to what the official reader reads from the same file,
and a hostile agent's calls (writes, DDL, SET, several statements, paths and
URLs outside the root) come back as tool errors while the server keeps
answering and nothing is written. With ``--allow-write``, ``export_clip``'s
clip is read by the official reader and holds exactly the window; ``plot``
gives a PNG of the size asked.

Usage: mcp_interop.py --logsql PATH/TO/logsql [--keep DIR]
Prints one line per check and finally ``N passed, M failed``; exits 1 on any failure.
"""

import argparse
import asyncio
import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import Counter

from common import Checks
from mcap.reader import make_reader
from mcap.writer import Writer
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # the SDK's 2.x spelling: headers on an httpx client of its own
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    def http_transport(url, headers=None):
        return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
except ImportError:  # 1.x
    from mcp.client.streamable_http import streamablehttp_client

    def http_transport(url, headers=None):
        return streamablehttp_client(url, headers=headers)

START = 1_700_000_000_000_000_000


def write_recording(path):
    """An MCAP file of the official writer: /pose at 50 Hz (x = i / 10) and
    /status at 5 Hz (level = i % 3), 4 seconds."""
    with open(path, "wb") as f:
        w = Writer(f)
        w.start(profile="", library="mcap_interop")
        pose_schema = w.register_schema(
            name="Pose",
            encoding="jsonschema",
            data=json.dumps({"type": "object", "properties": {"x": {"type": "number"}}}).encode(),
        )
        status_schema = w.register_schema(
            name="Status",
            encoding="jsonschema",
            data=json.dumps({"type": "object", "properties": {"level": {"type": "integer"}}}).encode(),
        )
        pose = w.register_channel(topic="/pose", message_encoding="json", schema_id=pose_schema)
        status = w.register_channel(topic="/status", message_encoding="json", schema_id=status_schema)
        for i in range(200):
            t = START + i * 20_000_000
            w.add_message(pose, log_time=t, publish_time=t, data=json.dumps({"x": i / 10}).encode())
            if i % 10 == 0:
                w.add_message(
                    status, log_time=t, publish_time=t, data=json.dumps({"level": (i // 10) % 3}).encode()
                )
        w.finish()


def official_counts(path):
    """Messages per topic, and /pose's x values, as the official reader reads them."""
    counts, xs = Counter(), []
    with open(path, "rb") as f:
        for _, channel, message in make_reader(f).iter_messages():
            counts[channel.topic] += 1
            if channel.topic == "/pose":
                xs.append(json.loads(message.data)["x"])
    return counts, xs


def text_of(result):
    return "\n".join(c.text for c in result.content if c.type == "text")


async def drive(binary, root, checks):
    """Every check over stdio (``logsql mcp``)."""
    params = StdioServerParameters(command=binary, args=["mcp", "--root", root, "--query-timeout", "5s"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await drive_session(session, root, checks)


async def drive_writes(binary, root, out, checks):
    """``export_clip`` over stdio with ``--allow-write``: the clip read by the
    official reader holds exactly the window's messages."""
    params = StdioServerParameters(command=binary, args=["mcp", "--root", root, "--allow-write", out])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            checks.check("with --allow-write the export tools are listed",
                         lambda: None if {"export_clip", "export_dataset"} <= names else f"{sorted(names)}")
            start, end = START + 1_000_000_000, START + 2_000_000_000
            r = await session.call_tool("export_clip", {
                "path": "run.mcap", "start": f"{start}ns", "end": f"{end}ns", "name": "window"})

            def clip():
                if r.isError:
                    return text_of(r)
                counts, xs = Counter(), []
                with open(os.path.join(out, "window.mcap"), "rb") as f:
                    for _, channel, message in make_reader(f).iter_messages():
                        counts[channel.topic] += 1
                        if not start <= message.log_time <= end:
                            return f"a message at {message.log_time}, outside the window"
                        if channel.topic == "/pose":
                            xs.append(json.loads(message.data)["x"])
                # /pose every 20 ms and /status every 200 ms, both ends included.
                if dict(counts) != {"/pose": 51, "/status": 6}:
                    return f"{dict(counts)}"
                if xs != [i / 10 for i in range(50, 101)]:
                    return f"/pose x {xs[:3]}..."
                return None

            checks.check("export_clip: the official reader reads exactly the window", clip)
            r = await session.call_tool("export_clip", {
                "path": "run.mcap", "start": f"{start}ns", "end": f"{end}ns", "name": "../out"})
            checks.check("export_clip refuses a name with a directory",
                         lambda: None if r.isError and "plain file name" in text_of(r) else text_of(r))


PASSWORD = "an agent's password"


def start_http(binary, root):
    """``logsql serve --mcp 127.0.0.1:0`` with a password, in ``root``; the
    process and where MCP listens (None if it did not say)."""
    secrets = tempfile.mkdtemp()
    password_file = os.path.join(secrets, "password")
    with open(password_file, "w") as f:
        f.write(PASSWORD + "\n")
    os.chmod(password_file, 0o600)
    proc = subprocess.Popen(
        [binary, "serve", "--root", root, "--pg", "127.0.0.1:0", "--mcp", "127.0.0.1:0",
         "--query-timeout", "5s", "--password-file", password_file],
        cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    for line in proc.stderr:
        if "MCP over HTTP on " in line:
            return proc, line.split("MCP over HTTP on ", 1)[1].strip()
    return proc, None


async def drive_http(binary, root, checks):
    """Every check over streamable HTTP (``logsql serve --mcp``), with the
    server's password as the bearer token; a client without it is refused."""
    proc, addr = start_http(binary, root)
    try:
        checks.check("[http] serve --mcp says where it listens", lambda: None if addr else "no address")
        if not addr:
            return
        url = f"http://{addr}/mcp"
        try:
            async with http_transport(url) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
            refused = "answered"
        except BaseException as e:  # the SDK raises an exception group
            refused = None if "401" in repr(e) or "Unauthorized" in repr(e) else repr(e)
        checks.check("[http] a client without the token is refused (401)", lambda: refused)
        headers = {"Authorization": f"Bearer {PASSWORD}"}
        async with http_transport(url, headers) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await drive_session(session, root, checks, "[http] ")
    finally:
        proc.kill()
        proc.wait()


async def drive_session(session, root, checks, label=""):
    """Every tool against the official reader's values, and the hostile
    calls, over an open session."""
    checks = Labelled(checks, label)
    path = os.path.join(root, "run.mcap")
    counts, xs = official_counts(path)
    total = sum(xs)
    init = await session.initialize()
    checks.check("the server names itself", lambda: None if init.serverInfo.name == "logsql" else init)
    tools = {t.name: t for t in (await session.list_tools()).tools}
    want = {"list_recordings", "describe_recording", "describe_topic", "query", "sample_frames", "plot"}
    checks.check("the tools are listed with schemas", lambda: None if want <= set(tools) and
                 tools["query"].inputSchema["required"] == ["sql"] else sorted(tools))

    resources = {str(r.uri) for r in (await session.list_resources()).resources}
    page = await session.read_resource("logsql://docs/decoded-messages")
    checks.check("the SQL reference is a resource",
                 lambda: None if "logsql://docs/table-functions" in resources
                 and "read_topic" in page.contents[0].text else resources)

    listed = text_of(await session.call_tool("list_recordings", {}))
    checks.check("list_recordings names the recording and its topics",
                 lambda: None if "run.mcap (2 topics" in listed and "/pose (Pose)" in listed else listed)

    r = await session.call_tool("describe_recording", {"path": "run.mcap"})
    facts = json.loads(text_of(r))
    got = {t["topic"]: t["messages"] for t in facts["topics"]}
    checks.check("describe_recording counts what the official reader reads",
                 lambda: None if got == dict(counts) else f"{got} vs {dict(counts)}")
    checks.check("describe_recording's time span",
                 lambda: None if (facts["start_ns"], facts["end_ns"]) == (START, START + 199 * 20_000_000)
                 else (facts["start_ns"], facts["end_ns"]))

    topic = text_of(await session.call_tool("describe_topic", {"path": "run.mcap", "topic": "/pose"}))
    checks.check("describe_topic shows the decoded column", lambda: None if "  x: Float64" in topic else topic)
    want = f"  x: min {min(xs):g}, max {max(xs):g}, mean "
    line = next((l for l in topic.splitlines() if l.startswith("  x: min")), "")
    checks.check("describe_topic's statistics are the official reader's",
                 lambda: None if line.startswith(want) and abs(float(line.rsplit(" ", 1)[1]) - sum(xs) / len(xs)) < 1e-9
                 else f"{line!r} vs {want!r}")

    r = await session.call_tool("plot", {"sql": "SELECT log_time, x FROM read_topic('run.mcap', '/pose')",
                                         "width": 320, "height": 200})

    def plot():
        images = [c for c in r.content if c.type == "image"]
        if r.isError or len(images) != 1 or images[0].mimeType != "image/png":
            return text_of(r)
        png = base64.b64decode(images[0].data)
        width, height = struct.unpack(">II", png[16:24])
        return None if png[:8] == b"\x89PNG\r\n\x1a\n" and (width, height) == (320, 200) else (width, height)

    checks.check("plot draws a PNG of the size asked", plot)

    r = await session.call_tool("query", {"sql": "SELECT topic, count(*) AS n FROM 'run.mcap' GROUP BY topic ORDER BY topic"})
    rows = json.loads(r.content[1].text)["rows"]
    checks.check("query counts as the official reader",
                 lambda: None if {x["topic"]: x["n"] for x in rows} == dict(counts) else rows)
    r = await session.call_tool("query", {"sql": "SELECT sum(x) AS s FROM read_topic('run.mcap', '/pose')"})
    s = json.loads(r.content[1].text)["rows"][0]["s"]
    checks.check("query sums decoded fields as the official reader",
                 lambda: None if abs(s - total) < 1e-9 else f"{s} vs {total}")
    r = await session.call_tool("query", {"sql": "SELECT x FROM read_topic('run.mcap', '/pose')", "max_rows": 7})
    answer = json.loads(r.content[1].text)
    checks.check("a long result is cut with a note",
                 lambda: None if answer["row_count"] == 7 and answer["truncated"] and "cut at 7 rows" in answer["note"] else answer)

    outside = tempfile.mkdtemp()
    hostile = [
        f"COPY (SELECT 1) TO '{root}/out.csv'",
        "CREATE TABLE t AS SELECT 1",
        "SET datafusion.execution.batch_size = 1",
        "SELECT 1; SELECT 2",
        "SELECT * FROM '/etc/passwd'",
        f"SELECT * FROM '{outside}/x.mcap'",
        "SELECT * FROM 'http://127.0.0.1:1/x.mcap'",
        "SELECT * FROM 'run.mcap' -- ; DROP TABLE x",
    ]
    for sql in hostile[:-1]:
        r = await session.call_tool("query", {"sql": sql})
        checks.check(f"refused: {sql[:50]}", lambda r=r: None if r.isError else text_of(r))
    r = await session.call_tool("query", {"sql": hostile[-1], "max_rows": 1})
    checks.check("a comment is only a comment", lambda: None if not r.isError else text_of(r))
    r = await session.call_tool("describe_recording", {"path": "/etc/passwd"})
    checks.check("a path outside the root is refused",
                 lambda: None if r.isError and "outside the data roots" in text_of(r) else text_of(r))
    r = await session.call_tool("query", {"sql": "SELECT count(*) AS n FROM 'run.mcap'"})
    checks.check("the server still answers",
                 lambda: None if json.loads(r.content[1].text)["rows"][0]["n"] == sum(counts.values()) else text_of(r))
    left = sorted(os.listdir(root))
    checks.check("nothing was written", lambda: None if left == ["run.mcap"] else left)


class Labelled:
    """Checks whose names start with ``label``."""

    def __init__(self, checks, label):
        self.checks, self.label = checks, label

    def check(self, name, f):
        self.checks.check(self.label + name, f)


INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


def inspector(binary, root, checks):
    """The same server through the MCP Inspector's CLI, one process a call:
    ``logsql mcp`` over stdio, then ``logsql serve --mcp`` over HTTP with
    the bearer token."""
    inspector_on(binary, root, checks, [binary, "mcp", "--root", root], "inspector: ")
    proc, addr = start_http(binary, root)
    try:
        checks.check("inspector [http]: serve --mcp listens", lambda: None if addr else "no address")
        if addr:
            target = [f"http://{addr}/mcp", "--header", f"Authorization: Bearer {PASSWORD}"]
            inspector_on(binary, root, checks, target, "inspector [http]: ")
    finally:
        proc.kill()
        proc.wait()


def inspector_on(binary, root, checks, target, label):
    """The Inspector's checks against ``target`` (a command, or a URL and
    its headers), named with ``label``."""
    npm = shutil.which("npm")
    if not npm:
        print("SKIPPED inspector: npm not found")
        return
    cache = os.environ.get("LOGSQL_MCP_INSPECTOR", os.path.expanduser("~/.cache/logsql-mcp-inspector"))
    cli = os.path.join(cache, "node_modules", ".bin", "mcp-inspector")
    if not os.path.exists(cli):
        subprocess.run([npm, "install", "--silent", "--prefix", cache, INSPECTOR], check=True, timeout=900)

    def call(*args):
        out = subprocess.run([cli, "--cli", *target, *args], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip() or out.stdout.strip())
        return json.loads(out.stdout)

    tools = {t["name"] for t in call("--method", "tools/list")["tools"]}
    checks.check(label + "the tools are listed",
                 lambda: None if {"query", "describe_recording", "sample_frames"} <= tools else tools)
    r = call("--method", "tools/call", "--tool-name", "query",
             "--tool-arg", "sql=SELECT topic, count(*) AS n FROM 'run.mcap' GROUP BY topic ORDER BY topic")
    rows = json.loads(r["content"][1]["text"])["rows"]
    checks.check(label + "query counts", lambda: None if {x["topic"]: x["n"] for x in rows} == {"/pose": 200, "/status": 20} else rows)
    r = call("--method", "tools/call", "--tool-name", "describe_recording", "--tool-arg", "path=run.mcap")
    facts = json.loads(r["content"][0]["text"])
    checks.check(label + "describe_recording", lambda: None if facts["messages"] == 220 else facts["messages"])
    # The Inspector's CLI exits non-zero on a tool result marked as an error.
    out = subprocess.run([cli, "--cli", *target, "--method", "tools/call",
                          "--tool-name", "query", "--tool-arg", f"sql=COPY (SELECT 1) TO '{root}/o.csv'"],
                         capture_output=True, text=True, timeout=120)
    checks.check(label + "a write is refused", lambda: None if out.returncode != 0 and "isError:true"
                 in out.stdout + out.stderr and not os.path.exists(f"{root}/o.csv") else out.stdout)
    uris = [x["uri"] for x in call("--method", "resources/list")["resources"]]
    checks.check(label + "the SQL reference", lambda: None if "logsql://docs/table-functions" in uris else uris)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logsql", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or tmp
        os.makedirs(root, exist_ok=True)
        write_recording(os.path.join(root, "run.mcap"))
        asyncio.run(drive(os.path.abspath(args.logsql), root, checks))
        asyncio.run(drive_http(os.path.abspath(args.logsql), root, checks))
        with tempfile.TemporaryDirectory() as out:
            asyncio.run(drive_writes(os.path.abspath(args.logsql), root, out, checks))
        checks.check("the Inspector runs", lambda: inspector(os.path.abspath(args.logsql), root, checks))
    print(f"{checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
