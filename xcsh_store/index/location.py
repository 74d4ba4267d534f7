"""Where an index's paths point: a copied or moved agent dir is detected and followed.

The index stores absolute paths, and the agent dir they were written under (meta
``agent_dir``). Opened from elsewhere (``cp -a agent agent2``, ``mv``), the paths below the old
place are read as the same paths below the new one, and the next sync rewrites them; so an
index never reads the files of the agent dir it was copied from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import apsw

from xcsh_store.index.db import get_meta, set_meta, transaction

AGENT_DIR_KEY = "agent_dir"

# Every column that holds a path below the agent dir (extra roots outside it never move).
_PATH_COLUMNS = (("files", "path"), ("files", "root"), ("sessions", "path"), ("roots", "path"))


@dataclass(frozen=True, slots=True)
class Relocation:
    """The agent dir the stored paths name (``stored``) and the one opened (``local``)."""

    stored: str
    local: str

    def to_local(self, path: str) -> str:
        return _moved(path, self.stored, self.local)

    def to_stored(self, path: str) -> str:
        return _moved(path, self.local, self.stored)


def _moved(path: str, old: str, new: str) -> str:
    if path == old or path.startswith(old + os.sep):
        return new + path[len(old) :]
    return path


def find_relocation(connection: apsw.Connection, agent_dir: str) -> Relocation | None:
    """How stored paths map to ``agent_dir``; None when they already name it."""
    stored = get_meta(connection, AGENT_DIR_KEY)
    if stored is None or stored == agent_dir:
        return None
    return Relocation(stored, agent_dir)


def settle_location(connection: apsw.Connection, agent_dir: str) -> None:
    """Rewrite the paths stored below another agent dir as paths below ``agent_dir``, and
    record it: one transaction, so a concurrent reader sees the old paths or the new."""
    if get_meta(connection, AGENT_DIR_KEY) == agent_dir:
        return  # the usual case, and no write lock taken for it
    with transaction(connection):
        relocation = find_relocation(connection, agent_dir)
        if relocation is not None:
            old, new = relocation.stored, relocation.local
            for table, column in _PATH_COLUMNS:
                connection.execute(
                    f"UPDATE {table} SET {column} = ?2 || substr({column}, length(?1) + 1)"
                    f" WHERE {column} = ?1 OR substr({column}, 1, length(?1) + 1) = ?1 || ?3",
                    (old, new, os.sep),
                )
        if relocation is not None or get_meta(connection, AGENT_DIR_KEY) is None:
            set_meta(connection, AGENT_DIR_KEY, agent_dir)
