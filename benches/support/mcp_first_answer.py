"""The first answer about a recording from an MCP server started cold, through the official
MCP Python SDK (`mcp`) over stdio, as a desktop agent gets it: start the server, initialize,
describe the recording, then one aggregate over a decoded field of one topic.

    python mcp_first_answer.py logsql LOGSQL_BIN DIR FILE
    python mcp_first_answer.py mcap-mcp-server PYTHON DIR FILE

prints one JSON line: {"describe_s": ..., "answer_s": ..., "answer": [count, mean]}, the
seconds from the spawn of the server to the describe tool's result and to the aggregate's.

- logsql: `logsql mcp --root DIR`; `describe_recording`, then `query` of
  `SELECT count(*), avg(linear_acceleration.z) FROM read_topic(FILE, '/imu')`.
- mcap-mcp-server (`python -m mcap_mcp_server`, MCAP_DATA_DIR=DIR): `get_recording_info`,
  then `load_recording` of `/imu` (it copies a topic into DuckDB before any query) and
  `query` of `SELECT count(*), avg(linear_acceleration_z) FROM imu`.
"""

import asyncio
import json
import os
import re
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text(result):
    if result.isError:
        raise SystemExit(f"tool error: {result.content}")
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def run(kind, program, root, file):
    if kind == "logsql":
        params = StdioServerParameters(command=program, args=["mcp", "--root", root])
    else:
        env = dict(os.environ, MCAP_DATA_DIR=root, MCAP_LOG_LEVEL="WARNING")
        params = StdioServerParameters(command=program, args=["-m", "mcap_mcp_server"], env=env)
    t0 = time.monotonic()
    async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            if kind == "logsql":
                text(await session.call_tool("describe_recording", {"path": file}))
                describe = time.monotonic() - t0
                sql = (
                    "SELECT count(*) AS n, avg(linear_acceleration.z) AS z "
                    f"FROM read_topic('{file}', '/imu')"
                )
                out = await session.call_tool("query", {"sql": sql})
                answer = time.monotonic() - t0
                rows = json.loads(out.content[-1].text) if out.content[-1].text.lstrip().startswith("[") else None
                said = text(out)
            else:
                text(await session.call_tool("get_recording_info", {"file": file}))
                describe = time.monotonic() - t0
                text(await session.call_tool("load_recording", {"file": file, "topics": ["/imu"]}))
                out = await session.call_tool(
                    "query", {"sql": "SELECT count(*) AS n, avg(linear_acceleration_z) AS z FROM imu"}
                )
                answer = time.monotonic() - t0
                said = text(out)
                rows = None
    # The two numbers of the answer, wherever the server put them (a table, JSON).
    if rows is None:
        m = re.search(r'"n":\s*(\d+).*?"z":\s*([-0-9.eE]+)', said, re.S)
        if not m:
            m = re.search(r"(\d+)\D+?(9\.8\d*)", said, re.S)
        answer_values = [int(m.group(1)), float(m.group(2))] if m else said[:200]
    else:
        answer_values = [rows[0]["n"], rows[0]["z"]]
    print(json.dumps({"describe_s": round(describe, 3), "answer_s": round(answer, 3), "answer": answer_values}))


if __name__ == "__main__":
    asyncio.run(run(*sys.argv[1:5]))
