"""Files of the user's cache folder (``$XDG_CACHE_HOME/xcsh-store``: homes.get_cache_dir): JSON
objects kept under the key of what they were made from, so that a process reads them (a fraction
of a millisecond) instead of making them again. The price table (agents/prices/price_cache.py)
and the plugins' entry points (agents/registry.py) are kept this way.

A cache file is only ever a copy: unreadable, damaged or of another key, it is made again; where
it cannot be written (a read-only home), every process makes its own, as without it.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import orjson

from xcsh_store.homes import get_cache_dir
from xcsh_store.paths import FILE_MODE, ensure_private_dir


def cache_path(name: str) -> str:
    return os.path.join(get_cache_dir(), name)


def load(name: str, key: str) -> dict[str, Any] | None:
    """The object kept in file ``name`` under ``key``; None when there is none, or of another
    key."""
    try:
        with open(cache_path(name), "rb") as stream:
            data = orjson.loads(stream.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def store(name: str, data: dict[str, Any]) -> None:
    """Write ``data`` (with its ``key``) in place of the file ``name`` kept, whole or not at all
    (a new file renamed over it); nothing when the cache folder cannot be written."""
    import tempfile  # (only a process that writes one needs it)

    folder = get_cache_dir()
    try:
        ensure_private_dir(folder)
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(orjson.dumps(data))
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, cache_path(name))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
