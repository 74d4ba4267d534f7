"""``TeamIndex``: the reading side of ``SessionIndex`` answered by the team index, so that the
read verbs (``ls``, ``search``, ``show``, ``usage``, ``history``) run unchanged over it
(``--db postgresql://…``). It answers the same questions (index.IndexReader: the types of
index/read/questions.py), compiled to PostgreSQL here (``filter_sql``), and returns the
index's own kinds of records, each with the host it came from: sessions with the fields of
IndexedSession, SearchHit, UsageRow, PromptHit.

Search is PostgreSQL's full-text search: the ``search`` tsvector of each entry (GIN index),
``websearch_to_tsquery`` for the words, phrases and -exclusions (the last plain word also as a
prefix, as the local search reads it), ``ts_rank_cd`` then recency for the order and
``ts_headline`` for the snippet. Trees and contexts are rebuilt from the entries' raw JSON,
which only the ``full`` tier carries.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import psycopg

from xcsh_store.agents.prices.costs import FACTS_SQL, CostFacts
from xcsh_store.errors import (
    AmbiguousEntryError,
    AmbiguousSessionError,
    EntryNotFoundError,
    SearchQueryError,
    SessionNotFoundError,
)
from xcsh_store.format.context import SessionContext, build_session_context, path_to_root
from xcsh_store.index import (
    MIN_PREFIX,
    SESSION_ROW,
    WINDOW,
    EntryUsage,
    IndexedEntry,
    PromptHit,
    PromptQuery,
    SearchHit,
    SearchQuery,
    SessionFilter,
    SessionOutline,
    SessionQuery,
    SessionRecord,
    SkippedLines,
    UsageQuery,
    UsageRow,
    build_tree,
    labels_of,
    model_match,
    prefix_apart,
    project_folder,
    reads_columns,
    refuse_unasked,
    usage_groups,
    usage_row,
)
from xcsh_store.team.errors import PrivilegedRoleError, TeamIndexError
from xcsh_store.team.server import connect, server_errors

if TYPE_CHECKING:
    from xcsh_store.glance.spend import BudgetStatus
    from xcsh_store.index import QuotaWindow

# The groupings of ``usage`` as PostgreSQL expressions over usage_entries (the local ones,
# index/read/usage.py, plus host). Timestamps are ISO 8601 text, as in the local index.
_DAY = "CASE WHEN timestamp ~ '^\\d{4}-\\d{2}-\\d{2}' THEN substr(timestamp, 1, 10) END"
USAGE_GROUPS = {
    "day": f"({_DAY})",
    "week": f"to_char(date_trunc('week', ({_DAY})::date), 'YYYY-MM-DD')",
    "month": f"substr(({_DAY}), 1, 7)",
    "model": "coalesce(provider || '/', '') || coalesce(model, '?')",
    "provider": "coalesce(provider, '?')",
    "project": "project_dir",
    "session": "session_id",
    "agent": "agent",
    "root-session": "coalesce(parent_session_id, session_id)",
    "host": "host",
}
# The predefined roles whose members reach beyond the database: a shell command on the database
# host (COPY … TO PROGRAM), and its files (COPY … FROM/TO a file, pg_read_file, lo_import); and
# the functions that read its files or reload its configuration (a superuser's unless granted).
SERVER_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files")
SERVER_FUNCTIONS = (
    "pg_read_file(text)", "pg_read_binary_file(text)", "pg_ls_dir(text)", "lo_import(text)",
    "lo_export(oid, text)", "pg_reload_conf()",
)  # fmt: skip
_SUMMED = "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost"
_ORDERS = {
    "modified": "modified_at DESC, host, path",
    "created": "created_at DESC, host, path",
    "title": "nullif(trim(coalesce(title, compaction_title)), '') IS NULL,"
    " lower(nullif(trim(coalesce(title, compaction_title)), '')), modified_at DESC, host, path",
}
_PLAIN_WORD = re.compile(r"^[^\W_]+$")
# What the search column makes a space (migrations/0001): all but letters and digits. A query
# loses the same characters, keeping its websearch syntax: quotes and a leading minus.
_SEPARATORS = re.compile(r"(?:[^\w\s\"-]|_|(?<=\w)-)+")


# A team session's row: its key (host and path), the session columns the record reads that
# the team index keeps (model/columns.py), whether another file shares its id, how its costs
# are known.
_RECORD_COLUMNS = tuple(column for column in SESSION_ROW if column.field and column.postgres)
_FIELDS = (
    "host", "path", *(str(column.field) for column in _RECORD_COLUMNS), "id_shared", "cost_facts",
)  # fmt: skip
_AT = {name: position for position, name in enumerate(_FIELDS)}
# What they are read from: their columns, but these.
_FIELDS_AS = {
    "host": "host",
    "path": "path",
    "cwd": "coalesce(cwd, '')",
    "title": "coalesce(nullif(title, ''), compaction_title)",
    "id_shared": "EXISTS (SELECT 1 FROM sessions AS twin WHERE twin.session_id = s.session_id"
    " AND (twin.host, twin.path) <> (s.host, s.path))",
    # How its costs are known (agents/prices/costs.py), as the local index sums them.
    "cost_facts": f"(SELECT json_build_array({FACTS_SQL}) FROM entries AS e WHERE e.host = s.host"
    " AND e.path = s.path AND e.input_tokens IS NOT NULL)",
}
_READ_AS = {str(column.field): column.name for column in _RECORD_COLUMNS} | _FIELDS_AS
_SESSION_COLUMNS = ", ".join(_READ_AS[name] for name in _FIELDS)


def _field(name: str) -> Any:
    """A field of TeamSession: ``name`` of its row."""
    position = _AT[name]
    return property(lambda session: session._row[position])


@reads_columns(_RECORD_COLUMNS, lambda column: _field(str(column.field)))
class TeamSession(SessionRecord):
    """A session on the team index: the fields of SessionRecord, read from its row, and its
    host (its totals and JSON shape are SessionRecord's, as IndexedSession's)."""

    __slots__ = ("_row",)

    def __init__(self, row: Sequence[Any]) -> None:
        self._row = tuple(row)

    host: str = _field("host")
    path: str = _field("path")
    id_shared: bool = _field("id_shared")
    cost_facts: CostFacts = _field("cost_facts")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TeamSession):
            return NotImplemented
        return self._row == other._row

    def __hash__(self) -> int:
        return hash(self._row)

    def __repr__(self) -> str:
        return (
            f"TeamSession(host={self.host!r}, session_id={self.session_id!r},"
            f" cwd={self.cwd!r}, title={self.title!r})"
        )


def _session(row: Sequence[Any]) -> TeamSession:
    # The cost facts summed as the session row's cost was (the dollars the local index shows).
    return TeamSession([*row[:-1], CostFacts.of_row(row[-1]).summed_as(row[_AT["cost"]])])


@dataclass(frozen=True, slots=True)
class TeamHit(SearchHit):
    """A search hit on the team index, with its host."""

    host: str = ""


@dataclass(frozen=True, slots=True)
class TeamPromptHit(PromptHit):
    """A prompt of a host's history on the team index."""

    host: str = ""


