"""The parts of the package and which parts each may import (tests/test_layering.py holds the
code to it; tests/test_docs.py holds docs/architecture.md to it)."""

from __future__ import annotations

LEAVES = {
    "errors",
    "files",
    "homes",
    "lazy",
    "paths",
    "js",
    "sql_migrations",
    "times",
    "user_cache",
}


# The parts each part may import from, besides itself.
BELOW = {
    "leaves": set(),
    "format": {"leaves"},
    "history": {"leaves", "format"},
    "artifacts": {"leaves", "format"},
    "agents": {"leaves", "format"},
    "session": {"leaves", "format", "history", "artifacts"},
    "glance": {"leaves"},
    "index": {"leaves", "format", "history", "agents", "glance"},
    "watch": {"leaves", "format", "history", "session", "agents", "index"},
    "secrets": {"leaves", "format", "history", "session", "agents", "index"},
    "web": {
        *("leaves", "format", "history", "artifacts", "session", "agents", "index", "watch"),
        "secrets",
        "glance",
    },
    "agent_tools": {
        *("leaves", "format", "history", "artifacts", "session", "agents", "index", "secrets"),
    },
    "team": {"leaves", "format", "history", "session", "agents", "index", "secrets", "glance"},
    "demo": {"leaves", "format", "history", "artifacts", "session", "index"},
    "api": {"leaves", "format", "history", "artifacts", "session", "index"},
    "cli": {
        *("leaves", "format", "history", "artifacts", "session", "index", "api", "agents"),
        *("watch", "web", "agent_tools", "team", "secrets", "demo", "glance"),
    },
    "main": {"cli"},
}


# Rooms of one part that stand side by side on the part's core and never import each other:
# the index's writes and reads both stand on xcsh_store.index.model (its columns, entry facts,
# entry paths), so a change of what a read asks cannot break how a sync writes, nor the reverse.
APART = {"xcsh_store.index.read": "xcsh_store.index.write"}
