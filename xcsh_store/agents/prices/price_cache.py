"""The price table on disk: ``price-table.json`` in the user's cache folder
(``$XDG_CACHE_HOME/xcsh-store``: homes.get_cache_dir), the prices of the user's prices.toml, of
the shipped corrections and of the genai-prices dataset as plain JSON (flat_table.py), under the
key of what they were built from (pricing.price_sources: the stats of those three files and the
pricing rules; the user's file's path; this format). A process that prices a request (a read
verb's sync that finds a line appended, a first sync) reads it, a few milliseconds, instead of
parsing TOML and reading the dataset; one that finds another key builds the table again and
writes it. It is the user's, not an index's: every store, every fresh index folder and every
``--agent-dir`` of the user reads the same one.

The file is a cache (xcsh_store/user_cache.py): unreadable, damaged or of another key, it is
built again; where it cannot be written (a read-only home), every process builds its own.
"""

from __future__ import annotations

from typing import Any

from xcsh_store import user_cache

CACHE_NAME = "price-table.json"
# Bumped when the layout of the file changes.
FORMAT = 2


def cache_path() -> str:
    return user_cache.cache_path(CACHE_NAME)


def cache_key(sources: str, user_file: str) -> str:
    """The key a cached table must carry to be used: its sources' and this format's."""
    return f"{sources}; user file {user_file}; format {FORMAT}"


def load(key: str) -> dict[str, Any] | None:
    """The table kept under ``key``; None when there is none, or of another key."""
    return user_cache.load(CACHE_NAME, key)


def store(data: dict[str, Any]) -> None:
    """Write the table (``data``, with its ``key``) in place of the one kept."""
    user_cache.store(CACHE_NAME, data)
