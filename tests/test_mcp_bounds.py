"""Every answer of ``xcsh-store mcp`` (a real process, the SDK's own client) is bounded in
bytes whatever the sessions hold (issue 39 item 7): megabytes in a folder, a model, a prompt or
a message, and thousands of control characters (six bytes each in JSON), are cut, and a page
too long for one answer is shortened with the offset of the rest."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.agent_tools.tools import TOOLS
from xcsh_store.index import SessionIndex

mcp = pytest.importorskip("mcp")
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from xcsh_store.agent_tools.bounds import ANSWER_BYTES, FIELD_CHARS  # noqa: E402

SESSIONS = 60
# A folder, a model and a prompt each far longer than a field may be; control characters
# take six bytes each in JSON (\u0001).
WIDE = "w" * 30_000
CONTROLS = "\x01" * 3000
# An entry of 150,000 characters, a third of them control characters: about 20 pages.
LONG_TEXT = "".join(f"line {number} \x02\x03\x04\n" for number in range(10_000))


def hostile_agent_dir(agent_dir: Path) -> Path:
    """SESSIONS sessions, each in a folder 30,000 characters long, with a prompt of control
    characters and an answer of a model with a 30,000-character name; one with LONG_TEXT;
    an artifact whose one line is a megabyte."""
    folder = sessions_dir(agent_dir)
    for number in range(SESSIONS):
        answer = message(f"a{number}", f"u{number}", "assistant", f"answer {number}")
        answer["message"]["model"] = f"{WIDE}-{number}"
        write_session(
            folder / f"wide-{number:02d}.jsonl",
            [
                header(f"wide-{number:02d}", cwd=f"/work/{WIDE}/{number}"),
                message(f"u{number}", None, "user", f"needle {number} {CONTROLS}"),
                answer,
            ],
        )
    long = write_session(
        folder / "2026-01-01T00-00-00-000Z_long.jsonl",
        [header("long"), message("big", None, "user", LONG_TEXT)],
    )
    artifacts = long.with_suffix("")
    artifacts.mkdir()
    (artifacts / "0.bash.log").write_text("\x05" * 1_000_000 + "\n")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


CALLS = {
    "list_sessions": ("list_sessions", {"limit": 50}),
    "search_sessions": ("search_sessions", {"query": "needle", "limit": 50}),
    "get_session": ("get_session", {"session": "wide-07"}),
    "get_entry": ("get_entry", {"session": "long", "entry_id": "big", "limit": 50_000}),
    "get_context": ("get_context", {"session": "long"}),
    "read_url": ("read_url", {"session": "long", "url": "artifact://0"}),
    "recall_prompts": ("recall_prompts", {"query": "needle", "limit": 50}),
    "usage": ("usage", {"by": "project"}),
    "usage_models": ("usage", {"by": "model"}),
}
# Tools followed page by page, each page asked at the next_offset of the one before.
FOLLOWED = {
    "list_sessions": {"limit": 50},
    "get_entry": {"session": "long", "entry_id": "big", "limit": 50_000},
}


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """From one server process: the tools' descriptions, the text of each answer to CALLS,
    and every page of each of FOLLOWED (at most 100)."""
    agent_dir = hostile_agent_dir(tmp_path_factory.mktemp("bounds") / "agent")
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "xcsh_store", "--agent-dir", str(agent_dir), "mcp"]
    )
    found: dict[str, Any] = {"texts": {}, "pages": {}}

    async def talk() -> None:
        async with (
            stdio_client(parameters) as (read, write),
            mcp.ClientSession(read, write) as client,
        ):
            await client.initialize()
            tools = (await client.list_tools()).tools
            found["descriptions"] = {tool.name: tool.description or "" for tool in tools}
            for name, (tool, arguments) in CALLS.items():
                result = await client.call_tool(tool, arguments)
                found["texts"][name] = result.content[0].text
            for tool, arguments in FOLLOWED.items():
                pages: list[dict[str, Any]] = []
                offset: int | None = 0
                while offset is not None and len(pages) < 100:
                    result = await client.call_tool(tool, arguments | {"offset": offset})
                    pages.append(json.loads(result.content[0].text))
                    offset = pages[-1]["next_offset"]
                found["pages"][tool] = pages

    async def session() -> None:
        with anyio.fail_after(300):
            await talk()

    anyio.run(session)
    return found


def strings(value: Any, path: str = "") -> list[tuple[str, str]]:
    """(where, string) of every string in ``value``, dict keys included."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [
            found
            for key, item in value.items()
            for found in [(f"{path}.{key}:key", key), *strings(item, f"{path}.{key}")]
        ]
    if isinstance(value, list):
        return [found for item in value for found in strings(item, f"{path}[]")]
    return []


@pytest.mark.parametrize(
    "call",
    ["list_sessions", "search_sessions", "get_session", "get_entry", "get_context", "read_url",
     "recall_prompts", "usage", "usage_models"],
)  # fmt: skip
def test_every_answer_fits_in_the_budget(answers, call):
    text = answers["texts"][call]
    assert len(text.encode()) <= ANSWER_BYTES, (call, len(text.encode()))


@pytest.mark.parametrize(
    "call",
    ["list_sessions", "search_sessions", "get_session", "get_context", "recall_prompts", "usage",
     "usage_models"],
)  # fmt: skip
def test_every_string_of_an_answer_is_cut(answers, call):
    answer = json.loads(answers["texts"][call])
    longest = max(strings(answer), key=lambda found: len(found[1]))
    assert len(longest[1]) <= FIELD_CHARS, (call, longest[0], len(longest[1]))


def test_a_page_too_long_for_an_answer_is_shortened_and_says_where_the_rest_is(answers):
    listing = json.loads(answers["texts"]["list_sessions"])
    shown = len(listing["sessions"])
    assert 0 < shown < 50
    assert (listing["next_offset"], listing["more"]) == (shown, True)


def test_following_next_offset_lists_every_session_once(answers):
    pages = answers["pages"]["list_sessions"]
    ids = [session["session"] for page in pages for session in page["sessions"]]
    assert sorted(ids) == sorted({*(f"wide-{n:02d}" for n in range(SESSIONS)), "long"})


def test_an_entrys_pages_put_together_are_its_whole_text(answers):
    pages = answers["pages"]["get_entry"]
    assert all(page["text"] for page in pages)
    assert "".join(page["text"] for page in pages) == LONG_TEXT


def test_an_output_line_too_long_for_an_answer_says_it_was_cut(answers):
    text = json.loads(answers["texts"]["read_url"])["text"]
    assert text.startswith("\x05") and "too long for one answer" in text.splitlines()[-1]


def test_every_tool_says_its_budget(answers):
    described = answers["descriptions"]
    assert set(described) == set(TOOLS)
    assert all(f"at most {ANSWER_BYTES // 1024} KB" in text for text in described.values())
