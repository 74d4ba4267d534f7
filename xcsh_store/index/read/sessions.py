"""Sessions as the index lists and finds them: the one query over the sessions and their files,
the listing orders, lookup by path or id prefix, and what one session's file holds (message text,
skipped lines, entry ids)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import apsw
import orjson

from xcsh_store.agents.prices.costs import FACTS_SQL, CostFacts
from xcsh_store.errors import (
    AmbiguousEntryError,
    AmbiguousSessionError,
    EntryNotFoundError,
    SessionNotFoundError,
)
from xcsh_store.index.model.columns import Column, local, record_fields
from xcsh_store.index.read.names import unique_entry_prefixes, unique_id_prefixes
from xcsh_store.index.read.questions import (
    SessionFilter,
    SessionQuery,
    project_folder,
    refuse_unasked,
)
from xcsh_store.times import iso_millis, parse_iso

if TYPE_CHECKING:
    import weakref

    from xcsh_store.index.location import Relocation
    from xcsh_store.index.model.facts import SkippedLines


class SessionStore(Protocol):
    """What the sessions queries need of the store that owns index.db (``SessionIndex``; named
    here, not imported, as the store imports this module): its connection, where its stored
    paths point now, the listings it lets read their last fields before it closes, and one
    session's text."""

    connection: apsw.Connection
    listings: weakref.WeakSet[Listing]

    @property
    def relocation(self) -> Relocation | None: ...

    def local_path(self, path: str) -> str: ...

    def all_messages_text(self, session: IndexedSession) -> str: ...


# How many candidates an ambiguous session argument or entry id prefix lists: its message is
# one line a person reads (and an agent, through MCP), the rest are counted.
AMBIGUOUS_LISTED = 10
# How much of each candidate's title that line shows.
AMBIGUOUS_TITLE_CHARS = 40

# The title as shown: the header's, else the newest compaction's short summary.
_TITLE = "coalesce(nullif(s.title, ''), s.compaction_title)"
# How much of an untitled session's first message a listing reads: more than a table cell
# shows. A shorter text is the whole message; a longer one is read whole when asked for. The
# index sessions_listing holds this cut (migration 0008): the two must agree for SQLite to
# answer from the index (tests/test_listing.py checks the plan).
FIRST_MESSAGE_LISTED = 256

# What a listing shows (``ls``: id, modified, cwd, messages, tokens, cost, title or first
# message): the session columns it reads (model/columns.py), each as the record reads it. The
# covering index sessions_listing (migration 0008) holds exactly these, so listing every
# session reads that one index from its start and nothing else.
_LISTED_AS = {
    "cwd": "coalesce(s.cwd, '')",
    "title": _TITLE,
    "first_message": f"CASE WHEN coalesce({_TITLE}, '') = ''"
    f" THEN substr(s.first_message, 1, {FIRST_MESSAGE_LISTED}) END",
}
_LISTED = tuple(_LISTED_AS.get(column.name, local(column)) for column in record_fields(True))
# Where each is in a listed row; the file id first, the session id second (Listing reads them).
_AT = {column.name: position for position, column in enumerate(record_fields(True))}
_FILE_ID, _SESSION_ID, _TITLE_AT, _FIRST_AT = (
    _AT[name] for name in ("file_id", "session_id", "title", "first_message")
)
# Every other field of IndexedSession, read on first use: the record's other columns, then the
# first message whole (a listing reads its start), whether the file is v1/v2, and how its costs
# are known (agents/prices/costs.py), summed from its requests' costs (migration 0017's index
# entries_costs holds just what this reads).
_DETAIL_AT = {column.name: position for position, column in enumerate(record_fields(False))}
_DETAILS = (
    *(local(column) for column in record_fields(False)),
    "s.first_message",
    "f.legacy",
    f"(SELECT json_array({FACTS_SQL}) FROM entries AS e WHERE e.session = s.file_id"
    " AND e.input_tokens IS NOT NULL)",
)
_FIRST_MESSAGE, _LEGACY, _COST_FACTS = range(len(_DETAIL_AT), len(_DETAILS))
_PATH = _DETAIL_AT["path"]
_LISTED_COLUMNS = ", ".join(_LISTED)
_DETAIL_COLUMNS = ", ".join(_DETAILS)
_TWIN = (
    "EXISTS (SELECT 1 FROM sessions AS twin"
    " WHERE twin.session_id = s.session_id AND twin.file_id != s.file_id)"
)
_FROM = " FROM sessions AS s JOIN files AS f ON f.id = s.file_id"

