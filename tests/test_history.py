"""HistoryStorage and ``xcsh-store history``: real history.db files, other processes, xcsh files."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import weakref
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

import apsw
import pytest
from click.testing import CliRunner
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from xcsh_store import HistoryEntry, HistoryStorage
from xcsh_store.cli import cli
from xcsh_store.errors import HistoryError
from xcsh_store.history.schema import Refusals, adopt, history_migrations
from xcsh_store.history.search import REFERENCE_SEARCH_SQL, build_fts_query
from xcsh_store.sql_migrations import SQLiteLedger, apply_pending

ROOT = Path(__file__).resolve().parent.parent

# The reference's schema as xcsh executes it, without our delete/update triggers (compatibility:
# Prompt history as in the reference).
REFERENCE_SCHEMA = """
CREATE TABLE IF NOT EXISTS history (id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL,
  created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)), cwd TEXT);
CREATE INDEX IF NOT EXISTS idx_history_created_at ON history(created_at DESC);
CREATE VIRTUAL TABLE IF NOT EXISTS history_fts
  USING fts5(prompt, content='history', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS history_ai AFTER INSERT ON history BEGIN
  INSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt); END;
"""
LEGACY_TABLE = """
CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL,
  created_at INTEGER NOT NULL DEFAULT (unixepoch()), cwd TEXT);
