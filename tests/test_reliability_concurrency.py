"""Real processes at once on one agent dir: nothing is lost and no lock error reaches anyone."""

from __future__ import annotations

import threading

import apsw

from xcsh_store.index import db as database


def test_a_migration_another_process_applied_meanwhile_is_not_applied_again(tmp_path):
    """Two processes create the index at once: the second one has read which migrations are
    applied, and the first one applies and commits them before the second takes the lock."""
    path = str(tmp_path / "index.db")
    migrations = database.load_migrations()
    first = database.connect(path)
    second = database.connect(path)
    about_to_lock = threading.Event()
    first_done = threading.Event()

    def pause_before_locking(cursor: apsw.Cursor, statement: str, bindings: object) -> bool:
        if statement.startswith("BEGIN") and not first_done.is_set():
            about_to_lock.set()
            first_done.wait(10)
        return True

    second.exec_trace = pause_before_locking
    errors: list[BaseException] = []

    def apply_in_second() -> None:
        try:
            database.apply_migrations(second, migrations)
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=apply_in_second)
    thread.start()
    assert about_to_lock.wait(10), "the second connection never reached its first migration"
    database.apply_migrations(first, migrations)
    first_done.set()
    thread.join(10)
    assert errors == []
    applied = second.execute("SELECT name FROM schema_migrations").fetchall()
    assert sorted(name for (name,) in applied) == [migration.name for migration in migrations]
    first.close()
    second.close()
