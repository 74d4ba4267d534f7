"""The questions of the read verbs as small frozen types that check themselves once: which
sessions (``SessionFilter``), a listing (``SessionQuery``), a search (``SearchQuery``), usage
sums (``UsageQuery``) and recalled prompts (``PromptQuery``).

Each front builds them once (the CLI from its options, the web app from its query string, the
MCP server from its arguments) and each index compiles them to its own SQL: index.db's read
modules (``sessions.filter_sql``, search, usage, prompts) and the team index's reader
(PostgreSQL); ``store.IndexReader`` names what both indexes answer. A new filter is one field here,
one line in each compiler, and one option (cli/params.py FILTER_OPTIONS, which ``ls`` takes
whole).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, tzinfo
from typing import Any

from xcsh_store.errors import SearchQueryError
from xcsh_store.times import iso_bound, parse_time_bound, time_order_problem

# The message roles of session entries (compatibility: Session file format as in the reference);
# a search's role is any of these in any letter case.
SEARCH_ROLES = ("user", "assistant", "toolResult", "bashExecution", "pythonExecution", "custom",
                "hookMessage", "branchSummary", "compactionSummary", "fileMention")  # fmt: skip
_ROLES_BY_FOLDED_NAME = {role.casefold(): role for role in SEARCH_ROLES}

# The orders of a listing (each served by an index of index.db but the title order).
SESSION_ORDERS = ("modified", "created", "title")
# The groupings of usage: index.db's, and the team index's, which adds the host.
USAGE_GROUPINGS = ("day", "week", "month", "model", "provider", "project", "session", "agent",
                   "root-session")  # fmt: skip
TEAM_USAGE_GROUPINGS = (*USAGE_GROUPINGS, "host")


def search_role(role: str) -> str:
    """The role named ``role`` in any letter case; SearchQueryError names the valid ones."""
    found = _ROLES_BY_FOLDED_NAME.get(role.casefold())
    if found is None:
        raise SearchQueryError(f"Unknown role {role!r}; roles are: {', '.join(SEARCH_ROLES)}")
    return found


def time_bound(bound: datetime | str | None) -> str | None:
    """A time bound as questions hold it: an index timestamp (a datetime as iso_millis writes
    it, text as given), or None."""
    return None if bound is None else iso_bound(bound)


def known_agents(agents: Collection[str] | None) -> tuple[str, ...]:
    """``agents`` sorted, each once (None or empty: every agent, ``()``); ValueError names the
    agents there are when one is not."""
    names = tuple(sorted(set(agents or ())))
    if not names:
        return names  # (the plugins, and their package, are loaded only to check a name)
    import xcsh_store.agents as agent_plugins

    known = agent_plugins.AGENTS
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"Unknown agent {unknown[0]!r}; agents are: {', '.join(known)}")
    return names


def _set(record: Any, name: str, value: Any) -> None:
    """Set a field of a frozen record while it checks itself (in ``__post_init__``)."""
    object.__setattr__(record, name, value)


def _limit(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number of 0 or more, not {value!r}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFilter:
    """Which sessions (and their entries) a question is about.

    ``cwd``: started in that folder; ``project``: started in that folder or one inside it;
    ``agents``: written by one of these (empty: any); ``since``/``until``: time bounds (a
    listing keeps the sessions active in that span, a search and usage the entries in it);
    ``host``: pushed by that host (the team index only); ``archived``: True for the sessions
    whose file is gone (kept by the archive), False for those whose file is there.
    """

    cwd: str | None = None
    project: str | None = None
    agents: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    host: str | None = None
    archived: bool | None = None

    def __post_init__(self) -> None:
        _set(self, "agents", known_agents(self.agents))
        for name in ("since", "until"):
            # (A datetime given anyway is taken as time_bound takes it.)
            _set(self, name, time_bound(getattr(self, name)))

    @classmethod
    def parse(
        cls,
        *,
        since: str | None = None,
        until: str | None = None,
        zone: tzinfo | None = None,
        **given: Any,
    ) -> SessionFilter:
        """A filter from text as people type it (the MCP arguments, a query string): times as
        ``--since`` reads them (a date, a time, an age such as ``7d``), in order; ValueError
        names the argument."""
        bounds: dict[str, str | None] = {}
        for name, text in (("since", since), ("until", until)):
            try:
                bounds[name] = None if text is None else parse_time_bound(text, zone=zone)
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
        problem = time_order_problem(bounds["since"], bounds["until"])
        if problem:
            raise ValueError(problem)
        return cls(since=bounds["since"], until=bounds["until"], **given)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionQuery:
    """A listing: the sessions of ``filter`` in ``order``, at most ``limit`` (None: all)."""

    filter: SessionFilter = field(default_factory=SessionFilter)
    order: str = "modified"
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.order not in SESSION_ORDERS:
            raise ValueError(f"order must be one of {', '.join(SESSION_ORDERS)}")
        _set(self, "limit", _limit("limit", self.limit))


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchQuery:
    """A full-text search: ``text`` (words, "phrases", -excluded words) in the entries of
    ``filter``, of ``role`` (any letter case) and ``model`` (an id, or ``provider/model`` as
    usage prints it), the best ``limit`` hits, matches marked with ``highlight``."""

    text: str
    filter: SessionFilter = field(default_factory=SessionFilter)
    role: str | None = None
    model: str | None = None
    limit: int = 20
    highlight: tuple[str, str] = ("[", "]")

    def __post_init__(self) -> None:
        if self.role is not None:
            _set(self, "role", search_role(self.role))
        _set(self, "limit", _limit("limit", self.limit))

    @property
    def model_match(self) -> tuple[str, str, str] | None:
        """What an entry's model is compared with: the whole ``model`` as a model id, or its
        ``provider/model`` halves (a model id may itself hold a slash, as openrouter's do)."""
        return None if self.model is None else model_match(self.model)


def project_folder(project: str) -> tuple[str, str] | None:
    """The folder a project filter names and the start of the folders inside it: a session
    is of the project when its working directory is the one or starts with the other. None
    for an empty project, which keeps the sessions without a working directory. A session's
    project is its cwd, for every agent (not the folder its file is in: Claude Code names
    those after the cwd, Codex by date)."""
    if not project:
        return None
    folder = project.rstrip("/") or "/"
    return folder, folder if folder.endswith("/") else folder + "/"


def model_match(model: str) -> tuple[str, str, str]:
    """``model`` as (whole id, provider, id after the first slash): an entry matches when its
    model is the whole id, or its provider and model are the two halves."""
    provider, _, name = model.partition("/")
    return model, provider, name


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageQuery:
    """Token and cost sums of the entries of ``filter``, one row per group of ``by`` (one
    grouping or several, each once, in order); days, weeks and months in ``zone`` (None: the
    local time zone; the team index's are UTC)."""

    by: tuple[str, ...] = ("day",)
    filter: SessionFilter = field(default_factory=SessionFilter)
    zone: tzinfo | None = None

    def __post_init__(self) -> None:
        groups = tuple(dict.fromkeys([self.by] if isinstance(self.by, str) else self.by))
        if not groups or any(group not in TEAM_USAGE_GROUPINGS for group in groups):
            raise ValueError(f"by must be one or more of {', '.join(USAGE_GROUPINGS)}")
        _set(self, "by", groups)


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptQuery:
    """Prompts typed before, newest first: all of them (``text`` None) or those holding every
    word of ``text``; at most ``limit``; only those of ``agents`` (empty: any)."""

    text: str | None = None
    limit: int = 20
    agents: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from xcsh_store.history.store import normalize_limit  # (ls need not import history)

        _set(self, "agents", known_agents(self.agents))
        # As history.db's own lists: 0 to 1,000 (a negative limit lists nothing).
        _set(self, "limit", normalize_limit(self.limit))


def refuse_unasked(session_filter: SessionFilter, compiled: Collection[str], index: str) -> None:
    """A ValueError naming the first field of ``session_filter`` that is set and that is not
    among the fields a compiler ``compiled`` for a question of ``index``: neither index answers
    a question with part of it left out (a field added here and to one compiler only)."""
    for item in fields(session_filter):
        if getattr(session_filter, item.name) not in (None, ()) and item.name not in compiled:
            raise ValueError(f"{item.name}: this question cannot be asked of {index}")


# Every question (a public method of an index makes the texts of one storable).
Question = SessionFilter | SessionQuery | SearchQuery | UsageQuery | PromptQuery


def with_texts(question: Any, convert: Any) -> Any:
    """``question`` with ``convert`` applied to each of its texts (and its filter's)."""
    changes: dict[str, Any] = {}
    for item in fields(question):
        value = getattr(question, item.name)
        if isinstance(value, str):
            changes[item.name] = convert(value)
        elif isinstance(value, SessionFilter):
            changes[item.name] = with_texts(value, convert)
    return replace(question, **changes) if changes else question
