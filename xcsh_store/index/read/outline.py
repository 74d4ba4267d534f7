"""A session laid out for reading: its tree with every entry, labels, the active path, a
one-line summary of any entry, and the whole text of one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from xcsh_store.format.entries import (
    SESSION_INFO_TYPE,
    TITLE_CHANGE_TYPE,
    model_change_model,
    session_info_name,
    title_change_name,
)
from xcsh_store.format.tool_calls import tool_gist, tool_view
from xcsh_store.index.model.paths import read_entries
from xcsh_store.index.read.tree import SessionTree
from xcsh_store.js import stringify

if TYPE_CHECKING:
    from xcsh_store.index.archive.sources import ArchivedSources
    from xcsh_store.index.model.paths import IndexedEntry
    from xcsh_store.index.read.sessions import IndexedSession


class SessionTrees(Protocol):
    """The questions an outline is made of, of the store that asks for it (``SessionIndex``;
    named here, not imported, as the store imports this module)."""

    def find_session(self, prefix: str) -> IndexedSession: ...

    def tree(self, session: str | int | IndexedSession) -> SessionTree: ...

    def branch(
        self, session: str | int | IndexedSession, leaf_id: str | None = None
    ) -> list[IndexedEntry]: ...

    @property
    def archived_sources(self) -> ArchivedSources: ...


# Long arguments (whole files) are cut; the summary is for one line.
SUMMARY_CHARS = 400


@dataclass
class SessionOutline:
    """Everything needed to draw a session: tree shape, entries by id, labels, chosen leaf."""

    session: IndexedSession
    tree: SessionTree
    entries: dict[str, dict[str, Any]]
    labels: dict[str, str] = field(default_factory=dict)
    leaf_id: str | None = None
    active_path: list[str] = field(default_factory=list)


def session_outline(
    index: SessionTrees, session: str | IndexedSession, leaf_id: str | None = None
) -> SessionOutline:
    """The whole tree of ``session`` with its entries read by byte offset (no blob loading).

    ``leaf_id`` (default: the session's last entry) selects the active path.
    """
    info = index.find_session(session) if isinstance(session, str) else session
    tree = index.tree(info)
    values = read_entries(
        info.path, list(tree.entries.values()), None, info.agent, index.archived_sources
    )
    entries = {row_id: value for row_id, value in zip(tree.entries, values, strict=True)}
    leaf = leaf_id or info.last_entry_id
    active = [row.id for row in index.branch(info, leaf)] if leaf else []
    return SessionOutline(
        session=info,
        tree=tree,
        entries=entries,
        labels=labels_of(entries.values()),
        leaf_id=leaf,
        active_path=[entry_id for entry_id in active if entry_id is not None],
    )


def labels_of(entries: Any) -> dict[str, str]:
    """Target id -> label, in file order: a later label entry replaces or clears an earlier one."""
    labels: dict[str, str] = {}
    for entry in entries:
        if entry.get("type") != "label" or not isinstance(entry.get("targetId"), str):
            continue
        label = entry.get("label")
        if isinstance(label, str) and label.strip():
            labels[entry["targetId"]] = label.strip()
        else:
            labels.pop(entry["targetId"], None)
    return labels


def _blocks_text(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in kinds and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind in kinds and isinstance(block.get("thinking"), str):
            parts.append(block["thinking"])
        elif kind == "image":
            parts.append("[image]")
    return " ".join(part for part in parts if part)


def _tool_calls(content: Any) -> list[str]:
    if not isinstance(content, list):
        return []
    calls = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            name = block.get("name")
            calls.append(
                tool_gist(name if isinstance(name, str) else "tool", block.get("arguments"))
            )
    return calls


def message_summary(message: dict[str, Any]) -> tuple[str, str]:
    role = message.get("role")
    role = role if isinstance(role, str) else "message"
    content = message.get("content")
    if role == "assistant":
        text = _blocks_text(content)
        calls = _tool_calls(content)
        if not text and not calls:
            thinking = _blocks_text(content, ("thinking",))
            text = f"(thinking) {thinking}" if thinking else ""
        if calls:
            text = (text + " " if text else "") + "→ " + ", ".join(calls)
        return "assistant", text
    if role == "toolResult":
        name = message.get("toolName") if isinstance(message.get("toolName"), str) else "tool"
        failed = " (error)" if message.get("isError") is True else ""
        return f"{name} result{failed}", _blocks_text(content)
    if role == "bashExecution":
        command = message.get("command") if isinstance(message.get("command"), str) else ""
        return "bash", f"$ {command}"
    if role == "custom":
        custom_type = message.get("customType")
        return (f"custom {custom_type}" if isinstance(custom_type, str) else "custom"), (
            _blocks_text(content)
        )
    summary = message.get("summary")
    if role in ("branchSummary", "compactionSummary") and isinstance(summary, str):
        return role, summary
    return role, _blocks_text(content)


def entry_summary(entry: dict[str, Any]) -> tuple[str, str]:
    """``(kind, text)``: what an entry is, and its gist on one line (a few hundred chars)."""
    kind, text = _gist(entry)
    text = " ".join(text.split())
    return kind, text[:SUMMARY_CHARS]


def entry_text(entry: dict[str, Any]) -> str:
    """The whole of what an entry says, for reading it (not one line): each block of a
    message on its own (text, thinking marked, a tool call as what it did: an edit's diff, a
    command, a read's path and range, any other call's arguments as JSON; an image as
    ``[image]``), a bash or Python run with its output, a summary whole; any other entry as
    its gist, uncut."""
    message = entry.get("message") if entry.get("type") == "message" else None
    if entry.get("type") == "compaction" and isinstance(entry.get("summary"), str):
        return entry["summary"]
    if not isinstance(message, dict):
        return _gist(entry)[1]
    role = message.get("role")
    parts: list[str] = []
    if role == "bashExecution":
        parts.append(f"$ {_text_field(message, 'command')}")
    elif role == "pythonExecution":
        parts.append(_text_field(message, "code"))
    elif role in ("branchSummary", "compactionSummary"):
        parts.append(_text_field(message, "summary"))
    parts += _whole_blocks(message.get("content"))
    if role in ("bashExecution", "pythonExecution"):
        parts.append(_text_field(message, "output"))
    return "\n\n".join(part for part in parts if part)


def _text_field(value: dict[str, Any], key: str) -> str:
    text = value.get(key)
    return text if isinstance(text, str) else ""


def _whole_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_text_field(block, "text"))
        elif kind == "thinking":
            parts.append(f"(thinking) {_text_field(block, 'thinking')}")
        elif kind == "toolCall":
            name = block.get("name")
            parts.append(
                _whole_call(name if isinstance(name, str) else "tool", block.get("arguments"))
            )
        elif kind == "image":
            parts.append("[image]")
    return parts


def _whole_call(name: str, arguments: Any) -> str:
    """A tool call whole, as what it did (tool_calls.tool_view): an edit's diff under its
    title, a command under its description, a read's path and range; any other call as its
    arguments, in JSON."""
    view = tool_view(name, arguments)
    if view.kind == "diff":
        return f"→ {view.title}\n{view.text.rstrip()}"
    if view.kind == "command":
        return f"→ {view.title}\n$ {view.text}"
    if view.kind == "read":
        return f"→ {view.title} {view.text}"
    return f"→ {name} {stringify(arguments).decode()}"


def _gist(entry: dict[str, Any]) -> tuple[str, str]:
    """``(kind, text)`` of :func:`entry_summary`, before it is made one line and cut."""
    kind = entry.get("type")
    kind = kind if isinstance(kind, str) else "?"
    text = ""
    if kind == "message" and isinstance(entry.get("message"), dict):
        kind, text = message_summary(entry["message"])
    elif kind == "thinking_level_change":
        kind, text = "thinking level", str(entry.get("thinkingLevel") or "off")
    elif kind == "model_change":
        model = model_change_model(entry) or ""
        role = entry.get("role")
        kind, text = "model", f"{model}" + (f" (as {role})" if role else "")
    elif kind == "compaction":
        summary = entry.get("shortSummary") or entry.get("summary") or ""
        before = entry.get("tokensBefore")
        suffix = f" ({before:,} tokens before)" if isinstance(before, int) else ""
        text = f"{summary}{suffix}"
    elif kind == "branch_summary":
        kind, text = "branch summary", str(entry.get("summary") or "")
    elif kind in ("custom", "custom_message"):
        custom_type = entry.get("customType")
        kind = f"{kind} {custom_type}" if isinstance(custom_type, str) else kind
        text = _blocks_text(entry.get("content")) if entry["type"] == "custom_message" else ""
    elif kind == "label":
        label = entry.get("label")
        target = entry.get("targetId")
        text = f"{label!r} on {target}" if label else f"cleared on {target}"
    elif kind == "ttsr_injection":
        rules = entry.get("injectedRules")
        kind, text = "rules", ", ".join(map(str, rules)) if isinstance(rules, list) else ""
    elif kind == "session_init":
        kind, text = "session init", str(entry.get("task") or "")
    elif kind == SESSION_INFO_TYPE:
        kind, text = "session name", session_info_name(entry) or ""
    elif kind == TITLE_CHANGE_TYPE:
        renamed = title_change_name(entry)
        kind, text = "session name", "" if renamed is None else renamed[0]
    elif kind == "mode_change":
        kind, text = "mode", str(entry.get("mode") or "")
    return kind, text
