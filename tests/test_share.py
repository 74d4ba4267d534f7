"""Sharing and resuming a session (issue 38 items 4 and 5, docs/share.md): ``export ID`` as
Markdown or JSON, redacted unless --no-redact, tool calls as what they did; ``resume ID``
printing (or running) the agent's own command. On the real fixtures laid out as a home."""

from __future__ import annotations

import difflib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from helpers.browser import distinct_bytes, headless_chromium, wait_until
from mcp_client import call_tools
from real_home import RealHome
from selenium.webdriver.common.by import By

from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex

# A real Claude Code session whose assistant edits a file with Edit (old_string/new_string).
EDITING = "apanloco__random__claude-session.jsonl"
# Fake, but shaped as Anthropic's keys are: the detector takes it for one.
PLANTED_KEY = "sk-ant-api03-" + "Q7vX2mN9pL4kR8sT1wY6zB3cF5hJ0dG" * 3 + "AA"


def _invoke(*arguments: str, code: int = 0) -> Any:
    result = CliRunner().invoke(cli, list(arguments), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


@pytest.fixture
def home(agent_dir: Path, real_home: RealHome) -> RealHome:
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    return real_home


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _session_id(path: Path) -> str:
    return next(r["sessionId"] for r in _records(path) if isinstance(r.get("sessionId"), str))


def test_an_edit_is_exported_as_the_diff_of_its_strings(home: RealHome):
    path = home.of("claude")[EDITING]
    edits = [
        block["input"]
        for record in _records(path)
        if record.get("type") == "assistant"
        for block in record["message"].get("content", [])
        if isinstance(block, dict) and block.get("type") == "tool_use" and block["name"] == "Edit"
    ]
    assert edits
    document = _invoke("export", _session_id(path)).stdout
    for edit in edits:
        expected = difflib.unified_diff(
            edit["old_string"].splitlines(keepends=True),
            edit["new_string"].splitlines(keepends=True),
            edit["file_path"],
            edit["file_path"],
        )
        diff = "".join(line if line.endswith("\n") else line + "\n" for line in expected)
        assert f"**Edit {edit['file_path']}**\n\n" in document
        assert f"```diff\n{diff}```" in document


def test_the_markdown_has_the_conversation_and_folds_tool_output(home: RealHome):
    path = home.of("claude")[EDITING]
    document = _invoke("export", _session_id(path)).stdout
    assert document.startswith("# hi! were in a new folder called")
    assert "- **Agent:** claude\n" in document
    assert "## User · 2026-04-14T05:25:35.166Z\n\nhi!\nwere in a new folder" in document
    # A shell call as its command, headed by its description; its output folded.
    assert "**Bash: Check current folder contents**\n\n```sh\nls /home/da/akerud/random/\n```" in (
        document
    )
    assert "<details>\n<summary>Output of Bash</summary>" in document
    # Bookkeeping lines of Claude Code (file-history snapshots, queue operations) are not there.
    assert "file-history-snapshot" not in document and '"type":' not in document


def test_the_json_export_is_the_session_and_its_messages(home: RealHome, tmp_path: Path):
    path = home.of("codex")
    codex = next(iter(path.values()))
    listed = json.loads(_invoke("ls", "--agent", "codex", "-n", "0", "--json").stdout)
    session = next(s for s in listed if s["path"] == str(codex))
    target = tmp_path / "out.json"
    _invoke("export", session["id"], "--format", "json", "-o", str(target))
    document = json.loads(target.read_text())
    assert document["session"]["id"] == session["id"]
    roles = {message["role"] for message in document["messages"]}
    assert {"user", "assistant"} <= roles
    # Nothing empty: a Codex session's encrypted reasoning and records of its own are left out.
    assert all(message["blocks"] for message in document["messages"])
    assert all(block["kind"] in {"text", "thinking", "command", "diff", "read", "call", "output"}
               for message in document["messages"] for block in message["blocks"])  # fmt: skip


def _plant_key(path: Path) -> None:
    """A user prompt holding PLANTED_KEY, appended to the Claude session at ``path``."""
    records = _records(path)
    prompt = next(r for r in records if r.get("type") == "user")
    planted = {
        **prompt,
        "uuid": "0b5e1d9e-5e1d-4e1d-8e1d-5e1d9e5e1d9e",
        "parentUuid": records[-1].get("uuid"),
        "message": {"role": "user", "content": f"My key {PLANTED_KEY} for it"},
    }
    with path.open("ab") as stream:
        stream.write(orjson.dumps(planted) + b"\n")


def test_an_export_is_redacted_unless_asked_not_to(home: RealHome):
    path = home.of("claude")[EDITING]
    _plant_key(path)
    session = _session_id(path)
    redacted = _invoke("export", session).stdout
    assert PLANTED_KEY[:24] not in redacted and "[REDACTED:" in redacted
    kept = _invoke("export", session, "--no-redact")
    assert PLANTED_KEY in kept.stdout
    assert "--no-redact" in kept.stderr


def test_export_parquet_is_still_the_parquet_export(home: RealHome, tmp_path: Path):
    result = _invoke("export", "parquet", str(tmp_path / "parquet"), "--json")
    assert json.loads(result.stdout)["sessions"] > 0


def test_resume_prints_the_agents_own_command_in_the_sessions_folder(home: RealHome):
    path = home.of("claude")[EDITING]
    session = _session_id(path)
    printed = _invoke("resume", session[:8]).stdout.strip()
    assert printed == f"cd /home/da/akerud/random && claude --resume {session}"
    answer = json.loads(_invoke("resume", session[:8], "--json").stdout)
    assert answer["argv"] == ["claude", "--resume", session]
    assert (answer["cwd"], answer["source"], answer["restore"]) == (
        "/home/da/akerud/random", "file", None,
    )  # fmt: skip


def test_resume_of_each_agent_with_a_command(home: RealHome):
    listed = json.loads(_invoke("ls", "-n", "0", "--json").stdout)
    commands = {}
    for session in listed:
        answer = json.loads(_invoke("resume", session["path"], "--json").stdout)
        commands.setdefault(session["agent"], answer["argv"])
    assert commands["codex"][:2] == ["codex", "resume"]
    assert commands["omp"][:2] == ["omp", "--resume"]
    # pi continues a session from its file.
    pi = next(s for s in listed if s["agent"] == "pi")
    assert json.loads(_invoke("resume", pi["path"], "--json").stdout)["argv"] == [
        "pi", "--session", pi["path"],
    ]  # fmt: skip


def test_resume_run_runs_the_agent_in_the_sessions_folder(
    home: RealHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # A stand-in `codex` on PATH: a real program that writes where and how it was run.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "ran.json"
    program = bin_dir / "codex"
    program.write_text(
        f'#!/bin/sh\nprintf \'{{"cwd": "%s", "args": "%s"}}\' "$PWD" "$*" > {record}\nexit 3\n'
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    listed = json.loads(_invoke("ls", "--agent", "codex", "-n", "0", "--json").stdout)
    session = listed[0]
    folder = tmp_path / "work"
    folder.mkdir()
    with SessionIndex.open(os.environ["XCSH_AGENT_DIR"]) as index:
        index.connection.execute(
            "UPDATE sessions SET cwd = ? WHERE session_id = ?", (str(folder), session["id"])
        )
    _invoke("--no-sync", "resume", session["id"], "--run", code=3)
    ran = json.loads(record.read_text())
    assert ran == {"cwd": str(folder), "args": f"resume {session['id']}"}


def test_resume_says_what_is_missing(home: RealHome, tmp_path: Path):
    path = home.of("claude")[EDITING]
    session = _session_id(path)
    # The agent not installed: said in one line, nothing run.
    result = _invoke("resume", session, "--run", code=1)
    assert "claude is not installed here" in result.output
    # Its file deleted: the archive keeps it, and restore is offered.
    path.unlink()
    gone = json.loads(_invoke("resume", session, "--json").stdout)
    assert (gone["source"], gone["restore"]) == ("archived", f"xcsh-store restore {session}")
    printed = _invoke("resume", session)
    assert f"xcsh-store restore {session}" in printed.stderr
    assert printed.stdout.startswith("cd /home/da/akerud/random && claude --resume")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    yield from headless_chromium()


def _page_text(browser: Any) -> str:
    return str(browser.execute_script("return document.body.innerText"))


def test_the_html_page_reads_with_the_network_off(home: RealHome, tmp_path: Path, chromium: Any):
    path = home.of("claude")[EDITING]
    target = tmp_path / "session.html"
    _invoke("export", _session_id(path), "--format", "html", "-o", str(target))
    html = target.read_text()
    # Self-contained: no script, nothing fetched from anywhere.
    assert "<script" not in html and "http-equiv" not in html
    chromium.execute_cdp_cmd("Network.enable", {})
    chromium.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0,
    })  # fmt: skip
    try:
        chromium.get(target.as_uri())
        text = _page_text(chromium)
        assert "were in a new folder called" in text
        assert "ls /home/da/akerud/random/" in text
        # The diff of an edit, its added and removed lines marked.
        assert chromium.execute_script("return document.querySelectorAll('.diff .add').length")
        resources = chromium.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert resources == []
        shot = tmp_path / "page.png"
        assert chromium.save_screenshot(str(shot))
        assert distinct_bytes(shot.read_bytes()) > 16
    finally:
        chromium.execute_cdp_cmd("Network.disable", {})


def test_an_encrypted_page_opens_with_its_passphrase_only(
    home: RealHome, tmp_path: Path, chromium: Any, monkeypatch: pytest.MonkeyPatch
):
    path = home.of("claude")[EDITING]
    target = tmp_path / "sealed.html"
    monkeypatch.setenv("XCSH_STORE_PASSPHRASE", "correct horse battery")
    _invoke("export", _session_id(path), "--format", "html", "--encrypt", "-o", str(target))
    html = target.read_text()
    assert "were in a new folder" not in html and "akerud" not in html
    chromium.get(target.as_uri())
    field = chromium.find_element(By.ID, "passphrase")
    field.send_keys("wrong horse battery")
    chromium.find_element(By.CSS_SELECTOR, "#unlock button").click()
    wait_until(lambda: chromium.find_element(By.ID, "failed").is_displayed())
    field.clear()
    field.send_keys("correct horse battery")
    chromium.find_element(By.CSS_SELECTOR, "#unlock button").click()
    wait_until(lambda: "were in a new folder called" in _page_text(chromium))
    assert "ls /home/da/akerud/random/" in _page_text(chromium)


def test_encrypt_is_for_html_and_needs_a_passphrase(home: RealHome):
    session = _session_id(home.of("claude")[EDITING])
    assert (
        "--encrypt is for --format html" in _invoke("export", session, "--encrypt", code=2).output
    )
    refused = _invoke("export", session, "--format", "html", "--encrypt", code=2)
    assert "XCSH_STORE_PASSPHRASE" in refused.output


def test_the_session_page_offers_resume_and_the_exports_redacted(home: RealHome, client: Any):
    path = home.of("claude")[EDITING]
    _plant_key(path)
    with SessionIndex.open(os.environ["XCSH_AGENT_DIR"]) as index:
        index.sync()
        info = index.find_session(str(path))
    page = client.get("/session", params={"path": info.path}).text
    command = f"cd /home/da/akerud/random &amp;&amp; claude --resume {info.session_id}"
    assert f"<code>{command}</code>" in page and f'data-copy="{command}"' in page
    for form, media in (("md", "text/markdown"), ("html", "text/html"), ("json", "application")):
        answer = client.get("/export", params={"path": info.path, "format": form})
        assert answer.status_code == 200 and answer.headers["content-type"].startswith(media)
        assert (
            f'filename="claude-{info.session_id[:8]}.{form}"'
            in answer.headers["content-disposition"]
        )
        assert "Check current folder contents" in answer.text
        assert PLANTED_KEY[:20] not in answer.text and "[REDACTED:" in answer.text
    assert client.get("/export", params={"path": info.path, "format": "pdf"}).status_code == 400


def _codex_session_with_records(home: RealHome) -> str:
    """A real Codex session whose branch starts with Codex's own records (session_meta)."""
    listed = json.loads(_invoke("ls", "--agent", "codex", "-n", "0", "--json").stdout)
    for session in listed:
        shown = json.loads(_invoke("show", session["id"], "--json").stdout)
        kinds = [entry.get("customType") or entry.get("type") for entry in shown["entries"]]
        if "session_meta" in str(kinds) and session["message_count"] >= 2:
            return str(session["id"])
    raise AssertionError("no Codex fixture opens with session_meta")


def test_show_leaves_out_the_agents_own_records_unless_asked(home: RealHome):
    session = _codex_session_with_records(home)
    shown = _invoke("show", session).stdout
    every = _invoke("show", session, "--all").stdout
    assert "session_meta" in every and "session_meta" not in shown
    assert "left out: the agent's own records; --all shows them" in shown
    assert "left out" not in every
    # Every row shown has something to read.
    table = shown.split("\n-", 1)[1].splitlines()[1:]
    rows = [line for line in table if line and not line.startswith("(")]
    assert rows and all(len(line.split(None, 5)) == 6 for line in rows)
    messages = _invoke("show", session, "--messages").stdout
    kinds = {line.split()[4] for line in messages.split("\n-", 1)[1].splitlines()[1:]
             if line and not line.startswith("(")}  # fmt: skip
    assert kinds <= {"user", "assistant"} and "user" in kinds


def test_show_of_an_entry_prints_it_whole(home: RealHome):
    path = home.of("claude")[EDITING]
    session = _session_id(path)
    records = _records(path)
    long_prompt = next(
        r for r in records
        if r.get("type") == "user" and isinstance(r["message"].get("content"), str)
    )  # fmt: skip
    shown = _invoke("show", session, long_prompt["uuid"][:12]).stdout
    assert long_prompt["message"]["content"] in shown
    answer = json.loads(_invoke("show", session, long_prompt["uuid"], "--json").stdout)
    assert answer["entry"]["id"] == long_prompt["uuid"]
    refused = _invoke("show", session, long_prompt["uuid"], "--tree", code=2)
    assert "ENTRY shows one entry" in refused.output


def test_mcp_get_session_leaves_out_the_agents_own_records_unless_asked(home: RealHome):
    session = _codex_session_with_records(home)
    agent_dir = Path(os.environ["XCSH_AGENT_DIR"])
    _tools, (page, every) = call_tools(
        agent_dir,
        [
            ("get_session", {"session": session, "limit": 200}),
            ("get_session", {"session": session, "limit": 200, "all_entries": True}),
        ],
    )
    assert every["left_out"] == 0 and page["left_out"] > 0
    assert len(page["entries"]) + page["left_out"] == len(every["entries"])
    assert all(entry["text"] for entry in page["entries"])
    assert "session_meta" in {entry["kind"] for entry in every["entries"]}


def test_picks_preview_leaves_out_the_agents_own_records(home: RealHome):
    from xcsh_store.cli.picker.source import SESSIONS, PickSource

    session = _codex_session_with_records(home)
    with SessionIndex.open(os.environ["XCSH_AGENT_DIR"], read_only=True) as index:
        source = PickSource(index, ("codex",))
        (row,) = [row for row in source.rows(SESSIONS, "") if row.value == session]
        preview = source.preview(row)
    kinds = [entry.kind for entry in preview.entries]
    assert kinds and "session_meta" not in kinds and "turn_context" not in kinds


def test_the_session_page_leaves_out_the_agents_own_records_unless_asked(
    home: RealHome, client: Any
):
    session = _codex_session_with_records(home)
    page = client.get(f"/session/{session}").text
    every = client.get(f"/session/{session}", params={"all": "1"}).text
    assert '<span class="kind">session_meta</span>' in every
    assert '<span class="kind">session_meta</span>' not in page
    assert "of the agent's own records (nothing to read) not shown" in page
    assert "not shown · " not in every
