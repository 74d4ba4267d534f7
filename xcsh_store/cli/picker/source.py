"""What the picker shows, asked of the index: the rows for what is typed, in either mode, and
the preview of a row. These are the picker's only calls to the index; they run in its worker
thread (worker.py), never in the one that draws, and hand back plain values (a listed session
reads some fields from the index on first use: that happens here too)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from xcsh_store.agents import UNREAD_TYPE
from xcsh_store.cli.output.render import MARK_CLOSE, MARK_OPEN, local_time, one_line
from xcsh_store.cli.output.shapes import ARCHIVED_MARK
from xcsh_store.index import (
    IndexedSession,
    PromptHit,
    PromptQuery,
    SearchQuery,
    SessionFilter,
    SessionIndex,
    SessionQuery,
    entry_summary,
    entry_text,
)

SESSIONS = "sessions"
PROMPTS = "prompts"
MODES = (SESSIONS, PROMPTS)

# Sessions listed at most: more than a screen holds, few enough to rank and draw at once.
ROW_LIMIT = 50
# Entries asked of the search for ROW_LIMIT sessions: a session often has several hits.
HIT_LIMIT = 100
# Entries of a session shown before the hit, and at most after it (more than a pane holds).
ENTRIES_BEFORE = 3
ENTRIES_AFTER = 30
# Sessions whose active branch is kept read (moving up and down among one session's rows).
BRANCHES_KEPT = 4


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the list: what Enter prints, what the line shows, and where it points."""

    value: str  # the session id (sessions) or the prompt (prompts)
    when: datetime | str | None
    cwd: str
    title: str
    text: str  # may hold the search's highlight marks (render.MARK_OPEN, MARK_CLOSE)
    agent: str
    path: str | None = None  # the session file, when the row has one
    entry_id: str | None = None  # the entry the row is about; None: the session's latest
    archived: bool = False  # its file is gone: the store's archive keeps the session


@dataclass(frozen=True, slots=True)
class PreviewEntry:
    kind: str
    text: str  # one line for the entries around the hit, the whole text for the hit
    hit: bool = False


@dataclass(frozen=True, slots=True)
class Preview:
    """A row in context: the session's (or the prompt's) facts, then entries around the hit."""

    title: str
    facts: tuple[str, ...]
    entries: tuple[PreviewEntry, ...] = ()
    note: str = ""
    hit_at: int = 0  # the position of the hit (or the first entry shown) in ``entries``


