"""``xcsh-store mcp`` as a real process, driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from session_builder import (
    append,
    flux_records,
    index_other_agents_file,
    message,
    sessions_dir,
    write_session,
)

from xcsh_store.index import SessionIndex

mcp = pytest.importorskip("mcp")
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

TOOLS = {"search_sessions", "get_session", "get_context", "recall_prompts", "usage"}


@pytest.fixture
def branched(agent_dir: Path) -> Path:
    """The flux session (abandoned branch u2 -> a2, active u3 -> a3) with 130 more messages on
    the active branch for paging."""
    path = write_session(
        sessions_dir(agent_dir) / "branched.jsonl",
        [*flux_records(), message("a3", "u3", "assistant", "the clock tower at 10:04")],
    )
    parent = "a3"
    for number in range(130):
        append(path, message(f"m{number:03d}", parent, "user", f"filler {number}"))
        parent = f"m{number:03d}"
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return path


def call_tools(agent_dir: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list]:
    """The server's tool names, and the result of each call (JSON, or ("error", text))."""
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "xcsh_store", "--agent-dir", str(agent_dir), "mcp"]
    )
    found: dict[str, Any] = {}

    async def session() -> None:
        with anyio.fail_after(120):
            await talk()

    async def talk() -> None:
        async with (
            stdio_client(parameters) as (read, write),
            mcp.ClientSession(read, write) as client,
        ):
            await client.initialize()
            found["tools"] = {tool.name for tool in (await client.list_tools()).tools}
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text
                results.append(("error", text) if result.isError else json.loads(text))
            found["results"] = results

    anyio.run(session)
    return found["tools"], found["results"]


def test_every_tool_answers_through_the_sdk_client(agent_dir, branched):
    tools, results = call_tools(
        agent_dir,
        [
            ("search_sessions", {"query": "configure"}),
            ("get_session", {"session": "sess-branched", "limit": 4}),
            ("get_session", {"session": "sess-branched", "view": "tree", "offset": 0, "limit": 5}),
            ("get_context", {"session": "sess-branched", "leaf_id": "u2"}),
            ("recall_prompts", {"query": "lightning"}),
            ("usage", {"by": "model"}),
        ],
    )
    search, branch, tree, context, prompts, usage = results
    assert tools == TOOLS
    assert [(hit["session"], hit["entry_id"]) for hit in search["hits"]] == [
        ("sess-branched", "u1")
    ]
    assert "configure" in search["hits"][0]["snippet"]
    # The active branch skips the abandoned u2; a page of 4, then the next offset.
    assert [entry["id"] for entry in branch["entries"]] == ["u1", "a1", "u3", "a3"]
    assert (branch["total"], branch["next_offset"]) == (134, 4)
    assert [entry["id"] for entry in tree["entries"]] == ["u1", "a1", "u2", "a2", "u3"]
    on_branch = [entry["on_active_branch"] for entry in tree["entries"]]
    assert on_branch == [True, True, False, False, True]
    assert tree["entries"][1]["children"] == 2
    assert [message["text"] for message in context["messages"]] == [
        "how do I configure the flux capacitor",
        "set gigawatts to 1.21",
        "abandoned idea about plutonium",
    ]
    assert [prompt["prompt"] for prompt in prompts["prompts"]] == ["what about lightning"]
    assert usage["totals"]["output_tokens"] == 15  # three assistant messages of 5


def test_pages_are_bounded(agent_dir, branched):
    _tools, [page] = call_tools(
        agent_dir, [("get_session", {"session": "sess-branched", "limit": 100_000})]
    )
    assert (len(page["entries"]), page["next_offset"]) == (134, None)
    _tools, [capped] = call_tools(
        agent_dir, [("get_session", {"session": "sess-branched", "offset": 0, "limit": 10**9})]
    )
    assert len(capped["entries"]) <= 200


def test_an_unknown_session_is_an_error_result_not_a_crash(agent_dir, branched):
    _tools, [missing, after] = call_tools(
        agent_dir,
        [
            ("get_session", {"session": "no-such-session"}),
            ("search_sessions", {"query": "gigawatts"}),
        ],
    )
    assert missing[0] == "error" and "no-such-session" in missing[1]
    assert after["hits"][0]["entry_id"] == "a1"


def test_a_claude_code_session_is_read_as_entries_of_the_xcsh_model(agent_dir, tmp_path):
    # The compact_boundary fixture's second line is the compaction summary (isCompactSummary).
    fixture = index_other_agents_file(
        agent_dir, tmp_path / "claude", "claude", "robcmills__cc.nvim__compact_boundary.jsonl"
    )
    _tools, [page, claude, codex] = call_tools(
        agent_dir,
        [
            ("get_session", {"session": fixture.stem}),
            ("search_sessions", {"query": "Hammerspoon", "agent": "claude"}),
            ("search_sessions", {"query": "Hammerspoon", "agent": "codex"}),
        ],
    )
    assert page["agent"] == "claude"
    assert {hit["agent"] for hit in claude["hits"]} == {"claude"} and codex["hits"] == []
    kinds = {item["id"][:8]: item["kind"] for item in page["entries"]}
    assert kinds["86f56821"] == "compaction"
    assert any("continued from a previous" in item["text"] for item in page["entries"])
