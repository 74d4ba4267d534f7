"""The prompt history mirrored from history.db, linked to the sessions it was typed in."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
from session_builder import header, message, sessions_dir, write_session

from xcsh_store import HistoryStorage


def test_history_is_mirrored_and_linked(agent_dir, index):
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "h.jsonl", [header("hist"), message("u1", None, "user", "refactor the parser")]
    )
    history = apsw.Connection(str(agent_dir / "history.db"))
    history.execute(
        "CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL,"
        " created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)), cwd TEXT)"
    )
    history.execute("INSERT INTO history (prompt, cwd) VALUES ('refactor the parser', '/w')")
    history.execute("INSERT INTO history (prompt, cwd) VALUES ('write more tests', '/w')")
    history.close()
    assert index.sync().history_mirrored == 2
    hits = index.history_search("refactor")
    assert [(hit.source, hit.session_id, hit.entry_id) for hit in hits] == [
        ("history", "hist", "u1")
    ]
    assert [hit.prompt for hit in index.history_recent(10)] == [
        "write more tests",
        "refactor the parser",
    ]
    assert index.sync().history_mirrored == 0


def _stamp(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_size, info.st_mtime_ns, info.st_ino


def test_a_prompt_written_into_a_reset_wal_of_the_same_size_and_time_is_mirrored(agent_dir, index):
    """SQLite restarts a WAL after a checkpoint by overwriting it from its start: the file
    keeps its size, and the next write can land in the same tick of the clock. history.db then
    looks exactly as at the last sync from outside; the mirror must look inside."""
    history_db = agent_dir / "history.db"
    wal = Path(f"{history_db}-wal")
    agent_dir.mkdir(parents=True, exist_ok=True)
    with HistoryStorage.open(str(history_db)):
        pass  # the schema, as xcsh makes it
    writer = apsw.Connection(str(history_db))
    writer.execute("PRAGMA journal_mode=WAL")
    for number in range(50):
        writer.execute("INSERT INTO history (prompt) VALUES (?)", (f"early prompt {number}",))
    writer.execute("PRAGMA wal_checkpoint(RESTART)")
    assert index.sync().history_mirrored == 50
    before = {path: _stamp(path) for path in (history_db, wal)}
    writer.execute("INSERT INTO history (prompt) VALUES ('the prompt written last')")
    os.utime(wal, ns=(wal.stat().st_atime_ns, before[wal][1]))
    # From outside nothing changed: same sizes, same times, same files.
    assert {path: _stamp(path) for path in (history_db, wal)} == before
    assert index.sync().history_mirrored == 1
    assert [hit.prompt for hit in index.history_recent(1)] == ["the prompt written last"]
    writer.close()


def test_an_unchanged_history_db_copies_nothing_and_a_deleted_prompt_is_noticed(agent_dir, index):
    history_db = agent_dir / "history.db"
    agent_dir.mkdir(parents=True, exist_ok=True)
    with HistoryStorage.open(str(history_db)) as history:
        for prompt in ("first", "second", "third"):
            history.add(prompt)
    assert index.sync().history_mirrored == 3
    assert index.sync().history_mirrored == 0
    writer = apsw.Connection(str(history_db))
    writer.execute("DELETE FROM history WHERE prompt = 'second'")
    writer.close()
    assert index.sync().history_mirrored == 2  # a deletion copies the history again
    assert sorted(hit.prompt for hit in index.history_recent(10)) == ["first", "third"]
