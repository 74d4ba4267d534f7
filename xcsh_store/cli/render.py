"""Text formatting for people: tables fitted to the terminal, cut cells, numbers, times, marks."""

from __future__ import annotations

import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import click

from xcsh_store.cli.safe import Shown, shown, visible
from xcsh_store.times import parse_iso

# Cells are cut to this when the output is not a terminal (a pipe, a file).
PIPE_CELL_WIDTH = 100
# The flexible column never shrinks below this on a narrow terminal.
MIN_FLEXIBLE_WIDTH = 16
# On a very narrow terminal every column gives way, down to this.
MIN_COLUMN_WIDTH = 3
# A header cut to its column's cells keeps at least this much of itself.
MIN_HEADER_WIDTH = 5
COLUMN_GAP = 2
# tabulate makes every column at least its header plus this wide.
HEADER_PADDING = 2
ELLIPSIS = "…"

# The search library highlights matches with these Unicode noncharacters (for internal use by
# definition); not control characters, so the sanitiser leaves them for show_marks.
MARK_OPEN = "\ufdd0"
MARK_CLOSE = "\ufdd1"
PLAIN_MARKS = ("«", "»")


def terminal_width() -> int | None:
    """Columns to fit: ``$COLUMNS`` when set (even in a pipe), else the terminal stdout is;
    None when stdout is not a terminal and ``$COLUMNS`` is unset."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((100, 24)).columns


def one_line(value: Any) -> str:
    """A cell: None is empty, all whitespace runs (newlines, tabs) become one space."""
    return "" if value is None else " ".join(str(value).split())


def char_width(char: str) -> int:
    """Terminal cells one character takes: East Asian wide and full-width characters (CJK,
    most emoji) take 2, combining marks and other zero-width characters 0, the rest 1."""
    if char < "\u0300":  # fast path: ASCII and Latin-1 (controls count 0)
        return 0 if char < " " or "\x7f" <= char < "\xa0" else 1
    if char in (MARK_OPEN, MARK_CLOSE):
        return 0
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf", "Cc"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Cells ``text`` takes on a terminal: colour codes and highlight marks take none."""
    plain = click.unstyle(text).replace(MARK_OPEN, "").replace(MARK_CLOSE, "")
    if plain.isascii():
        return sum(1 for char in plain if " " <= char < "\x7f")
    return sum(char_width(char) for char in plain)


def _fill(chars: Iterable[str], room: int) -> list[str]:
    """The first of ``chars`` that fit in ``room`` cells."""
    taken: list[str] = []
    used = 0
    for char in chars:
        used += char_width(char)
        if used > room:
            break
        taken.append(char)
    return taken


def cut(text: str, width: int) -> str:
    """``text`` at most ``width`` terminal cells, ending in an ellipsis when it was longer."""
    if width <= 0:
        return ""
    if display_width(text) <= width:
        return text
    return "".join(_fill(text, width - 1)) + ELLIPSIS


def cut_left(text: str, width: int) -> str:
    """Like :func:`cut`, keeping the end (a folder's name) and cutting the start."""
    if width <= 0:
        return ""
    if display_width(text) <= width:
        return text
    return ELLIPSIS + "".join(reversed(_fill(reversed(text), width - 1)))


_STYLE_CODE = re.compile(r"\x1b\[[0-9;]*m")


def cut_styled(text: str, width: int) -> Shown:
    """Like :func:`cut`, for a line for the terminal (:func:`~xcsh_store.cli.safe.shown`): its
    colour codes are kept and take no room, and a colour left open by the cut is reset."""
    text = shown(text)
    if display_width(text) <= width:
        return text
    out: list[str] = []
    used = 0
    position = 0
    styled = False
    while position < len(text):
        code = _STYLE_CODE.match(text, position)
        if code:
            out.append(code.group())
            styled = True
            position = code.end()
            continue
        cells = char_width(text[position])
        if used + cells > width - 1:
            break
        out.append(text[position])
        used += cells
        position += 1
    end = (ELLIPSIS if width > 0 else "") + ("\x1b[0m" if styled else "")
    return Shown("".join(out) + end)