"""
LEGACY_WITH_FTS = LEGACY_TABLE + REFERENCE_SCHEMA.split(";", 1)[1]

SCHEMA_OBJECTS = {
    ("table", "history"),
    ("table", "sqlite_sequence"),
    ("index", "idx_history_created_at"),
    ("table", "history_fts"),
    ("table", "history_fts_data"),
    ("table", "history_fts_idx"),
    ("table", "history_fts_docsize"),
    ("table", "history_fts_config"),
    ("trigger", "history_ai"),
    ("trigger", "history_ad"),
    ("trigger", "history_au"),
    # The record of history's migrations (xcsh_store/sql_migrations.py), which xcsh never reads.
    ("table", "schema_migrations"),
    ("index", "sqlite_autoindex_schema_migrations_1"),
}


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "history.db"


@pytest.fixture
def history(db_path: Path) -> Iterator[HistoryStorage]:
    storage = HistoryStorage.open(db_path)
    yield storage
    storage.close()


def stdlib_sqlite(db_path: Path, script: str, *args: str) -> str:
    """Run ``script`` with Python's own sqlite3 module (SQLite 3.40 here) in another process,
    as ``connection``; ``args`` follow the path in ``sys.argv``."""
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\nconnection = sqlite3.connect(sys.argv[1])\n" + script,
            str(db_path),
            *args,
        ],
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def create_with_stdlib(db_path: Path, schema: str, rows: list[tuple[str, int, str | None]]) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    script = textwrap.dedent(
        """
        import json
        connection.executescript(sys.argv[2])
        connection.executemany(
            "INSERT INTO history (prompt, created_at, cwd) VALUES (?, ?, ?)",
            json.loads(sys.argv[3]),
        )
        connection.commit()
        """
    )
    stdlib_sqlite(db_path, script, schema, json.dumps(rows))


def run_python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def connect(db_path: Path) -> apsw.Connection:
    connection = apsw.Connection(str(db_path))
    connection.set_busy_timeout(5000)
    return connection


def schema_objects(db_path: Path) -> set[tuple[str, str]]:
    connection = connect(db_path)
    try:
        return set(connection.execute("SELECT type, name FROM sqlite_master"))
    finally:
        connection.close()


def fts_integrity_check(db_path: Path) -> None:
    """Raises apsw.CorruptError when history_fts disagrees with the history rows."""
    connection = connect(db_path)
    try:
        connection.execute(
            "INSERT INTO history_fts(history_fts, rank) VALUES('integrity-check', 1)"
        )
    finally:
        connection.close()


def execute(db_path: Path, sql: str, bindings: tuple[object, ...] = ()) -> None:
    connection = connect(db_path)
    try:
        connection.execute(sql, bindings)
    finally:
        connection.close()


def prompts(entries: list[HistoryEntry]) -> list[str]:
    return [entry.prompt for entry in entries]


def add_all(history: HistoryStorage, *texts: str) -> None:
    for text in texts:
        history.add(text)
    history.flush()


# Schema and xcsh compatibility


def test_new_database_has_reference_schema_plus_sync_triggers(history, db_path):
    assert schema_objects(db_path) == SCHEMA_OBJECTS


@pytest.mark.parametrize("legacy_schema", [LEGACY_TABLE, LEGACY_WITH_FTS], ids=["bare", "with-fts"])
def test_unixepoch_legacy_database_is_migrated_keeping_rows(db_path, legacy_schema):
    create_with_stdlib(db_path, legacy_schema, [("legacy prompt", 1_700_000_000, "/old")])

    with HistoryStorage.open(db_path) as history:
        history.add("new prompt", "/new")
        history.flush()
        newest, oldest = history.get_recent(10)
        assert oldest == HistoryEntry(1, "legacy prompt", 1_700_000_000, "/old")
        assert (newest.id, newest.prompt, newest.cwd) == (2, "new prompt", "/new")
        assert prompts(history.search("legacy", 10)) == ["legacy prompt"]
        assert prompts(history.search("new", 10)) == ["new prompt"]

    assert schema_objects(db_path) >= SCHEMA_OBJECTS
    table_sql = stdlib_sqlite(
        db_path,
        textwrap.dedent(
            """
            query = "SELECT sql FROM sqlite_master WHERE name = 'history'"
            print(connection.execute(query).fetchone()[0])
            """
        ),
    )
    assert "unixepoch" not in table_sql and "strftime('%s','now')" in table_sql


def test_reference_database_without_sync_triggers_gains_them(db_path):
    create_with_stdlib(
        db_path, REFERENCE_SCHEMA, [("first", 1_700_000_000, None), ("second", 1_700_000_001, None)]
    )
    assert ("trigger", "history_ad") not in schema_objects(db_path)

    with HistoryStorage.open(db_path) as history:
        assert history.delete([1]) == 1
        assert prompts(history.search("first", 10)) == []
        assert prompts(history.search("second", 10)) == ["second"]

    assert schema_objects(db_path) == SCHEMA_OBJECTS
    fts_integrity_check(db_path)


def test_history_table_without_fts_gets_its_index_rebuilt(db_path):
    plain_table = REFERENCE_SCHEMA.split(";", 1)[0]
    create_with_stdlib(
        db_path, plain_table, [("written before any fts existed", 1_700_000_000, None)]
    )

    with HistoryStorage.open(db_path) as history:
        assert prompts(history.search("before", 10)) == ["written before any fts existed"]
    fts_integrity_check(db_path)


def recorded_migrations(db_path: Path) -> list[tuple[str, str]]:
    connection = connect(db_path)
    try:
        return connection.execute(
            "SELECT name, checksum FROM schema_migrations ORDER BY name"
        ).fetchall()
    finally:
        connection.close()


SHIPPED_MIGRATIONS = [(migration.name, migration.checksum) for migration in history_migrations()]


@pytest.mark.parametrize(
    "schema",
    [REFERENCE_SCHEMA, REFERENCE_SCHEMA.split(";", 1)[0], LEGACY_TABLE, LEGACY_WITH_FTS],
    ids=["xcsh", "without-fts", "legacy", "legacy-with-fts"],
)
def test_a_file_xcsh_made_records_every_migration_once_opened(db_path, schema):
    create_with_stdlib(db_path, schema, [("kept", 1_700_000_000, "/w")])
    for _ in range(2):
        with HistoryStorage.open(db_path) as history:
            assert history.get_recent(5) == [HistoryEntry(1, "kept", 1_700_000_000, "/w")]
            assert prompts(history.search("kept", 5)) == ["kept"]
    assert recorded_migrations(db_path) == SHIPPED_MIGRATIONS
    fts_integrity_check(db_path)


def test_a_file_with_every_migration_but_no_record_is_adopted_without_running_one(db_path):
    """As xcsh-store wrote history.db before it kept a record: every object is there, so none
    of the migrations' statements runs (the FTS index is not rebuilt)."""
    every_migration = "".join(migration.sql for migration in history_migrations())
    create_with_stdlib(db_path, every_migration, [("kept", 1_700_000_000, None)])
    migrations = history_migrations()
    connection = connect(db_path)
    executed: list[str] = []
    connection.exec_trace = lambda cursor, statement, bindings: executed.append(statement) or True
    try:
        adopted = functools.partial(adopt, migrations=migrations, db_path=str(db_path))
        ledger = SQLiteLedger(connection, migrations, adopted, dated=False)
        assert apply_pending(ledger, migrations, Refusals(str(db_path))) == []
    finally:
        connection.close()
    assert recorded_migrations(db_path) == SHIPPED_MIGRATIONS
    assert [statement for statement in executed if "history_fts" in statement] == []
    assert [statement for statement in executed if "CREATE INDEX" in statement] == []


