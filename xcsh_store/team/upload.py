"""``push``: copy what this machine's index holds into the team index, file by file.

Each file's rows and its watermark (``files.state``: what the local index said of the file
when it was pushed) are replaced in one transaction (a few files share one), so a push killed
at any point leaves every file on the server either as the previous push left it or as the
index has it now, and the next push sends exactly the files whose watermark differs: no
duplicate, no gap. The files the index no longer holds are deleted from the server the same
way. A host's pushes take an advisory lock on its name, so two pushes of one host run one after
the other; pushes of different hosts touch different rows and never wait for each other.

Privacy tiers (``TIERS``): below ``full`` no entry text, raw JSON or prompt history leaves the
machine; below ``meta`` no title or first message either. Lowering a host's tier scrubs its
rows on the server in one transaction before anything else is pushed.

Secrets in the text that leaves (titles, first messages, entry text and JSON, prompts) are
replaced by ``[REDACTED:<kind>]`` (xcsh_store.secrets) unless the caller asks for the text as
it is; a file's watermark says which, so a push that redacts sends again what one that did not
had sent.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

import psycopg

from xcsh_store.agents import OTHER_AGENTS
from xcsh_store.index import SessionIndex
from xcsh_store.index.export import (
    ENTRY_COLUMNS,
    HISTORY_COLUMNS,
    SESSION_COLUMNS,
    FileState,
    entry_rows,
    history_rows,
    history_state,
    session_files,
    session_row,
)
from xcsh_store.paths import get_index_db_path, write_private_file
from xcsh_store.secrets import Redactor
from xcsh_store.team.server import TeamIndexError, connect, server_errors

TIERS = ("usage", "meta", "full")
DEFAULT_TIER = "full"
# The session columns only the meta tier and above carry.
META_COLUMNS = ("title", "first_message", "compaction_title")
# Entry columns that say something of a prompt's text (a hash can be matched against guesses).
TEXT_HASH_COLUMNS = ("prompt_hash",)
# Where the remembered --host lives: beside index.db.
HOST_FILE_NAME = "team-host"
# Appended to the watermark of a file pushed redacted (with the version of the redaction): a
# file pushed before redaction existed, or with --no-redact, differs and is pushed again.
REDACTED_MARK = "+redacted1"

_FILE_COPY = "COPY files (host, path, state, tier, indexed_bytes) FROM STDIN"
_SESSION_COPY = f"COPY sessions (host, path, {', '.join(SESSION_COLUMNS)}) FROM STDIN"
_ENTRY_COPY = f"COPY entries (host, path, {', '.join(ENTRY_COLUMNS)}, text, raw) FROM STDIN"
_REF_COPY = "COPY blob_refs (host, path, seq, hash) FROM STDIN"
_HISTORY_COPY = f"COPY history (host, {', '.join(HISTORY_COLUMNS)}) FROM STDIN"
_META_POSITIONS = [SESSION_COLUMNS.index(column) for column in META_COLUMNS]
_HASH_POSITIONS = [ENTRY_COLUMNS.index(column) for column in TEXT_HASH_COLUMNS]


@dataclass
class PushReport:
    """What one push did."""

    host: str
    tier: str
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
    redact: bool = True,
) -> PushReport:
    """Push the agent dir's index (``db_path``, default its index.db) to the team index at
    ``url`` as ``host``, its secrets redacted unless ``redact`` is false.

    ``tier`` defaults to the tier the host pushed with last (``full`` for a new host), so a
    push without ``--tier`` never raises what a host shares.
    """
    if tier is not None and tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}")
    redactor = Redactor() if redact else None
    with SessionIndex.open(agent_dir, db_path=db_path, read_only=True) as index:
        host = remembered_host(agent_dir, host, db_path)
        local = session_files(index)
        connection = connect(url)
        try:
            with server_errors(url, "pushing"):
                return _push(connection, index, local, host, tier, redactor)
        finally:
            connection.close()


def _push(
    connection: psycopg.Connection[Any],
    index: SessionIndex,
    local: dict[str, FileState],
    host: str,
    tier: str | None,
    redactor: Redactor | None,
) -> PushReport:
    connection.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"xcsh-store push {host}",))
    # A commit need not wait for its WAL to reach the disk: a server crash may lose the last
    # few commits, rows and watermarks together, and the next push sends those files again.
    connection.execute("SET synchronous_commit = off")
    connection.commit()
    report = _set_tier(connection, host, tier)
    report.files = len(local)
    remote = dict(
        connection.execute(
            "SELECT path, state || ' ' || tier FROM files WHERE host = %s", (host,)
        ).fetchall()
    )
    connection.commit()
    gone = sorted(remote.keys() - local.keys())
    if gone:
        with connection.transaction():
            connection.execute("DELETE FROM files WHERE host = %s AND path = ANY(%s)", (host, gone))
            _usage_changed(connection, host)
        report.deleted = len(gone)
    batch = _Batch(host, report.tier, redactor)
    for path, state in sorted(local.items()):
        if remote.get(path) == f"{batch.watermark(state)} {report.tier}":
            report.unchanged += 1
            continue
        batch.add(index, state)
        if batch.full():
            report.entries += batch.write(connection)
            report.pushed += len(batch.files)
            batch = _Batch(host, report.tier, redactor)
    report.entries += batch.write(connection)
    report.pushed += len(batch.files)
    if report.tier == "full":
        report.history = _push_history(connection, index, host, redactor)
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

    def __init__(self, host: str, tier: str, redactor: Redactor | None) -> None:
        self.host = host
        self.tier = tier
        self.redactor = redactor
        self.files: list[tuple[Any, ...]] = []
        self.sessions: list[tuple[Any, ...]] = []
        self.entries: list[tuple[Any, ...]] = []
        self.refs: list[tuple[Any, ...]] = []

    def full(self) -> bool:
        return len(self.entries) >= self.ENTRIES or len(self.files) >= self.FILES

    def watermark(self, state: FileState) -> str:
        return state.state + (REDACTED_MARK if self.redactor is not None else "")

    def add(self, index: SessionIndex, state: FileState) -> None:
        host, path, tier = self.host, state.path, self.tier
        self.files.append((host, path, self.watermark(state), tier, state.indexed_bytes))
        session = list(session_row(index, state.file_id))
        if tier == "usage":
            for position in _META_POSITIONS:
                session[position] = None
        elif self.redactor is not None:
            meta = self.redactor.texts([session[position] for position in _META_POSITIONS])
            for position, text in zip(_META_POSITIONS, meta, strict=True):
                session[position] = text
        self.sessions.append((host, path, *map(server_text, session)))
        rows = list(entry_rows(index, state.file_id, with_text=tier == "full"))
        texts = [(row.text, row.raw) for row in rows]
        if self.redactor is not None:
            texts = self.redactor.entries(texts)
        for row, (text, raw) in zip(rows, texts, strict=True):
            values = list(row.values)
            if tier == "usage":
                for position in _HASH_POSITIONS:
                    values[position] = None
            text, raw = server_text(text), server_text(raw)
            self.entries.append((host, path, *map(server_text, values), text, raw))
            self.refs += ((host, path, values[0], digest) for digest in row.blob_refs)

    def write(self, connection: psycopg.Connection[Any]) -> int:
        if not self.files:
            return 0
        paths = [row[1] for row in self.files]
        with connection.transaction():
            connection.execute(
                "DELETE FROM files WHERE host = %s AND path = ANY(%s)", (self.host, paths)
            )
            cursor = connection.cursor()
            for statement, rows in (
                (_FILE_COPY, self.files),
                (_SESSION_COPY, self.sessions),
                (_ENTRY_COPY, self.entries),
                (_REF_COPY, self.refs),
            ):
                with cursor.copy(statement) as copy:
                    for row in rows:
                        copy.write_row(row)
            _usage_changed(connection, self.host)
        return len(self.entries)


def _usage_changed(connection: psycopg.Connection[Any], host: str) -> None:
    """Mark the host's usage_rollup rows out of date (in the transaction that made them so)."""
    connection.execute(
        "UPDATE hosts SET usage_stale = true WHERE host = %s AND NOT usage_stale", (host,)
    )


