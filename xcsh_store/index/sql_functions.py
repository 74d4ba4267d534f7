"""The SQL functions every connection of the store has, registered without importing what
they run: a connection that only lists sessions never pays for search's modules.

* ``entry_text(pk)``: an entry's search text, read from its session file (entries_fts keeps
  none, migration 0007); NULL when the file no longer holds the entry or cannot be read now.
* ``xcsh_rank(entries_fts, avgdl, group_idf, idf…)``: search's bm25 (index/ranking.py).
"""

from __future__ import annotations

from typing import Any

import apsw


def register_search_functions(connection: apsw.Connection) -> None:
    def entry_text(pk: object) -> str | None:
        from xcsh_store.index.texts import entry_texts

        if type(pk) is not int:
            return None
        return entry_texts(connection, [pk]).get(pk)

    def rank(api: apsw.FTS5ExtensionApi, *arguments: Any) -> float:
        from xcsh_store.index.ranking import bm25_score

        return bm25_score(api, *arguments)

    connection.create_scalar_function("entry_text", entry_text, 1)
    connection.register_fts5_function("xcsh_rank", rank)
