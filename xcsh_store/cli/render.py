"""Text formatting for people: tables fitted to the terminal, cut cells, numbers, times, marks."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import click
from tabulate import tabulate

# Cells are cut to this when the output is not a terminal (a pipe, a file).
PIPE_CELL_WIDTH = 100
# The flexible column never shrinks below this on a narrow terminal.
MIN_FLEXIBLE_WIDTH = 16
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
    """Columns of the terminal stdout is, or None when stdout is not one."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((100, 24)).columns


def one_line(value: Any) -> str:
    """A cell: None is empty, all whitespace runs (newlines, tabs) become one space."""
    return "" if value is None else " ".join(str(value).split())


def cut(text: str, width: int) -> str:
    """``text`` at most ``width`` characters, ending in an ellipsis when it was longer."""
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


def cut_marked(text: str, width: int) -> str:
    """Like :func:`cut`, for text holding highlight marks (which take no room).

    A mark left open by the cut is closed, so highlighting never leaks past the cell.
    """
    visible = 0
    out: list[str] = []
    inside = False
    total = sum(1 for char in text if char not in (MARK_OPEN, MARK_CLOSE))
    limit = width if total <= width else width - 1
    for char in text:
        if char == MARK_OPEN:
            inside = True
        elif char == MARK_CLOSE:
            inside = False
        elif visible == limit:
            break
        else:
            visible += 1
        out.append(char)
    if total > width:
        if out and out[-1] == MARK_OPEN:
            out.pop()  # a highlight that the cut left empty
        elif inside:
            out.append(MARK_CLOSE)
        out.append(ELLIPSIS)
    return "".join(out)


def show_marks(text: str, color: bool) -> str:
    """Highlight marks as bold colour on a terminal, as ``«…»`` otherwise."""
    if color:
        start = click.style("", bold=True, fg="yellow", reset=False)
        return text.replace(MARK_OPEN, start).replace(MARK_CLOSE, "\x1b[0m")
    return text.replace(MARK_OPEN, PLAIN_MARKS[0]).replace(MARK_CLOSE, PLAIN_MARKS[1])


def visible_length(text: str) -> int:
    return len(click.unstyle(text).replace(MARK_OPEN, "").replace(MARK_CLOSE, ""))


def fit_table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[str],
    *,
    flexible: int | Sequence[int] = (),
    right: Sequence[int] = (),
    styles: Callable[[int, int, str], str] | None = None,
    width: int | None = -1,
) -> str:
    """An aligned plain table that fits the terminal.

    On a terminal, when the table is too wide, the ``flexible`` columns (free text) give way in
    the order given, each down to :data:`MIN_FLEXIBLE_WIDTH`; in a pipe every cell is cut at
    :data:`PIPE_CELL_WIDTH`. ``styles(row, column, text)`` colours a cell after it was cut.
    ``width=-1`` means "ask the terminal".
    """
    available = terminal_width() if width == -1 else width
    cells = [[one_line(value) for value in row] for row in rows]
    limits = [PIPE_CELL_WIDTH] * len(headers)
    if available is not None and cells:
        limits = [
            max(
                [
                    visible_length(header) + HEADER_PADDING,
                    *(visible_length(row[i]) for row in cells),
                ]
            )
            for i, header in enumerate(headers)
        ]
        overflow = sum(limits) + COLUMN_GAP * (len(headers) - 1) - available
        for column in [flexible] if isinstance(flexible, int) else flexible:
            if overflow <= 0:
                break
            narrower = max(MIN_FLEXIBLE_WIDTH, limits[column] - overflow)
            overflow -= limits[column] - narrower
            limits[column] = narrower
    for row_index, row in enumerate(cells):
        for column, text in enumerate(row):
            text = (
                cut_marked(text, limits[column]) if MARK_OPEN in text else cut(text, limits[column])
            )
            row[column] = styles(row_index, column, text) if styles else text
    align = ["right" if index in right else "left" for index in range(len(headers))]
    if not cells:
        align = None  # tabulate refuses colalign for an empty table
    return tabulate(
        cells,
        headers=list(headers),
        tablefmt="simple",
        disable_numparse=True,
        colalign=align,
    )


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
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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


def iso_utc(value: datetime | float | None) -> str | None:
    """``2026-11-16T09:12:03.123Z`` (JSON output), from a datetime or epoch seconds."""
    if value is None:
        return None
    moment = datetime.fromtimestamp(value, UTC) if isinstance(value, (int, float)) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


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
