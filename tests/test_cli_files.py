"""What the command line leaves on disk: read verbs create nothing (no index.db, history.db,
-wal/-shm), a mistyped agent dir is refused, written files are private, nothing is skipped
silently."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from manager_helpers import assistant

from xcsh_store import HistoryStorage, SessionManager
from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex

# Under the common umask 022, Python's and SQLite's defaults would be world-readable.
pytestmark = pytest.mark.usefixtures("usual_umask")


def invoke(agent: Path, *args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent), *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def files_below(folder: Path) -> dict[str, tuple[int, int] | None]:
    """Every file and folder below ``folder`` by relative path: (size, mtime_ns) of a file.

    Folders count by name only: SQLite may create and delete side files while it reads.
    """
    found: dict[str, tuple[int, int] | None] = {}
    for path in [folder, *folder.rglob("*")]:
        info = path.lstat()
        is_folder = stat.S_ISDIR(info.st_mode)
        found[str(path.relative_to(folder))] = (
            None if is_folder else (info.st_size, info.st_mtime_ns)
        )
    return found


@pytest.fixture
def used_agent_dir(agent_dir: Path) -> dict[str, str]:
    """An agent dir with a session (image blob, artifact), prompt history and an index, as
    the store leaves them: no -wal/-shm files once every writer has closed."""
    image = base64.b64encode(os.urandom(2048)).decode()
    with SessionManager.create("/work/app") as manager:
        manager.append_message(
            {"role": "user", "content": [{"type": "text", "text": "hello world"},
                                         {"type": "image", "data": image, "mimeType": "image/png"}]}
        )  # fmt: skip
        manager.append_message(assistant("hello back"))
        artifact = manager.save_artifact("tool output\n", "bash")
        session_id = manager.get_session_id()
    with HistoryStorage.open() as history:
        history.add("hello prompt")
    invoke(agent_dir, "sync")
    return {"session": session_id, "artifact": f"artifact://{artifact}"}


READ_VERBS = (
    ("ls",),
    ("ls", "--json"),
    ("show", "{session}"),
    ("show", "{session}", "--tree"),
    ("show", "{session}", "--context", "--json"),
    ("search", "hello"),
    ("usage",),
    ("usage", "--json"),
    ("sql", "SELECT count(*) FROM sessions"),
    ("cat", "{artifact}", "--session", "{session}"),
    ("history", "recent"),
    ("history", "search", "hello"),
    ("history", "recent", "--sessions"),
    ("verify",),
    ("doctor",),
    ("gc",),
)


@pytest.mark.parametrize("verb", READ_VERBS, ids=" ".join)
def test_read_verbs_create_no_file(agent_dir, used_agent_dir, verb):
    before = files_below(agent_dir)
    assert not [name for name in before if name.endswith(("-wal", "-shm"))]
    invoke(agent_dir, *(part.format(**used_agent_dir) for part in verb))
    after = files_below(agent_dir)
    if verb == ("gc",):
        # gc syncs first (documented), which writes index.db; it creates nothing.
        assert sorted(after) == sorted(before)
    else:
        assert after == before


def test_a_reader_leaves_the_side_files_of_a_writer_that_is_still_open(used_agent_dir, agent_dir):
    with SessionIndex.open(str(agent_dir)) as writer:
        writer.add_root(str(agent_dir / "elsewhere"))  # a write: the log now holds it
        with SessionIndex.open(str(agent_dir), read_only=True) as reader:
            assert reader.roots()[1:] == [str(agent_dir / "elsewhere")]
        assert (agent_dir / "index.db-wal").exists() and (agent_dir / "index.db-shm").exists()
        writer.remove_root(str(agent_dir / "elsewhere"))
    assert not (agent_dir / "index.db-wal").exists()
    with SessionIndex.open(str(agent_dir), read_only=True) as reader:
        assert reader.roots()[1:] == []


# --------------------------------------------------------------------------------------------
# A mistyped agent dir


ANY_VERB = (
    ("sync",), ("sync", "--full", "--json"), ("gc",), ("gc", "--apply"), ("verify",),
    ("verify", "--repair"), ("doctor",), ("ls",), ("show", "abc"), ("search", "hello"),
    ("usage",), ("sql", "SELECT 1"), ("history", "recent"), ("history", "search", "x"),
    ("history", "prune", "--keep-last", "1"), ("history", "recent", "--sessions"),
    ("cat", "artifact://0", "--session", "abc"), ("migrate",),
)  # fmt: skip


@pytest.mark.parametrize("verb", ANY_VERB, ids=" ".join)
def test_no_verb_creates_a_mistyped_agent_dir(tmp_path, verb):
    mistyped = tmp_path / "nonexistent" / "dir"
    result = CliRunner().invoke(cli, ["--agent-dir", str(mistyped), *verb])
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.parametrize("verb", [("sync",), ("gc",), ("verify", "--repair")], ids=" ".join)
def test_writing_verbs_refuse_a_folder_that_is_not_an_agent_dir(tmp_path, verb):
    folder = tmp_path / "some-folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    result = invoke(folder, *verb, code=1)
    assert "is not an agent dir (no sessions/ folder, no history.db)" in result.output
    assert "sync --init" in result.output
    assert sorted(path.name for path in folder.iterdir()) == ["notes.txt"]


def test_sync_init_makes_a_private_agent_dir_that_doctor_accepts(tmp_path):
    agent = tmp_path / "new-agent"
    report = json.loads(invoke(agent, "sync", "--init", "--json").output)
    assert report["files_seen"] == 0
    assert stat.S_IMODE((agent / "sessions").stat().st_mode) == 0o700
    assert stat.S_IMODE(agent.stat().st_mode) == 0o700
    invoke(agent, "sync")  # an agent dir now: no --init needed
    assert json.loads(invoke(agent, "doctor", "--json").output)["problems"] == []


def test_sync_accepts_a_folder_with_only_a_history_db(tmp_path):
    agent = tmp_path / "agent-with-history"
    with HistoryStorage.open(str(agent / "history.db")) as history:
        history.add("a prompt")
    report = json.loads(invoke(agent, "sync", "--json").output)
    assert report["history_mirrored"] == 1


def test_doctor_reports_a_missing_sessions_folder(tmp_path):
    folder = tmp_path / "not-an-agent"
    folder.mkdir()
    result = invoke(folder, "doctor", code=1)
    assert f"{folder / 'sessions'} is missing: this is not an agent dir" in result.output
    assert list(folder.iterdir()) == []


# --------------------------------------------------------------------------------------------
# Permissions


def not_private(folder: Path) -> dict[str, str]:
    return {
        str(path): oct(stat.S_IMODE(path.lstat().st_mode))
        for path in [folder, *folder.rglob("*")]
        if stat.S_IMODE(path.lstat().st_mode) != (0o700 if path.is_dir() else 0o600)
    }


def test_every_file_the_command_line_writes_is_private(agent_dir, used_agent_dir, tmp_path):
    legacy = agent_dir / "sessions" / "--work-old--" / "old.jsonl"
    legacy.parent.mkdir(mode=0o700)
    legacy.write_bytes(
        b'{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
        b'{"type":"message","timestamp":"2025-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"hi"}}\n'
    )
    legacy.chmod(0o600)
    invoke(agent_dir, "migrate")
    invoke(agent_dir, "history", "add", "another prompt")
    invoke(agent_dir, "history", "prune", "--keep-last", "5")
    invoke(agent_dir, "sync", "--full")
    invoke(agent_dir, "gc", "--apply", "--grace", "0s")
    (agent_dir / "index.db").write_bytes(b"garbage")  # verify --repair rebuilds it
    (agent_dir / "index.db").chmod(0o600)
    invoke(agent_dir, "verify", "--repair")
    html = tmp_path / "reports" / "usage.html"
    html.parent.mkdir()
    invoke(agent_dir, "usage", "--html", str(html))
    existing = tmp_path / "reports" / "old-usage.html"
    existing.write_text("an older chart")
    existing.chmod(0o644)
    invoke(agent_dir, "usage", "--html", str(existing))
    assert not_private(agent_dir) == {}
    assert not_private(html.parent) == {str(html.parent): "0o755"}
    assert "<html" in existing.read_text().lower()


def test_doctor_checks_blobs_markers_locks_and_breadcrumbs(agent_dir, used_agent_dir):
    (blob,) = (agent_dir / "blobs").iterdir()
    marker = agent_dir / ".xcsh-store-demo"
    marker.write_text("made by the demo")
    lock = agent_dir / "index.db.sync-lock"
    breadcrumb = agent_dir / "terminal-sessions" / "pytest-terminal"
    for path in (blob, marker, lock, breadcrumb):
        path.chmod(0o644)
    diagnosis = json.loads(invoke(agent_dir, "doctor", "--json", code=1).output)
    flagged = {problem["path"] for problem in diagnosis["permission_problems"]}
    assert flagged == {str(blob), str(marker), str(lock), str(breadcrumb)}


# --------------------------------------------------------------------------------------------
# Skipped lines, and verify after an append that was not synced


HEADER = (
    b'{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}'
)


def entry(entry_id: str, parent: str | None) -> bytes:
    return json.dumps(
        {"type": "message", "id": entry_id, "parentId": parent,
         "timestamp": "2025-01-01T00:00:01.000Z", "message": {"role": "user", "content": "hi"}}
    ).encode()  # fmt: skip


@pytest.fixture
def session_with_bad_lines(agent_dir: Path) -> Path:
    """Lines 3 (not JSON) and 5 (an array) hold no object; line 4 is blank, which is fine."""
    path = agent_dir / "sessions" / "--w--" / "s1.jsonl"
    for folder in (agent_dir, path.parent.parent, path.parent):
        folder.mkdir(mode=0o700)
    path.write_bytes(b"\n".join([HEADER, entry("a", None), b"not json", b"", b"[1, 2]",
                                 entry("b", "a")]) + b"\n")  # fmt: skip
    path.chmod(0o600)
    return path


def test_sync_json_reports_the_lines_it_skipped(agent_dir, session_with_bad_lines):
    report = json.loads(invoke(agent_dir, "sync", "--json").output)
    assert report["skipped_lines"] == {str(session_with_bad_lines): {"count": 2, "lines": [3, 5]}}
    with session_with_bad_lines.open("ab") as handle:
        handle.write(b"{cut\n" + entry("c", "b") + b"\n")
    report = json.loads(invoke(agent_dir, "sync", "--json").output)
    assert report["skipped_lines"] == {str(session_with_bad_lines): {"count": 1, "lines": [7]}}
    full = invoke(agent_dir, "sync", "--full").output
    assert f"{session_with_bad_lines}: 3 malformed lines skipped (lines 3, 5, 7)" in full


def test_show_notes_the_skipped_lines_of_its_session(agent_dir, session_with_bad_lines):
    invoke(agent_dir, "sync")
    assert "2 malformed lines skipped (lines 3, 5)" in invoke(agent_dir, "show", "s1").output
    shown = json.loads(invoke(agent_dir, "show", "s1", "--json").output)
    assert shown["skipped_lines"] == {"count": 2, "lines": [3, 5]}


def test_doctor_and_verify_list_files_and_line_numbers(agent_dir, session_with_bad_lines):
    with session_with_bad_lines.open("ab") as handle:
        handle.write(b"{cut\n" + entry("c", "b") + b"\n")  # appended before the first sync
    invoke(agent_dir, "sync")
    expected = {str(session_with_bad_lines): {"count": 3, "lines": [3, 5, 7]}}
    assert json.loads(invoke(agent_dir, "doctor", "--json").output)["skipped_lines"] == expected
    verified = json.loads(invoke(agent_dir, "verify", "--json").output)
    assert verified["clean"] and verified["skipped_lines"] == expected
    line = f"{session_with_bad_lines}: 3 malformed lines skipped (lines 3, 5, 7)"
    assert line in invoke(agent_dir, "doctor").output
    assert line in invoke(agent_dir, "verify").output


def test_an_index_from_before_0004_counts_skipped_lines_on_its_next_sync(
    agent_dir, session_with_bad_lines
):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        index.connection.execute(
            "ALTER TABLE files DROP COLUMN lines; ALTER TABLE files DROP COLUMN skipped_count;"
            " ALTER TABLE files DROP COLUMN skipped_lines;"
            " DELETE FROM schema_migrations WHERE name = '0004_skipped_lines'"
        )
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.sync().files_reindexed == 1
        assert index.skipped_lines()[str(session_with_bad_lines)].lines == [3, 5]
        assert index.verify().clean


def test_verify_after_an_unsynced_append_asks_for_a_sync(agent_dir, session_with_bad_lines):
    invoke(agent_dir, "sync")
    with session_with_bad_lines.open("ab") as handle:
        handle.write(entry("c", "b") + b"\n")
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "verify"])
    assert result.exit_code == 1
    assert "1 file changed since the last sync: run `xcsh-store sync`" in result.output
    assert "--repair" not in result.output and "indexed" not in result.output
    verified = json.loads(invoke(agent_dir, "verify", "--json", code=1).stdout)
    assert verified["changed_since_sync"] == {str(session_with_bad_lines): "changed"}
    assert verified["differences"] == {}
    invoke(agent_dir, "sync")
    assert json.loads(invoke(agent_dir, "verify", "--json").output)["clean"]


def test_verify_counts_new_and_deleted_files_as_changed_since_the_sync(
    agent_dir, session_with_bad_lines
):
    invoke(agent_dir, "sync")
    moved = session_with_bad_lines.with_name("moved.jsonl")
    session_with_bad_lines.rename(moved)
    verified = json.loads(invoke(agent_dir, "verify", "--json", code=1).stdout)
    assert verified["changed_since_sync"] == {
        str(moved): "new",
        str(session_with_bad_lines): "deleted",
    }
    repaired = json.loads(invoke(agent_dir, "verify", "--repair", "--json").output)
    assert sorted(repaired["repaired"]) == sorted([str(moved), str(session_with_bad_lines)])
    assert json.loads(invoke(agent_dir, "verify", "--json").output)["clean"]


def test_many_skipped_lines_are_all_counted_and_the_first_1000_listed(agent_dir):
    path = agent_dir / "sessions" / "--w--" / "many.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(HEADER + b"\n" + b"garbage\n" * 1005 + entry("a", None) + b"\n")
    report = json.loads(invoke(agent_dir, "sync", "--json").output)
    assert report["skipped_lines"][str(path)]["count"] == 1005
    assert report["skipped_lines"][str(path)]["lines"] == list(range(2, 1002))
    assert "1,005 malformed lines skipped (lines 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, …)" in (
        invoke(agent_dir, "show", "many").output
    )


def test_doctor_of_a_claude_only_user_lists_no_xcsh_folder_as_missing(monkeypatch, real_home):
    """Claude Code's sessions and no xcsh: the index in the data dir, no sessions/, blobs/ or
    history.db of xcsh's, and none of them is a problem (doctor found none)."""
    monkeypatch.delenv("XCSH_AGENT_DIR")
    for folder in (real_home.codex_dir, real_home.pi_dir, real_home.omp_dir):
        for path in sorted(folder.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
    runner = CliRunner(env={"COLUMNS": "100"})
    assert runner.invoke(cli, ["sync", "--init"]).exit_code == 0
    result = runner.invoke(cli, ["--color", "always", "doctor"])
    assert result.exit_code == 0, result.output
    paths = result.output.split("Paths\x1b[0m\n", 1)[1].split("\x1b[1mIndex", 1)[0]
    assert "missing" not in paths, paths
    assert "none yet (made when xcsh saves a prompt)" in paths
    assert result.output.rstrip().endswith("No problems found.\x1b[0m")
