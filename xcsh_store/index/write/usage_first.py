"""Usage first (issue 40, item 1): the lean pass of a first sync asked for usage. It reads only
the lines of a file that hold usage and writes one narrow row per model request (migration
0018's ``usage_lines``), with the few facts of the session that usage groups by
(``usage_sessions``); the file is marked ``entries_pending`` (and ``text_pending``), and the
deferred pass (entries_later.py) writes its entry rows and search text afterwards.

The lines are found with a byte search for ``"usage"`` (a JSON string cannot hold an unescaped
quote, so only a key matches), and only those are decoded: into msgspec structs that name the
few fields usage needs (the rest of a line, its text and tool output, is skipped without
making a Python object of it), with orjson and the reader's own code for a line of a shape the
structs do not expect. Each line then counts as the full read counts it (build.py): a later
line of the same response (its usage key) or with the same entry id replaces an earlier one.

Claude Code and Codex files (the agents whose JSONL carries usage that most users have most of);
a file of any other kind is left to the full read, which counts it as before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import apsw
import msgspec
import orjson

from xcsh_store.agents import Agent, AgentEntry, SessionFacts, reader_for
from xcsh_store.agents.base import text_of
from xcsh_store.agents.claude import READER as CLAUDE
from xcsh_store.agents.claude import _learn_session as learn_claude_session
from xcsh_store.agents.claude import claude_usage
from xcsh_store.agents.codex import READER as CODEX
from xcsh_store.agents.codex import _learn_session as learn_codex_session
from xcsh_store.agents.codex import _token_count as codex_token_count
from xcsh_store.agents.prices.costs import settle
from xcsh_store.agents.prices.pricing import Request, price_table
from xcsh_store.agents.registry import reader_revisions
from xcsh_store.files import open_regular_file
from xcsh_store.format.jsonl import BOM
from xcsh_store.format.versions import HEADER_TYPE, TITLE_TYPE
from xcsh_store.index.model.facts import storable_values
from xcsh_store.index.usage_ranks import settle_ranks
from xcsh_store.index.write.build import agent_entry_id
from xcsh_store.index.write.indexer import COMMIT_EVERY_VALUES, drop_file_rows
from xcsh_store.index.write.scan import KnownFile, SeenFile, SyncReport
from xcsh_store.times import canonical_iso, iso_millis, iso_now

_USAGE = b'"usage"'
# Who serves Codex's models (codex.py).
CODEX_PROVIDER = "openai"
_AGENT_ID = b'"agentId"'


class _CacheSplit(msgspec.Struct):
    ephemeral_1h_input_tokens: int = 0


class _ClaudeUsage(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_creation: _CacheSplit | None = None


class _ClaudeMessage(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    usage: _ClaudeUsage | None = None


class _ClaudeLine(msgspec.Struct):
    type: str | None = None
    uuid: str | None = None
    timestamp: str | None = None
    requestId: str | None = None  # (Claude Code's name)
    message: _ClaudeMessage | None = None


_DECODER = msgspec.json.Decoder(_ClaudeLine)


class _AgentLine(msgspec.Struct):
    """What claude._learn_session reads of a line with an ``agentId`` key (a nested one
    matches the byte search too: its line has none of its own)."""

    agentId: Any = msgspec.UNSET  # (Claude Code's names)
    sessionId: Any = None


_AGENT_DECODER = msgspec.json.Decoder(_AgentLine)


@dataclass(slots=True)
class _Request:
    """One line's request: its seq, entry id, timestamp, model, usage object (priced only if
    it counts: most lines of a response are replaced by its last) and usage key."""

    seq: int
    entry_id: str | None
    timestamp: str | None
    model: str | None
    # Claude Code's usage object, or Codex's four figures (input, output, cache read, write).
    usage: dict[str, Any] | _ClaudeUsage | tuple[int, int, int, int]
    usage_key: str | None

    def figures(self) -> tuple[Any, ...]:
        """The six usage figures, as the agent's reader makes them (claude.py, codex.py)."""
        usage = self.usage
        if isinstance(usage, tuple):
            request = Request(self.model, self.timestamp, *usage, provider=CODEX_PROVIDER)
            return (*usage, 0, price_table().cost(request))
        if isinstance(usage, _ClaudeUsage):
            usage = _usage_dict(usage)
        return claude_usage(usage, self.model, self.timestamp)


@dataclass
class UsageRead:
    """What the lean pass found in one file."""

    agent: Agent
    session: SessionFacts
    requests: list[_Request] = field(default_factory=list)
    activity_at: str | None = None