_SHOWN_TITLE = "nullif(trim(coalesce(s.title, s.compaction_title), ' ' || char(9, 10, 13)), '')"

# ``list_sessions`` orders, each served by an index (migration 0008) but the title order.
_MODIFIED_ORDER = "s.modified_at DESC, s.file_id"
_ORDERS = {
    "modified": _MODIFIED_ORDER,
    "created": "s.created_at DESC, s.file_id",
    # As the title is shown (whitespace trimmed), untitled sessions last, newest first.
    "title": f"{_SHOWN_TITLE} IS NULL, {_SHOWN_TITLE} COLLATE NOCASE, {_MODIFIED_ORDER}",
}

_EPOCH = datetime.fromtimestamp(0, UTC)
_Record = TypeVar("_Record", bound="SessionRecord")


def _parse_time(text: str | None) -> datetime:
    return (parse_iso(text) if text else None) or _EPOCH


class Listing:
    """What the sessions of one listing share: the index, and the fields they did not read,
    read for all of them in one query when one of them needs one (or when the index closes:
    SessionIndex.close)."""

    def __init__(
        self,
        index: SessionStore,
        rows: list[tuple[Any, ...]],
        details: dict[int, tuple[Any, ...]] | None = None,
        shared_ids: set[str] | None = None,
    ) -> None:
        self.index = index
        self.rows = rows  # as listed: each session's file id first
        self._details = details
        self._shared_ids = shared_ids

    def read_everything(self) -> None:
        """Read what the sessions have not read yet (the index is about to close)."""
        self._read_details()
        self.shared_ids()

    def _read_details(self) -> dict[int, tuple[Any, ...]]:
        if self._details is None:
            rows = self.index.connection.execute(
                f"SELECT s.file_id, {_DETAIL_COLUMNS}{_FROM}"
                " WHERE s.file_id IN (SELECT value FROM json_each(?))",
                (orjson.dumps([row[_FILE_ID] for row in self.rows]).decode(),),
            )
            self._details = {row[0]: _local_details(row[1:], self.index) for row in rows}
        return self._details

    def details(self, file_id: int) -> tuple[Any, ...]:
        """The _DETAILS of one of the sessions."""
        found = self._read_details().get(file_id)
        if found is None:
            raise SessionNotFoundError(
                f"Session file {file_id} is no longer indexed (a sync removed it after it was"
                " listed); list the sessions again"
            )
        return found

    def shared_ids(self) -> set[str]:
        """Session ids that more than one indexed file has (one pass over their index)."""
        if self._shared_ids is None:
            self._shared_ids = {
                session_id
                for (session_id,) in self.index.connection.execute(
                    "SELECT session_id FROM sessions GROUP BY session_id HAVING count(*) > 1"
                )
            }
        return self._shared_ids


def _local_details(details: tuple[Any, ...], index: SessionStore) -> tuple[Any, ...]:
    if index.relocation is None:
        return details
    return (*details[:_PATH], index.local_path(details[_PATH]), *details[_PATH + 1 :])


def _listed(column: str) -> Any:
    """A field of IndexedSession that the listing read: ``column`` of _LISTED."""
    position = _AT[column]
    return property(lambda session: session._row[position])


def _detail(column: str) -> Any:
    """A field of IndexedSession read on first use: ``column`` of _DETAILS."""
    position = _DETAIL_AT[column]
    return property(lambda session: session._listing.details(session._row[_FILE_ID])[position])


