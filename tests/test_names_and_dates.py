"""The names and dates a user sees of sessions on a real machine (issue 25, items 6-10): on the
real fixtures laid out where their agents keep them (real_home: copied with fresh mtimes, as
after restoring a backup), each stated on its own here and compared with the index and the CLI.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from real_home import RealHome, claude_project_folder
from session_builder import append, header, message, sessions_dir, write_session

from xcsh_store import SessionManager
from xcsh_store.cli.app import cli
from xcsh_store.format.jsonl import parse_line
from xcsh_store.index import SessionIndex
from xcsh_store.times import iso_millis, parse_iso


def run_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def objects(path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a file, in order (two glued on one line: both)."""
    return [value for line in path.read_bytes().splitlines(True) for value in parse_line(line)]


# --------------------------------------------------------------------------------------------
# 10. modified is the session's last activity


def newest_timestamp(path: Path) -> str | None:
    """The newest ``timestamp`` of the file's lines, in UTC with milliseconds; None: none has
    one."""
    moments = [
        moment
        for value in objects(path)
        if isinstance(value.get("timestamp"), str)
        and (moment := parse_iso(value["timestamp"])) is not None
    ]
    return iso_millis(max(moments)) if moments else None


def expected_modified(path: Path) -> str:
    return newest_timestamp(path) or iso_millis(path.stat().st_mtime)


def test_modified_is_the_newest_line_not_the_copy_time(real_home: RealHome, index: SessionIndex):
    index.sync()
    listed = index.list_sessions()
    assert len(listed) == len(real_home.files)
    expected = {str(path): expected_modified(path) for path in real_home.files.values()}
    assert {session.path: iso_millis(session.modified) for session in listed} == expected
    # Newest first, by that time (ties in file id order).
    assert [iso_millis(session.modified) for session in listed] == sorted(
        expected.values(), reverse=True
    )
    today = datetime.now(UTC).date()
    assert all(session.modified.date() != today for session in listed)
    shown = {item["path"]: item["modified"] for item in run_json("ls", "--limit", "0")}
    assert shown == expected


def test_touching_a_file_changes_neither_its_modified_time_nor_its_place(
    real_home: RealHome, index: SessionIndex
):
    index.sync()
    path = real_home.files["sheurich__episodic-memory__claude-tiny-conversation.jsonl"]
    before = [session.path for session in index.list_sessions()]
    long_ago = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
    os.utime(path, (long_ago, long_ago))
    index.sync()
    (session,) = [item for item in index.list_sessions() if item.path == str(path)]
    assert iso_millis(session.modified) == newest_timestamp(path) > "2025"
    assert session.modified >= session.created
    assert [session.path for session in index.list_sessions()] == before
    assert index.verify().clean


def test_lines_appended_later_move_modified_forward(agent_dir: Path, index: SessionIndex):
    path = sessions_dir(agent_dir) / "grows.jsonl"
    first = message("u1", None, "user", "first") | {"timestamp": "2026-03-01T10:00:00.000Z"}
    write_session(path, [header("grows"), first])
    index.sync()
    assert iso_millis(index.find_session("grows").modified) == "2026-03-01T10:00:00.000Z"
    # Another offset, more digits: the same instant in UTC is what counts.
    later = message("a1", "u1", "assistant", "later") | {"timestamp": "2026-03-01T12:30:00+02:00"}
    unstamped = {k: v for k, v in message("u2", "a1", "user", "none").items() if k != "timestamp"}
    append(path, later, unstamped)
    report = index.sync()
    assert report.files_reindexed == 0  # read on from the old end
    assert iso_millis(index.find_session("grows").modified) == "2026-03-01T10:30:00.000Z"
    assert index.verify().clean


def test_a_file_whose_lines_have_no_time_is_modified_when_its_file_was(
    agent_dir: Path, index: SessionIndex
):
    path = sessions_dir(agent_dir) / "untimed.jsonl"
    untimed = {k: v for k, v in header("untimed").items() if k != "timestamp"}
    write_session(path, [untimed])
    os.utime(path, (1_700_000_000, 1_700_000_000))
    index.sync()
    assert index.find_session("untimed").modified.timestamp() == 1_700_000_000
    append(path, message("u1", None, "user", "now timed"))
    index.sync()
    assert iso_millis(index.find_session("untimed").modified) == "2026-01-01T00:02:00.000Z"
    assert index.verify().clean


# --------------------------------------------------------------------------------------------
# 7. oh-my-pi's title_change renames the session (decisions D28)

OMP_V3 = "astral303__rearview__omp-v3.jsonl"


