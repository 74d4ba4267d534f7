"""xcsh-store: coding-agent session storage (xcsh/pi JSONL) with a SQLite index on top.

``__all__`` is the public API of ``docs/api.md``, every name of it importable from here, each
imported on first use (see ``lazy.py``).
"""

from typing import TYPE_CHECKING

from xcsh_store.lazy import lazy_exports

# The names offered on first use (lazy.py), each written once, here: type checkers (mypy,
# editors) read them, and lazy_exports reads this block at run time, which never runs it
# (nothing loads sooner). `NAME as NAME`: importable from here, not in __all__.
if TYPE_CHECKING:
    from xcsh_store.artifacts.output import (
        DEFAULT_MAX_BYTES,
        DEFAULT_MAX_COLUMN,
        DEFAULT_MAX_LINES,
        OutputSink,
        OutputSummary,
        TailBuffer,
        format_bytes,
        format_head_truncation_notice,
        format_tail_truncation_notice,
        sanitize_text,
        truncate_head,
        truncate_head_bytes,
        truncate_line,
        truncate_tail,
        truncate_tail_bytes,
    )
    from xcsh_store.artifacts.query import apply_query, parse_query, path_to_query
    from xcsh_store.artifacts.store import AgentOutputManager, ArtifactManager
    from xcsh_store.artifacts.urls import InternalResource, read_internal_url, resolve_internal_url
    from xcsh_store.errors import AmbiguousEntryError as AmbiguousEntryError
    from xcsh_store.errors import AmbiguousLookupError as AmbiguousLookupError
    from xcsh_store.errors import AmbiguousSessionError as AmbiguousSessionError
    from xcsh_store.errors import EntryNotFoundError, InternalUrlError
    from xcsh_store.errors import HistoryError as HistoryError
    from xcsh_store.errors import IndexDatabaseError as IndexDatabaseError
    from xcsh_store.errors import PersistenceError as PersistenceError
    from xcsh_store.errors import SearchQueryError as SearchQueryError
    from xcsh_store.errors import SessionNotFoundError as SessionNotFoundError
    from xcsh_store.errors import UnknownFilterError as UnknownFilterError
    from xcsh_store.errors import XcshStoreError as XcshStoreError
    from xcsh_store.format.blobs import (
        BlobPutResult,
        BlobStore,
        externalize_image_data,
        is_blob_ref,
        parse_blob_ref,
        resolve_image_data,
    )
    from xcsh_store.format.context import (
        LAST,
        SessionContext,
        build_session_context,
        create_branch_summary_message,
        create_compaction_summary_message,
        create_custom_message,
    )
    from xcsh_store.format.loader import load_entries_from_file, parse_session_entries
    from xcsh_store.format.persist import (
        BLOB_EXTERNALIZE_THRESHOLD,
        MAX_PERSIST_CHARS,
        TRUNCATION_NOTICE,
        prepare_entry_for_persistence,
    )
    from xcsh_store.format.storage import (
        FileSessionStorage,
        MemorySessionStorage,
        SessionStorage,
        SessionStorageWriter,
    )
    from xcsh_store.format.versions import CURRENT_SESSION_VERSION, migrate_session_entries
    from xcsh_store.history.store import HistoryEntry, HistoryStorage
    from xcsh_store.index import SessionIndex
    from xcsh_store.paths import (
        encode_cwd,
        get_agent_dir,
        get_blobs_dir,
        get_default_session_dir,
        get_history_db_path,
        get_sessions_dir,
    )
    from xcsh_store.session.discovery import (
        RecentSessionInfo,
        SessionInfo,
        find_most_recent_session,
        get_recent_sessions,
    )
    from xcsh_store.session.discovery import ResolvedSession as ResolvedSession
    from xcsh_store.session.discovery import resolve_resumable_session as resolve_resumable_session
    from xcsh_store.session.manager import SessionManager, SessionTreeNode

__version__ = "0.1.0"

__getattr__, __dir__ = lazy_exports(__name__)
