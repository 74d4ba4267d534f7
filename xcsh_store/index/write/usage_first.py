"""Usage first (issue 40, item 1): the lean pass of a first sync asked for usage. It reads only
the lines of a file that hold usage and writes one narrow row per model request (migration
0018's ``usage_lines``), with the few facts of the session that usage groups by
(``usage_sessions``); the file is marked ``entries_pending`` (and ``text_pending``), and the
deferred pass (entries_later.py) writes its entry rows and search text afterwards.

Each kind of file has its lean read (lean/): Claude Code's and Codex's decode the few fields
usage needs into msgspec structs; Gemini CLI's, Qwen Code's and GitHub Copilot CLI's have the
agent's reader read the few lines that hold usage; a session its agent's plugin lists (Gemini
CLI's document chats, opencode's storage tree and database: lean/documents.py) is read for its
messages alone. Each line then counts as the full read counts it (build.py): a later line of
the same response (its usage key) or with the same entry id replaces an earlier one. A file of
any other kind (an xcsh-family file, another agent's, an opencode export document) is left to
the full read, which counts it as before.
"""

from __future__ import annotations

import os
from typing import Any

import apsw

from xcsh_store.agents import PLUGIN_FAULTS, reader_for, reader_named
from xcsh_store.agents.claude import READER as CLAUDE
from xcsh_store.agents.codex import READER as CODEX
from xcsh_store.agents.prices.costs import settle
from xcsh_store.agents.prices.pricing import Request, price_table
from xcsh_store.agents.registry import reader_revisions
from xcsh_store.files import open_regular_file
from xcsh_store.format.jsonl import BOM
from xcsh_store.format.versions import HEADER_TYPE, TITLE_TYPE
from xcsh_store.index.model.facts import storable_values
from xcsh_store.index.usage_ranks import new_rows_only, ranks_of, settle_ranks, store_ranks
from xcsh_store.index.write.indexer import COMMIT_EVERY_VALUES, drop_file_rows
from xcsh_store.index.write.lean.by_reader import FORMATS, read_by_reader
from xcsh_store.index.write.lean.claude import read_claude
from xcsh_store.index.write.lean.codex import read_codex
from xcsh_store.index.write.lean.documents import read_source_usage
from xcsh_store.index.write.lean.found import CODEX_PROVIDER, ClaudeUsage, UsageRead
from xcsh_store.index.write.scan import KnownFile, SeenFile, SyncReport
from xcsh_store.times import iso_millis, iso_now