def branch_name(path: Path) -> str | None:
    """The title of the newest title_change on the path from the file's last entry to its
    root; None when there is none."""
    entries = [value for value in objects(path) if isinstance(value.get("id"), str)]
    entries = [value for value in entries if value.get("type") != "session"]
    by_id = {value["id"]: value for value in entries}
    current: dict[str, Any] | None = entries[-1]
    seen = set()
    while current is not None and current["id"] not in seen:
        seen.add(current["id"])
        if current.get("type") == "title_change" and current.get("title"):
            return current["title"]
        current = by_id.get(current.get("parentId") or "")
    return None


def names_everywhere(path: Path) -> tuple[str | None, ...]:
    """The session's name in ls, in show, in the library's listing and in the manager."""
    (listed,) = [item for item in run_json("ls", "--limit", "0") if item["path"] == str(path)]
    shown = run_json("show", str(path))
    # (The library lists the sessions of one agent dir: oh-my-pi's here.)
    listing = SessionManager.list_all(agent_dir=str(path.parents[2]))
    (found,) = [item for item in listing if item.path == str(path)]
    manager = SessionManager.open(str(path))
    return listed["title"], shown["session"]["title"], found.title, manager.get_session_name()


def test_title_change_on_the_active_branch_names_the_session(
    real_home: RealHome, index: SessionIndex
):
    path = real_home.files[OMP_V3]
    index.sync()
    assert branch_name(path) == "Updated OMP title"
    assert names_everywhere(path) == ("Updated OMP title",) * 4
    assert run_json("search", "updated omp title")[0]["session_id"] == "omp_session_custom_id"
    # A later line continues from the branch before the rename: the first line's title again.
    append(path, message("back", "abandoned", "user", "carry on there"))
    assert index.sync().files_reindexed == 0
    assert branch_name(path) is None
    assert names_everywhere(path) == ("OMP fixture title",) * 4
    # Renamed on that branch.
    rename = {"type": "title_change", "id": "t2", "parentId": "back", "title": "Second name"}
    append(path, rename | {"timestamp": "2026-01-02T03:05:00.000Z", "source": "auto"})
    index.sync()
    assert names_everywhere(path) == ("Second name",) * 4
    assert index.find_session(str(path)).title_source == "auto"
    assert index.verify().clean


# --------------------------------------------------------------------------------------------
# 8. The first prompt is what the user typed

D_KIMUSON = "d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
LARGE = "sheurich__episodic-memory__claude-large-conversation.jsonl"
INJECTED = ("<command-", "<local-command-", "<system-reminder>", "<bash-")


def user_texts(index: SessionIndex, path: Path) -> list[tuple[str, str]]:
    """(type, text) of every user message and every meta entry of a session, in file order."""
    from xcsh_store.format.entries import content_text
    from xcsh_store.index.model.paths import entry_rows, read_entries

    session = index.find_session(str(path))
    rows = [
        row
        for row in entry_rows(index.connection, session.file_id)
        if row.role == "user" or row.custom_type == "meta"
    ]
    values = read_entries(session.path, rows, None, session.agent)
    return [
        (value["type"], content_text((value.get("message") or value)["content"]))
        for value in values
    ]


def test_a_slash_command_is_the_first_prompt_as_typed(real_home: RealHome, index: SessionIndex):
    index.sync()
    path = real_home.files[D_KIMUSON]
    (listed,) = [item for item in run_json("ls", "--limit", "0") if item["path"] == str(path)]
    assert listed["first_message"] == "/orchestrator create TODO app by Next.js"
    for claude in real_home.of("claude").values():
        first = index.find_session(str(claude)).first_message
        assert not first.startswith(INJECTED), (claude.name, first)


def test_local_commands_are_prompts_and_their_output_is_not(
    real_home: RealHome, index: SessionIndex
):
    index.sync()
    texts = user_texts(index, real_home.files[LARGE])
    prompts = [text for kind, text in texts if kind == "message"]
    assert "/context" in prompts
    assert not [text for text in prompts if INJECTED[1] in text or INJECTED[0] in text]
    outputs = [text for kind, text in texts if kind == "custom_message"]
    assert any(text.startswith("<local-command-stdout>") for text in outputs)


def claude_line(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent, "isSidechain": False, "type": "user", "cwd": "/work/app",
        "sessionId": "typed", "uuid": uuid, "timestamp": f"2026-05-01T10:00:0{uuid}.000Z",
        "message": {"role": "user", "content": content}, **extra,
    }  # fmt: skip


