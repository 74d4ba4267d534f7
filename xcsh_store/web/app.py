"""The Starlette app of ``xcsh-store serve``: routes, the token check, the security headers, the
live-update stream. Read-only: every request opens index.db read-only and answers from the last
sync; with ``watch`` (or ``serve --watch``) running, pages learn of new syncs through
server-sent events and reload what they show. With ``redact`` (serve beyond loopback), every
value a page prints and every resource passes through the secret redaction first
(xcsh_store.secrets)."""

from __future__ import annotations

import asyncio
import hmac
import os
import threading
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from xcsh_store.agents import AGENTS
from xcsh_store.artifacts.urls import InternalUrlError, read_internal_url
from xcsh_store.errors import XcshStoreError
from xcsh_store.index import (
    SEARCH_ROLES,
    IndexedSession,
    SessionIndex,
    model_choices,
    project_choices,
)
from xcsh_store.paths import artifacts_dir_for, get_index_db_path
from xcsh_store.secrets import FileSecrets, Redactor, Secret
from xcsh_store.web import pages

# No inline script or style anywhere: a session's text cannot run, whatever it holds.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}
TOKEN_COOKIE = "xcsh_store_token"
# How often the live stream looks at index.db (a stat of two files).
LIVE_CHECK_SECONDS = 0.5


