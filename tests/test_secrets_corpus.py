"""Redaction on the labelled corpus (issue 39 items 1, 2, 5, 6; tests/secrets_corpus.py):
every secret found however it is followed and in every shell or config form, no variable
reference or near-miss flagged, and on every surface — push at each tier to a real PostgreSQL,
the Parquet export, a ``serve`` process answering beyond loopback, the MCP server — not an
8-character piece of a secret, even where the index cut its text through one."""

from __future__ import annotations

import html
import urllib.parse
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.served import TOKEN, fetch, serve
from secrets_corpus import (
    ORDINARY,
    SECRETS,
    Case,
    corpus_sessions,
    exported,
    leaks,
    planted_cases,
    pushed,
    score,
    text_windows,
)
from session_builder import sessions_dir

from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex
from xcsh_store.secrets import Redactor, Secret
from xcsh_store.secrets.redact import replace_known

# The entries of a corpus session: the prompt, the tool call, its output after others, alone.
ENTRIES = ("u1", "a1", "t1", "t2")


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


@pytest.mark.parametrize("case", SECRETS, ids=[case.context for case in SECRETS])
def test_every_secret_of_the_corpus_is_found(redactor: Redactor, case: Case) -> None:
    redacted = redactor.text(case.text)
    assert not leaks(case, text_windows(redacted)), redacted
    assert "[REDACTED:" in redacted


@pytest.mark.parametrize("case", ORDINARY, ids=[case.context for case in ORDINARY])
def test_ordinary_code_comes_out_as_it_is(redactor: Redactor, case: Case) -> None:
    assert redactor.text(case.text) == case.text


def test_a_query_string_loses_its_password_and_keeps_its_next_parameter(redactor) -> None:
    text = "curl 'https://api.acme.io/login?password=Qm7#tR2vLp9z&user=ana'"
    assert (
        redactor.text(text)
        == "curl 'https://api.acme.io/login?password=[REDACTED:password]&user=ana'"
    )


def test_a_known_secret_is_taken_out_only_where_a_cut_left_a_piece_of_it() -> None:
    """The ``${[REDACTED:secret-assignment]DOMAIN}`` corruption: the start of a value found
    elsewhere in the entry is another variable here, not a piece of it."""
    known = [Secret("secret-assignment", "Zx81#envAUTH0_client_value")]
    text = "https://${Zx81#envAUTH0_DOMAIN}/oauth/token and then Zx81#envAUTH0_cl"
    assert replace_known(text, known) == (
        "https://${Zx81#envAUTH0_DOMAIN}/oauth/token and then [REDACTED:secret-assignment]"
    )


@pytest.fixture
def corpus(agent_dir: Path) -> dict[str, Case]:
    # With issue 26's planted set, made apart from the corpus: its service account's key,
    # JSON-escaped in a title cut through it, went out in part before the entries of a session
    # were redacted with each other's secrets.
    cases = corpus_sessions(sessions_dir(agent_dir), SECRETS + planted_cases() + ORDINARY)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return cases


def run(agent_dir: Path, *arguments: str) -> None:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *arguments])
    assert result.exit_code == 0, result.output + str(result.exception)


def _perfect(shown: dict[str, str], cases: dict[str, Case], texts: bool = True) -> None:
    found = score(shown, cases)
    assert found.leaked == [] and found.flagged == []
    if texts:  # the surface shows the sessions' text at all
        secrets = sum(bool(case.needles) for case in cases.values())
        assert sum("[REDACTED:" in text for text in shown.values()) == secrets


@pytest.mark.parametrize("tier", ["usage", "meta", "full"])
def test_push_sends_no_piece_of_a_secret_at_any_tier(agent_dir, corpus, team_url, tier) -> None:
    run(agent_dir, "push", team_url, "--tier", tier)
    _perfect(pushed(team_url), corpus, texts=tier != "usage")


def test_the_export_holds_no_piece_of_a_secret(agent_dir, corpus, tmp_path) -> None:
    run(agent_dir, "export", "parquet", str(tmp_path / "out"), "--tier", "full")
    _perfect(exported(tmp_path / "out"), corpus)


def test_serve_beyond_loopback_shows_no_piece_of_a_secret(agent_dir, corpus) -> None:
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        paths = {session.id: session.path for session in index.list_sessions()}
    for base, _process in serve(agent_dir, "--host", "0.0.0.0", "--token", TOKEN):
        shown = {}
        for sid, path in paths.items():
            query = urllib.parse.urlencode({"path": path})
            pages = [f"{base}/session?{query}", f"{base}/entry?{query}&id=t1"]
            pages.append(f"{base}/entry?{query}&id=t2")
            shown[sid] = "\n".join(html.unescape(fetch(url)) for url in pages)
    _perfect(shown, corpus)


def test_mcp_answers_hold_no_piece_of_a_secret(agent_dir, corpus) -> None:
    from mcp_client import call_tools

    sids = sorted(corpus)
    calls = [
        ("get_entry", {"session": sid, "entry_id": entry}) for sid in sids for entry in ENTRIES
    ]
    _tools, results = call_tools(agent_dir, calls)
    width = len(ENTRIES)
    shown = {
        sid: "\n".join(str(result) for result in results[number * width : (number + 1) * width])
        for number, sid in enumerate(sids)
    }
    _perfect(shown, corpus)
