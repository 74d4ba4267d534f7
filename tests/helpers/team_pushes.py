"""Sessions that grow turn by turn, and the check that the team index's usage_rollup is what
its usage_entries sum to."""

from __future__ import annotations

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
