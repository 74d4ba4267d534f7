"""``/``: the sessions, newest first (or as sorted), filtered, a page at a time."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from xcsh_store.agents import AGENTS
from xcsh_store.web import pages
from xcsh_store.web.params import filters_of, number
from xcsh_store.web.site import Site


def sessions_list(site: Site, request: Request) -> Response:
    query = request.query_params
    sort = query.get("sort", "modified")
    sort = sort if sort in pages.SESSION_SORTS else "modified"
    with site.open_index() as index:
        listing = pages.sessions_page(
            index,
            filters_of(query),
            sort=sort,
            descending=query.get("dir", "desc") != "asc",
            page=number(request, "page") or 1,
        )
        projects, _models = site.filter_choices(index)
        return site.render(
            "sessions.html", listing=listing, projects=projects, sort=sort,
            query=query, agents=AGENTS, pending=index.entries_pending(),
        )  # fmt: skip


ROUTES = {"/": sessions_list}
