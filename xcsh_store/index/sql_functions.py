"""The SQL functions every connection of the store has, registered without importing the
reading of session files: a connection that only lists sessions never pays for it.

* ``entry_text(pk)``: an entry's search text, read from its session file (entries_fts keeps
  none, migration 0007); NULL when the file no longer holds the entry or cannot be read now.
* ``xcsh_rank(entries_fts, avgdl, group_idf, idf…)``: search's bm25 (index/ranking.py).
"""

from __future__ import annotations

import apsw

from xcsh_store.index.ranking import bm25_score


def register_search_functions(connection: apsw.Connection) -> None:
    def entry_text(pk: object) -> str | None:
        from xcsh_store.index.texts import entry_texts

        if type(pk) is not int:
            return None
        return entry_texts(connection, [pk]).get(pk)

    connection.create_scalar_function("entry_text", entry_text, 1)
    # ranking.py needs nothing heavy, and the rank runs for every row a search ranks.
    connection.register_fts5_function("xcsh_rank", bm25_score)
