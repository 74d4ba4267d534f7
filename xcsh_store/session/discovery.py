"""Finding sessions by scanning files: recent sessions, full listings, lookup by id prefix."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from xcsh_store.format.context import path_to_root
from xcsh_store.format.entries import (
    TITLE_CHANGE_TYPE,
    branch_name,
    content_text,
    effective_title,
    named_title,
)
from xcsh_store.format.loader import parse_session_entries, read_session_file
from xcsh_store.format.storage import FileSessionStorage, MemorySessionStorage, SessionStorage
from xcsh_store.format.versions import HEADER_TYPE, TITLE_TYPE
from xcsh_store.js import trim
from xcsh_store.paths import get_default_session_dir, get_sessions_dir
from xcsh_store.times import parse_iso

log = logging.getLogger("xcsh_store")
_Info = TypeVar("_Info")

PREFIX_BYTES = 4096
SESSION_PATTERN = "*.jsonl"
NAME_MAX_CHARS = 40
NO_MESSAGES = "(no messages)"

_NAME_CONTROL = dict.fromkeys([*range(0x20), 0x7F])


# --------------------------------------------------------------------------------------------
# Header helpers shared with the manager


def split_header(
    entries: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[dict[str, Any]]]:
    """``(leading title records, header, the rest)``; header None when the first other record
    is not a ``session`` record (compatibility: Title records before the header)."""
    for index, entry in enumerate(entries):
        if entry.get("type") == TITLE_TYPE:
            continue
        if entry.get("type") == HEADER_TYPE:
            return entries[:index], entry, entries[index + 1 :]
        break
    return [], None, []


# --------------------------------------------------------------------------------------------
# Prefix scans (compatibility: Finding sessions as in the reference)


@dataclass(frozen=True, slots=True)
class RecentSessionInfo:
    """Light metadata for a session picker, from the first 4096 bytes of a file."""

    path: str
    mtime: float
    header: dict[str, Any]
    first_prompt: str | None
    full_name: str
    name: str


def _sanitize_name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    first_line = value.replace("\r\n", "\n").split("\n", 1)[0]
    cleaned = trim(first_line.translate(_NAME_CONTROL))
    return cleaned or None


def _first_user_text(entries: list[dict[str, Any]]) -> str | None:
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "message" or type(message) is not dict:
            continue
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if type(content) is list:
            for block in content:
                if type(block) is dict and isinstance(block.get("text"), str):
                    return block["text"]
    return None


def _recent_session_info(path: str, storage: SessionStorage) -> RecentSessionInfo | None:
    entries = parse_session_entries(storage.read_text_prefix(path, PREFIX_BYTES))
    leading, header, rest = split_header(entries)
    if header is None or not isinstance(header.get("id"), str):
        return None
    mtime = storage.stat(path).mtime
    # Only the prefix is read: a session_info or title_change entry beyond it is not seen here.
    title = renamed(rest) or named_title(rest) or effective_title(header, leading)[0]
    first_prompt = None if title else _first_user_text(rest)
    full_name = (
        _sanitize_name(title)
        or _sanitize_name(first_prompt)
        or _sanitize_name(header.get("id"))
        or os.path.basename(path).replace(".jsonl", "", 1)
        or "Unknown"
    )
    name = full_name if len(full_name) <= NAME_MAX_CHARS else full_name[: NAME_MAX_CHARS - 1] + "…"
    return RecentSessionInfo(path, mtime, header, first_prompt, full_name, name)


def _sorted_recent_sessions(
    session_dir: str, storage: SessionStorage | None
) -> list[RecentSessionInfo]:
    storage = storage or FileSessionStorage()
    try:
        files = storage.list_files(session_dir, SESSION_PATTERN)
    except OSError:
        return []
    found = _read_each(files, storage, _recent_session_info)
    found.sort(key=lambda info: info.mtime, reverse=True)
    return found


def _read_each(
    files: list[str],
    storage: SessionStorage,
    read: Callable[[str, SessionStorage], _Info | None],
) -> list[_Info]:
    """``read`` every file, skipping files that are not sessions or cannot be read at all:
    one bad file must never hide the others."""
    found = []
    for path in files:
        try:
            info = read(path, storage)
        except Exception as error:
            log.debug("skipping unreadable session %s: %s", path, error)
            continue
        if info is not None:
            found.append(info)
    return found


def get_recent_sessions(
    session_dir: str, limit: int = 3, storage: SessionStorage | None = None
) -> list[RecentSessionInfo]:
    """The ``limit`` most recently modified valid sessions in ``session_dir``, newest first."""
    return _sorted_recent_sessions(session_dir, storage)[: max(limit, 0)]


def find_most_recent_session(session_dir: str, storage: SessionStorage | None = None) -> str | None:
    """The newest (by mtime) valid session file in ``session_dir``, or None."""
    sessions = _sorted_recent_sessions(session_dir, storage)
    return sessions[0].path if sessions else None


# --------------------------------------------------------------------------------------------
# Full reads (compatibility: Finding sessions as in the reference)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session of a listing, from a full read of its file."""

    path: str
    id: Any
    cwd: str
    title: str | None
    parent_session_path: str | None
    created: datetime
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str


def _parse_created(timestamp: Any, fallback: datetime) -> datetime:
    moment = parse_iso(timestamp.strip()) if isinstance(timestamp, str) else None
    return fallback if moment is None else moment.astimezone(UTC)


