"""``xcsh-store mcp``: the tools of ``tools`` served over stdio by the official MCP SDK.

Each call opens the index read-only (it never waits for a sync and always answers from the
last one), so a ``watch`` running beside the server keeps the answers current."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mcp.server.fastmcp import FastMCP

from xcsh_store.agent_tools import tools
from xcsh_store.index import SessionIndex

INSTRUCTIONS = (
    "Recall past coding-agent sessions from the xcsh-store index: search_sessions finds "
    "entries by words; get_session reads a session's active branch (or its whole tree) page by "
    "page; get_context shows what the model saw at a leaf; recall_prompts finds prompts typed "
    "before; usage sums tokens and cost. Everything is read-only."
)


def build_server(agent_dir: str) -> FastMCP:
    """The MCP server over the index of ``agent_dir``."""
    server = FastMCP("xcsh-store", instructions=INSTRUCTIONS)

    def answer(question: Callable[..., dict[str, Any]], **arguments: Any) -> dict[str, Any]:
        with SessionIndex.open(agent_dir, read_only=True) as index:
            return question(index, **arguments)

    @server.tool()
    def search_sessions(
        query: str,
        project: str | None = None,
        role: str | None = None,
        model: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 10,
    ) -> dict[str, Any]:
        """Full-text search over every session (all words must match; "phrases", -excluded).
        Filters: project folder, role (user, assistant, toolResult…), model, since/until (ISO
        date or time). Each hit names its session and entry id. At most 50 hits."""
        return answer(
            tools.search_sessions, query=query, project=project, role=role, model=model,
            since=since, until=until, limit=limit,
        )  # fmt: skip

    @server.tool()
    def get_session(
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
        return answer(
            tools.get_session, session=session, view=view, leaf_id=leaf_id, offset=offset,
            limit=limit,
        )  # fmt: skip

    @server.tool()
    def get_context(
        session: str, leaf_id: str | None = None, offset: int = 0, limit: int = 50
    ) -> dict[str, Any]:
        """The messages the model saw at a leaf of a session (default: its last entry), with
        the models and thinking level in force; paged like get_session."""
        return answer(
            tools.get_context, session=session, leaf_id=leaf_id, offset=offset, limit=limit
        )

    @server.tool()
    def recall_prompts(query: str | None = None, limit: int = 20) -> dict[str, Any]:
        """Prompts typed before (prompt history and user messages of sessions), newest first:
        all of them, or those holding every word of query. At most 50."""
        return answer(tools.recall_prompts, query=query, limit=limit)

    @server.tool()
    def usage(
        by: Literal["day", "week", "month", "model", "provider", "project", "session"] = "day",
        since: str | None = None,
        until: str | None = None,
    ) -> dict[str, Any]:
        """Tokens and cost per day, week, month, model, provider, project or session (the
        last 200 groups) with the totals of all groups."""
        return answer(tools.usage, by=by, since=since, until=until)

    return server


def serve_stdio(agent_dir: str) -> None:
    """Serve until the client closes stdin."""
    build_server(agent_dir).run("stdio")
