"""Where the last read of a file stopped, as the index holds it: what a resumed read (an append)
starts from (``resumed_state``, checked against the file's first and last indexed bytes by
``indexed_windows``), and what its reader asks the index on the way (``RowsInIndex``: the rows
that earlier reads of the file wrote). Only reads, in the writer's connection."""

from __future__ import annotations

import dataclasses
from typing import Any, BinaryIO

import apsw
import orjson

from xcsh_store.agents import Agent, SessionFacts, reader_named
from xcsh_store.errors import EntryNotFoundError
from xcsh_store.format.entries import sets_default_model
from xcsh_store.format.versions import synthetic_ids_for
from xcsh_store.index.model.columns import USAGE_FIGURES, written
from xcsh_store.index.model.facts import SkippedLines
from xcsh_store.index.write.build import (
    HEAD_BYTES,
    NO_DEFAULT,
    TAIL_BYTES,
    ReadState,
    Totals,
    read_at,
)
from xcsh_store.index.write.scan import KnownFile, SyncReport, sha1_hex

# A session's figures (model/columns.py), and the fields of Totals a resumed read takes back
# from them.
_FIGURES = written("figures")
_TOTALS = frozenset(field.name for field in dataclasses.fields(Totals))


class RowsInIndex:
    """What a resumed read asks the index about the rows earlier reads of the file wrote."""

    def __init__(self, connection: apsw.Connection, file_id: int, path: str) -> None:
        self.connection = connection
        self.file_id = file_id
        self.path = path

    def awaited(self, entry_id: str) -> bool:
        found = self.connection.execute(
            "SELECT 1 FROM entries WHERE session = ? AND parent_id = ? LIMIT 1",
            (self.file_id, entry_id),
        )
        return bool(found.fetchall())

    def parent(self, parent_id: str) -> list[tuple[int, int]]:
        return list(
            self.connection.execute(
                "SELECT chain, EXISTS (SELECT 1 FROM entries WHERE session = ?1 AND parent_id = ?2)"
                " FROM entries WHERE session = ?1 AND id = ?2",
                (self.file_id, parent_id),
            )
        )

    def usage_of(self, usage_key: str) -> tuple[int, tuple[Any, ...]] | None:
        found = list(
            self.connection.execute(
                "SELECT pk, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
                " premium_requests, cost FROM entries"
                " WHERE session = ? AND usage_key = ? AND input_tokens IS NOT NULL",
                (self.file_id, usage_key),
            )
        )
        return (found[0][0], tuple(found[0][1:])) if found else None

    def counted(self, entry_ids: list[str]) -> tuple[int, int]:
        # A message as RowBuilder._count counts one: a message entry with a message (which
        # names its role).
        entries = messages = 0
        for start in range(0, len(entry_ids), 500):
            part = entry_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            ((found, of_messages),) = self.connection.execute(
                "SELECT count(*), total(type = 'message' AND role IS NOT NULL) FROM entries"
                f" WHERE session = ? AND id IN ({marks})",
                (self.file_id, *part),
            )
            entries, messages = entries + found, messages + int(of_messages)
        return entries, messages

    def turn_parents(self, entry_id: str) -> list[str | None]:
        from xcsh_store.index.model.paths import entry_path

        path = entry_path(self.connection, self.file_id, entry_id)
        return [row.parent_id for _, row in path.rows(types=("message",)) if row.role == "user"]

    def default_after(self, entry_id: str) -> tuple[Any, bool]:
        """The default model after an entry of an earlier read, from its path in the index:
        the newest model_change with role default, else the newest assistant's model.

        Only the part of the path read before the entry counts (each parent earlier in the
        file than its child), as when the whole file is read in one go.
        """
        from xcsh_store.index.model.paths import ChainPath, entry_path, read_entries

        try:
            path = entry_path(self.connection, self.file_id, entry_id)
        except EntryNotFoundError:
            return NO_DEFAULT
        # Chains exist only where every parent comes before its children.
        kinds = ("model_change", "message") if isinstance(path, ChainPath) else ()
        below = None
        assistant: tuple[Any, bool] = NO_DEFAULT
        for _, row in path.rows(types=kinds, newest_first=True):
            if below is not None and row.seq > below:
                break
            below = row.seq
            if row.type == "model_change":
                (change,) = read_entries(self.path, [row], None)
                if sets_default_model(change):
                    return (row.provider, row.model), True
            elif assistant is NO_DEFAULT and row.role == "assistant" and row.provider and row.model:
                assistant = (row.provider, row.model), False
        return assistant