class SessionRecord:
    """What a session record of either index (IndexedSession, the team index's TeamSession)
    derives from its fields the one way: its total tokens, the kind of its cost, and its JSON
    shape (docs/json.md: ``ls``, ``show``, the MCP tools and the team index print these keys)."""

    __slots__ = ()

    # Its fields: the session columns it reads (model/columns.py, by their ``field`` names),
    # typed here once for both records, each reading them its own way (reads_columns).
    session_id: str
    # Which agent wrote it (xcsh, pi, omp or a plugin's name: claude, codex, …).
    agent: str
    path: str
    cwd: str
    project_dir: str | None
    title: str | None
    title_source: str | None
    parent_session_path: str | None
    # The session id of the session it is a subagent or fork of (where its agent says so).
    parent_session_id: str | None
    version: int | None
    created_at: str | None
    modified_at: str | None
    entry_count: int
    message_count: int
    last_entry_id: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    premium_requests: float
    cost: float
    source_gone_at: str | None

    if TYPE_CHECKING:
        # What each record reads its own way: the first message (a listing of index.db reads
        # its start), whether another file shares its id, how its costs are known.
        @property
        def first_prompt(self) -> str | None: ...
        @property
        def id_shared(self) -> bool: ...
        @property
        def cost_facts(self) -> CostFacts: ...

    @property
    def id(self) -> str:
        return self.session_id

    # Parsed on each use: a listing of 10,000 sessions that shows a few parses a few.
    @property
    def modified(self) -> datetime:
        return _parse_time(self.modified_at)

    @property
    def tokens(self) -> int:
        """Every token of its requests: input, output, cache reads and writes (what ``usage``
        sums as its total, UsageRow.tokens)."""
        figures = (self.input_tokens, self.output_tokens, self.cache_read_tokens)
        return sum(figures) + self.cache_write_tokens

    @property
    def started(self) -> datetime | None:
        """When the session started; None when its file does not say (Cursor's transcripts
        hold no times), never the epoch."""
        return parse_iso(self.created_at) if self.created_at else None

    @property
    def created(self) -> datetime:
        """``started``, the epoch when unknown (so that a sort by it puts those last)."""
        return self.started or _EPOCH

    @property
    def first_message(self) -> str:
        """The text of the first user message, as a listing shows it: ``"(no prompt)"`` for
        a session of messages none of which is the user's, ``"(no messages)"`` without any."""
        if self.first_prompt:
            return self.first_prompt
        return "(no prompt)" if self.message_count else "(no messages)"

    @property
    def cost_kind(self) -> str:
        """How its cost is known: one of costs.COST_KINDS (free, unknown, not_recorded, …)."""
        return self.cost_facts.kind

    @property
    def unpriced_entries(self) -> int:
        """Its requests whose cost is not known (no recorded cost, no price)."""
        return self.cost_facts.unpriced

    def to_json(self) -> dict[str, Any]:
        """The session as ``--json`` prints it; ``id`` and ``session_id`` are both its session
        id (``id`` first, as ``ls`` always printed it; ``session_id`` as every other record
        names it); a record of the team index adds its ``host``."""
        return {
            "id": self.session_id,
            "session_id": self.session_id,
            "agent": self.agent,
            "path": self.path,
            "cwd": self.cwd or None,
            # A session's project is its working directory, for every agent; project_dir is
            # the project folder its file is in (below sessions/, Claude Code's projects/),
            # null for an agent whose folders name no projects (Codex's are dates).
            "project": self.cwd or None,
            "project_dir": self.project_dir or None,
            "title": self.title,
            "title_source": self.title_source,
            "parent_session": self.parent_session_path,
            "parent_session_id": self.parent_session_id,
            "version": self.version,
            "created": None if self.started is None else iso_millis(self.started),
            "modified": iso_millis(self.modified),
            "entry_count": self.entry_count,
            "message_count": self.message_count,
            "first_message": self.first_prompt or None,
            "last_entry_id": self.last_entry_id,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            # The four above together: the "tokens" of ls and show, the total of usage.
            "total_tokens": self.tokens,
            "premium_requests": self.premium_requests,
            # "cost" null when not known (cost_kind unknown) or not recorded (not_recorded);
            # a lower bound when cost_kind is partial; cost_at_list_price beside a recorded
            # $0 that the list price says was not free (agents/prices/costs.py).
            **self.cost_facts.to_json(),
            # Whether some of it is the index's estimate at list price (most agents record no
            # costs: Claude Code, Codex, …; `xcsh-store prices` shows each price).
            "cost_estimated": self.cost_facts.estimated > 0,
            "unpriced_entries": self.unpriced_entries,
            "id_shared": self.id_shared,
            # "file" while its file is there, "archived" once it is gone (its session is then
            # read from the store's archive: docs/archive.md), with when it was found gone.
            "source": "archived" if self.source_gone_at else "file",
            "source_gone_at": self.source_gone_at,
            **host_of(self),
        }


