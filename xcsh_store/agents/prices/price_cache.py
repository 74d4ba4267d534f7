"""The price table on disk: ``price-table.json`` beside the index.db whose sync priced with it
(the agent dir, or the data dir: a store writes nowhere else), the prices of the user's
prices.toml, of the shipped corrections and of the genai-prices dataset as plain JSON
(flat_table.py), under the key of what they were built from (pricing.price_sources: the stats
of those three files and the pricing rules; the user's file's path; this format). A process
that prices a request (a read verb's sync that finds a line appended) reads it, a few
milliseconds, instead of parsing TOML and importing the dataset (pydantic: a few tenths of a
second); one that finds another key builds the table again and writes it.

The file is a cache: unreadable, damaged or of another key, it is built again; where it cannot
be written (a read-only folder), every process builds its own, as before there was one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any

import orjson

from xcsh_store.paths import FILE_MODE

CACHE_NAME = "price-table.json"
# Bumped when the layout of the file changes.
FORMAT = 1


# The folder of the index this process opened last (SessionIndex): where the table is kept
# outside any pricing.fixed_prices, so that a read that prices a line (a search hit's text, read
# again through its agent's reader) reads it from disk instead of importing genai-prices.
_beside_index: list[str] = []


def keep_beside_index(folder: str) -> None:
    _beside_index[:] = [folder]


def index_folder() -> str | None:
    """The folder :func:`keep_beside_index` last named, if any."""
    return _beside_index[0] if _beside_index else None


def cache_path(folder: str) -> str:
    return os.path.join(folder, CACHE_NAME)


def cache_key(sources: str, user_file: str) -> str:
    """The key a cached table must carry to be used: its sources' and this format's."""
    return f"{sources}; user file {user_file}; format {FORMAT}"


def load(folder: str, key: str) -> dict[str, Any] | None:
    """The table kept in ``folder`` under ``key``; None when there is none, or of another key."""
    try:
        with open(cache_path(folder), "rb") as stream:
            data = orjson.loads(stream.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def store(folder: str, data: dict[str, Any]) -> None:
    """Write the table (``data``, with its ``key``) in place of the one kept in ``folder``, whole
    or not at all (a new file renamed over it); nothing when the folder cannot be written."""
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{CACHE_NAME}.", dir=folder)
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(orjson.dumps(data))
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, cache_path(folder))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
