"""The questions the MCP server answers, as plain functions over a read-only index: each
returns a JSON-ready dict whose size is bounded (pages of entries and of text, capped counts,
cut one-line summaries), so that no answer floods an agent's context. Their parameters after
the index and their docstrings are what the server offers agents (the tool's input schema and
description).

Arguments are read as the CLI reads its options (``times`` for points in time, the index's
roles, agents and groupings; a model or project nothing has is named instead of an empty
answer), and a bad one raises ValueError (or the library's error) with one line that names it.
Times are ISO 8601 UTC (``2026-11-16T09:12:03.123Z``); costs are dollars, rounded to a
hundredth of a cent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from xcsh_store.agent_tools.bounds import Pages, cut
from xcsh_store.agents import AGENTS, UNREAD_TYPE
from xcsh_store.artifacts.pages import retold_paging_hint
from xcsh_store.artifacts.urls import read_internal_url
from xcsh_store.index import (
    SESSION_ORDERS,
    USAGE_GROUPINGS,
    IndexReader,
    PromptQuery,
    ReadSession,
    SearchQuery,
    SessionFilter,
    SessionIndex,
    SessionQuery,
    UsageQuery,
    UsageRow,
    check_filters,
    entry_summary,
    entry_text,
    message_summary,
    read_entries,
    usage_total,
)
from xcsh_store.paths import artifacts_dir_for
from xcsh_store.times import iso_millis

# How each tool's answer is shortened to fit in bounds.ANSWER_BYTES (the server does it).
PAGES = {
    "list_sessions": Pages(items="sessions"),
    "search_sessions": Pages(items="hits"),
    "get_session": Pages(items="entries"),
    "get_entry": Pages(text="text"),
    "get_context": Pages(items="messages"),
    "read_url": Pages(text="text"),
    "recall_prompts": Pages(items="prompts"),
    "usage": Pages(items="rows"),
    "quota": Pages(items="windows"),
}
# The tools, in the order the server lists them.
TOOLS = (
    "list_sessions",
    "search_sessions",
    "get_session",
    "get_entry",
    "get_context",
    "read_url",
    "recall_prompts",
    "usage",
    "quota",
)
# Caps: sessions, hits and prompts per answer, entries and messages per page, characters per
# page of an entry's whole text, how deep the pages of sessions,
# hits and prompts go (offset + limit: a search ranks that many hits to give the last page).
MAX_HITS = 50
MAX_PAGE = 200
TEXT_PAGE = 10_000
MAX_TEXT_PAGE = 50_000
MAX_REACH = 1000
# Costs to a hundredth of a cent: finer is noise in an estimate from list prices.
COST_DIGITS = 4

# Every agent the index reads, from the plugin registry (agents.AGENTS): the tools' input schema
# names them.
Agent = Literal[AGENTS]  # type: ignore[valid-type]
Order = Literal["modified", "created", "title"]
UsageGroup = Literal[
    "day", "week", "month", "model", "provider", "project", "session", "agent", "root-session"
]


def _bounded(limit: int, cap: int) -> int:
    return max(1, min(int(limit), cap))


def _window(offset: int, limit: int, cap: int) -> tuple[int, int]:
    """(offset, limit) of a page of a list ranked up to MAX_REACH deep, each within bounds."""
    limit = _bounded(limit, cap)
    return min(max(0, int(offset)), MAX_REACH - limit), limit


def _page(items: Sequence[Any], offset: int, limit: int) -> dict[str, Any]:
    """``offset``, and ``next_offset`` (null at the end) of a page of ``limit`` items of a list
    fetched up to one item past it."""
    more = len(items) > offset + limit and offset + limit < MAX_REACH
    return {"offset": offset, "next_offset": offset + limit if more else None}


_Word = TypeVar("_Word", bound=str)  # a parameter's Literal type, kept


def _one_of(name: str, value: _Word, choices: tuple[str, ...]) -> _Word:
    """``value`` when it is one of ``choices``; else the CLI's words for a bad choice."""
    if value not in choices:
        raise ValueError(f"{name}: {value!r} is not one of {', '.join(map(repr, choices))}")
    return value


def _agents(agent: str | None) -> tuple[str, ...]:
    return () if agent is None else (_one_of("agent", agent, AGENTS),)


def _cost(value: float | None) -> float | None:
    return None if value is None else round(value, COST_DIGITS)


