"""The archive (issue 34, docs/archive.md): the bytes of every other agent's session kept as the
sync read them, so that a session its agent deletes changes nothing a user asks, the index can
be made again from the archive, and a session can be written back byte for byte; forgotten only
on purpose. On the real fixtures laid out as a home (real_home.py, agent_homes.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import zstandard
from agent_homes import lay_out_agents, lay_out_documents
from click.testing import CliRunner
from real_home import RealHome

from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex, SessionQuery
from xcsh_store.index.archive.folder import ArchiveFolder
from xcsh_store.index.archive.frames import Contents, read_contents
from xcsh_store.index.read.usage import USAGE_GROUPS
from xcsh_store.index.write import bulk_load, sync

# Other agents' folders below the test's home (every agent the fixtures cover).
AGENT_FOLDERS = (".claude", ".codex", ".pi", ".omp", ".gemini", ".copilot", ".qwen", ".factory",
                 ".cursor", ".local/share/opencode")  # fmt: skip
RARE_WORD = "solana"


def _invoke(*arguments: str) -> str:
    """What a verb prints on stdout (its notes on stderr left out)."""
    result = CliRunner().invoke(cli, list(arguments), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(*arguments: str) -> object:
    return json.loads(_invoke(*arguments, "--json"))


@pytest.fixture
def home(agent_dir: Path, real_home: RealHome) -> RealHome:
    """Every agent's fixtures where it keeps them, synced once."""
    lay_out_agents(real_home.home)
    lay_out_documents(real_home.home)
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(workers=1)
    assert report.archive_error is None and not report.unreadable
    return real_home


def _delete_every_agent_folder(home: Path) -> None:
    for folder in AGENT_FOLDERS:
        shutil.rmtree(home / folder, ignore_errors=True)


def _archive(agent_dir: Path) -> ArchiveFolder:
    return ArchiveFolder(str(agent_dir / "archive"))


def _answers() -> dict[str, object]:
    """What a user asks: the listing, usage by day and by model, a search for a rare word (the
    source marks left out: they are what changes)."""
    listing = _json("ls", "--limit", "0")
    for session in listing:  # type: ignore[union-attr]
        session.pop("source")
        session.pop("source_gone_at")
    hits = _json("search", RARE_WORD, "--limit", "50")
    return {
        "ls": listing,
        "usage by day": _json("usage", "--by", "day"),
        "usage by model": _json("usage", "--by", "model"),
        "search": hits,
    }


def _decompressed(path: str) -> bytes:
    """An archive file as any Zstandard decoder reads it (skippable frames stepped over)."""
    with open(path, "rb") as stream:
        reader = zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)
        return reader.read()


