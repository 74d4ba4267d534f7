"""xcsh-store: coding-agent session storage (xcsh/pi JSONL) with a SQLite index on top.

``__all__`` is the public API of ``docs/api.md``, every name of it importable from here, each
imported on first use (see ``lazy.py``).
"""

from typing import TYPE_CHECKING

from xcsh_store.lazy import lazy_exports

# The same names for type checkers (mypy, editors), which cannot follow lazy_exports; imported
# only while checking, so nothing loads sooner (tests/test_types.py holds the two lists equal).
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
    from xcsh_store.errors import (
        AmbiguousEntryError,
        AmbiguousLookupError,
        AmbiguousSessionError,
        EntryNotFoundError,
        HistoryError,
        IndexDatabaseError,
        InternalUrlError,
        PersistenceError,
        SearchQueryError,
        SessionNotFoundError,
        UnknownFilterError,
        XcshStoreError,
    )
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
        ResolvedSession,
        SessionInfo,
        find_most_recent_session,
        get_recent_sessions,
        resolve_resumable_session,
    )
    from xcsh_store.session.manager import SessionManager, SessionTreeNode

__version__ = "0.1.0"

# The public API (docs/api.md): each name, and the module it lives in.
_PUBLIC = {
    "xcsh_store.artifacts.output": (
        "DEFAULT_MAX_BYTES",
        "DEFAULT_MAX_COLUMN",
        "DEFAULT_MAX_LINES",
        "OutputSink",
        "OutputSummary",
        "TailBuffer",
        "format_bytes",
        "format_head_truncation_notice",
        "format_tail_truncation_notice",
        "sanitize_text",
        "truncate_head",
        "truncate_head_bytes",
        "truncate_line",
        "truncate_tail",
        "truncate_tail_bytes",
    ),
    "xcsh_store.artifacts.query": (
        "apply_query",
        "parse_query",
        "path_to_query",
    ),
    "xcsh_store.artifacts.store": (
        "AgentOutputManager",
        "ArtifactManager",
    ),
    "xcsh_store.artifacts.urls": (
        "InternalResource",
        "read_internal_url",
        "resolve_internal_url",
    ),
    "xcsh_store.errors": (
        "EntryNotFoundError",
        "InternalUrlError",
    ),
    "xcsh_store.format.blobs": (
        "BlobPutResult",
        "BlobStore",
        "externalize_image_data",
        "is_blob_ref",
        "parse_blob_ref",
        "resolve_image_data",
    ),
    "xcsh_store.format.loader": (
        "load_entries_from_file",
        "parse_session_entries",
    ),
    "xcsh_store.format.persist": (
        "BLOB_EXTERNALIZE_THRESHOLD",
        "MAX_PERSIST_CHARS",
        "TRUNCATION_NOTICE",
        "prepare_entry_for_persistence",
    ),
    "xcsh_store.format.storage": (
        "FileSessionStorage",
        "MemorySessionStorage",
        "SessionStorage",
        "SessionStorageWriter",
    ),
    "xcsh_store.format.versions": (
        "CURRENT_SESSION_VERSION",
        "migrate_session_entries",
    ),
    "xcsh_store.history.store": (
        "HistoryEntry",
        "HistoryStorage",
    ),
    "xcsh_store.index": ("SessionIndex",),
    "xcsh_store.paths": (
        "encode_cwd",
        "get_agent_dir",
        "get_blobs_dir",
        "get_default_session_dir",
        "get_history_db_path",
        "get_sessions_dir",
    ),
    "xcsh_store.format.context": (
        "LAST",
        "SessionContext",
        "build_session_context",
        "create_branch_summary_message",
        "create_compaction_summary_message",
        "create_custom_message",
    ),
    "xcsh_store.session.discovery": (
        "RecentSessionInfo",
        "SessionInfo",
        "find_most_recent_session",
        "get_recent_sessions",
    ),
    "xcsh_store.session.manager": (
        "SessionManager",
        "SessionTreeNode",
    ),
}
# Importable from here too, but not part of the API.
_ALSO = {
    "xcsh_store.errors": (
        "AmbiguousEntryError",
        "AmbiguousLookupError",
        "AmbiguousSessionError",
        "HistoryError",
        "IndexDatabaseError",
        "PersistenceError",
        "SearchQueryError",
        "SessionNotFoundError",
        "UnknownFilterError",
        "XcshStoreError",
    ),
    "xcsh_store.session.discovery": (
        "ResolvedSession",
        "resolve_resumable_session",
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, _ALSO)
__all__ = sorted(name for names in _PUBLIC.values() for name in names)
