"""``/resource``: an artifact:// or agent:// URL of a session, as plain text."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from xcsh_store.artifacts.pages import parse_line_selector
from xcsh_store.artifacts.urls import read_internal_url, resolve_internal_url
from xcsh_store.js import well_formed
from xcsh_store.paths import artifacts_dir_for
from xcsh_store.web.params import chosen_session
from xcsh_store.web.site import Site

# Characters of an artifact or agent:// resource one answer holds (the read tool's pages are
# far shorter: only a JSON extraction, which it gives whole, can be longer).
RESOURCE_CHARACTERS = 1_000_000


def resource(site: Site, request: Request) -> Response:
    """An artifact:// or agent:// URL of a session, as plain text, as the read tool pages it
    (its notes name the next page: ``sel=L3001``, a parameter of this route too); a JSON
    extraction, which the read tool gives whole, is cut at RESOURCE_CHARACTERS."""
    with site.open_index() as index:
        info = chosen_session(index, request)
    selector = request.query_params.get("sel")
    offset, limit = parse_line_selector(selector) if selector else (None, None)
    link, artifacts = request.query_params.get("url", ""), artifacts_dir_for(info.path)
    text = read_internal_url(link, artifacts, offset, limit)
    if len(text) > RESOURCE_CHARACTERS:
        rest = len(text) - RESOURCE_CHARACTERS
        text = f"{text[:RESOURCE_CHARACTERS]}\n\n[cut: {rest:,} more characters not shown]"
    if site.redactor is not None and site.file_secrets is not None:
        # A page of the resource may hold a piece of a secret of the whole (its lines).
        whole = site.file_secrets.of(resolve_internal_url(link, artifacts).source_path)
        text = site.redactor.text(text, whole)
    return PlainTextResponse(well_formed(text))


ROUTES = {"/resource": resource}