def resumed_state(
    connection: apsw.Connection, known: KnownFile, path: str, head: bytes, tail: bytes
) -> ReadState:
    """Where the last read of the file stopped, as the index holds it."""
    state = ReadState(
        path,
        indexed_bytes=known.indexed_bytes,
        next_seq=known.next_seq,
        status=known.status,
        last_id=known.last_id,
        head=head,
        tail=tail,
        ids=synthetic_ids_for(path),
        chained=known.chained,
    )
    reader = reader_named(known.agent)
    if reader is not None:
        state.agent = known.agent
        state.session = session_facts(connection, known.id, path, reader)
        state.session_written = True
    else:
        state.family_agent = known.agent
    row = list(
        connection.execute(
            f"SELECT {', '.join(_FIGURES)} FROM sessions WHERE file_id = ?", (known.id,)
        )
    )
    if row:
        values = dict(zip(_FIGURES, row[0], strict=True))
        # Each of Totals' fields that is a figure by its name, and the usage sums.
        figures = {name: values[name] for name in _TOTALS.intersection(values)}
        state.totals = Totals(usage=[values[column] for column in USAGE_FIGURES], **figures)
    ((lines, skipped_count, skipped_lines),) = connection.execute(
        "SELECT lines, skipped_count, skipped_lines FROM files WHERE id = ?", (known.id,)
    )
    state.lines = lines
    state.skipped = SkippedLines(skipped_count, orjson.loads(skipped_lines or "[]"))
    return state


def session_facts(
    connection: apsw.Connection, file_id: int, path: str, reader: Agent
) -> SessionFacts:
    """What an earlier read of another agent's file learnt of its session, as the index holds
    it (the reader carries on from there)."""
    facts = SessionFacts(path)
    found = list(
        connection.execute(
            "SELECT session_id, cwd, created_at, parent_session, parent_session_id FROM sessions"
            " WHERE file_id = ?",
            (file_id,),
        )
    )
    if found:
        (facts.session_id, facts.cwd, facts.created_at, facts.parent_session,
         facts.parent_session_id) = found[0]  # fmt: skip
        if facts.parent_session_id is not None and facts.created_at is not None:
            facts.replay_second = facts.created_at[:19]
    if reader.remembers_parents:
        facts.parents = dict(
            connection.execute(
                "SELECT id, parent_id FROM entries WHERE session = ? AND id IS NOT NULL"
                " ORDER BY seq",
                (file_id,),
            )
        )
        # The entry the next record continues from: the newest that none continues from yet
        # (the last entry may be an earlier one written again, which keeps its place).
        continued = set(facts.parents.values())
        facts.leaf = next(
            (entry_id for entry_id in reversed(facts.parents) if entry_id not in continued), None
        )
    model = list(
        connection.execute(
            "SELECT model FROM entries WHERE session = ? AND model IS NOT NULL"
            " ORDER BY seq DESC LIMIT 1",
            (file_id,),
        )
    )
    facts.model = model[0][0] if model else None
    return facts


def indexed_windows(
    stream: BinaryIO, known: KnownFile, report: SyncReport
) -> tuple[bytes, bytes] | None:
    """The first and last bytes of what was indexed of ``known``, read from ``stream``, when
    they still hash as they did; None when the file no longer starts with what was indexed."""
    head = read_at(stream, 0, min(HEAD_BYTES, known.indexed_bytes))
    tail_start = max(0, known.indexed_bytes - TAIL_BYTES)
    tail = read_at(stream, tail_start, known.indexed_bytes - tail_start)
    report.bytes_read += len(head) + len(tail)
    if sha1_hex(head) != known.head_hash or sha1_hex(tail) != known.tail_hash:
        return None
    return head, tail
