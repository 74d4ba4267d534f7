"""The Starlette app of ``xcsh-store serve``: the pages (views/) on their routes, over one
``Site`` (site.py) they share, behind the access checks (access.py). Read-only: every request
opens index.db read-only and answers from the last sync; with ``watch`` (or ``serve --watch``)
running, pages learn of new syncs through server-sent events and reload what they show."""

from __future__ import annotations

from importlib import resources

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from xcsh_store.index import REFRESH_SECONDS
from xcsh_store.web import views
from xcsh_store.web.access import Guard, allowed_host_names
from xcsh_store.web.highlight import Highlighter
from xcsh_store.web.site import Site


def create_app(
    agent_dir: str,
    token: str | None = None,
    hosts: frozenset[str] | None = None,
    redact: bool = False,
    sync_every: float | None = REFRESH_SECONDS,
    highlighter: Highlighter | None = None,
) -> Starlette:
    """The app over the index of ``agent_dir``; with ``token``, every request must carry it;
    it answers to the Host names ``hosts`` (default: loopback's); with ``redact``, no secret
    of a session is in a page or a resource. A page syncs the index before it reads it, at
    most every ``sync_every`` seconds (None: never), unless a watch keeps it current. Code is
    highlighted by ``highlighter`` (default: one with the checked lexers), which the app
    closes when it shuts down.

    The pages are plain functions, run in worker threads PAGES_AT_ONCE at a time: a slow query
    never holds up the event loop, and with it the live streams of other pages."""
    site = Site(agent_dir, redact=redact, sync_every=sync_every, highlighter=highlighter)
    static = resources.files("xcsh_store.web") / "static"
    return Starlette(
        routes=[
            *(Route(path, site.endpoint(page)) for path, page in views.routes()),
            # What every page loads besides itself, answered on the event loop.
            Route("/live", site.live),
            Route("/code.css", site.code_style),
            Mount("/static", StaticFiles(directory=str(static)), name="static"),
        ],
        middleware=[Middleware(Guard, token=token, hosts=hosts or allowed_host_names("127.0.0.1"))],
        exception_handlers={404: site.not_found},
        lifespan=site.lifespan,
    )