def _first_value(data: bytes) -> dict[str, Any] | None:
    """The file's first object (what recognizes its agent)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        values = storable_values(data[start:end], b"\\u" in data[start:end])
        if values:
            return values[0]
        start = end
    return None


def read_usage(path: str, data: bytes) -> UsageRead | None:
    """The requests of a file's bytes, when it is of an agent with a lean read (None: another
    kind, for the full read)."""
    if data.startswith(BOM):
        return None
    first = _first_value(data)
    if first is None or first.get("type") in (TITLE_TYPE, HEADER_TYPE):
        return None
    reader = reader_for(first)
    if reader is CODEX:
        return read_codex(path, data, first)
    if reader is CLAUDE:
        return read_claude(path, data)
    lean = None if reader is None else FORMATS.get(reader.name)
    return None if lean is None or lean.reader is not reader else read_by_reader(lean, path, data)


# --------------------------------------------------------------------------------------------
# Writing

_FILE_ROW = (
    "UPDATE files SET size = ?, mtime_ns = ?, inode = ?, ctime_ns = ?, indexed_bytes = 0,"
    " head_hash = NULL, tail_hash = NULL, status = 'ok', error = NULL, indexed_at = ?,"
    " next_seq = 0, last_id = NULL, legacy = 0, chained = 0, root = ?, project_dir = ?,"
    " agent = ?, text_pending = 1, entries_pending = 1, gone_at = NULL, reader_revision = ?"
    " WHERE id = ?"
)
_USAGE_ROW = (
    "INSERT INTO usage_lines (pk, session, seq, id, timestamp, provider, model, input_tokens,"
    " output_tokens, cache_read_tokens, cache_write_tokens, premium_requests, cost,"
    " cost_estimated, list_cost) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
# The most rows a first pass keeps in memory to rank them itself (about 150 bytes each); past
# that, the windows of usage_ranks.rank_everything rank them at its last commit.
RANK_IN_MEMORY_ROWS = 2_000_000


def usage_rows(file_id: int, found: UsageRead, pk: int = 0) -> list[tuple[Any, ...]]:
    """The usage_lines rows of a file's requests (their pks from ``pk`` on), each cost settled
    as the full read does."""
    rows = []
    providers: dict[str | None, str | None] = {}
    agent = found.agent
    table = price_table()
    for request in found.requests:
        model = request.model
        if agent is CODEX:
            provider: str | None = CODEX_PROVIDER
        elif found.recorded_providers:
            provider = request.provider
        elif model in providers:
            provider = providers[model]
        else:
            provider = providers[model] = table.provider_of(model)
        usage = request.usage
        if agent is CLAUDE and type(usage) is ClaudeUsage:
            # (claude.claude_usage and settle, from the decoded usage)
            cache_write = usage.cache_creation_input_tokens
            tokens = (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens,
                      cache_write)  # fmt: skip
            split = usage.cache_creation
            one_hour = 0 if split is None else min(split.ephemeral_1h_input_tokens, cache_write)
            cost = table.tokens_cost(model, request.timestamp, *tokens, one_hour)
            rows.append((pk, file_id, request.seq, request.entry_id, request.timestamp, provider,
                         model, *tokens, 0, cost, None if cost is None else 1, None))  # fmt: skip
            pk += 1
            continue
        figures = request.figures()
        priced = None
        if agent.records_costs:  # (else the reader priced it: settle needs no request)
            sent, received, cache_read, cache_write = (int(value or 0) for value in figures[:4])
            priced = Request(
                model, request.timestamp, sent, received, cache_read, cache_write,
                provider=provider,
            )  # fmt: skip
        settled = settle(figures, agent.records_costs, priced)
        rows.append((pk, file_id, request.seq, request.entry_id, request.timestamp, provider,
                     model, *settled))  # fmt: skip
        pk += 1
    return rows


class UsageWriter:
    """The lean pass's writes, a file at a time, in transactions of many files."""

    def __init__(self, connection: apsw.Connection, report: SyncReport) -> None:
        self.connection = connection
        self.report = report
        self.values = 0
        self.revisions = reader_revisions()
        # Into an index with no usage rows yet (a first run), nothing the pass writes changes a
        # row already counted: the commits along the way leave the new rows unranked (not yet
        # counted, as files not yet read) and the last ranks them all at once (migration 0020;
        # ranking at each commit cost the 327 MB tree's first usage 0.2 CPU-s more:
        # benchmarks/README.md).
        ((counted,),) = connection.execute("SELECT EXISTS (SELECT 1 FROM usage_ranks)")
        self.rank_at_end = not counted
        # A first pass's rows, kept to rank them itself at the end (usage_ranks.ranks_of) when
        # they are all usage_entries ranks; their pks chosen here, in order.
        self.new_rows: list[tuple[Any, ...]] | None = [] if self.rank_at_end else None
        self.sessions: dict[int, tuple[str | None, str | None, str | None]] = {}
        ((last_pk,),) = connection.execute("SELECT coalesce(max(pk), 0) FROM usage_lines")
        self.next_pk = last_pk + 1

    def write(
        self, seen: SeenFile, known: KnownFile | None, stat: tuple[int, int, int, int],
        found: UsageRead,
    ) -> None:  # fmt: skip
        connection = self.connection
        if not connection.in_transaction:
            connection.execute("BEGIN IMMEDIATE")
        if known is not None:
            file_id = known.id
            self.report.entries_removed += drop_file_rows(connection, file_id)
        else:
            connection.execute(
                "INSERT INTO files (path, root, project_dir, size, mtime_ns, inode, status)"
                " VALUES (?, ?, ?, -1, 0, ?, 'ok')",
                (seen.path, seen.root, seen.project_dir, stat[2]),
            )
            connection.execute("DELETE FROM forgotten WHERE path = ?", (seen.path,))
            file_id = connection.last_insert_rowid()
        connection.execute(
            _FILE_ROW,
            (
                *stat,
                iso_now(),
                seen.root,
                seen.project_dir,
                found.agent.name,
                self.revisions.get(found.agent.name, 1),
                file_id,
            ),
        )
        session = found.session
        modified_at = found.activity_at or iso_millis(stat[1] / 1e9)
        connection.execute(
            "INSERT OR REPLACE INTO usage_sessions (file_id, session_id, project_dir, cwd, agent,"
            " parent_session_id, created_at, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (file_id, session.session_id, seen.project_dir, session.cwd, found.agent.name,
             session.parent_session_id, session.created_at, modified_at),
        )  # fmt: skip
        rows = usage_rows(file_id, found, self.next_pk)
        self.next_pk += len(rows)
        connection.executemany(_USAGE_ROW, rows)
        if self.new_rows is not None:
            self.new_rows += rows
            self.sessions[file_id] = (session.session_id, session.created_at, modified_at)
            if len(self.new_rows) > RANK_IN_MEMORY_ROWS:
                self.new_rows = None
        self.values += len(rows) + 1
        if self.values >= COMMIT_EVERY_VALUES:
            self.commit(last=False)

    def commit(self, last: bool = True) -> None:
        if self.connection.in_transaction:
            new_rows = self.new_rows
            if last and new_rows is not None and new_rows_only(self.connection, len(new_rows)):
                store_ranks(self.connection, ranks_of(new_rows, self.sessions))
            elif last or not self.rank_at_end:
                settle_ranks(self.connection)
            self.connection.execute("COMMIT")
        self.values = 0

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")
        self.values = 0


