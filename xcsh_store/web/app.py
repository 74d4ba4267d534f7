"""The Starlette app of ``xcsh-store serve``: routes, bounded pages, error pages and the
live-update stream (access.py checks every request first). Read-only: every request opens
index.db read-only and answers from the last sync; with ``watch`` (or ``serve --watch``)
running, pages learn of new syncs through server-sent events and reload what they show.

Whatever the sessions hold, a page is bounded: pages.py bounds what each shows, and render()
cuts any page at PAGE_BYTES. The pages that read the index run PAGES_AT_ONCE at a time, so the
server's memory does not grow with the number of requests made at once; and whatever a page
costs to highlight, it cannot hold the others up: its code is highlighted in worker processes
within a time budget (highlight.py), and not at all while other pages wait for their turn.

With ``redact`` (serve answering beyond loopback), every value a page prints and every resource
passes through the secret redaction first (xcsh_store.secrets), and so do the pieces of a secret
that cutting a text left: a text is redacted before it is shortened, and the secrets of the
files a page shows excerpts of are taken out of it, whole or cut."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from importlib import resources
from typing import Any
from urllib.parse import urlencode

import anyio
import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from xcsh_store.agents import AGENTS
from xcsh_store.artifacts.pages import parse_line_selector
from xcsh_store.artifacts.urls import read_internal_url, resolve_internal_url
from xcsh_store.errors import (
    AmbiguousLookupError,
    AmbiguousSessionError,
    EntryNotFoundError,
    IndexDatabaseError,
    InternalUrlError,
    SessionNotFoundError,
    XcshStoreError,
)
from xcsh_store.files import open_regular_file
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.transcript import EXPORT_TYPES, transcript
from xcsh_store.index import (
    REFRESH_SECONDS,
    SEARCH_ROLES,
    IndexedSession,
    Refresher,
    SearchQuery,
    SessionFilter,
    SessionIndex,
    UsageQuery,
    UsageRow,
    errors_explained,
    model_choices,
    project_choices,
    time_bound,
    usage_total,
)
from xcsh_store.js import well_formed
from xcsh_store.paths import artifacts_dir_for, get_blobs_dir, get_index_db_path
from xcsh_store.secrets import FileSecrets, Redactor, Secret
from xcsh_store.web import markup, pages
from xcsh_store.web.access import Guard, allowed_host_names
from xcsh_store.web.export_page import page as page_of
from xcsh_store.web.highlight import Budget, Highlighter

log = logging.getLogger("xcsh_store")

# How often the live stream looks at index.db (a stat of two files).
LIVE_CHECK_SECONDS = 0.5
# The pages that read the index or a session file, at once; the others wait their turn (a
# page of a 50,000-entry session holds tens of MB while it is made).
PAGES_AT_ONCE = 2
# No page is longer: pages.py keeps them far shorter, this is the last line of defence.
PAGE_BYTES = 8 << 20
# Characters of an artifact or agent:// resource one answer holds (the read tool's pages are
# far shorter: only a JSON extraction, which it gives whole, can be longer).
RESOURCE_CHARACTERS = 1_000_000
# A filter's choice longer than a path can be is left out of its menu (?project= still works).
CHOICE_LIMIT = 4096
# Blobs are sent in pieces of this size.
BLOB_CHUNK = 256 << 10
_NUMBER = re.compile(r"[0-9]{1,9}")
# Redacting, a text shortened for a page is redacted this far past the cut first: a secret (a
# private key is a few KB) that starts before the cut is found whole, then cut with the rest.
SECRET_REACH = 16_384


class BadParameterError(XcshStoreError):
    """A query parameter that is not what the page takes (``?page=²``)."""


def number(request: Request, name: str) -> int | None:
    """The query parameter ``name`` (None when not given): ASCII digits only, where
    ``str.isdigit`` would take ``²`` and ``int`` would then fail."""
    text = request.query_params.get(name)
    if not text:
        return None
    if not _NUMBER.fullmatch(text):
        raise BadParameterError(f"?{name}= takes a whole number, not {pages.shorten(text, 20)!r}")
    return int(text)


def named(request: Request, name: str) -> str:
    """The query parameter ``name``, which the page needs."""
    value = request.query_params.get(name)
    if not value:
        raise BadParameterError(f"?{name}= names the entry")
    return value


def bounded_html(chunks: Iterator[str], limit: int = PAGE_BYTES) -> bytes:
    """The page the template writes, as UTF-8 (a lone surrogate in a session becomes U+FFFD),
    cut at ``limit`` bytes with a note saying so."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        try:
            data = chunk.encode()
        except UnicodeEncodeError:
            data = well_formed(chunk).encode()
        size += len(data)
        if size > limit:
            parts.append(data[: len(data) - (size - limit)])
            parts.append(b'\n<p class="error">[this page was cut here: it is too long]</p>\n')
            break
        parts.append(data)
    return b"".join(parts)


