"""The MCP tools called as an agent calls them, through the MCP SDK's own client.

Over stdio to a real ``xcsh-store mcp`` process (``process=True``: what the process adds, its
start, its options, its pipes), or in memory to the very server object that process serves
(``agent_tools.build_server``, through the SDK's memory transport): the same tools, schema,
refusals and redaction, without the seconds a process takes to start on a loaded machine.
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp")
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402

Calls = list[tuple[str, dict[str, Any]]]


def call_tools(
    agent_dir: Path,
    calls: Calls,
    raw: bool = False,
    process: bool = False,
    options: typing.Sequence[str] = (),
) -> tuple[set[str], list]:
    """The server's tool names, and the result of each call (JSON, or ("error", text); with
    ``raw``, the SDK's result itself). ``process``: a real ``xcsh-store mcp`` started with the
    global ``options``, else the same server in memory."""
    found: dict[str, Any] = {}

    async def ask(client: mcp.ClientSession) -> None:
        found["tools"] = {tool.name for tool in (await client.list_tools()).tools}
        results = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text
            if raw:
                results.append(result)
            else:
                results.append(("error", text) if result.isError else json.loads(text))
        found["results"] = results

    async def over_stdio() -> None:
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-m", "xcsh_store", "--agent-dir", str(agent_dir), *options, "mcp"],
        )
        async with (
            stdio_client(parameters) as (read, write),
            mcp.ClientSession(read, write) as client,
        ):
            await client.initialize()
            await ask(client)

    async def in_memory() -> None:
        from xcsh_store.agent_tools import build_server

        server = build_server(str(agent_dir))
        async with create_connected_server_and_client_session(server) as client:
            await ask(client)

    async def session() -> None:
        with anyio.fail_after(600):
            await (over_stdio() if process else in_memory())

    assert process or not options, "global options are those of a process"
    anyio.run(session)
    return found["tools"], found["results"]