def test_xcsh_opens_a_migrated_file_as_is(history, db_path):
    """xcsh's own opening statements run on the file, and a prompt it writes is found here."""
    add_all(history, "written here")
    script = textwrap.dedent(
        """
        connection.executescript(sys.argv[2])
        connection.execute("INSERT INTO history (prompt) VALUES ('written by xcsh')")
        connection.commit()
        """
    )
    stdlib_sqlite(db_path, script, REFERENCE_SCHEMA)
    with HistoryStorage.open(db_path) as again:
        assert prompts(again.search("written", 5)) == ["written by xcsh", "written here"]
    assert recorded_migrations(db_path) == SHIPPED_MIGRATIONS


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (
            "INSERT INTO schema_migrations VALUES ('0099_from_the_future', 'x')",
            r"was written by a newer xcsh-store \(schema 0099_from_the_future.*upgrade",
        ),
        (
            "UPDATE schema_migrations SET checksum = 'x' WHERE name LIKE '0001%'",
            "its migration 0001_reference_schema is not the one this xcsh-store ships",
        ),
    ],
    ids=["newer", "changed"],
)
def test_a_file_that_cannot_be_migrated_is_refused_and_left_unchanged(db_path, change, refusal):
    with HistoryStorage.open(db_path) as history:
        add_all(history, "kept")
    execute(db_path, change)
    before = db_path.read_bytes()
    with pytest.raises(HistoryError, match=refusal) as raised:
        HistoryStorage.open(db_path)
    assert "\n" not in str(raised.value) and str(db_path) in str(raised.value)
    assert db_path.read_bytes() == before


def test_file_is_readable_with_stdlib_sqlite_including_fts_match(history, db_path):
    add_all(history, "café au lait", "migrate the database")

    output = stdlib_sqlite(
        db_path,
        textwrap.dedent(
            """
            print(connection.execute("SELECT count(*) FROM history").fetchone()[0])
            print(connection.execute(
                "SELECT h.prompt FROM history_fts JOIN history h ON h.id = history_fts.rowid"
                " WHERE history_fts MATCH ?", ('"migr"*',)).fetchone()[0])
            """
        ),
    )
    assert output.splitlines() == ["2", "migrate the database"]


# Adding: trim, empty, consecutive duplicates


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        ("  fix it \n", "fix it"),
        ("\ufeff\u3000fix it\u00a0", "fix it"),
        # JavaScript's trim() keeps these control characters; Python's strip() would not.
        ("\x1cfix it\x85", "\x1cfix it\x85"),
    ],
)
def test_prompts_are_trimmed_like_javascript(history, typed, stored):
    add_all(history, typed)
    assert prompts(history.get_recent(5)) == [stored]


@pytest.mark.parametrize("blank", ["", "   ", "\n\t", "\u2028\ufeff"])
def test_blank_prompts_are_not_stored(history, blank):
    add_all(history, blank)
    assert history.get_recent(5) == []


def test_only_consecutive_duplicates_are_dropped(history):
    add_all(history, "a", "a", " a ", "b", "a")
    assert prompts(history.get_recent(10)) == ["a", "b", "a"]


def test_duplicate_check_ignores_cwd(history):
    history.add("same", "/one")
    history.add("same", "/two")
    history.flush()
    assert [(entry.prompt, entry.cwd) for entry in history.get_recent(10)] == [("same", "/one")]


def test_duplicate_check_is_primed_from_highest_id_on_reopen(db_path):
    with HistoryStorage.open(db_path) as history:
        add_all(history, "older", "newest id")
    # The highest id is not the most recent by time: the check must still use it.
    execute(db_path, "UPDATE history SET created_at = 1 WHERE prompt = 'newest id'")

    with HistoryStorage.open(db_path) as history:
        add_all(history, "newest id")
        assert prompts(history.get_recent(10)) == ["older", "newest id"]