class Security:
    """ASGI middleware: the token (when set) on every request, the security headers on every
    response."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if self.token is not None and not self._allowed(request):
            await PlainTextResponse("A token is needed: open the URL serve printed.", 401)(
                scope, receive, send
            )
            return
        if self.token is not None and request.query_params.get("token"):
            # The token of the printed URL becomes a cookie, and leaves the address bar.
            target = request.url.remove_query_params("token")
            response = RedirectResponse(str(target), 303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
            await response(scope, receive, send)
            return

        async def with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"server"]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)

    def _allowed(self, request: Request) -> bool:
        assert self.token is not None
        offered = (
            request.query_params.get("token")
            or request.cookies.get(TOKEN_COOKIE)
            or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        )
        return hmac.compare_digest(offered.encode(), self.token.encode())


def index_version(db_path: str) -> str:
    """Changes when a sync commits (the log grows, or is copied into index.db), not when a
    reader opens or closes the database (which makes or removes an empty log)."""
    version: list[int] = []
    for path in (db_path, db_path + "-wal"):
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            stat = None
        if stat is None or stat.st_size == 0:
            version += [0, 0, 0]
        else:
            version += [stat.st_ino, stat.st_size, stat.st_mtime_ns]
    return "-".join(map(str, version))


def create_app(agent_dir: str, token: str | None = None, redact: bool = False) -> Starlette:
    """The app over the index of ``agent_dir``; with ``token``, every request must carry it;
    with ``redact``, no secret of a session is in a page or a resource.

    The pages are plain functions, which Starlette runs in its thread pool: a slow query
    never holds up the event loop, and with it the live streams of other pages."""
    agent_dir = os.path.abspath(agent_dir)
    db_path = get_index_db_path(agent_dir)
    redactor = Redactor() if redact else None
    file_secrets = FileSecrets(redactor.detector) if redactor is not None else None
    # The secrets of the files the page being rendered (in this thread) shows pieces of.
    rendering = threading.local()

    def shown(value: Any) -> Any:
        """What a template prints: a text with its secrets redacted (before it is escaped),
        and the secrets of the files it was cut from, whole or cut."""
        if redactor is None or not isinstance(value, str):
            return value
        redacted = redactor.text(value, getattr(rendering, "known", ()))
        return value if redacted == value else type(value)(redacted)

    def secrets_of(index: SessionIndex, paths: Any) -> list[Secret]:
        """The secrets of the session files a page shows pieces of (their excerpts, summaries
        and cut texts may hold a secret in part, which no rule can tell)."""
        if file_secrets is None:
            return []
        return [found for path in set(paths) for found in file_secrets.of(index.local_path(path))]

    def snippet_pieces(snippet: str) -> list[tuple[bool, str]]:
        """A hit's highlighted pieces; redacting, a snippet that holds a secret is shown
        whole and plain (a piece cut by a highlight would not read as the secret it is)."""
        if redactor is not None:
            plain = snippet.replace(pages.MARK_START, "").replace(pages.MARK_END, "")
            redacted = redactor.text(plain, getattr(rendering, "known", ()))
            if redacted != plain:
                return [(False, redacted)]
        return pages.snippet_pieces(snippet)

    templates = jinja2.Environment(
        loader=jinja2.PackageLoader("xcsh_store.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=shown,
    )

    def url(route: str, path: str, **parameters: Any) -> str:
        """A link to a page of the session file at ``path`` (a path selects exactly one file,
        where an id may name copies of a session)."""
        given = {key: value for key, value in parameters.items() if value is not None}
        return f"{route}?{urlencode({'path': path, **given})}"

    templates.globals["url"] = url

    def render(
        name: str, status: int = 200, known: list[Secret] | None = None, **context: Any
    ) -> Response:
        # The page's live stream tells of any sync after the one the page was made from.
        live = "/live?" + urlencode({"seen": index_version(db_path)})
        rendering.known = known or ()
        try:
            html = templates.get_template(name).render(live=live, **context)
        finally:
            rendering.known = ()
        return Response(html, status, media_type="text/html; charset=utf-8")

    def open_index() -> SessionIndex:
        return SessionIndex.open(agent_dir, read_only=True)

    # The filters' choices (projects, models: a scan of the entries' model index), kept until
    # a sync commits.
    choices: dict[str, Any] = {}

    def filter_choices(index: SessionIndex) -> tuple[list[str], list[str]]:
        version = index_version(db_path)
        if choices.get("version") != version:
            choices["version"] = version
            choices["projects"] = [choice.value for choice in project_choices(index, "")]
            choices["models"] = [choice.value for choice in model_choices(index, "")]
        return choices["projects"], choices["models"]

    def chosen_session(index: SessionIndex, request: Request) -> IndexedSession:
        """The session a page is about: ``?path=`` (as the app links), or an id prefix in
        ``/session/<prefix>`` (as people type)."""
        key = request.query_params.get("path") or request.path_params.get("session", "")
        return index.find_session(key)

    def agents_of(query: Any) -> list[str] | None:
        agent = query.get("agent")
        return [agent] if agent in AGENTS else None

    def integer(request: Request, name: str, default: int) -> int:
        text = request.query_params.get(name, "")
        return int(text) if text.isdigit() and len(text) < 10 else default

    def sessions_list(request: Request) -> Response:
        query = request.query_params
        sort = query.get("sort", "modified")
        sort = sort if sort in pages.SESSION_SORTS else "modified"
        with open_index() as index:
            listing = pages.sessions_page(
                index,
                project=query.get("project") or None,
                cwd=query.get("cwd") or None,
                agents=agents_of(query),
                since=pages.since_of(query.get("since", "")),
                sort=sort,
                descending=query.get("dir", "desc") != "asc",
                page=integer(request, "page", 1),
            )
            projects, _models = filter_choices(index)
            return render(
                "sessions.html", listing=listing, projects=projects, sort=sort,
                query=query, agents=AGENTS,
            )  # fmt: skip

    def search(request: Request) -> Response:
        query = request.query_params
        text = query.get("q", "").strip()
        hits: list[Any] = []
        error = None
        role = query.get("role") or None
        with open_index() as index:
            if text:
                try:
                    hits = index.search(
                        text,
                        project=query.get("project") or None,
                        role=role if role in SEARCH_ROLES else None,
                        model=query.get("model") or None,
                        agents=agents_of(query),
                        since=pages.since_of(query.get("since", "")),
                        limit=min(integer(request, "limit", 50), 200),
                        highlight=(pages.MARK_START, pages.MARK_END),
                    )
                except (XcshStoreError, ValueError) as problem:
                    error = str(problem)
            projects, models = filter_choices(index)
            return render(
                "search.html", q=text, hits=hits, error=error, query=query,
                known=secrets_of(index, (hit.path for hit in hits)),
                projects=projects, models=models, roles=sorted(SEARCH_ROLES), agents=AGENTS,
                pieces=snippet_pieces,
            )  # fmt: skip

    def session(request: Request) -> Response:
        query = request.query_params
        with open_index() as index:
            info = chosen_session(index, request)
            start = query.get("start")
            page = pages.session_page(
                index,
                info,
                leaf_id=query.get("leaf") or None,
                entry_id=query.get("entry") or None,
                start=int(start) if start and start.isdigit() else None,
            )
            return render(
                "session.html", page=page, window=pages.WINDOW,
                known=secrets_of(index, [info.path]),
            )  # fmt: skip

    def context(request: Request) -> Response:
        with open_index() as index:
            info = chosen_session(index, request)
            page = pages.context_page(
                index, info, request.query_params.get("leaf") or None, integer(request, "start", 0)
            )
            return render(
                "context.html", page=page, window=pages.WINDOW,
                known=secrets_of(index, [info.path]),
            )  # fmt: skip

    def usage(request: Request) -> Response:
        by = request.query_params.get("by", "day")
        by = by if by in ("day", "week", "month") else "day"
        metric = request.query_params.get("metric", "tokens")
        metric = metric if metric in ("tokens", "cost") else "tokens"
        value_of = pages.tokens if metric == "tokens" else (lambda row: row.cost)
        with open_index() as index:
            over_time = index.usage(by)
            models = sorted(index.usage("model"), key=value_of)
            projects = sorted(index.usage("project"), key=value_of)
        charts = [
            pages.chart(f"by {by}", over_time, metric, value_of),
            pages.chart("by model", models, metric, value_of, limit=20),
            pages.chart("by project", projects, metric, value_of, limit=20),
        ]
        return render(
            "usage.html", by=by, metric=metric, charts=charts, rows=over_time,
            totals=pages.usage_totals(over_time), tokens=pages.tokens, width=pages.CHART_WIDTH,
            height=pages.CHART_HEIGHT, label_height=pages.LABEL_HEIGHT,
        )  # fmt: skip

    def blob(request: Request) -> Response:
        mime = request.query_params.get("type", "")
        with open_index() as index:
            data = index.blob_store.get(request.path_params["hash"])
        if data is None or mime not in pages.IMAGE_TYPES:
            return PlainTextResponse("No such image", 404)
        return Response(data, media_type=mime, headers={"cache-control": "max-age=86400"})

    def resource(request: Request) -> Response:
        """An artifact:// or agent:// URL of a session, as plain text."""
        with open_index() as index:
            info = chosen_session(index, request)
        try:
            text = read_internal_url(
                request.query_params.get("url", ""), artifacts_dir_for(info.path)
            )
        except InternalUrlError as problem:
            return PlainTextResponse(str(problem), 404)
        return PlainTextResponse(shown(text))

    async def live(request: Request) -> Response:
        """Server-sent events: ``index`` each time a sync commits (after the version ``seen``
        that the page was made from, when given)."""

        async def events() -> AsyncIterator[bytes]:
            seen = request.query_params.get("seen") or index_version(db_path)
            yield b"retry: 2000\n\n"
            while not await request.is_disconnected():
                await asyncio.sleep(LIVE_CHECK_SECONDS)
                now = index_version(db_path)
                if now != seen:
                    seen = now
                    yield b"event: index\ndata: changed\n\n"

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"cache-control": "no-store"}
        )

    async def not_found(request: Request, error: Exception) -> Response:
        return render("error.html", 404, message=str(error))

    static = resources.files("xcsh_store.web") / "static"
    return Starlette(
        routes=[
            Route("/", sessions_list),
            Route("/search", search),
            Route("/session", session),
            Route("/session/{session}", session),
            Route("/context", context),
            Route("/resource", resource),
            Route("/usage", usage),
            Route("/blob/{hash:str}", blob),
            Route("/live", live),
            Mount("/static", StaticFiles(directory=str(static)), name="static"),
        ],
        middleware=[Middleware(Security, token=token)],
        exception_handlers={XcshStoreError: not_found, KeyError: not_found},
    )