# A session as either index returns it (IndexedSession, TeamSession): its fields, what it
# derives from them, and its JSON shape.
ReadSession = SessionRecord


def reads_columns(
    columns: Iterable[Column], read: Callable[[Column], Any]
) -> Callable[[type[_Record]], type[_Record]]:
    """A session record class given a field for each of ``columns`` (session columns the record
    reads: model/columns.py) that it does not define itself, read as ``read`` makes it (a
    property): the fields SessionRecord types once for both indexes."""

    def decorate(record: type[_Record]) -> type[_Record]:
        for column in columns:
            if column.field and column.field not in vars(record):
                setattr(record, column.field, read(column))
        return record

    return decorate


def host_of(record: Any) -> dict[str, str]:
    """``{"host": …}`` for a record of the team index, else nothing."""
    host = getattr(record, "host", None)
    return {} if host is None else {"host": host}


@reads_columns(
    record_fields(True) + record_fields(False),
    lambda column: _listed(column.name) if column.listed else _detail(column.name),
)
class IndexedSession(SessionRecord):
    """A session as listed by the index: the fields of ``SessionInfo`` and a few more.

    Built from the row of the few columns a listing shows (two attributes set per session:
    listing 10,000 takes milliseconds). Every other field is read on first use, for all the
    sessions of the same listing in one query, or when the index closes; so a field read later
    says what the index says then (a sync in between may have changed the session, and one
    that removed it makes the field raise SessionNotFoundError).
    """

    __slots__ = ("__dict__", "_listing", "_row")  # __dict__: all_messages_text, cached

    def __init__(self, row: tuple[Any, ...], listing: Listing) -> None:
        self._row = row
        self._listing = listing

    file_id: int = _listed("file_id")

    @property
    def cost_facts(self) -> CostFacts:
        """How its costs are known (a session without usage: not recorded)."""
        found = self._details()[_COST_FACTS]
        facts = CostFacts() if found is None else CostFacts.of_row(orjson.loads(found))
        return facts.summed_as(self.cost)

    @property
    def first_prompt(self) -> str | None:
        """The text of the first user message, None when there is none."""
        start = self._row[_FIRST_AT]  # read by the listing only when there is no title
        if self._row[_TITLE_AT] or (start is not None and len(start) >= FIRST_MESSAGE_LISTED):
            start = self._details()[_FIRST_MESSAGE]
        return start or None

    @property
    def legacy(self) -> bool:
        """Whether the file is v1/v2 (a format migration would rewrite it)."""
        return bool(self._details()[_LEGACY])

    @property
    def id_shared(self) -> bool:
        """Whether another indexed file has the same session id (a copy, or a clash)."""
        return self._row[_SESSION_ID] in self._listing.shared_ids()

    @cached_property
    def all_messages_text(self) -> str:
        """Every user and assistant text, read from the file on first use (it can be large)."""
        return self._listing.index.all_messages_text(self)

    def _details(self) -> tuple[Any, ...]:
        return self._listing.details(self._row[_FILE_ID])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexedSession):
            return NotImplemented
        return self._row == other._row and self._details() == other._details()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"IndexedSession(file_id={self.file_id}, session_id={self.session_id!r},"
            f" cwd={self.cwd!r}, title={self.title!r})"
        )


