"""The prompt history inside the index: mirrored from history.db and from Claude Code's and
Codex's history.jsonl, searched with session prompts."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import apsw

from xcsh_store.agents import history_prompt, reader_named
from xcsh_store.errors import HistoryError
from xcsh_store.files import open_regular_file
from xcsh_store.format.jsonl import iter_lines, parse_line
from xcsh_store.index.db import ReaderConnection, get_meta, set_meta, transaction
from xcsh_store.index.model.columns import PROMPT_ROW, names
from xcsh_store.index.model.facts import prompt_hash
from xcsh_store.index.read.questions import PromptQuery
from xcsh_store.index.read.sessions import agents_condition, host_of
from xcsh_store.index.read.texts import entry_texts
from xcsh_store.js import well_formed
from xcsh_store.times import iso_seconds, timestamp_to_millis

log = logging.getLogger("xcsh_store")

MIRROR_BATCH = 5_000
# The prompt rows (model/columns.py) as mirrored: every column read from history.db's table of
# the same name, but the hash, made here from the prompt.
_MIRRORED = tuple(name for name in names(PROMPT_ROW) if name != "prompt_hash")
_PROMPT = _MIRRORED.index("prompt")
_MIRROR = (
    f"INSERT INTO history ({', '.join(_MIRRORED)}, prompt_hash)"
    f" VALUES ({', '.join('?' * (len(_MIRRORED) + 1))})"
)


def mirror_history(connection: apsw.Connection, history_db: str) -> int:
    """Copy new prompts from ``history.db``; re-copy everything when rows were deleted there.

    Returns how many prompts were copied. history.db is opened read-only and never changed; it
    is copied from only when its own content says it changed since the last mirror
    (:func:`_content_signature`). When it cannot be read the mirror is left as it was and
    HistoryError is raised; errors of the index itself propagate unchanged (a damaged index must
    be rebuilt, not blamed on history.db).
    """
    if not os.path.exists(history_db):
        if get_meta(connection, "history_signature") is None:
            return 0
        with transaction(connection):
            connection.execute("DELETE FROM history")
            set_meta(connection, "history_signature", None)
        return 0
    with _reading(history_db):
        source = ReaderConnection(history_db)
    try:
        source.set_busy_timeout(5_000)
        with _reading(history_db):
            signature = _content_signature(source, history_db)
        if signature == get_meta(connection, "history_signature"):
            return 0
        return _copy_new_prompts(connection, source, history_db, signature)
    finally:
        source.close()


def _copy_new_prompts(
    connection: apsw.Connection, source: apsw.Connection, history_db: str, signature: str
) -> int:
    mirrored_count, mirrored_max = connection.execute(
        "SELECT count(*), coalesce(max(id), 0) FROM history"
    ).fetchall()[0]
    with _reading(history_db):
        (still_there,) = source.execute(
            "SELECT count(*) FROM history WHERE id <= ?", (mirrored_max,)
        ).fetchall()[0]
    copied = 0
    with transaction(connection):
        if still_there != mirrored_count:
            connection.execute("DELETE FROM history")
            mirrored_max = 0
        with _reading(history_db):
            cursor = source.execute(
                f"SELECT {', '.join(_MIRRORED)} FROM history WHERE id > ? ORDER BY id",
                (mirrored_max,),
            )
        while True:
            with _reading(history_db):
                batch = list(itertools.islice(cursor, MIRROR_BATCH))
            if not batch:
                break
            connection.executemany(_MIRROR, [(*row, prompt_hash(row[_PROMPT])) for row in batch])
            copied += len(batch)
        set_meta(connection, "history_signature", signature)
    return copied


def _content_signature(source: apsw.Connection, history_db: str) -> str:
    """What changes whenever a prompt is added to or deleted from history.db: its inode (a
    file put in its place), the AUTOINCREMENT counter (every insert moves it, never back), the
    row count and the newest id (deletes).

    Read from the database, not from the file's size and time: a WAL that SQLite reset after a
    checkpoint keeps its size, and a modification time moves in coarse ticks, so a prompt
    written between two syncs could leave both as they were (and stay out of the mirror).
    """
    ((count, newest),) = source.execute("SELECT count(*), coalesce(max(id), 0) FROM history")
    counters: list[tuple[int]] = []
    if source.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchall():
        counters = list(source.execute("SELECT seq FROM sqlite_sequence WHERE name = 'history'"))
    counter = counters[0][0] if counters else None
    return f"{os.stat(history_db).st_ino}:{counter}:{count}:{newest}"


def mirror_agent_history(connection: apsw.Connection, files: dict[str, str | None]) -> int:
    """Copy the prompts of other agents' history files (agent -> path), each read again whole
    when it changed, opened read-only; the prompts of a missing file (or of None: not to be
    read) go. Returns how many prompts were copied. A line that is not a prompt is skipped."""
    copied = 0
    for agent, path in files.items():
        reader = reader_named(agent)
        assert reader is not None
        key = f"agent_history_signature:{agent}"
        signature = None if path is None else _file_signature(path)
        if signature == get_meta(connection, key):
            continue
        prompts = []
        if path is not None and signature is not None:
            try:
                with open_regular_file(path) as stream:
                    for _, line in iter_lines(stream):
                        for value in parse_line(line):
                            found = history_prompt(reader, value)
                            if found is not None:
                                prompts.append(found)
            except OSError as error:
                log.warning("%s could not be read: %s", path, error)
                continue
        with transaction(connection):
            connection.execute("DELETE FROM agent_prompts WHERE agent = ?", (agent,))
            connection.executemany(
                "INSERT INTO agent_prompts (agent, prompt, created_at, cwd, session_id,"
                " prompt_hash) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (agent, well_formed(found.prompt), found.created_at, found.cwd,
                     found.session_id, prompt_hash(found.prompt))
                    for found in prompts
                ],
            )  # fmt: skip
            set_meta(connection, key, signature)
        copied += len(prompts)
    return copied


def _file_signature(path: str) -> str | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"


@contextlib.contextmanager
def _reading(history_db: str) -> Iterator[None]:
    """Errors of the read-only history.db connection become HistoryError."""
    try:
        yield
    except (apsw.Error, UnicodeDecodeError) as error:
        raise HistoryError(f"history.db could not be read: {error}") from error


@dataclass(frozen=True, slots=True)
class PromptHit:
    """A prompt from history.db or from a session, linked to the session entry when known."""

    prompt: str
    created_at: float
    cwd: str | None
    source: str  # "history" or "session"
    history_id: int | None
    session_id: str | None
    session_path: str | None
    entry_id: str | None
    # Whose prompt: history.db's are xcsh's; the other agents' history files, and session
    # prompts, say their agent.
    agent: str = "xcsh"

    def to_json(self) -> dict[str, Any]:
        """The prompt as ``history --json`` prints it (the team index's add ``host``)."""
        return prompt_json(
            self.prompt,
            self.created_at,
            self.cwd,
            history_id=self.history_id,
            source=self.source,
            session_id=self.session_id,
            session_path=self.session_path,
            entry_id=self.entry_id,
            agent=self.agent,
        ) | host_of(self)


def prompt_json(
    prompt: str,
    created_at: float,
    cwd: str | None,
    *,
    history_id: int | None,
    source: str = "history",
    session_id: str | None = None,
    session_path: str | None = None,
    entry_id: str | None = None,
    agent: str = "xcsh",
) -> dict[str, Any]:
    """One remembered prompt, from history.db or (``source: "session"``) from a session."""
    return {
        "id": history_id,
        "prompt": prompt,
        "created_at": created_at,
        # history.db keeps whole seconds, so no milliseconds here.
        "created": iso_seconds(created_at),
        "cwd": cwd,
        "source": source,
        "agent": agent,
        "session_id": session_id,
        "session_path": session_path,
        "entry_id": entry_id,
    }


def _prompt_query(query: str | None) -> str | None:
    """The reference's query building: every word a quoted prefix term, all must match
    (compatibility: Prompt history as in the reference)."""
    if query is None:
        return None
    tokens = query.replace("\0", " ").split()
    return " ".join('"' + token.replace('"', '""') + '"*' for token in tokens) or None


_SESSION_OF_HASH = (
    "(SELECT {column} FROM entries AS e JOIN sessions AS s ON s.file_id = e.session"
    " WHERE e.prompt_hash = h.prompt_hash ORDER BY e.timestamp LIMIT 1)"
)


def recall_prompts(
    connection: apsw.Connection,
    question: PromptQuery,
    local_path: Callable[[str], str] | None = None,
) -> list[PromptHit]:
    """Newest first: history prompts (history.db's and those of the agents that keep a history
    file; linked to their session) and session-only user prompts; ``agents``: only these
    agents' prompts.

    ``limit`` is clamped to 0..1000 as history.db's own lists are. A session prompt's text is
    read from its file (``local_path`` as for entry_texts); one whose file no longer holds it,
    or cannot be read now, is left out.
    """
    limit, query, agents = question.limit, question.text, question.agents
    if limit <= 0:
        return []
    match = _prompt_query(query)
    if query is not None and match is None:
        return []
    links = ", ".join(
        _SESSION_OF_HASH.format(column=column) for column in ("s.session_id", "s.path", "e.id")
    )
    hits: list[PromptHit] = []
    if not agents or "xcsh" in agents:
        history_filter = "h.id IN (SELECT rowid FROM history_fts WHERE history_fts MATCH ?)"
        history_rows = list(
            connection.execute(
                f"SELECT h.id, h.prompt, h.created_at, h.cwd, {links} FROM history AS h"
                f" {'WHERE ' + history_filter if match else ''}"
                " ORDER BY h.created_at DESC, h.id DESC LIMIT ?",
                (match, limit) if match else (limit,),
            )
        )
        hits += [
            PromptHit(prompt, created_at, cwd, "history", history_id, session_id, path, entry_id)
            for history_id, prompt, created_at, cwd, session_id, path, entry_id in history_rows
        ]
    conditions, arguments = [], []
    if match:
        conditions.append(
            "h.id IN (SELECT rowid FROM agent_prompts_fts WHERE agent_prompts_fts MATCH ?)"
        )
        arguments.append(match)
    if agents:
        conditions.append(agents_condition("h.agent", agents))
        arguments += agents
    agent_rows = list(
        connection.execute(
            f"SELECT h.prompt, h.created_at, h.cwd, h.agent, {links} FROM agent_prompts AS h"
            f"{' WHERE ' + ' AND '.join(conditions) if conditions else ''}"
            " ORDER BY h.created_at DESC, h.id DESC LIMIT ?",
            (*arguments, limit),
        )
    )
    hits += [
        PromptHit(prompt, created_at, cwd, "history", None, session_id, path, entry_id, agent)
        for prompt, created_at, cwd, agent, session_id, path, entry_id in agent_rows
    ]
    session_filter = "e.pk IN (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?) AND"
    only = f" AND {agents_condition('s.agent', agents)}" if agents else ""
    session_rows = list(
        connection.execute(
            "SELECT e.pk, e.timestamp, s.cwd, s.session_id, s.path, e.id, s.agent"
            " FROM entries AS e JOIN sessions AS s ON s.file_id = e.session"
            f" WHERE {session_filter if match else ''} e.role = 'user'"
            " AND e.prompt_hash IS NOT NULL"
            f"{only}"
            " AND NOT EXISTS (SELECT 1 FROM history AS h WHERE h.prompt_hash = e.prompt_hash)"
            " AND NOT EXISTS (SELECT 1 FROM agent_prompts AS h WHERE h.prompt_hash = e.prompt_hash)"
            " ORDER BY e.timestamp DESC LIMIT ?",
            (*((match,) if match else ()), *agents, limit),
        )
    )
    texts = entry_texts(connection, [row[0] for row in session_rows], local_path)
    hits += [
        PromptHit(text, _epoch(timestamp), cwd, "session", None, session_id, path, entry_id, agent)
        for pk, timestamp, cwd, session_id, path, entry_id, agent in session_rows
        if (text := texts.get(pk)) is not None
    ]
    hits.sort(key=lambda hit: hit.created_at, reverse=True)
    return hits[:limit]


def _epoch(timestamp: str | None) -> float:
    millis = timestamp_to_millis(timestamp)
    return millis / 1000 if millis is not None else 0.0
