"""SessionManager: one conversation tree in memory, its JSONL file, and the session lifecycle."""

from __future__ import annotations

import builtins
import contextlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from xcsh_store.artifacts.store import ArtifactManager, copy_artifacts_dir
from xcsh_store.errors import EntryNotFoundError, PersistenceError
from xcsh_store.format.blobs import BlobPutResult, BlobStore
from xcsh_store.format.context import (
    SessionContext,
    build_session_context,
    path_to_root,
)
from xcsh_store.format.entries import (
    TITLE_CHANGE_TYPE,
    USAGE_FIELDS,
    branch_name,
    build_branch_summary,
    build_compaction,
    build_custom_entry,
    build_custom_message_entry,
    build_header,
    build_label_change,
    build_message,
    build_mode_change,
    build_model_change,
    build_session_init,
    build_thinking_level_change,
    build_ttsr_injection,
    effective_title,
    message_usage,
    set_optional,
    set_title_after_id,
)
from xcsh_store.format.loader import LoadedSession, load_session
from xcsh_store.format.session_roots import record_session_root
from xcsh_store.format.storage import FileSessionStorage, MemorySessionStorage, SessionStorage
from xcsh_store.format.versions import HEADER_TYPE
from xcsh_store.js import trim
from xcsh_store.paths import (
    agent_dir_of,
    artifacts_dir_for,
    encode_cwd,
    get_blobs_dir,
    get_default_session_dir,
    get_sessions_dir,
    new_entry_id,
    new_session_id,
    read_terminal_breadcrumb,
    session_file_name,
    write_terminal_breadcrumb,
)
from xcsh_store.session.discovery import (
    SessionInfo,
    find_most_recent_session,
    list_all_sessions,
    list_sessions,
    split_header,
)
from xcsh_store.session.session_file import SessionFile
from xcsh_store.times import iso_now, timestamp_to_millis

# setSessionName: C0 controls, DEL and C1 controls become spaces, then runs of spaces collapse.
_NAME_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
_SPACE_RUN = re.compile(" {2,}")


@dataclass
class SessionTreeNode:
    entry: dict[str, Any]
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None


def sanitize_session_name(name: str) -> str:
    """Controls become spaces, runs of spaces collapse, then a JavaScript ``trim()``."""
    return trim(_SPACE_RUN.sub(" ", _NAME_CONTROLS.sub(" ", name)))