def _whole_session(row: tuple[Any, ...], index: SessionStore) -> IndexedSession:
    """A session from a row of every column (a lookup of one session: nothing is left to
    read later)."""
    listed, details, twin = row[: len(_LISTED)], row[len(_LISTED) : -1], row[-1]
    file_id, session_id = listed[_FILE_ID], listed[_SESSION_ID]
    listing = Listing(
        index,
        [listed],
        {file_id: _local_details(details, index)},
        {session_id} if twin else set(),
    )
    return IndexedSession(listed, listing)


def _select_sessions(clauses: str, extra_column: str | None = None) -> str:
    """The query of whole sessions: the columns :func:`_whole_session` reads (then
    ``extra_column``), then ``clauses`` (WHERE, ORDER BY, LIMIT)."""
    columns = f"{_LISTED_COLUMNS}, {_DETAIL_COLUMNS}, {_TWIN}"
    if extra_column is not None:
        columns = f"{columns}, {extra_column}"
    return f"SELECT {columns}{_FROM}{clauses}"


def project_condition(column: str, project: str) -> tuple[str, list[Any]]:
    """SQL that keeps the sessions of a project (questions.project_folder): those whose
    working directory (``column``) is the folder ``project`` or one inside it."""
    found = project_folder(project)
    if found is None:
        return f"{column} = ?", [project]  # (no folder: only a session without a cwd)
    folder, inside = found
    return f"({column} = ? OR substr({column}, 1, ?) = ?)", [folder, len(inside), inside]


def agents_condition(column: str, agents: tuple[str, ...]) -> str:
    """SQL that keeps the rows whose ``column`` is one of ``agents`` (questions.known_agents),
    which are its values."""
    return f"{column} IN ({','.join('?' * len(agents))})"


# Where each field of a SessionFilter is compared, by question (the team index keeps its own
# maps: team/reader.py): a listing keeps the sessions active in the span (modified since,
# started before until), a search and usage the entries in it.
LISTING_FILTER = {"cwd": "s.cwd", "project": "s.cwd", "agents": "s.agent",
                  "since": "s.modified_at", "until": "s.created_at",
                  "archived": "s.file_id"}  # fmt: skip
SEARCH_FILTER = {"cwd": "s.cwd", "project": "s.cwd", "agents": "s.agent",
                 "since": "e.timestamp", "until": "e.timestamp"}  # fmt: skip
USAGE_FILTER = {"cwd": "cwd", "project": "cwd", "agents": "agent",
                "since": "timestamp", "until": "timestamp"}  # fmt: skip


def filter_sql(
    session_filter: SessionFilter, columns: dict[str, str]
) -> tuple[list[str], list[Any]]:
    """The SQLite conditions (to be ANDed) and their values that keep what ``session_filter``
    keeps, each field compared with its column in ``columns`` (index.db's compiler of a
    filter: team/reader.filter_sql is the team index's). A field set that ``columns`` has no
    column for (a host: index.db has none) is a ValueError."""
    if session_filter.host is not None:
        raise ValueError("host: only a team index (--db) knows hosts")
    refuse_unasked(session_filter, columns, "index.db")
    conditions: list[str] = []
    arguments: list[Any] = []
    if session_filter.cwd is not None:
        conditions.append(f"{columns['cwd']} = ?")
        arguments.append(session_filter.cwd)
    if session_filter.project is not None:
        condition, values = project_condition(columns["project"], session_filter.project)
        conditions.append(condition)
        arguments += values
    if session_filter.agents:
        conditions.append(agents_condition(columns["agents"], session_filter.agents))
        arguments += session_filter.agents
    for name, operator in (("since", ">="), ("until", "<")):
        bound = getattr(session_filter, name)
        if bound is not None:
            conditions.append(f"{columns[name]} {operator} ?")
            arguments.append(bound)
    if session_filter.archived is not None:
        # (The partial index files_gone holds the gone files: migration 0014.)
        among = "IN" if session_filter.archived else "NOT IN"
        conditions.append(
            f"{columns['archived']} {among} (SELECT id FROM files WHERE gone_at IS NOT NULL)"
        )
    return conditions, arguments


