"""Readers of other agents' session files: one plugin module per agent (claude.py, codex.py and
any a third-party package registers), each owning its facts, behind one interface (base.py),
found through the entry point group ``xcsh_store.agents`` (registry.py). Adding an agent is one
module and one entry point (docs/architecture.md).

``AGENTS``, ``OTHER_AGENTS``, ``ESTIMATED_AGENTS``, ``FOLDER_VARIABLES`` and ``READERS`` are
read from the registry when first asked for (the plugins are loaded then, once)."""

from __future__ import annotations

import logging
import os
from typing import Any

from xcsh_store.agents.base import (
    KINDS,
    UNKNOWN_VERSION_PREFIX,
    Agent,
    AgentEntry,
    AgentReader,
    HistoryPrompt,
    Record,
    SessionFacts,
    Source,
)
from xcsh_store.agents.registry import XCSH_AGENTS, agent_named, agents, jsonl_agents, labels
from xcsh_store.homes import agent_folders, xcsh_family_roots

__all__ = [
    "AGENTS",
    "ESTIMATED_AGENTS",
    "FOLDER_VARIABLES",
    "KINDS",
    "OTHER_AGENTS",
    "READERS",
    "UNKNOWN_VERSION_PREFIX",
    "UNREAD_TYPE",
    "XCSH_AGENTS",
    "Agent",
    "AgentEntry",
    "AgentReader",
    "HistoryPrompt",
    "Record",
    "SessionFacts",
    "Source",
    "agent_history_files",
    "agent_labels",
    "agent_session_roots",
    "cost_kind",
    "folder_variables",
    "read_entry",
    "reader_for",
    "reader_named",
    "xcsh_agent_of",
]

agent_labels = labels


def __getattr__(name: str) -> Any:
    # READERS: every plugin; OTHER_AGENTS: their names (the agents whose folders are only ever
    # read); ESTIMATED_AGENTS: those whose files hold no costs (the index estimates them:
    # agents/prices/pricing.py); AGENTS: the xcsh family and the plugins.
    if name == "READERS":
        return agents()
    if name == "OTHER_AGENTS":
        return tuple(agent.name for agent in agents())
    if name == "ESTIMATED_AGENTS":
        return tuple(agent.name for agent in agents() if not agent.records_costs)
    if name == "FOLDER_VARIABLES":
        return folder_variables()
    if name == "AGENTS":
        return (*XCSH_AGENTS, *(agent.name for agent in agents()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The type of the entry a record becomes when its plugin fails to read it.
UNREAD_TYPE = "unread"
_failed_plugins: set[str] = set()


def read_entry(agent: Agent, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
    """``agent.read(value, session)``; a record the plugin fails on (its own fault) is kept as
    an entry of type ``unread`` without text, and the first failure of each plugin is warned
    of in one line: a plugin's bug costs its records, never the sync or the question."""
    try:
        return agent.read(value, session)
    except Exception as error:
        _plugin_failed(agent, f"could not read a record of {session.path}", error)
        return AgentEntry({"type": UNREAD_TYPE}, qualifier=type(error).__name__)


def _plugin_failed(agent: Agent, what: str, error: Exception) -> None:
    """One warning line for the first fault of each plugin (it may fail on every record)."""
    if agent.name in _failed_plugins:
        return
    _failed_plugins.add(agent.name)
    logging.getLogger("xcsh_store").warning(
        "agent plugin %s %s: %s: %s", agent.name, what, type(error).__name__, error
    )


def cost_kind(agent: str, cost: float | None, unpriced_entries: int) -> str:
    """How a session's cost is known: ``recorded`` (the agent wrote its costs), ``estimated``
    (the agent writes none, as Claude Code and Codex: the index prices its tokens),
    ``partial`` (some entries have neither a recorded cost nor a price: the cost is a lower
    bound) or ``unpriced`` (no entry adds a cost and some have none): never an unknown cost as
    $0."""
    if unpriced_entries:
        return "partial" if cost else "unpriced"
    found = agent_named(agent)
    return "recorded" if found is None or found.records_costs else "estimated"


def reader_for(first: dict[str, Any]) -> Agent | None:
    """The JSONL reader of a file whose first object is ``first`` (None: not another agent's)."""
    for agent in jsonl_agents():
        try:
            if agent.recognizes(first):
                return agent
        except Exception as error:  # the plugin's own fault: not its file, then
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
    try:
        return list(getattr(agent, method)())
    except Exception as error:  # a plugin's own fault
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