def test_add_returns_while_another_process_holds_the_write_lock(history, db_path):
    blocker = connect(db_path)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        history.add("typed while the database is locked")
        # add() came back while the lock is still held, so it cannot have inserted yet: it left
        # the insert to the background writer instead of waiting for the lock.
        assert blocker.execute("SELECT count(*) FROM history").fetchall() == [(0,)]
    finally:
        blocker.execute("COMMIT")
        blocker.close()
    history.flush()
    assert prompts(history.get_recent(1)) == ["typed while the database is locked"]


def test_failed_write_is_raised_by_the_next_flush_only(history, db_path):
    execute(
        db_path,
        "CREATE TRIGGER refuse BEFORE INSERT ON history BEGIN SELECT RAISE(ABORT, 'refused'); END",
    )
    history.add("will fail")
    with pytest.raises(HistoryError, match="refused"):
        history.flush()
    history.flush()

    execute(db_path, "DROP TRIGGER refuse")
    add_all(history, "works again")
    assert prompts(history.get_recent(5)) == ["works again"]


# Reading: limits, search


@pytest.fixture(scope="module")
def big_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HistoryStorage]:
    storage = HistoryStorage.open(tmp_path_factory.mktemp("big") / "history.db")
    add_all(storage, *(f"prompt {number}" for number in range(1005)))
    yield storage
    storage.close()


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (0, 0),
        (-3, 0),
        (2.7, 2),
        (1, 1),
        (5000, 1000),
        (math.nan, 0),
        (math.inf, 0),
        (-math.inf, 0),
    ],
)
def test_limits_are_floored_and_clamped(big_history, limit, expected):
    assert len(big_history.get_recent(limit)) == expected
    assert len(big_history.search("prompt", limit)) == expected


def test_limit_must_be_a_number(history):
    with pytest.raises(TypeError):
        history.get_recent("5")


def test_recent_and_search_are_newest_first(history, db_path):
    add_all(history, "deploy one", "deploy two", "deploy three")
    # Time wins over id: move the first prompt into the future.
    execute(db_path, "UPDATE history SET created_at = created_at + 60 WHERE prompt = 'deploy one'")
    expected = ["deploy one", "deploy three", "deploy two"]
    assert prompts(history.get_recent(10)) == expected
    assert prompts(history.search("deploy", 10)) == expected


def reference_search(db_path: Path, query: str, limit: int) -> list[HistoryEntry]:
    """The reference's single query: sort every match by (created_at, id)."""
    connection = connect(db_path)
    try:
        rows = connection.execute(REFERENCE_SEARCH_SQL, (build_fts_query(query), limit)).fetchall()
    finally:
        connection.close()
    return [HistoryEntry(*row) for row in rows]


def _shuffled_times(ids: range) -> list[int]:
    rng = random.Random(7)
    return [1_700_000_000 + rng.randrange(200) for _ in ids]


def _clock_set_back(ids: range) -> list[int]:
    # Ids 600..700 were written while the clock was a day ahead.
    return [1_700_000_000 + i + (86_400 if 600 <= i <= 700 else 0) for i in ids]


def _same_second(ids: range) -> list[int]:
    return [1_700_000_000 for _ in ids]


# search() answers most queries on a small table from its check of the newest prompts; these
# settings shrink its steps so that small tables take every path.
SEARCH_STEPS = {
    "default": {},
    "small": {"MAX_RECENT_SCAN": 0, "SCAN_STEP": 2, "MIN_MATCH_WINDOW": 4},
}


def search_steps(name: str) -> contextlib.AbstractContextManager[object]:
    if not SEARCH_STEPS[name]:
        return contextlib.nullcontext()
    return mock.patch.multiple("xcsh_store.history.search", **SEARCH_STEPS[name])


@pytest.fixture(scope="module", params=[_shuffled_times, _clock_set_back, _same_second])
def disordered_history(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HistoryStorage]:
    """Matching prompts whose created_at does not follow their ids."""
    path = tmp_path_factory.mktemp("disordered") / "history.db"
    ids = range(1, 1501)
    storage = HistoryStorage.open(path)
    add_all(storage, *(f"task {n} {'alpha' if n % 3 else 'beta'}" for n in ids))
    connection = connect(path)
    try:
        with connection:
            connection.executemany(
                "UPDATE history SET created_at = ? WHERE id = ?",
                zip(request.param(ids), ids, strict=True),
            )
    finally:
        connection.close()
    yield storage
    storage.close()


