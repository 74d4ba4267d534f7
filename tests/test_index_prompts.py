"""The prompt history mirrored from history.db, linked to the sessions it was typed in."""

from __future__ import annotations

from session_builder import header, message, sessions_dir, write_session


def test_history_is_mirrored_and_linked(agent_dir, index):
    import apsw

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
