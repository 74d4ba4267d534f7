"""``push`` sends what is new: a file that only grew writes its new entries, its session row,
its watermark and the usage_rollup rows they change, counted on the real PostgreSQL server by
triggers; rewrites and truncations still replace the file's rows; a push killed in the middle,
or a ledger lost or out of date, leaves nothing the next push does not mend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.team_pushes import (
    conversation,
    push_killed_at,
    rollup_is_fresh,
    writes,
)
from session_builder import append, header, message, sessions_dir, sync
from team_server import count_row_writes, local_rows, psycopg, server_rows

from xcsh_store.team import push
from xcsh_store.team.ledger import LEDGER_FILE_NAME


@pytest.mark.parametrize("turns", [20, 327])
def test_one_appended_entry_costs_a_few_row_writes_whatever_the_file(
    agent_dir: Path, team_url: str, turns: int
) -> None:
    folder = sessions_dir(agent_dir)
    grown = conversation(folder / "2026-01-01T00-00-00-000Z_big.jsonl", "big", turns)
    conversation(folder / "2026-01-01T00-00-01-000Z_other.jsonl", "other", 5)
    sync(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    count_row_writes(team_url)
    append(grown, message("big-answer-more", f"biga{turns - 1}", "assistant", "one more"))
    sync(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert (report.pushed, report.appended, report.entries) == (1, 1, 1)
    counted = writes(team_url)
    assert counted[("entries", "INSERT")] == 1
    assert ("entries", "DELETE") not in counted
    assert sum(counted.values()) <= 12, counted
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)
    assert rollup_is_fresh(team_url, "laptop")


def test_an_append_that_replaces_an_entry_deletes_the_old_row(
    agent_dir: Path, team_url: str
) -> None:
    path = conversation(sessions_dir(agent_dir) / "2026-01-01T00-00-00-000Z_s.jsonl", "s", 10)
    sync(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    # A later line with an earlier entry's id wins (as the reference reads it).
    append(path, message("sa3", "su3", "assistant", "the answer again"))
    sync(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert report.appended == 1
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)
    assert rollup_is_fresh(team_url, "laptop")


def test_rewrites_and_truncations_replace_the_files_rows(agent_dir: Path, team_url: str) -> None:
    folder = sessions_dir(agent_dir)
    rewritten = conversation(folder / "2026-01-01T00-00-00-000Z_r.jsonl", "r", 10)
    truncated = conversation(folder / "2026-01-01T00-00-01-000Z_t.jsonl", "t", 10)
    grown = conversation(folder / "2026-01-01T00-00-02-000Z_g.jsonl", "g", 10)
    sync(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    # The same entries, another text: the rows are the same but for what the file now says.
    rewritten.write_bytes(rewritten.read_bytes().replace(b"turn", b"TURN") + b"\n")
    lines = truncated.read_bytes().splitlines(keepends=True)
    truncated.write_bytes(b"".join(lines[:7]))
    append(grown, message("g-more", "ga9", "user", "more"))
    sync(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert (report.pushed, report.appended) == (3, 1)
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)
    with psycopg.connect(team_url) as connection:
        texts = connection.execute(
            "SELECT count(*) FROM entries WHERE path LIKE %s AND text LIKE %s",
            ("%_r.jsonl", "%TURN%"),
        ).fetchone()[0]
    assert texts == 20
    assert rollup_is_fresh(team_url, "laptop")


def test_a_rewrite_makes_only_its_sessions_rollup_rows_again(
    agent_dir: Path, team_url: str
) -> None:
    folder = sessions_dir(agent_dir)
    paths = [
        conversation(folder / f"2026-01-01T00-00-0{number}-000Z_s{number}.jsonl", f"s{number}", 4)
        for number in range(8)
    ]
    sync(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    count_row_writes(team_url)
    paths[3].write_bytes(paths[3].read_bytes().replace(b"turn", b"TURN") + b"\n")
    sync(agent_dir)
    assert push(str(agent_dir), team_url, host="laptop").pushed == 1
    with psycopg.connect(team_url) as connection:
        (sessions,) = connection.execute(
            "SELECT count(DISTINCT session_id) FROM usage_rollup"
        ).fetchone()
    assert sessions == 8
    # The rewritten session's one rollup row, not the host's eight.
    assert writes(team_url).get(("usage_rollup", "INSERT"), 0) <= 1
    assert rollup_is_fresh(team_url, "laptop")


def test_a_copy_that_stops_counting_leaves_the_rollup_right(agent_dir: Path, team_url: str) -> None:
    """A fork holds copies of its parent's entries; usage counts the oldest copy. The parent
    growing an entry the fork already holds moves that entry's count to the parent."""
    folder = sessions_dir(agent_dir)
    parent = conversation(folder / "2026-01-01T00-00-00-000Z_p.jsonl", "p", 3)
    fork = folder / "2026-01-02T00-00-00-000Z_f.jsonl"
    lines = parent.read_bytes().splitlines(keepends=True)
    forked = [dumps_line(header("f", timestamp="2026-01-02T00:00:00.000Z", parentSession="p"))]
    forked += lines[1:]
    forked.append(dumps_line(message("shared-later", "pa2", "assistant", "copied ahead")))
    fork.write_bytes(b"".join(forked))
    sync(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    assert rollup_is_fresh(team_url, "laptop")
    append(parent, message("shared-later", "pa2", "assistant", "copied ahead"))
    sync(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert report.appended == 1
    assert rollup_is_fresh(team_url, "laptop")
    with psycopg.connect(team_url) as connection:
        sessions = connection.execute(
            "SELECT session_id FROM usage_entries WHERE id = 'shared-later'"
        ).fetchall()
    assert sessions == [("p",)]


def dumps_line(record: dict[str, Any]) -> bytes:
    from xcsh_store.js import stringify

    return stringify(record) + b"\n"


def test_a_lost_or_stale_ledger_costs_a_replacement_not_a_wrong_row(
    agent_dir: Path, team_url: str
) -> None:
    path = conversation(sessions_dir(agent_dir) / "2026-01-01T00-00-00-000Z_s.jsonl", "s", 10)
    sync(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    ledger = agent_dir / LEDGER_FILE_NAME
    old = ledger.read_bytes()
    append(path, message("s-more-1", "sa9", "user", "more"))
    sync(agent_dir)
    assert push(str(agent_dir), team_url, host="laptop").appended == 1
    # As a push killed after its commit and before its ledger write leaves it.
    for side in (".db-wal", ".db-shm"):
        Path(str(ledger).removesuffix(".db") + side).unlink(missing_ok=True)
    ledger.write_bytes(old)
    append(path, message("s-more-2", "s-more-1", "assistant", "again"))
    sync(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert (report.pushed, report.appended) == (1, 0)
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)
    ledger.unlink()
    append(path, message("s-more-3", "s-more-2", "user", "and again"))
    sync(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert (report.pushed, report.appended) == (1, 0)
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)


def test_a_damaged_ledger_is_set_aside(agent_dir: Path, team_url: str) -> None:
    path = conversation(sessions_dir(agent_dir) / "2026-01-01T00-00-00-000Z_s.jsonl", "s", 3)
    sync(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    ledger = agent_dir / LEDGER_FILE_NAME
    for side in ("-wal", "-shm"):
        Path(f"{ledger}{side}").unlink(missing_ok=True)
    ledger.write_bytes(b"not a database, not at all" * 100)
    append(path, message("s-more", "sa2", "user", "more"))
    sync(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert (report.pushed, report.appended) == (1, 0)
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)
    assert Path(f"{ledger}.unreadable").exists()


PUSH_SCRIPT = """
import sys
from xcsh_store.team import push
push(sys.argv[1], sys.argv[2], host="laptop")
"""


def test_a_push_killed_in_its_transaction_leaves_each_file_old_or_new(
    agent_dir: Path, team_url: str
) -> None:
    """More files grew than one transaction holds; the push is killed while one of the later
    transactions waits on a row lock: the files before it are new, the others old, and the
    next push completes the rest."""
    folder = sessions_dir(agent_dir)
    paths = [
        conversation(folder / f"2026-01-01T00-00-00-000Z_s{number:03d}.jsonl", f"s{number}", 2)
        for number in range(205)
    ]
    sync(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    old = by_path(server_rows(team_url, "laptop"))
    for path in paths:
        append(path, message(f"{path.stem}-more", None, "user", "more"))
    sync(agent_dir)
    new = by_path(local_rows(agent_dir))
    last = str(paths[-1])
    push_killed_at(PUSH_SCRIPT, agent_dir, team_url, last)
    halfway = by_path(server_rows(team_url, "laptop"))
    assert halfway.keys() == new.keys()
    states = {path: (rows == new[path], rows == old[path]) for path, rows in halfway.items()}
    assert all(is_new or is_old for is_new, is_old in states.values())
    assert 0 < sum(is_new for is_new, _ in states.values()) < len(states)
    report = push(str(agent_dir), team_url, host="laptop")
    assert report.pushed == sum(not is_new for is_new, _ in states.values())
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)
    assert rollup_is_fresh(team_url, "laptop")


def by_path(rows: dict[str, set[tuple[Any, ...]]]) -> dict[str, dict[str, set[tuple[Any, ...]]]]:
    """The rows of each file (its session row, entries, blob refs)."""
    files: dict[str, dict[str, set[tuple[Any, ...]]]] = {}
    for table, values in rows.items():
        for row in values:
            files.setdefault(row[0], {name: set() for name in rows})[table].add(row)
    return files
