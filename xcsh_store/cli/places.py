"""Where the sessions of this machine are, as the CLI tells a user: the folders a sync indexes,
and what to do where there is no index yet."""

from __future__ import annotations

import os

from xcsh_store.agents import agent_session_roots
from xcsh_store.cli.output.render import home_relative
from xcsh_store.homes import get_data_store_dir
from xcsh_store.paths import get_agent_dir, get_index_db_path, get_sessions_dir


def session_folders(store_dir: str) -> dict[str, str]:
    """Every folder where an agent keeps sessions on this machine -> the agent: xcsh's (that
    of the agent dir ``store_dir``, or the default one for an index in the data dir), then the
    other agents' (homes.py); the folders need not exist."""
    agent_dir = get_agent_dir() if store_dir == get_data_store_dir() else store_dir
    return {get_sessions_dir(agent_dir): "xcsh", **agent_session_roots()}


def found_session_folders(store_dir: str) -> list[str]:
    """The folders of :func:`session_folders` that exist, as ``~/.claude/projects (claude)``."""
    return [
        f"{home_relative(folder)} ({agent})"
        for folder, agent in session_folders(store_dir).items()
        if os.path.isdir(folder)
    ]


def nothing_to_index(store_dir: str) -> str:
    """Why a sync has nothing to do here: the places it looked in."""
    looked = ", ".join(home_relative(folder) for folder in session_folders(store_dir))
    return f"no sessions found in {looked} yet"


def no_index_yet(store_dir: str) -> str:
    """What a verb that reads the index says where there is none: run sync, which indexes the
    folders found (or will, once an agent has written sessions)."""
    path = home_relative(get_index_db_path(store_dir))
    found = found_session_folders(store_dir)
    if not found:
        return (
            f"No index at {path}: {nothing_to_index(store_dir)}; run `xcsh-store sync` once an"
            " agent has written some"
        )
    return f"No index at {path} yet: run `xcsh-store sync` to index {', '.join(found)}"