class SessionManager:
    """A session's conversation tree and its file.

    Synchronous: every call has finished its disk work when it returns (compatibility: Synchronous
    writes with a latched error). Use the factories (:meth:`create`, :meth:`open`, ...) rather than
    the constructor.
    """

    def __init__(
        self,
        cwd: str,
        session_dir: str,
        persist: bool,
        storage: SessionStorage | None = None,
        agent_dir: str | None = None,
    ) -> None:
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._storage: SessionStorage = storage or (
            FileSessionStorage() if persist else MemorySessionStorage()
        )
        # The agent dir given to the factory; None: the default, wherever paths finds it.
        self._agent_dir_given = agent_dir
        # Where this session's blobs, breadcrumbs and recorded roots go.
        self._agent_dir = _agent_dir_for(session_dir, agent_dir)
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
        # File order: leading title records (compatibility: Title records before the header), the
        # header, then every other record.
        self._leading: list[dict[str, Any]] = []
        self._header: dict[str, Any] = {}
        # The header fork() made: it holds title/titleSource right after its id even while
        # they are unset, so a name set later goes there, not at the end.
        self._title_after_id = False
        self._entries: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._labels: dict[str, str] = {}
        self._leaf_id: str | None = None
        self._renamed_in_entries = False
        # Totals of message_usage over every entry, in USAGE_FIELDS order.
        self._usage: list[int | float] = [0] * len(USAGE_FIELDS)
        self._has_assistant = False
        self._file = SessionFile(self._storage, self._blob_store, self._records)

        self._artifacts: ArtifactManager | None = None
        self._memory_artifacts: dict[str, str] = {}

    # ----------------------------------------------------------------------------------------
    # Factories

    @classmethod
    def create(
        cls,
        cwd: str,
        session_dir: str | None = None,
        storage: SessionStorage | None = None,
        agent_dir: str | None = None,
    ) -> SessionManager:
        """A new persisted session; nothing is written before the first assistant message.

        ``agent_dir`` (every factory takes it): where the session's default folder, blobs,
        breadcrumbs and recorded roots are. Without it the default folder is in
        ``get_agent_dir()``, and the rest go to the agent dir the session folder lies in.
        """
        directory = _session_dir_or_default(session_dir, cwd, agent_dir)
        manager = cls(cwd, directory, True, storage, agent_dir)
        manager.new_session()
        return manager

    @classmethod
    def open(
        cls,
        path: str,
        session_dir: str | None = None,
        storage: SessionStorage | None = None,
        agent_dir: str | None = None,
    ) -> SessionManager:
        """The session in ``path``; a missing, empty or invalid file becomes a new session there."""
        resolved = os.path.abspath(path)
        directory = session_dir if session_dir is not None else os.path.dirname(resolved)
        manager = cls(os.getcwd(), directory, True, storage, agent_dir)
        loaded = manager._load(resolved)
        header = split_header(loaded.entries)[1] or {}
        if isinstance(header.get("cwd"), str):
            manager._cwd = header["cwd"]
        manager._switch_to_file(resolved, loaded)
        return manager

    @classmethod
    def continue_recent(
        cls,
        cwd: str,
        session_dir: str | None = None,
        storage: SessionStorage | None = None,
        agent_dir: str | None = None,
    ) -> SessionManager:
        """This terminal's last session in ``cwd``, else the newest one there, else a new one."""
        directory = _session_dir_or_default(session_dir, cwd, agent_dir)
        breadcrumb = read_terminal_breadcrumb(cwd, _agent_dir_for(directory, agent_dir))
        target = breadcrumb or find_most_recent_session(directory, storage)
        manager = cls(cwd, directory, True, storage, agent_dir)
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
        agent_dir: str | None = None,
    ) -> SessionManager:
        """A copy of another session (same entry ids) as a new session of ``cwd``, written now."""
        directory = _session_dir_or_default(session_dir, cwd, agent_dir)
        manager = cls(cwd, directory, True, storage, agent_dir)
        source = os.path.abspath(source_path)
        leading, header, rest = split_header(manager._load(source).entries)
        manager.new_session(parent_session=header["id"] if header else None)
        if header is not None:
            title, source_kind = effective_title(header, leading)
            manager._set_title(title, source_kind)
            manager._entries = rest
            manager._rebuild_index()
        manager._file.write_and_keep()
        assert manager._file.path is not None
        copy_artifacts_dir(source, manager._file.path)
        return manager

    @classmethod
    def in_memory(
        cls,
        cwd: str | None = None,
        storage: SessionStorage | None = None,
        agent_dir: str | None = None,
    ) -> SessionManager:
        """A session that is never written anywhere (blobs still go to the agent dir)."""
        manager = cls(cwd if cwd is not None else os.getcwd(), "", False, storage, agent_dir)
        manager.new_session()
        return manager

    # From here on the class names the builtin builtins.list: in the class, "list" is this method.
    @classmethod
    def list(
        cls,
        cwd: str,
        session_dir: str | None = None,
        storage: SessionStorage | None = None,
        agent_dir: str | None = None,
    ) -> builtins.list[SessionInfo]:
        """Every session of one project, newest modification first."""
        return list_sessions(cwd, session_dir, storage, agent_dir)

    @classmethod
    def list_all(
        cls, storage: SessionStorage | None = None, agent_dir: str | None = None
    ) -> builtins.list[SessionInfo]:
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
        return self._file.path

    def get_session_name(self) -> str | None:
        """The newest oh-my-pi ``title_change`` on the active branch (D28), else the header's
        title (the one set_session_name writes), else the leading title record's."""
        renamed = self._branch_name()
        return self._session_name if renamed is None else renamed[0]

    @property
    def title_source(self) -> str | None:
        renamed = self._branch_name()
        return self._title_source if renamed is None else renamed[1]

    def _branch_name(self) -> tuple[str, str] | None:
        return branch_name(self.get_branch()) if self._renamed_in_entries else None

    def is_persisted(self) -> bool:
        return self._persist

    def get_header(self) -> dict[str, Any]:
        return self._header

    def get_entries(self) -> builtins.list[dict[str, Any]]:
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

    def get_children(self, parent_id: str | None) -> builtins.list[dict[str, Any]]:
        return [entry for entry in self._by_id.values() if entry.get("parentId") == parent_id]

    def get_branch(self, from_id: str | None = None) -> builtins.list[dict[str, Any]]:
        """Root -> ``from_id`` (default: the leaf); [] for an unknown id. Stops on cycles
        (compatibility: Cycles end every walk)."""
        start = self._by_id.get(from_id if from_id is not None else self._leaf_id or "")
        return [] if start is None else path_to_root(start, self._by_id)

    def get_tree(self) -> builtins.list[SessionTreeNode]:
        """Every entry once: roots are entries without a (known, other) parent; children are
        sorted by timestamp (compatibility: Tree children without a valid time go last). A parent
        cycle is broken at its first entry in file order (compatibility: Cycles end every walk)."""
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
                parent_of[entry_id] = parent.entry["id"]
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
        """Token and cost totals over every entry of every branch (compatibility: Usage as in the
        reference; Missing usage counts as zero)."""
        return dict(zip(USAGE_FIELDS, self._usage, strict=True))

    def get_injected_ttsr_rules(self) -> builtins.list[str]:
        rules: dict[str, None] = {}
        for entry in self.get_branch():
            injected = entry.get("injectedRules")
            if entry.get("type") == "ttsr_injection" and type(injected) is list:
                rules.update((rule, None) for rule in injected if isinstance(rule, str))
        return list(rules)

    def get_artifacts_dir(self) -> str | None:
        path = self._file.path
        return None if path is None else artifacts_dir_for(path)

    # ----------------------------------------------------------------------------------------
    # Appends

    def _append(self, entry: dict[str, Any]) -> str:
        """Add a built entry as the new leaf: memory first, then disk (compatibility: Synchronous
        writes with a latched error)."""
        entry_id = entry["id"]
        self._entries.append(entry)
        self._by_id[entry_id] = entry
        self._leaf_id = entry_id
        self._account(entry)
        self._persist_entry(entry)
        return entry_id

    def _new_id(self) -> str:
        return new_entry_id(self._by_id)

    def append_message(self, message: dict[str, Any]) -> str:
        return self._append(build_message(self._new_id(), self._leaf_id, message))

    def append_thinking_level_change(self, level: str | None) -> str:
        return self._append(build_thinking_level_change(self._new_id(), self._leaf_id, level))

    def append_model_change(self, model: str, role: str | None = None) -> str:
        return self._append(build_model_change(self._new_id(), self._leaf_id, model, role))

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
        entry = build_compaction(
            self._new_id(),
            self._leaf_id,
            summary,
            short_summary,
            first_kept_entry_id,
            tokens_before,
            details,
            from_extension,
            preserve_data,
        )
        return self._append(entry)

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self._append(build_custom_entry(self._new_id(), self._leaf_id, custom_type, data))

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Any,
        display: bool,
        details: Any = None,
        attribution: str = "agent",
    ) -> str:
        entry = build_custom_message_entry(
            self._new_id(), self._leaf_id, custom_type, content, display, details, attribution
        )
        return self._append(entry)

    def append_label_change(self, target_id: str, label: str | None) -> str:
        """Label ``target_id`` (None or "" clears it); the label entry becomes the leaf."""
        if target_id not in self._by_id:
            raise EntryNotFoundError(target_id)
        return self._append(build_label_change(self._new_id(), self._leaf_id, target_id, label))

    def append_ttsr_injection(self, rule_names: builtins.list[str]) -> str:
        return self._append(build_ttsr_injection(self._new_id(), self._leaf_id, rule_names))

    def append_session_init(
        self,
        system_prompt: str,
        task: str,
        tools: builtins.list[str],
        output_schema: Any = None,
    ) -> str:
        entry = build_session_init(
            self._new_id(), self._leaf_id, system_prompt, task, tools, output_schema
        )
        return self._append(entry)

    def append_mode_change(self, mode: str, data: dict[str, Any] | None = None) -> str:
        return self._append(build_mode_change(self._new_id(), self._leaf_id, mode, data))

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
        entry = build_branch_summary(
            self._new_id(), branch_from_id, summary, details, from_extension
        )
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
        if message.get("role") == "assistant":
            self._has_assistant = True
        usage = message_usage(message)
        if usage is not None:
            totals = self._usage
            for position, figure in enumerate(usage):
                totals[position] += figure or 0

    def _rebuild_index(self) -> None:
        """Derive ids, labels, usage and the leaf (the last entry) from ``_entries``."""
        by_id: dict[str, dict[str, Any]] = {}
        self._by_id = by_id
        self._labels = {}
        self._usage = [0] * len(USAGE_FIELDS)
        self._has_assistant = False
        leaf_id = None
        account = self._account
        renamed = False
        for entry in self._entries:
            entry_id = entry.get("id")
            if type(entry_id) is not str:
                continue
            kind = entry.get("type")
            if kind == HEADER_TYPE:
                continue  # (compatibility: A second header is an opaque record)
            by_id[entry_id] = entry
            leaf_id = entry_id
            if kind == "message" or kind == "label":
                account(entry)
            elif kind == TITLE_CHANGE_TYPE:
                renamed = True
        self._leaf_id = leaf_id
        # Whether get_session_name must look along the branch (oh-my-pi files only).
        self._renamed_in_entries = renamed

    def _set_title(self, title: str | None, source: str | None) -> None:
        self._session_name = title
        self._title_source = source if title is not None else None
        if title is not None and self._title_after_id:
            set_title_after_id(self._header, title, self._title_source)
        elif title is not None:
            self._header["title"] = title
            set_optional(self._header, "titleSource", self._title_source)

    def _start_session(self, parent_session: str | None) -> None:
        """Fresh in-memory state with a new header; the session file is chosen by the caller."""
        self._new_header(parent_session)
        self._session_name = None
        self._title_source = None
        self._entries = []
        self._rebuild_index()
        self._file.start_unwritten()
        self._memory_artifacts = {}

    def _new_header(self, parent_session: str | None) -> None:
        """A new session id and the header of a new session (no title records before it)."""
        self._session_id = new_session_id()
        self._leading = []
        self._header = build_header(self._session_id, self._cwd, parent_session)
        self._title_after_id = False

    def _adopt(self, records: builtins.list[dict[str, Any]]) -> None:
        """Take over a loaded file's records (title records, header, entries)."""
        leading, header, rest = split_header(records)
        assert header is not None
        self._leading, self._header, self._entries = leading, header, rest
        self._title_after_id = False
        self._session_id = header["id"]
        self._session_name, self._title_source = effective_title(header, leading)
        self._rebuild_index()

    def _new_file_path(self) -> str:
        return os.path.join(self._session_dir, session_file_name(iso_now(), self._session_id))

    # ----------------------------------------------------------------------------------------
    # Persistence (the file itself is session_file's)

    def _records(self) -> Iterator[dict[str, Any]]:
        yield from self._leading
        yield self._header
        yield from self._entries

    def _persist_entry(self, entry: dict[str, Any]) -> None:
        if self._persist and self._file.path is not None:
            self._file.append(entry, self._has_assistant)

    def flush(self) -> None:
        """Make everything written so far durable (writer flush + fsync)."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the append writer; raise the latched persistence error, if any.

        The manager stays usable: a later append opens a new writer.
        """
        self._file.close()

    def rewrite_entries(self) -> None:
        """Write the whole session again (after callers changed entries in place)."""
        if self._persist and self._file.path is not None:
            self._file.rewrite()

    def ensure_on_disk(self) -> None:
        """Write the session now even without an assistant message, and keep it written."""
        if self._persist and self._file.path is not None:
            self._file.ensure_on_disk()

    # ----------------------------------------------------------------------------------------
    # Lifecycle

    def _load(self, path: str) -> LoadedSession:
        return load_session(path, self._storage, self._blob_store)

    def _switch_to_file(self, path: str, loaded: LoadedSession) -> None:
        """Make ``path`` the session in use, given what was loaded from it."""
        self._file.detach()
        self._file.path = path
        self._artifacts = None
        if loaded.entries:
            self._adopt(loaded.entries)
            self._file.loaded(loaded.migrated, loaded.unterminated)
            self._memory_artifacts = {}
        else:
            self._file.set_aside_invalid()
            self._start_session(None)
            self._file.replaced()
        write_terminal_breadcrumb(self._cwd, path, self._agent_dir)
        self._file.write_if_needed()

    def set_session_file(self, path: str) -> None:
        """Switch to the session in ``path``; a missing or invalid file becomes a new session
        written there at once; an invalid non-empty file is first moved aside (compatibility:
        Invalid files are moved aside)."""
        resolved = os.path.abspath(path)
        self._switch_to_file(resolved, self._load(resolved))

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start an empty session (written lazily); returns its file path, None in memory."""
        self._file.detach()
        self._start_session(parent_session)
        self._artifacts = None
        if not self._persist:
            self._file.path = None
            return None
        path = self._file.path = self._new_file_path()
        write_terminal_breadcrumb(self._cwd, path, self._agent_dir)
        return path

    def set_session_name(self, name: str, source: str = "auto") -> bool:
        """Name the session; an automatic name never replaces a user's. Returns whether it did."""
        if self.title_source == "user" and source == "auto":
            return False
        cleaned = sanitize_session_name(name)
        if not cleaned:
            return False
        self._set_title(cleaned, source)
        path = self._file.path
        if self._persist and path is not None and self._storage.exists(path):
            self._file.rewrite()
        return True

    def fork(self) -> tuple[str, str] | None:
        """Continue in a copy of this session (new id, ``parentSession`` = old id), written now,
        with a copy of the artifact folder. Returns ``(old file, new file)``."""
        old_file = self._file.path
        if not self._persist or old_file is None:
            return None
        old_id = self._session_id
        self._file.detach()
        self._session_id = new_session_id()
        title, title_source = self._header.get("title"), self._header.get("titleSource")
        self._header = build_header(
            self._session_id,
            self._cwd,
            old_id,
            self._session_name if title is None else title,
            self._title_source if title_source is None else title_source,
        )
        self._title_after_id = True
        self._leading = []
        self._artifacts = None
        new_file = self._new_file_path()
        self._file.write_to(new_file)
        write_terminal_breadcrumb(self._cwd, new_file, self._agent_dir)
        copy_artifacts_dir(old_file, new_file)
        return old_file, new_file

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Continue in a new session holding only the path to ``leaf_id`` (labels re-created)."""
        branch = self.get_branch(leaf_id)
        if not branch:
            raise EntryNotFoundError(leaf_id)
        kept: list[dict[str, Any]] = []
        dropped_labels: set[str] = set()
        for entry in branch:
            if entry.get("type") == "label":
                dropped_labels.add(entry["id"])
                continue
            if entry.get("parentId") in dropped_labels:
                # Skip over the dropped label so the history stays connected (compatibility:
                # Labels skipped when branching).
                entry = {**entry, "parentId": kept[-1]["id"] if kept else None}
            kept.append(entry)
        previous_file = self._file.path
        self._file.detach()
        self._new_header(previous_file if self._persist else None)
        self._entries = kept + self._recreated_labels(kept)
        self._rebuild_index()
        self._artifacts = None
        if not self._persist:
            return None
        path = self._file.path = self._new_file_path()
        self._file.rewrite()
        write_terminal_breadcrumb(self._cwd, path, self._agent_dir)
        return path

    def _recreated_labels(
        self, kept: builtins.list[dict[str, Any]]
    ) -> builtins.list[dict[str, Any]]:
        used = {entry["id"] for entry in kept}
        parent_id = kept[-1]["id"] if kept else None
        labels = []
        for target_id, label in self._labels.items():
            if target_id not in used:
                continue
            label_id = new_entry_id(used)
            used.add(label_id)
            labels.append(build_label_change(label_id, parent_id, target_id, label))
            parent_id = label_id
        return labels

    def move_to(self, new_cwd: str) -> None:
        """Move the session (file and artifact folder) to the default folder of ``new_cwd``."""
        resolved = os.path.abspath(new_cwd)
        if resolved == self._cwd:
            return
        new_dir = self._session_dir_for(resolved)
        had_file = False
        old_file = self._file.path
        if self._persist and old_file is not None:
            self._file.detach()
            new_file = os.path.join(new_dir, os.path.basename(old_file))
            had_file = self._storage.exists(old_file)
            if had_file:
                self._record_session_root(new_dir)  # its lines may reference blobs already
            self._move_files(old_file, new_file, had_file)
            self._file.path = new_file
            self._artifacts = None
        self._cwd = resolved
        self._session_dir = new_dir
        self._header["cwd"] = resolved
        if self._file.path is not None:
            if had_file or self._has_assistant:
                self._file.rewrite()
            write_terminal_breadcrumb(resolved, self._file.path, self._agent_dir)

    def _session_dir_for(self, cwd: str) -> str:
        """The folder for ``cwd``: beside the current one when that is a managed folder."""
        if not self._persist:
            return self._session_dir  # an in-memory session has no folder and never touches disk
        if os.path.basename(self._session_dir) == encode_cwd(self._cwd):
            directory = os.path.join(os.path.dirname(self._session_dir), encode_cwd(cwd))
            self._storage.ensure_dir(directory)
            return directory
        return get_default_session_dir(cwd, self._agent_dir_given)

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
        if self._file.path is None:
            return None
        if self._artifacts is None:
            self._artifacts = ArtifactManager(self._file.path)
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


def _session_dir_or_default(session_dir: str | None, cwd: str, agent_dir: str | None) -> str:
    return session_dir if session_dir is not None else get_default_session_dir(cwd, agent_dir)


def _agent_dir_for(session_dir: str, agent_dir: str | None) -> str:
    """The agent dir given, else the one the session folder lies in (paths.agent_dir_of)."""
    return agent_dir if agent_dir is not None else agent_dir_of(session_dir)


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
