"""``/export``: a session as a file to download (Markdown, HTML or JSON)."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response

from xcsh_store.format.transcript import EXPORT_TYPES, transcript
from xcsh_store.secrets import Redactor
from xcsh_store.web.export_page import page as page_of
from xcsh_store.web.params import BadParameterError, chosen_session
from xcsh_store.web.site import Site


def export(site: Site, request: Request) -> Response:
    """The session as a file to share (as ``xcsh-store export``), secrets always redacted."""
    form = request.query_params.get("format", "md")
    if form not in EXPORT_TYPES:
        raise BadParameterError(f"format is one of {', '.join(EXPORT_TYPES)}")
    with site.open_index() as index:
        info = chosen_session(index, request)
        document = transcript(info, index.branch_entries(info, None))
    document.redact(Redactor())
    body = page_of(document).encode() if form == "html" else document.encoded(form)
    # A header value: the id's characters a file name keeps anywhere, the rest as "_".
    name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{info.agent}-{info.session_id[:8]}.{form}")
    return Response(
        body, media_type=EXPORT_TYPES[form],
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )  # fmt: skip


ROUTES = {"/export": export}