# Fields of the library's JSON shapes that repeat another of the same answer under another
# name (an agent pays for each): a session is ``session`` (as every tool's argument names it),
# not also ``id`` and ``session_id``; its total is ``tokens``, not also ``total_tokens``; its
# leaf ``leaf_id``, not also ``last_entry_id``; its folder ``cwd``, not also ``project``.
REPEATED = frozenset(
    {"id", "session_id", "total_tokens", "last_entry_id", "project", "estimated_cost_entries",
     "unpriced_entries"}
)  # fmt: skip


def _once(shape: dict[str, Any], repeated: frozenset[str] = REPEATED) -> dict[str, Any]:
    """``shape`` without the fields of ``repeated`` (the caller adds the one name it keeps)."""
    return {key: value for key, value in shape.items() if key not in repeated}


def _session(info: ReadSession) -> dict[str, Any]:
    """The session's own shape (as ``ls --json``) without its repeated fields, its texts cut,
    its cost rounded; ``session`` (as every tool names a session), ``leaf_id`` (the leaf
    get_session reads) and ``tokens`` (its total) as this tool first named them."""
    shape = info.to_json()
    return _once(shape) | {
        "session": info.session_id,
        "title": None if info.title is None else cut(info.title),
        "first_message": None if info.first_prompt is None else cut(info.first_prompt, 200),
        "tokens": info.tokens,
        "cost": _cost(shape["cost"]),
        "cost_at_list_price": _cost(shape["cost_at_list_price"]),
        "leaf_id": info.last_entry_id,
    }


def list_sessions(
    index: IndexReader,
    since: str | None = None,
    until: str | None = None,
    cwd: str | None = None,
    project: str | None = None,
    agent: Agent | None = None,
    order: Order = "modified",
    limit: int = 20,
    offset: int = 0,
) -> dict[str, Any]:
    """Sessions, most recently active first (order: modified, created or title), with their
    title (or first prompt), folder and size. since/until (a date 2026-11-01, a time
    2026-11-01T09:30, or an age such as 1d or 12h): only sessions active in that span
    (modified at or after since, started before until): "what did I work on yesterday?" is
    since=<yesterday's date>, until=<today's date>. Filters: cwd, project folder, agent (one of
    the agents the store reads). At most 50 a page; next_offset is the offset of the next page
    (null at the end; the first 1,000 sessions)."""
    order = _one_of("order", order, SESSION_ORDERS)
    filters = SessionFilter.parse(
        since=since, until=until, cwd=cwd, project=project, agents=_agents(agent)
    )
    offset, limit = _window(offset, limit, MAX_HITS)
    sessions = index.sessions(SessionQuery(filter=filters, order=order, limit=offset + limit + 1))
    if not sessions:
        check_filters(index, project=project)
    page = _page(sessions, offset, limit)
    found: dict[str, Any] = {
        "sessions": [_session(info) for info in sessions[offset : offset + limit]],
        "more": page["next_offset"] is not None,
        **page,
    }
    pending = index.entries_pending()
    if pending:
        found["partial"] = (
            f"{pending} session files have only their usage indexed yet: they are not listed"
            " until the next sync reads them"
        )
    return found


def search_sessions(
    index: IndexReader,
    query: str,
    project: str | None = None,
    role: str | None = None,
    model: str | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int = 10,
    agent: Agent | None = None,
    offset: int = 0,
) -> dict[str, Any]:
    """Full-text search over every session (all words must match; "phrases", -excluded).
    Filters: project (a working directory, with the folders inside it), role (user, assistant,
    toolResult…), model (an id or provider/id), since/until (a date, a time or an age such as
    7d), agent (one of the agents the store reads). Each hit names its session and entry id
    (get_entry reads it whole). At most 50 hits a page, best first; next_offset is the offset
    of the next page (null at the end; the best 1,000 hits)."""
    filters = SessionFilter.parse(since=since, until=until, project=project, agents=_agents(agent))
    offset, limit = _window(offset, limit, MAX_HITS)
    hits = index.hits(
        SearchQuery(text=query, filter=filters, role=role, model=model, limit=offset + limit + 1)
    )
    if not hits:
        check_filters(index, model=model, project=project)
    found: dict[str, Any] = {
        "hits": [
            _once(hit.to_json()) | {"session": hit.session_id, "snippet": cut(hit.snippet)}
            for hit in hits[offset : offset + limit]
        ],
        "limit": limit,
        **_page(hits, offset, limit),
    }
    pending = index.text_pending()
    if pending:
        found["partial"] = (
            f"the search text of {pending} session files is still being indexed:"
            " these hits may miss some"
        )
    return found


