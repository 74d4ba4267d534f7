"""Read verbs answer from fresh data: they sync index.db first, unless a watch keeps it current
or --no-sync says not to; a sync under way elsewhere never makes them fail."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from session_builder import append, header, message, sessions_dir, write_session

from xcsh_store.index import SessionIndex, holding_watch, is_watched
from xcsh_store.index.fresh import RACY_NS, STAMP_SUFFIX
from xcsh_store.paths import get_index_db_path


def run(
    agent_dir: Path, *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """xcsh-store as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def usage_entries(agent_dir: Path, *options: str, env: dict[str, str] | None = None) -> int:
    result = run(agent_dir, *options, "usage", "--json", env=env)
    return json.loads(result.stdout)["total"]["entries"]


@pytest.fixture
def session(agent_dir: Path, index: SessionIndex) -> Path:
    """One session with one answer (its usage), synced."""
    path = write_session(
        sessions_dir(agent_dir) / "one.jsonl",
        [
            header("one"),
            message("u1", None, "user", "alpha"),
            message("a1", "u1", "assistant", "a"),
        ],
    )
    index.sync()
    return path


def append_answer(path: Path, text: str) -> None:
    """A question and its answer (one more usage entry) appended, not synced."""
    append(path, message("u2", "a1", "user", text), message("a2", "u2", "assistant", text))


def test_an_append_shows_in_the_next_usage_without_a_sync(agent_dir, session):
    assert usage_entries(agent_dir) == 1
    append_answer(session, "zeppelin")
    assert usage_entries(agent_dir) == 2


@pytest.mark.parametrize(
    ("arguments", "seen"),
    [
        (("ls", "--json"), lambda out: json.loads(out)[0]["message_count"] == 4),
        (("search", "zeppelin", "--json"), lambda out: len(json.loads(out)) == 2),
        (("show", "one", "--json"), lambda out: "zeppelin" in out),
        # Without --sessions, history reads history.db itself.
        (("history", "recent", "--sessions", "--json"), lambda out: "zeppelin" in out),
    ],
    ids=["ls", "search", "show", "history"],
)
def test_every_read_verb_sees_an_append(agent_dir, session, arguments, seen):
    append_answer(session, "zeppelin")
    result = run(agent_dir, *arguments)
    assert seen(result.stdout)
    assert result.stderr == ""
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        assert index.find_session("one").entry_count == 4


def test_no_sync_answers_from_the_index_as_it_is(agent_dir, session):
    append_answer(session, "zeppelin")
    assert usage_entries(agent_dir, "--no-sync") == 1
    assert usage_entries(agent_dir, env={"XCSH_STORE_NO_SYNC": "1"}) == 1
    assert usage_entries(agent_dir) == 2


def test_a_running_watch_is_left_to_keep_the_index_current(agent_dir, session):
    append_answer(session, "zeppelin")
    with holding_watch(get_index_db_path(str(agent_dir))):
        # The watch would apply the append; the read verb leaves it to the watch.
        assert usage_entries(agent_dir) == 1
    assert usage_entries(agent_dir) == 2


