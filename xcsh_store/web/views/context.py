"""``/context``: the messages the model saw at a leaf of a session, a window at a time."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from xcsh_store.web import pages
from xcsh_store.web.params import chosen_session, number
from xcsh_store.web.site import Site


def context(site: Site, request: Request) -> Response:
    start = number(request, "start") or 0
    with site.open_index() as index:
        info = chosen_session(index, request)
        shown = pages.context_page(index, info, request.query_params.get("leaf") or None, start)
        return site.render(
            "context.html", page=shown, window=pages.WINDOW,
            known=site.secrets_of(index, [info.path]),
        )  # fmt: skip


ROUTES = {"/context": context}
