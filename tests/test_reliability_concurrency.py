"""Real processes at once on one agent dir: nothing is lost and no lock error reaches anyone."""

from __future__ import annotations

import os

from workers import check_concurrent_run, held_at_first_begin, run_concurrently

from xcsh_store.index import db as database

# benchmarks/stress.py sets this to run the same processes for minutes.
SECONDS_ENV = "XCSH_CONCURRENCY_SECONDS"


def test_a_migration_another_process_applied_meanwhile_is_not_applied_again(tmp_path):
    """Two processes create the index at once: the second one has read which migrations are
    applied, and the first one applies and commits them before the second takes the lock."""
    path = str(tmp_path / "index.db")
    migrations = database.load_migrations()
    first = database.connect(path)
    second = database.connect(path)
    with held_at_first_begin(second, lambda: database.apply_migrations(second, migrations)):
        database.apply_migrations(first, migrations)
    applied = second.execute("SELECT name FROM schema_migrations").fetchall()
    assert sorted(name for (name,) in applied) == [migration.name for migration in migrations]
    first.close()
    second.close()


def test_writers_history_sync_and_gc_at_once_lose_nothing(agent_dir, tmp_path):
    """Three SessionManager writers (with images from a pool of old blobs the GC would like to
    delete, and now and then a whole rewrite), a HistoryStorage writer, a sync loop that also
    searches and a GC loop, for a few seconds. No worker sees a lock error; every flushed entry
    is in its file and in the index, every flushed prompt in history.db and in the index's
    mirror, no referenced blob is deleted, the planted garbage is, and the index verifies."""
    run = run_concurrently(agent_dir, tmp_path, float(os.environ.get(SECONDS_ENV, "4")))
    check_concurrent_run(agent_dir, run)
