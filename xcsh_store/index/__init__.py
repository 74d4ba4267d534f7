"""The index: a SQLite mirror (``index.db``) of everything under an agent dir, the session files,
the blob store and ``history.db``, that answers listing, search, tree, usage and gc questions
without reading every file. It is derived and disposable: deleting it loses nothing, a sync
rebuilds it. This package front re-exports what the rest of the code and the CLI use; the CLI
imports nothing from the modules below, and no SQL runs outside them.

Modules, from the store object down:

* ``store``: ``SessionIndex``, the one connection to index.db: open (creating, migrating, or
  rebuilding a damaged file), the sync lock, the sync, gc and verify entry points, and every
  question handed to the module below that knows its query.
* ``sessions``: the sessions query (listing, lookup by path or id prefix), a session's message
  text and skipped lines, entry id prefixes.
* ``usage``: token and cost sums by day, week, month, model, provider, project or session.
* ``verify``: the index compared with a fresh parse of every file; ``repair``: re-indexing what
  differs, recounting blob refs, and the one "move aside and start afresh" for a damaged file.
* ``db``: connections, migrations, transactions, damage detection; ``engine``: the SQLite
  library's versions and error class.
* ``scan``, ``sync``, ``indexer``, ``rows``: finding the files and turning their new bytes into
  rows; ``location``: following an agent dir that was copied or moved.
* ``tree``: branches, trees and contexts by recursive CTE, entries read back by byte offset;
  ``outline``: a session laid out for reading; ``search``: full-text search; ``prompts``: the
  prompt history mirrored and recalled; ``gc``: blob garbage collection; ``watch``: the folder
  watch gc relies on.
* ``names``, ``choices``: short id prefixes, shell-completion choices and the check that a
  filter names a model or project the index has; ``query``: the read-only ad-hoc SQL of the
  ``sql`` verb; ``sql_functions``: entry_text() and the other SQL functions of search;
  ``stale_search``: search rows of entries that are gone.
* ``outside_readers``: what Python's sqlite3 and the sqlite3 command can do with index.db;
  ``datasette_plugin``: xcsh-store's Datasette plugin (Datasette loads it, nothing here does).
"""

# What every use of the index needs: the store and its connection.
from xcsh_store.index.db import remove_side_files
from xcsh_store.index.engine import SQLiteError, has_fts5, sqlite_versions
from xcsh_store.index.store import IndexStats, SessionIndex
from xcsh_store.lazy import lazy_exports

# The rest is imported on first use (see xcsh_store/lazy.py).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "xcsh_store.index.choices": (
            "Choice",
            "check_filters",
            "model_choices",
            "project_choices",
            "session_choices",
        ),
        "xcsh_store.index.gc": ("GcReport",),
        "xcsh_store.index.names": ("unique_id_prefixes", "unique_prefixes"),
        "xcsh_store.index.outline": (
            "SessionOutline",
            "entry_summary",
            "entry_text",
            "labels_of",
            "message_summary",
            "session_outline",
        ),
        "xcsh_store.index.outside_readers": (
            "OutsideReader",
            "OutsideReaders",
            "check_outside_readers",
        ),
        "xcsh_store.index.prompts": ("PromptHit",),
        "xcsh_store.index.query": (
            "QueryInterruptedError",
            "QueryStream",
            "QueryTimeoutError",
            "open_query",
        ),
        "xcsh_store.index.scan": (
            "Progress",
            "SkippedLines",
            "SyncReport",
        ),
        "xcsh_store.index.search": (
            "SEARCH_ROLES",
            "SearchHit",
            "parse_search_query",
            "search_role",
        ),
        "xcsh_store.index.prices": ("ModelSeen",),
        "xcsh_store.index.sessions": ("IndexedSession",),
        "xcsh_store.index.tree": (
            "IndexedEntry",
            "SessionTree",
            "read_entries",
        ),
        "xcsh_store.index.usage": (
            "USAGE_GROUPS",
            "DuplicateSession",
            "UsageRow",
            "usage_total",
        ),
        "xcsh_store.index.verify": ("VerifyReport",),
    },
)

__all__ = [
    "SEARCH_ROLES",
    "USAGE_GROUPS",
    "Choice",
    "GcReport",
    "IndexStats",
    "IndexedEntry",
    "IndexedSession",
    "ModelSeen",
    "OutsideReader",
    "OutsideReaders",
    "Progress",
    "PromptHit",
    "QueryInterruptedError",
    "QueryStream",
    "QueryTimeoutError",
    "SQLiteError",
    "SearchHit",
    "SessionIndex",
    "SessionOutline",
    "SessionTree",
    "SkippedLines",
    "SyncReport",
    "UsageRow",
    "VerifyReport",
    "check_filters",
    "check_outside_readers",
    "entry_summary",
    "entry_text",
    "has_fts5",
    "labels_of",
    "message_summary",
    "model_choices",
    "open_query",
    "parse_search_query",
    "project_choices",
    "read_entries",
    "remove_side_files",
    "search_role",
    "session_choices",
    "session_outline",
    "sqlite_versions",
    "unique_id_prefixes",
    "unique_prefixes",
    "usage_total",
]
