"""Tool calls as what they did (issue 38 item 1, format/tool_calls.py), on the real fixtures of
every agent: an edit as the diff of its own old and new texts (computed here with difflib), a
Codex apply_patch as its patch's lines, a shell call as its command and description, a read as
its path and range, any other call as its arguments; ``show ID ENTRY`` prints an edit as a
unified diff, coloured only on a terminal that wants colour; the session page renders the same
diff as the export, its changed words marked."""

from __future__ import annotations

import difflib
import html
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from agent_homes import lay_out_agents, lay_out_documents
from click.testing import CliRunner
from isolation import isolated_environment
from mcp_client import call_tools
from real_home import FIXTURES, lay_out_home

from xcsh_store.cli.app import cli
from xcsh_store.format.tool_calls import MARKED_WORDS, marked_lines, tool_gist, tool_view
from xcsh_store.index import SessionIndex

# A real Claude Code session whose assistant edits a file with Edit and writes one with Write.
EDITING = "apanloco__random__claude-session.jsonl"
# A Codex 0.58 session that patches a file with `apply_patch <<'PATCH'` through its shell tool.
PATCHING = "AcidicSoil__codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"  # noqa: E501
# A Codex 0.14x session whose exec tool runs scripts that call tools.apply_patch(patch).
SCRIPTED = "AkashJana18__edgerunner__codex-session.jsonl"


def _diff(old: str, new: str, path: str) -> str:
    """The unified diff of an edit, as a reader computes it from the call's own arguments."""
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), path, path)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, Any]]]:
    """Every tool call of every agent's fixtures, as the index reads them: agent -> (name,
    arguments), in file order."""
    root = tmp_path_factory.mktemp("calls")
    home = root / "home"
    with pytest.MonkeyPatch.context() as patch:
        for variable, value in isolated_environment(home).items():
            patch.setenv(variable, value)
        lay_out_home(home)
        lay_out_agents(home)
        lay_out_documents(home)
        threads = home / isolated_environment(home)["AMP_DATA_DIR"] / "threads"
        threads.mkdir(parents=True)
        for thread in (FIXTURES / "amp").glob("*.json"):
            shutil.copyfile(thread, threads / thread.name)
        found: dict[str, list[tuple[str, Any]]] = {}
        with SessionIndex.open(str(root / "agent")) as index:
            index.sync(workers=1)
            for session in index.list_sessions():
                for entry in index.branch_entries(session, None):
                    found.setdefault(session.agent, []).extend(_calls_of(entry))
    return found