def _usage_dict(usage: _ClaudeUsage) -> dict[str, Any]:
    split = usage.cache_creation
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_creation": None
        if split is None
        else {"ephemeral_1h_input_tokens": split.ephemeral_1h_input_tokens},
    }


def _request_of_value(value: dict[str, Any], seq: int) -> _Request | None:
    """A decoded object's request, as the Claude Code reader reads it (claude.py)."""
    message = value.get("message")
    if value.get("type") != "assistant" or type(message) is not dict:
        return None
    usage = message.get("usage")
    if type(usage) is not dict:
        return None
    model, timestamp = text_of(message.get("model")), text_of(value.get("timestamp"))
    message_id = text_of(message.get("id"))
    key = None if message_id is None else f"{message_id}:{value.get('requestId') or ''}"
    return _Request(seq, text_of(value.get("uuid")), timestamp, model, usage, key)


def _requests_of_line(line: bytes, seq: int) -> list[_Request]:
    """The requests of one line: the typed decoding of the fields usage needs, else (several
    objects, a field of another type) the full read's lenient parse and the reader's code."""
    try:
        decoded = _DECODER.decode(line)
    except msgspec.DecodeError:
        found = []
        for part, value in enumerate(storable_values(line, b"\\u" in line)):
            request = _request_of_value(value, seq + part)
            if request is not None:
                found.append(request)
        return found
    message = decoded.message
    if decoded.type != "assistant" or message is None or message.usage is None:
        return []
    model, timestamp = text_of(message.model), text_of(decoded.timestamp)
    message_id = text_of(message.id)
    key = None if message_id is None else f"{message_id}:{decoded.requestId or ''}"
    return [_Request(seq, text_of(decoded.uuid), timestamp, model, message.usage, key)]


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
    """The requests of a file's bytes, when it is a Claude Code or Codex file (None: another
    kind, for the full read)."""
    if data.startswith(BOM):
        return None
    first = _first_value(data)
    if first is None or first.get("type") in (TITLE_TYPE, HEADER_TYPE):
        return None
    reader = reader_for(first)
    if reader is CODEX:
        return _read_codex(path, data) if "payload" in first else None
    if reader is not CLAUDE:
        return None
    found = UsageRead(CLAUDE, SessionFacts(path))
    session = found.session
    _learn_head(data, session)
    activity = [session.created_at] if session.created_at else []
    requests = found.requests
    position = data.find(_USAGE)
    while position >= 0:
        start = data.rfind(b"\n", 0, position) + 1
        end = data.find(b"\n", position)
        if end < 0:
            end = len(data)
            try:  # a last line still being written waits for a later sync (build.py)
                orjson.loads(data[start:end])
            except orjson.JSONDecodeError:
                break
        # (A line's offset is its seq here: only their order counts.)
        for request in _requests_of_line(data[start:end], start * 64):
            requests.append(request)
            if request.timestamp is not None:
                activity.append(request.timestamp)
        position = data.find(_USAGE, end)
    stamps = [stamp for stamp in map(canonical_iso, activity) if stamp is not None]
    found.activity_at = max(stamps) if stamps else None
    found.requests = _counted(requests)
    return found


def _learn_head(data: bytes, session: SessionFacts) -> None:
    """What the reader learns of the session from its lines (claude._learn_session): its id
    and parent from the path, its cwd and start from the first lines that have them, a parent
    named by the first line with an ``agentId`` that names another session."""
    start = 0
    learn_claude_session({}, session)
    while start < len(data) and (session.cwd is None or session.created_at is None):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        line = data[start:end]
        for value in storable_values(line, b"\\u" in line):
            learn_claude_session(value, session)
        start = end
    if session.parent_session_id is not None:
        return  # (a subagent's, named by its folder)
    position = data.find(_AGENT_ID)
    while position >= 0 and session.parent_session_id is None:
        start = data.rfind(b"\n", 0, position) + 1
        end = data.find(b"\n", position)
        end = len(data) if end < 0 else end
        line = data[start:end]
        try:
            values: list[dict[str, Any]] = []
            decoded = _AGENT_DECODER.decode(line)
            if decoded.agentId is not msgspec.UNSET:
                values = [{"agentId": decoded.agentId, "sessionId": decoded.sessionId}]
        except msgspec.DecodeError:
            values = storable_values(line, b"\\u" in line)
        for value in values:
            learn_claude_session(value, session)
        position = data.find(_AGENT_ID, end)


