"""``/entry``: one entry of a session whole, its long texts a part at a time."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from xcsh_store.web import pages
from xcsh_store.web.params import chosen_session, named, number
from xcsh_store.web.site import Site


def entry(site: Site, request: Request) -> Response:
    entry_id = named(request, "id")
    with site.open_index() as index:
        info = chosen_session(index, request)
        shown = pages.entry_page(index, info, entry_id, number(request, "part") or 1)
        return site.render("entry.html", page=shown, known=site.secrets_of(index, [info.path]))


ROUTES = {"/entry": entry}
