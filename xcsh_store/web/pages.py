"""What each page of the web app shows, as plain data for its template: the sessions list, the
search hits, a window of one branch of a session with its branch points and folded branches,
a context, and the usage charts. Nothing here writes HTML: the templates escape everything."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from xcsh_store.format.blobs import parse_blob_ref
from xcsh_store.index import (
    IndexedEntry,
    IndexedSession,
    SessionIndex,
    SessionTree,
    entry_summary,
    labels_of,
    message_summary,
    read_entries,
    usage_total,
)

# Entries of a branch shown at once: a session of 50,000 entries is read a window at a time.
WINDOW = 100
SESSIONS_PAGE = 50
# Entries of a folded (abandoned) branch shown when it is opened; the rest is one click away.
FOLDED_SHOWN = 20
TEXT_SHOWN = 20_000
# Images shown inline: raster types only (an SVG can carry script).
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
_INTERNAL_URL = re.compile(r"\b(?:artifact|agent)://[\w.\-/%?=&#:]+")

SESSION_SORTS = {
    "modified": lambda session: session.modified,
    "created": lambda session: session.created,
    "title": lambda session: (session.title or session.first_message or "").lower(),
    "messages": lambda session: session.message_count,
    "cost": lambda session: session.cost,
}


# -- sessions list --------------------------------------------------------------------------


@dataclass
class SessionsPage:
    sessions: list[IndexedSession]
    total: int
    page: int
    pages: int


def sessions_page(
    index: SessionIndex,
    *,
    project: str | None = None,
    cwd: str | None = None,
    agents: list[str] | None = None,
    since: datetime | None = None,
    sort: str = "modified",
    descending: bool = True,
    page: int = 1,
) -> SessionsPage:
    """The sessions ``ls`` lists (project, cwd, agents), modified since ``since``, sorted, one page.

    The page's sessions come from a listing of the sessions up to that page, in an order the
    index keeps (newest, created, title): their other fields (path, project, created) are then
    read for those sessions only, not for all of them.
    """
    listed = index.list_sessions(cwd=cwd, project=project, agents=agents)
    if since is not None:
        listed = [session for session in listed if session.modified >= since]
    pages = max(1, -(-len(listed) // SESSIONS_PAGE))
    page = min(max(page, 1), pages)
    start = (page - 1) * SESSIONS_PAGE
    # Newest first, those modified since are a prefix of the index's own order.
    kept_order = (sort, descending) in (("modified", True), ("created", True), ("title", False))
    if kept_order and (since is None or sort == "modified"):
        upto = index.list_sessions(
            cwd=cwd, project=project, limit=start + SESSIONS_PAGE, order=sort, agents=agents
        )
        shown = [session for session in upto[start:] if since is None or session.modified >= since]
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
    """(highlighted, text) pieces of a snippet made with MARK_START/MARK_END."""
    pieces: list[tuple[bool, str]] = []
    for number, part in enumerate(re.split(f"[{MARK_START}{MARK_END}]", snippet)):
        if part:
            pieces.append((number % 2 == 1, part))
    return pieces


# -- one session ----------------------------------------------------------------------------


@dataclass
class Block:
    """One piece of an entry's content: text, thinking, a tool call, an image, a link."""

    kind: str
    text: str = ""
    name: str = ""
    image: str | None = None  # a URL the page may load (our own /blob/..., or data:)
    links: list[str] = field(default_factory=list)


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
    label: str | None = None
    siblings: int = 0  # children of this entry (a branch point has more than one)
    folded: list[FoldedBranch] = field(default_factory=list)


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

    @property
    def end(self) -> int:
        return self.start + len(self.entries)


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
    below it), else starts at ``start`` (default: the last window). Only the entries of the
    window, of the folded branches' first entries and of the labels are read from the file."""
    tree = index.tree(session)
    if entry_id is not None and entry_id in tree.entries and leaf_id is None:
        on_active = entry_id in {row.id for row in branch_of(tree, session.last_entry_id)}
        leaf_id = None if on_active else newest_chain(tree, entry_id)[-1]
    leaf = leaf_id if leaf_id in tree.entries else session.last_entry_id
    branch = branch_of(tree, leaf)
    if entry_id is not None:
        where = next((n for n, row in enumerate(branch) if row.id == entry_id), 0)
        start = where - where % WINDOW
    elif start is None:
        start = max(0, len(branch) - 1) // WINDOW * WINDOW
    start = min(max(0, start), max(0, len(branch) - 1))
    window = branch[start : start + WINDOW]
    labels = _labels(session, tree)
    on_path = {row.id for row in branch}
    shown = _shown(session, window, tree, labels)
    for entry in shown:
        if entry.siblings > 1:
            entry.folded = _folded(session, tree, entry.id, on_path, labels)
    return SessionPage(
        session, leaf, len(branch), start, shown, len(tree.branch_points), len(tree.leaves)
    )


def _labels(session: IndexedSession, tree: SessionTree) -> dict[str, str]:
    """Target id -> label, from the label entries alone."""
    return labels_of(
        read_entries(
            session.path,
            [row for row in tree.entries.values() if row.type == "label"],
            None,
            session.agent,
        )
    )


def _folded(
    session: IndexedSession,
    tree: SessionTree,
    point: str,
    on_path: set[str],
    labels: dict[str, str],
) -> list[FoldedBranch]:
    """The branches leaving ``point`` off the shown path, each with its first entries."""
    folded = []
    for child in tree.children.get(point, []):
        if child in on_path:
            continue
        chain = newest_chain(tree, child)
        rows = [tree.entries[entry_id] for entry_id in chain[:FOLDED_SHOWN]]
        folded.append(
            FoldedBranch(child, chain[-1], len(chain), _shown(session, rows, tree, labels))
        )
    return folded