def cut_marked(text: str, width: int) -> str:
    """Like :func:`cut`, for text holding highlight marks (which take no room).

    A mark left open by the cut is closed, so highlighting never leaks past the cell.
    """
    used = 0
    out: list[str] = []
    inside = False
    total = display_width(text)
    limit = width if total <= width else width - 1
    for char in text:
        if char == MARK_OPEN:
            inside = True
        elif char == MARK_CLOSE:
            inside = False
        elif used + char_width(char) > limit:
            break
        else:
            used += char_width(char)
        out.append(char)
    if total > width:
        if out and out[-1] == MARK_OPEN:
            out.pop()  # a highlight that the cut left empty
        elif inside:
            out.append(MARK_CLOSE)
        out.append(ELLIPSIS)
    return "".join(out)


def show_marks(text: str, color: bool) -> Shown:
    """Highlight marks as bold colour on a terminal, as ``«…»`` otherwise (``text`` is escaped
    first: the marks are no control characters)."""
    text = shown(text)
    if color:
        start = click.style("", bold=True, fg="yellow", reset=False)
        return Shown(text.replace(MARK_OPEN, start).replace(MARK_CLOSE, "\x1b[0m"))
    return Shown(text.replace(MARK_OPEN, PLAIN_MARKS[0]).replace(MARK_CLOSE, PLAIN_MARKS[1]))


def fit_line(text: str, width: int | None) -> Shown:
    """One line of output through the sanitiser, then cut to the terminal (uncut in a pipe).

    Sanitising first makes the escapes that stand for control characters count in the width.
    """
    return shown(text) if width is None else cut_styled(text, width)