def test_markup_claude_code_adds_to_the_users_turn_is_not_a_prompt(
    real_home: RealHome, index: SessionIndex
):
    reminder = "<system-reminder>The user opened app.py in the IDE.</system-reminder>"
    lines = [
        claude_line("1", None, "<local-command-caveat>Caveat: the messages below…"),
        claude_line("2", "1", [{"type": "text", "text": reminder}]),
        claude_line("3", "2", "<command-name>/model</command-name>\n<command-args></command-args>"),
        claude_line("4", "3", "<local-command-stdout>Set model to opus</local-command-stdout>"),
        claude_line("5", "4", "<bash-input>make test</bash-input>"),
        claude_line("6", "5", "<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>"),
        claude_line("7", "6", [{"type": "text", "text": reminder}, {"type": "text", "text": "go"}]),
    ]
    path = write_session(real_home.claude_dir / "projects" / "-work-app" / "typed.jsonl", lines)
    index.sync()
    assert index.find_session("typed").first_message == "/model"
    assert user_texts(index, path) == [
        ("custom_message", "<local-command-caveat>Caveat: the messages below…"),
        ("custom_message", reminder),
        ("message", "/model"),
        ("custom_message", "<local-command-stdout>Set model to opus</local-command-stdout>"),
        ("message", "!make test"),
        ("custom_message", "<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>"),
        ("message", "go"),
    ]


# --------------------------------------------------------------------------------------------
# 6. A Claude summary line titles the session that holds its leaf

TINY = "sheurich__episodic-memory__claude-tiny-conversation.jsonl"


def summary_titles(claude: dict[str, Path]) -> dict[str, str | None]:
    """Each Claude file -> the summary naming its latest entry that one names, of the summary
    lines of the files of its folder (None: no summary names one of its entries)."""
    summaries: dict[Path, dict[str, list[str]]] = {}
    for path in claude.values():
        for value in objects(path):
            if value.get("type") == "summary" and value.get("leafUuid") and value.get("summary"):
                by_leaf = summaries.setdefault(path.parent, {})
                by_leaf.setdefault(value["leafUuid"], []).append(value["summary"])
    titles: dict[str, str | None] = {}
    for name, path in claude.items():
        by_leaf = summaries.get(path.parent, {})
        named = [value["uuid"] for value in objects(path) if value.get("uuid") in by_leaf]
        titles[name] = min(by_leaf[named[-1]]) if named else None
    return titles


def claude_titles(index: SessionIndex, claude: dict[str, Path]) -> dict[str, tuple[Any, Any]]:
    found = {}
    for name, path in claude.items():
        session = index.find_session(str(path))
        found[name] = (session.title, session.title_source)
    return found


def test_a_summary_titles_the_session_that_holds_its_leaf(real_home: RealHome, index: SessionIndex):
    claude = real_home.of("claude")
    index.sync()
    expected = summary_titles(claude)
    assert expected[TINY] == "Clarifying AI Assistant's Action-Taking Guidelines"
    assert expected[LARGE] is None and expected[D_KIMUSON] is None  # unknown leaves
    titles = claude_titles(index, claude)
    for name, title in expected.items():
        if title is not None:
            assert titles[name] == (title, "summary"), name
        else:
            assert titles[name][1] != "summary", name
    listed = {item["path"]: item for item in run_json("ls", "--limit", "0")}
    assert listed[str(claude[LARGE])]["title"] is None
    assert listed[str(claude[TINY])]["title_source"] == "summary"
    assert index.verify().clean


def test_summary_titles_do_not_depend_on_the_order_files_are_found(
    real_home: RealHome, tmp_path: Path
):
    claude = real_home.of("claude")
    aside = tmp_path / "aside"
    aside.mkdir()
    results = []
    # All at once; the summary's file in a first sync, the leaf's in a later one; the other way.
    for held_back in ((), (TINY,), (LARGE,)):
        for name in held_back:
            claude[name].rename(aside / name)
        with SessionIndex.open(str(tmp_path / f"store-{len(results)}")) as index:
            index.sync()
            for name in held_back:
                (aside / name).rename(claude[name])
            index.sync()
            results.append(claude_titles(index, claude))
            assert index.verify().clean
    assert results[0] == results[1] == results[2]
    assert results[0][TINY] == ("Clarifying AI Assistant's Action-Taking Guidelines", "summary")