def _calls_of(entry: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            yield str(block.get("name")), block.get("arguments")


def _records(name: str, agent: str = "claude") -> list[dict[str, Any]]:
    path = FIXTURES / agent / name
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_every_agents_fixtures_have_calls(calls):
    # Aider's chat history records no tool calls.
    assert {"claude", "codex", "pi", "omp", "gemini", "opencode", "copilot", "qwen", "droid",
            "cursor", "amp"} <= set(calls)  # fmt: skip


def test_a_claude_edit_is_the_diff_of_its_strings(calls):
    edits = [args for name, args in calls["claude"] if name == "Edit"]
    assert len(edits) > 10
    for arguments in edits:
        view = tool_view("Edit", arguments)
        path = arguments["file_path"]
        assert (view.kind, view.title) == ("diff", f"Edit {path}")
        assert view.text == _diff(arguments["old_string"], arguments["new_string"], path)


def test_a_claude_write_adds_every_line(calls):
    writes = [args for name, args in calls["claude"] if name == "Write"]
    assert writes
    for arguments in writes:
        view = tool_view("Write", arguments)
        assert view.text == _diff("", arguments["content"], arguments["file_path"])


def test_pis_edits_are_diffs_of_their_texts(calls):
    edits = [(name, args) for agent in ("pi", "omp") for name, args in calls[agent]
             if name == "edit" and ("newText" in args or "edits" in args)]  # fmt: skip
    assert any("edits" in args for _name, args in edits)
    assert any("newText" in args for _name, args in edits)
    for name, arguments in edits:
        pairs = arguments.get("edits") or [arguments]
        expected = "".join(
            _diff(pair["oldText"], pair["newText"], arguments["path"]) for pair in pairs
        )
        assert tool_view(name, arguments).text == expected


def test_an_edit_without_its_new_text_keeps_its_arguments(calls):
    # pi's fixtures hold edits cut short (a path, an old text only): nothing to diff.
    cut = [args for name, args in calls["pi"] if name == "edit" and "newText" not in args
           and "edits" not in args and "new_string" not in args]  # fmt: skip
    assert cut
    assert {tool_view("edit", arguments).kind for arguments in cut} == {"call"}


def test_a_codex_heredoc_patch_is_its_patchs_lines(calls):
    patches = [
        record["payload"]
        for record in _records(PATCHING, "codex")
        if record.get("payload", {}).get("type") == "function_call"
        and "*** Begin Patch" in record["payload"]["arguments"]
    ]
    assert patches
    shown = [tool_view(name, args) for name, args in calls["codex"] if name == "shell"]
    diffs = [view for view in shown if view.kind == "diff"]
    assert len(diffs) == len(patches)
    for payload, view in zip(patches, diffs, strict=True):
        script = orjson.loads(payload["arguments"])["command"][2]
        body = script[script.index("*** Begin Patch") : script.index("*** End Patch")]
        changed = [line for line in body.splitlines() if line[:1] in "+-"]
        assert changed == [line for line in view.text.splitlines()
                           if line[:1] in "+-" and line[:4] not in ("--- ", "+++ ")]  # fmt: skip
        assert view.title == "apply_patch " + re.search(r"Update File: (.+)", body).group(1)


def test_a_codex_exec_script_patch_is_a_diff_of_the_files_it_names(calls):
    scripts = [args for name, args in calls["codex"]
               if name == "exec" and "tools.apply_patch" in args.get("input", "")]  # fmt: skip
    assert len(scripts) > 30
    for arguments in scripts:
        view = tool_view("exec", arguments)
        named = re.findall(r"\*\*\* (?:Add|Update|Delete) File: ([^\\\n]+)", arguments["input"])
        assert view.kind == "diff"
        assert [line[4:] for line in view.text.splitlines() if line.startswith("--- ")] == [
            "/dev/null" if f"Add File: {path}" in arguments["input"] else path for path in named
        ]
        assert "const patch" not in view.text and "tools.apply_patch" not in view.text


@pytest.mark.parametrize(
    ("agent", "name"),
    [("claude", "Bash"), ("gemini", "run_shell_command"), ("copilot", "bash"),
     ("opencode", "bash"), ("droid", "Execute"), ("cursor", "Bash"), ("codex", "exec_command"),
     ("codex", "shell_command"), ("pi", "bash"), ("omp", "bash"), ("amp", "bash")],
)  # fmt: skip
def test_a_shell_call_is_its_command_under_its_description(calls, agent, name):
    runs = [args for called, args in calls[agent] if called == name and args]
    assert runs
    for arguments in runs:
        view = tool_view(name, arguments)
        command = arguments.get("command") or arguments.get("cmd")
        described = arguments.get("description")
        assert (view.kind, view.text) == ("command", command)
        assert view.title == (f"{name}: {described}" if described else name)
        assert view.gist.startswith(f"$ {command}")


def test_a_codex_shell_words_are_the_script_the_shell_runs(calls):
    words = [args for name, args in calls["codex"] if name == "shell"]
    views = [tool_view("shell", args) for args in words]
    run = [(args, view) for args, view in zip(words, views, strict=True) if view.kind == "command"]
    assert run
    assert all(view.text == args["command"][2] for args, view in run)  # bash -lc SCRIPT


@pytest.mark.parametrize(
    ("agent", "name"),
    [("claude", "Read"), ("gemini", "read_file"), ("qwen", "read_file"), ("copilot", "view"),
     ("pi", "read"), ("omp", "read"), ("amp", "Read")],
)  # fmt: skip
def test_a_read_is_its_path_and_range(calls, agent, name):
    reads = [args for called, args in calls[agent] if called == name]
    assert reads
    for arguments in reads:
        view = tool_view(name, arguments)
        path = arguments.get("file_path") or arguments.get("path")
        assert (view.kind, view.title) == ("read", name)
        assert view.text.startswith(path)
        offset, limit = arguments.get("offset"), arguments.get("limit")
        if isinstance(offset, int) and isinstance(limit, int):
            assert view.text == f"{path} (lines {offset}–{offset + limit - 1})"


def test_an_unknown_tool_keeps_its_arguments(calls):
    name, arguments = next(
        (name, args) for name, args in calls["claude"] if name.startswith("mcp__")
    )
    view = tool_view(name, arguments)
    assert (view.kind, orjson.loads(view.text)) == ("call", arguments)
    assert tool_gist(name, arguments).startswith(f"{name}(")


def test_edit_tools_of_gemini_and_opencode_by_their_documented_arguments():
    # No fixture holds one: Gemini CLI's replace / write_file and opencode's edit, by the
    # argument names their tools take (not checked here against a real session).
    old, new = "a = 1\nb = 2\n", "a = 1\nb = 3\n"
    gemini = tool_view("replace", {"file_path": "x.py", "old_string": old, "new_string": new})
    opencode = tool_view("edit", {"filePath": "x.py", "oldString": old, "newString": new})
    written = tool_view("write_file", {"file_path": "y.py", "content": new})
    assert gemini.text == opencode.text == _diff(old, new, "x.py")
    assert written.text == _diff("", new, "y.py")


def test_multiedit_and_copilots_edit_tools_by_their_documented_arguments():
    # Claude Code's MultiEdit (edits: old_string/new_string each) and Copilot CLI's edit
    # (old_str/new_str) and create (file_text): no fixture holds one.
    edits = [{"old_string": "a\n", "new_string": "b\n"}, {"old_string": "c\n", "new_string": "d\n"}]
    multi = tool_view("MultiEdit", {"file_path": "m.txt", "edits": edits})
    assert multi.text == _diff("a\n", "b\n", "m.txt") + _diff("c\n", "d\n", "m.txt")
    copilot = tool_view("edit", {"path": "c.txt", "old_str": "a\n", "new_str": "b\n"})
    created = tool_view("create", {"path": "n.txt", "file_text": "new\n"})
    assert (copilot.text, created.text) == (
        _diff("a\n", "b\n", "c.txt"),
        _diff("", "new\n", "n.txt"),
    )


def test_a_failed_commands_output_says_its_exit_status(home, agent_dir):
    # Codex's exec_command output states it: "Process exited with code 2".
    session = next(
        path for name, path in home.of("codex").items() if name.startswith("Shyaar__beam_v1")
    )
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        session_id = next(s.session_id for s in index.list_sessions() if s.path == str(session))
    document = CliRunner().invoke(cli, ["export", session_id], catch_exceptions=False).output
    assert "<summary>Error from exec_command · exit 2</summary>" in document
    assert "<summary>Output of exec_command · exit 0</summary>" in document


def test_a_claude_tool_result_marked_as_an_error_is_an_error_from_its_tool(home, agent_dir):
    # Claude Code marks a failed call's result "is_error": true; the result names its call by
    # tool_use_id, and the call names the tool.
    session = home.files["ikihin__bhavana__claude-session.jsonl"]
    records = [orjson.loads(line) for line in session.read_text().splitlines()]
    failed = {
        record["uuid"]
        for record in records
        for block in (record.get("message") or {}).get("content") or []
        if isinstance(block, dict) and block.get("is_error") is True
    }
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        session_id = next(s.session_id for s in index.list_sessions() if s.path == str(session))
    exported = CliRunner().invoke(cli, ["export", session_id, "--format", "json"])
    outputs = [
        (message["entry_id"], block)
        for message in orjson.loads(exported.output)["messages"]
        if message["role"] == "tool"
        for block in message["blocks"]
    ]
    errors = {entry_id for entry_id, block in outputs if block.get("is_error")}
    assert errors == failed & {entry_id for entry_id, _block in outputs} != set()
    assert all(block["title"] != "tool" for _entry_id, block in outputs)  # named by the call


def test_a_changed_line_marks_the_words_it_changed():
    diff = _diff("total = price * count\n", "total = price * amount\n", "a.py")
    removed, added = (line for line in marked_lines(diff) if line.kind in ("add", "del"))
    assert removed.pieces == [(False, "-total = price * "), (True, "count")]
    assert added.pieces == [(False, "+total = price * "), (True, "amount")]


def test_lines_with_little_in_common_are_not_marked():
    diff = _diff("import os\n", "def main() -> None:\n", "a.py")
    changed = [line for line in marked_lines(diff) if line.kind in ("add", "del")]
    assert all(line.pieces == [(False, line.text)] for line in changed)


# --------------------------------------------------------------------------------------------
# show and the session page


@pytest.fixture
def home(agent_dir: Path, real_home: Any) -> Any:
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    return real_home


def _first_edit() -> tuple[str, str, dict[str, Any]]:
    """(session id, entry id, arguments) of the first Edit of EDITING that changes a line."""
    for record in _records(EDITING):
        for block in (
            record.get("message", {}).get("content", [])
            if record.get("type") == "assistant"
            else []
        ):
            if isinstance(block, dict) and block.get("name") == "Edit":
                arguments = block["input"]
                if "\n-" in _diff(arguments["old_string"], arguments["new_string"], "f"):
                    return record["sessionId"], record["uuid"], arguments
    raise AssertionError("no Edit that changes a line")


def test_show_entry_prints_an_edit_as_its_diff(home):
    session, entry, arguments = _first_edit()
    result = CliRunner().invoke(cli, ["show", session, entry], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    path = arguments["file_path"]
    expected = _diff(arguments["old_string"], arguments["new_string"], path)
    assert f"\nEdit {path}\n{expected}" in result.output
    assert "\x1b[" not in result.output  # not a terminal: no colour


def test_show_entry_colours_the_diff_when_asked(home, monkeypatch):
    session, entry, _arguments = _first_edit()
    result = CliRunner().invoke(
        cli, ["--color", "always", "show", session, entry], catch_exceptions=False
    )
    assert "\x1b[31m-" in result.output and "\x1b[32m+" in result.output
    assert "\x1b[7m" in result.output  # the changed words, in reverse video
    monkeypatch.setenv("NO_COLOR", "1")
    plain = CliRunner().invoke(cli, ["show", session, entry], catch_exceptions=False)
    assert "\x1b[" not in plain.output


def test_show_names_calls_by_what_they_did(home):
    session, _entry, arguments = _first_edit()
    result = CliRunner().invoke(cli, ["show", session], catch_exceptions=False)
    assert f"→ Edit {arguments['file_path']} +" in result.output
    assert "→ $ ls /home/da/akerud/random/ (Check current folder contents)" in result.output


def test_the_session_page_shows_an_edit_as_the_exports_diff(home, client):
    _session, entry, arguments = _first_edit()
    page = client.get("/session", params={"path": _path_of(home), "entry": entry}).text
    path = arguments["file_path"]
    expected = _diff(arguments["old_string"], arguments["new_string"], path)
    shown = [
        "".join(
            html.unescape(re.sub(r"<[^>]+>", "", line)) + "\n"
            for line in re.findall(r'<span class="\w+">(.*?)</span>', block)
        )
        for block in re.findall(r'<pre class="diff">(.*?)</pre>', page, re.DOTALL)
    ]
    assert expected in shown
    assert "<mark>" in page
    exported = client.get("/export", params={"path": _path_of(home), "format": "html"}).text
    one = re.search(r'<pre class="diff">(.*?)</pre>', page, re.DOTALL)
    assert one is not None and one.group(1) in exported


def _path_of(home: Any) -> str:
    return str(home.of("claude")[EDITING])


def test_the_session_page_says_a_failed_commands_exit_status(home, agent_dir, client):
    path = str(next(p for n, p in home.of("codex").items() if n.startswith("Shyaar__beam_v1")))
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        session = next(s for s in index.list_sessions() if s.path == path)
        failed = next(
            entry["id"]
            for entry in index.branch_entries(session, None)
            if "Process exited with code 2" in orjson.dumps(entry).decode()
        )
    page = client.get("/session", params={"path": path, "entry": failed}).text
    article = page[page.index(f'id="entry-{failed}"') :]
    article = article[: article.index("</article>")]
    assert '<span class="exit failed">exit 2</span>' in article


def test_mcp_get_entry_reads_an_edit_as_its_diff(home, agent_dir):
    session, entry, arguments = _first_edit()
    asked = {"session": session, "entry_id": entry}
    _tools, [answer] = call_tools(agent_dir, [("get_entry", asked)])
    path = arguments["file_path"]
    diff = _diff(arguments["old_string"], arguments["new_string"], path)
    assert answer["text"].startswith(f"→ Edit {path}\n{diff.rstrip()}")
    assert '"old_string"' not in answer["text"]


def test_an_edit_too_large_to_compare_is_every_old_line_removed_and_every_new_added():
    old = "".join(f"old {number}\n" for number in range(1100))
    new = "".join(f"new {number}\n" for number in range(1000))  # 1.1 million line pairs
    diff = tool_view("Edit", {"file_path": "big.txt", "old_string": old, "new_string": new}).text
    lines = diff.splitlines()
    assert lines[:3] == ["--- big.txt", "+++ big.txt", "@@ -1,1100 +1,1000 @@"]
    assert lines[3:] == [f"-{line}" for line in old.splitlines()] + [
        f"+{line}" for line in new.splitlines()
    ]


def test_a_line_of_too_many_words_is_not_marked_within():
    many = " ".join(["word"] * (MARKED_WORDS // 2 + 1))  # a word and a space each
    diff = _diff(many + " x\n", many + " y\n", "a.txt")
    assert all(len(line.pieces) == 1 for line in marked_lines(diff))
    few = _diff("word x\n", "word y\n", "a.txt")
    assert any(len(line.pieces) > 1 for line in marked_lines(few))
