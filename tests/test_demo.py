"""``xcsh-store demo``: the same sample on every run, and never a file of the user's touched.

The demo writes ./xcsh-store-demo or the folder given with --agent-dir (never $XCSH_AGENT_DIR);
a marker lists every file it wrote with its sha256, and a later run replaces those files only,
refusing (deleting nothing) while the folder holds anything else or a file that changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from session_builder import FIXTURES, PI_FIXTURES

from xcsh_store.cli import cli
from xcsh_store.demo.build import DEMO_NOW, build_demo, write_demo
from xcsh_store.demo.folder import DEMO_MARKER, prepare_demo_dir
from xcsh_store.index import SessionIndex
from xcsh_store.paths import get_default_session_dir
from xcsh_store.session.manager import SessionManager

# Snowflake ids count milliseconds from 2015-01-01 (compatibility: Ids and paths as in the
# reference).
SNOWFLAKE_EPOCH_MS = 1_420_070_400_000
# The files a sync or a read-only open rewrites; the demo replaces them whatever they hold.
# The index, and the price table its sync keeps beside it (a cache naming the price files it
# read: the demo's pi lines without a cost are priced), are derived files.
INDEX_AND_COMPANIONS = re.compile(r"index\.db.*|price-table\.json|history\.db-(shm|wal)")


def invoke(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def snapshot(folder: Path, *, with_index: bool = True) -> dict[str, tuple[bytes, int, int]]:
    """Every file below ``folder``: its bytes, mode and mtime (nanoseconds)."""
    files = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if not with_index and INDEX_AND_COMPANIONS.fullmatch(relative):
            continue
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
        files[relative] = (content, stat.S_IMODE(info.st_mode), info.st_mtime_ns)
    return files


def real_agent_dir(path: Path) -> Path:
    """An agent dir in use: a pi session, a session written by the manager, prompt history."""
    sessions = path / "sessions" / "--home-me-src-app--"
    sessions.mkdir(parents=True)
    shutil.copy(PI_FIXTURES[0], sessions / PI_FIXTURES[0].name)
    with SessionManager.create("/home/me/src/app", str(sessions)) as manager:
        manager.append_message({"role": "user", "content": "hello", "timestamp": 1})
        manager.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 2}
        )
    (path / "history.db").write_bytes(b"not really sqlite, but precious")
    return path


def one_line_error(result: Result) -> str:
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.output
    assert "Traceback" not in result.output
    return result.stderr


def test_sessions_added_to_a_demo_folder_survive_a_second_demo(tmp_path):
    demo = tmp_path / "d"
    invoke("demo", "--agent-dir", str(demo))
    # The user goes on working in the demo's folder, as the tour invites them to.
    folder = get_default_session_dir("/home/me/src/app", str(demo))
    with SessionManager.create("/home/me/src/app", folder) as manager:
        manager.append_message({"role": "user", "content": "real work", "timestamp": 1})
        manager.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2}
        )
        mine = Path(manager.get_session_file() or "")
    invoke("--agent-dir", str(demo), "sync")
    before = snapshot(demo)
    error = one_line_error(invoke("demo", "--agent-dir", str(demo), code=1))
    # The session and the terminal breadcrumb the manager wrote with it.
    assert "2 files `xcsh-store demo` did not write" in error
    assert mine.relative_to(demo).as_posix() in error and "nothing was deleted" in error
    assert snapshot(demo) == before


def test_an_edited_demo_file_survives_a_second_demo(tmp_path):
    demo = tmp_path / "d"
    invoke("demo", "--agent-dir", str(demo))
    login = next(demo.glob("sessions/--home-alex-src-webapp--/2026-11-17T*.jsonl"))
    with login.open("a") as handle:
        handle.write('{"type":"label","id":"u5e7ed17","parentId":null,"timestamp":"x"}\n')
    before = snapshot(demo)
    error = one_line_error(invoke("demo", "--agent-dir", str(demo), code=1))
    assert f"{login.relative_to(demo).as_posix()} (changed)" in error
    assert snapshot(demo) == before


def test_many_foreign_files_are_listed_a_few_at_a_time(tmp_path):
    demo = tmp_path / "d"
    invoke("demo", "--agent-dir", str(demo))
    for number in range(5):
        (demo / f"notes-{number}.txt").write_text("mine")
    (demo / "blobs" / "linked").symlink_to(tmp_path)
    error = one_line_error(invoke("demo", "--agent-dir", str(demo), code=1))
    assert "holds 6 files" in error and "and 3 more" in error
    assert all((demo / f"notes-{number}.txt").exists() for number in range(5))


def test_xcsh_agent_dir_pointing_at_a_real_agent_dir_is_never_touched(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    real = real_agent_dir(tmp_path / "real")
    # An old demo's marker (a line of text), as in an agent dir that was a demo once.
    (real / DEMO_MARKER).write_text("Made by `xcsh-store demo`; running it again replaces this.\n")
    before = snapshot(real)
    monkeypatch.setenv("XCSH_AGENT_DIR", str(real))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    text = invoke("demo").output
    assert text.startswith("Wrote a sample agent dir to xcsh-store-demo ")
    assert (work / "xcsh-store-demo" / "index.db").exists()
    assert snapshot(real) == before
    # Named explicitly, the same folder is refused: its marker does not list the demo's files.
    error = one_line_error(invoke("demo", "--agent-dir", str(real), code=1))
    assert "does not list the demo's files" in error
    one_line_error(invoke("--agent-dir", str(real), "demo", code=1))
    assert snapshot(real) == before


def test_a_real_agent_dir_without_a_marker_is_refused(tmp_path):
    real = real_agent_dir(tmp_path / "real")
    before = snapshot(real)
    error = one_line_error(invoke("demo", "--agent-dir", str(real), code=1))
    assert "was not made by `xcsh-store demo`" in error
    assert snapshot(real) == before


def test_a_marker_naming_files_elsewhere_deletes_nothing_there(tmp_path):
    """Only files found inside the folder are ever deleted, whatever the marker says."""
    demo = tmp_path / "d"
    invoke("demo", "--agent-dir", str(demo))
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    marker = json.loads((demo / DEMO_MARKER).read_text())
    marker["files"]["../outside.txt"] = hashlib.sha256(b"keep me").hexdigest()
    (demo / DEMO_MARKER).write_text(json.dumps(marker))
    invoke("demo", "--agent-dir", str(demo))
    assert outside.read_text() == "keep me"


def test_a_second_demo_replaces_the_first_after_the_tour_read_it(tmp_path):
    demo = tmp_path / "d"
    invoke("demo", "--agent-dir", str(demo))
    first = snapshot(demo, with_index=False)
    for args in (["sync", "--full"], ["history", "search", "orders"], ["ls"], ["doctor"]):
        invoke("--agent-dir", str(demo), *args)
    invoke("demo", "--agent-dir", str(demo))
    assert snapshot(demo, with_index=False) == first
    assert len(json.loads(invoke("--agent-dir", str(demo), "ls", "--json").stdout)) == 13


def test_two_demos_write_identical_files_and_print_the_same(tmp_path, monkeypatch):
    outputs, files = [], []
    for name in ("first-demo", "second-demo"):
        monkeypatch.chdir(tmp_path)
        text = invoke("demo", "--agent-dir", name).output
        outputs.append(re.sub(r"\(\d+\.\ds in all\)", "(…)", text).replace(name, "NAME"))
        files.append(snapshot(tmp_path / name, with_index=False))
    assert outputs[0] == outputs[1]
    assert files[0] == files[1]
    # The story's fixed dates, not the clock's, down to the file times.
    newest = max(mtime for _, _, mtime in files[0].values())
    assert newest == int(DEMO_NOW.timestamp()) * 10**9


def test_the_demo_is_private_marker_and_folders_included(tmp_path):
    demo = tmp_path / "d"
    write_demo(str(demo))
    assert stat.S_IMODE(demo.stat().st_mode) == 0o700
    for path in demo.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.lstat().st_mode) == expected, path
    marker = json.loads((demo / DEMO_MARKER).read_text())
    assert stat.S_IMODE((demo / DEMO_MARKER).stat().st_mode) == 0o600
    for relative, digest in marker["files"].items():
        assert hashlib.sha256((demo / relative).read_bytes()).hexdigest() == digest


def test_session_ids_are_snowflakes_of_the_story_times(tmp_path):
    report = write_demo(str(tmp_path / "d"))
    with SessionIndex.open(report.agent_dir, read_only=True) as index:
        sessions = index.list_sessions()
    assert len(sessions) == 13
    for session in sessions:
        if len(session.session_id) == 16:  # the v1 file keeps its uuid
            millis = (int(session.session_id, 16) >> 22) + SNOWFLAKE_EPOCH_MS
            assert millis == session.created.timestamp() * 1000, session.session_id
    assert len({session.session_id[:8] for session in sessions}) == len(sessions)


def test_demo_into_a_file_is_a_usage_error_that_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "file"
    target.write_text("x")
    result = invoke("demo", "--agent-dir", str(target), code=2)
    assert "Traceback" not in result.output
    assert target.read_text() == "x"
    assert sorted(os.listdir(tmp_path)) == ["file", "home"]


def test_a_demo_interrupted_before_its_new_marker_can_run_again(tmp_path):
    demo = tmp_path / "d"
    write_demo(str(demo))
    first = snapshot(demo, with_index=False)
    prepare_demo_dir(str(demo))
    build_demo(str(demo))  # interrupted here: the earlier marker is still in place
    write_demo(str(demo))
    assert snapshot(demo, with_index=False) == first


def test_the_users_claude_code_sessions_stay_out_of_the_demo(tmp_path):
    project = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-home-user-project"
    project.mkdir(parents=True)
    shutil.copyfile(
        FIXTURES / "claude" / "sheurich__episodic-memory__claude-tiny-conversation.jsonl",
        project / "s1.jsonl",
    )
    demo = tmp_path / "d"
    invoke("demo", "--agent-dir", str(demo))
    invoke("--agent-dir", str(demo), "sync")
    listed = json.loads(invoke("--agent-dir", str(demo), "ls", "--json").stdout)
    assert {session["agent"] for session in listed} == {"xcsh"}
    assert len(listed) == 13
