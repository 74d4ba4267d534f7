"""Text paged as the read tool shows it: line selectors, a page of lines, continuation notes."""

from __future__ import annotations

import re

from xcsh_store.artifacts.output import (
    DEFAULT_MAX_BYTES,
    format_bytes,
    truncate_head,
    truncate_head_bytes,
    utf8_len,
)
from xcsh_store.errors import InternalUrlError

_LINE_SELECTOR = re.compile(r"[Ll]([0-9]+)(?:-[Ll]?([0-9]+))?")
_PAGING_HINT = re.compile(r"Use sel=L(\d+) to (continue|read)")


def parse_line_selector(selector: str) -> tuple[int, int | None]:
    """``L<a>``, ``L<a>-L<b>`` or ``L<a>-<b>`` -> ``(offset, limit)`` (limit None: open end)."""
    match = _LINE_SELECTOR.fullmatch(selector)
    if match is None:
        raise InternalUrlError(f"Invalid line selector: {selector}")
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) is not None else None
    check_page(start, None if end is None else end - start + 1)
    return start, None if end is None else end - start + 1


def check_page(offset: int | None, limit: int | None) -> None:
    """Raise :class:`InternalUrlError` with the reference's message for a page that cannot be."""
    start = 1 if offset is None else offset
    if start < 1:
        raise InternalUrlError(f"L{start} is invalid; lines are 1-indexed. Use sel=L1.")
    if limit is not None and limit < 1:
        raise InternalUrlError(
            f"Invalid range L{start}-L{start + limit - 1}: end must be >= start."
        )


def page_of(text: str, offset: int | None, limit: int | None) -> str:
    """Lines ``offset``.. (1-based, ``limit`` of them) of ``text``, truncated as the read tool
    truncates, with the note that says how to continue; past the end, a note instead."""
    lines = text.split("\n")
    total = len(lines)
    start = offset - 1 if offset else 0
    first_line = start + 1
    if start >= total:
        return (
            f"Line {first_line} is beyond end of resource ({total} lines total). "
            f"Use sel=L1 to read from the start, or sel=L{total} to read the last line."
        )
    end = min(start + limit, total) if limit is not None else total
    selected = "\n".join(lines[start:end])
    result = truncate_head(selected)
    if result.truncated:
        if result.first_line_exceeds_limit:
            snippet = truncate_head_bytes(lines[start], DEFAULT_MAX_BYTES).text
            shown = snippet or (
                f"[Line {first_line} is {format_bytes(utf8_len(lines[start]))}, exceeds "
                f"{format_bytes(DEFAULT_MAX_BYTES)} limit. Unable to display a valid UTF-8 "
                "snippet.]"
            )
        else:
            shown = result.content
        last_shown = first_line + result.output_lines - 1
        limit_note = ""
        if result.truncated_by == "bytes":
            limit_note = f" ({format_bytes(result.output_bytes)} limit)"
        return (
            f"{shown}\n\n[Showing lines {first_line}-{last_shown} of {total}{limit_note}. "
            f"Use sel=L{last_shown + 1} to continue]"
        )
    if limit is not None and end < total:
        return (
            f"{selected}\n\n[{total - end} more lines in resource. Use sel=L{end + 1} to continue]"
        )
    return selected


def retold_paging_hint(text: str, option: str) -> str:
    """A page whose closing notice speaks to the agent's read tool (``Use sel=L5 to
    continue``) told for another reader: ``option`` names the line, as ``--offset`` (the CLI,
    ``Use --offset 5``) or ``offset=`` (the MCP tool, ``Use offset=5``). Only the last line is
    the notice; the page's own text stays as it is."""
    head, separator, last = text.rpartition("\n")
    joiner = "" if option.endswith("=") else " "
    return head + separator + _PAGING_HINT.sub(rf"Use {option}{joiner}\1 to \2", last)
