"""``/session``: a session read as the tree it is, a window of its branch at a time
(``/session/<id prefix>``, as people type, too)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from xcsh_store.web import pages
from xcsh_store.web.params import chosen_session, number
from xcsh_store.web.site import Site


def session(site: Site, request: Request) -> Response:
    query = request.query_params
    start = number(request, "start")
    with site.open_index() as index:
        info = chosen_session(index, request)
        shown = pages.session_page(
            index,
            info,
            leaf_id=query.get("leaf") or None,
            entry_id=query.get("entry") or None,
            start=start,
        )
        return site.render(
            "session.html", page=shown, window=pages.WINDOW,
            known=site.secrets_of(index, [info.path]), show_all=query.get("all") == "1",
        )  # fmt: skip


ROUTES = {"/session": session, "/session/{session}": session}