def _counted(requests: list[_Request]) -> list[_Request]:
    """The requests whose usage the full read keeps: a later line with the same usage key
    (the same response, written again) or the same entry id replaces an earlier one."""
    alive = [True] * len(requests)
    by_key: dict[str, int] = {}
    by_id: dict[str, int] = {}
    for number, request in enumerate(requests):
        if request.entry_id is not None:
            earlier = by_id.get(request.entry_id)
            if earlier is not None:
                alive[earlier] = False
            by_id[request.entry_id] = number
        if request.usage_key is not None:
            earlier = by_key.get(request.usage_key)
            if earlier is not None:
                alive[earlier] = False
            by_key[request.usage_key] = number
    return [request for request, kept in zip(requests, alive, strict=True) if kept]


# --------------------------------------------------------------------------------------------
# Codex: the model of each turn comes from the turn_context line before its token_count lines,
# the session from the first session_meta (a fork's copies of its parent's come after).

_CODEX_NEEDLES = (b'"session_meta"', b'"turn_context"', b'"token_count"')


class _CodexTokens(msgspec.Struct):
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    output_tokens: int = 0


class _CodexInfo(msgspec.Struct):
    last_token_usage: _CodexTokens | None = None
    total_token_usage: dict[str, Any] | None = None


class _CodexPayload(msgspec.Struct):
    type: str | None = None
    info: _CodexInfo | None = None


class _CodexLine(msgspec.Struct):
    type: str | None = None
    timestamp: str | None = None
    payload: _CodexPayload | None = None


_CODEX_DECODER = msgspec.json.Decoder(_CodexLine)


def _codex_positions(data: bytes) -> list[int]:
    """Where the lines that may be a session_meta, turn_context or token_count begin, in
    order (each once)."""
    starts: set[int] = set()
    for needle in _CODEX_NEEDLES:
        position = data.find(needle)
        while position >= 0:
            starts.add(data.rfind(b"\n", 0, position) + 1)
            end = data.find(b"\n", position)
            position = -1 if end < 0 else data.find(needle, end)
    return sorted(starts)


