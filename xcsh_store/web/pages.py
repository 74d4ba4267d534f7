"""What each page of the web app shows, as plain data for its template: the sessions list, the
search hits, a window of one branch of a session with its branch points and folded branches,
a context, and the usage charts. Nothing here writes HTML: the templates escape everything."""

from __future__ import annotations

import base64
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from xcsh_store.agents import UNREAD_TYPE
from xcsh_store.errors import XcshStoreError
from xcsh_store.format.blobs import parse_blob_ref
from xcsh_store.format.tool_calls import FOLDED_DIFF_LINES, diff_size, exit_status, tool_view
from xcsh_store.index import (
    ArchivedSources,
    BillingBlock,
    EntryUsage,
    IndexedEntry,
    IndexedSession,
    QuotaWindow,
    SessionFilter,
    SessionIndex,
    SessionQuery,
    SessionTree,
    UsageRow,
    entry_summary,
    labels_of,
    message_summary,
    read_entries,
    usage_by_response,
)
from xcsh_store.times import iso_millis, parse_iso

SESSIONS_PAGE = 50
# Characters of a one-line text shown (a title, a first message, a label, a name, a snippet):
# a session can hold megabytes in any of them.
LINE_SHOWN = 300

SESSION_SORTS = {
    "modified": lambda session: session.modified,
    "created": lambda session: session.created,
    "title": lambda session: (session.title or session.first_message or "").lower(),
    "messages": lambda session: session.message_count,
    "cost": lambda session: session.cost,
}


def shorten(text: object, limit: int = LINE_SHOWN) -> str:
    """``text`` (None: empty) up to ``limit`` characters, with a mark where it was cut."""
    whole = "" if text is None else str(text)
    return whole if len(whole) <= limit else whole[:limit] + " …"


# -- sessions list --------------------------------------------------------------------------


@dataclass
class SessionsPage:
    sessions: list[IndexedSession]
    total: int
    page: int
    pages: int


