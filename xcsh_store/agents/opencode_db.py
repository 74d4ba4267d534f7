"""opencode 1.x's sessions in SQLite (``$XDG_DATA_HOME/opencode/opencode.db``, a release
channel's ``opencode-<channel>.db``), as the records of opencode.py's storage tree.

The schema, from opencode's ``packages/opencode/src/session/session.sql.ts`` (drizzle):
``session (id, project_id, parent_id, directory, title, version, time_created, time_updated,
...)``, ``message (id, session_id, time_created, time_updated, data)`` and ``part (id,
message_id, session_id, time_created, time_updated, data)``, where ``data`` is the JSON of the
message (or part) the storage tree keeps in its file, without its ids. opencode 1.x moved the
storage tree into these tables, so a session here reads as one of the tree does.

A session is ``<database>#<session id>``; its identity is the count of its messages and parts,
the newest ``time_updated`` of the session, its messages and its parts, and the sum of them all
(opencode sets it on every write), so a session is read again whole when any of its rows
changed. A message's
locator is twice its rowid, a tool part's twice its rowid plus one.

The database is opened read-only. While opencode has it open (its ``-wal`` beside it) it is
read as any reader of a WAL database reads it, never blocking opencode; else it is opened as
``immutable``, which creates no ``-wal``/``-shm`` beside it (a read-only connection to a WAL
database would, and could not remove them).
"""

from __future__ import annotations

import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing
from typing import Any
from urllib.parse import quote

from xcsh_store.agents.base import Record, Source
from xcsh_store.format.jsonl import parse_document

DATABASE_NAME = re.compile(r"opencode(-[A-Za-z0-9_.-]+)?\.db")
SESSION_RECORD = "opencode-session"
MESSAGE_RECORD = "opencode-message"
TOOL_RECORD = "opencode-tool"
_SEPARATOR = "#"
_NS_PER_MS = 1_000_000


def database_session(path: str) -> tuple[str, str] | None:
    """(database, session id) of a ``<database>#<session id>`` path, None for a file's path."""
    database, separator, session_id = path.rpartition(_SEPARATOR)
    if separator and session_id and DATABASE_NAME.fullmatch(os.path.basename(database)):
        return database, session_id
    return None


def _open(database: str) -> sqlite3.Connection:
    if not os.path.isfile(database):
        raise FileNotFoundError(database)
    in_use = any(os.path.exists(database + suffix) for suffix in ("-wal", "-shm"))
    mode = "mode=ro" if in_use else "mode=ro&immutable=1"
    return sqlite3.connect(f"file:{quote(os.path.abspath(database))}?{mode}", uri=True)


def database_sources(database: str) -> Iterator[Source]:
    """Every session of the database, with its identity."""
    inode = os.stat(database).st_ino
    with closing(_open(database)) as connection:
        rows = connection.execute(
            "SELECT s.id, s.time_updated, m.count, m.newest, m.total, p.count, p.newest, p.total"
            " FROM session AS s"
            " LEFT JOIN (SELECT session_id, count(*) AS count, max(time_updated) AS newest,"
            "  total(time_updated) AS total FROM message GROUP BY session_id) AS m"
            "  ON m.session_id = s.id"
            " LEFT JOIN (SELECT session_id, count(*) AS count, max(time_updated) AS newest,"
            "  total(time_updated) AS total FROM part GROUP BY session_id) AS p"
            "  ON p.session_id = s.id"
            " ORDER BY s.id"
        ).fetchall()
    for session_id, updated, *figures in rows:
        messages, newest_message, message_times, parts, newest_part, part_times = figures
        newest = max(time or 0 for time in (updated, newest_message, newest_part))
        # The sum of every row's time_updated changes when any row is written again, even
        # one older than the session's newest.
        written = int((updated or 0) + (message_times or 0) + (part_times or 0))
        yield Source(
            f"{database}{_SEPARATOR}{session_id}",
            (messages or 0) + (parts or 0),
            int(newest) * _NS_PER_MS,
            inode,
            written,
        )


