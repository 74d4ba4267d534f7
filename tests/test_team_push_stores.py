"""Two stores, one host name, and a push ledger that is readable but wrong (issue 39 item 10),
on the real PostgreSQL server:

* two agent dirs pushing as one host (neither gave ``--host``: both are the machine's name)
  would each delete the other's sessions on every push: the second is refused, naming the
  host, until it pushes as another host or takes the host over;
* a ledger whose marks are not what the server holds (copied from elsewhere, restored, edited)
  blocked every push with a duplicate key, or kept entries off the server for good: the file's
  ledger row is forgotten and the file sent whole; a ledger row that cannot be read is a
  ledger row not there; an error of the ledger names its file."""

from __future__ import annotations

import sqlite3
from array import array
from pathlib import Path

import pytest
from helpers.team_pushes import conversation
from session_builder import append, header, message, sessions_dir, sync, write_session
from team_server import local_rows, psycopg, server_rows

from xcsh_store.team import TeamIndexError, push
from xcsh_store.team.ledger import LEDGER_FILE_NAME


def agent(root: Path, name: str) -> Path:
    """An agent dir with two sessions of its own, synced."""
    agent_dir = root / name
    folder = sessions_dir(agent_dir)
    for number in range(2):
        write_session(
            folder / f"{name}-{number}.jsonl",
            [header(f"{name}-{number}"), message("u1", None, "user", f"{name} says {number}")],
        )
    sync(agent_dir)
    return agent_dir


def sessions_of(url: str, host: str) -> set[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT session_id FROM sessions WHERE host = %s", (host,))
        return {session_id for (session_id,) in rows}


def test_a_second_store_pushing_as_the_same_host_is_refused(tmp_path: Path, team_url: str):
    first, second = agent(tmp_path, "desk"), agent(tmp_path, "laptop")
    push(str(first), team_url)  # as the machine's name, as both would by default
    with pytest.raises(TeamIndexError, match="pushed by another store") as refused:
        push(str(second), team_url)
    assert "--host" in str(refused.value) and "--take-over" in str(refused.value)
    assert sessions_of(team_url, push(str(first), team_url).host) == {"desk-0", "desk-1"}


def test_the_second_store_pushes_as_another_host_or_takes_the_host_over(
    tmp_path: Path, team_url: str
):
    first, second = agent(tmp_path, "desk"), agent(tmp_path, "laptop")
    host = push(str(first), team_url).host
    push(str(second), team_url, host="laptop")
    assert sessions_of(team_url, host) == {"desk-0", "desk-1"}
    assert sessions_of(team_url, "laptop") == {"laptop-0", "laptop-1"}
    push(str(second), team_url, host=host, take_over=True)
    assert sessions_of(team_url, host) == {"laptop-0", "laptop-1"}
    with pytest.raises(TeamIndexError, match="pushed by another store"):
        push(str(first), team_url, host=host)


def test_a_host_pushed_before_stores_were_named_is_claimed_by_its_next_push(
    tmp_path: Path, team_url: str
):
    first = agent(tmp_path, "desk")
    push(str(first), team_url, host="desk")
    with psycopg.connect(team_url) as connection:
        connection.execute("UPDATE hosts SET store = NULL")
    push(str(first), team_url, host="desk")
    with pytest.raises(TeamIndexError, match="pushed by another store"):
        push(str(agent(tmp_path, "laptop")), team_url, host="desk")


def _marks(agent_dir: Path, path: str) -> dict[int, int]:
    with sqlite3.connect(agent_dir / LEDGER_FILE_NAME) as connection:
        (blob,) = connection.execute("SELECT marks FROM pushed WHERE path = ?", (path,)).fetchone()
    pairs = array("q")
    pairs.frombytes(blob)
    return dict(zip(pairs[::2], pairs[1::2], strict=True))


def _set_marks(agent_dir: Path, path: str, marks: bytes) -> None:
    with sqlite3.connect(agent_dir / LEDGER_FILE_NAME) as connection:
        connection.execute("UPDATE pushed SET marks = ? WHERE path = ?", (marks, path))
    connection.close()


def _packed(marks: dict[int, int]) -> bytes:
    pairs = array("q")
    for seq in sorted(marks):
        pairs.extend((seq, marks[seq]))
    return pairs.tobytes()


@pytest.fixture
def pushed_once(agent_dir: Path, team_url: str) -> Path:
    """A session of 10 turns, pushed as ``desk``; then one more answer appended, synced."""
    grown = conversation(sessions_dir(agent_dir) / "2026-01-01T00-00-00-000Z_big.jsonl", "big", 10)
    sync(agent_dir)
    push(str(agent_dir), team_url, host="desk")
    append(grown, message("big-more", "biga9", "assistant", "one more"))
    sync(agent_dir)
    return grown


def test_a_ledger_that_forgets_an_entry_the_server_holds_costs_a_replacement(
    agent_dir: Path, team_url: str, pushed_once: Path
):
    marks = _marks(agent_dir, str(pushed_once))
    del marks[min(marks)]  # the server holds it: sent again, it was a duplicate key
    _set_marks(agent_dir, str(pushed_once), _packed(marks))
    report = push(str(agent_dir), team_url, host="desk")
    assert (report.pushed, report.appended) == (1, 0)
    assert server_rows(team_url, "desk") == local_rows(agent_dir)


def test_a_ledger_that_claims_an_entry_the_server_lacks_costs_a_replacement(
    agent_dir: Path, team_url: str, pushed_once: Path
):
    with psycopg.connect(team_url) as connection:
        connection.execute("DELETE FROM entries WHERE host = 'desk' AND seq = 3")
    report = push(str(agent_dir), team_url, host="desk")
    assert (report.pushed, report.appended) == (1, 0)
    assert server_rows(team_url, "desk") == local_rows(agent_dir)


def test_a_ledger_row_that_cannot_be_read_is_one_not_there(
    agent_dir: Path, team_url: str, pushed_once: Path
):
    _set_marks(agent_dir, str(pushed_once), b"\x01\x02\x03")
    report = push(str(agent_dir), team_url, host="desk")
    assert (report.pushed, report.appended) == (1, 0)
    assert server_rows(team_url, "desk") == local_rows(agent_dir)


def test_an_error_of_the_ledger_names_its_file(agent_dir: Path, team_url: str, pushed_once):
    ledger = agent_dir / LEDGER_FILE_NAME
    with sqlite3.connect(ledger) as connection:
        connection.execute("CREATE TRIGGER no_writes BEFORE INSERT ON pushed"
                           " BEGIN SELECT RAISE(ABORT, 'the disk said no'); END")  # fmt: skip
    connection.close()
    with pytest.raises(TeamIndexError) as failed:
        push(str(agent_dir), team_url, host="desk")
    assert str(ledger) in str(failed.value) and "the disk said no" in str(failed.value)