# An entry of a model: an id, or provider/model as usage prints it (questions.model_match).
_MODEL_CONDITION = "(e.model = %(model)s OR (e.provider = %(pr)s AND e.model = %(mn)s))"


def _model_arguments(model: str) -> dict[str, str]:
    return dict(zip(("model", "pr", "mn"), model_match(model), strict=True))


class TeamIndex:
    """The read verbs' questions, answered by the team index at ``url``."""

    def __init__(self, connection: psycopg.Connection[Any], url: str) -> None:
        self.connection = connection
        self.url = url

    @classmethod
    def open(cls, url: str) -> TeamIndex:
        connection = connect(url, read_only=True)
        connection.read_only = True
        return cls(connection, url)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> TeamIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _rows(self, sql: str, arguments: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        with server_errors(self.url, "reading"):
            rows = self.connection.execute(sql, arguments).fetchall()
            self.connection.rollback()
        return rows

    # -- sessions ---------------------------------------------------------------------------

    def sessions(self, query: SessionQuery) -> list[TeamSession]:
        """The listing ``query`` asks for, over every host (index.IndexReader)."""
        arguments: dict[str, Any] = {"limit": query.limit}
        refuse_unasked(query.filter, _LISTING_FILTER, _TEAM_INDEX)
        where = filter_sql(query.filter, arguments, _LISTING_FILTER)
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions AS s WHERE true{where}"
        sql += f" ORDER BY {_ORDERS[query.order]} LIMIT %(limit)s"
        return [_session(row) for row in self._rows(sql, arguments)]

    def find_session(self, prefix: str) -> TeamSession:
        """As SessionIndex.find_session, over every host: a path (``host:path`` to pick one
        host's file; a path pushed with --redact-paths starts with its folder's label), else an
        id or file-name prefix that one file matches."""
        text = prefix.strip()
        if not text:
            raise SessionNotFoundError("No session matches an empty id")
        host, colon, path = text.partition(":")
        if not (colon and "/" not in host and _is_path(path)):
            host, path = "", text
        if _is_path(path):
            found = self._rows(
                f"SELECT {_SESSION_COLUMNS} FROM sessions AS s WHERE path = %s"
                " AND (%s = '' OR host = %s) ORDER BY host",
                (path, host, host),
            )
        else:
            folded = text.lower()
            found = self._rows(
                f"SELECT {_SESSION_COLUMNS} FROM sessions AS s"
                " WHERE lower(session_id) LIKE %s ESCAPE '\\'"
                " OR lower(regexp_replace(path, '^.*/', '')) LIKE %s ESCAPE '\\'"
                " OR lower(regexp_replace(path, '^.*/[^_]*_', '')) LIKE %s ESCAPE '\\'"
                " ORDER BY modified_at DESC, host, path LIMIT 21",
                (_like_prefix(folded),) * 3,
            )
            whole = [
                row for row in found if row[2].lower() == folded or _file_name(row[1]) == folded
            ]
            found = whole or found
        if not found:
            raise SessionNotFoundError(f"No session matches {text!r} on the team index")
        if len(found) > 1:
            candidates = [f"{row[0]}:{row[1]}" for row in found[:20]]
            raise AmbiguousSessionError(
                f"{text!r} matches {len(found)} sessions; give host:path of one", candidates
            )
        return _session(found[0])

    def unique_id_prefixes(
        self, session_ids: Iterable[str], minimum: int = MIN_PREFIX
    ) -> dict[str, str]:
        """As index.unique_id_prefixes: the shortest prefix no other session on any host has."""
        prefixes = {}
        for session_id in set(session_ids):
            key = session_id.lower()
            (below, above), = self._rows(
                "SELECT (SELECT max(lower(session_id)) FROM sessions WHERE lower(session_id) < %s),"
                " (SELECT min(lower(session_id)) FROM sessions WHERE lower(session_id) > %s)",
                (key, key),
            )  # fmt: skip
            prefixes[session_id] = session_id[: len(prefix_apart(key, (below, above), minimum))]
        return prefixes

    def entry_id_prefixes(self, where: Any, entry_ids: Iterable[str]) -> dict[str, str]:
        """As SessionIndex.entry_id_prefixes, in the file of ``where`` (a session or a hit:
        its host and path)."""
        prefixes = {}
        for entry_id in set(entry_ids):
            (below, above), = self._rows(
                "SELECT (SELECT max(id) FROM entries WHERE host = %(h)s AND path = %(p)s"
                " AND id < %(e)s), (SELECT min(id) FROM entries WHERE host = %(h)s"
                " AND path = %(p)s AND id > %(e)s)",
                {"h": where.host, "p": where.path, "e": entry_id},
            )  # fmt: skip
            prefixes[entry_id] = prefix_apart(entry_id, (below, above))
        return prefixes

    def skipped_lines(self, session: Any = None) -> dict[str, SkippedLines]:
        """The team index keeps no skipped lines: only the entries of the files."""
        return {}

    def text_pending(self) -> int:
        """The team index has no search text to add later: a push sends every entry's."""
        return 0

    def entries_pending(self) -> int:
        """Nor entries: a push sends a session once its entries are indexed."""
        return 0

    # -- trees ------------------------------------------------------------------------------

    def _entries(self, info: TeamSession) -> list[tuple[IndexedEntry, dict[str, Any]]]:
        """Every entry of the session as a tree row and its JSON (from raw: full tier only)."""
        rows = self._rows(
            "SELECT seq, id, parent_id, type, timestamp, role, provider, model, tool_name,"
            " custom_type, raw FROM entries WHERE host = %s AND path = %s ORDER BY seq",
            (info.host, info.path),
        )
        if rows and all(row[10] is None for row in rows):
            raise TeamIndexError(
                f"{info.host} pushes at a tier below full: the entries of its sessions have no"
                " JSON on the team index (push with --tier full to see them)"
            )
        entries = []
        for seq, *fields, raw in rows:
            value = orjson.loads(raw) if raw is not None else {"type": fields[2]}
            if fields[0] is not None:  # ids a v1/v2 file lacks come from its migration
                value.setdefault("id", fields[0])
                value.setdefault("parentId", fields[1])
            columns = (seq, seq, *fields, 0, 0, 0)  # no offset, length or part on the server
            entries.append((IndexedEntry(*columns), value))
        return [(row, value) for row, value in entries if value.get("type") != "session"]

    def entry_usage(self, session: TeamSession) -> dict[str, EntryUsage]:
        """As SessionIndex.entry_usage: entry id -> an EntryUsage, for the entries that carry
        one (a push sends the figures as the local index holds them, each response once)."""
        rows = self._rows(
            "SELECT id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost"
            " FROM entries WHERE host = %s AND path = %s AND id IS NOT NULL"
            " AND input_tokens IS NOT NULL ORDER BY seq",
            (session.host, session.path),
        )
        return {
            entry_id: EntryUsage(inputs or 0, outputs or 0, reads or 0, writes or 0, cost)
            for entry_id, inputs, outputs, reads, writes, cost in rows
        }

    def branch_entries(self, session: TeamSession, leaf_id: str | None = None) -> list[Any]:
        values = [value for _, value in self._entries(session)]
        return _path(values, leaf_id or session.last_entry_id)

    def context(self, session: TeamSession, leaf_id: str | None = None) -> SessionContext:
        values = [value for _, value in self._entries(session)]
        leaf = leaf_id or session.last_entry_id
        return build_session_context(values, leaf) if values and leaf else SessionContext()

    def outline(self, session: TeamSession, leaf_id: str | None = None) -> SessionOutline:
        entries = self._entries(session)
        tree = build_tree([row for row, _ in entries if row.id is not None])
        by_id = {row.id: value for row, value in entries if row.id is not None}
        leaf = leaf_id or session.last_entry_id
        active = [value["id"] for value in _path(list(by_id.values()), leaf)]
        return SessionOutline(session, tree, by_id, labels_of(by_id.values()), leaf, active)  # type: ignore[arg-type]

    def find_entry_id(self, session: TeamSession, text: str) -> str:
        ids = [
            row[0]
            for row in self._rows(
                "SELECT id FROM entries WHERE host = %s AND path = %s AND id LIKE %s ESCAPE '\\'"
                " ORDER BY seq LIMIT 21",
                (session.host, session.path, _like_prefix(text)),
            )
        ]
        if text in ids:
            return text
        if not ids:
            raise EntryNotFoundError(text)
        if len(ids) > 1:
            raise AmbiguousEntryError(f"Entry id {text!r} is ambiguous", ids[:20])
        return ids[0]

    def on_active_branch(self, hit: TeamHit) -> bool:
        info = self.find_session(f"{hit.host}:{hit.path}")
        if hit.entry_id is None or info.last_entry_id is None:
            return False
        found = self._rows(
            "WITH RECURSIVE up (id, parent_id) AS ("
            " SELECT id, parent_id FROM entries WHERE host = %(h)s AND path = %(p)s AND id = %(l)s"
            " UNION SELECT e.id, e.parent_id FROM entries AS e JOIN up ON e.id = up.parent_id"
            " WHERE e.host = %(h)s AND e.path = %(p)s)"
            " SELECT 1 FROM up WHERE id = %(e)s",
            {"h": hit.host, "p": hit.path, "l": info.last_entry_id, "e": hit.entry_id},
        )  # fmt: skip
        return bool(found)

    # -- search -----------------------------------------------------------------------------

    def has_model(self, model: str) -> bool:
        """As SessionIndex.has_model, over every host's entries."""
        found = self._rows(
            f"SELECT 1 FROM entries AS e WHERE {_MODEL_CONDITION} LIMIT 1", _model_arguments(model)
        )
        return found != []

    def hits(self, query: SearchQuery) -> list[TeamHit]:
        """The hits of the search ``query`` (index.IndexReader)."""
        refuse_unasked(query.filter, {**_HIT_FILTER, **_HIT_SESSION_FILTER}, _TEAM_INDEX)
        tsquery, arguments = _tsquery(query.text)
        where = "" if query.role is None else " AND e.role = %(role)s"
        arguments["role"] = query.role
        where += filter_sql(query.filter, arguments, _HIT_FILTER)
        by_session = filter_sql(query.filter, arguments, _HIT_SESSION_FILTER)
        if by_session:
            where += (
                " AND EXISTS (SELECT 1 FROM sessions AS s WHERE s.host = e.host"
                f" AND s.path = e.path{by_session})"
            )
        if query.model is not None:
            where += f" AND {_MODEL_CONDITION}"
            arguments |= _model_arguments(query.model)
        start, stop = (mark.replace('"', "") for mark in query.highlight)
        arguments |= {
            "limit": query.limit,
            "options": f'StartSel="{start}", StopSel="{stop}", MaxWords=14, MinWords=6,'
            ' MaxFragments=1, FragmentDelimiter=" … "',
        }
        # As the local search (index/read/ranking.py WINDOW), only the newest matches are ranked:
        # a common word matches most entries, and ranking reads every match's tsvector. The
        # newest come from entries_timestamp, newest first, for a word that most entries hold,
        # or from the GIN index and a sort, for a rarer one: the planner weighs the two, so
        # the query is written out where it filters (a constant it can estimate).
        rows = self._rows(
            f"WITH q AS (SELECT {tsquery} AS q),"
            " recent AS (SELECT e.host, e.path, e.seq FROM entries AS e"
            f"  WHERE e.search @@ ({tsquery}){where}"
            "  ORDER BY e.timestamp DESC NULLS LAST LIMIT %(window)s),"
            " hit AS (SELECT e.host, e.path, e.seq, s.session_id,"
            "  coalesce(nullif(s.title, ''), s.compaction_title) AS title, s.cwd, e.id, e.type,"
            "  e.role, e.model, e.timestamp, ts_rank_cd(e.search, q.q) AS score, s.agent"
            "  FROM q, recent JOIN entries AS e USING (host, path, seq)"
            "  JOIN sessions AS s ON s.host = e.host AND s.path = e.path"
            "  ORDER BY score DESC, e.timestamp DESC NULLS LAST, e.host, e.path, e.seq"
            "  LIMIT %(limit)s)"
            " SELECT hit.*, ts_headline('simple', left(e.text, 20000), q.q, %(options)s)"
            " FROM q, hit JOIN entries AS e USING (host, path, seq)"
            " ORDER BY hit.score DESC, hit.timestamp DESC NULLS LAST, hit.host, hit.path,"
            " hit.seq",
            arguments | {"window": WINDOW},
        )
        # session id, path, title, cwd, entry id, type, role, model, timestamp, snippet, score,
        # file id (none here), pk (its seq), agent, host
        return [
            TeamHit(row[3], row[1], row[4], row[5], row[6], row[7], row[8], row[9], row[10],
                    row[13], -row[11], 0, row[2], row[12], row[0])
            for row in rows
        ]  # fmt: skip

    # -- prompts ----------------------------------------------------------------------------

    # The team index holds each host's history.db: xcsh's prompts only.
    def prompts(self, query: PromptQuery) -> list[TeamPromptHit]:
        """The prompts ``query`` recalls (index.IndexReader): the team index holds each host's
        history.db, xcsh's prompts only."""
        if query.agents and "xcsh" not in query.agents:
            return []
        if query.text is None:
            return self._prompts("", {"limit": query.limit})
        words = _SEPARATORS.sub(" ", query.text).replace('"', " ").split()
        if not words:
            return []
        return self._prompts(
            "WHERE h.search @@ to_tsquery('simple', %(q)s)",
            {"q": " & ".join(_prefix_term(word) for word in words), "limit": query.limit},
        )

    def _prompts(self, where: str, arguments: dict[str, Any]) -> list[TeamPromptHit]:
        rows = self._rows(
            "SELECT h.host, h.id, h.prompt, h.created_at, h.cwd, l.session_id, l.path, l.id"
            f" FROM history AS h LEFT JOIN LATERAL (SELECT s.session_id, s.path, e.id"
            "  FROM entries AS e JOIN sessions AS s ON s.host = e.host AND s.path = e.path"
            "  WHERE e.host = h.host AND e.prompt_hash = h.prompt_hash"
            "  ORDER BY e.timestamp LIMIT 1) AS l ON true"
            f" {where} ORDER BY h.created_at DESC, h.host, h.id DESC LIMIT %(limit)s",
            arguments,
        )
        return [
            TeamPromptHit(prompt, created, cwd, "history", history_id, session_id, path, entry,
                          host=host)
            for host, history_id, prompt, created, cwd, session_id, path, entry in rows
        ]  # fmt: skip

    # -- usage ------------------------------------------------------------------------------

    def usage_rows(self, query: UsageQuery) -> list[UsageRow]:
        """The usage sums ``query`` asks for, over every host (index.IndexReader); days,
        weeks and months are UTC's.

        Summed from usage_rollup (a few rows per session) where the bounds are whole days (or
        none), no folder is asked for (the rollup keeps none) and the host's rollup is up to
        date; from usage_entries otherwise.
        """
        # (Bounds are compared in the source, rollup or entries; the rest in the outer query.)
        refuse_unasked(query.filter, {**_USAGE_ENTRY_FILTER, **_USAGE_FILTER}, _TEAM_INDEX)
        if query.zone not in (None, UTC) and getattr(query.zone, "key", "") not in _UTC_KEYS:
            raise ValueError(f"zone: {_TEAM_INDEX} sums days, weeks and months in UTC")
        groups = usage_groups(query.by, USAGE_GROUPS)
        keys = ", ".join(f"{USAGE_GROUPS[group]} AS key{n}" for n, group in enumerate(groups))
        names = ", ".join(f"key{n}" for n in range(len(groups)))
        # usage_row's values (index/read/usage.py USAGE_SUMS_SQL), from usage_rollup's sums
        # of the cost facts (agents/prices/costs.py): the team index keeps no premium requests.
        sums = "sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),"
        sums += " sum(cache_write_tokens), sum(entries), sum(unpriced), sum(estimated),"
        sums += " sum(free), sum(below_list),"
        # None when no entry of the group has a price (as the local index says).
        sums += " CASE WHEN sum(entries) > sum(unpriced) THEN coalesce(sum(cost), 0) END,"
        sums += " sum(list_cost), NULL,"
        sums += " array_agg(DISTINCT host || ' ' || session_id) FILTER (WHERE unpriced > 0)"
        arguments: dict[str, Any] = {}
        # usage_entries' rows as usage_rollup's: one entry each, and how its cost is known.
        per_entry = (
            "SELECT host, timestamp, provider, model, project_dir, cwd, session_id, agent,"
            " parent_session_id, 1 AS entries,"
            " (cost_estimated = 1 AND cost > 0)::int AS estimated,"
            " (cost IS NULL)::int AS unpriced,"
            " (cost = 0 AND (cost_estimated = 1 OR list_cost = 0))::int AS free,"
            " (list_cost > 0)::int AS below_list, coalesce(list_cost, 0) AS list_cost,"
            f" {_SUMMED} FROM usage_entries"
            f" WHERE true{filter_sql(query.filter, arguments, _USAGE_ENTRY_FILTER)}"
        )
        bounds = [bound for bound in (query.filter.since, query.filter.until) if bound]
        whole_days = all(bound.endswith("T00:00:00.000Z") for bound in bounds)
        if whole_days and query.filter.cwd is None and query.filter.project is None:
            stale = [host for (host,) in self._rows("SELECT host FROM hosts WHERE usage_stale")]
            arguments["stale"] = stale
            days = filter_sql(query.filter, arguments, _ROLLUP_FILTER)
            source = (
                "SELECT host, day AS timestamp, provider, model, project_dir, NULL AS cwd,"
                " session_id, agent, parent_session_id, entries, estimated, unpriced, free,"
                " below_list, list_cost,"
                f" {_SUMMED} FROM usage_rollup WHERE NOT host = ANY(%(stale)s){days}"
            )
            if stale:  # only then: the view is expensive even when it yields nothing
                source += f" UNION ALL {per_entry} AND host = ANY(%(stale)s)"
        else:
            source = per_entry
        where = filter_sql(query.filter, arguments, _USAGE_FILTER)
        rows = self._rows(
            f"SELECT {keys}, {sums} FROM ({source}) AS usage WHERE true{where}"
            f" GROUP BY {names} ORDER BY {names}",
            arguments,
        )
        return [usage_row(row, len(groups)) for row in rows]

    # -- limits -----------------------------------------------------------------------------

    def quota(
        self, limits: Any = None, now: datetime | None = None, agents: tuple[str, ...] = ()
    ) -> list[QuotaWindow]:
        """Each host's usage-limit windows that its agents' readings tell of (Codex's rate
        limits, pushed at every tier), each with its host and its pace, as the local index
        reads them (limits/quota.py). Claude's token windows are each machine's own ``quota``:
        the team index holds no host's limits for them (``limits`` is the local signature's)."""
        from xcsh_store.index import reading_window

        now = now or datetime.now(UTC)
        windows = []
        for host, *row in self._rows(_NEWEST_READINGS):
            if agents and row[0] not in agents:
                continue
            window = reading_window(row, now, host, functools.partial(self._first_reading, host))
            if window is not None:
                windows.append(window)
        return sorted(windows, key=lambda w: (w.host or "", w.agent, w.window_minutes or 0, w.slot))

    def _first_reading(
        self, host: str, agent: str, limit_id: str, window: int | str, since: str
    ) -> Any:
        """limits/quota.py's FirstReading of one host."""
        found = self._rows(_FIRST_READING, (host, agent, limit_id, str(window), since))
        return found[0] if found else None

    def budgets(self, limits: Any = None, now: datetime | None = None) -> list[BudgetStatus]:
        """Each host's budgets (pushed at every tier) with what that host spent in each
        budget's period so far (the local index's periods: glance/spend.py), by host."""
        from xcsh_store.glance.settings import Budget
        from xcsh_store.glance.spend import BudgetStatus, period_start
        from xcsh_store.times import iso_millis

        now = now or datetime.now(UTC)
        order = {"daily": 0, "weekly": 1, "monthly": 2}
        rows = self._rows(
            "SELECT host, period, scope, name, amount, warn_percent FROM budgets"
            " ORDER BY host, scope <> 'all', scope, name"
        )
        rows.sort(key=lambda row: (row[0], row[2] != "all", row[2], row[3], order[row[1]]))
        statuses = []
        for host, period, scope, name, amount, warn in rows:
            budget = Budget(period, amount, scope, name or None)
            start = period_start(period, now)
            where, arguments = _BUDGET_SCOPES[scope], [host, iso_millis(start)]
            arguments += [name] * where.count("%s")
            ((spent,),) = self._rows(
                "SELECT coalesce(sum(cost), 0) FROM usage_entries WHERE host = %s"
                f" AND timestamp >= %s AND {where}",
                arguments,
            )
            statuses.append(BudgetStatus(budget, start, float(spent), warn, host=host))
        return statuses

    # -- sql --------------------------------------------------------------------------------

    def powers(self) -> list[str]:
        """What the connected role may do on the database host beyond reading rows: be a
        superuser, be a member (directly or not, inheriting or not: SET ROLE reaches it) of a
        role that runs programs or reads or writes the server's files, or execute a function
        that reads its files or reloads its configuration."""
        checks = ["rolsuper"]
        checks += ["pg_has_role(current_user, %s, 'MEMBER')"] * len(SERVER_ROLES)
        checks += ["has_function_privilege(current_user, %s, 'EXECUTE')"] * len(SERVER_FUNCTIONS)
        (row,) = self._rows(
            f"SELECT {', '.join(checks)} FROM pg_roles WHERE rolname = current_user",
            (*SERVER_ROLES, *SERVER_FUNCTIONS),
        )
        if row[0]:
            return ["superuser"]
        names = (*SERVER_ROLES, *(f"EXECUTE on {name}" for name in SERVER_FUNCTIONS))
        return [name for name, held in zip(names, row[1:], strict=True) if held]

    def query(
        self,
        sql: str,
        parameters: dict[str, Any],
        timeout: float | None = None,
        allow_privileged: bool = False,
    ) -> TeamQuery:
        """One statement in a READ ONLY transaction (the connection's), streamed. ``:name``
        binds a parameter, as on SQLite.

        READ ONLY does not stop a superuser's ``COPY … TO PROGRAM`` or ``pg_read_file``: a
        role with such powers (``powers``) is refused unless ``allow_privileged``. The
        statement is sent alone (the extended protocol), so ``COMMIT; DELETE …`` cannot end
        the transaction and write after it.
        """
        if not allow_privileged and (powers := self.powers()):
            role = self._rows("SELECT current_user")[0][0]
            raise PrivilegedRoleError(
                f"Refusing to run SQL as {role} ({', '.join(powers)}): READ ONLY does not stop"
                " such a role from running programs or reading and writing files on the"
                " database host. Connect as a reader role (docs/security.md, Roles), or pass"
                " --allow-privileged-role if you mean it"
            )
        text = re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", sql.replace("%", "%%"))
        with server_errors(self.url, "running the query"):
            if timeout:
                self.connection.execute(
                    "SELECT set_config('statement_timeout', %s, true)", (f"{int(timeout * 1000)}",)
                )
            # Rows of a query stream through a server-side cursor, which only a query can have;
            # any other statement (refused by the READ ONLY transaction) runs as it is. Both
            # are sent with the extended protocol, which takes one statement.
            if re.match(r"\s*(SELECT|WITH|VALUES|TABLE)\b", sql, re.IGNORECASE):
                cursor: psycopg.Cursor[Any] = self.connection.cursor(name="xcsh_sql")
                cursor.execute(text, parameters)
            else:
                cursor = self.connection.cursor()
                cursor.execute(text, parameters, prepare=True)
        return TeamQuery(self.url, cursor)


class TeamQuery:
    """The rows of a query on the team index as they arrive, and their column names."""

    def __init__(self, url: str, cursor: psycopg.Cursor[Any]) -> None:
        self.url = url
        self.cursor = cursor
        with server_errors(url, "running the query"):
            first = cursor.fetchmany(1)
        self.columns = [column.name for column in cursor.description or []]
        self._first = first

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        yield from self._first
        with server_errors(self.url, "running the query"):
            yield from self.cursor


# The newest reading of each window of each host: an agent's limit, by its length (or slot when
# it has none), as the local index groups them (limits/quota.py); then the first reading of a
# window since a moment.
_WINDOW_KEY = "s.agent, coalesce(q.limit_id, s.agent), coalesce(q.window_minutes::text, q.slot)"
_NEWEST_READINGS = (
    f"SELECT DISTINCT ON (q.host, {_WINDOW_KEY}) q.host, s.agent, q.limit_id, q.window_minutes,"
    " q.slot, q.observed_at, q.used_percent, q.resets_at, q.plan_type, s.session_id"
    " FROM quota_observations AS q JOIN sessions AS s ON s.host = q.host AND s.path = q.path"
    f" ORDER BY q.host, {_WINDOW_KEY}, q.observed_at DESC, q.path, q.seq"
)
_FIRST_READING = (
    "SELECT q.observed_at, q.used_percent FROM quota_observations AS q"
    " JOIN sessions AS s ON s.host = q.host AND s.path = q.path"
    " WHERE q.host = %s AND s.agent = %s AND coalesce(q.limit_id, s.agent) = %s"
    " AND coalesce(q.window_minutes::text, q.slot) = %s AND q.observed_at >= %s"
    " ORDER BY q.observed_at, q.path, q.seq LIMIT 1"
)
# What a budget of each scope counts of its host's usage_entries (its name the parameter); a
# project's folder and the ones below it (labels, when the host sends its paths as labels, are
# equal or not: a labelled folder's subfolders have labels of their own).
_BUDGET_SCOPES = {
    "all": "true",
    "agent": "agent = %s",
    "project": "(project_dir = rtrim(%s, '/') OR starts_with(project_dir, rtrim(%s, '/') || '/'))",
}


def _path(values: list[dict[str, Any]], leaf: str | None) -> list[dict[str, Any]]:
    by_id = {value["id"]: value for value in values if isinstance(value.get("id"), str)}
    if leaf is None or leaf not in by_id:
        return []
    return path_to_root(by_id[leaf], by_id)


# Where each field of a SessionFilter is compared, by question: a field a question's columns
# leave out is compiled by another call (a search's session fields go in a subquery) or, for
# usage, by the outer query. A field set that none of a question's maps names is refused
# (questions.refuse_unasked), as index.db refuses it, never left out of the answer.
_LISTING_FILTER = {"cwd": "cwd", "project": "cwd", "agents": "agent", "host": "host",
                   "since": "modified_at", "until": "created_at",
                   "archived": "source_gone_at"}  # fmt: skip
_TEAM_INDEX = "the team index"
# The names of UTC in the time zone database (a UsageQuery's zone may be a ZoneInfo).
_UTC_KEYS = ("UTC", "Etc/UTC")
_HIT_FILTER = {"host": "e.host", "since": "e.timestamp", "until": "e.timestamp"}
_HIT_SESSION_FILTER = {"cwd": "s.cwd", "project": "s.cwd", "agents": "s.agent"}
_USAGE_ENTRY_FILTER = {"since": "timestamp", "until": "timestamp"}
_ROLLUP_FILTER = {"since": "day", "until": "day"}
_USAGE_FILTER = {"cwd": "cwd", "project": "cwd", "agents": "agent", "host": "host"}


def filter_sql(
    session_filter: SessionFilter, arguments: dict[str, Any], columns: dict[str, str]
) -> str:
    """`` AND …`` for each field of ``session_filter`` that is set and that ``columns`` names
    a column for (the team index's compiler of a filter: index/read/sessions.filter_sql is
    index.db's), its values added to ``arguments``. A ``day`` column (usage_rollup's) is
    compared with the date of a bound."""
    where = ""
    if session_filter.cwd is not None and "cwd" in columns:
        where += f" AND {columns['cwd']} = %(cwd)s"
        arguments["cwd"] = session_filter.cwd
    if session_filter.project is not None and "project" in columns:
        column, found = columns["project"], project_folder(session_filter.project)
        if found is None:
            where += f" AND {column} = ''"
        else:
            where += f" AND ({column} = %(folder)s OR left({column}, %(width)s) = %(inside)s)"
            arguments |= {"folder": found[0], "width": len(found[1]), "inside": found[1]}
    if session_filter.agents and "agents" in columns:
        where += f" AND {columns['agents']} = ANY(%(agents)s)"
        arguments["agents"] = list(session_filter.agents)
    if session_filter.host is not None and "host" in columns:
        where += f" AND {columns['host']} = %(host)s"
        arguments["host"] = session_filter.host
    for name, operator in (("since", ">="), ("until", "<")):
        bound = getattr(session_filter, name)
        if bound is not None and name in columns:
            where += f" AND {columns[name]} {operator} %({name})s"
            arguments[name] = bound[:10] if columns[name] == "day" else bound
    if session_filter.archived is not None and "archived" in columns:
        where += f" AND {columns['archived']} IS {'NOT ' if session_filter.archived else ''}NULL"
    return where


def _tsquery(query: str) -> tuple[str, dict[str, Any]]:
    """The tsquery SQL of a search and its arguments: websearch syntax for the words, phrases
    and -exclusions, the last plain word also matching as a prefix."""
    words = _SEPARATORS.sub(" ", query).split()
    if not words or not any(re.search(r"\w", word) for word in words if not word.startswith("-")):
        raise SearchQueryError(
            "Nothing to search for: give at least one word"
            " (punctuation is not searchable, and -excluded words only narrow a search)"
        )
    last = words[-1]
    if _PLAIN_WORD.match(last) and query.count('"') % 2 == 0:
        head = " ".join(words[:-1])
        prefix = _prefix_term(last)
        if head:
            sql = "websearch_to_tsquery('simple', %(head)s) && to_tsquery('simple', %(prefix)s)"
            return sql, {"head": head, "prefix": prefix}
        return "to_tsquery('simple', %(prefix)s)", {"prefix": prefix}
    return "websearch_to_tsquery('simple', %(head)s)", {"head": " ".join(words)}


def _prefix_term(word: str) -> str:
    """A to_tsquery term matching ``word`` as a prefix, whatever characters it holds."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "':*"


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _is_path(text: str) -> bool:
    return text.startswith("/") or text.endswith(".jsonl")


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1].lower().removesuffix(".jsonl")