def list_sessions(index: SessionStore, query: SessionQuery) -> list[IndexedSession]:
    """The sessions of ``query.filter`` (of one cwd, or of a project: a folder and those inside
    it; with ``since``/``until``, those active in that span: modified at or after ``since``,
    started before ``until``), newest first or by ``created``/``title``.

    SQLite does the filtering, ordering and limit, from indexes that hold the sessions in
    that order; only the columns a listing shows are read (see IndexedSession).
    """
    conditions, arguments = filter_sql(query.filter, LISTING_FILTER)
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    sql = f"SELECT {_LISTED_COLUMNS} FROM sessions AS s{where} ORDER BY {_ORDERS[query.order]}"
    if query.limit is not None:
        sql += " LIMIT ?"
        arguments.append(query.limit)
    rows = index.connection.execute(sql, arguments).fetchall()
    listing = Listing(index, rows)
    index.listings.add(listing)
    return [IndexedSession(row, listing) for row in rows]


def find_session(index: SessionStore, prefix: str) -> IndexedSession:
    """:meth:`SessionIndex.find_session`: a path, else the one file whose id, file name or part
    after ``_`` starts with ``prefix`` (case-insensitive), a whole match winning."""
    text = prefix.strip()
    if not text:
        raise SessionNotFoundError("No session matches an empty id")
    if os.sep in text or text.endswith(".jsonl"):
        path = os.path.abspath(text)
        if index.relocation is not None:
            path = index.relocation.to_stored(path)
        rows = index.connection.execute(_select_sessions(" WHERE s.path = ?"), (path,)).fetchall()
        if rows:
            return _whole_session(rows[0], index)
    # The file name is what follows the last "/", its suffix what follows the last "_".
    after_last = "replace(s.path, rtrim(s.path, replace(s.path, '{0}', '')), '')"
    name, suffix = after_last.format("/"), after_last.format("_")
    matches = " OR ".join(
        f"lower({column}) LIKE ?1 ESCAPE '\\'" for column in ("s.session_id", name, suffix)
    )
    whole = (
        f"(lower(s.session_id) = ?2 OR lower({name}) IN (?2, ?2 || '.jsonl')"
        f" OR lower({suffix}) IN (?2, ?2 || '.jsonl'))"
    )
    rows = index.connection.execute(
        _select_sessions(
            f" WHERE {matches} ORDER BY whole DESC, s.modified_at DESC LIMIT ?3",
            extra_column=f"{whole} AS whole",
        ),
        (_like_prefix(text.lower()), text.lower(), AMBIGUOUS_LISTED + 1),
    ).fetchall()
    exact = [row for row in rows if row[-1]]
    found = exact or rows
    if not found:
        raise SessionNotFoundError(f"No session matches {prefix!r}")
    if len(found) > 1:
        total = len(found)
        if not exact and total > AMBIGUOUS_LISTED:
            ((total,),) = index.connection.execute(
                f"SELECT count(*) FROM sessions AS s WHERE {matches}",
                (_like_prefix(text.lower()),),
            )
        sessions = [_whole_session(row[:-1], index) for row in found[:AMBIGUOUS_LISTED]]
        raise _ambiguous(prefix, sessions, total, index)
    return _whole_session(found[0][:-1], index)


def session_by_file_id(index: SessionStore, file_id: int) -> IndexedSession:
    rows = index.connection.execute(_select_sessions(" WHERE s.file_id = ?"), (file_id,)).fetchall()
    if not rows:
        raise SessionNotFoundError(f"No session with file id {file_id}")
    return _whole_session(rows[0], index)


