"""Readers of other agents' session files, one module per format, behind one interface
(base.py): what the index reads of Claude Code, Codex, Gemini CLI, Qwen Code, GitHub Copilot
CLI, Factory Droid and Cursor sessions. Adding an agent is one more module and one more entry
in READERS."""

from __future__ import annotations

import os
from typing import Any

from xcsh_store.agents import copilot, cursor, droid, gemini, qwen
from xcsh_store.agents.base import (
    UNKNOWN_VERSION_PREFIX,
    AgentEntry,
    AgentReader,
    HistoryPrompt,
    SessionFacts,
)
from xcsh_store.agents.claude import READER as CLAUDE
from xcsh_store.agents.codex import READER as CODEX
from xcsh_store.homes import agent_folders, get_agent_session_roots

# The xcsh format family: the header does not say which of them wrote a file (pi, oh-my-pi and
# xcsh write the same one); oh-my-pi's leading title record and the folder do (xcsh_agent_of).
XCSH_AGENTS = ("xcsh", "pi", "omp")
READERS: tuple[AgentReader, ...] = (
    CLAUDE, CODEX, gemini.READER, copilot.READER, qwen.READER, droid.READER, cursor.READER,
)  # fmt: skip
# The order their recognizes() is asked in: Qwen Code's lines have Claude Code's uuid and
# sessionId, so Qwen's reader looks first.
_RECOGNITION_ORDER = (qwen.READER, *(reader for reader in READERS if reader is not qwen.READER))
# The variables that move the folders of the agents read here beyond homes.py's (tests point
# them into a temp dir).
FOLDER_VARIABLES = (*gemini.FOLDER_VARIABLES, *copilot.FOLDER_VARIABLES, *qwen.FOLDER_VARIABLES)
# The agents whose files a reader here reads: their folders are only ever read, and their files
# hold no costs (the index estimates them: agents/pricing.py).
OTHER_AGENTS = tuple(reader.name for reader in READERS)
AGENTS = (*XCSH_AGENTS, *OTHER_AGENTS)

__all__ = [
    "AGENTS",
    "FOLDER_VARIABLES",
    "OTHER_AGENTS",
    "READERS",
    "UNKNOWN_VERSION_PREFIX",
    "XCSH_AGENTS",
    "AgentEntry",
    "AgentReader",
    "HistoryPrompt",
    "SessionFacts",
    "agent_session_roots",
    "cost_kind",
    "reader_for",
    "reader_named",
    "xcsh_agent_of",
]


def cost_kind(agent: str, cost: float | None, unpriced_entries: int) -> str:
    """How a session's cost is known: ``recorded`` (the agent wrote its costs), ``estimated``
    (Claude Code and Codex write none: the index prices their tokens), ``partial`` (estimated,
    but some entries are of a model without a price: the cost is a lower bound) or
    ``unpriced`` (no entry adds a cost and some have no price): never an unknown cost as $0."""
    if agent not in OTHER_AGENTS:
        return "recorded"
    if not unpriced_entries:
        return "estimated"
    return "partial" if cost else "unpriced"


def agent_session_roots() -> dict[str, str]:
    """Every folder where an agent may keep session files on this machine -> the agent (the
    folders need not exist): homes.py's, and each reader's own."""
    roots = get_agent_session_roots()
    for reader in READERS:
        for folder in reader.session_roots():
            roots.setdefault(folder, reader.name)
    return roots


def reader_for(first: dict[str, Any]) -> AgentReader | None:
    """The reader of a file whose first object is ``first`` (None: not another agent's)."""
    for reader in _RECOGNITION_ORDER:
        if reader.recognizes(first):
            return reader
    return None


def reader_named(name: str | None) -> AgentReader | None:
    for reader in READERS:
        if reader.name == name:
            return reader
    return None


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