@pytest.mark.parametrize("query", ["task", "alpha", "beta", "task 14", "beta 7"])
@pytest.mark.parametrize("limit", [1, 50, 1000])
@pytest.mark.parametrize("steps", SEARCH_STEPS)
def test_search_order_equals_sorting_every_match(disordered_history, query, limit, steps):
    db_path = Path(disordered_history.db_path)
    with search_steps(steps):
        found = disordered_history.search(query, limit)
    assert found == reference_search(db_path, query, limit)


# Words chosen to hit the tokenizer's corners: case, accents, apostrophes and hyphens (one token
# becomes a phrase), CJK runs, emoji and punctuation (no word at all), FTS5 syntax.
WORDS = [
    "fix", "Fix", "fixes", "café", "CAFE", "file's", "a-b", "b", "ab", "日本語", "日本",
    "🎉", "-", '"', "*", "(", "AND", "NOT", "near", "x", "xy", "xyz", "the", "then",
]  # fmt: skip
prompt_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


@pytest.fixture(scope="module")
def scratch_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HistoryStorage]:
    """One database that each hypothesis example empties and refills (opening one per example
    would spend most of the test's time on fsync)."""
    storage = HistoryStorage.open(tmp_path_factory.mktemp("scratch") / "history.db")
    yield storage
    storage.close()


@settings(max_examples=examples(80), deadline=None)
@given(
    texts=st.lists(prompt_text, min_size=1, max_size=40),
    queries=st.lists(prompt_text, min_size=1, max_size=4),
    limit=st.integers(min_value=1, max_value=12),
    steps=st.sampled_from(list(SEARCH_STEPS)),
)
def test_search_equals_the_reference_query(scratch_history, texts, queries, limit, steps):
    history = scratch_history
    history.prune(keep_last=0)
    add_all(history, *texts)
    db_path = Path(history.db_path)
    with search_steps(steps):
        found = [history.search(query, limit) for query in queries]
    assert found == [reference_search(db_path, query, limit) for query in queries]


def test_search_matches_word_prefixes_and_requires_every_word(history):
    add_all(history, "migrate the database", "fix the migration test", "fix the parser")
    assert prompts(history.search("migr", 10)) == ["fix the migration test", "migrate the database"]
    assert prompts(history.search("fix migr", 10)) == ["fix the migration test"]
    assert prompts(history.search("  ", 10)) == []


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ('"', False),
        ('"quoted', True),
        ('quoted"', True),
        ('"quoted"', True),
        ("*", False),
        ("AND", True),
        ("OR NOT", True),
        ("NOT", True),
        ("NEAR(", True),
        ("NEAR(x y", True),
        ("-x", True),
        ("col:val", True),
        ("^start", True),
        ("(", False),
        (")", False),
        ("( )", False),
        ("x AND (", True),
        ("prompt:x", False),
        ("{x}", True),
        ("x+", True),
    ],
)
def test_query_text_is_never_fts_syntax(history, query, found):
    add_all(history, 'use AND OR NOT NEAR(x y) -x col:val ^start "quoted {x} x+')
    assert bool(history.search(query, 10)) is found


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("café", ["Café au lait"]),
        ("caf", ["Café au lait"]),
        ("cafe", ["Café au lait"]),
        ("日本語", ["日本語のテストを書く"]),
        ("party", ["party 🎉 time"]),
        ("🎉", []),
    ],
)
def test_non_ascii_prompts_are_kept_and_searchable(history, query, expected):
    add_all(history, "Café au lait", "日本語のテストを書く", "party 🎉 time")
    assert prompts(history.search(query, 10)) == expected
    assert prompts(history.get_recent(10)) == [
        "party 🎉 time",
        "日本語のテストを書く",
        "Café au lait",
    ]


