"""The lists of the manual whose source is code, so that no page names fewer agents than the
installation reads: each is a region of a page in ``docs/`` between ``<!-- list:NAME -->`` and
``<!-- /list -->``, its text what :data:`LISTS` gives for NAME now (the agents from the plugin
registry, agents/registry.py). docs/cli.md, the other generated page, is reference.py's.

``python -m xcsh_store.cli.doc_lists docs README.md`` writes every region of the pages in that
folder and of the README; ``tests/test_docs.py`` fails when a region differs from what this
gives now.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from xcsh_store.agents import AGENTS, READERS
from xcsh_store.cli.params import agents_in_words, in_words

# The command that writes the regions, named in the drift test's message.
REGENERATE = "python -m xcsh_store.cli.doc_lists docs README.md"
REGION = re.compile(r"(<!-- list:([a-z-]+) -->)(.*?)(<!-- /list -->)", re.DOTALL)


def agents_table() -> str:
    """The agent plugins, a row each: what people call it and its ``--agent`` name, the kind of
    its session files, where it keeps them and what a file is."""
    rows = [
        f"| {agent.label or agent.name} (`{agent.name}`) | {agent.kind} | {agent.where or '—'} |"
        for agent in READERS
    ]
    return "| agent | kind | where its sessions are |\n| --- | --- | --- |\n" + "\n".join(rows)


def agent_names() -> str:
    """Every ``--agent`` name, the xcsh family's first, as code spans."""
    return in_words([f"`{name}`" for name in AGENTS])


def history_agents() -> str:
    """The agents whose prompt history files join ``history --sessions``, and those files."""
    named = [
        f"{agent.label or agent.name}'s `{Path(files[0]).name}`"
        for agent in READERS
        if (files := agent.history_files())
    ]
    return in_words(named) if named else "none"


LISTS: dict[str, Callable[[], str]] = {
    # Prose: "the sessions of Aider, Amp, …, pi and oh-my-pi"; the plugins alone.
    "agents": lambda: agents_in_words(family=True),
    "plugins": agents_in_words,
    "agents-table": lambda: "\n\n" + agents_table() + "\n\n",
    "agent-names": agent_names,
    "history-agents": history_agents,
}


def filled(text: str) -> str:
    """``text`` with every region's list as the code gives it now (an unknown name: an
    error naming it)."""

    def fill(region: re.Match[str]) -> str:
        name = region.group(2)
        if name not in LISTS:
            raise KeyError(f"no list {name!r} (the lists: {', '.join(LISTS)})")
        return region.group(1) + LISTS[name]() + region.group(4)

    return REGION.sub(fill, text)


def main(arguments: list[str]) -> int:
    """Write the regions of the pages named (a folder: each ``*.md`` in it)."""
    if not arguments:
        sys.stderr.write(f"usage: {REGENERATE}\n")
        return 2
    pages = [
        page
        for argument in map(Path, arguments)
        for page in (sorted(argument.glob("*.md")) if argument.is_dir() else [argument])
    ]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new = filled(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            sys.stdout.write(f"{page}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