def test_titles_left_unresolved_by_a_stopped_sync_are_given_by_the_next(
    real_home: RealHome, index: SessionIndex
):
    """A sync stopped (SIGKILL) after it wrote a file's rows and before it resolved the summary
    titles leaves the note its writes made; the next sync, with nothing new to read, resolves
    every Claude session's title (the state such a kill left, made here by hand: the
    archive's kill tests reach it only when the kill lands between those two transactions)."""
    from xcsh_store.index.write.summaries import PENDING_KEY

    claude = real_home.of("claude")
    index.sync()
    expected = claude_titles(index, claude)
    assert expected[TINY][1] == "summary"
    with index.connection:
        index.connection.execute(
            "UPDATE sessions SET title = NULL, title_source = NULL, summary_from = NULL"
            " WHERE title_source = 'summary'"
        )
        index.connection.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (PENDING_KEY,))
    assert not index.verify().clean
    index.sync()
    assert claude_titles(index, claude) == expected
    assert index.verify().clean
    # Resolved once: the note is gone (a sync that writes no rows leaves none).
    index.sync()
    note = index.connection.execute("SELECT 1 FROM meta WHERE key = ?", (PENDING_KEY,))
    assert note.fetchall() == []


def test_a_summary_title_goes_with_its_file_and_yields_to_the_sessions_own(
    real_home: RealHome, index: SessionIndex, tmp_path: Path
):
    claude = real_home.of("claude")
    index.sync()
    large = claude[LARGE].read_bytes()
    # Deleted by its agent, the summary's file is archived: the title stays (issue 34).
    claude[LARGE].unlink()
    index.sync()
    assert index.find_session(str(claude[TINY])).title_source == "summary"
    # Forgotten on purpose, its summary names nothing any more.
    forgotten = index.forget([index.find_session(str(claude[LARGE]))], apply=True)
    assert forgotten.sessions == 1
    assert index.find_session(str(claude[TINY])).title is None
    assert index.verify().clean
    claude[LARGE].write_bytes(large)
    index.sync()
    assert index.find_session(str(claude[TINY])).title_source == "summary"
    named = {"type": "custom-title", "customTitle": "Mine", "sessionId": "x"}
    append(claude[TINY], named)
    index.sync()
    session = index.find_session(str(claude[TINY]))
    assert (session.title, session.title_source) == ("Mine", "user")
    assert index.verify().clean
    # The same leaf summarised in another project folder names nothing here.
    other = real_home.claude_dir / "projects" / "-elsewhere"
    other.mkdir()
    leaf = objects(claude[TINY])[-2]["uuid"]
    write_session(other / "x.jsonl", [{"type": "summary", "summary": "Far", "leafUuid": leaf}])
    claude[TINY].write_bytes(claude[TINY].read_bytes().rsplit(b"\n", 2)[0] + b"\n")
    index.sync()
    assert index.find_session(str(claude[TINY])).title_source == "summary"
    assert index.find_session(str(claude[TINY])).title != "Far"
    assert index.verify().clean


# --------------------------------------------------------------------------------------------
# 9. A session's project is its working directory, for every agent


def recorded_cwd(path: Path) -> str | None:
    """The working directory a session file records: the header's (xcsh, pi, oh-my-pi), the
    first line's that has one (Claude Code), session_meta's (Codex)."""
    for value in objects(path):
        if value.get("type") == "session_meta":
            return value["payload"].get("cwd")
        if value.get("type") == "session" or (isinstance(value.get("cwd"), str) and value["cwd"]):
            return value.get("cwd")
    return None


STREAMING = "/Users/testuser/Documents/GitHub/projects/example-project"


def test_the_project_of_every_session_is_its_cwd(real_home: RealHome, index: SessionIndex):
    index.sync()
    listed = run_json("ls", "--limit", "0")
    expected = {str(path): recorded_cwd(path) for path in real_home.files.values()}
    assert {item["path"]: item["project"] for item in listed} == expected
    # Not the folder a file is in: Claude Code's "-Users-…"; Codex files its sessions by date
    # (sessions/2025/…), a folder that names no project: none.
    folders = {item["project_dir"] for item in listed}
    assert claude_project_folder(f"{STREAMING}/.worktrees/streaming") in folders
    assert {item["project_dir"] for item in listed if item["agent"] == "codex"} == {None}
    assert not (folders - {None}) & {item["project"] for item in listed}
    # A project holds the sessions started in its folder and the folders inside it.
    inside = {item["path"] for item in run_json("ls", "--project", STREAMING, "--limit", "0")}
    assert inside == {
        path for path, cwd in expected.items() if cwd and cwd.startswith(STREAMING + "/")
    }
    # (Two episodic-memory conversations, in a worktree of the project.)
    assert {str(real_home.files[name]) for name in (TINY, LARGE)} <= inside
    by_project = {row["key"] for row in run_json("usage", "--by", "project")["rows"]}
    assert by_project <= {*expected.values(), None}