def get_session(
    index: SessionIndex,
    session: str,
    view: Literal["branch", "tree"] = "branch",
    leaf_id: str | None = None,
    offset: int = 0,
    limit: int = 50,
    all_entries: bool = False,
) -> dict[str, Any]:
    """A session (id prefix or path) page by page: its active branch, root to leaf
    (leaf_id picks another leaf), or with view="tree" every entry in file order with its
    parent, child count and whether it is on the active branch. Each entry's text is a
    one-line summary (get_entry reads an entry whole). At most 200 entries a page;
    next_offset is the offset of the next page (null at the end). Records an agent keeps for
    itself with nothing to read (Codex's session_meta, turn_context, event_msg, encrypted
    reasoning) are left out and counted in left_out, unless all_entries."""
    view = _one_of("view", view, ("branch", "tree"))
    info = index.find_session(session)
    leaf = index.find_entry_id(info, leaf_id) if leaf_id else info.last_entry_id
    tree = index.tree(info)
    rows = index.branch(info, leaf) if view == "branch" else list(tree.entries.values())
    offset, limit = max(0, int(offset)), _bounded(limit, MAX_PAGE)
    page = rows[offset : offset + limit]
    on_path = {row.id for row in index.branch(info, leaf)} if view == "tree" else None
    entries = []
    left_out = 0
    for row, value in zip(
        page, read_entries(info.path, page, None, info.agent, index.archived_sources), strict=True
    ):
        kind, text = entry_summary(value)
        if not (text or all_entries or kind == UNREAD_TYPE):
            left_out += 1
            continue
        item = {
            "id": row.id,
            "parent_id": row.parent_id,
            "kind": kind,
            "timestamp": row.timestamp,
            "text": text,
            "children": len(tree.children.get(row.id, [])) if row.id is not None else 0,
        }
        if on_path is not None:
            item["on_active_branch"] = row.id in on_path
        entries.append(item)
    following = offset + len(page)
    return _session(info) | {
        "view": view,
        "leaf_id": leaf,
        "total": len(rows),
        "offset": offset,
        "entries": entries,
        "left_out": left_out,
        "next_offset": following if following < len(rows) else None,
        "branch_points": len(tree.branch_points),
        "leaves": len(tree.leaves),
    }


def get_entry(
    index: SessionIndex,
    session: str,
    entry_id: str,
    offset: int = 0,
    limit: int = TEXT_PAGE,
) -> dict[str, Any]:
    """One entry of a session whole: its text blocks, thinking, tool calls as what they did
    (an edit as its diff, a command, a read's path and range, others with their arguments),
    tool output, summaries; paged by characters (offset, limit: at most 50,000
    a page; next_offset is null at the end). entry_id may be a unique prefix."""
    info = index.find_session(session)
    found = index.find_entry_id(info, entry_id)
    row = index.tree(info).entries[found]
    (value,) = read_entries(info.path, [row], None, info.agent, index.archived_sources)
    kind, _summary = entry_summary(value)
    text = entry_text(value)
    offset, limit = max(0, int(offset)), _bounded(limit, MAX_TEXT_PAGE)
    following = offset + limit
    return {
        "session": info.session_id,
        "id": found,
        "parent_id": row.parent_id,
        "kind": kind,
        "role": row.role,
        "model": row.model,
        "timestamp": row.timestamp,
        "total_chars": len(text),
        "offset": offset,
        "text": text[offset:following],
        "next_offset": following if following < len(text) else None,
    }


def get_context(
    index: SessionIndex,
    session: str,
    leaf_id: str | None = None,
    offset: int = 0,
    limit: int = 50,
) -> dict[str, Any]:
    """The messages the model saw at a leaf of a session (default: its last entry), with
    the models and thinking level in force; paged like get_session."""
    info = index.find_session(session)
    leaf = index.find_entry_id(info, leaf_id) if leaf_id else None
    context = index.context(info, leaf)
    offset, limit = max(0, int(offset)), _bounded(limit, MAX_PAGE)
    page = context.messages[offset : offset + limit]
    following = offset + len(page)
    return {
        "session": info.session_id,
        "leaf_id": leaf or info.last_entry_id,
        "models": context.models,
        "thinking_level": context.thinking_level,
        "mode": context.mode,
        "total": len(context.messages),
        "offset": offset,
        "messages": [
            dict(zip(("role", "text"), message_summary(message), strict=True)) for message in page
        ],
        "next_offset": following if following < len(context.messages) else None,
    }


