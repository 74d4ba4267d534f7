"""Tokens and cost per model response (issue 38 item 3): SessionIndex.entry_usage on the real
Claude Code and Codex fixtures counts each response once, and ``show`` prints the context,
output and cost of each response beside the assistant's message that made it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from xcsh_store.cli import cli
from xcsh_store.index import EntryUsage, SessionIndex, usage_by_response


def run(*args: str, width: int = 80) -> str:
    result = CliRunner(env={"COLUMNS": str(width)}).invoke(cli, list(args))
    assert result.exit_code == 0, (args, result.output)
    return result.output


@pytest.fixture
def synced(agent_dir: Path, real_home) -> dict[str, str]:
    """The real home synced; the id of the Claude Code and the Codex session with most entries."""
    run("sync", "--init")
    sessions = json.loads(run("ls", "-n", "0", "--json"))
    return {
        agent: max((s for s in sessions if s["agent"] == agent), key=lambda s: s["entry_count"])[
            "id"
        ]
        for agent in ("claude", "codex")
    }


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_the_usage_of_the_entries_adds_up_to_the_sessions(agent_dir, synced, agent):
    with SessionIndex.open(str(agent_dir)) as index:
        info = index.find_session(synced[agent])
        usage = index.entry_usage(info)
    assert len(usage) > 10
    assert sum(u.input_tokens for u in usage.values()) == info.input_tokens
    assert sum(u.output_tokens for u in usage.values()) == info.output_tokens
    assert sum(u.cache_read_tokens for u in usage.values()) == info.cache_read_tokens
    assert sum(u.cache_write_tokens for u in usage.values()) == info.cache_write_tokens
    assert sum(u.cost or 0 for u in usage.values()) == pytest.approx(info.cost)


def test_a_claude_response_streamed_as_several_lines_counts_once(agent_dir, synced, real_home):
    """Claude Code writes each content block of a response as a line repeating its usage: the
    usage is on one line of the response (message.id + requestId) only."""
    responses: dict[str, dict[str, list[str]]] = {}
    for path in real_home.of("claude").values():
        for line in path.read_bytes().splitlines():
            value = json.loads(line)
            message = value.get("message") if isinstance(value.get("message"), dict) else {}
            if value.get("type") == "assistant" and message.get("usage") and value.get("uuid"):
                key = f"{message.get('id')}:{value.get('requestId')}"
                lines = responses.setdefault(value["sessionId"], {}).setdefault(key, [])
                lines.append(value["uuid"])
    assert any(len(lines) > 1 for by in responses.values() for lines in by.values())
    with SessionIndex.open(str(agent_dir)) as index:
        for session_id, by_response in responses.items():
            usage = index.entry_usage(index.find_session(session_id))
            for lines in by_response.values():
                assert sum(line in usage for line in lines) == 1, lines


def _usage_rows(output: str) -> dict[str, tuple[str, str]]:
    """Entry id prefix -> (kind, usage cell) of the rows of show's table that have a usage."""
    lines = output.splitlines()
    header = next(n for n, line in enumerate(lines) if line.startswith("id "))
    assert "ctx→out cost" in lines[header]
    spans = [m.span() for m in re.finditer(r"-+", lines[header + 1])]
    rows = {}
    for line in lines[header + 2 :]:
        if not line or line.startswith("("):  # the note under the table
            break
        cells = [line[a:b].strip() for a, b in spans]
        if cells[3]:
            rows[cells[0]] = (cells[2], cells[3])
    return rows


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_show_prints_each_responses_usage_beside_the_assistants_message(agent_dir, synced, agent):
    output = run("show", synced[agent])
    rows = _usage_rows(output)
    assert rows and all(kind == "assistant" for kind, _ in rows.values())
    with SessionIndex.open(str(agent_dir)) as index:
        info = index.find_session(synced[agent])
        usage = index.entry_usage(info)
        ids = index.entry_id_prefixes(info, usage)
    checked = 0
    if agent == "claude":  # the usage is on the assistant's line itself
        for entry_id, figures in usage.items():
            shown = rows.get(ids[entry_id])
            checked += shown is not None
            if shown is not None:
                tokens = shown[1].split(" ")[0]
                context, output_tokens = tokens.split("→")
                assert _count(context) == pytest.approx(figures.context_tokens, rel=0.05)
                assert _count(output_tokens) == pytest.approx(figures.output_tokens, rel=0.05)
        assert checked == len(rows)
    # Every cost is an estimate for these agents (they record none): "~$".
    assert all("~$" in cell for _, cell in rows.values())


def _count(text: str) -> float:
    scale = {"k": 1e3, "M": 1e6, "B": 1e9}.get(text[-1], 1)
    return float(text.rstrip("kMB")) * scale


def test_usage_goes_to_the_assistant_message_before_it():
    """A Codex token_count event (left out of the view) belongs to the assistant's message
    before it, not to the call's output between them; usage before any assistant message
    has no row."""
    one = EntryUsage(10, 1, 100, 0, 0.5)
    two = EntryUsage(20, 2, 200, 0, None)
    responses = [("u", False), ("t0", False), ("a", True), ("r", False), ("t1", False),
                 ("t2", False), ("b", True), ("t3", False)]  # fmt: skip
    shown = [True, False, True, True, False, False, True, False]
    usage = {"t0": one, "t1": one, "t2": two, "t3": one}
    used = usage_by_response(responses, shown, usage)
    assert set(used) == {"a", "b"}
    assert used["a"] == EntryUsage(30, 3, 300, 0, None)  # a cost unknown in one is unknown
    assert used["a"].context_tokens == 330
    assert used["b"] == one


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_the_session_page_shows_each_responses_usage_on_the_assistants_entry(
    agent_dir, synced, client, agent
):
    from html import unescape
    from urllib.parse import urlencode

    with SessionIndex.open(str(agent_dir)) as index:
        info = index.find_session(synced[agent])
        usage = index.entry_usage(info)
    page = client.get("/session?" + urlencode({"path": info.path})).text
    found = re.findall(
        r'<article class="entry entry-[^ ]* role-(\w+)[^"]*" id="entry-([^"]+)">(.*?)</header>',
        page,
        re.DOTALL,
    )
    shown = {entry_id: (role, unescape(head)) for role, entry_id, head in found}
    with_usage = {e: head for e, (_, head) in shown.items() if 'class="usage' in head}
    assert with_usage and all(shown[e][0] == "assistant" for e in with_usage)
    if agent == "claude":  # on the line that records it, its figures exactly (in the title)
        for entry_id, head in with_usage.items():
            figures = usage[entry_id]
            assert f"context {figures.context_tokens:,} tokens" in head
            assert f"output {figures.output_tokens:,}" in head and "~$" in head
    else:  # Codex: the token_count events after a message (shown with ?all=1) add up on it
        every = client.get("/session?" + urlencode({"path": info.path, "all": "1"})).text
        found = re.findall(
            r'<article class="entry entry-[^ ]* role-(\w+)[^"]*" id="entry-([^"]+)">', every
        )
        order = [entry_id for _, entry_id in found]
        first = next(n for n, (role, _) in enumerate(found) if role == "assistant")
        expected = sum(usage[e].output_tokens for e in order[first:] if e in usage)
        outputs = [re.search(r"output ([\d,]+)", head) for head in with_usage.values()]
        assert sum(int(m.group(1).replace(",", "")) for m in outputs if m) == expected > 0