def test_lone_surrogates_are_stored_as_replacement_characters(history):
    history.add("name \udcff here", cwd="/tmp/\udcff")
    history.add("joined \ud83d\ude00 pair")
    history.flush()
    assert [(entry.prompt, entry.cwd) for entry in history.get_recent(5)] == [
        ("joined \U0001f600 pair", None),
        ("name \ufffd here", "/tmp/\ufffd"),
    ]
    assert prompts(history.search("name \udcff", 5)) == ["name \ufffd here"]


@pytest.mark.parametrize(
    ("older", "newest", "query"),
    [("fix lower", "FIX UPPER", "fix"), ("cafe plain", "Café accent", "CAFE")],
)
def test_search_ignores_case_and_accents(history, older, newest, query):
    add_all(history, older, newest)
    assert prompts(history.search(query, 1)) == [newest]


@pytest.mark.parametrize("query", ["file's", "FILE-S", "file's own"])
def test_a_token_with_inner_punctuation_matches_as_a_phrase(history, query):
    add_all(history, "the file's owner", "file list sorted", "s file")
    # Limit 1: found among the newest prompts, without FTS5.
    assert prompts(history.search(query, 1)) == ["the file's owner"]
    assert prompts(history.search(query, 10)) == ["the file's owner"]


def test_rank_order_puts_the_best_match_first(history):
    add_all(
        history,
        "deploy deploy",
        "after the review deploy the service to production and watch the dashboards",
    )
    assert prompts(history.search("deploy", 10, order="rank")) == [
        "deploy deploy",
        "after the review deploy the service to production and watch the dashboards",
    ]
    assert prompts(history.search("deploy", 10))[0].startswith("after")


def test_rank_order_breaks_ties_by_recency(history):
    add_all(history, "alpha beta", "beta alpha")
    assert prompts(history.search("alpha", 10, order="rank")) == ["beta alpha", "alpha beta"]


def test_unknown_search_order_is_refused(history):
    with pytest.raises(ValueError, match="order"):
        history.search("x", 10, order="oldest")


# Deleting and pruning keep FTS in step


def test_delete_removes_prompts_from_search(history, db_path):
    add_all(history, "keep this", "drop this", "keep that")
    dropped = history.search("drop", 1)[0].id
    assert history.delete([dropped, 10_000]) == 1
    assert prompts(history.search("this", 10)) == ["keep this"]
    fts_integrity_check(db_path)


def test_update_of_the_text_keeps_search_in_step(history, db_path):
    add_all(history, "original words")
    execute(db_path, "UPDATE history SET prompt = 'replacement text'")
    assert prompts(history.search("original", 10)) == []
    assert prompts(history.search("replacement", 10)) == ["replacement text"]
    fts_integrity_check(db_path)


def test_update_of_the_id_keeps_search_in_step(history, db_path):
    add_all(history, "renumbered")
    execute(db_path, "UPDATE history SET id = 500")
    assert [entry.id for entry in history.search("renumbered", 10)] == [500]
    fts_integrity_check(db_path)


@pytest.fixture
def dated_history(history: HistoryStorage, db_path: Path) -> HistoryStorage:
    """Prompts created 30, 10 and 0 days ago."""
    add_all(history, "thirty days", "ten days", "today")
    for text, days in (("thirty days", 30), ("ten days", 10)):
        execute(
            db_path,
            "UPDATE history SET created_at = created_at - ? WHERE prompt = ?",
            (days * 86400, text),
        )
    return history


@pytest.mark.parametrize(
    "older_than",
    [
        timedelta(days=20),
        datetime.now() - timedelta(days=20),
        time.time() - 20 * 86400,
    ],
    ids=["timedelta", "datetime", "epoch"],
)
def test_prune_older_than(dated_history, db_path, older_than):
    assert dated_history.prune(older_than=older_than) == 1
    assert prompts(dated_history.get_recent(10)) == ["today", "ten days"]
    assert dated_history.search("thirty", 10) == []
    fts_integrity_check(db_path)


def test_prune_keep_last(dated_history, db_path):
    assert dated_history.prune(keep_last=1) == 2
    assert prompts(dated_history.get_recent(10)) == ["today"]
    fts_integrity_check(db_path)


def test_prune_with_both_rules_deletes_what_either_selects(dated_history):
    assert dated_history.prune(older_than=timedelta(days=20), keep_last=1) == 2
    assert prompts(dated_history.get_recent(10)) == ["today"]