def _set_tier(connection: psycopg.Connection[Any], host: str, tier: str | None) -> PushReport:
    """The host's row, with its tier; a lower tier than before scrubs what it no longer
    allows, in the same transaction."""
    with connection.transaction():
        row = connection.execute(
            "SELECT tier FROM hosts WHERE host = %s FOR UPDATE", (host,)
        ).fetchone()
        before = row[0] if row else None
        chosen = tier or before or DEFAULT_TIER
        report = PushReport(host=host, tier=chosen)
        if before is None:
            connection.execute("INSERT INTO hosts (host, tier) VALUES (%s, %s)", (host, chosen))
        elif TIERS.index(chosen) < TIERS.index(before):
            _scrub(connection, host, chosen)
            report.lowered_from = before
        elif chosen != before:
            connection.execute("UPDATE hosts SET tier = %s WHERE host = %s", (chosen, host))
    return report


def _scrub(connection: psycopg.Connection[Any], host: str, tier: str) -> None:
    """Remove from the host's rows what ``tier`` does not allow; the rows then are what a push
    at that tier writes, so their files keep their watermarks (with the new tier)."""
    connection.execute(
        "UPDATE entries SET text = NULL, raw = NULL WHERE host = %s AND (text IS NOT NULL"
        " OR raw IS NOT NULL)",
        (host,),
    )
    connection.execute("DELETE FROM history WHERE host = %s", (host,))
    if tier == "usage":
        clear = ", ".join(f"{column} = NULL" for column in META_COLUMNS)
        connection.execute(f"UPDATE sessions SET {clear} WHERE host = %s", (host,))
        clear = ", ".join(f"{column} = NULL" for column in TEXT_HASH_COLUMNS)
        connection.execute(f"UPDATE entries SET {clear} WHERE host = %s", (host,))
    connection.execute(
        "UPDATE hosts SET tier = %s, history_state = NULL WHERE host = %s", (tier, host)
    )
    connection.execute("UPDATE files SET tier = %s WHERE host = %s", (tier, host))


