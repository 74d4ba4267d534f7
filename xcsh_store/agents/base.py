"""What a reader of another agent's session files gives the index: each JSON object of a line as
an entry of the xcsh entry model, and what the file says of its session so far.

A reader is one module per format (``claude.py``, ``codex.py``). It never opens a file: the
index reads the bytes (read-only) and hands it one parsed object at a time, in file order, and
once more, alone, when it shows the text of a hit. So an entry's searchable text depends on its
line alone; only usage, titles and session facts may use what earlier lines said.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(slots=True)
class SessionFacts:
    """What the lines read so far say of their session (a reader fills in what it learns)."""

    path: str
    session_id: str | None = None
    cwd: str | None = None
    created_at: str | None = None
    # The parent session's file (a Claude subagent's) and id (a subagent's, a fork's).
    parent_session: str | None = None
    parent_session_id: str | None = None
    # Codex: the second of the fork's creation; lines of that second are the parent's history
    # replayed into the fork (their usage was counted in the parent).
    replay_second: str | None = None
    # The model of the current turn (Codex names it in turn_context lines, not in responses).
    model: str | None = None


@dataclass(slots=True)
class AgentEntry:
    """One object of a line as the index stores it."""

    # In the xcsh entry model (format/entries.py): ``{"type": "message", "id", "parentId",
    # "timestamp", "message": {"role", "content", "model", "provider", "usage"}}``, or the
    # agent's own type for records that add no text (``progress``, ``file-history-snapshot``).
    entry: dict[str, Any]
    # Lines with the same key report one model response; the last one's usage counts.
    usage_key: str | None = None
    # A title the line gives its session (the last one wins), and who gave it.
    title: str | None = None
    title_source: str | None = None
    # (leaf entry id, summary): a summary of the conversation that ends at that entry, which
    # may be another file's (Claude Code's summary lines); it titles the session holding it.
    leaf_summary: tuple[str, str] | None = None
    # The model of a response (or of the turn a usage figure is of), and its provider.
    model: str | None = None
    provider: str | None = None
    # (input, output, cache read, cache write, premium requests, cost): what the line adds to
    # its session; the cost is an estimate, None for a model without a price.
    usage: tuple[Any, ...] | None = None
    # A rollback of the last this many user turns (Codex ``thread_rolled_back``): this entry
    # and those after it continue from where the first of those turns began, a new branch.
    rewind_turns: int | None = None
    # The agent's qualifier of the entry's type (a system line's subtype, ``sidechain``),
    # kept in the custom_type column.
    qualifier: str | None = None


def text_blocks(texts: Iterable[str]) -> list[dict[str, str]]:
    """Message content of the xcsh model: one ``text`` block per string."""
    return [{"type": "text", "text": text} for text in texts]


class AgentReader(Protocol):
    """One agent's JSONL format."""

    # The sessions.agent value of its files.
    name: str
    # False when the format has no entry ids: entries then get deterministic ids in file
    # order, each the child of the entry before it (unless it names its parent).
    has_ids: bool

    def recognizes(self, value: dict[str, Any]) -> bool:
        """Whether the first object of a file is this agent's."""

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        """The object as an entry; updates ``session`` with what the object says of it."""

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        """A line of the agent's prompt history file (``history.jsonl``), None when it holds
        no prompt."""


@dataclass(frozen=True, slots=True)
class HistoryPrompt:
    prompt: str
    created_at: float  # seconds since the epoch
    cwd: str | None
    session_id: str | None


def text_of(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def number(value: Any) -> int:
    """A token count (0 when missing or not a number; a bool is not one)."""
    return value if type(value) in (int, float) else 0