def _shown(
    session: IndexedSession,
    rows: list[IndexedEntry],
    tree: SessionTree,
    labels: dict[str, str],
) -> list[ShownEntry]:
    shown = []
    for row, value in zip(rows, read_entries(session.path, rows, None, session.agent), strict=True):
        kind, summary = entry_summary(value)
        shown.append(
            ShownEntry(
                id=row.id or "",
                parent_id=row.parent_id,
                type=row.type or "?",
                kind=kind,
                timestamp=row.timestamp,
                model=row.model,
                summary=summary,
                blocks=_blocks(session, value),
                label=labels.get(row.id or ""),
                siblings=len(tree.children.get(row.id, [])),
            )
        )
    return shown


def _text_block(kind: str, text: str, name: str = "") -> Block:
    cut = text if len(text) <= TEXT_SHOWN else text[:TEXT_SHOWN] + " …"
    links = _INTERNAL_URL.findall(text) if "://" in text else []
    return Block(kind, cut, name, links=sorted(set(links)))


def _blocks(session: IndexedSession, entry: dict[str, Any]) -> list[Block]:
    """The readable pieces of an entry: a message's content blocks, a summary's text."""
    kind = entry.get("type")
    if kind in ("compaction", "branch_summary") and isinstance(entry.get("summary"), str):
        return [_text_block("summary", entry["summary"])]
    message = entry.get("message") if kind == "message" else entry
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [_text_block("text", content)]
    if not isinstance(content, list):
        return []
    blocks = []
    for part in content:
        if not isinstance(part, dict):
            continue
        part_type = part.get("type")
        if part_type == "text" and isinstance(part.get("text"), str):
            blocks.append(_text_block("text", part["text"]))
        elif part_type == "thinking" and isinstance(part.get("thinking"), str):
            blocks.append(_text_block("thinking", part["thinking"]))
        elif part_type == "toolCall":
            arguments = part.get("arguments")
            text = _json_text(arguments)
            blocks.append(_text_block("tool", text, str(part.get("name") or "tool")))
        elif part_type == "image":
            blocks.append(_image_block(part))
    return blocks


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return str(value)


def _image_block(part: dict[str, Any]) -> Block:
    """An image the page may show: from the blob store (our URL) or inline base64 (a data:
    URL), raster types only; anything else is named, not shown."""
    mime = part.get("mimeType") if isinstance(part.get("mimeType"), str) else ""
    data = part.get("data") if isinstance(part.get("data"), str) else ""
    if mime not in IMAGE_TYPES:
        return Block("image", f"[{mime or 'image'} not shown]")
    blob = parse_blob_ref(data)
    if blob is not None:
        return Block("image", mime, image=f"/blob/{blob}?type={mime}")
    try:
        base64.b64decode(data, validate=True)
    except ValueError:
        return Block("image", "[image data that is not base64]")
    return Block("image", mime, image=f"data:{mime};base64,{data}")


# -- context --------------------------------------------------------------------------------


@dataclass
class ContextPage:
    session: IndexedSession
    leaf_id: str | None
    models: dict[str, str]
    thinking_level: str
    messages: list[tuple[str, str]]
    total: int
    start: int


def context_page(
    index: SessionIndex, session: IndexedSession, leaf_id: str | None, start: int = 0
) -> ContextPage:
    context = index.context(session, leaf_id)
    start = min(max(0, start), max(0, len(context.messages) - 1))
    window = context.messages[start : start + WINDOW]
    return ContextPage(
        session,
        leaf_id or session.last_entry_id,
        context.models,
        context.thinking_level,
        [message_summary(message) for message in window],
        len(context.messages),
        start,
    )


# -- usage ----------------------------------------------------------------------------------

CHART_WIDTH, CHART_HEIGHT = 760, 180
# Room under the bars for their keys.
LABEL_HEIGHT = 22


@dataclass
class Bar:
    key: str
    value: float
    x: float
    y: float
    width: float
    height: float
    label: str  # the key under the bar; empty where the bars are too many for every key


@dataclass
class Chart:
    title: str
    metric: str
    bars: list[Bar]
    maximum: float


def chart(
    title: str, rows: list[Any], metric: str, value_of: Callable[[Any], float], limit: int = 60
) -> Chart:
    """An SVG bar chart's geometry: one bar per row (the last ``limit``), scaled to the max."""
    rows = rows[-limit:]
    values = [float(value_of(row)) for row in rows]
    maximum = max(values, default=0.0) or 1.0
    slot = CHART_WIDTH / max(len(rows), 1)
    bars = [
        Bar(
            key=str(row.key),
            value=value,
            x=number * slot + 1,
            y=CHART_HEIGHT - value / maximum * CHART_HEIGHT,
            width=max(slot - 2, 1),
            height=value / maximum * CHART_HEIGHT,
            label=str(row.key)[:24] if len(rows) <= 12 or number in (0, len(rows) - 1) else "",
        )
        for number, (row, value) in enumerate(zip(rows, values, strict=True))
    ]
    return Chart(title, metric, bars, maximum)


def tokens(row: Any) -> int:
    return row.input_tokens + row.output_tokens + row.cache_read_tokens + row.cache_write_tokens


def usage_totals(rows: list[Any]) -> dict[str, float | None]:
    """The sums of every column of the usage table."""
    columns = ("entries", "input_tokens", "output_tokens", "cache_read_tokens")
    totals: dict[str, float] = {
        column: sum(getattr(row, column) for row in rows)
        for column in (*columns, "cache_write_tokens")
    }
    totals["tokens"] = sum(tokens(row) for row in rows)
    total = usage_total(rows)
    totals["cost"], totals["unpriced"] = total.cost, total.unpriced
    return totals