def test_prune_without_a_rule_is_refused(history):
    with pytest.raises(ValueError):
        history.prune()


def test_prune_runs_after_prompts_added_before_it(history):
    history.add("not flushed yet")
    assert history.prune(keep_last=0) == 1
    assert history.get_recent(10) == []


# Lifecycle


def test_close_saves_pending_prompts_and_can_repeat(db_path):
    history = HistoryStorage.open(db_path)
    history.add("saved by close")
    history.close()
    history.close()
    with HistoryStorage.open(db_path) as reopened:
        assert prompts(reopened.get_recent(5)) == ["saved by close"]


def test_closed_storage_refuses_work(db_path):
    history = HistoryStorage.open(db_path)
    history.close()
    with pytest.raises(HistoryError, match="closed"):
        history.add("too late")
    with pytest.raises(HistoryError, match="closed"):
        history.get_recent(5)


def test_unclosed_storage_is_collected_and_saves_its_prompts(db_path):
    history = HistoryStorage.open(db_path)
    history.add("saved by the finalizer")
    reference = weakref.ref(history)
    del history
    gc.collect()
    assert reference() is None
    with HistoryStorage.open(db_path) as reopened:
        assert prompts(reopened.get_recent(5)) == ["saved by the finalizer"]


def test_storage_left_open_at_exit_saves_its_prompts(db_path):
    process = run_python(
        """
        import sys
        from xcsh_store import HistoryStorage
        history = HistoryStorage.open(sys.argv[1])
        for number in range(300):
            history.add(f"exit prompt {number}")
        """,
        str(db_path),
    )
    assert process.wait(timeout=30) == 0, process.stderr.read()
    with HistoryStorage.open(db_path) as history:
        assert len(history.get_recent(1000)) == 300


def test_each_open_is_a_separate_instance(tmp_path):
    with (
        HistoryStorage.open(tmp_path / "a.db") as first,
        HistoryStorage.open(tmp_path / "b.db") as second,
    ):
        add_all(first, "only in a")
        assert second.get_recent(5) == []


def test_default_path_is_in_the_agent_dir(agent_dir):
    with HistoryStorage.open() as history:
        add_all(history, "default place")
    assert (agent_dir / "history.db").is_file()


# Other processes


ADD_MANY = """
import sys
from xcsh_store import HistoryStorage
with HistoryStorage.open(sys.argv[1]) as history:
    for number in range(int(sys.argv[3])):
        history.add(f"{sys.argv[2]} prompt {number}")
"""


def test_two_processes_adding_at_once_lose_nothing(db_path):
    HistoryStorage.open(db_path).close()
    writers = [run_python(ADD_MANY, str(db_path), name, "1500") for name in ("left", "right")]
    for writer in writers:
        assert writer.wait(timeout=60) == 0, writer.stderr.read()

    connection = connect(db_path)
    try:
        counts = dict(
            connection.execute(
                "SELECT substr(prompt, 1, instr(prompt, ' ') - 1), count(DISTINCT prompt)"
                " FROM history GROUP BY 1"
            )
        )
    finally:
        connection.close()
    assert counts == {"left": 1500, "right": 1500}
    fts_integrity_check(db_path)


def test_prompts_flushed_before_sigkill_survive(db_path):
    process = run_python(
        """
        import sys, time
        from xcsh_store import HistoryStorage
        history = HistoryStorage.open(sys.argv[1])
        for number in range(500):
            history.add(f"survivor {number}")
        history.flush()
        print("FLUSHED", flush=True)
        history.add("after the marker")
        time.sleep(60)
        """,
        str(db_path),
    )
    assert process.stdout.readline().strip() == "FLUSHED"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)

    with HistoryStorage.open(db_path) as history:
        assert len(history.search("survivor", 1000)) == 500
    fts_integrity_check(db_path)


# Broken and foreign files


def _assert_refused_untouched(db_path: Path, content: bytes) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.write_bytes(content)
    with pytest.raises(HistoryError) as raised:
        HistoryStorage.open(db_path)
    message = str(raised.value)
    assert str(db_path) in message and "\n" not in message
    assert db_path.read_bytes() == content


def test_garbage_file_is_refused_and_left_unchanged(db_path):
    _assert_refused_untouched(db_path, bytes(range(256)) * 64)