def test_watch_holds_its_lock_while_it_runs(agent_dir, session):
    db_path = get_index_db_path(str(agent_dir))
    watch = subprocess.Popen(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "watch", "--json"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert json.loads(watch.stdout.readline())["change"] == "synced"
        assert is_watched(db_path)
        append_answer(session, "zeppelin")
        deadline = time.monotonic() + 60
        while usage_entries(agent_dir) != 2:
            assert time.monotonic() < deadline, "the watch never applied the append"
            time.sleep(0.05)
    finally:
        watch.terminate()
        assert watch.wait(timeout=60) == 0
    assert not is_watched(db_path)


@contextmanager
def sync_under_way(agent_dir: Path) -> Iterator[None]:
    """The sync lock held, as another process's sync holds it."""
    lock = os.open(get_index_db_path(str(agent_dir)) + ".sync-lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)


def test_a_sync_under_way_elsewhere_leaves_the_answer_as_it_is_said_once_on_stderr(
    agent_dir, session
):
    append_answer(session, "zeppelin")
    with sync_under_way(agent_dir):
        result = run(agent_dir, "usage", "--json")
    assert json.loads(result.stdout)["total"]["entries"] == 1
    assert result.stderr.count("\n") == 1
    assert "another sync of index.db is under way" in result.stderr


def test_library_warnings_of_the_sync_go_to_stderr_not_into_json(agent_dir, session):
    (agent_dir / "history.db").write_bytes(b"not a database, " * 100)
    append_answer(session, "zeppelin")
    result = run(agent_dir, "ls", "--json")
    assert json.loads(result.stdout)[0]["message_count"] == 4
    assert "history.db" in result.stderr


def new_session(agent_dir: Path) -> None:
    """A second session, written after the last sync."""
    write_session(
        sessions_dir(agent_dir) / "two.jsonl",
        [header("two"), message("u1", None, "user", "zeppelin over the harbour")],
    )


@pytest.mark.parametrize(("every", "fresh"), [(0.0, True), (None, False), (3600.0, False)])
def test_mcp_syncs_before_a_call_at_most_every_n_seconds(agent_dir, session, every, fresh):
    pytest.importorskip("mcp")
    import anyio

    from xcsh_store.agent_tools import build_server

    server = build_server(str(agent_dir), redact=False, sync_every=every)

    def listed() -> str:
        result = anyio.run(server.call_tool, "list_sessions", {})
        return "".join(block.text for block in result)

    assert "alpha" in listed()
    new_session(agent_dir)
    assert ("zeppelin" in listed()) is fresh


@pytest.mark.parametrize(("every", "fresh"), [(0.0, True), (None, False), (3600.0, False)])
def test_serve_syncs_before_a_page_at_most_every_n_seconds(agent_dir, session, every, fresh):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from xcsh_store.web import create_app

    client = TestClient(create_app(str(agent_dir), sync_every=every), base_url="http://127.0.0.1")
    assert "alpha" in client.get("/").text
    new_session(agent_dir)
    assert ("zeppelin" in client.get("/").text) is fresh


def test_mcp_as_a_process_answers_fresh_unless_told_not_to(agent_dir, session):
    pytest.importorskip("mcp")
    from mcp_client import call_tools

    new_session(agent_dir)
    calls = [("list_sessions", {})]
    _tools, [stale] = call_tools(agent_dir, calls, process=True, options=["--no-sync"])
    _tools, [fresh] = call_tools(agent_dir, calls, process=True)
    assert len(stale["sessions"]) == 1 and len(fresh["sessions"]) == 2


def test_a_sync_that_fails_leaves_the_answer_as_it_is_said_once_on_stderr(
    agent_dir, session, tmp_path
):
    # A prices file that cannot be read stops a sync (its line names it); a read verb answers.
    config = tmp_path / "config"
    (config / "xcsh-store").mkdir(parents=True)
    (config / "xcsh-store" / "prices.toml").write_text(
        '[models."x"]\ninput = "cheap"\noutput = 1\n'
    )
    append_answer(session, "zeppelin")
    result = run(agent_dir, "usage", "--json", env={"XDG_CONFIG_HOME": str(config)})
    assert json.loads(result.stdout)["total"]["entries"] == 1
    assert result.stderr.count("\n") == 1
    assert "prices.toml: models.x: input must be a number" in result.stderr


def test_a_read_verb_that_upgrades_the_index_says_so_first(agent_dir, session, index):
    # What a migration that needs rows derived anew leaves (db.apply_migrations).
    index.connection.execute(
        "INSERT INTO meta (key, value) VALUES ('resync_required', 'migration 0099 test')"
    )
    result = run(agent_dir, "ls", "--json")
    assert json.loads(result.stdout)[0]["message_count"] == 2
    assert result.stderr == (
        "Note: upgrading index.db first (migration 0099 test): every session file is read again\n"
    )
    assert index.pending_upgrade() is None


# -- the stamp of an unchanged tree (index/fresh.py) -------------------------------------------


def listed_without_sync_code(agent_dir: Path) -> tuple[list[dict], bool]:
    """``ls --json`` as a real process: the sessions listed, and whether the process did without
    the sync's code (its refresh found the last sync's stamp still true)."""
    listed, imported = listed_and_imported(agent_dir)
    return listed, "xcsh_store.index.write.sync" not in imported


def listed_and_imported(agent_dir: Path) -> tuple[list[dict], str]:
    """``ls --json`` as a real process: the sessions listed, and what it imported (``-X
    importtime``'s lines)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "xcsh_store", "--agent-dir", str(agent_dir),
         "ls", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    return json.loads(result.stdout), result.stderr


def stamped(agent_dir: Path) -> None:
    """A read verb's sync, whose stamp holds: after the files' times are no longer racy
    (fresh.py)."""
    time.sleep(RACY_NS / 1e9 + 0.2)
    run(agent_dir, "ls", "--json")
    assert os.path.exists(get_index_db_path(str(agent_dir)) + STAMP_SUFFIX)


def test_an_unchanged_tree_is_answered_without_the_sync(agent_dir, session):
    stamped(agent_dir)
    listed, without_sync = listed_without_sync_code(agent_dir)
    assert [row["message_count"] for row in listed] == [2]
    assert without_sync
    with SessionIndex.open(str(agent_dir)) as index:
        freshness = index.refresh()
    assert (freshness.state, freshness.report) == ("synced", None)


# What a read on an unchanged tree does without: the agents' plugins, the prices (its cost
# column reads the costs the sync stored), the migration runner (the schema is current), the
# folders the manager recorded, the time zones (no --timezone given).
NOT_FOR_A_STAMPED_READ = (
    "xcsh_store.agents.claude",
    "xcsh_store.agents.prices.pricing",
    "xcsh_store.agents.prices.flat_table",
    "xcsh_store.agents.prices.price_cache",
    "xcsh_store.sql_migrations",
    "xcsh_store.format.session_roots",
    "zoneinfo",
)


def test_an_unchanged_tree_is_listed_without_prices_plugins_or_migrations(agent_dir, session):
    stamped(agent_dir)
    listed, imported = listed_and_imported(agent_dir)
    assert [row["message_count"] for row in listed] == [2]
    names = {line.rpartition("|")[2].strip() for line in imported.splitlines()}
    assert "xcsh_store.index.read.sessions" in names
    assert sorted(set(NOT_FOR_A_STAMPED_READ) & names) == []


def test_an_append_after_the_stamp_is_synced(agent_dir, session):
    stamped(agent_dir)
    append_answer(session, "zeppelin")
    listed, without_sync = listed_without_sync_code(agent_dir)
    assert [row["message_count"] for row in listed] == [4]
    assert not without_sync


def test_a_new_session_deep_in_a_folder_that_held_none_is_synced(agent_dir, session):
    empty = sessions_dir(agent_dir) / "deep" / "deeper"
    empty.mkdir(parents=True)
    stamped(agent_dir)
    write_session(empty / "two.jsonl", [header("two"), message("u1", None, "user", "beta")])
    listed, without_sync = listed_without_sync_code(agent_dir)
    assert sorted(row["message_count"] for row in listed) == [1, 2]
    assert not without_sync


def test_a_root_added_after_the_stamp_is_synced(agent_dir, session, tmp_path):
    other = tmp_path / "other"
    write_session(other / "three.jsonl", [header("three"), message("u1", None, "user", "gamma")])
    stamped(agent_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.add_root(str(other))
    listed, without_sync = listed_without_sync_code(agent_dir)
    assert sorted(row["message_count"] for row in listed) == [1, 2]
    assert not without_sync


def test_whatever_takes_the_sync_lock_removes_the_stamp(agent_dir, session):
    stamped(agent_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.index_pending_text()
    assert not os.path.exists(get_index_db_path(str(agent_dir)) + STAMP_SUFFIX)
    listed, without_sync = listed_without_sync_code(agent_dir)
    assert [row["message_count"] for row in listed] == [2]
    assert not without_sync


def test_a_new_session_in_a_linked_folder_is_synced(agent_dir, session, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "nested"
    elsewhere.mkdir(parents=True)
    (sessions_dir(agent_dir) / "linked").symlink_to(tmp_path / "elsewhere")
    stamped(agent_dir)
    write_session(elsewhere / "four.jsonl", [header("four"), message("u1", None, "user", "delta")])
    listed, without_sync = listed_without_sync_code(agent_dir)
    assert sorted(row["message_count"] for row in listed) == [1, 2]
    assert not without_sync


def test_a_stamp_never_keeps_the_entries_a_usage_only_sync_put_off(
    agent_dir, real_home, monkeypatch
):
    """The refresh of `usage` reads only the usage of a first run's files; the next read's
    sync reads their entries whole, whatever stamp that first refresh left."""
    from xcsh_store.index.write import sync as sync_module

    monkeypatch.setattr(sync_module, "TEXT_LATER_MIN_BYTES", 0)  # (usage first at any size)
    time.sleep(RACY_NS / 1e9 + 0.2)
    with SessionIndex.open(str(agent_dir)) as index:
        index.refresh(entries=False)
        assert index.entries_pending() > 0
        assert os.path.exists(index.db_path + STAMP_SUFFIX)
        freshness = index.refresh()
        assert freshness.report is not None
        assert index.entries_pending() == 0