class Waiting:
    """How many pages wait for their turn: counted on the event loop, read by the threads
    that make pages (an int read is atomic)."""

    def __init__(self) -> None:
        self.count = 0

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        self.count += 1
        try:
            yield
        finally:
            self.count -= 1

    def any(self) -> bool:
        return self.count > 0


def error_of(error: Exception) -> tuple[int, str]:
    """The status and title of the page that answers ``error``."""
    if isinstance(error, BadParameterError):
        return 400, "Bad request"
    if isinstance(
        error, SessionNotFoundError | EntryNotFoundError | AmbiguousLookupError | InternalUrlError
    ):
        return 404, "Not found"
    if isinstance(error, FileNotFoundError):
        return 404, "The session file is gone"
    if isinstance(error, IndexDatabaseError):
        return 503, "The index cannot be read"
    return 500, "This page failed"


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
    agent_dir = os.path.abspath(agent_dir)
    db_path = get_index_db_path(agent_dir)
    redactor = Redactor() if redact else None
    file_secrets = FileSecrets(redactor.detector) if redactor is not None else None
    # The secrets of the files the page being rendered (in this thread) shows pieces of, and
    # the highlighting it may still do.
    rendering = threading.local()
    highlighter = highlighter or Highlighter(workers=PAGES_AT_ONCE)
    renderer = markup.Renderer(highlighter)
    # Pages waiting for their turn (PAGES_AT_ONCE): while any waits, none highlights.
    waiting = Waiting()

    def known() -> list[Secret]:
        return getattr(rendering, "known", [])

    def budget() -> Budget:
        """The highlighting budget of the page being rendered in this thread."""
        found: Budget = rendering.budget
        return found

    def printed(value: Any) -> Any:
        """What a template prints: a text with its secrets redacted (before it is escaped),
        and the secrets of the files it was cut from, whole or cut. A macro's output is
        made of values that came through here already."""
        if redactor is None or not isinstance(value, str) or isinstance(value, Markup):
            return value
        return redactor.text(value, known())

    def shorten(text: object, limit: int = pages.LINE_SHOWN) -> str:
        """pages.shorten; redacting, the text redacted before it is cut (a secret cut in two
        reads as no secret)."""
        if redactor is not None and isinstance(text, str) and len(text) > limit:
            text = redactor.text(text[: limit + SECRET_REACH], known())
        return pages.shorten(text, limit)

    def snippet_pieces(snippet: str) -> list[tuple[bool, str]]:
        """A hit's highlighted pieces; redacting, a snippet that holds a secret is shown
        plain (a piece cut by a highlight would not read as the secret it is)."""
        if redactor is not None:
            plain = snippet.replace(pages.MARK_START, "").replace(pages.MARK_END, "")
            plain = plain[: pages.LINE_SHOWN + SECRET_REACH]
            redacted = redactor.text(plain, known())
            if redacted != plain:
                return [(False, pages.shorten(redacted))]
        return pages.snippet_pieces(snippet)

    def secrets_of(index: SessionIndex, paths: Any) -> list[Secret]:
        """The secrets of the session files a page shows pieces of (their excerpts, summaries
        and cut texts may hold a secret in part, which no rule can tell)."""
        if file_secrets is None:
            return []
        return [found for path in set(paths) for found in file_secrets.of_session(index, path)]

    def error_secrets(error: Exception) -> list[Secret]:
        """The secrets of the sessions an error names by their titles, cut short (the
        candidates of an ambiguous id)."""
        if file_secrets is None or not isinstance(error, AmbiguousSessionError):
            return []
        with SessionIndex.open(agent_dir, read_only=True) as index:
            return secrets_of(index, error.candidates)

    templates = jinja2.Environment(
        loader=jinja2.PackageLoader("xcsh_store.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=printed,
    )
    limiter = anyio.CapacityLimiter(PAGES_AT_ONCE)

    def url(route: str, path: str, **parameters: Any) -> str:
        """A link to a page of the session file at ``path`` (a path selects exactly one file,
        where an id may name copies of a session)."""
        given = {key: value for key, value in parameters.items() if value is not None}
        return f"{route}?{urlencode({'path': path, **given})}"

    def redacted(text: object) -> str:
        """A text to render as HTML: its secrets redacted first, a lone surrogate as U+FFFD
        (markdown and highlighting output Markup, which the template does not redact)."""
        return well_formed(printed("" if text is None else str(text)))

    templates.globals["url"] = url
    templates.filters["shorten"] = shorten
    templates.filters["markdown"] = lambda text: renderer.markdown(redacted(text), budget())
    templates.filters["code"] = lambda text, language: renderer.code(
        redacted(text), language, budget()
    )
    templates.filters["diff"] = lambda text: markup.diff_html(redacted(text))
    templates.filters["human_time"] = pages.human_time
    templates.filters["duration"] = pages.duration_text
    templates.filters["count"] = pages.count_text
    templates.filters["project"] = lambda cwd: shorten(pages.project_name(cwd), 80)

    def render(
        name: str, status: int = 200, known: list[Secret] | None = None, **context: Any
    ) -> Response:
        # The page's live stream tells of any sync after the one the page was made from.
        live = "/live?" + urlencode({"seen": index_version(db_path)})
        rendering.known = known or []
        rendering.budget = Budget(crowded=waiting.any)
        try:
            html = bounded_html(templates.get_template(name).generate(live=live, **context))
        finally:
            rendering.known = []
            rendering.budget = None
        return Response(html, status, media_type="text/html; charset=utf-8")

    def page(handler: Callable[[Request], Response]) -> Callable[[Request], Any]:
        """A route of a page that reads the index: run in a worker thread, PAGES_AT_ONCE at a
        time; any failure answers an error page of one line (damage found while the page is
        written, after the index said nothing, included)."""

        def answer(request: Request) -> Response:
            try:
                with errors_explained(db_path):
                    return handler(request)
            except Exception as error:
                status, title = error_of(error)
                message = str(error)
                if status == 500:
                    message = f"{type(error).__name__}: {error}"
                    log.error("serve: %s %s: %s", request.method, request.url.path, message)
                return render(
                    "error.html", status, title=title, message=message,
                    known=error_secrets(error),
                )  # fmt: skip

        async def endpoint(request: Request) -> Response:
            with waiting.turn():
                await limiter.acquire()
            try:
                return await anyio.to_thread.run_sync(answer, request)
            finally:
                limiter.release()

        return endpoint

    refresher = None if sync_every is None else Refresher(agent_dir, sync_every)

    def open_index() -> SessionIndex:
        if refresher is not None:
            refresher.refresh()
        return SessionIndex.open(agent_dir, read_only=True)

    # The filters' choices (projects, models: a scan of the entries' model index), kept until
    # a sync commits.
    choices: dict[str, Any] = {}

    def filter_choices(index: SessionIndex) -> tuple[list[str], list[str]]:
        version = index_version(db_path)
        if choices.get("version") != version:
            choices["version"] = version
            for name, found in (("projects", project_choices), ("models", model_choices)):
                values = [choice.value for choice in found(index, "")]
                choices[name] = [value for value in values if len(value) <= CHOICE_LIMIT]
        return choices["projects"], choices["models"]

    def chosen_session(index: SessionIndex, request: Request) -> IndexedSession:
        """The session a page is about: ``?path=`` (as the app links), or an id prefix in
        ``/session/<prefix>`` (as people type)."""
        key = request.query_params.get("path") or request.path_params.get("session", "")
        return index.find_session(key)

    def filters_of(query: Any) -> SessionFilter:
        """The filter of a page's query string, built once (an agent or a ``since`` the page
        does not offer is no filter)."""
        agent = query.get("agent")
        return SessionFilter(
            cwd=query.get("cwd") or None,
            project=query.get("project") or None,
            agents=(agent,) if agent in AGENTS else (),
            since=time_bound(pages.since_of(query.get("since", ""))),
        )

    def sessions_list(request: Request) -> Response:
        query = request.query_params
        sort = query.get("sort", "modified")
        sort = sort if sort in pages.SESSION_SORTS else "modified"
        with open_index() as index:
            listing = pages.sessions_page(
                index,
                filters_of(query),
                sort=sort,
                descending=query.get("dir", "desc") != "asc",
                page=number(request, "page") or 1,
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
        limit = min(number(request, "limit") or 50, 200)
        with open_index() as index:
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
            projects, models = filter_choices(index)
            return render(
                "search.html", q=text, hits=hits, groups=pages.grouped_hits(hits), error=error,
                query=query, pending=index.text_pending() if text else 0,
                known=secrets_of(index, (hit.path for hit in hits)),
                projects=projects, models=models, roles=sorted(SEARCH_ROLES), agents=AGENTS,
                pieces=snippet_pieces,
            )  # fmt: skip

    def session(request: Request) -> Response:
        query = request.query_params
        start = number(request, "start")
        with open_index() as index:
            info = chosen_session(index, request)
            shown = pages.session_page(
                index,
                info,
                leaf_id=query.get("leaf") or None,
                entry_id=query.get("entry") or None,
                start=start,
            )
            return render(
                "session.html", page=shown, window=pages.WINDOW,
                known=secrets_of(index, [info.path]), show_all=query.get("all") == "1",
            )  # fmt: skip

    def entry(request: Request) -> Response:
        entry_id = named(request, "id")
        with open_index() as index:
            info = chosen_session(index, request)
            shown = pages.entry_page(index, info, entry_id, number(request, "part") or 1)
            return render("entry.html", page=shown, known=secrets_of(index, [info.path]))

    def context(request: Request) -> Response:
        start = number(request, "start") or 0
        with open_index() as index:
            info = chosen_session(index, request)
            shown = pages.context_page(index, info, request.query_params.get("leaf") or None, start)
            return render(
                "context.html", page=shown, window=pages.WINDOW,
                known=secrets_of(index, [info.path]),
            )  # fmt: skip

    def export(request: Request) -> Response:
        """The session as a file to share (as ``xcsh-store export``), secrets always redacted."""
        form = request.query_params.get("format", "md")
        if form not in EXPORT_TYPES:
            raise BadParameterError(f"format is one of {', '.join(EXPORT_TYPES)}")
        with open_index() as index:
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

    def usage(request: Request) -> Response:
        by = request.query_params.get("by", "day")
        by = by if by in ("day", "week", "month", "block") else "day"
        metric = request.query_params.get("metric", "tokens")
        metric = metric if metric in ("tokens", "cost") else "tokens"

        def value_of(row: UsageRow) -> float | None:
            return row.tokens if metric == "tokens" else row.cost

        # The filters of the other pages (the entries of those sessions, in the span).
        filters = filters_of(request.query_params)
        blocks: list[Any] = []
        with open_index() as index:
            if by == "block":
                blocks = index.billing_blocks(filters)
                over_time = [pages.block_row(block) for block in blocks]
            else:
                over_time = index.usage_rows(UsageQuery(by=(by,), filter=filters))
            models = index.usage_rows(UsageQuery(by=("model",), filter=filters))
            projects = index.usage_rows(UsageQuery(by=("project",), filter=filters))
            choices, _models = filter_choices(index)
            try:
                limits, limits_error = pages.limit_rows(index.quota()), None
                budgets = index.budgets()
            except XcshStoreError as error:  # a config file that says nonsense
                limits, limits_error, budgets = [], str(error), []
        title = "by 5-hour billing window (UTC)" if by == "block" else f"by {by}"
        # The chart shows the windows worked in; the table also the idle time between them.
        worked = [row for row in over_time if row.entries]
        # Days, weeks and months on a time axis: idle ones are empty slots (a gap shows).
        axis = worked if by == "block" else pages.time_axis(over_time, by)
        charts = [
            pages.chart(title, axis, metric, value_of, len(axis) if by != "block" else 60),
            pages.ranked_chart("by model", models, metric, value_of, labels_of=pages.model_labels),
            pages.ranked_chart(
                "by project", projects, metric, value_of, name_of=pages.project_name
            ),
        ]
        active = next((block for block in blocks if block.active), None)
        return render(
            "usage.html", by=by, metric=metric, charts=charts, rows=over_time,
            totals=usage_total(over_time), active=active, blocks=blocks, limits=limits,
            limits_error=limits_error, budgets=budgets,
            query=request.query_params, projects=choices, agents=AGENTS,
        )  # fmt: skip

    def image(request: Request) -> Response:
        """An image held as base64 in a session line (pages link it rather than inline it)."""
        entry_id, part = named(request, "entry"), number(request, "part") or 0
        with open_index() as index:
            info = chosen_session(index, request)
            found = pages.entry_image(index, info, entry_id, part)
        if found is None:
            return PlainTextResponse("No such image", 404)
        mime, data = found
        return Response(data, media_type=mime, headers={"cache-control": "max-age=86400"})

    def blob(request: Request) -> Response:
        """An image of the blob store, sent a piece at a time (a blob can be large)."""
        mime = request.query_params.get("type", "")
        store = BlobStore(get_blobs_dir(agent_dir))
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

    def resource(request: Request) -> Response:
        """An artifact:// or agent:// URL of a session, as plain text, as the read tool pages it
        (its notes name the next page: ``sel=L3001``, a parameter of this route too); a JSON
        extraction, which the read tool gives whole, is cut at RESOURCE_CHARACTERS."""
        with open_index() as index:
            info = chosen_session(index, request)
        selector = request.query_params.get("sel")
        offset, limit = parse_line_selector(selector) if selector else (None, None)
        link, artifacts = request.query_params.get("url", ""), artifacts_dir_for(info.path)
        text = read_internal_url(link, artifacts, offset, limit)
        if len(text) > RESOURCE_CHARACTERS:
            rest = len(text) - RESOURCE_CHARACTERS
            text = f"{text[:RESOURCE_CHARACTERS]}\n\n[cut: {rest:,} more characters not shown]"
        if redactor is not None and file_secrets is not None:
            # A page of the resource may hold a piece of a secret of the whole (its lines).
            whole = file_secrets.of(resolve_internal_url(link, artifacts).source_path)
            text = redactor.text(text, whole)
        return PlainTextResponse(well_formed(text))

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
        return render("error.html", 404, title="Not found", message="No such page")

    code_css = markup.code_css()

    async def code_style(request: Request) -> Response:
        """The colours of highlighted code (Pygments' classes), light and dark."""
        return Response(code_css, media_type="text/css", headers={"cache-control": "max-age=3600"})

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        # A page still highlighting gets plain text at once: the server's exit waits for
        # its threads.
        highlighter.close()

    static = resources.files("xcsh_store.web") / "static"
    return Starlette(
        routes=[
            Route("/", page(sessions_list)),
            Route("/search", page(search)),
            Route("/session", page(session)),
            Route("/session/{session}", page(session)),
            Route("/entry", page(entry)),
            Route("/context", page(context)),
            Route("/resource", page(resource)),
            Route("/usage", page(usage)),
            Route("/export", page(export)),
            Route("/image", page(image)),
            Route("/blob/{hash:str}", page(blob)),
            Route("/live", live),
            Route("/code.css", code_style),
            Mount("/static", StaticFiles(directory=str(static)), name="static"),
        ],
        middleware=[Middleware(Guard, token=token, hosts=hosts or allowed_host_names("127.0.0.1"))],
        exception_handlers={404: not_found},
        lifespan=lifespan,
    )