def _read_codex(path: str, data: bytes) -> UsageRead:
    """The requests of a Codex file, as the Codex reader reads them (codex.py)."""
    found = UsageRead(CODEX, SessionFacts(path))
    session = found.session
    activity: list[str] = []
    for start in _codex_positions(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
            try:  # a last line still being written waits for a later sync (build.py)
                orjson.loads(data[start:end])
            except orjson.JSONDecodeError:
                break
        line = data[start:end]
        try:
            decoded = _CODEX_DECODER.decode(line)
            kind = decoded.type
            payload = decoded.payload
            simple = kind == "event_msg" and payload is not None and payload.type == "token_count"
        except msgspec.DecodeError:
            simple = False
        if not simple:
            # session_meta, turn_context (or a shape the structs do not expect): the reader's
            # own code, on the full read's parse.
            for part, value in enumerate(storable_values(line, b"\\u" in line)):
                _codex_value(value, start * 64 + part, found, activity)
            continue
        assert payload is not None
        request = _codex_request(decoded.timestamp, payload.info, session, start * 64)
        if request is not None:
            found.requests.append(request)
            activity.append(request.timestamp or "")
    if session.created_at:
        activity.append(session.created_at)
    stamps = [stamp for stamp in map(canonical_iso, activity) if stamp]
    found.activity_at = max(stamps) if stamps else None
    found.requests = _counted(found.requests)
    return found


def _codex_value(value: dict[str, Any], seq: int, found: UsageRead, activity: list[str]) -> None:
    """One object of a line, as CodexReader.read reads it (what usage needs of it)."""
    payload = value.get("payload")
    if type(payload) is not dict:
        return
    kind = value.get("type")
    timestamp = text_of(value.get("timestamp"))
    session = found.session
    if kind == "session_meta":
        learn_codex_session(payload, timestamp, session)
    elif kind == "turn_context":
        session.model = text_of(payload.get("model")) or session.model
    elif kind == "event_msg" and payload.get("type") == "token_count":
        entry = AgentEntry({})
        codex_token_count(entry, payload, timestamp, session)
        if entry.usage is not None:
            figures = (entry.usage[0], entry.usage[1], entry.usage[2], entry.usage[3])
            entry_id = agent_entry_id(session.path, seq)
            found.requests.append(
                _Request(seq, entry_id, timestamp, entry.model, figures, entry.usage_key)
            )
            activity.append(timestamp or "")


def _codex_request(
    timestamp: str | None, info: _CodexInfo | None, session: SessionFacts, seq: int
) -> _Request | None:
    """A token_count event's request (codex._token_count, from the typed decoding)."""
    timestamp = text_of(timestamp)
    replay = session.replay_second
    if replay is not None and timestamp is not None and timestamp[:19] <= replay:
        return None
    last = None if info is None else info.last_token_usage
    if info is None or last is None:
        return None
    cached, written = last.cached_input_tokens, last.cache_write_input_tokens
    figures = (
        max(last.input_tokens - cached - written, 0), last.output_tokens, cached, written
    )  # fmt: skip
    if not any(figures):
        return None
    total = info.total_token_usage
    key = None
    if total is not None:
        key = "total:" + orjson.dumps(total, option=orjson.OPT_SORT_KEYS).decode()
    # (An id unlike any other file's, as the full read gives: usage_entries takes entries of
    # the same id and time for copies.)
    return _Request(seq, agent_entry_id(session.path, seq), timestamp, session.model, figures, key)


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
    "INSERT INTO usage_lines (session, seq, id, timestamp, provider, model, input_tokens,"
    " output_tokens, cache_read_tokens, cache_write_tokens, premium_requests, cost,"
    " cost_estimated, list_cost) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def usage_rows(file_id: int, found: UsageRead) -> list[tuple[Any, ...]]:
    """The usage_lines rows of a file's requests, each cost settled as the full read does."""
    rows = []
    providers: dict[str | None, str | None] = {}
    agent = found.agent
    for request in found.requests:
        model = request.model
        if agent is CODEX:
            provider: str | None = CODEX_PROVIDER
        elif model in providers:
            provider = providers[model]
        else:
            provider = providers[model] = price_table().provider_of(model)
        usage = request.figures()
        sent, received, cache_read, cache_write = (int(value or 0) for value in usage[:4])
        priced = Request(
            model, request.timestamp, sent, received, cache_read, cache_write, provider=provider
        )
        settled = settle(usage, agent.records_costs, priced)
        rows.append((file_id, request.seq, request.entry_id, request.timestamp, provider, model,
                     *settled))  # fmt: skip
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
        connection.execute(
            "INSERT OR REPLACE INTO usage_sessions (file_id, session_id, project_dir, cwd, agent,"
            " parent_session_id, created_at, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (file_id, session.session_id, seen.project_dir, session.cwd, found.agent.name,
             session.parent_session_id, session.created_at,
             found.activity_at or iso_millis(stat[1] / 1e9)),
        )  # fmt: skip
        rows = usage_rows(file_id, found)
        connection.executemany(_USAGE_ROW, rows)
        self.values += len(rows) + 1
        if self.values >= COMMIT_EVERY_VALUES:
            self.commit(last=False)

    def commit(self, last: bool = True) -> None:
        if self.connection.in_transaction:
            if last or not self.rank_at_end:
                settle_ranks(self.connection)
            self.connection.execute("COMMIT")
        self.values = 0

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")
        self.values = 0


def usage_differences(connection: apsw.Connection, file_id: int, path: str) -> list[str]:
    """Whether the usage rows of a file whose entries are still to come are those the file
    at ``path`` gives now (verify; empty when they are)."""
    with open_regular_file(path) as stream:
        data = stream.read()
    found = read_usage(path, data)
    if found is None:
        return ["its usage rows were read as another agent's, the file is not"]
    fresh = [row[1:] for row in usage_rows(file_id, found)]
    ours = connection.execute(
        "SELECT seq, id, timestamp, provider, model, input_tokens, output_tokens,"
        " cache_read_tokens, cache_write_tokens, premium_requests, cost, cost_estimated,"
        " list_cost FROM usage_lines WHERE session = ? ORDER BY pk",
        (file_id,),
    ).fetchall()
    if [tuple(row) for row in ours] == fresh:
        return []
    return [f"usage rows: {len(ours)} indexed, the file gives {len(fresh)} (or other figures)"]


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
                with open_regular_file(seen.path) as stream:
                    info = os.fstat(stream.fileno())
                    data = stream.read()
            except OSError:
                left.append((seen, known))
                continue
            found = read_usage(seen.path, data)
            if found is None:
                left.append((seen, known))
                continue
            stat = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)
            seen.size, seen.mtime_ns, seen.inode, seen.ctime_ns = stat
            writer.write(seen, known, stat, found)
            report.read_paths.append(seen.path)
            report.bytes_read += len(data)
            report.files_changed += 1
            report.files_reindexed += 1
        writer.commit()
    except BaseException:
        writer.rollback()
        raise
    return left
