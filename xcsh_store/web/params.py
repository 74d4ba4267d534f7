"""What a page reads from its request: whole numbers and names of the query string, checked
(a bad one answers 400), the session a page is about and the filters of the listing pages."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request

from xcsh_store.agents import AGENTS
from xcsh_store.errors import XcshStoreError
from xcsh_store.index import IndexedSession, SessionFilter, SessionIndex, time_bound
from xcsh_store.web import pages

_NUMBER = re.compile(r"[0-9]{1,9}")


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