def test_every_session_of_another_agent_is_archived_privately_beside_the_index(
    agent_dir: Path, home: RealHome
):
    archive = agent_dir / "archive"
    stored = list(_archive(agent_dir).stored())
    sources = {read_contents_of(version.path).source for version in stored}
    for path in home.files.values():
        if "/.xcsh/" not in str(path):
            assert str(path) in sources
    for path in [archive, *archive.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path
    assert not any(str(archive).startswith(str(home.home / folder)) for folder in AGENT_FOLDERS)


def read_contents_of(path: str) -> Contents:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        return read_contents(descriptor)
    finally:
        os.close(descriptor)


def test_an_append_archive_decompresses_to_the_file_it_keeps(agent_dir: Path, home: RealHome):
    for version in _archive(agent_dir).stored():
        contents = read_contents_of(version.path)
        if contents.header.kind == "append":
            assert _decompressed(version.path) == Path(contents.source).read_bytes()


@pytest.mark.skipif(shutil.which("zstd") is None, reason="no zstd command here")
def test_the_zstd_command_gives_a_session_back(agent_dir: Path, home: RealHome):
    source = next(iter(home.of("claude").values()))
    found = [
        version.path
        for version in _archive(agent_dir).stored()
        if read_contents_of(version.path).source == str(source)
    ]
    result = subprocess.run(["zstd", "-dc", found[0]], capture_output=True, check=True)
    assert result.stdout == source.read_bytes()


def test_an_append_sync_writes_only_the_new_bytes(agent_dir: Path, home: RealHome):
    source = next(iter(home.of("codex").values()))
    (version,) = [
        v for v in _archive(agent_dir).stored() if read_contents_of(v.path).source == str(source)
    ]
    before = Path(version.path).read_bytes()
    line = source.read_bytes().splitlines(keepends=True)[-1]
    with open(source, "ab") as stream:
        stream.write(line)
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(workers=1)
    after = Path(version.path).read_bytes()
    assert after.startswith(before)  # appended frames: nothing before them written again
    assert report.archive_bytes_written == len(after) - len(before)
    assert report.archive_bytes_written < len(line) + 200
    assert _decompressed(version.path) == source.read_bytes()


def test_a_rewritten_file_keeps_its_previous_version(agent_dir: Path, home: RealHome):
    source = next(iter(home.of("claude").values()))
    original = source.read_bytes()
    lines = original.splitlines(keepends=True)
    source.write_bytes(b"".join(lines[: len(lines) // 2]))  # cut: not an append
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    versions = [
        v for v in _archive(agent_dir).stored() if read_contents_of(v.path).source == str(source)
    ]
    assert [v.version for v in versions] == [1, 2]
    assert _decompressed(versions[0].path) == original
    assert _decompressed(versions[1].path) == source.read_bytes()


def test_a_deleted_source_changes_nothing_a_user_asks(agent_dir: Path, home: RealHome):
    before = _answers()
    assert before["search"]
    _delete_every_agent_folder(home.home)
    after = _answers()
    assert after == before
    listing = _json("ls", "--limit", "0")
    assert {session["source"] for session in listing} == {"archived"}  # type: ignore[index]
    assert all(session["source_gone_at"] for session in listing)  # type: ignore[index]
    # gc (which syncs first) never touches the archive: every file and byte stays.
    kept = {path: path.read_bytes() for path in (agent_dir / "archive").rglob("*.zst")}
    CliRunner().invoke(cli, ["gc", "--apply", "--grace", "0m"], catch_exceptions=False)
    assert {path: path.read_bytes() for path in (agent_dir / "archive").rglob("*.zst")} == kept
    assert _answers() == before


def test_usage_by_every_grouping_is_the_same_after_every_source_is_deleted(
    agent_dir: Path, home: RealHome
):
    groupings = [*USAGE_GROUPS, "block"]
    before = {by: _json("usage", "--by", by) for by in groupings}
    assert all(before.values())
    _delete_every_agent_folder(home.home)
    assert {by: _json("usage", "--by", by) for by in groupings} == before


def test_a_gone_session_reads_as_before_in_show(agent_dir: Path, home: RealHome):
    session = next(iter(home.of("claude").values())).stem
    shown = _json("show", session)
    views = [_json("show", session, view) for view in ("--tree", "--context")]
    _delete_every_agent_folder(home.home)
    again = _json("show", session)
    assert again["entries"] == shown["entries"]  # type: ignore[index]
    assert again["session"]["source"] == "archived"  # type: ignore[index]
    assert [_json("show", session, view) for view in ("--tree", "--context")] == [
        {**view, "session": again["session"]}
        for view in views  # type: ignore[index, dict-item]
    ]
    assert "⌂ archived" in _invoke("show", session)


def test_a_gone_document_session_reads_as_before(agent_dir: Path, home: RealHome):
    gemini = [s for s in _json("ls", "--agent", "gemini") if s["path"].endswith(".json")]  # type: ignore[union-attr, index]
    opencode = _json("ls", "--agent", "opencode")
    chosen = [gemini[0]["id"], opencode[0]["id"]]  # type: ignore[index]
    shown = [_json("show", session)["entries"] for session in chosen]  # type: ignore[index]
    _delete_every_agent_folder(home.home)
    assert [_json("show", session)["entries"] for session in chosen] == shown  # type: ignore[index]


def test_ls_filters_archived_sessions(agent_dir: Path, home: RealHome):
    gone = next(iter(home.of("codex").values()))
    gone.unlink()
    archived = _json("ls", "--archived", "--limit", "0")
    present = _json("ls", "--no-archived", "--limit", "0")
    everything = _json("ls", "--limit", "0")
    assert [s["path"] for s in archived] == [str(gone)]  # type: ignore[index, union-attr]
    assert len(present) + 1 == len(everything)  # type: ignore[arg-type]
    assert "⌂" in _invoke("ls", "--archived")


def test_the_index_is_made_again_from_the_archive(agent_dir: Path, home: RealHome):
    _delete_every_agent_folder(home.home)
    before = _answers()
    (agent_dir / "index.db").unlink()
    assert _answers() == before


def test_an_empty_index_is_made_from_the_archive_as_a_first_load(
    agent_dir: Path, home: RealHome, monkeypatch: pytest.MonkeyPatch
):
    """A new machine's index, its sessions only in the archive: adopted as a first sync loads
    files (the entries' indexes built once at the end), with the same answers and indexes."""
    _delete_every_agent_folder(home.home)
    before = _answers()
    kept = agent_dir / "index.db"
    indexes = "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'entries' ORDER BY name"
    with SessionIndex.open(str(agent_dir)) as index:
        expected = index.connection.execute(indexes).fetchall()
    kept.unlink()
    monkeypatch.setattr(bulk_load, "BULK_MIN_BYTES", 1)  # (the sync of no files loads none)
    deferred: list[str] = []
    drop = bulk_load.defer_indexes

    def defer(connection: object) -> None:
        deferred.append("dropped")
        drop(connection)  # type: ignore[arg-type]

    monkeypatch.setattr(bulk_load, "defer_indexes", defer)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
        assert index.connection.execute(indexes).fetchall() == expected
        assert not bulk_load.deferred(index.connection)
    assert deferred == ["dropped"]
    assert _answers() == before


def test_a_moved_file_is_still_a_move(agent_dir: Path, home: RealHome):
    source = next(iter(home.of("claude").values()))
    moved = source.parent.parent / "-moved-project" / source.name
    moved.parent.mkdir()
    shutil.copy2(source, moved)  # another inode: as a move to another disk
    source.unlink()
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(workers=1)
        assert report.files_renamed == 1 and report.files_archived_gone == 0
        (session,) = [s for s in index.list_sessions() if s.session_id == source.stem]
        assert session.path == str(moved) and session.source_gone_at is None


def test_restore_writes_the_bytes_back_where_the_agent_keeps_them(agent_dir: Path, home: RealHome):
    source = next(iter(home.of("claude").values()))
    original = source.read_bytes()
    _delete_every_agent_folder(home.home)
    output = _invoke("restore", source.stem)
    assert source.read_bytes() == original
    assert f"claude --resume {source.stem}" in output
    assert hashlib.sha256(original).hexdigest()[:16] in output
    listed = _json("ls", "--no-archived")
    assert [s["id"] for s in listed] == [source.stem]  # type: ignore[index, union-attr]
    versions = [
        v for v in _archive(agent_dir).stored() if read_contents_of(v.path).source == str(source)
    ]
    assert len(versions) == 1  # the same bytes: no new version


def _session_of(path: Path) -> str:
    """The session id of the indexed file at ``path``."""
    listing = _json("ls", "--limit", "0")
    return next(s["id"] for s in listing if s["path"] == str(path))  # type: ignore[index, union-attr]


def test_restore_never_overwrites_other_bytes(agent_dir: Path, home: RealHome):
    source = next(iter(home.of("codex").values()))
    session = _session_of(source)
    _delete_every_agent_folder(home.home)
    source.parent.mkdir(parents=True)
    source.write_bytes(b"someone else's file\n")
    # (Without the sync a restore makes first, which would take the new file for the session.)
    result = CliRunner().invoke(cli, ["--no-sync", "restore", session], catch_exceptions=False)
    assert result.exit_code == 1
    assert "is not the archived session" in result.output
    assert source.read_bytes() == b"someone else's file\n"


def test_restore_to_a_folder(agent_dir: Path, home: RealHome, tmp_path: Path):
    source = next(iter(home.of("claude").values()))
    original = source.read_bytes()
    restored = json.loads(_invoke("restore", source.stem, "--to", str(tmp_path / "out"), "--json"))
    assert (tmp_path / "out" / source.name).read_bytes() == original
    assert restored[0]["sha256"] == hashlib.sha256(original).hexdigest()


def test_restore_honours_the_agents_folder_variable(
    agent_dir: Path, home: RealHome, monkeypatch: pytest.MonkeyPatch
):
    source = next(iter(home.of("claude").values()))
    original = source.read_bytes()
    _delete_every_agent_folder(home.home)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home.home / "claude-elsewhere"))
    _invoke("restore", source.stem)
    relative = source.relative_to(home.home / ".claude")
    assert (home.home / "claude-elsewhere" / relative).read_bytes() == original


def test_forget_deletes_from_the_index_and_the_archive(agent_dir: Path, home: RealHome):
    codex = _json("ls", "--agent", "codex", "--limit", "0")
    dry = json.loads(_invoke("forget", "--agent", "codex", "--dry-run", "--json"))
    assert dry["sessions"] == len(codex) and dry["archive_files"] >= len(codex)  # type: ignore[arg-type]
    assert _json("ls", "--agent", "codex", "--limit", "0") == codex
    _delete_every_agent_folder(home.home)
    done = json.loads(_invoke("forget", "--agent", "codex", "--yes", "--json"))
    assert done["sessions"] == len(codex)  # type: ignore[arg-type]
    assert _json("ls", "--agent", "codex") == []
    assert not list((agent_dir / "archive" / "codex").glob("*.zst"))
    (agent_dir / "index.db").unlink()
    assert _json("ls", "--agent", "codex") == []  # not made again from the archive


def test_forget_asks_first(agent_dir: Path, home: RealHome):
    session = next(iter(home.of("claude").values())).stem
    result = CliRunner().invoke(cli, ["forget", session])
    assert result.exit_code == 2 and "--yes" in result.output
    assert _json("ls", "--agent", "claude", "--limit", "0")


def test_a_forgotten_session_whose_file_is_there_stays_out_until_it_grows(
    agent_dir: Path, home: RealHome
):
    source = next(iter(home.of("codex").values()))
    session = _session_of(source)
    _invoke("forget", session, "--yes")
    assert session not in {s["id"] for s in _json("ls", "--limit", "0")}  # type: ignore[index, union-attr]
    with open(source, "ab") as stream:
        stream.write(source.read_bytes().splitlines(keepends=True)[-1])
    assert session in {s["id"] for s in _json("ls", "--limit", "0")}  # type: ignore[index, union-attr]


def test_an_agent_turned_off_in_the_config_is_not_archived(agent_dir: Path, real_home: RealHome):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[agents.codex]\narchive = false\n")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    assert not (agent_dir / "archive" / "codex").exists()
    assert (agent_dir / "archive" / "claude").exists()
    _delete_every_agent_folder(real_home.home)
    assert _json("ls", "--agent", "codex") == []
    assert _json("ls", "--agent", "claude")


def test_a_config_that_does_not_read_is_one_line(agent_dir: Path, real_home: RealHome):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[agents.codex]\narchive = 'no'\n")
    result = CliRunner().invoke(cli, ["sync", "--init"])
    assert result.exit_code == 1
    assert "agents.codex.archive must be true or false" in result.output


def test_doctor_tells_the_archives_size(agent_dir: Path, home: RealHome):
    found = json.loads(_invoke_any("doctor", "--json"))["archive"]
    files, size = _archive(agent_dir).size()
    assert (found["files"], found["bytes"]) == (files, size)
    assert found["sessions"] == files and found["sessions_gone"] == 0


def _invoke_any(*arguments: str) -> str:
    """A verb whose exit code says something else (doctor: problems of the test's agent dir)."""
    return CliRunner().invoke(cli, list(arguments), catch_exceptions=False).stdout


def test_verify_covers_the_archive(agent_dir: Path, home: RealHome):
    _delete_every_agent_folder(home.home)
    _invoke("sync")
    assert _json("verify")["clean"]  # type: ignore[index]
    listed = _json("ls", "--limit", "0")  # type: ignore[index]
    damaged = max(
        (v for v in _archive(agent_dir).stored() if "/claude/" in v.path),
        key=lambda v: os.path.getsize(v.path),
    )
    data = bytearray(Path(damaged.path).read_bytes())
    data[-40] ^= 0xFF
    Path(damaged.path).write_bytes(bytes(data))
    report = json.loads(_invoke_any("verify", "--json"))
    assert not report["clean"] and damaged.path in report["archive_problems"]
    repaired = json.loads(_invoke_any("verify", "--repair", "--json"))
    assert "kept" in repaired["archive_repaired"][damaged.path]
    assert Path(damaged.path + ".damaged").exists()
    assert _json("ls", "--limit", "0") == listed  # no row dropped


def test_sessions_of_xcsh_itself_are_not_archived(agent_dir: Path, two_sessions):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
        assert index.sessions(SessionQuery())
    assert not (agent_dir / "archive").exists()


def test_a_folder_moved_away_and_back_is_back(agent_dir: Path, home: RealHome):
    codex = home.home / ".codex"
    codex.rename(home.home / "codex-away")
    assert {s["source"] for s in _json("ls", "--agent", "codex")} == {"archived"}  # type: ignore[index, union-attr]
    (home.home / "codex-away").rename(codex)
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(workers=1)
    assert report.files_changed == 0 and report.bytes_read == 0
    assert {s["source"] for s in _json("ls", "--agent", "codex")} == {"file"}  # type: ignore[index, union-attr]


def test_search_text_left_for_later_comes_from_the_archive(
    agent_dir: Path, real_home: RealHome, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(sync, "TEXT_LATER_MIN_BYTES", 0)  # usage first, however little
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.sync(workers=1, text=False).text_pending
    _delete_every_agent_folder(real_home.home)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
        assert index.text_pending() == 0
        assert index.search(RARE_WORD, limit=5)


def test_the_versions_a_sync_keeps_listed_are_those_on_disk(tmp_path):
    """While a sync writes, the archive's folder is listed once (archive/folder.py listings):
    every version made or removed since is in the answer, as a fresh listing finds it."""
    from xcsh_store.index.archive.folder import base_name
    from xcsh_store.index.archive.frames import APPEND, Header

    folder = ArchiveFolder(str(tmp_path / "archive"))
    folder.listings = {}
    bases = [base_name("claude", f"/home/u/.claude/projects/p/{name}.jsonl") for name in "ab"]

    def header(version: int) -> Header:
        return Header("/s.jsonl", "/r", "p", "claude", APPEND, version, "2026-01-01T00:00:00Z")

    def agree(expected: list[int]) -> None:
        assert folder.versions(bases[0]) == expected
        assert ArchiveFolder(folder.folder).versions(bases[0]) == expected
        assert folder.versions(bases[1]) == ArchiveFolder(folder.folder).versions(bases[1])

    agree([])
    folder.appender(bases[1], 1, header(1), 0).close()
    for version in (1, 2, 3):
        folder.appender(bases[0], version, header(version), 0).close()
    agree([1, 2, 3])
    folder.remove_version(bases[0], 2)
    agree([1, 3])
    folder.remove(bases[0])
    agree([])
    assert folder.versions(bases[1]) == [1]


def test_a_sync_leaves_the_archive_listed_afresh_after_it(agent_dir, tmp_path):
    """The listing a sync keeps is its own: after it, another process's archive files count."""
    lay_out_agents(agent_dir.parent / "home")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        assert index.archive.size()[0] > 0, "nothing was archived"
        assert index.archive.listings is None
