"""Readers of other agents' session files: one plugin module per agent (claude.py, codex.py and
any a third-party package registers), each owning its facts, behind one interface (base.py),
found through the entry point group ``xcsh_store.agents`` (registry.py). Adding an agent is one
module and one entry point (docs/architecture.md).

The names of ``_FROM_REGISTRY`` (``AGENTS``, ``READERS``, …) are read from the registry when
first asked for (the plugins are loaded then, once)."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from xcsh_store.agents.base import (
    KINDS,
    PLUGIN_FAULTS,
    UNKNOWN_VERSION_PREFIX,
    Agent,
    AgentEntry,
    AgentReader,
    HistoryPrompt,
    PluginOutputError,
    QuotaReading,
    Record,
    SessionFacts,
    Source,
    entry_problem,
)
from xcsh_store.agents.registry import XCSH_AGENTS, agent_named, agents, jsonl_agents, labels
from xcsh_store.homes import agent_folders, xcsh_family_roots

__all__ = [  # and the names of _FROM_REGISTRY, added below
    "KINDS",
    "PLUGIN_FAULTS",
    "UNKNOWN_VERSION_PREFIX",
    "UNREAD_TYPE",
    "XCSH_AGENTS",
    "Agent",
    "AgentEntry",
    "AgentReader",
    "HistoryPrompt",
    "PluginOutputError",
    "QuotaReading",
    "Record",
    "SessionFacts",
    "Source",
    "agent_history_files",
    "agent_labels",
    "agent_session_roots",
    "folder_variables",
    "history_prompt",
    "kind_of",
    "read_entry",
    "reader_for",
    "reader_named",
    "records",
    "records_at",
    "sources",
    "xcsh_agent_of",
]

agent_labels = labels


# The names read from the registry when first asked for (the plugins load then), each with
# how: READERS, every plugin; OTHER_AGENTS, their names (the agents whose folders are only ever
# read); ESTIMATED_AGENTS, those whose files hold no costs (the index estimates them:
# agents/prices/pricing.py); FOLDER_VARIABLES, the variables that move their folders; AGENTS,
# the xcsh family and the plugins.
_FROM_REGISTRY: dict[str, Callable[[], Any]] = {
    "READERS": agents,
    "OTHER_AGENTS": lambda: tuple(agent.name for agent in agents()),
    "ESTIMATED_AGENTS": lambda: tuple(agent.name for agent in agents() if not agent.records_costs),
    "FOLDER_VARIABLES": lambda: folder_variables(),  # (defined below)
    "AGENTS": lambda: (*XCSH_AGENTS, *(agent.name for agent in agents())),
}
__all__ += sorted(_FROM_REGISTRY)
if TYPE_CHECKING:  # (their types; __getattr__ gives them)
    READERS: tuple[Agent, ...]
    OTHER_AGENTS: tuple[str, ...]
    ESTIMATED_AGENTS: tuple[str, ...]
    FOLDER_VARIABLES: tuple[str, ...]
    AGENTS: tuple[str, ...]


def __getattr__(name: str) -> Any:
    found = _FROM_REGISTRY.get(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found()


# The type of the entry a record becomes when its plugin fails to read it.
UNREAD_TYPE = "unread"
_failed_plugins: set[str] = set()

# Every call of a plugin's code goes through the functions below: what it raises (SystemExit
# too: PLUGIN_FAULTS) or gives of another type than its place takes costs the record, session
# or root it was about, and the first such fault of each plugin is warned of in one line. A
# plugin's bug costs its records, never the sync or the question.


def read_entry(agent: Agent, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
    """``agent.read(value, session)``; a record the plugin fails on, or reads as something the
    index cannot take (entry_problem, SessionFacts.problem), is kept as an entry of type
    ``unread`` without text, and what it said of its session is undone."""
    saved = session.saved()
    try:
        found = agent.read(value, session)
        problem = entry_problem(found) or session.problem(saved)
        if problem is not None:
            raise PluginOutputError(problem)
    except PLUGIN_FAULTS as error:
        session.restore(saved)
        _plugin_failed(agent, f"could not read a record of {session.path}", error)
        return AgentEntry({"type": UNREAD_TYPE}, qualifier=type(error).__name__)
    return found


def sources(agent: Agent, root: str) -> Iterator[Source]:
    """``agent.sources(root)``, but the sessions it names wrongly (warned of: they are lost);
    what the plugin raises is raised (it costs the root)."""
    for source in agent.sources(root):
        if (
            isinstance(source, tuple)
            and len(source) == len(Source._fields)
            and isinstance(source[0], str)
            and all(type(figure) is int for figure in source[1:])
        ):
            yield Source(*source)
        else:
            problem = PluginOutputError(f"{source!r:.60} is not a Source (path, 4 integers)")
            _plugin_failed(agent, f"named a session below {root} wrongly", problem)


def records(agent: Agent, path: str, copy: str | None = None) -> Iterator[Record]:
    """``agent.records(path)`` (``copy``: ``agent.records_of_copy(path, copy)``), but the
    records it gives wrongly (a locator that is not an integer, a record that is not an
    object: warned of, lost); what the plugin raises is raised (it costs the session)."""
    found = agent.records(path) if copy is None else agent.records_of_copy(path, copy)
    for record in found:
        if (
            isinstance(record, tuple)
            and len(record) == 2
            and type(record[0]) is int
            and isinstance(record[1], dict)
        ):
            yield record
        else:
            problem = PluginOutputError(f"{record!r:.60} is not (locator, record)")
            _plugin_failed(agent, f"gave a record of {path} wrongly", problem)


def records_at(
    agent: Agent, path: str, locators: Iterable[int]
) -> dict[int, dict[str, Any]] | None:
    """``agent.records_at(path, locators)``; None when the plugin fails (or gives something
    that is not a dict of them). An OSError (a session gone or unreadable now) is raised."""
    try:
        found = agent.records_at(path, locators)
        if not isinstance(found, dict):
            raise PluginOutputError(f"records_at() gave {found!r:.60}, not a dict")
        return found
    except OSError:
        raise
    except PLUGIN_FAULTS as error:
        _plugin_failed(agent, f"could not read records of {path}", error)
        return None


def kind_of(agent: Agent, path: str) -> str:
    """The kind of the session at ``path`` (Agent.kind_of); the agent's kind when the plugin
    fails to say."""
    try:
        kind = agent.kind_of(path)
        if kind not in KINDS:
            raise PluginOutputError(f"kind_of() gave {kind!r:.60}, none of {', '.join(KINDS)}")
        return kind
    except PLUGIN_FAULTS as error:
        _plugin_failed(agent, f"could not tell the kind of {path}", error)
        return agent.kind


def history_prompt(agent: Agent, value: dict[str, Any]) -> HistoryPrompt | None:
    """The prompt of a line of the agent's history file (Agent.history_prompt); None when it
    holds none, or when the plugin fails on it."""
    try:
        found = agent.history_prompt(value)
        if found is not None and not (
            isinstance(found, HistoryPrompt)
            and isinstance(found.prompt, str)
            and isinstance(found.created_at, int | float)
            and not isinstance(found.created_at, bool)
            and math.isfinite(found.created_at)
            and all(part is None or isinstance(part, str) for part in (found.cwd, found.session_id))
        ):
            raise PluginOutputError(f"history_prompt() gave {found!r:.60}")
        return found
    except PLUGIN_FAULTS as error:
        _plugin_failed(agent, "could not read a line of its prompt history", error)
        return None


def _plugin_failed(agent: Agent, what: str, error: BaseException) -> None:
    """One warning line for the first fault of each plugin (it may fail on every record)."""
    if agent.name in _failed_plugins:
        return
    _failed_plugins.add(agent.name)
    logging.getLogger("xcsh_store").warning(
        "agent plugin %s %s: %s: %s", agent.name, what, type(error).__name__, error
    )


def reader_for(first: dict[str, Any]) -> Agent | None:
    """The JSONL reader of a file whose first object is ``first`` (None: not another agent's)."""
    for agent in jsonl_agents():
        try:
            if agent.recognizes(first):
                return agent
        except PLUGIN_FAULTS as error:  # the plugin's own fault: not its file, then
            _plugin_failed(agent, "could not look at a first line", error)
    return None


def reader_named(name: str | None) -> Agent | None:
    return agent_named(name)


def agent_session_roots() -> dict[str, str]:
    """Every folder where an agent may keep sessions on this machine -> the agent (the folders
    need not exist): each plugin's own, then the xcsh family's (homes.py). A plugin whose
    session_roots() fails is warned of and skipped."""
    roots: dict[str, str] = {}
    for agent in agents():
        for folder in _plugin_call(agent, "session_roots"):
            roots.setdefault(folder, agent.name)
    for folder, family_agent in xcsh_family_roots().items():
        roots.setdefault(folder, family_agent)
    return roots


def agent_history_files() -> dict[str, str]:
    """Each plugin's prompt history file, by agent (the first of those it names)."""
    found = {}
    for agent in agents():
        files = _plugin_call(agent, "history_files")
        if files:
            found[agent.name] = files[0]
    return found


def folder_variables() -> tuple[str, ...]:
    """Every environment variable a plugin names as moving its folders."""
    return tuple(variable for agent in agents() for variable in agent.folder_variables)


def _plugin_call(agent: Agent, method: str) -> list[str]:
    """The folders or files ``agent.method()`` names (none when it fails or names a thing
    that is not a path)."""
    try:
        found = list(getattr(agent, method)())
        wrong = [item for item in found if not isinstance(item, str)]
        if wrong:
            raise PluginOutputError(f"{method}() gave {wrong[0]!r:.60}, not a path")
        return found
    except PLUGIN_FAULTS as error:  # a plugin's own fault
        _plugin_failed(agent, f"{method}() failed", error)
        return []


def xcsh_agent_of(path: str, opens_with_title: bool = False) -> str:
    """Which of the xcsh family wrote a file with a session header. Its content says it first:
    a file that begins with a ``title`` record is oh-my-pi's (it keeps its title there, to
    rewrite it in place; pi and xcsh never write one). Else its place: below the folders pi and
    oh-my-pi use on this machine (homes.agent_folders), or in a ``.pi`` / ``.omp`` folder
    anywhere (a copy from another machine); else xcsh. Migration 0009 had the folder rule."""
    if opens_with_title:
        return "omp"
    for folder, agent in agent_folders():
        if path.startswith(folder.rstrip(os.sep) + os.sep):
            return agent
    if "/.pi/" in path:
        return "pi"
    if "/.omp/" in path:
        return "omp"
    return "xcsh"