def _give_way(
    limits: list[int], columns: Sequence[int], floors: Sequence[int], overflow: int
) -> int:
    """Narrow ``columns`` until ``overflow`` cells are gone, always the widest first, none
    below its floor; returns the overflow left."""
    while overflow > 0:
        shrinkable = [column for column in columns if limits[column] > floors[column]]
        if not shrinkable:
            break
        widest = max(limits[column] for column in shrinkable)
        tied = [column for column in shrinkable if limits[column] == widest]
        narrower = [limits[column] for column in shrinkable if limits[column] < widest]
        # Down to the next width at once (or by a fair share when that is too far), so ties
        # narrow together and a 10,000-character cell costs a few steps, not 10,000.
        target = max(max(narrower, default=0), widest - -(-overflow // len(tied)))
        for column in tied:
            new = max(floors[column], target, limits[column] - overflow)
            overflow -= limits[column] - new
            limits[column] = new
    return overflow


def _column_limits(
    cells: list[list[str]], headers: Sequence[str], flexible: Sequence[int], available: int
) -> list[int]:
    """Column widths that fit ``available`` cells, giving way in this order, widest first:
    the padding tabulate gives headers; the flexible columns, down to
    :data:`MIN_FLEXIBLE_WIDTH`; headers wider than their column's cells (``cache write``
    over ``2.1k``), down to the cells; then every column, down to :data:`MIN_COLUMN_WIDTH`."""
    values = [max((display_width(row[i]) for row in cells), default=0) for i in range(len(headers))]
    content = [
        max(width, display_width(header)) for width, header in zip(values, headers, strict=True)
    ]
    limits = [
        max(width, display_width(header) + HEADER_PADDING)
        for width, header in zip(content, headers, strict=True)
    ]
    overflow = sum(limits) + COLUMN_GAP * (len(headers) - 1) - available
    everything = range(len(headers))
    for columns, floors in (
        (everything, content),
        (flexible, [min(width, MIN_FLEXIBLE_WIDTH) for width in content]),
        (everything, [max(width, MIN_HEADER_WIDTH) for width in values]),
        (everything, [min(width, MIN_COLUMN_WIDTH) for width in content]),
    ):
        overflow = _give_way(limits, columns, floors, overflow)
    return limits


def pad(text: str, width: int, right: bool = False) -> str:
    """``text`` filled with spaces to ``width`` terminal cells (on the left when ``right``)."""
    room = " " * max(0, width - display_width(text))
    return room + text if right else text + room


def fit_table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[str],
    *,
    flexible: int | Sequence[int] = (),
    right: Sequence[int] = (),
    styles: Callable[[int, int, str], str] | None = None,
    width: int | None = -1,
    keep_end: Sequence[int] = (),
) -> Shown:
    """An aligned plain table (tabulate's "simple" layout) that fits the terminal.

    On a terminal, when the table is too wide, cells are cut with an ellipsis: the
    ``flexible`` columns (free text) give way first, the widest first, and every line fits
    however narrow the terminal. In a pipe every cell is cut at :data:`PIPE_CELL_WIDTH`.
    Cells and headers are escaped (:func:`~xcsh_store.cli.safe.visible`) before anything else;
    ``styles(row, column, text)`` colours a cell after it was cut; the ``keep_end`` columns
    (folders) are cut at their start. Widths are terminal cells (:func:`display_width`).
    ``width=-1`` means "ask the terminal".
    """
    available = terminal_width() if width == -1 else width
    cells = [[visible(one_line(value)) for value in row] for row in rows]
    headers = [visible(one_line(header)) for header in headers]
    flexible = [flexible] if isinstance(flexible, int) else list(flexible)
    if available is None:
        limits = [PIPE_CELL_WIDTH] * len(headers)
    else:
        limits = _column_limits(cells, headers, flexible, available)
    heads = [cut(header, limit) for header, limit in zip(headers, limits, strict=True)]
    for row_index, row in enumerate(cells):
        for column, text in enumerate(row):
            if MARK_OPEN in text:
                text = cut_marked(text, limits[column])
            else:
                text = (cut_left if column in keep_end else cut)(text, limits[column])
            row[column] = styles(row_index, column, text) if styles else text
    widths = [
        max([display_width(head) + HEADER_PADDING, *(display_width(row[i]) for row in cells)])
        for i, head in enumerate(heads)
    ]
    if available is not None:
        widths = [min(size, limit) for size, limit in zip(widths, limits, strict=True)]
    if not cells:
        right = ()  # as tabulate, which aligns an empty table's headers left
    gap = Shown(" " * COLUMN_GAP)
    lines = [
        Shown(
            gap.join(
                pad(text, widths[column], column in right) for column, text in enumerate(line)
            ).rstrip()
        )
        for line in (heads, ["-" * size for size in widths], *cells)
    ]
    if available is not None:
        lines = [cut_styled(line, available) for line in lines]
    return Shown("\n").join(lines)


def human_count(value: float | int | None) -> str:
    """Token counts for people: ``987``, ``12.3k``, ``4.5M``, ``1.2B``."""
    number = float(value or 0)
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(number) >= limit:
            scaled = number / limit
            return f"{scaled:.1f}{suffix}" if scaled < 100 else f"{scaled:.0f}{suffix}"
    return f"{number:.0f}"


def money(value: float | int | None) -> str:
    number = float(value or 0)
    if number == 0:
        return "$0"
    if number < 0.01:
        return f"${number:.4f}"
    return f"${number:,.2f}"


def parse_time(value: str | datetime | None) -> datetime | None:
    """An ISO timestamp as an aware datetime; None for anything unreadable."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return parse_iso(value)


def local_time(value: str | datetime | None, seconds: bool = False) -> str:
    """``2026-11-16 09:12`` in the local time zone; empty when unknown."""
    moment = parse_time(value)
    if moment is None or moment.timestamp() <= 0:
        return ""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def current_time() -> datetime:
    """Now, or the time ``$SOURCE_DATE_EPOCH`` gives (the reproducible-builds convention), so
    output that depends on the current year can be reproduced (the README's tour is)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if epoch.isdigit() and len(epoch) <= 11:
        return datetime.fromtimestamp(int(epoch), UTC)
    return datetime.now(UTC)


def short_time(value: str | datetime | None, now: datetime | None = None) -> str:
    """A table cell, as ``ls -l`` does it: ``Nov 17 09:21`` this year, ``2025-11-17`` before."""
    moment = parse_time(value)
    if moment is None or moment.timestamp() <= 0:
        return ""
    local = moment.astimezone()
    if local.year == (now or current_time()).astimezone().year:
        return local.strftime("%b %d %H:%M")
    return local.strftime("%Y-%m-%d")


def home_relative(path: str | None) -> str:
    """``/home/me/src/app`` -> ``~/src/app``."""
    if not path:
        return ""
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def plural(count: int, word: str, plural_form: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (plural_form or word + 's')}"
