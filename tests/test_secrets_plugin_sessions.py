"""The secrets of a session that an agent's plugin reads itself (issue 39 item 4): opencode's
session file holds only its title and Aider's ``….md#0`` cannot be opened, so the guard that
takes out a secret a page or an answer cuts in two reads the plugin's records, not the stored
path. A key cut by ``serve``'s list (beyond loopback, a real process) and by an MCP answer's
page leaves no piece of it; ``secrets`` lists both."""

from __future__ import annotations

import html
import json
import urllib.parse
from pathlib import Path

import pytest
from agent_homes import lay_out_documents
from click.testing import CliRunner
from helpers.served import TOKEN, fetch, serve
from secrets_corpus import _provider_keys

from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex
from xcsh_store.web.pages import ENTRY_PART

# An OpenAI project key: its first 82 characters hold no "T3BlbkFJ", so a piece cut from its
# start is no key any rule can tell.
KEY = dict(_provider_keys())["openai-project"]
# Characters before the key in the first message: serve's list cuts it at 300, 49 into the key.
BEFORE = 250
PIECE = 12
# A prompt whose first part on serve's entry page (ENTRY_PART characters) ends 30 characters
# into the key; the word that finds it.
LONG_WORD = "longpromptmarker"
LONG_PROMPT = f"{LONG_WORD} " + "x" * (ENTRY_PART - len(LONG_WORD) - 2 - 30) + " " + KEY
OPENCODE_PARTS = {"part/m_user_small/001.json": "prompt", "part/m_user_large_1/001.json": "long"}
AIDER_HISTORY = """# aider chat started at 2025-06-02 11:49:34

#### {prompt}

Noted; I will use it from the environment instead.

#### {long}

Done.
"""


@pytest.fixture
def plugin_sessions(agent_dir: Path, tmp_path: Path) -> dict[str, str]:
    """An opencode session (its storage tree) and an Aider run (a repository's history), the
    first message of each holding KEY after BEFORE characters; synced. Their session ids by
    agent."""
    prompt = "f" * BEFORE + " " + KEY + " is my key"
    texts = {"prompt": prompt, "long": LONG_PROMPT}
    (storage,) = lay_out_documents(agent_dir.parent / "home", ("opencode",))
    for name, text in OPENCODE_PARTS.items():
        part = storage / name
        part.write_text(json.dumps(json.loads(part.read_text()) | {"text": texts[text]}))
    repository = tmp_path / "repos" / "app"
    repository.mkdir(parents=True)
    (repository / ".aider.chat.history.md").write_text(AIDER_HISTORY.format(**texts))
    (agent_dir / "sessions").mkdir(parents=True)
    with SessionIndex.open(str(agent_dir)) as index:
        index.add_root(str(tmp_path / "repos"), "aider")
        index.sync(workers=1)
        rows = index.connection.execute(
            "SELECT agent, session_id FROM sessions WHERE agent IN ('opencode', 'aider')"
            " AND first_message LIKE '%is my key%'"
        ).fetchall()
    found = dict(rows)
    assert set(found) == {"opencode", "aider"}
    return found


def _entry_of(agent_dir: Path, session_id: str) -> str:
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        # The session's first prompt: the one holding the key.
        ((entry_id,),) = index.connection.execute(
            "SELECT e.id FROM entries AS e JOIN sessions AS s ON s.file_id = e.session"
            " WHERE s.session_id = ? AND e.role = 'user' ORDER BY e.seq LIMIT 1",
            (session_id,),
        ).fetchall()
    return entry_id


def test_an_mcp_page_that_cuts_a_key_of_a_plugin_session_holds_no_piece_of_it(
    agent_dir, plugin_sessions
) -> None:
    from mcp_client import call_tools

    limit = BEFORE + 1 + 40  # the page ends 40 characters into the key
    calls = [
        (
            "get_entry",
            {"session": session, "entry_id": _entry_of(agent_dir, session), "limit": limit},
        )
        for session in plugin_sessions.values()
    ]
    _tools, results = call_tools(agent_dir, calls)
    text = json.dumps(results)
    assert text.count("[REDACTED:openai-api-key]") == len(calls), text
    assert KEY[:PIECE] not in text


def test_serve_beyond_loopback_cuts_no_piece_of_a_key_of_a_plugin_session(
    agent_dir, plugin_sessions
) -> None:
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        long = index.connection.execute(
            "SELECT s.agent, s.path, e.id FROM entries_fts AS f JOIN entries AS e ON e.pk = f.rowid"
            " JOIN sessions AS s ON s.file_id = e.session WHERE entries_fts MATCH ?",
            (LONG_WORD,),
        ).fetchall()
    assert {agent for agent, _path, _id in long} == {"opencode", "aider"}
    for base, _process in serve(agent_dir, "--host", "0.0.0.0", "--token", TOKEN):
        pages = [
            html.unescape(fetch(f"{base}/entry?{urllib.parse.urlencode(query)}&part=1"))
            for _agent, path, entry_id in long
            for query in [{"path": path, "id": entry_id}]
        ]
    for page in pages:
        assert "[REDACTED:openai-api-key]" in page
        assert KEY[:PIECE] not in page


def test_secrets_lists_the_keys_of_plugin_sessions(agent_dir, plugin_sessions) -> None:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "secrets", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    listed = {item["agent"] for item in found if item["kind"] == "openai-api-key"}
    assert listed == {"opencode", "aider"}
    assert KEY not in result.stdout


def test_secrets_in_a_terminal_says_what_it_is_doing(agent_dir, plugin_sessions) -> None:
    """Issue 35 item 4: the first run sat 15.6 s on a blank screen (the rules compile once
    per machine, then every session is read). In a terminal, it says both on stderr."""
    from pty_terminal import run_in_pty

    code, shown = run_in_pty(["secrets"], 100, {"XCSH_AGENT_DIR": str(agent_dir)})
    assert code == 0, shown
    loading = shown.index("Loading the secret rules")
    looking = shown.index("Looking for secrets")
    assert loading < looking < shown.index("openai-api-key")


def test_a_sync_in_a_terminal_prepares_the_rules_for_the_first_secrets(agent_dir) -> None:
    """Issue 35 item 4: the rules compile once per machine (seconds); a sync in a terminal does
    it, once, so that the first ``secrets`` finds them compiled in Kingfisher's cache (the
    test's own cache folder, empty before)."""
    from kingfisher_sdk import Rules
    from pty_terminal import run_in_pty

    (agent_dir / "sessions").mkdir(parents=True)
    environment = {"XCSH_AGENT_DIR": str(agent_dir)}
    code, shown = run_in_pty(["sync"], 100, environment)
    assert code == 0, shown
    assert "Preparing the secret rules" in shown
    code, again = run_in_pty(["sync"], 100, environment)
    assert code == 0 and "Preparing the secret rules" not in again
    assert Rules(confidence="low").cache_status == "loaded"
