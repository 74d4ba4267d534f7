"""The archive of Amp's threads (whole JSON documents), issue 34 item 1: once their files are
deleted, every session answers ``ls`` and ``show`` as before, marked archived, and comes back
the same when index.db is made again. Aider's chat logs (appended Markdown, a root added as
``aider:``) are not archived (docs/archive.md says why): a deleted log's runs leave the index.
On every Amp and Aider fixture (tests/fixtures/amp, tests/fixtures/aider)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from click.testing import CliRunner
from session_builder import FIXTURES

from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex

AMP, AIDER = FIXTURES / "amp", FIXTURES / "aider"


def _json(*arguments: str) -> object:
    result = CliRunner().invoke(cli, [*arguments, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _answers() -> dict[str, object]:
    """Every Amp session as listed (its source marks aside) and as shown."""
    listed = {}
    for session in _json("ls", "--agent", "amp", "--limit", "0"):  # type: ignore[union-attr]
        marks = (session.pop("source"), session.pop("source_gone_at"))  # type: ignore[union-attr]
        listed[session["id"]] = (session, marks)  # type: ignore[index]
    shown = {key: _json("show", key)["entries"] for key in listed}  # type: ignore[index]
    return {"listed": listed, "shown": shown}


def _without_marks(answers: dict[str, object]) -> dict[str, object]:
    listed = answers["listed"]
    return {
        "listed": {key: session for key, (session, _marks) in listed.items()},  # type: ignore[union-attr]
        "shown": answers["shown"],
    }


def test_amp_threads_stay_when_their_files_are_deleted_and_aider_runs_leave(
    agent_dir: Path, tmp_path: Path
):
    threads = Path(os.environ["AMP_DATA_DIR"]) / "threads"
    threads.mkdir(parents=True)
    for fixture in AMP.glob("*.json"):
        shutil.copyfile(fixture, threads / fixture.name)
    repositories = tmp_path / "repos"
    logs = []
    for fixture in AIDER.glob("*.md"):
        repository = repositories / fixture.name.split("__")[1]
        repository.mkdir(parents=True)
        logs.append(repository / ".aider.chat.history.md")
        shutil.copyfile(fixture, logs[-1])
    (agent_dir / "sessions").mkdir(parents=True)
    with SessionIndex.open(str(agent_dir)) as index:
        index.add_root(str(repositories), "aider")
        report = index.sync(workers=1)
    assert report.archive_error is None and not report.unreadable
    before = _answers()
    listed = before["listed"]
    assert len(listed) == len(list(AMP.glob("*.json")))
    assert {marks for _session, marks in listed.values()} == {("file", None)}  # type: ignore[union-attr]
    assert _json("ls", "--agent", "aider", "--limit", "0")

    shutil.rmtree(threads)
    for log in logs:
        log.unlink()
    after = _answers()
    assert _without_marks(after) == _without_marks(before)
    assert {marks[0] for _session, marks in after["listed"].values()} == {"archived"}  # type: ignore[union-attr]
    assert _json("ls", "--agent", "aider", "--limit", "0") == []

    (agent_dir / "index.db").unlink()
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
        verified = index.verify()
    assert verified.clean, (verified.differences, verified.archive_problems)
    assert _without_marks(_answers()) == _without_marks(before)
