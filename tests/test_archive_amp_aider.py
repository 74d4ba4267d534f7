"""The archive of Amp's threads (whole JSON documents) and Aider's chat logs (appended Markdown,
a root added as ``aider:``, each run a session kept alone), issue 34 item 1: once their files
are deleted, every session answers ``ls`` and ``show`` as before (the same ids, folders and
entries), marked archived, and comes back the same when index.db is made again. On every Amp
and Aider fixture (tests/fixtures/amp, tests/fixtures/aider)."""

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
    """Every Amp and Aider session as listed (its source marks aside) and as shown."""
    listed = {}
    for agent in ("amp", "aider"):
        for session in _json("ls", "--agent", agent, "--limit", "0"):  # type: ignore[union-attr]
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


def test_amp_threads_and_aider_runs_stay_when_their_files_are_deleted(
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
    assert len(listed) > len(list(AMP.glob("*.json")))  # (Aider: a session per run)
    assert {marks for _session, marks in listed.values()} == {("file", None)}  # type: ignore[union-attr]

    shutil.rmtree(threads)
    for log in logs:
        log.unlink()
    after = _answers()
    assert _without_marks(after) == _without_marks(before)
    assert {marks[0] for _session, marks in after["listed"].values()} == {"archived"}  # type: ignore[union-attr]

    (agent_dir / "index.db").unlink()
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
        verified = index.verify()
    assert verified.clean, (verified.differences, verified.archive_problems)
    assert _without_marks(_answers()) == _without_marks(before)


def test_restore_writes_an_aider_run_alone_never_into_its_log(agent_dir: Path, tmp_path: Path):
    repository = tmp_path / "repos" / "monochromatic"
    repository.mkdir(parents=True)
    fixture = next(AIDER.glob("Aquaticat*.md"))
    log = repository / ".aider.chat.history.md"
    shutil.copyfile(fixture, log)
    (agent_dir / "sessions").mkdir(parents=True)
    with SessionIndex.open(str(agent_dir)) as index:
        index.add_root(str(tmp_path / "repos"), "aider")
        index.sync(workers=1)
        runs = index.list_sessions(agents=["aider"])
    offset, run = max((int(s.path.rpartition("#")[2]), s) for s in runs)  # the log's last run
    refused = CliRunner().invoke(cli, ["restore", run.session_id])
    assert refused.exit_code != 0 and "not in a file of its own" in refused.output
    assert log.read_bytes() == fixture.read_bytes()
    _json("restore", run.session_id, "--to", str(tmp_path / "out"))
    written = (tmp_path / "out" / ".aider.chat.history.md").read_bytes()
    assert written == b"\n" * offset + fixture.read_bytes()[offset:]