def renamed(rest: list[dict[str, Any]]) -> str | None:
    """The name the newest oh-my-pi ``title_change`` on the branch of the leaf as loaded (the
    last entry) gives the session, of the records after the header (D28)."""
    if not any(entry.get("type") == TITLE_CHANGE_TYPE for entry in rest):
        return None
    entries = [
        entry
        for entry in rest
        if isinstance(entry.get("id"), str) and entry.get("type") != HEADER_TYPE
    ]
    by_id = {entry["id"]: entry for entry in entries}
    found = branch_name(path_to_root(by_id[entries[-1]["id"]], by_id))
    return None if found is None else found[0]


def session_info_from_file(path: str, storage: SessionStorage) -> SessionInfo | None:
    """The listing row of one file; None when it is not a session (no header or falsy id)."""
    leading, header, rest = split_header(read_session_file(path, storage).entries)
    if header is None or not header.get("id"):
        return None
    message_count = 0
    first_message = ""
    texts: list[str] = []
    short_summary = None
    for entry in rest:
        kind = entry.get("type")
        if kind == "compaction" and isinstance(entry.get("shortSummary"), str):
            short_summary = entry["shortSummary"]
        elif kind == "message" and entry.get("message"):
            message_count += 1
            message = entry["message"]
            role = message.get("role") if type(message) is dict else None
            if role not in ("user", "assistant"):
                continue
            text = content_text(message.get("content"))
            if text:
                texts.append(text)
                if role == "user" and not first_message:
                    first_message = text
    modified = datetime.fromtimestamp(storage.stat(path).mtime, UTC)
    title = renamed(rest) or named_title(rest) or header.get("title")
    if title is None:
        title = effective_title(header, leading)[0] or short_summary
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    return SessionInfo(
        path=path,
        id=header["id"],
        cwd=cwd if isinstance(cwd, str) else "",
        title=title,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=_parse_created(header.get("timestamp"), modified),
        modified=modified,
        message_count=message_count,
        first_message=first_message or NO_MESSAGES,
        all_messages_text=" ".join(texts),
    )


def collect_sessions(files: list[str], storage: SessionStorage | None = None) -> list[SessionInfo]:
    """Listing rows of every readable session among ``files``, newest modification first."""
    sessions = _read_each(files, storage or FileSessionStorage(), session_info_from_file)
    sessions.sort(key=lambda info: info.modified, reverse=True)
    return sessions


def list_sessions(
    cwd: str,
    session_dir: str | None = None,
    storage: SessionStorage | None = None,
    agent_dir: str | None = None,
) -> list[SessionInfo]:
    """Every session of one project folder (the default folder of ``cwd`` in ``agent_dir``
    unless given)."""
    storage = storage or FileSessionStorage()
    directory = session_dir if session_dir is not None else get_default_session_dir(cwd, agent_dir)
    try:
        files = storage.list_files(directory, SESSION_PATTERN)
    except OSError:
        return []
    return collect_sessions(files, storage)


def _session_files_below(root: str, storage: SessionStorage) -> list[str]:
    if isinstance(storage, MemorySessionStorage):
        prefix = root.rstrip("/") + "/"
        return sorted(
            path
            for path in storage.files
            if path.startswith(prefix)
            and path.endswith(".jsonl")
            and not os.path.basename(path).startswith(".")
        )
    found: list[str] = []
    for directory, folders, names in os.walk(root):
        folders[:] = sorted(folder for folder in folders if not folder.startswith("."))
        found.extend(
            os.path.join(directory, name)
            for name in sorted(names)
            if name.endswith(".jsonl") and not name.startswith(".")
        )
    return found


def list_all_sessions(
    storage: SessionStorage | None = None, agent_dir: str | None = None
) -> list[SessionInfo]:
    """Every session file anywhere below ``<agent>/sessions``, in any folder and recursively, so
    subagent sessions inside artifact folders are included like the reference (compatibility:
    Sessions in any folder)."""
    storage = storage or FileSessionStorage()
    try:
        files = _session_files_below(get_sessions_dir(agent_dir), storage)
    except OSError:
        return []
    return collect_sessions(files, storage)


# --------------------------------------------------------------------------------------------
# Lookup (compatibility: Finding sessions as in the reference)


@dataclass(frozen=True, slots=True)
class ResolvedSession:
    session: SessionInfo
    scope: Literal["local", "global"]


def session_matches(info: SessionInfo, query: str) -> bool:
    """Case-insensitive prefix match on the id, the file name, or the part after its last ``_``."""
    wanted = query.lower()
    stem = os.path.basename(info.path)
    if stem.endswith(".jsonl"):
        stem = stem[: -len(".jsonl")]
    return (
        str(info.id).lower().startswith(wanted)
        or stem.lower().startswith(wanted)
        or stem.rpartition("_")[2].lower().startswith(wanted)
    )


def resolve_resumable_session(
    arg: str,
    cwd: str,
    session_dir: str | None = None,
    storage: SessionStorage | None = None,
    agent_dir: str | None = None,
) -> ResolvedSession | None:
    """The session ``arg`` names: first in this project, then (without ``session_dir``) anywhere."""
    for info in list_sessions(cwd, session_dir, storage):
        if session_matches(info, arg):
            return ResolvedSession(info, "local")
    if session_dir is not None:
        return None
    for info in list_all_sessions(storage, agent_dir):
        if session_matches(info, arg):
            return ResolvedSession(info, "global")
    return None
