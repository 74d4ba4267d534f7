"""Reader revisions (issue 34, migration 0016): when an agent's reader is fixed, its revision is
raised, and the next sync reads every file that reader made rows of again, whole: those there
from the file, those gone from the archive (still marked gone, since when they went). On the
real Claude Code and Codex fixtures laid out as a home; the fix is a second revision of the
real Claude Code reader that names its models otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from real_home import RealHome

from xcsh_store.agents import SessionFacts, agent_named
from xcsh_store.index import SessionIndex

REVISED = "revised-"


def _sync(agent_dir: Path) -> list[str]:
    """Sync; the paths it read."""
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(workers=1)
    assert report.archive_error is None and not report.unreadable, report.unreadable
    return report.read_paths


def _claude_models(agent_dir: Path) -> set[str]:
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        return {
            model
            for (model,) in index.connection.execute(
                "SELECT DISTINCT model FROM usage_entries WHERE agent = 'claude'"
                " AND model IS NOT NULL"
            )
        }


def _files(agent_dir: Path) -> dict[str, tuple[int, str | None]]:
    """path -> (reader revision, gone_at) of the Claude Code files."""
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        rows = index.connection.execute(
            "SELECT path, reader_revision, gone_at FROM files WHERE agent = 'claude'"
        )
        return {path: (revision, gone_at) for path, revision, gone_at in rows}


def _revise_claude(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Claude Code reader fixed: revision 2, whose entries name their model otherwise."""
    reader = agent_named("claude")
    assert reader is not None and reader.revision == 1
    cls = type(reader)
    read = cls.read

    def revised(self: Any, value: dict[str, Any], session: SessionFacts) -> Any:
        entry = read(self, value, session)
        if entry.model is not None and not entry.model.startswith(REVISED):
            entry.model = REVISED + entry.model
        return entry

    monkeypatch.setattr(cls, "revision", 2)
    monkeypatch.setattr(cls, "read", revised)


def test_a_revised_reader_reads_its_files_again_from_the_file_or_the_archive(
    agent_dir: Path, real_home: RealHome, monkeypatch: pytest.MonkeyPatch
):
    _sync(agent_dir)
    models = _claude_models(agent_dir)
    assert models and not any(model.startswith(REVISED) for model in models)
    assert {revision for revision, _gone in _files(agent_dir).values()} == {1}
    claude = sorted(real_home.of("claude").values())
    gone = claude[0]
    gone.unlink()
    _sync(agent_dir)
    gone_at = _files(agent_dir)[str(gone)][1]
    assert gone_at is not None

    _revise_claude(monkeypatch)
    read = _sync(agent_dir)
    files = _files(agent_dir)
    # Every Claude Code file, the gone one from its archive; no other agent's.
    assert set(read) == set(files) == {str(path) for path in claude}
    assert {revision for revision, _gone in files.values()} == {2}
    assert files[str(gone)][1] == gone_at  # still gone, since when it went
    assert _claude_models(agent_dir) == {REVISED + model for model in models}
    assert _sync(agent_dir) == []  # read again once


def test_a_reader_left_as_it_was_reads_nothing_again(agent_dir: Path, real_home: RealHome):
    _sync(agent_dir)
    assert _sync(agent_dir) == []