def database_records(database: str, session_id: str, parts: bool = True) -> Iterator[Record]:
    """The session's records, as opencode.py reads a session of the storage tree; without
    ``parts``, its messages without their parts (and no tool records: what its usage comes
    from, OpencodeReader.usage_records)."""
    with closing(_open(database)) as connection:
        found = connection.execute(
            "SELECT id, parent_id, directory, title, version, time_created, project_id"
            " FROM session WHERE id = ?",
            (session_id,),
        ).fetchall()
        if not found:
            raise FileNotFoundError(f"{database}{_SEPARATOR}{session_id}")
        messages = connection.execute(
            "SELECT rowid, id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
            (session_id,),
        ).fetchall()
        part_rows = (
            connection.execute(
                "SELECT rowid, message_id, id, data FROM part WHERE session_id = ?"
                " ORDER BY message_id, id",
                (session_id,),
            ).fetchall()
            if parts
            else []
        )
    key, parent, directory, title, version, created, project = found[0]
    yield 0, {
        "type": SESSION_RECORD, "id": key, "parentID": parent, "directory": directory,
        "title": title, "version": version, "projectID": project, "time": {"created": created},
    }  # fmt: skip
    by_message: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for rowid, message_id, part_id, data in part_rows:
        value = _data(data)
        if value is not None:
            by_message.setdefault(message_id, []).append((rowid, {**value, "id": part_id}))
    for rowid, message_id, data in messages:
        info = _data(data)
        if info is None:
            continue
        own = by_message.get(message_id, [])
        yield (
            rowid * 2,
            {
                "type": MESSAGE_RECORD,
                "info": {**info, "id": message_id},
                "parts": [part for _, part in own],
            },
        )
        for part_rowid, part in own:
            if part.get("type") == "tool":
                yield part_rowid * 2 + 1, {"type": TOOL_RECORD, "part": part}


# opencode's tables that hold a session, with the column that names the session in each.
_SESSION_TABLES = (("session", "id"), ("message", "session_id"), ("part", "session_id"))


def session_database(database: str, session_id: str) -> bytes:
    """The bytes of a database of the session's rows alone: its row of ``session``, its
    messages and its parts, in opencode's own tables (their statements copied) and with their
    own rowids (the records' locators). What the store's archive keeps of a session of the
    database: named as the database is, it reads as the session did (``<copy>#<id>``)."""
    with closing(_open(database)) as source:
        statements = dict(
            source.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
                " AND name IN ('session', 'message', 'part')"
            ).fetchall()
        )
        tables = []
        for table, column in _SESSION_TABLES:
            # (Table and column names are the constants above, never the database's.)
            cursor = source.execute(
                f"SELECT rowid AS rowid, * FROM {table} WHERE {column} = ? ORDER BY rowid",
                (session_id,),
            )
            names = [description[0] for description in cursor.description]
            tables.append((table, names, cursor.fetchall()))
    if not tables[0][2]:
        raise FileNotFoundError(f"{database}{_SEPARATOR}{session_id}")
    with tempfile.TemporaryDirectory(prefix="xcsh-store-opencode-") as folder:
        copy = os.path.join(folder, "session.db")
        with closing(sqlite3.connect(copy)) as target:
            for table, names, rows in tables:
                target.execute(statements[table])
                quoted = ", ".join(f'"{name}"' for name in names)
                marks = ", ".join("?" * len(names))
                target.executemany(f"INSERT INTO {table} ({quoted}) VALUES ({marks})", rows)
            target.commit()
        with open(copy, "rb") as stream:
            return stream.read()


def _data(data: Any) -> dict[str, Any] | None:
    """A ``data`` column's JSON object (None for one that is not)."""
    try:
        value = parse_document(data)
    except (ValueError, TypeError):
        return None
    return value if type(value) is dict else None
