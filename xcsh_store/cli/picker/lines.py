"""The picker's lines, drawn to a width: a row of the list and a preview, as (style, text)
pieces (the form prompt_toolkit draws). Every text from a session goes through the sanitiser
(safe.visible) before it is measured and cut, so escapes, control characters and bidi
overrides are shown as text, wide characters take their two cells, and no line is longer than
the width."""

from __future__ import annotations

from xcsh_store.cli.output.render import (
    MARK_CLOSE,
    MARK_OPEN,
    cut,
    cut_marked,
    cut_path,
    display_width,
    home_relative,
    one_line,
    pad,
    short_time,
    wrap,
)
from xcsh_store.cli.output.safe import visible
from xcsh_store.cli.output.shapes import ARCHIVED_MARK
from xcsh_store.cli.picker.source import PROMPTS, Preview, PreviewEntry, Row

Piece = tuple[str, str]
Line = list[Piece]

WHEN_WIDTH = 12  # "Nov 17 09:21"
PLACE_WIDTH = 18
# Below this many columns a row has no room for its place.
NARROW = 60
KIND_WIDTH = 13
# The part of a hit's text that is wrapped for the preview: a 1 MB tool result is not.
HIT_CHARS_PER_CELL = 4


def row_line(row: Row, mode: str, width: int, selected: bool) -> Line:
    """One row of the list: when, where (the title, else the cwd; left out below
    ``NARROW`` columns), then the match or the prompt, with the search's highlight marks as
    the ``match`` style; the selected row marked and in the ``selected`` style. A session
    whose file is gone has the archive's mark (as in ``ls``) before its text."""
    lead = pad(short_time(row.when), WHEN_WIDTH) + "  "
    if width >= NARROW:
        if mode == PROMPTS or not row.title:
            place = cut_path(home_relative(visible(row.cwd)), PLACE_WIDTH)
        else:
            place = cut(visible(row.title), PLACE_WIDTH)
        lead += pad(place, PLACE_WIDTH) + "  "
    if row.archived:
        lead += f"{ARCHIVED_MARK} "
    text = cut_marked(visible(row.text), max(0, width - 2 - display_width(lead)))
    pieces = [("class:when", "> " if selected else "  "), ("class:when", lead), *_marked(text)]
    used = sum(display_width(text) for _, text in pieces)
    pieces.append(("", " " * max(0, width - used)))
    if selected:
        pieces = [(f"{style} class:selected", text) for style, text in pieces]
    return fit(pieces, width)


def _marked(text: str) -> Line:
    """``text`` in pieces: the parts between highlight marks in the ``match`` style."""
    pieces: Line = []
    style = ""
    start = 0
    for position, char in enumerate(text):
        if char in (MARK_OPEN, MARK_CLOSE):
            if position > start:
                pieces.append((style, text[start:position]))
            style = "class:match" if char == MARK_OPEN else ""
            start = position + 1
    if start < len(text):
        pieces.append((style, text[start:]))
    return pieces


def preview_lines(preview: Preview, width: int, height: int) -> list[Line]:
    """The preview in ``height`` lines: a bar with the title and the facts, the entries
    before the hit on a line each, the hit's whole text wrapped, then the entries after."""
    facts = " · ".join(visible(one_line(home_relative(fact))) for fact in preview.facts if fact)
    note = f" · {preview.note}" if preview.note else ""
    bar = cut(f" {visible(preview.title)} · {facts}{note}", width)
    lines: list[Line] = [[("class:bar", pad(bar, width))]]
    after = len(preview.entries) - preview.hit_at - 1
    for entry in preview.entries:
        room = height - len(lines)
        if room <= 0:
            break
        if entry.hit:  # wrapped in what is left, less two lines for the entries after it
            lines += _hit_lines(entry, width, max(3, room - min(2, after)))
        else:
            lines.append(_entry_line(entry, width))
    return lines[:height]


def _entry_line(entry: PreviewEntry, width: int) -> Line:
    kind = pad(cut(visible(entry.kind), KIND_WIDTH - 1), KIND_WIDTH)
    text = cut(visible(entry.text), max(0, width - 2 - KIND_WIDTH))
    return fit([("", "  "), ("class:kind", kind), ("", text)], width)


def _hit_lines(entry: PreviewEntry, width: int, most: int) -> list[Line]:
    """The hit entry: its kind, then its text wrapped in at most ``most`` lines."""
    room = max(1, width - 2 - KIND_WIDTH)
    text = entry.text[: room * most * HIT_CHARS_PER_CELL]
    wrapped: list[str] = []
    for paragraph in text.split("\n"):
        if not paragraph.strip() and wrapped and not wrapped[-1].strip():
            continue  # one blank line between paragraphs is enough
        wrapped += [str(line) for line in wrap(visible(paragraph.expandtabs(4)), room)]
    if len(wrapped) > most:
        wrapped = [*wrapped[: most - 1], cut(wrapped[most - 1] + " …", room)]
    kind = pad(cut(visible(entry.kind), KIND_WIDTH - 1), KIND_WIDTH)
    lines = []
    for number, text_line in enumerate(wrapped):
        lead = ("class:hit", "▶ ") if number == 0 else ("", "  ")
        label = ("class:kind class:hit", kind if number == 0 else " " * KIND_WIDTH)
        lines.append(fit([lead, label, ("class:hit", text_line)], width))
    return lines


def fit(pieces: Line, width: int) -> Line:
    """``pieces`` cut to ``width`` cells, the piece that overflows ending in an ellipsis."""
    out: Line = []
    used = 0
    for style, text in pieces:
        size = display_width(text)
        if used + size > width:
            out.append((style, cut(text, width - used)))
            break
        out.append((style, text))
        used += size
    return out
