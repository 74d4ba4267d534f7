"""Tables for people, fitted to the terminal: what tells the rows apart keeps its room.

A table names its ``flexible`` columns (free text): the first is the main one (a title, a
model, a match), the others give way before it. On a narrow terminal, in this order and always
the widest first: the padding tabulate gives headers; the other flexible columns, down to
:data:`SECONDARY_WIDTH`; headers wider than their cells, down to their short form (``c.read``
for ``cache read``); the main column, down to :data:`MAIN_WIDTH`; the other flexible columns
down to :data:`MIN_SECONDARY_WIDTH`; then the ``optional`` columns are dropped, one by one,
while the table is still too wide; then the main column down to :data:`MIN_MAIN_WIDTH`, the
headers down to :data:`MIN_HEADER_WIDTH` and every column down to :data:`MIN_COLUMN_WIDTH`.
A ``whole`` column (an id a user types back) is never cut: once the main column is down to
its ``main_width`` it gives way, as far as needed and at most down to its median cell, and a
cell wider than it takes a line of its own, above its row, at its column's place (two UUIDv7
ids of one minute are 36 characters apart from the others' 8: the title keeps its room, the
id stays one a user can copy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from xcsh_store.cli.output.render import (
    MARK_OPEN,
    PIPE_CELL_WIDTH,
    cut,
    cut_marked,
    cut_styled,
    display_width,
    one_line,
    pad,
    terminal_width,
)
from xcsh_store.cli.output.safe import Shown, visible

# The other flexible columns give way to here before the main one gives way at all.
SECONDARY_WIDTH = 20
# The main column keeps this much before the other flexible columns give way further.
MAIN_WIDTH = 30
MIN_SECONDARY_WIDTH = 12
# On a narrow terminal the main column never shrinks below this, nor any column below the
# last.
MIN_MAIN_WIDTH = 16
MIN_COLUMN_WIDTH = 3
# A header cut to its column's cells keeps at least this much of itself.
MIN_HEADER_WIDTH = 5
COLUMN_GAP = 2
# tabulate makes every column at least its header plus this wide.
HEADER_PADDING = 2

# A header, or its forms from the longest to the shortest: ("cache read", "c.read").
Header = str | tuple[str, ...]
Cut = Callable[[str, int], str]


def _give_way(
    limits: list[int], columns: Iterable[int], floors: Sequence[int], overflow: int
) -> int:
    """Narrow ``columns`` until ``overflow`` cells are gone, always the widest first, none
    below its floor; returns the overflow left."""
    columns = list(columns)
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


def _typical_width(cells: list[list[str]], column: int) -> int:
    """The width half the cells of ``column`` fit (its median cell's)."""
    widths = sorted(display_width(row[column]) for row in cells)
    return widths[len(widths) // 2] if widths else 0


def _column_limits(
    cells: list[list[str]],
    forms: Sequence[tuple[str, ...]],
    flexible: Sequence[int],
    kept: Sequence[int],
    available: int,
    main_width: int = MAIN_WIDTH,
    whole: Sequence[int] = (),
) -> tuple[list[int], int]:
    """The width of each column (the ``kept`` ones) that fits ``available`` cells, giving way
    in the module's order up to the dropping of optional columns; and the overflow left."""
    values = [max((display_width(row[i]) for row in cells), default=0) for i in range(len(forms))]
    full = [display_width(header[0]) for header in forms]
    shortest = [display_width(header[-1]) for header in forms]
    content = [max(width, header) for width, header in zip(values, full, strict=True)]
    limits = [
        max(width, header + HEADER_PADDING) for width, header in zip(content, full, strict=True)
    ]
    overflow = sum(limits[i] for i in kept) + COLUMN_GAP * (len(kept) - 1) - available
    main = [column for column in flexible[:1] if column in kept]
    others = [column for column in flexible[1:] if column in kept]
    typical = [
        max(shortest[column], _typical_width(cells, column)) if column in whole else 0
        for column in range(len(forms))
    ]
    for columns, floors in (
        (kept, content),
        (others, [min(width, SECONDARY_WIDTH) for width in content]),
        (kept, [max(width, header) for width, header in zip(values, shortest, strict=True)]),
        (main, [min(width, main_width) for width in content]),
        ([column for column in whole if column in kept], typical),
        (others, [min(width, MIN_SECONDARY_WIDTH) for width in content]),
    ):
        overflow = _give_way(limits, columns, floors, overflow)
    return limits, overflow


def _layout(
    cells: list[list[str]],
    forms: Sequence[tuple[str, ...]],
    flexible: Sequence[int],
    optional: Sequence[int],
    available: int,
    whole: Sequence[int] = (),
    main_width: int = MAIN_WIDTH,
) -> tuple[list[int], list[int]]:
    """Column widths and the columns kept: the optional ones go while the table overflows."""
    kept = list(range(len(forms)))
    limits, overflow = _column_limits(cells, forms, flexible, kept, available, main_width, whole)
    for column in optional:
        if overflow <= 0:
            break
        kept.remove(column)
        limits, overflow = _column_limits(
            cells, forms, flexible, kept, available, main_width, whole
        )
    values = [max((display_width(row[i]) for row in cells), default=0) for i in range(len(forms))]
    main = [column for column in flexible[:1] if column in kept]
    cuttable = [column for column in kept if column not in whole]
    for columns, floors in (
        (main, [min(width, MIN_MAIN_WIDTH) for width in values]),
        (cuttable, [max(width, MIN_HEADER_WIDTH) for width in values]),
        (cuttable, [min(width, MIN_COLUMN_WIDTH) for width in values]),
    ):
        overflow = _give_way(limits, columns, floors, overflow)
    return limits, kept


def _head(forms: tuple[str, ...], limit: int) -> str:
    """The longest form of a header that fits ``limit``, else the shortest cut to it."""
    return next((form for form in forms if display_width(form) <= limit), cut(forms[-1], limit))


def fit_table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[Header],
    *,
    flexible: int | Sequence[int] = (),
    right: Sequence[int] = (),
    styles: Callable[[int, int, str], str] | None = None,
    width: int | None = -1,
    cuts: Mapping[int, Cut] | None = None,
    optional: Sequence[int] = (),
    whole: Sequence[int] = (),
    main_width: int = MAIN_WIDTH,
) -> Shown:
    """An aligned plain table (tabulate's "simple" layout) that fits the terminal.

    On a terminal, when the table is too wide, cells are cut with an ellipsis as the module
    says, and every line fits however narrow the terminal. In a pipe every cell is cut at
    :data:`~xcsh_store.cli.output.render.PIPE_CELL_WIDTH`. Cells and headers are escaped
    (:func:`~xcsh_store.cli.output.safe.visible`) before anything else; a column is cut by its
    ``cuts`` function (``text, width -> text``; default :func:`~xcsh_store.cli.output.render.cut`);
    ``styles(row, column, text)`` colours a cell after it was cut; a ``whole`` column's cells
    are never cut (ids a user types back: one too wide takes a line above its row);
    ``main_width`` is what the main column keeps before
    the optional columns go (:data:`MAIN_WIDTH`). Widths are terminal cells
    (:func:`~xcsh_store.cli.output.render.display_width`). ``width=-1`` means "ask the terminal".
    """
    available = terminal_width() if width == -1 else width
    cells = [[visible(one_line(value)) for value in row] for row in rows]
    forms = [
        tuple(
            visible(one_line(form)) for form in ((header,) if isinstance(header, str) else header)
        )
        for header in headers
    ]
    flexible = [flexible] if isinstance(flexible, int) else list(flexible)
    if available is None:
        limits, kept = [PIPE_CELL_WIDTH] * len(forms), list(range(len(forms)))
        for column in whole:
            limits[column] = max([PIPE_CELL_WIDTH, *(display_width(row[column]) for row in cells)])
    else:
        limits, kept = _layout(cells, forms, flexible, optional, available, whole, main_width)
    heads = [_head(forms[column], limits[column]) for column in kept]
    spilled: dict[int, tuple[int, str]] = {}  # row: (its whole cell's place in kept, text)
    for row_index, row in enumerate(cells):
        shown_row: list[str] = []
        for column in kept:
            text, limit = row[column], limits[column]
            if column in whole and display_width(text) > limit:
                spilled[row_index] = (
                    len(shown_row),
                    styles(row_index, column, text) if styles else text,
                )
                text = ""
            elif MARK_OPEN in text:
                text = cut_marked(text, limit)
            else:
                text = (cuts or {}).get(column, cut)(text, limit)
            shown_row.append(styles(row_index, column, text) if styles and text else text)
        cells[row_index] = shown_row
    widths = [
        max([display_width(head) + HEADER_PADDING, *(display_width(row[i]) for row in cells)])
        for i, head in enumerate(heads)
    ]
    if available is not None:
        widths = [min(size, limits[column]) for size, column in zip(widths, kept, strict=True)]
    aligned = [kept.index(column) for column in right if column in kept] if cells else []
    gap = Shown(" " * COLUMN_GAP)

    def joined(line: Sequence[str]) -> Shown:
        return Shown(
            gap.join(
                pad(text, widths[column], column in aligned) for column, text in enumerate(line)
            ).rstrip()
        )

    lines = [joined(heads), joined(["-" * size for size in widths])]
    for row_index, line in enumerate(cells):
        if row_index in spilled:
            place, text = spilled[row_index]
            lines.append(Shown(" " * (sum(widths[:place]) + COLUMN_GAP * place) + text))
        lines.append(joined(line))
    if available is not None:
        lines = [cut_styled(line, available) for line in lines]
    return Shown("\n").join(lines)