def usage_differences(
    connection: apsw.Connection, file_id: int, path: str, agent: str | None = None
) -> list[str]:
    """Whether the usage rows of a file whose entries are still to come are those the file
    at ``path`` gives now (verify; empty when they are); ``agent``: the plugin that lists the
    session, when it is not a JSONL file (scan.SeenFile.agent)."""
    if agent is not None:
        reader = reader_named(agent)
        found = None if reader is None else read_source_usage(reader, path)
    else:
        with open_regular_file(path) as stream:
            data = stream.read()
        found = read_usage(path, data)
    if found is None:
        return ["its usage rows were read as another agent's, the file is not"]
    fresh = [row[2:] for row in usage_rows(file_id, found)]
    ours = connection.execute(
        "SELECT seq, id, timestamp, provider, model, input_tokens, output_tokens,"
        " cache_read_tokens, cache_write_tokens, premium_requests, cost, cost_estimated,"
        " list_cost FROM usage_lines WHERE session = ? ORDER BY pk",
        (file_id,),
    ).fetchall()
    if [tuple(row) for row in ours] == fresh:
        return []
    return [f"usage rows: {len(ours)} indexed, the file gives {len(fresh)} (or other figures)"]


def _read_file(seen: SeenFile) -> tuple[UsageRead, int] | None:
    """What the lean read finds in the file (or the session its agent lists: ``seen`` as
    the plugin identified it), with the bytes it read; None when the full read reads it (it
    says why a session cannot be read: a session its plugin fails on is left to it too)."""
    if seen.agent is not None:
        agent = reader_named(seen.agent)
        if agent is None:
            return None
        try:
            found = read_source_usage(agent, seen.path)
        except PLUGIN_FAULTS:
            return None
        return None if found is None else (found, max(seen.size, 0))
    with open_regular_file(seen.path) as stream:
        info = os.fstat(stream.fileno())
        data = stream.read()
    found = read_usage(seen.path, data)
    if found is None:
        return None
    seen.size, seen.mtime_ns, seen.inode, seen.ctime_ns = (
        info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns
    )  # fmt: skip
    return found, len(data)


def index_usage_first(
    connection: apsw.Connection,
    todo: list[tuple[SeenFile, KnownFile | None]],
    report: SyncReport,
) -> list[tuple[SeenFile, KnownFile | None]]:
    """The lean pass over the files of ``todo`` (each to be read whole); returns those it left
    to the full read (another agent's, or one that could not be read here: the full read says
    why)."""
    writer = UsageWriter(connection, report)
    left: list[tuple[SeenFile, KnownFile | None]] = []
    try:
        for seen, known in todo:
            try:
                read = _read_file(seen)
            except OSError:
                read = None
            if read is None:
                left.append((seen, known))
                continue
            found, size = read
            stat = (seen.size, seen.mtime_ns, seen.inode, seen.ctime_ns)
            writer.write(seen, known, stat, found)
            report.read_paths.append(seen.path)
            report.bytes_read += size
            report.files_changed += 1
            report.files_reindexed += 1
        writer.commit()
    except BaseException:
        writer.rollback()
        raise
    return left
