"""``push``: copy what this machine's index holds into the team index, file by file.

Each file's rows and its watermark (``files.state``: what the local index said of the file
when it was pushed) are replaced in one transaction (a few files share one), so a push killed
at any point leaves every file on the server either as the previous push left it or as the
index has it now, and the next push sends exactly the files whose watermark differs: no
duplicate, no gap. The files the index no longer holds are deleted from the server the same
way. A host's pushes take an advisory lock on its name, so two pushes of one host run one after
the other; pushes of different hosts touch different rows and never wait for each other.

What leaves at each privacy tier, the keyed watermarks and the redaction of secrets in the text
that leaves are disclosure.py's. A push
without ``tier`` or ``redact_paths`` keeps the host's choice on the server, so it never raises
what a host shares; lowering a host's tier scrubs its rows on the server in one transaction
before anything else is pushed.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

import psycopg

from xcsh_store.agents import OTHER_AGENTS
from xcsh_store.index import (
    ENTRY_COLUMNS,
    HISTORY_COLUMNS,
    SESSION_COLUMNS,
    FileState,
    SessionIndex,
    entry_rows,
    history_rows,
    history_state,
    session_files,
    session_row,
)
from xcsh_store.paths import get_index_db_path, write_private_file
from xcsh_store.team.disclosure import (
    META_COLUMNS,
    TEXT_HASH_COLUMNS,
    TIERS,
    Disclosure,
    host_key,
    outgoing_text,
)
from xcsh_store.team.errors import TeamIndexError
from xcsh_store.team.server import connect, server_errors

DEFAULT_TIER = "full"
# Where the remembered --host lives: beside index.db.
HOST_FILE_NAME = "team-host"

# The columns a push writes, per table.
_COLUMNS = {
    "files": "host, path, state, tier",
    "sessions": f"host, path, {', '.join(SESSION_COLUMNS)}",
    "entries": f"host, path, {', '.join(ENTRY_COLUMNS)}, text, raw",
    "blob_refs": "host, path, seq, hash",
    "history": f"host, {', '.join(HISTORY_COLUMNS)}",
}
# Where a role under row-level security (a per-host role, migration 0003) copies its rows
# first: PostgreSQL refuses COPY FROM into a table with row-level security; one INSERT of the
# staged rows looks up the hosts the role may write once, and checks each row. Emptied by each
# commit.
_STAGED = "xcsh_staged_"


@dataclass
class PushReport:
    """What one push did."""

    host: str
    tier: str
    redact_paths: bool = False  # labels instead of absolute paths (disclosure.py)
    files: int = 0  # session files the local index holds
    pushed: int = 0  # files whose rows were (re)written
    deleted: int = 0  # files removed from the server
    unchanged: int = 0
    entries: int = 0  # entry rows written
    history: int = 0  # prompts written (full tier)
    lowered_from: str | None = None  # the tier the host had before, when this push lowered it


def remembered_host(agent_dir: str, host: str | None, db_path: str | None = None) -> str:
    """``host`` (then remembered beside index.db), else the remembered one, else the machine's
    hostname."""
    path = os.path.join(os.path.dirname(db_path or get_index_db_path(agent_dir)), HOST_FILE_NAME)
    try:
        with open(path, encoding="utf-8") as handle:
            remembered = handle.read().strip()
    except FileNotFoundError:
        remembered = ""
    if host is None:
        return remembered or socket.gethostname()
    host = host.strip()
    if not host:
        raise TeamIndexError("--host needs a name")
    if host != remembered:
        write_private_file(path, f"{host}\n".encode())
    return host


def push(
    agent_dir: str,
    url: str,
    host: str | None = None,
    tier: str | None = None,
    db_path: str | None = None,
    redact_paths: bool | None = None,
    redact: bool = True,
) -> PushReport:
    """Push the agent dir's index (``db_path``, default its index.db) to the team index at
    ``url`` (a libpq connection string: server.py) as ``host``, the secrets in its text
    redacted unless ``redact`` is false.

    ``tier`` and ``redact_paths`` default to the host's choice on the server (``full`` and
    paths for a new host), so a push without them never raises what a host shares.
    """
    if tier is not None and tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}")
    with SessionIndex.open(agent_dir, db_path=db_path, read_only=True) as index:
        host = remembered_host(agent_dir, host, db_path)
        key = host_key(os.path.dirname(index.db_path))
        local = session_files(index)
        connection = connect(url)
        try:
            with server_errors(url, "pushing", needs="write"):
                return _push(connection, index, local, host, tier, redact_paths, key, redact)
        finally:
            connection.close()


def _push(
    connection: psycopg.Connection[Any],
    index: SessionIndex,
    local: dict[str, FileState],
    host: str,
    tier: str | None,
    redact_paths: bool | None,
    key: bytes,
    redact: bool,
) -> PushReport:
    connection.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"xcsh-store push {host}",))
    # A commit need not wait for its WAL to reach the disk: a server crash may lose the last
    # few commits, rows and watermarks together, and the next push sends those files again.
    connection.execute("SET synchronous_commit = off")
    ((active,),) = connection.execute("SELECT row_security_active('entries')")
    staged = bool(active)
    if staged:
        for table in _COLUMNS:
            connection.execute(
                f"CREATE TEMPORARY TABLE IF NOT EXISTS {_STAGED}{table}"
                f" (LIKE {table} INCLUDING DEFAULTS)"
                " ON COMMIT DELETE ROWS"
            )
    connection.commit()
    report = _set_choices(connection, host, tier, redact_paths)
    disclosure = Disclosure(report.tier, key, report.redact_paths, redact)
    report.files = len(local)
    outgoing = {disclosure.path(path): state for path, state in local.items()}
    remote = dict(
        connection.execute(
            "SELECT path, state || ' ' || tier FROM files WHERE host = %s", (host,)
        ).fetchall()
    )
    connection.commit()
    gone = sorted(remote.keys() - outgoing.keys())
    if gone:
        with connection.transaction():
            connection.execute("DELETE FROM files WHERE host = %s AND path = ANY(%s)", (host, gone))
            _usage_changed(connection, host)
        report.deleted = len(gone)
    batch = _Batch(host, disclosure, staged)
    for path, state in sorted(outgoing.items()):
        if remote.get(path) in {
            f"{watermark} {report.tier}" for watermark in disclosure.current(path, state.state)
        }:
            report.unchanged += 1
            continue
        batch.add(index, path, state)
        if batch.full():
            report.entries += batch.write(connection)
            report.pushed += len(batch.files)
            batch = _Batch(host, disclosure, staged)
    report.entries += batch.write(connection)
    report.pushed += len(batch.files)
    if disclosure.at_least("full"):
        report.history = _push_history(connection, index, host, disclosure, staged)
    with connection.transaction():
        connection.execute("UPDATE hosts SET pushed_at = now() WHERE host = %s", (host,))
        _roll_up_usage(connection, host)
    return report


def _roll_up_usage(connection: psycopg.Connection[Any], host: str) -> None:
    """The host's usage_rollup rows made again, when its rows changed since they were made."""
    stale = connection.execute("SELECT usage_stale FROM hosts WHERE host = %s", (host,)).fetchone()
    if not stale or not stale[0]:
        return
    connection.execute("DELETE FROM usage_rollup WHERE host = %s", (host,))
    connection.execute(
        "INSERT INTO usage_rollup SELECT host, CASE WHEN timestamp ~ '^\\d{4}-\\d{2}-\\d{2}'"
        " THEN substr(timestamp, 1, 10) END AS day, provider, model, project_dir, session_id,"
        " agent, parent_session_id, count(*),"
        " count(*) FILTER (WHERE agent = ANY(%s) AND cost IS NOT NULL),"
        " count(*) FILTER (WHERE cost IS NULL),"
        " sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),"
        " sum(cache_write_tokens), sum(cost) FROM usage_entries WHERE host = %s"
        " GROUP BY host, day, provider, model, project_dir, session_id, agent,"
        " parent_session_id",
        (list(OTHER_AGENTS), host),
    )
    connection.execute("UPDATE hosts SET usage_stale = false WHERE host = %s", (host,))


