"""Damage done to a SQLite file on purpose: pages of named tables and indexes overwritten."""

from __future__ import annotations

from pathlib import Path

import apsw


def page_size(database: Path) -> int:
    """The page size SQLite wrote in the file's header."""
    return int.from_bytes(database.read_bytes()[16:18], "big")


def damage_objects(database: Path, *names: str) -> int:
    """Overwrite every page of the named tables and indexes with garbage; how many pages."""
    connection = apsw.Connection(str(database))
    try:
        marks = ",".join("?" * len(names))
        pages = [
            row[0]
            for row in connection.execute(
                f"SELECT pageno FROM dbstat WHERE name IN ({marks})", names
            )
        ]
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    size = page_size(database)
    with open(database, "r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * size)
            handle.write(b"\xa5" * size)
    return len(pages)
