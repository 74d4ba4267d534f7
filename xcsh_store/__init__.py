"""xcsh-store: coding-agent session storage (xcsh/pi JSONL) with a SQLite index on top.

``__all__`` is the public API of ``docs/api.md``, every name of it importable from here.
"""

__version__ = "0.1.0"

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
from xcsh_store.artifacts.store import AgentOutputManager, ArtifactManager
from xcsh_store.artifacts.urls import (
    InternalResource,
    apply_query,
    parse_query,
    path_to_query,
    read_internal_url,
    resolve_internal_url,
)
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
from xcsh_store.session.context import (
    LAST,
    SessionContext,
    build_session_context,
    create_branch_summary_message,
    create_compaction_summary_message,
    create_custom_message,
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

__all__ = [
    "BLOB_EXTERNALIZE_THRESHOLD",
    "CURRENT_SESSION_VERSION",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_COLUMN",
    "DEFAULT_MAX_LINES",
    "LAST",
    "MAX_PERSIST_CHARS",
    "TRUNCATION_NOTICE",
    "AgentOutputManager",
    "ArtifactManager",
    "BlobPutResult",
    "BlobStore",
    "EntryNotFoundError",
    "FileSessionStorage",
    "HistoryEntry",
    "HistoryStorage",
    "InternalResource",
    "InternalUrlError",
    "MemorySessionStorage",
    "OutputSink",
    "OutputSummary",
    "RecentSessionInfo",
    "SessionContext",
    "SessionIndex",
    "SessionInfo",
    "SessionManager",
    "SessionStorage",
    "SessionStorageWriter",
    "SessionTreeNode",
    "TailBuffer",
    "apply_query",
    "build_session_context",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
    "encode_cwd",
    "externalize_image_data",
    "find_most_recent_session",
    "format_bytes",
    "format_head_truncation_notice",
    "format_tail_truncation_notice",
    "get_agent_dir",
    "get_blobs_dir",
    "get_default_session_dir",
    "get_history_db_path",
    "get_recent_sessions",
    "get_sessions_dir",
    "is_blob_ref",
    "load_entries_from_file",
    "migrate_session_entries",
    "parse_blob_ref",
    "parse_query",
    "parse_session_entries",
    "path_to_query",
    "prepare_entry_for_persistence",
    "read_internal_url",
    "resolve_image_data",
    "resolve_internal_url",
    "sanitize_text",
    "truncate_head",
    "truncate_head_bytes",
    "truncate_line",
    "truncate_tail",
    "truncate_tail_bytes",
]
