"""Search rows of entries that are gone: counted when their entries go, deleted in batches.

entries_fts keeps no text (``content=''``), and on the SQLite 3.40 that every outside reader of
index.db may have (migration 0012), FTS5 deletes a row of such a table only when given the text
it was indexed from. An entry whose file was rewritten, truncated or deleted no longer has that
text anywhere: its search row stays, stale. Nothing shows it (every search joins ``entries``,
and entry keys are never reused: indexer.max_pk counts search rows), and meta
``stale_search_rows`` counts it, in the transaction that removed its entry.

Once the stale rows are STALE_SHARE of the texts indexed, a sync deletes them all
(:func:`delete_stale_rows`) with their terms, read back from the index itself: an
``fts5vocab`` table of kind ``instance`` lists every term of every row, once per occurrence,
which is exactly what the row was indexed from, token for token (the terms are already
tokenized and folded, so the tokenizer reads each as itself). Reading it walks every term of
every row once (13 million for 300 MB of sessions: seconds; benchmarks/README.md), whatever the
number of stale rows, hence the batches.
"""

from __future__ import annotations

import apsw

from xcsh_store.index.db import set_meta, transaction
from xcsh_store.index.model.search_rows import STALE_KEY, index_size, stale_count

# Stale rows are deleted when they are this share of the texts indexed.
STALE_SHARE = 0.1
# The search rows of entries that are gone.
STALE_ROWS = "SELECT id FROM entries_fts_docsize WHERE id NOT IN (SELECT pk FROM entries)"


def leave_behind(connection: apsw.Connection, keys_sql: str, keys: tuple[object, ...]) -> None:
    """Count the search rows of the entries ``keys_sql`` selects as stale (call it in the
    transaction that deletes those entries, before it does)."""
    ((count,),) = connection.execute(
        f"SELECT count(*) FROM entries_fts_docsize WHERE id IN ({keys_sql})", keys
    )
    if count:
        set_meta(connection, STALE_KEY, str(stale_count(connection) + count))


def forget_all(connection: apsw.Connection) -> None:
    """Empty entries_fts (every entry's text is about to be indexed again); nothing is stale
    then. Call it in a transaction."""
    connection.execute("INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')")
    connection.execute("DELETE FROM meta WHERE key = ?", (STALE_KEY,))


def delete_stale_rows_if_many(connection: apsw.Connection) -> int:
    """:func:`delete_stale_rows` once they are STALE_SHARE of the texts indexed; returns how
    many went."""
    stale = stale_count(connection)
    if not stale or stale < index_size(connection)[0] * STALE_SHARE:
        return 0
    return delete_stale_rows(connection)


def delete_stale_rows(connection: apsw.Connection) -> int:
    """Delete every stale search row, found afresh (the count may be off in a damaged index),
    in one transaction; returns how many went."""
    connection.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.entries_instances"
        " USING fts5vocab (main, entries_fts, instance)"
    )
    try:
        with transaction(connection):
            rows = _stale_rows_with_terms(connection)
            connection.executemany(
                "INSERT INTO entries_fts (entries_fts, rowid, text) VALUES ('delete', ?, ?)", rows
            )
            connection.execute("DELETE FROM meta WHERE key = ?", (STALE_KEY,))
    finally:
        connection.execute("DROP TABLE temp.entries_instances")
    return len(rows)


def _stale_rows_with_terms(connection: apsw.Connection) -> list[tuple[int, str]]:
    """(key, its terms joined by spaces) of every stale search row."""
    connection.execute(f"CREATE TEMP TABLE stale_keys AS {STALE_ROWS}")
    try:
        terms = dict(
            connection.execute(
                "SELECT doc, group_concat(term, ' ') FROM temp.entries_instances"
                " WHERE doc IN (SELECT id FROM temp.stale_keys) GROUP BY doc"
            )
        )
        keys = list(connection.execute("SELECT id FROM temp.stale_keys"))
    finally:
        connection.execute("DROP TABLE temp.stale_keys")
    # A text without a single token has no instance: it was indexed from nothing.
    return [(key, terms.get(key, "")) for (key,) in keys]
