"""``/search``: the entries that match a full-text query, grouped by session, filtered."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from xcsh_store.agents import AGENTS
from xcsh_store.errors import XcshStoreError
from xcsh_store.index import SEARCH_ROLES, SearchQuery
from xcsh_store.web import pages
from xcsh_store.web.params import filters_of, number
from xcsh_store.web.site import Site


def search(site: Site, request: Request) -> Response:
    query = request.query_params
    text = query.get("q", "").strip()
    hits: list[Any] = []
    error = None
    role = query.get("role") or None
    limit = min(number(request, "limit") or 50, 200)
    with site.open_index() as index:
        if text:
            try:
                hits = index.hits(
                    SearchQuery(
                        text=text,
                        filter=filters_of(query),
                        role=role if role in SEARCH_ROLES else None,
                        model=query.get("model") or None,
                        limit=limit,
                        highlight=(pages.MARK_START, pages.MARK_END),
                    )
                )
            except (XcshStoreError, ValueError) as problem:
                error = str(problem)
        projects, models = site.filter_choices(index)
        return site.render(
            "search.html", q=text, hits=hits, groups=pages.grouped_hits(hits), error=error,
            query=query, pending=index.text_pending() if text else 0,
            known=site.secrets_of(index, (hit.path for hit in hits)),
            projects=projects, models=models, roles=sorted(SEARCH_ROLES), agents=AGENTS,
            pieces=site.snippet_pieces,
        )  # fmt: skip


ROUTES = {"/search": search}
