"""A first load of many files into an empty index: the secondary indexes of ``entries`` built
once at the end instead of row by row, and FTS5 flushing its terms in bigger pieces meanwhile.

Why: keeping eight b-trees of ``entries`` in order while millions of rows arrive in key order
cost the writer more than sorting each once at the end (``CREATE INDEX``), and FTS5's default
``hashsize`` (1 MiB) wrote a small segment every MiB of text, which its automerge then merged
again and again. Neither is needed while the index is being filled: a first sync looks
nothing up in the rows it writes (every file is read from its start).

Crash-consistent (index.md guarantee 3): the indexes are dropped in one transaction that also
records their SQL in ``meta`` (so they come back exactly as the schema had them, whatever
migration made them), and created again in one transaction that clears the note. A sync killed
in between leaves the note: the next sync carries on without them when it too has a bulk load
to do, else builds them before anything else. Queries stay correct without them, only slower.
The FTS5 ``hashsize`` set for the load goes back to the default in the same transaction; a
stored ``hashsize`` is an option SQLite 3.40 reads (guarantee 5), so even a killed load leaves
a file Debian 12 searches.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import apsw
import orjson

from xcsh_store.agents.prices.pricing import fixed_prices
from xcsh_store.index.db import get_meta, set_meta, temporary_on_disk, transaction
from xcsh_store.index.usage_ranks import rank_everything
from xcsh_store.index.write import pipeline

# The meta key holding the SQL of the entries' indexes a bulk load dropped.
DEFERRED_KEY = "entry_indexes_deferred"
# A load with fewer bytes to read whole than this keeps the indexes: the time saved would not
# pay for building them again over every row.
BULK_MIN_BYTES = 32 << 20
# FTS5's pending-terms hash during a bulk load (bytes; SQLite's default is 1 MiB). 16 MiB took
# a third less CPU writing the search rows of a 72 MB corpus than 1 MiB; 64 MiB no less again.
BULK_HASHSIZE = 16 << 20
DEFAULT_HASHSIZE = 1 << 20
# SQLite copies the write-ahead log into index.db every 1000 pages (4 MB) by default, syncing
# both files each time. While a sync writes, every 64 MB instead: a full sync of 200 MB of
# sessions then wrote 15% fewer bytes (pages that FTS merges rewrite again and again are copied
# once per checkpoint) and synced files 11 times instead of 41. The log grows to about 64 MB
# meanwhile; the next commit after the sync checkpoints it at the usual size again.
SYNC_CHECKPOINT_PAGES = 16_384


def _set_hashsize(connection: apsw.Connection, size: int) -> None:
    connection.execute(
        "INSERT INTO entries_fts (entries_fts, rank) VALUES ('hashsize', ?)", (size,)
    )


def _is_empty(connection: apsw.Connection) -> bool:
    return not connection.execute("SELECT 1 FROM entries LIMIT 1").fetchall()


def deferred(connection: apsw.Connection) -> bool:
    """Whether a bulk load dropped the entries' secondary indexes and has not built them yet."""
    return get_meta(connection, DEFERRED_KEY) is not None


def defer_indexes(connection: apsw.Connection) -> None:
    """Drop the secondary indexes of ``entries`` (the UNIQUE ones stay), noting their SQL."""
    with transaction(connection):
        found = list(
            connection.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index'"
                " AND tbl_name = 'entries' AND sql IS NOT NULL ORDER BY name"
            )
        )
        set_meta(connection, DEFERRED_KEY, orjson.dumps([sql for _name, sql in found]).decode())
        for name, _sql in found:
            connection.execute(f'DROP INDEX "{name}"')
        _set_hashsize(connection, BULK_HASHSIZE)


def build_indexes(connection: apsw.Connection) -> None:
    """Create the indexes a bulk load dropped (if any), and clear the note."""
    note = get_meta(connection, DEFERRED_KEY)
    if note is None:
        return
    # Each index is sorted at once over every row: on disk, so the writer's memory stays flat.
    with temporary_on_disk(connection), transaction(connection):
        for sql in orjson.loads(note):
            connection.execute(sql.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))
        _set_hashsize(connection, DEFAULT_HASHSIZE)
        connection.execute("DELETE FROM meta WHERE key = ?", (DEFERRED_KEY,))
        rank_everything(connection)


@contextlib.contextmanager
def bulk_load(connection: apsw.Connection, whole_bytes: int) -> Iterator[None]:
    """Around the writing of a sync's files (``whole_bytes``: how much of them is read whole):
    without the entries' secondary indexes when that is a first load (or the rest of one a
    killed sync left), with them again once the writing is done. A writing that fails leaves
    them to the next sync, as a killed one does."""
    bulk = whole_bytes >= BULK_MIN_BYTES
    if deferred(connection):
        if not bulk:
            build_indexes(connection)
    elif bulk and _is_empty(connection):
        defer_indexes(connection)
    yield
    build_indexes(connection)


@contextlib.contextmanager
def bulk_writing(connection: apsw.Connection) -> Iterator[None]:
    """How the writer of a sync runs while it writes rows: fewer checkpoints of the
    write-ahead log, fewer cycle collections, one price table for every line it reads."""
    with (
        _checkpoints_every(connection, SYNC_CHECKPOINT_PAGES),
        _few_collections(),
        fixed_prices(),
    ):
        yield


@contextlib.contextmanager
def _few_collections() -> Iterator[None]:
    """The cycle collector run rarely, for a while (see pipeline.FEW_COLLECTIONS: reading
    files here makes the same garbage-free containers a worker makes)."""
    previous = gc.get_threshold()
    gc.set_threshold(*pipeline.FEW_COLLECTIONS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


@contextlib.contextmanager
def _checkpoints_every(connection: apsw.Connection, pages: int) -> Iterator[None]:
    """SQLite's automatic checkpoints every ``pages`` pages of write-ahead log, for a while."""
    ((previous,),) = connection.execute("PRAGMA wal_autocheckpoint")
    connection.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")
    try:
        yield
    finally:
        connection.execute(f"PRAGMA wal_autocheckpoint = {int(previous)}")