def test_truncated_database_is_refused_and_left_unchanged(tmp_path, db_path):
    whole = tmp_path / "whole.db"
    with HistoryStorage.open(whole) as history:
        add_all(history, *(f"filler prompt {number} " * 8 for number in range(2000)))
    content = whole.read_bytes()
    _assert_refused_untouched(db_path, content[: len(content) // 2])


def test_foreign_history_table_is_refused_with_the_missing_columns(db_path):
    create_foreign = (
        "CREATE TABLE history (id INTEGER PRIMARY KEY, prompt TEXT, created_at INTEGER);"
    )
    db_path.parent.mkdir(parents=True)
    stdlib_sqlite(db_path, f"connection.executescript({create_foreign!r})")
    before = db_path.read_bytes()
    with pytest.raises(HistoryError, match=r"lacks column.*cwd"):
        HistoryStorage.open(db_path)
    assert db_path.read_bytes() == before


# Permissions


def test_new_file_and_folder_are_private(db_path):
    with HistoryStorage.open(db_path) as history:
        add_all(history, "secret")
        assert db_path.stat().st_mode & 0o777 == 0o600
        assert (db_path.parent / "history.db-wal").stat().st_mode & 0o777 == 0o600
    assert db_path.parent.stat().st_mode & 0o777 == 0o700


def test_existing_world_readable_file_is_made_private(db_path):
    create_with_stdlib(db_path, REFERENCE_SCHEMA, [])
    db_path.chmod(0o644)
    HistoryStorage.open(db_path).close()
    assert db_path.stat().st_mode & 0o777 == 0o600


# CLI


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, ["history", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_add_then_recent_table(runner):
    assert invoke(runner, "add", "  refactor the parser ", "--cwd", "/src/app") == ""
    lines = invoke(runner, "recent").splitlines()
    assert lines[0].split() == ["id", "when", "cwd", "prompt"]
    assert lines[2].split()[0] == "1"
    assert lines[2].endswith("/src/app  refactor the parser")


def test_cli_recent_json(runner):
    invoke(runner, "add", "first")
    invoke(runner, "add", "second", "--cwd", "/w")
    entries = json.loads(invoke(runner, "recent", "--json", "--limit", "1"))
    assert len(entries) == 1
    entry = entries[0]
    assert (entry["id"], entry["prompt"], entry["cwd"]) == (2, "second", "/w")
    assert entry["created"] == datetime.fromtimestamp(entry["created_at"], UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert json.loads(invoke(runner, "recent", "--json"))[1]["cwd"] is None


def test_cli_search_table_and_json(runner):
    for text in ("fix the migration", "write docs", 'fix "quoted NEAR( things'):
        invoke(runner, "add", text)
    table = invoke(runner, "search", "fix", "migr")
    assert "fix the migration" in table and "write docs" not in table
    found = json.loads(invoke(runner, "search", '"quoted', "NEAR(", "--json"))
    assert [entry["prompt"] for entry in found] == ['fix "quoted NEAR( things']


def test_cli_search_rank(runner):
    invoke(runner, "add", "deploy deploy")
    invoke(runner, "add", "after the review deploy the service to production and watch it")
    found = json.loads(invoke(runner, "search", "deploy", "--rank", "--json"))
    assert found[0]["prompt"] == "deploy deploy"


def test_cli_prune(runner):
    for text in ("one", "two", "three"):
        invoke(runner, "add", text)
    assert invoke(runner, "prune", "--keep-last", "2") == "Deleted 1 prompt.\n"
    assert json.loads(invoke(runner, "prune", "--older-than", "1", "--json")) == {"deleted": 0}
    assert [entry["prompt"] for entry in json.loads(invoke(runner, "recent", "--json"))] == [
        "three",
        "two",
    ]


def test_cli_prune_needs_a_rule(runner):
    result = runner.invoke(cli, ["history", "prune"])
    assert result.exit_code == 2
    assert "--older-than" in result.output


def test_cli_reports_a_corrupt_file_in_one_line(runner, agent_dir):
    agent_dir.mkdir()
    (agent_dir / "history.db").write_bytes(b"this is not sqlite" * 100)
    result = runner.invoke(cli, ["history", "recent"])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert result.output.startswith("Error: prompt history ")
    assert "Traceback" not in result.output