def _push_history(
    connection: psycopg.Connection[Any],
    index: SessionIndex,
    host: str,
    redactor: Redactor | None,
) -> int:
    """The host's prompt history, replaced whole when the local mirror changed (or was pushed
    redacted where it is not now, or the other way round)."""
    state = history_state(index) + (REDACTED_MARK if redactor is not None else "")
    row = connection.execute("SELECT history_state FROM hosts WHERE host = %s", (host,)).fetchone()
    connection.commit()
    if row and row[0] == state:
        return 0
    rows = history_rows(index)
    if redactor is not None:
        prompt = HISTORY_COLUMNS.index("prompt")
        rows = [(*row[:prompt], redactor.text(row[prompt]), *row[prompt + 1 :]) for row in rows]
    with connection.transaction():
        connection.execute("DELETE FROM history WHERE host = %s", (host,))
        with connection.cursor().copy(_HISTORY_COPY) as copy:
            for values in rows:
                copy.write_row((host, *map(server_text, values)))
        connection.execute("UPDATE hosts SET history_state = %s WHERE host = %s", (state, host))
    return len(rows)


def server_text(value: Any) -> Any:
    """A value PostgreSQL can store: text without NUL characters (a JSON \\u0000 escape in a
    message becomes one) and without lone surrogates (the index repairs those, but paths can
    hold them)."""
    if type(value) is not str or (value.isascii() and "\x00" not in value):
        return value
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value
