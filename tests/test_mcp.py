"""``xcsh-store mcp``, driven by the MCP SDK's own client: as a real process over stdio where the
process is what is tested, else the same server in memory (tests/mcp_client.py)."""

from __future__ import annotations

import json
import os
import re
import typing
from datetime import datetime
from pathlib import Path

import pytest
from mcp_client import call_tools
from session_builder import (
    append,
    flux_records,
    header,
    index_other_agents_file,
    message,
    sessions_dir,
    write_session,
)

from xcsh_store import HistoryStorage
from xcsh_store.agents import AGENTS
from xcsh_store.demo.build import write_demo
from xcsh_store.index import USAGE_GROUPS, SessionIndex

TOOLS = {
    "list_sessions", "search_sessions", "get_session", "get_entry", "get_context", "read_url",
    "recall_prompts", "usage", "quota",
}  # fmt: skip


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


def test_every_tool_answers_through_the_sdk_client(agent_dir, branched):
    tools, results = call_tools(
        agent_dir,
        process=True,
        calls=[
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


# --------------------------------------------------------------------------------------------
# Arguments are read as the CLI reads its options; a bad one is an error result of one line


def test_bad_arguments_are_one_line_errors_as_the_cli_says_them(agent_dir, branched):
    _tools, results = call_tools(
        agent_dir,
        [
            ("search_sessions", {"query": "gigawatts", "since": "garbage"}),
            ("search_sessions", {"query": "gigawatts", "until": "garbage"}),
            ("usage", {"since": "garbage"}),
            ("usage", {"by": "bogus"}),
            ("list_sessions", {"since": "2026-02-01", "until": "2026-01-01"}),
            ("search_sessions", {"query": "gigawatts", "role": "wizard"}),
            ("search_sessions", {"query": "gigawatts", "model": "gpt-9"}),
            ("search_sessions", {"query": "gigawatts", "project": "nope"}),
            ("list_sessions", {"agent": "emacs"}),
            ("get_session", {"session": "sess-branched", "view": "forest"}),
            ("get_session", {"session": "sess-branched", "limit": "many"}),
        ],
    )
    assert all(result[0] == "error" for result in results), results
    messages = [text.removeprefix("Error executing tool ") for _error, text in results]
    assert all("\n" not in message for message in messages), messages
    date = "is not a date (2026-11-01), a time (2026-11-01T09:30) or an age (7d, 12h)"
    assert messages[:3] == [
        f"search_sessions: since: 'garbage' {date}",
        f"search_sessions: until: 'garbage' {date}",
        f"usage: since: 'garbage' {date}",
    ]
    assert messages[3].startswith("usage: by: 'bogus' is not one of 'day', 'week', 'month'")
    assert "is after until" in messages[4] and "nothing could match" in messages[4]
    assert "Unknown role 'wizard'" in messages[5]
    assert messages[6].endswith("no entry in the index has the model 'gpt-9'")
    assert messages[7].endswith("no session in the index was started in nope or a folder inside it")
    assert messages[8].startswith("list_sessions: agent: 'emacs' is not one of 'xcsh'")
    assert messages[9].startswith("get_session: view: 'forest' is not one of 'branch'")
    assert messages[10].startswith("get_session: limit: ") and "'many'" in messages[10]


def test_an_ambiguous_session_is_one_short_line_through_mcp(agent_dir):
    for number in range(14):
        write_session(
            sessions_dir(agent_dir) / f"s{number:02d}.jsonl",
            [header(f"0197{number:04d}", title=f"Session {number}"),
             message("u1", None, "user", "hello")],
        )  # fmt: skip
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    _tools, [(error, text)] = call_tools(agent_dir, [("get_session", {"session": "0197"})])
    assert error == "error" and "\n" not in text and len(text) < 400
    assert text.endswith(", and 4 more") and '"Session' in text


# --------------------------------------------------------------------------------------------
# What an agent needs


def _day_session(agent_dir: Path, name: str, day: str, text: str, agent_cwd: str) -> None:
    first = message("u1", None, "user", text)
    first["timestamp"] = f"{day}T09:00:00.000Z"
    reply = message("a1", "u1", "assistant", "done")
    reply["timestamp"] = f"{day}T18:00:00.000Z"
    start = header(name, cwd=agent_cwd, title=f"Work of {day}")
    start["timestamp"] = f"{day}T09:00:00.000Z"
    path = write_session(sessions_dir(agent_dir) / f"{name}.jsonl", [start, first, reply])
    # Last written when its last entry was (as a file that was never copied).
    end = datetime.fromisoformat(f"{day}T18:00:00+00:00").timestamp()
    os.utime(path, (end, end))


def test_list_sessions_answers_what_was_worked_on_yesterday(agent_dir):
    for name, day in (("s-0314", "2026-03-14"), ("s-0315", "2026-03-15"), ("s-0316", "2026-03-16")):
        _day_session(agent_dir, name, day, f"work on {day}", "/work/" + name)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    _tools, [every, yesterday, folder] = call_tools(
        agent_dir,
        [
            ("list_sessions", {}),
            ("list_sessions", {"since": "2026-03-15T00:00:00Z", "until": "2026-03-16T00:00:00Z"}),
            ("list_sessions", {"cwd": "/work/s-0314"}),
        ],
    )
    assert [item["session"] for item in every["sessions"]] == ["s-0316", "s-0315", "s-0314"]
    assert [item["session"] for item in yesterday["sessions"]] == ["s-0315"]
    assert [item["session"] for item in folder["sessions"]] == ["s-0314"]
    first = every["sessions"][0]
    assert (first["created"], first["modified"]) == (
        "2026-03-16T09:00:00.000Z", "2026-03-16T18:00:00.000Z"
    )  # fmt: skip
    assert first["title"] == "Work of 2026-03-16" and every["more"] is False


def test_get_entry_reads_an_entry_whole_page_by_page(agent_dir):
    long_text = "".join(f"line {number:05d} of a long answer\n" for number in range(1500))
    reply = message("a1", "u1", "assistant", long_text)
    reply["message"]["content"].append(
        {"type": "toolCall", "id": "t1", "name": "edit", "arguments": {"path": "src/app.py"}}
    )
    write_session(
        sessions_dir(agent_dir) / "long.jsonl",
        [header("long-answer"), message("u1", None, "user", "explain"), reply],
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    calls = [("get_entry", {"session": "long-answer", "entry_id": "a1", "limit": 20_000})]
    _tools, [first] = call_tools(agent_dir, calls)
    pages = [first]
    while pages[-1]["next_offset"] is not None:
        offset = pages[-1]["next_offset"]
        calls = [("get_entry", {"session": "long-answer", "entry_id": "a1", "offset": offset,
                                "limit": 20_000})]  # fmt: skip
        pages.append(call_tools(agent_dir, calls)[1][0])
    text = "".join(page["text"] for page in pages)
    assert len(pages) == 3 and len(text) == first["total_chars"] > 40_000
    assert text.startswith(long_text) and text.endswith('→ edit {"path":"src/app.py"}')
    assert (first["kind"], first["role"], first["model"]) == (
        "assistant",
        "assistant",
        "claude-test",
    )


def test_read_url_reads_a_sessions_artifact_page_by_page(agent_dir):
    path = write_session(
        sessions_dir(agent_dir) / "2026-01-01T00-00-00-000Z_artifacts.jsonl",
        [header("with-artifacts"), message("u1", None, "user", "run the tests")],
    )
    artifacts = path.with_suffix("")
    artifacts.mkdir()
    (artifacts / "0.bash.log").write_text("".join(f"output line {n}\n" for n in range(1, 31)))
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    _tools, [page, missing] = call_tools(
        agent_dir,
        [
            ("read_url", {"session": "with-artifacts", "url": "artifact://0", "limit": 10}),
            ("read_url", {"session": "with-artifacts", "url": "artifact://7"}),
        ],
    )
    assert page["text"].startswith("output line 1\n") and "output line 11" not in page["text"]
    assert page["text"].rstrip().endswith("Use offset=11 to continue]")
    assert missing[0] == "error" and "Artifact 7 not found. Available: 0" in missing[1]


def test_times_are_iso_costs_rounded_and_usage_counts_cache_writes(agent_dir, branched):
    HistoryStorage.open(str(agent_dir / "history.db")).close()
    with HistoryStorage.open(str(agent_dir / "history.db")) as history:
        history.add("what about lightning")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    _tools, [prompts, usage] = call_tools(
        agent_dir, [("recall_prompts", {"query": "lightning"}), ("usage", {"by": "model"})]
    )
    assert all(
        re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", prompt["created"])
        for prompt in prompts["prompts"]
    )
    (row,) = usage["rows"]
    assert row["cache_write_tokens"] == 6 and usage["totals"]["cache_write_tokens"] == 6
    assert {"estimated", "unpriced"} <= set(row)
    assert row["cost"] == 0.9 and len(str(row["cost"]).split(".")[-1]) <= 4


def test_answers_are_compact_json_in_one_text(agent_dir, branched):
    _tools, [result] = call_tools(agent_dir, [("usage", {"by": "model"})], raw=True)
    (content,) = result.content
    assert not result.isError and result.structuredContent is None
    assert "\n" not in content.text and '": ' not in content.text
    assert json.loads(content.text)["by"] == "model"


def test_the_literal_choices_are_the_librarys():
    from xcsh_store.agent_tools import tools

    assert typing.get_args(tools.Agent) == AGENTS
    assert typing.get_args(tools.UsageGroup) == tuple(USAGE_GROUPS)


def test_read_url_reads_a_subagents_output_and_a_part_of_its_json(tmp_path):
    demo = tmp_path / "demo"
    report = write_demo(str(demo))
    orders = Path(report.sessions["orders"]).stem.split("_", 1)[1]
    _tools, [finding, whole] = call_tools(
        demo,
        [
            ("read_url", {"session": orders, "url": "agent://1-Review/findings/0"}),
            ("read_url", {"session": orders, "url": "agent://1-Review", "limit": 3}),
        ],
    )
    assert json.loads(finding["text"])["severity"] == "high"
    assert whole["text"].count("\n") >= 3 and "Use offset=4 to continue" in whole["text"]


# Names that would repeat another field of the same answer (the session's id, its total).
REPEATED = {"id", "session_id", "total_tokens", "last_entry_id", "project"}


def _named_twice(value: object) -> set[str]:
    """The repeated names of an answer's session shapes: its top level and its lists' items
    but get_session's entries (whose ``id`` is the entry's) and the prompts (whose ``id`` is
    the prompt history's)."""
    found: set[str] = set()
    if isinstance(value, dict):
        found |= REPEATED & set(value)
        for key, item in value.items():
            if key in ("sessions", "hits", "rows") and isinstance(item, list):
                found |= {name for each in item for name in REPEATED & set(each)}
            elif key == "totals" and isinstance(item, dict):
                found |= REPEATED & set(item)
    return found


def test_answers_name_each_fact_once(agent_dir, branched):
    _tools, results = call_tools(
        agent_dir,
        [
            ("list_sessions", {}),
            ("search_sessions", {"query": "configure"}),
            ("get_session", {"session": "sess-branched", "limit": 4}),
            ("get_context", {"session": "sess-branched"}),
            ("recall_prompts", {"query": "lightning"}),
            ("usage", {"by": "session"}),
        ],
    )
    listed, _search, branch, context, prompts, usage = results
    assert [_named_twice(answer) for answer in results] == [set()] * 6
    # What is left names the session and its total once.
    (session,) = listed["sessions"]
    assert session["session"] == branch["session"] == context["session"] == "sess-branched"
    assert session["tokens"] == usage["rows"][0]["tokens"] == usage["totals"]["tokens"]
    assert {"session_id", "created_at"}.isdisjoint(prompts["prompts"][0])