def read_url(
    index: SessionIndex,
    session: str,
    url: str,
    offset: int | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """An artifact:// (a tool's full output) or agent:// (a subagent's output; agent://
    <id>/<path> extracts part of its JSON) URL of a session, as the agent's read tool shows it:
    a page of at most 50 KB, lines from offset (1-based) for limit lines; the last line says
    how to continue."""
    info = index.find_session(session)
    text = read_internal_url(url, artifacts_dir_for(info.path), offset, limit)
    text = retold_paging_hint(text, "offset=")
    return {"session": info.session_id, "url": url, "text": text}


def recall_prompts(
    index: IndexReader,
    query: str | None = None,
    limit: int = 20,
    agent: Agent | None = None,
    offset: int = 0,
) -> dict[str, Any]:
    """Prompts typed before (prompt history and user messages of sessions), newest first:
    all of them, or those holding every word of query; agent: only that agent's (one of the
    agents the store reads). At most 50 a page; next_offset is the offset of the next page
    (null at the end; the newest 1,000 prompts)."""
    offset, limit = _window(offset, limit, MAX_HITS)
    hits = index.prompts(
        PromptQuery(text=query or None, limit=offset + limit + 1, agents=_agents(agent))
    )
    return {
        **_page(hits, offset, limit),
        "prompts": [
            _once(hit.to_json(), frozenset({"session_id", "created_at"}))
            | {
                "prompt": cut(hit.prompt),
                # Milliseconds, as every time of these tools.
                "created": iso_millis(hit.created_at),
                "session": hit.session_id,
            }
            for hit in hits[offset : offset + limit]
        ],
    }


def _usage_row(row: UsageRow) -> dict[str, Any]:
    """The row's own shape (as ``usage --json``) without its repeated fields, its cost
    rounded; ``tokens`` (its total), ``estimated`` and ``unpriced`` as this tool first named
    them."""
    shape = row.to_json()
    return _once(shape) | {
        "tokens": row.tokens,
        "cost": _cost(shape["cost"]),
        "cost_at_list_price": _cost(shape["cost_at_list_price"]),
        "estimated": row.estimated,
        "unpriced": row.unpriced,
    }


def usage(
    index: IndexReader,
    by: UsageGroup = "day",
    since: str | None = None,
    until: str | None = None,
    agent: Agent | None = None,
    offset: int | None = None,
) -> dict[str, Any]:
    """Tokens and cost per day, week, month, model, provider, project, session, agent or
    root-session (a subagent's or fork's usage under the session it came from) with the totals
    of all groups; since/until as for search_sessions; agent: only that agent's sessions.
    estimated counts the entries whose cost is an estimate from list prices (most agents
    record none), unpriced those of models without a known price, whose cost is not in the
    sums (cost null: none has a price); cost_kind says how the cost is known: free ($0),
    recorded, estimated, partial (a lower bound), unknown or not_recorded; cost_at_list_price
    stands beside a cost its agent recorded as $0 below list price. At most 200 groups a page
    from offset (default: the last 200 groups); next_offset is the offset of the next page
    (null at the end)."""
    by = _one_of("by", by, USAGE_GROUPINGS)
    filters = SessionFilter.parse(since=since, until=until, agents=_agents(agent))
    rows = index.usage_rows(UsageQuery(by=(by,), filter=filters))
    first = max(0, len(rows) - MAX_PAGE) if offset is None else max(0, int(offset))
    following = first + MAX_PAGE
    return {
        "by": by,
        "groups": len(rows),
        "offset": first,
        "rows": [_usage_row(row) for row in rows[first:following]],
        "next_offset": following if following < len(rows) else None,
        "totals": _usage_row(usage_total(rows)),
    }


def quota(index: SessionIndex, agent: Agent | None = None) -> dict[str, Any]:
    """How close each agent is to its plan's usage limits: per window (5-hour, weekly) the
    percent used, when it resets (resets_at), the pace ("will fill" by full_at, "within
    limits", "full", or "unknown") and how old the reading is (age_seconds; stale: older than
    15 minutes or of a window that has reset since, reset_since). Codex's windows are its own
    readings from its files; Claude's are its tokens against a limit from the config file or
    the largest earlier window (source: configured, calibrated). agent: only that agent."""
    windows = index.quota(agents=_agents(agent))
    return {"windows": [window.to_json() for window in windows]}