@dataclass
class PickSource:
    """The index the picker searches, with the ``agents`` filter it was given."""

    index: SessionIndex
    agents: Collection[str] = ()
    _branches: OrderedDict[str, list[dict[str, Any]]] = field(default_factory=OrderedDict)

    @property
    def _filter(self) -> SessionFilter:
        return SessionFilter(agents=tuple(self.agents))

    def rows(self, mode: str, query: str) -> list[Row]:
        """The rows for ``query`` (blank: the newest) in ``mode``. SearchQueryError when the
        session search finds nothing to search for in it (punctuation only)."""
        if mode == PROMPTS:
            return self._prompt_rows(query)
        if not query.strip():
            listing = SessionQuery(filter=self._filter, limit=ROW_LIMIT)
            return [_session_row(session) for session in self.index.sessions(listing)]
        hits = self.index.hits(
            SearchQuery(
                text=query, filter=self._filter, limit=HIT_LIMIT, highlight=(MARK_OPEN, MARK_CLOSE)
            )
        )
        best: dict[int, Row] = {}
        archived = self._archived_paths() if hits else set()
        for hit in hits:  # best first: a session's first hit is its best
            if hit.file_id not in best and len(best) < ROW_LIMIT:
                best[hit.file_id] = Row(
                    value=hit.session_id, when=hit.timestamp, cwd=hit.cwd or "",
                    title=one_line(hit.title), text=one_line(hit.snippet), agent=hit.agent,
                    path=hit.path, entry_id=hit.entry_id, archived=hit.path in archived,
                )  # fmt: skip
        return list(best.values())

    def _archived_paths(self) -> set[str]:
        """The paths of the sessions whose file is gone (a search hit does not say it)."""
        query = SessionQuery(filter=SessionFilter(agents=self._filter.agents, archived=True))
        return {session.path for session in self.index.sessions(query)}

    def _prompt_rows(self, query: str) -> list[Row]:
        asked = PromptQuery(text=query if query.strip() else None, limit=ROW_LIMIT,
                            agents=self._filter.agents)  # fmt: skip
        return [_prompt_row(hit) for hit in self.index.prompts(asked)]

    def preview(self, row: Row) -> Preview:
        """``row`` in context: the entries of its session around the row's entry (on the
        branch the entry is on), or the prompt alone when it has no session."""
        if row.path is None:
            facts: tuple[str, ...] = (row.cwd, local_time(row.when), row.agent)
            return Preview("prompt", facts, (PreviewEntry("prompt", row.value, hit=True),))
        info = self.index.find_session(row.path)
        facts = (
            info.cwd, local_time(info.modified), info.agent,
            f"{info.message_count:,} messages", info.session_id,
            f"{ARCHIVED_MARK} archived" if info.source_gone_at else "",
        )  # fmt: skip
        title = one_line(info.title) or one_line(info.first_message)
        branch = self._active_branch(info)
        ids = [entry.get("id") for entry in branch]
        note = ""
        if row.entry_id is None:
            at = 0  # a session without a hit: how it starts says what it is about
        elif row.entry_id in ids:
            at = ids.index(row.entry_id)
        else:
            branch = self.index.branch_entries(info, row.entry_id)
            at = len(branch) - 1
            note = "on a side branch"
        # The records an agent keeps for itself, with nothing to read, are not shown (show
        # --all shows them); the entry of a hit always is.
        hit = branch[at] if row.entry_id is not None and branch else None
        kept = [entry for entry in branch if entry is hit or _readable(entry)]
        at = next((place for place, entry in enumerate(kept) if entry is hit), 0)
        start = max(0, at - ENTRIES_BEFORE)
        shown = tuple(
            _preview_entry(entry, hit=position == at and row.entry_id is not None)
            for position, entry in enumerate(kept[start : at + ENTRIES_AFTER + 1], start)
        )
        return Preview(title, facts, shown, note, hit_at=at - start)

    def interrupt(self) -> None:
        """Stop the search that runs in another thread now (it raises SQLite's interrupt)."""
        self.index.connection.interrupt()

    def _active_branch(self, info: IndexedSession) -> list[dict[str, Any]]:
        entries = self._branches.pop(info.path, None)
        if entries is None:
            entries = self.index.branch_entries(info)
        self._branches[info.path] = entries
        while len(self._branches) > BRANCHES_KEPT:
            self._branches.popitem(last=False)
        return entries


def _readable(entry: dict[str, Any]) -> bool:
    """Whether an entry has something to read (an agent's own records have not), or says that
    its plugin could not read it."""
    kind, text = entry_summary(entry)
    return bool(text) or kind == UNREAD_TYPE


def _session_row(session: IndexedSession) -> Row:
    return Row(
        value=session.session_id, when=session.modified, cwd=session.cwd,
        title=one_line(session.title), text=one_line(session.first_message),
        agent=session.agent, path=session.path, archived=session.source_gone_at is not None,
    )  # fmt: skip


def _prompt_row(hit: PromptHit) -> Row:
    return Row(
        value=hit.prompt, when=datetime.fromtimestamp(hit.created_at, UTC), cwd=hit.cwd or "",
        title="", text=one_line(hit.prompt), agent=hit.agent, path=hit.session_path,
        entry_id=hit.entry_id,
    )  # fmt: skip


def _preview_entry(entry: dict[str, Any], hit: bool) -> PreviewEntry:
    kind, summary = entry_summary(entry)
    return PreviewEntry(kind, entry_text(entry) if hit else summary, hit)
