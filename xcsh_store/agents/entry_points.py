"""The entry points of the plugin group, kept in the user's cache folder (``plugins.json``:
xcsh_store/user_cache.py). Asking importlib.metadata for them imports it (with the email
package it reads METADATA with) and looks into every installed distribution: 40-50 ms of CPU,
a third of what `ls` took. The copy is used while nothing it was read from has changed: the
folders of ``sys.path`` (installing or removing a distribution changes its folder) and the
``entry_points.txt`` of every distribution in them (rewritten in place by some installs)."""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import stat
import sys
from typing import Any, NamedTuple

from xcsh_store import user_cache

CACHE_NAME = "plugins.json"
# Bumped when the layout of the file changes.
FORMAT = 1
_DISTRIBUTION_FOLDERS = (".dist-info", ".egg-info")
# An entry point's value: ``module``, ``module:attribute.attribute``, extras after it.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(?::\s*(?P<attribute>[\w.]+)\s*)?(?:\[.*\]\s*)?$")


class PluginEntry(NamedTuple):
    """One entry point: its name, its value (``module:attribute``), and the name of the
    distribution that declares it (None: not known)."""

    name: str
    value: str
    distribution: str | None


def plugin_entries(group: str) -> list[PluginEntry]:
    """The entry points of ``group``, as importlib.metadata finds them."""
    key = _key(group)
    kept = user_cache.load(CACHE_NAME, key)
    if kept is not None:
        found = _entries(kept.get("entries"))
        if found is not None:
            return found
    from importlib.metadata import entry_points

    found = [
        PluginEntry(point.name, point.value, point.dist.name if point.dist is not None else None)
        for point in entry_points(group=group)
    ]
    user_cache.store(CACHE_NAME, {"key": key, "entries": [list(entry) for entry in found]})
    return found


def load(value: str) -> Any:
    """The object an entry point's value names (importlib.metadata.EntryPoint.load's rule)."""
    match = _VALUE.match(value)
    if match is None:
        raise ValueError(f"entry point {value!r} is not module:attribute")
    found = importlib.import_module(match["module"])
    for name in (match["attribute"] or "").split(".") if match["attribute"] else ():
        found = getattr(found, name)
    return found


def _entries(kept: Any) -> list[PluginEntry] | None:
    """The entries of a cache file (None: not of their shape)."""
    if not isinstance(kept, list):
        return None
    entries = []
    for entry in kept:
        if not (
            isinstance(entry, list)
            and len(entry) == len(PluginEntry._fields)
            and isinstance(entry[0], str)
            and isinstance(entry[1], str)
            and (entry[2] is None or isinstance(entry[2], str))
        ):
            return None
        entries.append(PluginEntry(*entry))
    return entries


def _key(group: str) -> str:
    """What the entry points of ``group`` were found from: each folder of sys.path with its
    stat, and the stat of each of its distributions' entry_points.txt."""
    parts = [f"format {FORMAT}", group]
    for entry in sys.path:
        folder = entry or os.curdir
        try:
            info = os.stat(folder)
        except OSError:
            parts.append(f"{entry}: -")
            continue
        parts.append(f"{entry}: {info.st_ino}:{info.st_mtime_ns}")
        if not stat.S_ISDIR(info.st_mode):
            continue
        try:
            with os.scandir(folder) as listing:
                names = sorted(
                    item.name for item in listing if item.name.endswith(_DISTRIBUTION_FOLDERS)
                )
        except OSError:
            continue
        for name in names:
            try:
                points = os.stat(os.path.join(folder, name, "entry_points.txt"))
            except OSError:
                continue
            parts.append(f"{name}: {points.st_mtime_ns}:{points.st_size}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
