"""What every page of the web app shares: the ``Site``, one object made by create_app and handed
to each page (views/), with the app's settings, the index it opens, the redaction, the templates
and their rendering, and the gate that runs the pages PAGES_AT_ONCE at a time.

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
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeAlias
from urllib.parse import urlencode

import anyio
import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from xcsh_store.errors import (
    AmbiguousLookupError,
    AmbiguousSessionError,
    EntryNotFoundError,
    IndexDatabaseError,
    InternalUrlError,
    SessionNotFoundError,
)
from xcsh_store.index import (
    Refresher,
    SessionIndex,
    errors_explained,
    model_choices,
    project_choices,
)
from xcsh_store.js import well_formed
from xcsh_store.paths import get_index_db_path
from xcsh_store.secrets import FileSecrets, Redactor, Secret
from xcsh_store.web import markup, pages
from xcsh_store.web.highlight import Budget, Highlighter
from xcsh_store.web.params import BadParameterError

log = logging.getLogger("xcsh_store")

# How often the live stream looks at index.db (a stat of two files).
LIVE_CHECK_SECONDS = 0.5
# The pages that read the index or a session file, at once; the others wait their turn (a
# page of a 50,000-entry session holds tens of MB while it is made).
PAGES_AT_ONCE = 2
# No page is longer: pages.py keeps them far shorter, this is the last line of defence.
PAGE_BYTES = 8 << 20
# A filter's choice longer than a path can be is left out of its menu (?project= still works).
CHOICE_LIMIT = 4096
# Redacting, a text shortened for a page is redacted this far past the cut first: a secret (a
# private key is a few KB) that starts before the cut is found whole, then cut with the rest.
SECRET_REACH = 16_384

# A page (views/): what it answers a request with, given the site.
Page: TypeAlias = Callable[["Site", Request], Response]


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


def url(route: str, path: str, **parameters: Any) -> str:
    """A link to a page of the session file at ``path`` (a path selects exactly one file,
    where an id may name copies of a session)."""
    given = {key: value for key, value in parameters.items() if value is not None}
    return f"{route}?{urlencode({'path': path, **given})}"


class Site:
    """The web app over the index of ``agent_dir``, as its pages see it: with ``redact``, no
    secret of a session is in a page or a resource; a page syncs the index before it reads
    it, at most every ``sync_every`` seconds (None: never); code is highlighted by
    ``highlighter`` (default: one with the checked lexers), closed with the site."""

    def __init__(
        self,
        agent_dir: str,
        *,
        redact: bool,
        sync_every: float | None,
        highlighter: Highlighter | None,
    ) -> None:
        self.agent_dir = os.path.abspath(agent_dir)
        self.db_path = get_index_db_path(self.agent_dir)
        self.redactor = Redactor() if redact else None
        self.file_secrets = (
            FileSecrets(self.redactor.detector) if self.redactor is not None else None
        )
        self.highlighter = highlighter or Highlighter(workers=PAGES_AT_ONCE)
        self.refresher = None if sync_every is None else Refresher(self.agent_dir, sync_every)
        # The secrets of the files the page being rendered (in this thread) shows pieces of,
        # and the highlighting it may still do.
        self.rendering = threading.local()
        self.renderer = markup.Renderer(self.highlighter)
        # Pages waiting for their turn (PAGES_AT_ONCE): while any waits, none highlights.
        self.waiting = Waiting()
        self.limiter = anyio.CapacityLimiter(PAGES_AT_ONCE)
        # The filters' choices (projects, models: a scan of the entries' model index), kept
        # until a sync commits.
        self.choices: dict[str, Any] = {}
        self.templates = self.environment()
        self.code_css = markup.code_css()

    # -- the index ----------------------------------------------------------------------------

    def open_index(self) -> SessionIndex:
        if self.refresher is not None:
            self.refresher.refresh()
        return SessionIndex.open(self.agent_dir, read_only=True)

    def filter_choices(self, index: SessionIndex) -> tuple[list[str], list[str]]:
        version = index_version(self.db_path)
        if self.choices.get("version") != version:
            self.choices["version"] = version
            for name, found in (("projects", project_choices), ("models", model_choices)):
                values = [choice.value for choice in found(index, "")]
                self.choices[name] = [value for value in values if len(value) <= CHOICE_LIMIT]
        return self.choices["projects"], self.choices["models"]

    # -- redaction ----------------------------------------------------------------------------

    def known(self) -> list[Secret]:
        return getattr(self.rendering, "known", [])

    def printed(self, value: Any) -> Any:
        """What a template prints: a text with its secrets redacted (before it is escaped),
        and the secrets of the files it was cut from, whole or cut. A macro's output is
        made of values that came through here already."""
        if self.redactor is None or not isinstance(value, str) or isinstance(value, Markup):
            return value
        return self.redactor.text(value, self.known())

    def shorten(self, text: object, limit: int = pages.LINE_SHOWN) -> str:
        """pages.shorten; redacting, the text redacted before it is cut (a secret cut in two
        reads as no secret)."""
        if self.redactor is not None and isinstance(text, str) and len(text) > limit:
            text = self.redactor.text(text[: limit + SECRET_REACH], self.known())
        return pages.shorten(text, limit)

    def snippet_pieces(self, snippet: str) -> list[tuple[bool, str]]:
        """A hit's highlighted pieces; redacting, a snippet that holds a secret is shown
        plain (a piece cut by a highlight would not read as the secret it is)."""
        if self.redactor is not None:
            plain = snippet.replace(pages.MARK_START, "").replace(pages.MARK_END, "")
            plain = plain[: pages.LINE_SHOWN + SECRET_REACH]
            redacted = self.redactor.text(plain, self.known())
            if redacted != plain:
                return [(False, pages.shorten(redacted))]
        return pages.snippet_pieces(snippet)

    def secrets_of(self, index: SessionIndex, paths: Any) -> list[Secret]:
        """The secrets of the session files a page shows pieces of (their excerpts, summaries
        and cut texts may hold a secret in part, which no rule can tell)."""
        if self.file_secrets is None:
            return []
        return [found for path in set(paths) for found in self.file_secrets.of_session(index, path)]

    def error_secrets(self, error: Exception) -> list[Secret]:
        """The secrets of the sessions an error names by their titles, cut short (the
        candidates of an ambiguous id)."""
        if self.file_secrets is None or not isinstance(error, AmbiguousSessionError):
            return []
        with SessionIndex.open(self.agent_dir, read_only=True) as index:
            return self.secrets_of(index, error.candidates)

    def redacted(self, text: object) -> str:
        """A text to render as HTML: its secrets redacted first, a lone surrogate as U+FFFD
        (markdown and highlighting output Markup, which the template does not redact)."""
        return well_formed(self.printed("" if text is None else str(text)))

    # -- rendering ----------------------------------------------------------------------------

    def budget(self) -> Budget:
        """The highlighting budget of the page being rendered in this thread."""
        found: Budget = self.rendering.budget
        return found

    def environment(self) -> jinja2.Environment:
        """The templates, with the filters that redact, shorten and highlight what they show."""
        templates = jinja2.Environment(
            loader=jinja2.PackageLoader("xcsh_store.web", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            finalize=self.printed,
        )
        templates.globals["url"] = url
        templates.filters["shorten"] = self.shorten
        templates.filters["markdown"] = lambda text: self.renderer.markdown(
            self.redacted(text), self.budget()
        )
        templates.filters["code"] = lambda text, language: self.renderer.code(
            self.redacted(text), language, self.budget()
        )
        templates.filters["diff"] = lambda text: markup.diff_html(self.redacted(text))
        templates.filters["human_time"] = pages.human_time
        templates.filters["duration"] = pages.duration_text
        templates.filters["count"] = pages.count_text
        templates.filters["project"] = lambda cwd: self.shorten(pages.project_name(cwd), 80)
        return templates

    def render(
        self, name: str, status: int = 200, known: list[Secret] | None = None, **context: Any
    ) -> Response:
        # The page's live stream tells of any sync after the one the page was made from.
        live = "/live?" + urlencode({"seen": index_version(self.db_path)})
        self.rendering.known = known or []
        self.rendering.budget = Budget(crowded=self.waiting.any)
        try:
            html = bounded_html(self.templates.get_template(name).generate(live=live, **context))
        finally:
            self.rendering.known = []
            self.rendering.budget = None
        return Response(html, status, media_type="text/html; charset=utf-8")

    async def not_found(self, request: Request, error: Exception) -> Response:
        return self.render("error.html", 404, title="Not found", message="No such page")

    # -- serving: the pages behind the gate, and what every page loads besides itself ---------

    def endpoint(self, page: Page) -> Callable[[Request], Awaitable[Response]]:
        """The route of ``page``, which reads the index: run in a worker thread, PAGES_AT_ONCE
        at a time; any failure answers an error page of one line (damage found while the page
        is written, after the index said nothing, included)."""

        def answer(request: Request) -> Response:
            try:
                with errors_explained(self.db_path):
                    return page(self, request)
            except Exception as error:
                status, title = error_of(error)
                message = str(error)
                if status == 500:
                    message = f"{type(error).__name__}: {error}"
                    log.error("serve: %s %s: %s", request.method, request.url.path, message)
                return self.render(
                    "error.html", status, title=title, message=message,
                    known=self.error_secrets(error),
                )  # fmt: skip

        async def endpoint(request: Request) -> Response:
            with self.waiting.turn():
                await self.limiter.acquire()
            try:
                return await anyio.to_thread.run_sync(answer, request)
            finally:
                self.limiter.release()

        return endpoint

    async def live(self, request: Request) -> Response:
        """Server-sent events: ``index`` each time a sync commits (after the version ``seen``
        that the page was made from, when given)."""

        async def events() -> AsyncIterator[bytes]:
            seen = request.query_params.get("seen") or index_version(self.db_path)
            yield b"retry: 2000\n\n"
            while not await request.is_disconnected():
                await asyncio.sleep(LIVE_CHECK_SECONDS)
                now = index_version(self.db_path)
                if now != seen:
                    seen = now
                    yield b"event: index\ndata: changed\n\n"

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"cache-control": "no-store"}
        )

    async def code_style(self, request: Request) -> Response:
        """The colours of highlighted code (Pygments' classes), light and dark."""
        return Response(
            self.code_css, media_type="text/css", headers={"cache-control": "max-age=3600"}
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        yield
        # A page still highlighting gets plain text at once: the server's exit waits for
        # its threads.
        self.highlighter.close()
