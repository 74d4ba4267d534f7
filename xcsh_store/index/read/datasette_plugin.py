"""xcsh-store's Datasette plugin: an index.db browsed in Datasette can be searched, with text.

Datasette finds it through the ``datasette`` entry point of this package (pyproject.toml), so
it is on whenever Datasette runs in the environment xcsh-store is installed in
(``pip install 'xcsh-store[datasette]'``). It runs in Datasette's process, on Datasette's own
connections (the stdlib sqlite3 module, SQLite 3.40 on Debian 12), and opens no database
itself (index.md: one SQLite library per process; the tokenizer's in-memory apsw connection
holds no file).

* Every connection gets ``entry_text(pk)``, ``entry_snippet(pk, query)`` and
  ``search_match(query)`` (sql_functions.py): entries_fts holds the words of each entry, not
  its text, which these read from the session files.
* Every database that is an xcsh-store index gets a canned query, ``search``
  (``/index/search?q=flaky+login``): the hits of ``xcsh-store search``'s query syntax, best
  first (FTS5's bm25 over the newest SEARCH_WINDOW matches, as the store ranks), each with its
  session, time, role and snippet.
* The ``entries`` table and the ``messages`` view get Datasette's own search box (``_search``,
  with facets and filters) through entries_fts, as metadata: the entries, without text.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from datasette import hookimpl

from xcsh_store.index.read.ranking import WINDOW
from xcsh_store.index.sql_functions import SearchFunctions

# The tables an xcsh-store index has (and the search below reads).
INDEX_TABLES = ("entries", "entries_fts", "files", "sessions")
# The newest matches the search ranks, and the hits it shows.
SEARCH_WINDOW = WINDOW
SEARCH_LIMIT = 50

SEARCH_SQL = f"""
SELECT
  coalesce(s.title, s.compaction_title, substr(s.first_message, 1, 80)) AS session,
  s.session_id, e.id AS entry_id, e.timestamp, e.role, s.agent,
  entry_snippet(e.pk, :q) AS snippet, s.path
FROM (
  SELECT f.rowid AS pk, f.rank AS score
  FROM entries_fts AS f JOIN entries AS e ON e.pk = f.rowid
  WHERE entries_fts MATCH search_match(:q)
  ORDER BY f.rowid DESC LIMIT {SEARCH_WINDOW}
) AS hit
JOIN entries AS e ON e.pk = hit.pk
JOIN sessions AS s ON s.file_id = e.session
ORDER BY hit.score, hit.pk DESC
LIMIT {SEARCH_LIMIT}
"""

SEARCH_QUERY = {
    "title": "Search the sessions",
    "description": (
        'Words (all must match; the last one also as a prefix), "phrases" and -excluded'
        " words, as xcsh-store search reads them. Best first, among the newest"
        f" {SEARCH_WINDOW} matches; snippets read from the session files."
    ),
    "sql": SEARCH_SQL.strip(),
}

# Datasette's search box on these, through entries_fts (whose rowid is entries.pk).
SEARCHABLE = {
    "entries": {"fts_table": "entries_fts", "fts_pk": "pk"},
    "messages": {"fts_table": "entries_fts", "fts_pk": "pk"},
}

# The names of the databases of each Datasette that are xcsh-store indexes (found at start-up).
_indexes: WeakKeyDictionary[Any, set[str]] = WeakKeyDictionary()


async def is_index(database: Any) -> bool:
    """Whether a Datasette database is an xcsh-store index."""
    tables = set(await database.table_names())
    return all(name in tables for name in INDEX_TABLES)


@hookimpl
def prepare_connection(conn: Any, database: str, datasette: Any) -> None:
    for name, (arguments, function) in SearchFunctions(conn).scalars().items():
        conn.create_function(name, arguments, function)


@hookimpl
def startup(datasette: Any) -> Any:
    async def find_indexes() -> None:
        _indexes[datasette] = {
            name for name, database in datasette.databases.items() if await is_index(database)
        }

    return find_indexes


@hookimpl
def get_metadata(datasette: Any, key: str, database: str | None, table: str | None) -> Any:
    return {
        "databases": {name: {"tables": SEARCHABLE} for name in sorted(_indexes.get(datasette, ()))}
    }


@hookimpl
def canned_queries(datasette: Any, database: str, actor: Any) -> Any:
    async def queries() -> dict[str, Any]:
        if not await is_index(datasette.get_database(database)):
            return {}
        return {"search": SEARCH_QUERY}

    return queries
