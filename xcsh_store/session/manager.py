"""SessionManager: one conversation tree in memory, its JSONL file, and the session lifecycle."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from xcsh_store.artifacts.store import ArtifactManager, copy_artifacts_dir
from xcsh_store.errors import EntryNotFoundError, PersistenceError
from xcsh_store.format.blobs import BlobPutResult, BlobStore
from xcsh_store.format.loader import LoadedSession, load_session
from xcsh_store.format.persist import entry_to_line
from xcsh_store.format.storage import (
    FileSessionStorage,
    MemorySessionStorage,
    SessionStorage,
    SessionStorageWriter,
    write_atomically,
)
from xcsh_store.format.versions import CURRENT_SESSION_VERSION, HEADER_TYPE
from xcsh_store.js import trim
from xcsh_store.paths import (
    agent_dir_of,
    artifacts_dir_for,
    encode_cwd,
    file_timestamp,
    get_blobs_dir,
    get_default_session_dir,
    get_sessions_dir,
    new_entry_id,
    new_session_id,
    read_terminal_breadcrumb,
    session_file_name,
    write_terminal_breadcrumb,
)
from xcsh_store.session.context import (
    SessionContext,
    build_session_context,
    path_to_root,
)
from xcsh_store.session.discovery import (
    SessionInfo,
    effective_title,
    find_most_recent_session,
    list_all_sessions,
    list_sessions,
    split_header,
)
from xcsh_store.session.roots import record_session_root
from xcsh_store.times import iso_now, timestamp_to_millis

log = logging.getLogger("xcsh_store")

USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "premiumRequests")
ROOT_BRANCH = "root"
# setSessionName: C0 controls, DEL and C1 controls become spaces, then runs of spaces collapse.
_NAME_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
_SPACE_RUN = re.compile(" {2,}")


@dataclass
class SessionTreeNode:
    entry: dict[str, Any]
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None


# Usage quantities that are missing or not numbers (bool included) count as 0 (D16).
_NUMBER_TYPES = (int, float)


def _empty_usage() -> dict[str, int | float]:
    return dict.fromkeys((*USAGE_KEYS, "cost"), 0)


def sanitize_session_name(name: str) -> str:
    """Controls become spaces, runs of spaces collapse, then a JavaScript ``trim()``."""
    return trim(_SPACE_RUN.sub(" ", _NAME_CONTROLS.sub(" ", name)))


class SessionManager:
    """A session's conversation tree and its file (requirements §5-7, reference §3, §5, D7).

    Synchronous: every call has finished its disk work when it returns. Use the factories
    (:meth:`create`, :meth:`open`, ...) rather than the constructor.
    """

    def __init__(
        self,
        cwd: str,
        session_dir: str,
        persist: bool,
        storage: SessionStorage | None = None,
    ) -> None:
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._storage: SessionStorage = storage or (
            FileSessionStorage() if persist else MemorySessionStorage()
        )
        self._agent_dir = agent_dir_of(session_dir)
        self._blob_store = _RootRecordingBlobStore(
            get_blobs_dir(self._agent_dir), lambda: self._record_session_root(self._session_dir)
        )
        # Folders outside <agent>/sessions known to be recorded (see session_roots).
        self._recorded_roots: set[str] = set()
        if persist and session_dir:
            self._storage.ensure_dir(session_dir)

        self._session_id = ""
        self._session_name: str | None = None
        self._title_source: str | None = None
        self._session_file: str | None = None
        # File order: leading title records (D21), the header, then every other record.
        self._leading: list[dict[str, Any]] = []
        self._header: dict[str, Any] = {}
        self._entries: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._labels: dict[str, str] = {}
        self._leaf_id: str | None = None
        self._usage = _empty_usage()
        self._has_assistant = False

        # Persistence state (reference §5.1).
        self._flushed = False
        self._ensured_on_disk = False
        self._needs_rewrite = False
        # The file on disk ends without a newline: the next append must end that line first.
        self._cut_last_line = False
        self._writer: SessionStorageWriter | None = None
        self._error: PersistenceError | None = None

        self._artifacts: ArtifactManager | None = None
        self._memory_artifacts: dict[str, str] = {}

    # ----------------------------------------------------------------------------------------
    # Factories

    @classmethod
    def create(
        cls, cwd: str, session_dir: str | None = None, storage: SessionStorage | None = None
    ) -> SessionManager:
        """A new persisted session; nothing is written before the first assistant message."""
        manager = cls(cwd, _session_dir_or_default(session_dir, cwd), True, storage)
        manager.new_session()
        return manager

    @classmethod
    def open(
        cls, path: str, session_dir: str | None = None, storage: SessionStorage | None = None
    ) -> SessionManager:
        """The session in ``path``; a missing, empty or invalid file becomes a new session there."""
        resolved = os.path.abspath(path)
        directory = session_dir if session_dir is not None else os.path.dirname(resolved)
        manager = cls(os.getcwd(), directory, True, storage)
        loaded = manager._load(resolved)
        header = split_header(loaded.entries)[1] or {}
        if isinstance(header.get("cwd"), str):
            manager._cwd = header["cwd"]
        manager._switch_to_file(resolved, loaded)
        return manager

    @classmethod
    def continue_recent(
        cls, cwd: str, session_dir: str | None = None, storage: SessionStorage | None = None
    ) -> SessionManager:
        """This terminal's last session in ``cwd``, else the newest one there, else a new one."""
        directory = _session_dir_or_default(session_dir, cwd)
        target = read_terminal_breadcrumb(cwd, agent_dir_of(directory)) or find_most_recent_session(
            directory, storage
        )
        manager = cls(cwd, directory, True, storage)
        if target:
            manager.set_session_file(target)
        else:
            manager.new_session()
        return manager

    @classmethod
    def fork_from(
        cls,
        source_path: str,
        cwd: str,
        session_dir: str | None = None,
        storage: SessionStorage | None = None,
    ) -> SessionManager:
        """A copy of another session (same entry ids) as a new session of ``cwd``, written now."""
        manager = cls(cwd, _session_dir_or_default(session_dir, cwd), True, storage)
        source = os.path.abspath(source_path)
        leading, header, rest = split_header(manager._load(source).entries)
        manager.new_session(parent_session=header["id"] if header else None)
        if header is not None:
            title, source_kind = effective_title(header, leading)
            manager._set_title(title, source_kind)
            manager._entries = rest
            manager._rebuild_index()
        manager._write_whole_file()
        manager._ensured_on_disk = True
        assert manager._session_file is not None
        copy_artifacts_dir(source, manager._session_file)
        return manager

    @classmethod
    def in_memory(
        cls, cwd: str | None = None, storage: SessionStorage | None = None
    ) -> SessionManager:
        """A session that is never written anywhere."""
        manager = cls(cwd if cwd is not None else os.getcwd(), "", False, storage)
        manager.new_session()
        return manager

    @classmethod
    def list(
        cls, cwd: str, session_dir: str | None = None, storage: SessionStorage | None = None
    ) -> list[SessionInfo]:
        """Every session of one project, newest modification first."""
        return list_sessions(cwd, session_dir, storage)

    @classmethod
    def list_all(
        cls, storage: SessionStorage | None = None, agent_dir: str | None = None
    ) -> list[SessionInfo]:
        """Every session below ``<agent>/sessions``, in any folder, newest modification first."""
        return list_all_sessions(storage, agent_dir)

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        # The error in flight is the one to report; a latched one was already raised and logged.
        with contextlib.suppress(PersistenceError):
            self.close()

    # ----------------------------------------------------------------------------------------
    # Reads

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_dir(self) -> str:
        return self._session_dir

    def get_session_id(self) -> str:
        return self._session_id

    def get_session_file(self) -> str | None:
        return self._session_file

    def get_session_name(self) -> str | None:
        return self._session_name

    @property
    def title_source(self) -> str | None:
        return self._title_source

    def is_persisted(self) -> bool:
        return self._persist

    def get_header(self) -> dict[str, Any]:
        return self._header

    def get_entries(self) -> list[dict[str, Any]]:
        """Every record after the header, in file order (the live dicts)."""
        return list(self._entries)

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        return self._by_id.get(entry_id)

    def get_leaf_id(self) -> str | None:
        return self._leaf_id

    def get_leaf_entry(self) -> dict[str, Any] | None:
        return None if self._leaf_id is None else self._by_id.get(self._leaf_id)

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def get_children(self, parent_id: str | None) -> list[dict[str, Any]]:
        return [entry for entry in self._by_id.values() if entry.get("parentId") == parent_id]

    def get_branch(self, from_id: str | None = None) -> list[dict[str, Any]]:
        """Root -> ``from_id`` (default: the leaf); [] for an unknown id. Stops on cycles (D5)."""
        start = self._by_id.get(from_id if from_id is not None else self._leaf_id or "")
        return [] if start is None else path_to_root(start, self._by_id)

    def get_tree(self) -> list[SessionTreeNode]:
        """Every entry once: roots are entries without a (known, other) parent; children are
        sorted by timestamp. A parent cycle is broken at its first entry in file order (D5)."""
        nodes = {
            entry["id"]: SessionTreeNode(entry, label=self._labels.get(entry["id"]))
            for entry in self._by_id.values()
        }
        parent_of: dict[str, str] = {}
        roots: list[SessionTreeNode] = []
        for node in nodes.values():
            entry_id, parent_id = node.entry["id"], node.entry.get("parentId")
            parent = nodes.get(parent_id) if isinstance(parent_id, str) else None
            if parent is None or parent_id == entry_id:
                roots.append(node)
            else:
                parent.children.append(node)
                parent_of[entry_id] = parent_id
        reached: set[str] = set()
        for root in roots:
            reached.update(_subtree_ids(root))
        if len(reached) < len(nodes):
            for entry_id, node in nodes.items():
                if entry_id in reached:
                    continue
                nodes[parent_of[entry_id]].children.remove(node)
                roots.append(node)
                reached.update(_subtree_ids(node))
        order = {entry_id: position for position, entry_id in enumerate(nodes)}
        for node in nodes.values():
            if len(node.children) > 1:
                node.children.sort(key=lambda child: _timestamp_key(child.entry, order))
        return roots

    def build_session_context(self) -> SessionContext:
        return build_session_context(self._entries, self._leaf_id, self._by_id)

    def get_usage_statistics(self) -> dict[str, int | float]:
        """Token and cost totals over every entry of every branch (reference §3.6, D16)."""
        return dict(self._usage)

    def get_injected_ttsr_rules(self) -> list[str]:
        rules: dict[str, None] = {}
        for entry in self.get_branch():
            injected = entry.get("injectedRules")
            if entry.get("type") == "ttsr_injection" and type(injected) is list:
                rules.update((rule, None) for rule in injected if isinstance(rule, str))
        return list(rules)

    def get_artifacts_dir(self) -> str | None:
        return None if self._session_file is None else artifacts_dir_for(self._session_file)

    # ----------------------------------------------------------------------------------------
    # Appends

    def _append(self, entry: dict[str, Any]) -> str:
        """Add a built entry as the new leaf: memory first, then disk (D7)."""
        entry_id = entry["id"]
        self._entries.append(entry)
        self._by_id[entry_id] = entry
        self._leaf_id = entry_id
        self._account(entry)
        self._persist_entry(entry)
        return entry_id

    def _base(self, kind: str) -> dict[str, Any]:
        return {
            "type": kind,
            "id": new_entry_id(self._by_id),
            "parentId": self._leaf_id,
            "timestamp": iso_now(),
        }

    def append_message(self, message: dict[str, Any]) -> str:
        entry = self._base("message")
        entry["message"] = message
        return self._append(entry)

    def append_thinking_level_change(self, level: str | None) -> str:
        entry = self._base("thinking_level_change")
        entry["thinkingLevel"] = level
        return self._append(entry)

    def append_model_change(self, model: str, role: str | None = None) -> str:
        entry = self._base("model_change")
        entry["model"] = model
        _set_optional(entry, "role", role)
        return self._append(entry)

    def append_compaction(
        self,
        summary: str,
        short_summary: str | None,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_extension: bool | None = None,
        preserve_data: dict[str, Any] | None = None,
    ) -> str:
        entry = self._base("compaction")
        entry["summary"] = summary
        _set_optional(entry, "shortSummary", short_summary)
        entry["firstKeptEntryId"] = first_kept_entry_id
        entry["tokensBefore"] = tokens_before
        _set_optional(entry, "details", details)
        _set_optional(entry, "fromExtension", from_extension)
        _set_optional(entry, "preserveData", preserve_data)
        return self._append(entry)

    def _fields_first(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        """``custom`` and ``custom_message`` put their own fields before id/parentId/timestamp."""
        entry = {"type": kind, **{key: value for key, value in fields.items() if value is not None}}
        base = self._base(kind)
        del base["type"]
        entry.update(base)
        return entry

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self._append(self._fields_first("custom", {"customType": custom_type, "data": data}))

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Any,
        display: bool,
        details: Any = None,
        attribution: str = "agent",
    ) -> str:
        fields = {
            "customType": custom_type,
            "content": content,
            "display": display,
            "details": details,
            "attribution": attribution,
        }
        return self._append(self._fields_first("custom_message", fields))

    def append_label_change(self, target_id: str, label: str | None) -> str:
        """Label ``target_id`` (None or "" clears it); the label entry becomes the leaf."""
        if target_id not in self._by_id:
            raise EntryNotFoundError(target_id)
        entry = self._base("label")
        entry["targetId"] = target_id
        _set_optional(entry, "label", label)
        return self._append(entry)

    def append_ttsr_injection(self, rule_names: list[str]) -> str:
        entry = self._base("ttsr_injection")
        entry["injectedRules"] = list(rule_names)
        return self._append(entry)

    def append_session_init(
        self,
        system_prompt: str,
        task: str,
        tools: list[str],
        output_schema: Any = None,
    ) -> str:
        entry = self._base("session_init")
        entry["systemPrompt"] = system_prompt
        entry["task"] = task
        entry["tools"] = list(tools)
        _set_optional(entry, "outputSchema", output_schema)
        return self._append(entry)

    def append_mode_change(self, mode: str, data: dict[str, Any] | None = None) -> str:
        entry = self._base("mode_change")
        entry["mode"] = mode
        _set_optional(entry, "data", data)
        return self._append(entry)

    # ----------------------------------------------------------------------------------------
    # Navigation

    def branch(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id``; nothing is written."""
        if entry_id not in self._by_id:
            raise EntryNotFoundError(entry_id)
        self._leaf_id = entry_id

    def reset_leaf(self) -> None:
        """The next append starts a new root."""
        self._leaf_id = None

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = None,
        from_extension: bool | None = None,
    ) -> str:
        """Move the leaf to ``branch_from_id`` (None: before the root) and append a summary."""
        if branch_from_id is not None and branch_from_id not in self._by_id:
            raise EntryNotFoundError(branch_from_id)
        self._leaf_id = branch_from_id
        entry = self._base("branch_summary")
        entry["fromId"] = branch_from_id if branch_from_id is not None else ROOT_BRANCH
        entry["summary"] = summary
        _set_optional(entry, "details", details)
        _set_optional(entry, "fromExtension", from_extension)
        return self._append(entry)

    # ----------------------------------------------------------------------------------------
    # In-memory state

    def _account(self, entry: dict[str, Any]) -> None:
        """Keep the derived state (labels, usage, "has an answer") current for one entry.

        Runs for every entry of every loaded file, hence the flat, lookup-once style.
        """
        kind = entry.get("type")
        if kind == "label":
            target = entry.get("targetId")
            if isinstance(target, str):
                label = entry.get("label")
                if label and isinstance(label, str):
                    self._labels[target] = label
                else:
                    self._labels.pop(target, None)
            return
        if kind != "message":
            return
        message = entry.get("message")
        if type(message) is not dict:
            return
        role = message.get("role")
        if role == "assistant":
            self._has_assistant = True
            usage = message.get("usage")
        elif role == "toolResult" and message.get("toolName") == "task":
            # Subagent runs report their usage in the task tool's result (reference §3.6).
            details = message.get("details")
            usage = details.get("usage") if type(details) is dict else None
        else:
            return
        if type(usage) is not dict:
            return
        totals = self._usage
        for key in USAGE_KEYS:
            value = usage.get(key)
            if type(value) in _NUMBER_TYPES:
                totals[key] += value
        cost = usage.get("cost")
        if type(cost) is dict:
            total = cost.get("total")
            if type(total) in _NUMBER_TYPES:
                totals["cost"] += total

    def _rebuild_index(self) -> None:
        """Derive ids, labels, usage and the leaf (the last entry) from ``_entries``."""
        by_id: dict[str, dict[str, Any]] = {}
        self._by_id = by_id
        self._labels = {}
        self._usage = _empty_usage()
        self._has_assistant = False
        leaf_id = None
        account = self._account
        for entry in self._entries:
            entry_id = entry.get("id")
            if type(entry_id) is not str:
                continue
            kind = entry.get("type")
            if kind == HEADER_TYPE:
                continue  # a second session line is an opaque record (D22)
            by_id[entry_id] = entry
            leaf_id = entry_id
            if kind == "message" or kind == "label":
                account(entry)
        self._leaf_id = leaf_id

    def _set_title(self, title: str | None, source: str | None) -> None:
        self._session_name = title
        self._title_source = source if title is not None else None
        if title is not None:
            self._header["title"] = title
            _set_optional(self._header, "titleSource", self._title_source)

    def _start_session(self, parent_session: str | None) -> None:
        """Fresh in-memory state with a new header; the session file is chosen by the caller."""
        self._new_header(parent_session)
        self._session_name = None
        self._title_source = None
        self._entries = []
        self._rebuild_index()
        self._flushed = False
        self._ensured_on_disk = False
        self._needs_rewrite = False
        self._cut_last_line = False
        self._memory_artifacts = {}

    def _new_header(self, parent_session: str | None) -> None:
        """A new session id and the header of a new session (no title records before it)."""
        self._session_id = new_session_id()
        self._leading = []
        self._header = {
            "type": HEADER_TYPE,
            "version": CURRENT_SESSION_VERSION,
            "id": self._session_id,
            "timestamp": iso_now(),
            "cwd": self._cwd,
        }
        _set_optional(self._header, "parentSession", parent_session)

    def _adopt(self, records: list[dict[str, Any]]) -> None:
        """Take over a loaded file's records (title records, header, entries)."""
        leading, header, rest = split_header(records)
        assert header is not None
        self._leading, self._header, self._entries = leading, header, rest
        self._session_id = header["id"]
        self._session_name, self._title_source = effective_title(header, leading)
        self._rebuild_index()

    def _new_file_path(self) -> str:
        return os.path.join(self._session_dir, session_file_name(iso_now(), self._session_id))

    # ----------------------------------------------------------------------------------------
    # Persistence (requirements §7, reference §5, D7, D23)

    def _records(self) -> Iterator[dict[str, Any]]:
        yield from self._leading
        yield self._header
        yield from self._entries

    def _raise_latched(self) -> None:
        if self._error is not None:
            raise self._error

    def _fail(self, error: Exception, action: str) -> PersistenceError:
        """Latch the first persistence error (logged once) and return what to raise."""
        if isinstance(error, PersistenceError):
            wrapped = error
        else:
            wrapped = PersistenceError(
                f"Could not {action} session file {self._session_file}: {error}"
            )
            wrapped.__cause__ = error
        if self._error is None:
            self._error = wrapped
            log.error("Session persistence error (session file %s): %s", self._session_file, error)
        return wrapped

    def _clear_error(self) -> None:
        self._error = None

    def _close_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()

    def _write_whole_file(self) -> None:
        """Atomically replace the session file with every record (header always first, D23)."""
        assert self._session_file is not None
        self._raise_latched()
        self._close_writer()
        blob_store = self._blob_store
        try:
            write_atomically(
                self._storage,
                self._session_file,
                (entry_to_line(record, blob_store) for record in self._records()),
            )
        except Exception as error:
            raise self._fail(error, "rewrite") from error
        self._needs_rewrite = False
        self._cut_last_line = False
        self._flushed = True

    def _file_has_content(self) -> bool:
        """Whether the session file exists and is not empty; when that cannot be told, False
        (callers then write the whole file, the safe choice)."""
        try:
            return self._storage.stat(self._session_file or "").size > 0
        except OSError:
            return False

    def _persist_entry(self, entry: dict[str, Any]) -> None:
        """Write one freshly appended entry, or defer it (reference §5.2)."""
        if not self._persist or self._session_file is None:
            return
        self._raise_latched()
        if not self._ensured_on_disk and not self._has_assistant:
            self._flushed = False
            return
        # D23: if the file vanished or was emptied under us, an append would leave it without
        # its header; write the whole session instead.
        if self._needs_rewrite or not self._flushed or not self._file_has_content():
            self._write_whole_file()
            return
        line = entry_to_line(entry, self._blob_store)
        if self._cut_last_line:
            # A crash or a full disk cut the last line short: glued onto it, this entry would be
            # unreadable too. Ending the cut line first leaves it a malformed line on its own.
            line = b"\n" + line
        try:
            if self._writer is None:
                self._writer = self._storage.open_writer(self._session_file, "a")
            self._writer.write_line(line)
        except Exception as error:
            raise self._fail(error, "append to") from error
        self._cut_last_line = False

    def flush(self) -> None:
        """Make everything written so far durable (writer flush + fsync)."""
        self._raise_latched()
        if self._writer is None:
            return
        try:
            self._writer.flush()
            self._writer.fsync()
        except Exception as error:
            raise self._fail(error, "flush") from error

    def close(self) -> None:
        """Flush and close the append writer; raise the latched persistence error, if any.

        The manager stays usable: a later append opens a new writer.
        """
        try:
            if self._writer is not None and self._error is None:
                self.flush()
        finally:
            self._close_writer()
        self._raise_latched()

    def rewrite_entries(self) -> None:
        """Write the whole session again (after callers changed entries in place)."""
        if self._persist and self._session_file is not None:
            self._write_whole_file()

    def ensure_on_disk(self) -> None:
        """Write the session now even without an assistant message, and keep it written."""
        if not self._persist or self._session_file is None:
            return
        if not (self._flushed and not self._needs_rewrite and self._file_has_content()):
            self._write_whole_file()
        self._ensured_on_disk = True

    # ----------------------------------------------------------------------------------------
    # Lifecycle

    def _load(self, path: str) -> LoadedSession:
        return load_session(path, self._storage, self._blob_store)

    def _switch_to_file(self, path: str, loaded: LoadedSession) -> None:
        """Make ``path`` the session in use, given what was loaded from it."""
        self._close_writer()
        self._clear_error()
        self._session_file = path
        self._artifacts = None
        if loaded.entries:
            self._adopt(loaded.entries)
            self._flushed = True
            self._ensured_on_disk = True
            self._needs_rewrite = loaded.migrated
            self._cut_last_line = loaded.unterminated
            self._memory_artifacts = {}
        else:
            self._set_aside_invalid_file(path)
            self._start_session(None)
            self._needs_rewrite = True
        write_terminal_breadcrumb(self._cwd, path, self._agent_dir)
        if self._needs_rewrite:
            # D2: a migration is written back at once; a replaced file gets its header now.
            self._write_whole_file()
            self._ensured_on_disk = True

    def _set_aside_invalid_file(self, path: str) -> None:
        """D20: a non-empty file without a valid header is renamed, never overwritten."""
        if not self._file_has_content():
            return
        stamp = file_timestamp(iso_now())
        target = f"{path}.invalid-{stamp}"
        suffix = 1
        while self._storage.exists(target):
            target = f"{path}.invalid-{stamp}-{suffix}"
            suffix += 1
        try:
            self._storage.rename(path, target)
        except Exception as error:
            raise self._fail(error, "set aside the invalid") from error
        log.warning("%s has no valid session header; moved it to %s", path, target)

    def set_session_file(self, path: str) -> None:
        """Switch to the session in ``path``; a missing or invalid file becomes a new session
        written there at once (an invalid non-empty file is first moved aside, D20)."""
        resolved = os.path.abspath(path)
        self._switch_to_file(resolved, self._load(resolved))

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start an empty session (written lazily); returns its file path, None in memory."""
        self._close_writer()
        self._clear_error()
        self._start_session(parent_session)
        self._artifacts = None
        if not self._persist:
            self._session_file = None
            return None
        self._session_file = self._new_file_path()
        write_terminal_breadcrumb(self._cwd, self._session_file, self._agent_dir)
        return self._session_file

    def set_session_name(self, name: str, source: str = "auto") -> bool:
        """Name the session; an automatic name never replaces a user's. Returns whether it did."""
        if self._title_source == "user" and source == "auto":
            return False
        cleaned = sanitize_session_name(name)
        if not cleaned:
            return False
        self._set_title(cleaned, source)
        if (
            self._persist
            and self._session_file is not None
            and self._storage.exists(self._session_file)
        ):
            self._write_whole_file()
        return True

    def fork(self) -> tuple[str, str] | None:
        """Continue in a copy of this session (new id, ``parentSession`` = old id), written now,
        with a copy of the artifact folder. Returns ``(old file, new file)``."""
        if not self._persist or self._session_file is None:
            return None
        old_file = self._session_file
        old_id = self._session_id
        self._close_writer()
        self._clear_error()
        self._session_id = new_session_id()
        header: dict[str, Any] = {
            "type": HEADER_TYPE,
            "version": CURRENT_SESSION_VERSION,
            "id": self._session_id,
        }
        for key, fallback in (("title", self._session_name), ("titleSource", self._title_source)):
            value = self._header.get(key)
            _set_optional(header, key, fallback if value is None else value)
        header["timestamp"] = iso_now()
        header["cwd"] = self._cwd
        header["parentSession"] = old_id
        self._header = header
        self._leading = []
        self._session_file = self._new_file_path()
        self._artifacts = None
        self._flushed = False
        self._write_whole_file()
        write_terminal_breadcrumb(self._cwd, self._session_file, self._agent_dir)
        copy_artifacts_dir(old_file, self._session_file)
        return old_file, self._session_file

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Continue in a new session holding only the path to ``leaf_id`` (labels re-created)."""
        path = self.get_branch(leaf_id)
        if not path:
            raise EntryNotFoundError(leaf_id)
        kept: list[dict[str, Any]] = []
        dropped_labels: set[str] = set()
        for entry in path:
            if entry.get("type") == "label":
                dropped_labels.add(entry["id"])
                continue
            if entry.get("parentId") in dropped_labels:
                # D24: skip over the dropped label so the history stays connected.
                entry = {**entry, "parentId": kept[-1]["id"] if kept else None}
            kept.append(entry)
        previous_file = self._session_file
        self._close_writer()
        self._clear_error()
        self._new_header(previous_file if self._persist else None)
        self._entries = kept + self._recreated_labels(kept)
        self._rebuild_index()
        self._artifacts = None
        if not self._persist:
            return None
        self._session_file = self._new_file_path()
        self._write_whole_file()
        write_terminal_breadcrumb(self._cwd, self._session_file, self._agent_dir)
        return self._session_file

    def _recreated_labels(self, kept: list[dict[str, Any]]) -> list[dict[str, Any]]:
        used = {entry["id"] for entry in kept}
        parent_id = kept[-1]["id"] if kept else None
        labels = []
        for target_id, label in self._labels.items():
            if target_id not in used:
                continue
            label_id = new_entry_id(used)
            used.add(label_id)
            labels.append(
                {
                    "type": "label",
                    "id": label_id,
                    "parentId": parent_id,
                    "timestamp": iso_now(),
                    "targetId": target_id,
                    "label": label,
                }
            )
            parent_id = label_id
        return labels

    def move_to(self, new_cwd: str) -> None:
        """Move the session (file and artifact folder) to the default folder of ``new_cwd``."""
        resolved = os.path.abspath(new_cwd)
        if resolved == self._cwd:
            return
        new_dir = self._session_dir_for(resolved)
        had_file = False
        if self._persist and self._session_file is not None:
            self._close_writer()
            self._clear_error()
            new_file = os.path.join(new_dir, os.path.basename(self._session_file))
            had_file = self._storage.exists(self._session_file)
            if had_file:
                self._record_session_root(new_dir)  # its lines may reference blobs already
            self._move_files(self._session_file, new_file, had_file)
            self._session_file = new_file
            self._artifacts = None
        self._cwd = resolved
        self._session_dir = new_dir
        self._header["cwd"] = resolved
        if self._session_file is not None:
            if had_file or self._has_assistant:
                self._write_whole_file()
            write_terminal_breadcrumb(resolved, self._session_file, self._agent_dir)

    def _session_dir_for(self, cwd: str) -> str:
        """The folder for ``cwd``: beside the current one when that is a managed folder."""
        if not self._persist:
            return self._session_dir  # an in-memory session has no folder and never touches disk
        if os.path.basename(self._session_dir) == encode_cwd(self._cwd):
            directory = os.path.join(os.path.dirname(self._session_dir), encode_cwd(cwd))
            self._storage.ensure_dir(directory)
            return directory
        return get_default_session_dir(cwd)

    def _move_files(self, old_file: str, new_file: str, had_file: bool) -> None:
        """Rename the session file, then its artifact folder; undo both if either fails."""
        old_artifacts, new_artifacts = artifacts_dir_for(old_file), artifacts_dir_for(new_file)
        moved_file = moved_artifacts = False
        try:
            if had_file:
                self._storage.rename(old_file, new_file)
                moved_file = True
            if os.path.isdir(old_artifacts):
                os.rename(old_artifacts, new_artifacts)
                moved_artifacts = True
        except OSError:
            if moved_artifacts:
                try:
                    os.rename(new_artifacts, old_artifacts)
                except OSError as rollback:
                    raise PersistenceError(
                        f"Failed to move artifacts and rollback: {rollback}"
                    ) from rollback
            if moved_file:
                try:
                    self._storage.rename(new_file, old_file)
                except OSError as rollback:
                    raise PersistenceError(
                        f"Failed to move session file and rollback: {rollback}"
                    ) from rollback
            raise

    # ----------------------------------------------------------------------------------------
    # Blobs and artifacts

    def put_blob(self, data: bytes) -> BlobPutResult:
        return self._blob_store.put(data)

    def _record_session_root(self, folder: str) -> None:
        """Make a session folder the index would not scan a recorded root, before a blob of
        its sessions is written: otherwise the GC would take their blobs for unreferenced."""
        if not self._persist or not folder or folder in self._recorded_roots:
            return
        if not _is_inside(folder, get_sessions_dir(self._agent_dir)):
            record_session_root(self._agent_dir, folder)
        self._recorded_roots.add(folder)

    def _artifact_manager(self) -> ArtifactManager | None:
        if self._session_file is None:
            return None
        if self._artifacts is None:
            self._artifacts = ArtifactManager(self._session_file)
        return self._artifacts

    def save_artifact(self, content: str, tool_type: str) -> str:
        """Store a tool output; without a session file it is kept in memory under "0", "1", ..."""
        artifacts = self._artifact_manager()
        if artifacts is not None:
            return artifacts.save(content, tool_type)
        artifact_id = str(len(self._memory_artifacts))
        self._memory_artifacts[artifact_id] = content
        return artifact_id

    def allocate_artifact_path(self, tool_type: str) -> tuple[str, str] | None:
        artifacts = self._artifact_manager()
        return None if artifacts is None else artifacts.allocate_path(tool_type)

    def get_artifact_path(self, artifact_id: str) -> str | None:
        artifacts = self._artifact_manager()
        return None if artifacts is None else artifacts.get_path(artifact_id)


class _RootRecordingBlobStore(BlobStore):
    """The agent dir's blobs; each write first records the session's folder (see above)."""

    def __init__(self, directory: str, record_root: Callable[[], None]) -> None:
        super().__init__(directory)
        self._record_root = record_root

    def put(self, data: bytes) -> BlobPutResult:
        self._record_root()
        return super().put(data)


def _is_inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it (both made absolute)."""
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _set_optional(target: dict[str, Any], key: str, value: Any) -> None:
    """Optional fields that are unset are absent, never null."""
    if value is not None:
        target[key] = value


def _session_dir_or_default(session_dir: str | None, cwd: str) -> str:
    return session_dir if session_dir is not None else get_default_session_dir(cwd)


def _subtree_ids(root: SessionTreeNode) -> Iterator[str]:
    pending = [root]
    while pending:
        node = pending.pop()
        yield node.entry["id"]
        pending.extend(node.children)


def _timestamp_key(entry: dict[str, Any], order: dict[str, int]) -> tuple[float, int]:
    """Children by time; entries without a valid timestamp go last, in file order."""
    millis = timestamp_to_millis(entry.get("timestamp"))
    return (float("inf") if millis is None else millis, order[entry["id"]])
