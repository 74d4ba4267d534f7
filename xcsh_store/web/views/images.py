"""``/image`` and ``/blob/<hash>``: the images the pages link to rather than inline, from a
session line or from the blob store."""

from __future__ import annotations

import os
from collections.abc import Iterator

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from xcsh_store.files import open_regular_file
from xcsh_store.format.blobs import BlobStore
from xcsh_store.paths import get_blobs_dir
from xcsh_store.web import pages
from xcsh_store.web.params import chosen_session, named, number
from xcsh_store.web.site import Site

# Blobs are sent in pieces of this size.
BLOB_CHUNK = 256 << 10


def image(site: Site, request: Request) -> Response:
    """An image held as base64 in a session line (pages link it rather than inline it)."""
    entry_id, part = named(request, "entry"), number(request, "part") or 0
    with site.open_index() as index:
        info = chosen_session(index, request)
        found = pages.entry_image(index, info, entry_id, part)
    if found is None:
        return PlainTextResponse("No such image", 404)
    mime, data = found
    return Response(data, media_type=mime, headers={"cache-control": "max-age=86400"})


def blob(site: Site, request: Request) -> Response:
    """An image of the blob store, sent a piece at a time (a blob can be large)."""
    mime = request.query_params.get("type", "")
    store = BlobStore(get_blobs_dir(site.agent_dir))
    digest = request.path_params["hash"]
    if mime not in pages.IMAGE_TYPES or not store.has(digest):
        return PlainTextResponse("No such image", 404)
    handle = open_regular_file(store.path_for(digest))
    size = os.fstat(handle.fileno()).st_size

    def pieces() -> Iterator[bytes]:
        with handle:
            while piece := handle.read(BLOB_CHUNK):
                yield piece

    return StreamingResponse(
        pieces(),
        media_type=mime,
        headers={"cache-control": "max-age=86400", "content-length": str(size)},
    )


ROUTES = {"/image": image, "/blob/{hash:str}": blob}