def sessions_page(
    index: SessionIndex,
    filters: SessionFilter,
    *,
    sort: str = "modified",
    descending: bool = True,
    page: int = 1,
) -> SessionsPage:
    """The sessions ``ls`` lists with ``filters``, sorted, one page.

    The page's sessions come from a listing of the sessions up to that page, in an order the
    index keeps (newest, created, title): their other fields (path, project, created) are then
    read for those sessions only, not for all of them.
    """
    listed = index.sessions(SessionQuery(filter=filters))
    pages = max(1, -(-len(listed) // SESSIONS_PAGE))
    page = min(max(page, 1), pages)
    start = (page - 1) * SESSIONS_PAGE
    if (sort, descending) in (("modified", True), ("created", True), ("title", False)):
        shown = index.sessions(
            SessionQuery(filter=filters, order=sort, limit=start + SESSIONS_PAGE)
        )[start:]
    else:
        listed.sort(key=SESSION_SORTS[sort], reverse=descending)
        shown = listed[start : start + SESSIONS_PAGE]
    return SessionsPage(shown, len(listed), page, pages)


def since_of(age: str) -> datetime | None:
    """``1d``, ``7d``, ``30d``, ``365d``: that long ago; anything else: no bound."""
    days = {"1d": 1, "7d": 7, "30d": 30, "365d": 365}.get(age)
    return None if days is None else datetime.now(UTC) - timedelta(days=days)


# -- search ---------------------------------------------------------------------------------

# Highlight marks no session text can hold (private-use characters), replaced by <mark> after
# the snippet is escaped: the template splits on them and escapes every piece.
MARK_START, MARK_END = "\ue000", "\ue001"


def snippet_pieces(snippet: str) -> list[tuple[bool, str]]:
    """(highlighted, text) pieces of a snippet made with MARK_START/MARK_END, cut as a line is
    (a snippet is a few words, but one word can be megabytes long)."""
    pieces: list[tuple[bool, str]] = []
    for number, part in enumerate(re.split(f"[{MARK_START}{MARK_END}]", shorten(snippet))):
        if part:
            pieces.append((number % 2 == 1, part))
    return pieces


@dataclass
class HitGroup:
    """The hits of one session file, in rank order; groups in the rank of their best hit."""

    path: str
    title: str
    agent: str
    project: str
    hits: list[Any]


def grouped_hits(hits: list[Any]) -> list[HitGroup]:
    """``hits`` (best first) grouped by session file, the group of the best hit first."""
    groups: dict[str, HitGroup] = {}
    for hit in hits:
        group = groups.get(hit.path)
        if group is None:
            title = hit.title or hit.session_id
            group = groups[hit.path] = HitGroup(hit.path, title, hit.agent, hit.cwd or "", [])
        group.hits.append(hit)
    return list(groups.values())


def project_name(cwd: str | None, parts: int = 2) -> str:
    """A project as people name it: the last ``parts`` folders of its cwd (``src/api``)."""
    if not cwd:
        return ""
    folders = [folder for folder in cwd.replace("\\", "/").split("/") if folder]
    return "/".join(folders[-parts:]) or cwd


def human_time(timestamp: str | None) -> str:
    """A timestamp to the minute, in UTC (the page's script shows it in the reader's zone)."""
    moment = parse_iso(timestamp) if timestamp else None
    if moment is None:
        return shorten(timestamp, 40)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def duration_text(span: timedelta) -> str:
    """``2h 05m``, ``12m 30s``, ``45s``."""
    seconds = int(span.total_seconds())
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"


def count_text(number: float | None) -> str:
    """``1.2M``, ``34k``, ``512``: a count to read at a glance."""
    value = float(number or 0)
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.1f}{suffix}"
    return f"{value:.0f}"


# -- one session ----------------------------------------------------------------------------

# Every page is bounded in bytes, whatever the session holds: a window reads at most WINDOW
# entries and WINDOW_BYTES of their lines (a longer single line alone), an entry shows at most
# ENTRY_SHOWN characters of its text and links to its entry page for the rest, and a line longer
# than LINE_READ_LIMIT is not read at all on the session page (its entry page reads it alone).
WINDOW = 100
WINDOW_BYTES = 1 << 20
LINE_READ_LIMIT = 4 << 20
ENTRY_SHOWN = 20_000
# Characters of an entry's text one part of its entry page shows.
ENTRY_PART = 200_000
# Entries of a folded (abandoned) branch shown when it is opened, the folded branches shown at
# one branch point, and the bytes of lines the folded entries of one page read in all; the
# rest is one click away ("Show this branch").
FOLDED_SHOWN = 20
FOLDED_BRANCHES = 20
FOLDED_BYTES = 256 << 10
# Images shown: raster types only (an SVG can carry script).
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
# A tool's output longer than this many lines is folded, its first HEAD_LINES shown.
FOLD_LINES = 20
HEAD_LINES = 8
# The roles whose text is a program's output (shown as it is, not as markdown).
OUTPUT_ROLES = {"toolResult", "bashExecution", "pythonExecution"}
_INTERNAL_URL = re.compile(r"\b(?:artifact|agent)://[\w.\-/%?=&#:]+")


@dataclass
class Block:
    """One piece of an entry's content: text, thinking, a tool call, an image."""

    kind: str
    text: str = ""
    name: str = ""
    image: str | None = None  # a URL of this server the page loads the image from
    cut: bool = False  # a part of its text only (shown as it is: markdown cut is not markdown)

    @property
    def links(self) -> list[str]:
        """The artifact:// and agent:// URLs in the text, each once."""
        return sorted(set(_INTERNAL_URL.findall(self.text))) if "://" in self.text else []

    @property
    def length(self) -> int:
        """Its place in the entry's text: its characters, one for an image or an empty block."""
        return 1 if self.image is not None else max(len(self.text), 1)

    @property
    def line_count(self) -> int:
        return self.text.count("\n") + 1

    @property
    def folds(self) -> bool:
        """Whether the page folds it: a tool's output of more than FOLD_LINES lines, a diff of
        more than FOLDED_DIFF_LINES (as exports fold it)."""
        if self.kind == "diff":
            return self.line_count > FOLDED_DIFF_LINES
        return self.kind == "output" and self.line_count > FOLD_LINES

    @property
    def size(self) -> str:
        """What a diff adds and removes (``Diff: +12 −3 lines``)."""
        return diff_size(self.text)

    @property
    def described(self) -> str:
        """A command's description (its title after the tool's name)."""
        return self.name.partition(": ")[2]

    @property
    def head(self) -> str:
        """Its first HEAD_LINES lines, shown while it is folded."""
        return "\n".join(self.text.split("\n", HEAD_LINES)[:HEAD_LINES])


@dataclass
class ShownEntry:
    id: str
    parent_id: str | None
    type: str
    kind: str
    timestamp: str | None
    model: str | None
    summary: str
    blocks: list[Block]
    role: str = ""  # a message's role (user, assistant, toolResult, ...), else empty
    label: str | None = None
    siblings: int = 0  # children of this entry (a branch point has more than one)
    folded: list[FoldedBranch] = field(default_factory=list)
    more: int = 0  # characters of its text not shown: its entry page shows them
    unread: int = 0  # the bytes of its line, when the line is too long to read here
    branches_not_shown: int = 0  # folded branches past FOLDED_BRANCHES
    usage: EntryUsage | None = None  # an assistant message's response: tokens and cost

    @property
    def agents_own(self) -> bool:
        """A record the agent keeps for itself with nothing to read (Codex's session_meta,
        turn_context, event_msg, an assistant turn of encrypted reasoning): left out of the
        page unless asked for, as ``show`` does; never a branch point, a labelled entry or one
        its plugin could not read."""
        shown = self.blocks or self.summary or self.folded or self.label or self.usage
        cut_or_branched = self.unread or self.more or self.siblings > 1
        return not (shown or cut_or_branched) and self.type != UNREAD_TYPE


@dataclass
class FoldedBranch:
    """A branch that leaves the shown path at a branch point: its first entries, its leaf."""

    first_id: str
    leaf_id: str
    length: int
    entries: list[ShownEntry]


@dataclass
class SessionPage:
    session: IndexedSession
    leaf_id: str | None
    total: int
    start: int
    entries: list[ShownEntry]
    branch_points: int
    leaves: int
    models: list[str] = field(default_factory=list)
    parent: IndexedSession | None = None
    subagents: list[IndexedSession] = field(default_factory=list)
    # Where the window holding the branch's newest entry starts (the "newest" link).
    newest_start: int = 0

    @property
    def resume(self) -> str | None:
        """The agent's own command that continues the session in its folder (None: none)."""
        from xcsh_store.agents.registry import resume_command

        info = self.session
        command = resume_command(info.agent, info.session_id, info.cwd or None, info.path)
        return None if command is None else command.shell()

    @property
    def duration(self) -> timedelta | None:
        """From its start to its last activity; None when its start is unknown."""
        started = self.session.started
        return None if started is None else max(self.session.modified - started, timedelta(0))

    @property
    def end(self) -> int:
        return self.start + len(self.entries)

    @property
    def agents_own(self) -> int:
        """How many of the window's entries are the agent's own records (ShownEntry.agents_own)."""
        return sum(entry.agents_own for entry in self.entries)


def branch_of(tree: SessionTree, leaf_id: str | None) -> list[IndexedEntry]:
    """Root -> leaf rows of the branch ending at ``leaf_id``, walked up the tree already read
    (as ``SessionIndex.branch`` does in SQL: stopping at an id met before)."""
    path: list[IndexedEntry] = []
    seen: set[str] = set()
    while leaf_id is not None and leaf_id in tree.entries and leaf_id not in seen:
        seen.add(leaf_id)
        path.append(tree.entries[leaf_id])
        leaf_id = tree.entries[leaf_id].parent_id
    path.reverse()
    return path


def newest_chain(tree: SessionTree, entry_id: str) -> list[str]:
    """``entry_id`` and the entries below it reached by always taking the newest child, down
    to a leaf (or to an id met before, in a damaged file)."""
    chain, seen = [entry_id], {entry_id}
    while tree.children.get(chain[-1]):
        following = tree.children[chain[-1]][-1]
        if following in seen:
            break
        seen.add(following)
        chain.append(following)
    return chain


class ReadBudget:
    """Bytes of session lines a page may still read."""

    def __init__(self, size: int) -> None:
        self.left = size

    def take(self, rows: list[IndexedEntry], at_least_one: bool = False) -> list[IndexedEntry]:
        """The leading ``rows`` whose lines fit in what is left (the first one, whatever its
        size, with ``at_least_one``), taken from the budget. A line longer than LINE_READ_LIMIT
        costs nothing: the page does not read it."""
        taken: list[IndexedEntry] = []
        for row in rows:
            cost = row.length if row.length <= LINE_READ_LIMIT else 0
            if cost > self.left and not (at_least_one and not taken):
                break
            self.left -= cost
            taken.append(row)
        return taken


def window_start(branch: list[IndexedEntry], start: int | None, target: int | None) -> int:
    """Where the window of ``branch`` starts: at ``start`` when given; for ``target``, at the
    multiple of WINDOW before it, or at ``target`` itself when that window's bytes end before
    it; by default at the branch's start (a session reads from its beginning)."""
    last = max(0, len(branch) - 1)
    if target is not None:
        aligned = target - target % WINDOW
        reach = aligned + len(ReadBudget(WINDOW_BYTES).take(branch[aligned : target + 1], True))
        return aligned if reach > target else target
    return 0 if start is None else min(max(0, start), last)


def newest_window_start(branch: list[IndexedEntry]) -> int:
    """Where the window that shows the newest entry of ``branch`` starts: the last multiple of
    WINDOW, or later when the window from there would end before the branch does."""
    last = max(0, len(branch) - 1)
    aligned = last // WINDOW * WINDOW
    tail = ReadBudget(WINDOW_BYTES).take(branch[aligned:][::-1], True)
    return len(branch) - len(tail) if len(tail) < len(branch) - aligned else aligned


def session_page(
    index: SessionIndex,
    session: IndexedSession,
    *,
    leaf_id: str | None = None,
    entry_id: str | None = None,
    start: int | None = None,
) -> SessionPage:
    """A window of the branch ending at ``leaf_id`` (default: the session's last entry); the
    window holds ``entry_id`` when given (a search hit off that branch picks the newest leaf
    below it), else starts at ``start`` (default: the branch's first entry). Only the lines of the
    window, of the folded branches' first entries and of the labels are read from the file."""
    tree = index.tree(session)
    if entry_id is not None and entry_id in tree.entries and leaf_id is None:
        on_active = entry_id in {row.id for row in branch_of(tree, session.last_entry_id)}
        leaf_id = None if on_active else newest_chain(tree, entry_id)[-1]
    leaf = leaf_id if leaf_id in tree.entries else session.last_entry_id
    branch = branch_of(tree, leaf)
    target = None
    if entry_id is not None:
        target = next((n for n, row in enumerate(branch) if row.id == entry_id), 0)
    start = window_start(branch, start, target)
    window = ReadBudget(WINDOW_BYTES).take(branch[start : start + WINDOW], at_least_one=True)
    labels = _labels(session, tree, index.archived_sources)
    on_path = {row.id for row in branch}
    shown = _shown(session, window, tree, labels, index.archived_sources)
    responses = [(entry.id, entry.kind == "assistant") for entry in shown]
    usage = usage_by_response(responses, [True] * len(shown), index.entry_usage(session))
    for entry in shown:
        entry.usage = usage.get(entry.id)
    folded_budget = ReadBudget(FOLDED_BYTES)
    for entry in shown:
        if entry.siblings > 1:
            _fold(entry, session, tree, on_path, labels, folded_budget, index.archived_sources)
    parent, subagents = _relatives(index, session)
    return SessionPage(
        session,
        leaf,
        len(branch),
        start,
        shown,
        len(tree.branch_points),
        len(tree.leaves),
        models=sorted({row.model for row in tree.entries.values() if row.model}),
        parent=parent,
        subagents=subagents,
        newest_start=newest_window_start(branch),
    )


# Subagents (and forks) a session header links to, at most.
SUBAGENTS_SHOWN = 50


def _relatives(
    index: SessionIndex, session: IndexedSession
) -> tuple[IndexedSession | None, list[IndexedSession]]:
    """The session ``session`` is a subagent or fork of, and its own subagents and forks."""
    parent = None
    if session.parent_session_id:
        try:
            parent = index.find_session(session.parent_session_id)
        except XcshStoreError:
            parent = None
    return parent, index.subagents(session, SUBAGENTS_SHOWN)


def _labels(session: IndexedSession, tree: SessionTree, archive: ArchivedSources) -> dict[str, str]:
    """Target id -> label, from the label entries alone (those of a sane size)."""
    rows = [
        row
        for row in tree.entries.values()
        if row.type == "label" and row.length <= LINE_READ_LIMIT
    ]
    return labels_of(read_entries(session.path, rows, None, session.agent, archive))


def _fold(
    point: ShownEntry,
    session: IndexedSession,
    tree: SessionTree,
    on_path: set[str | None],
    labels: dict[str, str],
    budget: ReadBudget,
    archive: ArchivedSources,
) -> None:
    """The branches leaving ``point`` off the shown path, each with its first entries (as
    many as the page's budget reads)."""
    leaving = [child for child in tree.children.get(point.id, []) if child not in on_path]
    for child in leaving[:FOLDED_BRANCHES]:
        chain = newest_chain(tree, child)
        rows = budget.take([tree.entries[entry_id] for entry_id in chain[:FOLDED_SHOWN]])
        point.folded.append(
            FoldedBranch(child, chain[-1], len(chain), _shown(session, rows, tree, labels, archive))
        )
    point.branches_not_shown = max(0, len(leaving) - FOLDED_BRANCHES)


def _shown(
    session: IndexedSession,
    rows: list[IndexedEntry],
    tree: SessionTree,
    labels: dict[str, str],
    archive: ArchivedSources,
) -> list[ShownEntry]:
    """The entries of ``rows`` as the session page shows them: read from the file (but lines
    too long to read here), their text cut at ENTRY_SHOWN characters."""
    readable = [row for row in rows if row.length <= LINE_READ_LIMIT]
    values = dict(
        zip(
            (row.pk for row in readable),
            read_entries(session.path, readable, None, session.agent, archive),
            strict=True,
        )
    )
    shown = []
    for row in rows:
        value = values.get(row.pk)
        if value is None:
            entry = _unread(row)
        else:
            entry = _entry(row, value, _blocks(session, value), 0, ENTRY_SHOWN)
        entry.label = labels.get(entry.id) if entry.id is not None else None
        entry.siblings = len(tree.children.get(row.id, [])) if row.id is not None else 0
        shown.append(entry)
    return shown


def _entry(
    row: IndexedEntry, value: dict[str, Any], blocks: list[Block], start: int, size: int
) -> ShownEntry:
    """An entry read from its line, showing characters ``start`` to ``start + size`` of the
    text of its ``blocks``."""
    kind, summary = entry_summary(value)
    shown, length = text_part(blocks, start, size)
    return ShownEntry(
        id=row.id or "",
        parent_id=row.parent_id,
        type=row.type or "?",
        kind=kind,
        timestamp=row.timestamp,
        model=row.model,
        summary=summary,
        blocks=shown,
        role=_role(value),
        more=max(0, length - start - size),
    )


def _role(entry: dict[str, Any]) -> str:
    message = entry.get("message") if entry.get("type") == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    return role if isinstance(role, str) else ""


def _unread(row: IndexedEntry) -> ShownEntry:
    """An entry whose line is too long to read for the session page: what the index knows."""
    return ShownEntry(
        id=row.id or "",
        parent_id=row.parent_id,
        type=row.type or "?",
        kind=row.role or row.type or "?",
        timestamp=row.timestamp,
        model=row.model,
        summary="",
        blocks=[],
        unread=row.length,
    )


def text_part(blocks: list[Block], start: int, size: int) -> tuple[list[Block], int]:
    """The blocks that hold characters ``start`` to ``start + size`` of an entry's text, each
    cut to that range; and the length of the whole text (see Block.length)."""
    shown = []
    position = 0
    for block in blocks:
        low, high = max(start - position, 0), min(start + size - position, block.length)
        if low < high:
            cut = block.image is None and (low > 0 or high < len(block.text))
            shown.append(replace(block, text=block.text[low:high], cut=True) if cut else block)
        position += block.length
    return shown, position


def _blocks(session: IndexedSession, entry: dict[str, Any]) -> list[Block]:
    """The readable pieces of an entry, whole: a message's content blocks, a summary's text."""
    kind = entry.get("type")
    if kind in ("compaction", "branch_summary") and isinstance(entry.get("summary"), str):
        return [Block("summary", entry["summary"])]
    message = entry.get("message") if kind == "message" else entry
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    text_kind = "output" if message.get("role") in OUTPUT_ROLES else "text"
    if message.get("role") == "bashExecution":
        return _shell_run(message)
    if isinstance(content, str):
        return [Block(text_kind, content, name=_exit_of(text_kind, content))]
    if not isinstance(content, list):
        return []
    blocks = []
    for number, part in enumerate(content):
        if not isinstance(part, dict):
            continue
        part_type = part.get("type")
        if part_type == "text" and isinstance(part.get("text"), str):
            blocks.append(Block(text_kind, part["text"], name=_exit_of(text_kind, part["text"])))
        elif part_type == "thinking" and isinstance(part.get("thinking"), str):
            blocks.append(Block("thinking", part["thinking"]))
        elif part_type == "toolCall":
            blocks.append(_call(str(part.get("name") or "tool"), part.get("arguments")))
        elif part_type == "image":
            blocks.append(_image_block(session, entry, number, part))
    return blocks


def _call(name: str, arguments: Any) -> Block:
    """A tool call as what it did (tool_calls.tool_view, as exports show it): a diff, a
    command under its description, a path and range; any other call as its arguments."""
    view = tool_view(name, arguments)
    kind = "tool" if view.kind == "call" else view.kind
    return Block(kind, view.text, view.title if view.kind != "call" else name)


def _exit_of(kind: str, text: str) -> str:
    """``exit 2``: the exit status a command's output states; empty for any other text."""
    status = exit_status(text) if kind == "output" else None
    return "" if status is None else f"exit {status}"


def _shell_run(message: dict[str, Any]) -> list[Block]:
    """A command the user ran (pi's ``!``): the command, then its output with its exit status."""
    command, output, code = (message.get(key) for key in ("command", "output", "exitCode"))
    command, output = (text if isinstance(text, str) else "" for text in (command, output))
    status = f"exit {code}" if isinstance(code, int) and not isinstance(code, bool) else ""
    return [Block("command", command, "bash"), Block("output", output, status)]


def _image_block(
    session: IndexedSession, entry: dict[str, Any], number: int, part: dict[str, Any]
) -> Block:
    """An image the page may show, by URL (never inline: a page's size does not grow with
    its images): the blob store's, or this server's /image route for base64 data in the
    line; raster types only, anything else is named, not shown."""
    mime = part.get("mimeType") if isinstance(part.get("mimeType"), str) else ""
    if mime not in IMAGE_TYPES:
        return Block("image", f"[{mime or 'image'} not shown]")
    blob = parse_blob_ref(part.get("data"))
    if blob is not None:
        return Block("image", mime, image=f"/blob/{blob}?type={mime}")
    where = {"path": session.path, "entry": entry.get("id") or "", "part": number}
    return Block("image", mime, image=f"/image?{urlencode(where)}")


# -- one entry ------------------------------------------------------------------------------


@dataclass
class EntryPage:
    """One entry of a session, its text a part of ENTRY_PART characters at a time."""

    session: IndexedSession
    entry: ShownEntry
    part: int  # 1, 2, ...
    parts: int


def _entry_value(
    index: SessionIndex, session: IndexedSession, entry_id: str
) -> tuple[IndexedEntry, dict[str, Any]]:
    """The index row of one entry (the end of its branch) and the entry read from its line."""
    row = index.branch(session, entry_id)[-1]
    (value,) = read_entries(session.path, [row], None, session.agent, index.archived_sources)
    return row, value


def entry_page(index: SessionIndex, session: IndexedSession, entry_id: str, part: int) -> EntryPage:
    """Part ``part`` (from 1; past the last: the last) of the text of the entry ``entry_id``."""
    row, value = _entry_value(index, session, entry_id)
    blocks = _blocks(session, value)
    parts = max(1, -(-sum(block.length for block in blocks) // ENTRY_PART))
    part = min(max(part, 1), parts)
    shown = _entry(row, value, blocks, (part - 1) * ENTRY_PART, ENTRY_PART)
    return EntryPage(session, shown, part, parts)


def entry_image(
    index: SessionIndex, session: IndexedSession, entry_id: str, number: int
) -> tuple[str, bytes] | None:
    """(type, bytes) of the base64 image that is part ``number`` of the entry's content; None
    when that part is no image of a raster type, or its data is not base64."""
    _row, value = _entry_value(index, session, entry_id)
    message = value.get("message") if value.get("type") == "message" else value
    content = message.get("content") if isinstance(message, dict) else None
    part = content[number] if isinstance(content, list) and number < len(content) else None
    if not isinstance(part, dict) or part.get("type") != "image":
        return None
    mime, data = part.get("mimeType"), part.get("data")
    if mime not in IMAGE_TYPES or not isinstance(data, str):
        return None
    try:
        return mime, base64.b64decode(data, validate=True)
    except ValueError:
        return None


# -- context --------------------------------------------------------------------------------

# Characters of text one context page shows in all (each message at most ENTRY_SHOWN).
CONTEXT_TEXT = 1_000_000


@dataclass
class ShownMessage:
    role: str
    text: str
    more: int  # characters not shown


@dataclass
class ContextPage:
    session: IndexedSession
    leaf_id: str | None
    models: dict[str, str]
    thinking_level: str
    messages: list[ShownMessage]
    total: int
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.messages)


def context_page(
    index: SessionIndex, session: IndexedSession, leaf_id: str | None, start: int = 0
) -> ContextPage:
    """The messages the model saw at ``leaf_id``, a window from ``start``: at most WINDOW
    messages, ENTRY_SHOWN characters each, CONTEXT_TEXT characters in all."""
    context = index.context(session, leaf_id)
    start = min(max(0, start), max(0, len(context.messages) - 1))
    messages: list[ShownMessage] = []
    shown = 0
    for message in context.messages[start : start + WINDOW]:
        if shown >= CONTEXT_TEXT:
            break
        role, text = message_summary(message)
        messages.append(ShownMessage(role, text[:ENTRY_SHOWN], max(0, len(text) - ENTRY_SHOWN)))
        shown += min(len(text), ENTRY_SHOWN)
    return ContextPage(
        session,
        leaf_id or session.last_entry_id,
        context.models,
        context.thinking_level,
        messages,
        len(context.messages),
        start,
    )


# -- usage ----------------------------------------------------------------------------------

CHART_WIDTH, CHART_HEIGHT = 760, 180
# The same chart drawn for a phone (the page shows one or the other by its width): scaled
# down, the wide one's labels would be too small to read.
NARROW_WIDTH = 360
# Room under the bars for their keys.
LABEL_HEIGHT = 22
# Chart text is 11px monospace: a character is 0.6em wide; reckoned a little wider, so that
# labels kept apart by this reckoning are apart on any screen.
CHAR_WIDTH = 7.0
LABEL_GAP = 10.0


@dataclass
class Bar:
    key: str
    value: float | None  # None: no price known for any of its entries
    x: float
    y: float
    width: float
    height: float
    label: str = ""  # the key shown by the bar; empty where it would crowd its neighbours
    label_x: float = 0.0
    anchor: str = "middle"  # the label's text-anchor: the first and last keep inside
    value_text: str = ""


@dataclass
class Chart:
    title: str
    metric: str
    bars: list[Bar]
    maximum: float
    kind: str = "time"  # time: columns over keys in order; ranked: rows, the largest last
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT + LABEL_HEIGHT
    narrow: Chart | None = None  # the same at NARROW_WIDTH, for a phone


def value_text(value: float | None, metric: str) -> str:
    if value is None:
        return "unpriced"
    return f"${value:,.2f}" if metric == "cost" else count_text(value)


def _labelled(bars: list[Bar]) -> None:
    """Labels for as many bars as fit without two touching: the first and the last always
    (anchored inside the chart, never clipped), others from the left where they fit."""
    if not bars:
        return

    def box(bar: Bar, anchor: str) -> tuple[float, float]:
        width = len(bar.key) * CHAR_WIDTH
        centre = bar.x + bar.width / 2
        if anchor == "start":
            return bar.x, bar.x + width
        if anchor == "end":
            return bar.x + bar.width - width, bar.x + bar.width
        return centre - width / 2, centre + width / 2

    first, last = bars[0], bars[-1]
    first_box = box(first, "start")
    last_box = box(last, "end") if last is not first else first_box
    chosen = [(first, "start", first_box)]
    right_end = first_box[1]
    for bar in bars[1:-1]:
        left, right = box(bar, "middle")
        if left >= right_end + LABEL_GAP and right + LABEL_GAP <= last_box[0]:
            chosen.append((bar, "middle", (left, right)))
            right_end = right
    if last is not first and last_box[0] >= first_box[1] + LABEL_GAP:
        chosen.append((last, "end", last_box))
    for bar, anchor, (left, right) in chosen:
        bar.label, bar.anchor = bar.key, anchor
        bar.label_x = {"start": left, "end": right}.get(anchor, (left + right) / 2)


def chart(
    title: str,
    rows: list[Any],
    metric: str,
    value_of: Callable[[Any], float | None],
    limit: int = 60,
    width: int = CHART_WIDTH,
) -> Chart:
    """A column chart over keys in order (days, windows): one column per row (the last
    ``limit``), scaled to the largest; an unpriced row's column is drawn full height in grey
    (its cost is not known, not zero). Drawn ``width`` wide, with its NARROW_WIDTH twin."""
    rows = rows[-limit:]
    values = [value_of(row) for row in rows]
    maximum = max((value for value in values if value is not None), default=0.0) or 1.0
    slot = width / max(len(rows), 1)
    bars = []
    for number, (row, value) in enumerate(zip(rows, values, strict=True)):
        if value == 0:  # an idle day of a time axis: its slot stays empty
            continue
        height = CHART_HEIGHT if value is None else float(value) / maximum * CHART_HEIGHT
        bars.append(
            Bar(
                key=shorten(str(row.key), 24),
                value=value,
                x=number * slot + 1,
                y=CHART_HEIGHT - height,
                width=max(slot - 2, 1),
                height=height,
                value_text=value_text(value, metric),
            )
        )
    _labelled(bars)
    narrow = None
    if width > NARROW_WIDTH:
        narrow = chart(title, rows, metric, value_of, limit, NARROW_WIDTH)
    return Chart(title, metric, bars, maximum, width=width, narrow=narrow)


@dataclass(frozen=True)
class IdlePeriod:
    """A day, week or month of a chart's time axis without usage (the index has no row)."""

    key: str
    entries: int = 0
    tokens: int = 0
    cost: float = 0.0


# A chart's time axis spans at most this many periods, up to the last one with usage.
PERIODS_ON_AXIS = {"day": 366, "week": 156, "month": 120}


def time_axis(rows: list[Any], by: str) -> list[Any]:
    """The rows of days, weeks or months (in order) as a time axis: every period from the
    first to the last with usage (at most the last PERIODS_ON_AXIS), an IdlePeriod where
    there was none, so that a gap of months shows as one. Rows of other keys (no
    timestamp) are left as they are."""
    from xcsh_store.index import next_period_key

    keys = [str(row.key) for row in rows]
    if by not in PERIODS_ON_AXIS or not keys or not all(k[:1].isdigit() for k in keys):
        return rows
    by_key = dict(zip(keys, rows, strict=True))
    axis: list[Any] = []
    key, last = min(keys), max(keys)
    try:
        while key <= last:
            axis.append(by_key.get(key) or IdlePeriod(key))
            key = next_period_key(key, by)
    except ValueError:  # a key that is no date
        return rows
    return axis[-PERIODS_ON_AXIS[by] :]


def ranked_chart(
    title: str,
    rows: list[Any],
    metric: str,
    value_of: Callable[[Any], float | None],
    limit: int = 20,
    name_of: Callable[[str], str] = str,
    labels_of: Callable[[list[str]], list[str]] = list,
) -> Chart:
    """The largest ``limit`` keys (models, projects), largest first, each a row of the page's
    list: its name (``labels_of`` the keys; cut by the page, whole on hover), a bar
    (``<meter>``: no inline style) and its value (``unpriced`` where no price is known, not a
    zero)."""

    def rank(row: Any) -> float:
        value = value_of(row)
        return -1.0 if value is None else value

    ranked = sorted(rows, key=rank)
    ranked = ranked[-limit:][::-1]
    values = [value_of(row) for row in ranked]
    maximum = max((value for value in values if value is not None), default=0.0) or 1.0
    bars = [
        Bar(
            key=shorten(name_of("?" if row.key is None else str(row.key))),
            value=value,
            x=0,
            y=0,
            width=0,
            height=0,
            value_text=value_text(value, metric),
        )
        for row, value in zip(ranked, values, strict=True)
    ]
    for bar, label in zip(bars, labels_of([bar.key for bar in bars]), strict=True):
        bar.label = label
    return Chart(title, metric, bars, maximum, kind="ranked")


def model_labels(keys: list[str]) -> list[str]:
    """``provider/model`` keys without their provider where that still tells them apart (at
    phone width the provider took all the room: every Anthropic model read "anthropic/clau…")."""
    bare = [key.split("/", 1)[-1] for key in keys]
    seen = Counter(bare)
    return [name if seen[name] == 1 else key for key, name in zip(keys, bare, strict=True)]


def block_row(block: BillingBlock) -> UsageRow:
    """A billing window as a usage row keyed by its start (UTC, to the minute)."""
    key = block.start.strftime("%m-%d %H:%M") + (" gap" if block.gap else "")
    return replace(block.usage, key=key)


def limit_rows(windows: list[QuotaWindow]) -> list[tuple[QuotaWindow, str]]:
    """Each usage-limit window of the usage page with its pace in words (quota's)."""
    return [
        (window, window.pace_words(lambda moment: human_time(iso_millis(moment)) if moment else ""))
        for window in windows
    ]
