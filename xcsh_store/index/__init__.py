"""The index: a SQLite mirror (``index.db``) of everything under an agent dir, the session files,
the blob store and ``history.db``, that answers listing, search, tree, usage and gc questions
without reading every file. It is derived and disposable: deleting it loses nothing, a sync
rebuilds it. This package front re-exports what the rest of the code uses: the CLI, watch/,
web/, agent_tools/ and team/ import nothing from the modules below it (tests/test_layering.py),
and no SQL on index.db runs outside them.

At the top, the store and the database core:

* ``store``: ``SessionIndex``, the one connection to index.db: open (creating, migrating, or
  rebuilding a damaged file), the sync lock, the sync, gc and verify entry points, and every
  question handed to the module of a room below that knows its query. The modules it calls
  never import it (no import circle: tests/test_layering.py); see read/'s docstring.
* ``fresh``: the locks that tell a read whether to sync first (a watch keeps the index
  current; another sync is under way) and what ``SessionIndex.refresh`` did.
* ``db``: connections, the migrations (run by xcsh_store/sql_migrations.py), transactions, damage
  detection; ``engine``: the SQLite library's versions and error class; ``location``:
  following an agent dir that was copied or moved; ``sql_functions``: entry_text() and the
  other SQL functions of search, on every connection; ``usage_ranks``: the copy decision of
  ``usage_entries`` ranked again before each commit of a write (migration 0020).

Three rooms over that core, by what their modules do (each room's docstring says where a
borderline module went, and why):

* ``write/``: the files into rows: finding them (scan), deciding per file and reading what
  changed (sync, pipeline, build, indexer, rows), and what a sync derives afterwards (summary
  titles, re-pricing, stale search rows).
* ``read/``: the questions: sessions, search and its ranking, trees and contexts, outlines,
  texts read again from the files, usage, prompts, short names, completion choices, ad-hoc SQL,
  the export to other stores and the Datasette plugin.
* ``upkeep/``: keeping the index and the blob store right: verify, repair, blob gc, the blob
  folder and the folder watch gc relies on, and what other SQLite programs can do with the file.
"""

from typing import TYPE_CHECKING

from xcsh_store.lazy import lazy_exports

# The names offered on first use (lazy.py), each written once, here: type checkers (mypy,
# editors) read them, and lazy_exports reads this block at run time, which never runs it
# (nothing loads sooner). `NAME as NAME`: importable from here, not in __all__.
# Every name, the store's too: `from xcsh_store.index import SQLiteError` loads the SQLite
# binding and nothing of the store, and a process that only prints its version imports none.
if TYPE_CHECKING:
    from xcsh_store.glance.settings import (
        Budget,
        Limits,
        LimitsConfigError,
        read_limits,
        set_budget,
    )
    from xcsh_store.glance.spend import BudgetStatus
    from xcsh_store.index.archive.folder import ArchiveStats
    from xcsh_store.index.archive.forget import Forgotten
    from xcsh_store.index.archive.restore import Restored, RestoreError
    from xcsh_store.index.archive.sources import ArchivedSources
    from xcsh_store.index.db import errors_explained, remove_side_files
    from xcsh_store.index.engine import SQLiteError, has_fts5, sqlite_versions
    from xcsh_store.index.fresh import BUSY, SYNCED, WATCHED, Freshness, holding_watch, is_watched
    from xcsh_store.index.limits.quota import QuotaWindow, reading_window
    from xcsh_store.index.model.columns import (
        ENTRY_ROW,
        SESSION_ROW,
        USAGE_ROW,
        Column,
        named,
    )
    from xcsh_store.index.model.facts import SkippedLines
    from xcsh_store.index.model.paths import IndexedEntry, read_entries
    from xcsh_store.index.read.choices import (
        Choice,
        check_filters,
        model_choices,
        project_choices,
        session_choices,
    )
    from xcsh_store.index.read.export import (
        ENTRY_COLUMNS,
        HISTORY_COLUMNS,
        QUOTA_COLUMNS,
        SESSION_COLUMNS,
        USAGE_COLUMNS,
        EntryRow,
        FileState,
        entry_marks,
        entry_rows,
        history_rows,
        history_state,
        one_state,
        quota_rows,
        session_files,
        session_row,
        usage_rows,
    )
    from xcsh_store.index.read.names import (
        MIN_PREFIX,
        prefix_apart,
        unique_id_prefixes,
        unique_prefixes,
    )
    from xcsh_store.index.read.outline import (
        SessionOutline,
        entry_summary,
        entry_text,
        labels_of,
        message_summary,
        session_outline,
    )
    from xcsh_store.index.read.prompts import PromptHit, prompt_json
    from xcsh_store.index.read.query import (
        QueryInterruptedError,
        QueryStream,
        QueryTimeoutError,
        open_query,
    )
    from xcsh_store.index.read.questions import (
        SEARCH_ROLES,
        SESSION_ORDERS,
        TEAM_USAGE_GROUPINGS,
        USAGE_GROUPINGS,
        PromptQuery,
        SearchQuery,
        SessionFilter,
        SessionQuery,
        UsageQuery,
        known_agents,
        model_match,
        project_folder,
        refuse_unasked,
        search_role,
        time_bound,
    )
    from xcsh_store.index.read.ranking import WINDOW
    from xcsh_store.index.read.search import SearchHit, parse_search_query
    from xcsh_store.index.read.sessions import (
        IndexedSession,
        ReadSession,
        SessionRecord,
        reads_columns,
    )
    from xcsh_store.index.read.tree import SessionTree, build_tree
    from xcsh_store.index.read.usage import (
        USAGE_GROUPS,
        BillingBlock,
        EntryUsage,
        UsageBar,
        UsageRow,
        joined_key,
        next_period_key,
        usage_bars,
        usage_by_response,
        usage_groups,
        usage_row,
        usage_total,
    )
    from xcsh_store.index.read.usage import DuplicateSession as DuplicateSession
    from xcsh_store.index.store import (
        REFRESH_SECONDS,
        IndexReader,
        IndexStats,
        Refresher,
        SessionIndex,
    )
    from xcsh_store.index.upkeep.gc import GcReport
    from xcsh_store.index.upkeep.outside_readers import (
        OutsideReader,
        OutsideReaders,
        check_outside_readers,
    )
    from xcsh_store.index.upkeep.verify import VerifyReport
    from xcsh_store.index.write.prices import ModelSeen
    from xcsh_store.index.write.scan import Progress, SyncReport, is_under_any

__getattr__, __dir__ = lazy_exports(__name__)
