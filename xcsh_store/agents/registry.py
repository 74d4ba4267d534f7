"""The agents the store reads besides the xcsh family: every plugin of the entry point group
``xcsh_store.agents``, found as importlib.metadata finds them (kept in the user's cache folder:
entry_points.py) and loaded once, as llm and Datasette load theirs.

The package declares its own agents there (pyproject.toml); a third-party package adds one by
declaring an object of its own in the same group::

    [project.entry-points."xcsh_store.agents"]
    myagent = "myagent_xcsh:AGENT"

A plugin that cannot be loaded, or is not an agent, costs one warning line and is left out: the
store reads the others as before.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import TYPE_CHECKING, Any

from xcsh_store.agents.base import KINDS, PLUGIN_FAULTS, Agent, ResumeCommand

if TYPE_CHECKING:
    from xcsh_store.agents.entry_points import PluginEntry

log = logging.getLogger("xcsh_store")

GROUP = "xcsh_store.agents"
# The distribution whose plugins win a name that another one registers too.
OWN_DISTRIBUTION = "xcsh-store"
# The xcsh format family: read by the index itself (the header does not say which of them
# wrote a file: agents/__init__.py xcsh_agent_of); no plugin may take these names.
XCSH_AGENTS = ("xcsh", "pi", "omp")
# How each of them continues a session: xcsh and oh-my-pi take an id (prefix) with --resume
# (reference.md 13.5), pi takes the session file with --session.
XCSH_RESUME = {
    "xcsh": "xcsh --resume {id}",
    "omp": "omp --resume {id}",
    "pi": "pi --session {path}",
}
# Names go into SQL lists and command-line choices as they are.
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


@functools.cache
def agents() -> tuple[Agent, ...]:
    """Every agent plugin that loads, by name."""
    # (Imported here: a read verb that needs no plugin needs none of it.)
    from xcsh_store.agents.entry_points import load, plugin_entries

    found: dict[str, tuple[Agent, PluginEntry]] = {}
    for entry_point in plugin_entries(GROUP):
        try:
            agent = _agent_of(load(entry_point.value))
        except PLUGIN_FAULTS as error:  # a plugin's own fault, whatever it is (sys.exit too)
            message = str(error).strip().splitlines()
            log.warning(
                "agent plugin %s (%s) left out: %s%s",
                entry_point.name,
                entry_point.value,
                type(error).__name__,
                f": {message[0]}" if message else "",
            )
            continue
        earlier = found.get(agent.name)
        if earlier is not None and (_own(earlier[1]) or not _own(entry_point)):
            log.warning(
                "agent plugin %s (%s) left out: another plugin reads agent %r",
                entry_point.name,
                entry_point.value,
                agent.name,
            )
            continue
        found[agent.name] = (agent, entry_point)
    return tuple(agent for _, (agent, _entry_point) in sorted(found.items()))


@functools.cache
def jsonl_agents() -> tuple[Agent, ...]:
    """The plugins of JSONL files, in the order a file's first object is tried (Agent.order)."""
    return tuple(
        sorted((a for a in agents() if a.kind == "jsonl"), key=lambda a: (a.order, a.name))
    )


def _own(entry_point: PluginEntry) -> bool:
    """Whether the plugin is this package's own."""
    return entry_point.distribution == OWN_DISTRIBUTION


def _agent_of(value: Any) -> Agent:
    """The plugin's object as an Agent (a class is made into its object), checked."""
    if isinstance(value, type):
        value = value()
    agent = value if isinstance(value, Agent) else _Adopted(value)
    name = agent.name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise TypeError(f"agent name {name!r} is not lower-case letters, digits, - and _")
    if name in XCSH_AGENTS:
        raise TypeError(f"agent name {name!r} is the xcsh family's")
    if agent.kind not in KINDS:
        raise TypeError(f"kind {agent.kind!r} is none of {', '.join(KINDS)}")
    reads = (
        callable(getattr(agent.reader, "read", None))
        if isinstance(agent, _Adopted)
        else type(agent).read is not Agent.read
    )
    if not reads:
        raise TypeError("it has no read(value, session) method")
    return agent


class _Adopted(Agent):
    """A plugin object that is not an Agent (a JSONL reader of the AgentReader protocol only):
    the facts it states, the defaults for the rest."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.name = reader.name  # type: ignore[misc]
        facts = (
            "label", "kind", "has_ids", "remembers_parents", "folder_variables",
            "records_costs", "order", "where", "other_kind_sources", "project_folders",
            "resume", "revision",
        )  # fmt: skip
        for fact in facts:
            if hasattr(reader, fact):
                setattr(self, fact, getattr(reader, fact))
        for method in (
            "read", "recognizes", "history_prompt", "session_roots", "history_files",
            "sources", "records", "records_at", "is_session_name", "kind_of", "session_files",
            "session_members", "records_of_copy", "resume_command",
        ):  # fmt: skip
            if callable(getattr(reader, method, None)):
                setattr(self, method, getattr(reader, method))


def reader_revisions() -> dict[str, int]:
    """The revision of each agent plugin's reader, by name (one that says none, or no whole
    number from 1 up: 1). xcsh's own formats are not revised this way: they are absent."""
    found = {}
    for agent in agents():
        revision = getattr(agent, "revision", 1)
        found[agent.name] = revision if type(revision) is int and revision >= 1 else 1
    return found


def agent_named(name: str | None) -> Agent | None:
    for agent in agents():
        if agent.name == name:
            return agent
    return None


def labels() -> dict[str, str]:
    """Every agent's name -> what people call it (the name when the plugin says nothing)."""
    return {agent.name: agent.label or agent.name for agent in agents()}


def resume_command(agent: str, session_id: str, cwd: str | None, path: str) -> ResumeCommand | None:
    """The command of ``agent`` that continues the session (None: the agent has none, or its
    plugin is not installed)."""
    plugin = agent_named(agent)
    template = XCSH_RESUME.get(agent) or (plugin.resume if plugin is not None else "")
    return ResumeCommand.filled(template, session_id, cwd, path) if template else None