class _Batch:
    """The rows of a few changed files, written in one transaction: each file's old rows and
    watermark replaced by its new ones, whole, or (the transaction lost) not at all."""

    # A transaction holds about this many entries (a bigger file makes one of its own):
    # fewer commits, and memory that stays small.
    ENTRIES = 2_000
    FILES = 200

    def __init__(self, host: str, disclosure: Disclosure, staged: bool) -> None:
        self.host = host
        self.disclosure = disclosure
        self.staged = staged
        self.files: list[tuple[Any, ...]] = []
        self.sessions: list[tuple[Any, ...]] = []
        self.entries: list[tuple[Any, ...]] = []
        self.refs: list[tuple[Any, ...]] = []

    def full(self) -> bool:
        return len(self.entries) >= self.ENTRIES or len(self.files) >= self.FILES

    def add(self, index: SessionIndex, path: str, state: FileState) -> None:
        """The rows of the file ``state`` describes, as ``path`` (its name on the server)."""
        host, disclosure = self.host, self.disclosure
        path = outgoing_text(path)
        self.files.append((host, path, disclosure.watermark(path, state.state), disclosure.tier))
        session = disclosure.session(session_row(index, state.file_id))
        self.sessions.append((host, path, *map(outgoing_text, session)))
        entries = list(entry_rows(index, state.file_id, with_text=disclosure.at_least("full")))
        for entry, (values, text, raw) in zip(entries, disclosure.entries(entries), strict=True):
            self.entries.append((host, path, *map(outgoing_text, values), text, raw))
            self.refs += ((host, path, values[0], digest) for digest in disclosure.blob_refs(entry))

    def write(self, connection: psycopg.Connection[Any]) -> int:
        if not self.files:
            return 0
        paths = [row[1] for row in self.files]
        with connection.transaction():
            connection.execute(
                "DELETE FROM files WHERE host = %s AND path = ANY(%s)", (self.host, paths)
            )
            for table, rows in (
                ("files", self.files),
                ("sessions", self.sessions),
                ("entries", self.entries),
                ("blob_refs", self.refs),
            ):
                _copy(connection, table, rows, self.staged)
            _usage_changed(connection, self.host)
        return len(self.entries)


