"""Text formatting for people: widths on a terminal, cut and wrapped text, numbers, times, marks
(tables are laid out in table.py)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import click

from xcsh_store.cli.output.safe import Shown, shown
from xcsh_store.times import parse_iso

# Cells are cut to this when the output is not a terminal (a pipe, a file).
PIPE_CELL_WIDTH = 100
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


# What char_width says without asking unicodedata: below U+0300, a control takes no cell and
# anything else one. Counted by the regex engine, so a long cell (a whole first message that a
# listing cuts to its column) costs no Python work per character.
_LOW_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_HIGH = re.compile(r"[^\x00-\u02ff]")


def display_width(text: str) -> int:
    """Cells ``text`` takes on a terminal: colour codes and highlight marks take none."""
    plain = click.unstyle(text).replace(MARK_OPEN, "").replace(MARK_CLOSE, "")
    controls = len(_LOW_CONTROLS.findall(plain))
    if plain.isascii():
        return len(plain) - controls
    high = _HIGH.findall(plain)
    return len(plain) - len(high) - controls + sum(map(char_width, high))


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


def cut_middle(text: str, width: int, end_share: float = 0.5) -> str:
    """Like :func:`cut`, keeping both ends and cutting the middle: names that differ at their
    end (``claude-sonnet-4-5-20250929``, ``gpt-5.1-codex``) stay apart. ``end_share``: the
    part of the room the end keeps."""
    if width <= 0:
        return ""
    if display_width(text) <= width:
        return text
    end = "".join(reversed(_fill(reversed(text), int((width - 1) * end_share))))
    return "".join(_fill(text, width - 1 - display_width(end))) + ELLIPSIS + end


_PATH_PARTS = re.compile(r"(?=[/\\])")


def cut_path(text: str, width: int) -> str:
    """A folder cut to its last whole components (``…/src/app``); when the last one alone does
    not fit, its end, as :func:`cut_left`."""
    if display_width(text) <= width:
        return text
    parts = _PATH_PARTS.split(text)
    kept = ""
    for part in reversed(parts):
        if display_width(ELLIPSIS + part + kept) > width:
            break
        kept = part + kept
    return ELLIPSIS + kept if kept else cut_left(text, width)


_STYLE_CODE = re.compile(r"\x1b\[[0-9;]*m")


def _cells(text: str) -> Iterable[tuple[str, int]]:
    """``text`` as pieces and the cells each takes: a colour code (none) or one character."""
    position = 0
    while position < len(text):
        code = _STYLE_CODE.match(text, position)
        if code:
            yield code.group(), 0
            position = code.end()
            continue
        yield text[position], char_width(text[position])
        position += 1


def cut_styled(text: str, width: int) -> Shown:
    """Like :func:`cut`, for a line for the terminal (:func:`~xcsh_store.cli.output.safe.shown`):
    its colour codes are kept and take no room, and a colour left open by the cut is reset."""
    text = shown(text)
    if display_width(text) <= width:
        return text
    out: list[str] = []
    used = 0
    styled = False
    for piece, cells in _cells(text):
        if piece.startswith("\x1b"):
            styled = True
        elif used + cells > width - 1:
            break
        out.append(piece)
        used += cells
    end = (ELLIPSIS if width > 0 else "") + ("\x1b[0m" if styled else "")
    return Shown("".join(out) + end)


def wrap(text: str, width: int | None, indent: str = "") -> list[Shown]:
    """A line for the terminal in lines of at most ``width`` cells, broken at spaces (a word
    longer than a line, such as a path, is broken where the line ends); the first keeps its
    leading spaces, the others start with ``indent``. One line when ``width`` is None (a
    pipe)."""
    text = shown(text)
    if width is None or display_width(text) <= width:
        return [text]
    body = text.lstrip(" ")
    lead = text[: len(text) - len(body)]
    rooms = (max(1, width - len(lead)), max(1, width - display_width(indent)))
    lines: list[str] = []
    line: list[str] = []
    used = 0
    for word in body.split(" "):
        room = rooms[bool(lines)]
        size = display_width(word)
        # A word that fits a line of its own starts one; a longer one is broken where it is.
        if line and used + 1 + size > room and size <= rooms[1]:
            lines.append("".join(line))
            line, used, room = [], 0, rooms[1]
        if line:
            line.append(" ")
            used += 1
        for piece, cells in _cells(word):
            if used + cells > room:
                lines.append("".join(line))
                line, used, room = [], 0, rooms[1]
            line.append(piece)
            used += cells
    lines.append("".join(line))
    return [Shown(lead + lines[0]), *(Shown(indent + line) for line in lines[1:])]


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


def pad(text: str, width: int, right: bool = False) -> str:
    """``text`` filled with spaces to ``width`` terminal cells (on the left when ``right``)."""
    room = " " * max(0, width - display_width(text))
    return room + text if right else text + room


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
