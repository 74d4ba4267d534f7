"""xcsh-store: coding-agent session storage (xcsh/pi JSONL) with a SQLite index on top."""

from xcsh_store.blobs import (
    BlobPutResult,
    BlobStore,
    externalize_image_data,
    is_blob_ref,
    parse_blob_ref,
    resolve_image_data,
)
from xcsh_store.context import (
    LAST,
    SessionContext,
    build_session_context,
    create_branch_summary_message,
    create_compaction_summary_message,
    create_custom_message,
)
from xcsh_store.errors import (
    EntryNotFoundError,
    HistoryError,
    IndexDatabaseError,
    InternalUrlError,
    PersistenceError,
    SessionNotFoundError,
    XcshStoreError,
)
from xcsh_store.loader import load_entries_from_file, parse_session_entries
from xcsh_store.migrate import CURRENT_SESSION_VERSION, migrate_session_entries
from xcsh_store.paths import (
    encode_cwd,
    get_agent_dir,
    get_blobs_dir,
    get_default_session_dir,
    get_history_db_path,
    get_sessions_dir,
)
from xcsh_store.persist import (
    BLOB_EXTERNALIZE_THRESHOLD,
    MAX_PERSIST_CHARS,
    TRUNCATION_NOTICE,
    prepare_entry_for_persistence,
)
from xcsh_store.storage import (
    FileSessionStorage,
    MemorySessionStorage,
    SessionStorage,
    SessionStorageWriter,
)

__version__ = "0.1.0"

__all__ = [
    "BLOB_EXTERNALIZE_THRESHOLD",
    "CURRENT_SESSION_VERSION",
    "LAST",
    "MAX_PERSIST_CHARS",
    "TRUNCATION_NOTICE",
    "BlobPutResult",
    "BlobStore",
    "EntryNotFoundError",
    "FileSessionStorage",
    "HistoryError",
    "IndexDatabaseError",
    "InternalUrlError",
    "MemorySessionStorage",
    "PersistenceError",
    "SessionContext",
    "SessionNotFoundError",
    "SessionStorage",
    "SessionStorageWriter",
    "XcshStoreError",
    "build_session_context",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
    "encode_cwd",
    "externalize_image_data",
    "get_agent_dir",
    "get_blobs_dir",
    "get_default_session_dir",
    "get_history_db_path",
    "get_sessions_dir",
    "is_blob_ref",
    "load_entries_from_file",
    "migrate_session_entries",
    "parse_blob_ref",
    "parse_session_entries",
    "prepare_entry_for_persistence",
    "resolve_image_data",
]