def _copy(
    connection: psycopg.Connection[Any], table: str, rows: list[tuple[Any, ...]], staged: bool
) -> None:
    """COPY ``rows`` into ``table``, through its staging table when ``staged``."""
    columns = _COLUMNS[table]
    target = f"{_STAGED}{table}" if staged else table
    with connection.cursor().copy(f"COPY {target} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    if staged:
        connection.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {target}")


def _usage_changed(connection: psycopg.Connection[Any], host: str) -> None:
    """Mark the host's usage_rollup rows out of date (in the transaction that made them so)."""
    connection.execute(
        "UPDATE hosts SET usage_stale = true WHERE host = %s AND NOT usage_stale", (host,)
    )


def _set_choices(
    connection: psycopg.Connection[Any], host: str, tier: str | None, redact_paths: bool | None
) -> PushReport:
    """The host's row, with its tier and path choice. A lower tier than before scrubs what it
    no longer allows, and a change of path choice removes every row of the host that names a
    path (all of them: the push then sends them again), in the same transaction."""
    with connection.transaction():
        row = connection.execute(
            "SELECT tier, redact_paths FROM hosts WHERE host = %s FOR UPDATE", (host,)
        ).fetchone()
        before, redacted_before = row or (None, False)
        chosen = tier or before or DEFAULT_TIER
        redact = redacted_before if redact_paths is None else redact_paths
        report = PushReport(host=host, tier=chosen, redact_paths=redact)
        if before is None:
            connection.execute(
                "INSERT INTO hosts (host, tier, redact_paths) VALUES (%s, %s, %s)",
                (host, chosen, redact),
            )
            return report
        if TIERS.index(chosen) < TIERS.index(before):
            _scrub(connection, host, chosen)
            report.lowered_from = before
        if redact != redacted_before:
            for table in ("files", "history", "usage_rollup"):  # the others go with files
                connection.execute(f"DELETE FROM {table} WHERE host = %s", (host,))
            connection.execute(
                "UPDATE hosts SET history_state = NULL, usage_stale = true WHERE host = %s",
                (host,),
            )
        if (chosen, redact) != (before, redacted_before):
            connection.execute(
                "UPDATE hosts SET tier = %s, redact_paths = %s WHERE host = %s",
                (chosen, redact, host),
            )
    return report


def _scrub(connection: psycopg.Connection[Any], host: str, tier: str) -> None:
    """Remove from the host's rows what ``tier`` does not allow; the rows then are what a push
    at that tier writes, so their files keep their watermarks (with the new tier)."""
    text = ("text", "raw", *TEXT_HASH_COLUMNS)
    connection.execute(
        f"UPDATE entries SET {', '.join(f'{column} = NULL' for column in text)} WHERE host = %s"
        f" AND ({' OR '.join(f'{column} IS NOT NULL' for column in text)})",
        (host,),
    )
    connection.execute("DELETE FROM history WHERE host = %s", (host,))
    connection.execute("DELETE FROM blob_refs WHERE host = %s", (host,))
    if tier == "usage":
        clear = ", ".join(f"{column} = NULL" for column in META_COLUMNS)
        connection.execute(f"UPDATE sessions SET {clear} WHERE host = %s", (host,))
    connection.execute("UPDATE hosts SET history_state = NULL WHERE host = %s", (host,))
    connection.execute("UPDATE files SET tier = %s WHERE host = %s", (tier, host))


def _push_history(
    connection: psycopg.Connection[Any],
    index: SessionIndex,
    host: str,
    disclosure: Disclosure,
    staged: bool,
) -> int:
    """The host's prompt history, replaced whole when the local mirror changed (or the choice
    of paths or redaction did)."""
    state = disclosure.history_state(history_state(index))
    row = connection.execute("SELECT history_state FROM hosts WHERE host = %s", (host,)).fetchone()
    connection.commit()
    if row and row[0] == state:
        return 0
    rows = [(host, *map(outgoing_text, row)) for row in disclosure.history(history_rows(index))]
    with connection.transaction():
        connection.execute("DELETE FROM history WHERE host = %s", (host,))
        _copy(connection, "history", rows, staged)
        connection.execute("UPDATE hosts SET history_state = %s WHERE host = %s", (state, host))
    return len(rows)
