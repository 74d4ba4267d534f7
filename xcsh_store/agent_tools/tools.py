"""The questions the MCP server answers, as plain functions over a read-only index: each
returns a JSON-ready dict whose size is bounded (pages of entries, capped counts, cut text), so
that no answer floods an agent's context. Their parameters after the index and their docstrings
are what the server offers agents (the tool's input schema and description)."""

from __future__ import annotations

from typing import Any, Literal

from xcsh_store.agents import AGENTS
from xcsh_store.index import (
    USAGE_GROUPS,
    IndexedSession,
    SessionIndex,
    entry_summary,
    message_summary,
    read_entries,
)

# The tools, in the order the server lists them.
TOOLS = ("search_sessions", "get_session", "get_context", "recall_prompts", "usage")
# Caps: hits and prompts per answer, entries and messages per page, characters per text.
MAX_HITS = 50
MAX_PAGE = 200
MAX_TEXT = 2000


def _bounded(limit: int, cap: int) -> int:
    return max(1, min(int(limit), cap))


def _cut(text: str, chars: int = MAX_TEXT) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def search_sessions(
    index: SessionIndex,
    query: str,
    project: str | None = None,
    role: str | None = None,
    model: str | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int = 10,
    agent: str | None = None,
) -> dict[str, Any]:
    """Full-text search over every session (all words must match; "phrases", -excluded).
    Filters: project (a working directory, with the folders inside it), role (user, assistant,
    toolResult…), model, since/until (ISO date or time), agent (xcsh, pi, omp, claude, codex).
    Each hit names its session and entry id. At most 50 hits."""
    limit = _bounded(limit, MAX_HITS)
    hits = index.search(
        query, project=project, role=role, model=model, since=since, until=until, limit=limit,
        agents=_agents(agent),
    )  # fmt: skip
    return {
        "hits": [
            {
                "session": hit.session_id,
                "agent": hit.agent,
                "path": hit.path,
                "title": hit.title,
                "cwd": hit.cwd,
                "entry_id": hit.entry_id,
                "role": hit.role,
                "model": hit.model,
                "timestamp": hit.timestamp,
                "snippet": _cut(hit.snippet),
            }
            for hit in hits
        ],
        "limit": limit,
    }


def _agents(agent: str | None) -> list[str] | None:
    if agent is None:
        return None
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {', '.join(AGENTS)}, not {agent!r}")
    return [agent]


def _session_fields(index: SessionIndex, session: str) -> tuple[IndexedSession, dict[str, Any]]:
    info = index.find_session(session)
    return info, {
        "session": info.id,
        "agent": info.agent,
        "path": info.path,
        "cwd": info.cwd,
        "title": info.title,
        "created": info.created.isoformat(),
        "modified": info.modified.isoformat(),
        "entry_count": info.entry_count,
        "message_count": info.message_count,
        "leaf_id": info.last_entry_id,
    }


def get_session(
    index: SessionIndex,
    session: str,
    view: Literal["branch", "tree"] = "branch",
    leaf_id: str | None = None,
    offset: int = 0,
    limit: int = 50,
) -> dict[str, Any]:
    """A session (id prefix or path) page by page: its active branch, root to leaf
    (leaf_id picks another leaf), or with view="tree" every entry in file order with its
    parent, child count and whether it is on the active branch. At most 200 entries a
    page; next_offset is the offset of the next page (null at the end)."""
    if view not in ("branch", "tree"):
        raise ValueError(f"view must be 'branch' or 'tree', not {view!r}")
    info, fields = _session_fields(index, session)
    leaf = index.find_entry_id(info, leaf_id) if leaf_id else info.last_entry_id
    tree = index.tree(info)
    rows = index.branch(info, leaf) if view == "branch" else list(tree.entries.values())
    offset, limit = max(0, int(offset)), _bounded(limit, MAX_PAGE)
    page = rows[offset : offset + limit]
    on_path = {row.id for row in index.branch(info, leaf)} if view == "tree" else None
    entries = []
    for row, value in zip(page, read_entries(info.path, page, None, info.agent), strict=True):
        kind, text = entry_summary(value)
        item = {
            "id": row.id,
            "parent_id": row.parent_id,
            "kind": kind,
            "timestamp": row.timestamp,
            "text": text,
            "children": len(tree.children.get(row.id, [])),
        }
        if on_path is not None:
            item["on_active_branch"] = row.id in on_path
        entries.append(item)
    following = offset + len(page)
    return fields | {
        "view": view,
        "leaf_id": leaf,
        "total": len(rows),
        "offset": offset,
        "entries": entries,
        "next_offset": following if following < len(rows) else None,
        "branch_points": len(tree.branch_points),
        "leaves": len(tree.leaves),
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
        "session": info.id,
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


def recall_prompts(
    index: SessionIndex, query: str | None = None, limit: int = 20, agent: str | None = None
) -> dict[str, Any]:
    """Prompts typed before (prompt history and user messages of sessions), newest first:
    all of them, or those holding every word of query; agent: only that agent's (xcsh, pi,
    omp, claude, codex). At most 50."""
    limit = _bounded(limit, MAX_HITS)
    agents = _agents(agent)
    hits = (
        index.history_search(query, limit, agents=agents)
        if query
        else index.history_recent(limit, agents=agents)
    )
    return {
        "prompts": [
            {
                "prompt": _cut(hit.prompt),
                "created_at": hit.created_at,
                "cwd": hit.cwd,
                "source": hit.source,
                "agent": hit.agent,
                "session": hit.session_id,
                "entry_id": hit.entry_id,
            }
            for hit in hits
        ]
    }


def usage(
    index: SessionIndex,
    by: Literal["day", "week", "month", "model", "provider", "project", "session", "agent"] = "day",
    since: str | None = None,
    until: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """Tokens and cost per day, week, month, model, provider, project, session or agent (the
    last 200 groups) with the totals of all groups; agent: only that agent's sessions. Costs
    of Claude Code and Codex sessions are estimates from list prices."""
    if by not in USAGE_GROUPS:
        raise ValueError(f"by must be one of {', '.join(USAGE_GROUPS)}, not {by!r}")
    rows = index.usage(by, since, until, _agents(agent))
    columns = ("entries", "input_tokens", "output_tokens", "cache_read_tokens", "cost")
    return {
        "by": by,
        "groups": len(rows),
        "rows": [
            {"key": row.key} | {column: getattr(row, column) for column in columns}
            for row in rows[-MAX_PAGE:]
        ],
        "totals": {column: sum(getattr(row, column) for row in rows) for column in columns},
    }
