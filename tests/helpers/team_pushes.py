"""Sessions that grow turn by turn, the check that the team index's usage_rollup is what its
usage_entries sum to, the rows a push writes (counted by team_server's triggers) and waiting for a
push to block on a lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from session_builder import header, message, write_session
from team_server import psycopg


def conversation(path: Path, session_id: str, turns: int, created: str | None = None) -> Path:
    """A session of ``turns`` prompts and answers (each answer with usage), in one chain."""
    records = [header(session_id, **({"timestamp": created} if created else {}))]
    parent = None
    for turn in range(turns):
        for role, entry_id in (
            ("user", f"{session_id}u{turn}"),
            ("assistant", f"{session_id}a{turn}"),
        ):
            records.append(message(entry_id, parent, role, f"{role} turn {turn} of {session_id}"))
            parent = entry_id
    return write_session(path, records)


def rollup_is_fresh(url: str, host: str) -> bool:
    """usage_rollup's rows equal the host's usage_entries summed again from scratch."""
    from xcsh_store.agents import ESTIMATED_AGENTS
    from xcsh_store.team.upload import _ROLLUP

    fresh = _ROLLUP.replace("{source}", "usage_entries WHERE host = %(host)s")
    with psycopg.connect(url) as connection:
        kept = connection.execute("SELECT * FROM usage_rollup WHERE host = %s", (host,))
        made = connection.execute(fresh, {"host": host, "estimated": list(ESTIMATED_AGENTS)})
        return _rounded(kept.fetchall()) == _rounded(made.fetchall())


def _rounded(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(round(value, 9) if isinstance(value, float) else value for value in row))
        for row in rows
    )


def writes(url: str) -> dict[tuple[str, str], int]:
    """The rows written on the server since the triggers were set, by (table, operation)."""
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT tab, op, count(*) FROM row_writes GROUP BY tab, op")
        return {(table, op): count for table, op, count in rows}


def wait_for_lock_wait(url: str) -> None:
    """Until a push of this database waits for a lock (another transaction holds the row)."""
    with psycopg.connect(url, autocommit=True) as connection:
        for _ in range(600):
            waiting = connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = 'xcsh-store' AND wait_event_type = 'Lock'"
            ).fetchone()[0]
            if waiting:
                return
            time.sleep(0.1)
    raise AssertionError("the push never reached the locked row")


def push_killed_at(script: str, agent_dir: Path, url: str, path: str) -> None:
    """Run ``script`` (a push of ``agent_dir`` to ``url``, in its own process) and SIGKILL it
    while it waits for the row of the file at ``path``, which another transaction holds: what it
    committed before that file stays, the rest never happened."""
    blocker = psycopg.connect(url)
    blocker.execute("SELECT 1 FROM files WHERE path = %s FOR UPDATE", (path,))
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(agent_dir), url],
        env=os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        wait_for_lock_wait(url)
        process.send_signal(signal.SIGKILL)
        process.wait()
    finally:
        blocker.rollback()
        blocker.close()