def all_messages_text(connection: apsw.Connection, session: IndexedSession) -> str:
    """Every user and assistant text of the session, read from its file, joined by spaces."""
    from xcsh_store.format.entries import content_text
    from xcsh_store.index.archive.sources import sources_of
    from xcsh_store.index.model.paths import entry_rows, read_entries

    rows = [
        row
        for row in entry_rows(connection, session.file_id)
        if row.type == "message" and row.role in ("user", "assistant")
    ]
    values = read_entries(session.path, rows, None, session.agent, sources_of(connection))
    texts = [
        content_text(value["message"].get("content"))
        for value in values
        if type(value.get("message")) is dict
    ]
    return " ".join(text for text in texts if text)


def skipped_lines(connection: apsw.Connection, file_id: int | None) -> dict[str, SkippedLines]:
    """Lines that hold no JSON object, by file: of every indexed file, or of file ``file_id``."""
    from xcsh_store.index.model.facts import SkippedLines  # (a listing never needs it)

    sql = "SELECT path, skipped_count, skipped_lines FROM files WHERE skipped_count > 0"
    arguments: tuple[Any, ...] = ()
    if file_id is not None:
        sql += " AND id = ?"
        arguments = (file_id,)
    rows = connection.execute(sql + " ORDER BY path", arguments)
    return {
        path: SkippedLines(count, orjson.loads(numbers or "[]")) for path, count, numbers in rows
    }


def find_entry_id(connection: apsw.Connection, file_id: int, text: str) -> str:
    """:meth:`SessionIndex.find_entry_id` in the file ``file_id``."""
    # The (session, id) unique index answers both: the exact id, then an id range.
    rows = list(
        connection.execute(
            "SELECT id FROM entries WHERE session = ?1 AND id = ?2 UNION ALL"
            " SELECT * FROM (SELECT id FROM entries WHERE session = ?1 AND id > ?2"
            " AND id < ?2 || char(1114111) ORDER BY id LIMIT ?3)",
            (file_id, text, AMBIGUOUS_LISTED + 1),
        )
    )
    ids = [entry_id for (entry_id,) in rows]
    if not text or not ids:
        raise EntryNotFoundError(text)
    if ids[0] == text or len(ids) == 1:
        return ids[0]
    listed = ids[:AMBIGUOUS_LISTED]
    total = len(ids)
    if total > len(listed):
        ((total,),) = connection.execute(
            "SELECT count(*) FROM entries WHERE session = ?1 AND id > ?2"
            " AND id < ?2 || char(1114111)",
            (file_id, text),
        )
    prefixes = unique_entry_prefixes(connection, file_id, listed)
    raise AmbiguousEntryError(
        f"Entry id {text!r} is ambiguous: {total} entries start with it"
        f" ({_more(', '.join(prefixes[entry_id] for entry_id in listed), total, len(listed))});"
        " give more of it",
        listed,
    )


def _more(listed: str, total: int, shown: int) -> str:
    """``listed``, and how many more there are than the ones it shows."""
    return listed + (f", and {total - shown:,} more" if total > shown else "")


def _ambiguous(
    prefix: str, sessions: list[IndexedSession], total: int, index: SessionStore
) -> AmbiguousSessionError:
    """The one line that names at most :data:`AMBIGUOUS_LISTED` of the ``total`` matches, each
    by the short id that selects it and its title; files that share an id by their paths."""
    ids = [session.session_id for session in sessions]
    prefixes = unique_id_prefixes(index.connection, ids)
    names = []
    for session in sessions:
        if ids.count(session.session_id) > 1:
            names.append(session.path)
            continue
        title = " ".join((session.title or session.first_message or "").split())
        if len(title) > AMBIGUOUS_TITLE_CHARS:
            title = title[: AMBIGUOUS_TITLE_CHARS - 1] + "…"
        names.append(prefixes[session.session_id] + (f' "{title}"' if title else ""))
    head = (
        f"{prefix!r} matches {total:,} session files; give more of the id, the file name or the"
        " path"
    )
    more = [f"and {total - len(sessions):,} more"] if total > len(sessions) else []
    return AmbiguousSessionError(
        f"{head}: {_more(', '.join(names), total, len(sessions))}",
        [session.path for session in sessions],
        [head + ":", *names, *more],
    )


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
