"""The names ../shared/spec/api.md promises are importable from the top-level package."""

from __future__ import annotations

import pytest

import xcsh_store

PUBLIC_NAMES = [
    "AgentOutputManager", "ArtifactManager", "BlobStore", "EntryNotFoundError",
    "FileSessionStorage", "HistoryEntry", "HistoryStorage", "InternalUrlError",
    "MemorySessionStorage", "OutputSink", "RecentSessionInfo", "SessionContext", "SessionIndex",
    "SessionInfo", "SessionManager", "SessionStorage", "TailBuffer", "apply_query",
    "build_session_context", "encode_cwd", "externalize_image_data", "find_most_recent_session",
    "format_bytes", "format_head_truncation_notice", "format_tail_truncation_notice",
    "get_agent_dir", "get_recent_sessions", "is_blob_ref", "load_entries_from_file",
    "migrate_session_entries", "parse_blob_ref", "parse_query", "parse_session_entries",
    "path_to_query", "prepare_entry_for_persistence", "read_internal_url", "resolve_image_data",
    "resolve_internal_url", "sanitize_text", "truncate_head", "truncate_head_bytes",
    "truncate_line", "truncate_tail", "truncate_tail_bytes",
]  # fmt: skip


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_the_public_api_is_importable_from_the_package(name):
    assert getattr(xcsh_store, name, None) is not None, f"xcsh_store.{name} is missing"


def test_session_index_is_the_index_class():
    from xcsh_store.index import SessionIndex

    assert xcsh_store.SessionIndex is SessionIndex
