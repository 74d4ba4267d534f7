"""``push``: copy what this machine's index holds into the team index, file by file.

Each file's rows and its watermark (``files.state``: what the local index said of the file
when it was pushed) change in one transaction (a few files share one), so a push killed at any
point leaves every file on the server either as the previous push left it or as the index has
it now, and the next push sends exactly the files whose watermark differs: no duplicate, no
gap. A file the server holds as this machine last pushed it (ledger.py) sends only the entries
that are new or changed since, and deletes those that went (a file that grew: its new entries,
its session row and watermark); any other file's rows are replaced whole (a rewrite, a
truncation, a file pushed by another client or before the ledger). Where the server turns out
not to hold what the ledger says (an entry sent again is a duplicate, or the count of a file's
entries is not its index's), the transaction is undone, the ledger's rows of its files are
forgotten and the files are sent whole. The usage_rollup rows of the sessions a transaction
touched are made again in it, so one appended entry costs a few row writes whatever the size
of the file and of the host. The files the index no longer holds are deleted from the server
the same way. A host's pushes take an advisory lock on its name, so two pushes of one host run
one after the other; pushes of different hosts touch different rows and never wait for each
other.

A host is pushed by one store (an index, named by a fingerprint of its host key): a push from
another (a second agent dir pushing under the same machine name) would delete the sessions the
first pushed, so it is refused unless it takes the host over (``take_over``).

What leaves at each privacy tier, the keyed watermarks and the redaction of secrets in the text
that leaves are disclosure.py's. A push
without ``tier`` or ``redact_paths`` keeps the host's choice on the server, so it never raises
what a host shares; lowering a host's tier scrubs its rows on the server in one transaction
before anything else is pushed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
from dataclasses import dataclass
from typing import Any

import psycopg

from xcsh_store.index import (
    ENTRY_COLUMNS,
    HISTORY_COLUMNS,
    QUOTA_COLUMNS,
    SESSION_COLUMNS,
    FileState,
    SessionIndex,
    entry_marks,
    entry_rows,
    history_rows,
    history_state,
    one_state,
    quota_rows,
    session_files,
    session_row,
)
from xcsh_store.paths import get_index_db_path, write_private_file
from xcsh_store.secrets import Redactor
from xcsh_store.team.disclosure import (
    META_COLUMNS,
    TEXT_HASH_COLUMNS,
    TIERS,
    Disclosure,
    host_key,
    outgoing_text,
)
from xcsh_store.team.errors import TeamIndexError
from xcsh_store.team.ledger import Pushed, PushLedger
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
    "quota_observations": f"host, path, {', '.join(QUOTA_COLUMNS)}",
    "budgets": "host, period, scope, name, amount, warn_percent",
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
    appended: int = 0  # of those, files that sent only their new or changed entries
    deleted: int = 0  # files removed from the server
    unchanged: int = 0
    entries: int = 0  # entry rows written
    quota: int = 0  # rate-limit readings written (every tier: they hold no text)
    budgets: int | None = None  # budgets written when they changed (None: unchanged)
    budgets_error: str | None = None  # the config or budgets.toml unreadable: none sent
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
    redactor: Redactor | None = None,
    take_over: bool = False,
) -> PushReport:
    """Push the agent dir's index (``db_path``, default its index.db) to the team index at
    ``url`` (a libpq connection string: server.py) as ``host``, the secrets in its text
    redacted unless ``redact`` is false (by ``redactor`` when given: one made once serves
    every push of a watch; else by one made when the first text leaves).

    ``tier`` and ``redact_paths`` default to the host's choice on the server (``full`` and
    paths for a new host), so a push without them never raises what a host shares. A host
    another store pushes is refused (TeamIndexError) unless ``take_over``: this store's
    sessions then replace that store's.
    """
    if tier is not None and tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}")
    with SessionIndex.open(agent_dir, db_path=db_path, read_only=True) as index:
        host = remembered_host(agent_dir, host, db_path)
        folder = os.path.dirname(index.db_path)
        key = host_key(folder)
        local = session_files(index)
        connection = connect(url)
        ledger = PushLedger(folder)
        try:
            with server_errors(url, "pushing", needs="write"):
                return _push(
                    connection,
                    index,
                    ledger,
                    local,
                    _Host(host, store_of(key), take_over),
                    tier,
                    redact_paths,
                    Disclosure("usage", key, redact=redact, loaded=redactor),
                )
        finally:
            ledger.close()
            connection.close()


def store_of(key: bytes) -> str:
    """The name of the store whose host key is ``key``, as the server keeps it (hosts.store):
    a fingerprint that says nothing of the key."""
    return hashlib.sha256(b"xcsh-store store\0" + key).hexdigest()[:16]


@dataclass(frozen=True)
class _Host:
    """The host a push writes, the store pushing it, and whether it may take the host over
    from another store."""

    name: str
    store: str
    take_over: bool = False


def _push(
    connection: psycopg.Connection[Any],
    index: SessionIndex,
    ledger: PushLedger,
    local: dict[str, FileState],
    pushing: _Host,
    tier: str | None,
    redact_paths: bool | None,
    chosen: Disclosure,
) -> PushReport:
    """``push`` on an open connection; ``chosen`` holds the key and the redaction choice (its
    tier and path choice are the host's, read here)."""
    host = pushing.name
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
    report = _set_choices(connection, pushing, tier, redact_paths)
    disclosure = dataclasses.replace(chosen, tier=report.tier, redact_paths=report.redact_paths)
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
        ledger.forget(host, gone)
        report.deleted = len(gone)
    batch = _Batch(host, disclosure, staged)
    for path, state in sorted(outgoing.items()):
        if remote.get(path) in {
            f"{watermark} {report.tier}" for watermark in disclosure.current(path, state.state)
        }:
            report.unchanged += 1
            continue
        batch.add(index, path, state, ledger.pushed(host, outgoing_text(path)), remote.get(path))
        if batch.full():
            batch.write(connection, index, ledger, report)
            batch = _Batch(host, disclosure, staged)
    batch.write(connection, index, ledger, report)
    if disclosure.at_least("full"):
        report.history = _push_history(connection, index, host, disclosure, staged)
    _push_budgets(connection, host, disclosure, staged, report)
    with connection.transaction():
        connection.execute("UPDATE hosts SET pushed_at = now() WHERE host = %s", (host,))
        _roll_up_usage(connection, host)
    return report


# usage_rollup's rows (in its columns' order) summed from rows of usage_entries' columns.
_ROLLUP = (
    "SELECT host, CASE WHEN timestamp ~ '^\\d{4}-\\d{2}-\\d{2}'"
    " THEN substr(timestamp, 1, 10) END AS day, provider, model, project_dir, session_id,"
    " agent, parent_session_id, count(*),"
    # agents/prices/costs.py FACTS_SQL's counts, as the local index sums them.
    " count(*) FILTER (WHERE cost_estimated = 1 AND cost > 0),"
    " count(*) FILTER (WHERE cost IS NULL),"
    " sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),"
    " sum(cache_write_tokens), sum(cost),"
    " count(*) FILTER (WHERE cost = 0 AND (cost_estimated = 1 OR list_cost = 0)),"
    " count(*) FILTER (WHERE list_cost > 0), coalesce(sum(list_cost), 0) FROM {source}"
    " GROUP BY host, day, provider, model, project_dir, session_id, agent, parent_session_id"
)
# The key usage_entries partitions entries by, as entries_usage_copies indexes it.
_COPY_KEY = "coalesce({0}.id, ''), coalesce({0}.timestamp, '')"


def _roll_up_usage(connection: psycopg.Connection[Any], host: str) -> None:
    """The host's usage_rollup rows made again, when they were marked out of date (a change of
    path choice removes them all)."""
    stale = connection.execute("SELECT usage_stale FROM hosts WHERE host = %s", (host,)).fetchone()
    if not stale or not stale[0]:
        return
    connection.execute("DELETE FROM usage_rollup WHERE host = %s", (host,))
    connection.execute(
        "INSERT INTO usage_rollup "
        + _ROLLUP.replace("{source}", "usage_entries WHERE host = %(host)s"),
        {"host": host},
    )
    connection.execute("UPDATE hosts SET usage_stale = false WHERE host = %s", (host,))


def _sessions_touched(
    connection: psycopg.Connection[Any],
    host: str,
    whole: list[str],
    rows: list[tuple[str, int]],
    files: list[str],
) -> set[str]:
    """The sessions whose usage_rollup rows may change when the entries of the files at
    ``whole`` and those at ``rows`` (path, seq) come or go, or the session rows of ``files``
    change: the sessions of those files, and those holding another copy of one of those
    entries with usage (which copy counts may change). Each step is a lookup by an index,
    driven by the rows given."""
    keys = connection.execute(
        f"SELECT {_COPY_KEY.format('e')} FROM entries AS e WHERE e.host = %(h)s"
        " AND e.path = ANY(%(whole)s) AND e.input_tokens IS NOT NULL"
        f" UNION SELECT {_COPY_KEY.format('e')} FROM unnest(%(paths)s::text[], %(seqs)s::int[])"
        " AS r (path, seq) JOIN entries AS e ON e.host = %(h)s AND e.path = r.path"
        " AND e.seq = r.seq WHERE e.input_tokens IS NOT NULL",
        {
            "h": host,
            "whole": whole,
            "paths": [path for path, _ in rows],
            "seqs": [seq for _, seq in rows],
        },
    ).fetchall()
    found = connection.execute(
        "SELECT s.session_id FROM sessions AS s WHERE s.host = %(h)s AND s.path = ANY(%(f)s)"
        " UNION SELECT s.session_id FROM unnest(%(ids)s::text[], %(ts)s::text[]) AS k (id, ts)"
        " CROSS JOIN LATERAL (SELECT e.path FROM entries AS e WHERE e.host = %(h)s"
        f"  AND e.input_tokens IS NOT NULL AND ({_COPY_KEY.format('e')}) = (k.id, k.ts)) AS c"
        " JOIN sessions AS s ON s.host = %(h)s AND s.path = c.path",
        {
            "h": host,
            "f": files,
            "ids": [key for key, _ in keys],
            "ts": [timestamp for _, timestamp in keys],
        },
    ).fetchall()
    return {session_id for (session_id,) in found}


def _refresh_rollup(connection: psycopg.Connection[Any], host: str, sessions: set[str]) -> None:
    """The usage_rollup rows of ``sessions`` made again from their entries (each entry counted
    in the session of its oldest copy, as usage_entries has it); only the rows that differ are
    written."""
    if not sessions:
        return
    # The keys of the sessions' entries, then every copy of each (a lookup by
    # entries_usage_copies per key, whatever the planner thinks of the tables' sizes), numbered
    # as usage_entries numbers them.
    numbered = (
        "(SELECT c.*, row_number() OVER (PARTITION BY c.id, c.timestamp"
        "  ORDER BY c.created_at, c.path, c.seq) AS copy_number"
        f" FROM (SELECT DISTINCT {_COPY_KEY.format('m')} FROM sessions AS ms JOIN entries AS m"
        "  ON m.host = ms.host AND m.path = ms.path WHERE ms.host = %(h)s"
        "  AND ms.session_id = ANY(%(s)s) AND m.input_tokens IS NOT NULL) AS k (id, ts)"
        " CROSS JOIN LATERAL (SELECT e.host, e.path, e.seq, e.id, e.timestamp, e.provider,"
        "  e.model, s.project_dir, s.session_id, s.agent, s.parent_session_id, s.created_at,"
        "  e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens, e.cost,"
        "  e.cost_estimated, e.list_cost"
        "  FROM entries AS e JOIN sessions AS s ON s.host = e.host AND s.path = e.path"
        "  WHERE e.host = %(h)s AND e.input_tokens IS NOT NULL"
        f"  AND ({_COPY_KEY.format('e')}) = (k.id, k.ts)) AS c) AS numbered"
        " WHERE copy_number = 1 AND session_id = ANY(%(s)s)"
    )
    fresh = _ROLLUP.replace("{source}", numbered)
    connection.execute(
        f"WITH fresh AS ({fresh}),"
        " gone AS (DELETE FROM usage_rollup AS r WHERE r.host = %(h)s"
        "  AND r.session_id = ANY(%(s)s) AND NOT EXISTS (SELECT FROM fresh AS f"
        "  WHERE ROW(f.*) IS NOT DISTINCT FROM ROW(r.*)))"
        " INSERT INTO usage_rollup SELECT * FROM fresh AS f WHERE NOT EXISTS (SELECT FROM"
        " usage_rollup AS r WHERE r.host = %(h)s AND r.session_id = f.session_id"
        " AND ROW(r.*) IS NOT DISTINCT FROM ROW(f.*))",
        {"h": host, "s": sorted(sessions)},
    )


class _LedgerConflictError(Exception):
    """The server does not hold the entries the ledger says it holds."""


class _Batch:
    """The rows of a few changed files, written in one transaction: each file's new or changed
    entries and its watermark (a file the server holds as the ledger says), or all its rows
    (any other), or (the transaction lost) nothing."""

    # A transaction holds about this many entries (a bigger file makes one of its own):
    # fewer commits, and memory that stays small.
    ENTRIES = 2_000
    FILES = 200

    def __init__(self, host: str, disclosure: Disclosure, staged: bool) -> None:
        self.host = host
        self.disclosure = disclosure
        self.staged = staged
        # Files replaced whole: their rows for COPY.
        self.files: list[tuple[Any, ...]] = []
        self.sessions: list[tuple[Any, ...]] = []
        # Files that send what changed: their watermark and session row, for UPDATE, and the
        # (path, seq) of the entries the server holds that went or changed.
        self.updated: list[tuple[Any, ...]] = []
        self.removed: list[tuple[str, int]] = []
        self.added: list[tuple[str, int]] = []
        self.entries: list[tuple[Any, ...]] = []
        self.refs: list[tuple[Any, ...]] = []
        # The rate-limit readings of the files replaced whole, and of those that send what
        # changed (compared with the server's: only the readings that differ are written).
        self.quota: list[tuple[Any, ...]] = []
        self.quota_updated: list[tuple[Any, ...]] = []
        # What the ledger records once the transaction is committed.
        self.ledger: list[tuple[str, Pushed]] = []
        # The files as add() was given them, to send whole if the ledger was wrong, and the
        # count of entries the server holds of each file that sends what changed, once it has.
        self.sources: list[tuple[str, FileState, str | None]] = []
        self.counts: dict[str, int] = {}
        # Whether a file the server does not hold yet is among them (a first push).
        self.new_files = False
        # How many readings the transaction wrote (once written).
        self.quota_written = 0

    def full(self) -> bool:
        count = len(self.files) + len(self.updated)
        return len(self.entries) >= self.ENTRIES or count >= self.FILES

    def add(
        self,
        index: SessionIndex,
        path: str,
        state: FileState,
        pushed: Pushed | None,
        remote: str | None,
    ) -> None:
        """The rows of the file ``state`` describes, as ``path`` (its name on the server),
        which ``remote`` (its watermark and tier there) and ``pushed`` (the ledger's record
        of it) say the server holds."""
        host, disclosure = self.host, self.disclosure
        self.sources.append((path, state, remote))
        path = outgoing_text(path)
        watermark = disclosure.watermark(path, state.state)
        with one_state(index):
            marks = entry_marks(index, state.file_id)
            session = disclosure.session(session_row(index, state.file_id))
            changes = None
            if pushed is not None and remote == f"{pushed.watermark} {pushed.tier}":
                changes = _changes(pushed, marks, disclosure.form)
            readings = quota_rows(index, state.file_id)
            entries = list(
                entry_rows(
                    index,
                    state.file_id,
                    disclosure.at_least("full"),
                    seqs=None if changes is None else changes[0],
                )
            )
        session_values = [outgoing_text(value) for value in session]
        self.new_files |= remote is None
        if changes is None:
            self.files.append((host, path, watermark, disclosure.tier))
            self.sessions.append((host, path, *session_values))
        else:
            self.updated.append((watermark, disclosure.tier, *session_values, host, path))
            self.counts[path] = len(marks)
            self.added += ((path, seq) for seq in changes[0])
            self.removed += ((path, seq) for seq in changes[1])
        kept = self.quota if changes is None else self.quota_updated
        kept += ((host, path, *reading) for reading in readings)
        for entry, (values, text, raw) in zip(entries, disclosure.entries(entries), strict=True):
            self.entries.append((host, path, *map(outgoing_text, values), text, raw))
            self.refs += ((host, path, values[0], digest) for digest in disclosure.blob_refs(entry))
        self.ledger.append((path, Pushed(watermark, disclosure.tier, disclosure.form, marks)))

    def write(
        self,
        connection: psycopg.Connection[Any],
        index: SessionIndex,
        ledger: PushLedger,
        report: PushReport,
    ) -> None:
        """Write the batch, then record it in the ledger. Where the server turns out not to
        hold what the ledger said of a file that sends what changed (an entry sent is already
        there, or the count of its entries is not the index's), the transaction is undone, the
        ledger's rows of those files forgotten, and the batch written with every file whole."""
        if not self.ledger:
            return
        try:
            self._write(connection)
        except (psycopg.errors.UniqueViolation, _LedgerConflictError):
            if not self.updated:
                raise
            ledger.forget(self.host, [row[-1] for row in self.updated])
            whole = _Batch(self.host, self.disclosure, self.staged)
            for path, state, remote in self.sources:
                whole.add(index, path, state, None, remote)
            whole.write(connection, index, ledger, report)
            return
        ledger.record(self.host, self.ledger)
        report.pushed += len(self.ledger)
        report.appended += len(self.updated)
        report.entries += len(self.entries)
        report.quota += self.quota_written

    def _write(self, connection: psycopg.Connection[Any]) -> None:
        """The batch's rows in one transaction; _LedgerConflictError (the transaction undone)
        when a file that sends what changed does not then hold as many entries as its index."""
        host = self.host
        paths = [row[1] for row in self.files]
        files = paths + [row[-1] for row in self.updated]
        with connection.transaction():
            # Files new to the server (a first push) mark the host's rollup out of date, made
            # again once at the end of the push (most rows change, and the tables may have no
            # statistics yet); files it holds make their sessions' rollup rows again here.
            touched = set()
            if self.new_files:
                _usage_changed(connection, host)
            else:
                touched = _sessions_touched(connection, host, paths, self.removed, files)
            connection.execute(
                "DELETE FROM files WHERE host = %s AND path = ANY(%s)", (host, paths)
            )
            if self.removed:
                for table in ("entries", "blob_refs"):
                    connection.execute(
                        f"DELETE FROM {table} AS t USING unnest(%s::text[], %s::int[])"
                        " AS r (path, seq) WHERE t.host = %s AND t.path = r.path"
                        " AND t.seq = r.seq",
                        ([p for p, _ in self.removed], [q for _, q in self.removed], host),
                    )
            quota = self.quota
            if self.updated:
                quota = quota + _changed_readings(
                    connection, host, [row[-1] for row in self.updated], self.quota_updated
                )
                with connection.cursor() as cursor:
                    cursor.executemany(_UPDATE_FILE, [row[:2] + row[-2:] for row in self.updated])
                    cursor.executemany(_UPDATE_SESSION, [row[2:] for row in self.updated])
            for table, rows in (
                ("files", self.files),
                ("sessions", self.sessions),
                ("entries", self.entries),
                ("blob_refs", self.refs),
                ("quota_observations", quota),
            ):
                if rows:
                    _copy(connection, table, rows, self.staged)
            if self.counts:
                held = dict(
                    connection.execute(
                        "SELECT path, count(*) FROM entries WHERE host = %s AND path = ANY(%s)"
                        " GROUP BY path",
                        (host, list(self.counts)),
                    ).fetchall()
                )
                if any(held.get(path, 0) != count for path, count in self.counts.items()):
                    raise _LedgerConflictError
            if not self.new_files:
                touched |= _sessions_touched(connection, host, paths, self.added, files)
                _refresh_rollup(connection, host, touched)
        self.quota_written = len(quota)


def _changed_readings(
    connection: psycopg.Connection[Any],
    host: str,
    paths: list[str],
    readings: list[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    """The readings of the files at ``paths`` that the server does not hold as ``readings``
    has them (new or changed), to write; those it holds and ``readings`` does not (gone or
    changed) are deleted here. A file that grew by a line writes that line's readings."""
    held = set(
        connection.execute(
            f"SELECT {_COLUMNS['quota_observations']} FROM quota_observations"
            " WHERE host = %s AND path = ANY(%s)",
            (host, paths),
        ).fetchall()
    )
    gone = held - set(readings)
    if gone:
        connection.execute(
            "DELETE FROM quota_observations AS q USING unnest(%s::text[], %s::int[], %s::text[])"
            " AS g (path, seq, slot) WHERE q.host = %s AND q.path = g.path AND q.seq = g.seq"
            " AND q.slot = g.slot",
            ([row[1] for row in gone], [row[2] for row in gone], [row[3] for row in gone], host),
        )
    return [reading for reading in readings if reading not in held]


def _changes(
    pushed: Pushed, marks: dict[int, int], form: str
) -> tuple[list[int], list[int]] | None:
    """The seqs of the entries to send of a file the server holds as ``pushed`` says, now
    ``marks`` (those new or changed), and of those the server holds to delete (gone or
    changed); None when the file is better replaced whole: the form of its rows changed (its
    tier, or the redaction: text sent as it was must be sent again redacted), or most of its
    entries did (a re-read of the whole file, after a rewrite or a truncation, gives each
    entry a new key)."""
    if pushed.form != form:
        return None
    before = pushed.marks
    added = [seq for seq, mark in marks.items() if before.get(seq) != mark]
    removed = [seq for seq, mark in before.items() if marks.get(seq) != mark]
    if len(added) + len(removed) > len(marks):
        return None
    return sorted(added), sorted(removed)


_UPDATE_FILE = (
    "UPDATE files SET state = %s, tier = %s, pushed_at = now() WHERE host = %s AND path = %s"
)
_UPDATE_SESSION = (
    f"UPDATE sessions SET ({', '.join(SESSION_COLUMNS)}) ="
    f" ({', '.join(['%s'] * len(SESSION_COLUMNS))}) WHERE host = %s AND path = %s"
)


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
    connection: psycopg.Connection[Any],
    pushing: _Host,
    tier: str | None,
    redact_paths: bool | None,
) -> PushReport:
    """The host's row, with its tier, path choice and store. A host another store pushes is
    refused (unless taken over). A lower tier than before scrubs what it no longer allows, and
    a change of path choice removes every row of the host that names a path (all of them: the
    push then sends them again), in the same transaction."""
    host = pushing.name
    with connection.transaction():
        row = connection.execute(
            "SELECT tier, redact_paths, store FROM hosts WHERE host = %s FOR UPDATE", (host,)
        ).fetchone()
        before, redacted_before, store = row or (None, False, None)
        if store not in (None, pushing.store) and not pushing.take_over:
            raise TeamIndexError(
                f"Host {host!r} on the team server is pushed by another store (another agent"
                " dir, or one whose host key was made again): a push from here would delete"
                " the sessions it pushed. Push as another host (--host NAME), or with"
                " --take-over to replace them with this store's"
            )
        if row is not None and store != pushing.store:
            connection.execute("UPDATE hosts SET store = %s WHERE host = %s", (pushing.store, host))
        chosen = tier or before or DEFAULT_TIER
        redact = redacted_before if redact_paths is None else redact_paths
        report = PushReport(host=host, tier=chosen, redact_paths=redact)
        if before is None:
            connection.execute(
                "INSERT INTO hosts (host, tier, redact_paths, store) VALUES (%s, %s, %s, %s)",
                (host, chosen, redact, pushing.store),
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


def _push_budgets(
    connection: psycopg.Connection[Any],
    host: str,
    disclosure: Disclosure,
    staged: bool,
    report: PushReport,
) -> None:
    """The host's budgets (the config file's and budgets.toml's: glance/settings.py), replaced
    whole when they changed since the last push (hosts.budgets_state); a project budget's folder
    labelled when the host's paths are. Unreadable settings send nothing and say why (the
    server keeps the budgets it had)."""
    from xcsh_store.glance.settings import LimitsConfigError, read_limits

    try:
        limits = read_limits()
    except LimitsConfigError as error:
        report.budgets_error = str(error)
        return
    rows = sorted(
        (
            host,
            budget.period,
            budget.scope,
            outgoing_text(
                disclosure.directory(budget.name) if budget.scope == "project" else budget.name
            )
            or "",
            budget.amount,
            limits.warn_percent,
        )
        for budget in limits.budgets
    )
    state = hashlib.sha256(repr(rows).encode()).hexdigest()
    row = connection.execute("SELECT budgets_state FROM hosts WHERE host = %s", (host,)).fetchone()
    connection.commit()
    if row and row[0] == state:
        return
    with connection.transaction():
        connection.execute("DELETE FROM budgets WHERE host = %s", (host,))
        if rows:
            _copy(connection, "budgets", rows, staged)
        connection.execute("UPDATE hosts SET budgets_state = %s WHERE host = %s", (state, host))
    report.budgets = len(rows)
