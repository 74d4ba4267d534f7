"""A message for the terminal (``show SESSION ENTRY``), its tool calls as what they did
(format/tool_calls.py, as exports and the web show them): an edit as its unified diff, removed
lines red and added ones green, the characters a line changed in reverse video; a shell call as
``$ command`` under its description; a read as its path and range; a tool's output under its
name and exit status. Without colour (NO_COLOR, not a terminal) the diff is the plain unified
diff. Every text is escaped before it is styled (safe.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from xcsh_store.cli.output.safe import Shown
from xcsh_store.format.tool_calls import marked_lines
from xcsh_store.format.transcript import Block, Message

Style = Callable[..., Shown]
# A tab in a diff or a command: this many spaces (the sanitiser would show it as \t).
TAB = "    "
_LINE_COLOURS = {"add": "green", "del": "red", "hunk": "cyan"}


def message_lines(message: Message, style: Style) -> Iterator[str]:
    """The lines that show ``message``'s blocks, a blank line between two blocks."""
    for number, block in enumerate(message.blocks):
        if number:
            yield ""
        yield from block_lines(block, style)


def block_lines(block: Block, style: Style) -> Iterator[str]:
    """The lines of one block: text as it is, thinking marked, a call as what it did."""
    if block.kind == "diff":
        yield style(block.title, bold=True)
        yield from diff_lines(block.text, style)
    elif block.kind == "command":
        described = block.title.partition(": ")[2]
        if described:
            yield style(described, dim=True)
        first, *rest = _untabbed(block.text).split("\n")
        yield style("$ ", bold=True) + style(first, bold=True)
        yield from (style(line, bold=True) for line in rest)
    elif block.kind == "read":
        yield style(block.title, bold=True) + " " + style(_untabbed(block.text), fg="cyan")
    elif block.kind == "output":
        label = f"{'error from' if block.is_error else 'output of'} {block.title}"
        yield style(label, fg="red") if block.is_error else style(label, dim=True)
        yield from _untabbed(block.text).split("\n")
    elif block.kind == "thinking":
        yield style("(thinking)", dim=True)
        yield from (style(line, dim=True) for line in _untabbed(block.text).split("\n"))
    else:
        if block.title:
            yield style(block.title, bold=True)
        yield from _untabbed(block.text).split("\n")


def diff_lines(diff: str, style: Style) -> Iterator[Shown]:
    """A unified diff's lines, coloured by kind, the changed characters of a removed or an
    added line in reverse video."""
    for line in marked_lines(diff):
        colour: dict[str, Any] = {"fg": _LINE_COLOURS.get(line.kind)}
        if line.kind == "file":
            colour = {"bold": True}
        yield Shown("").join(
            _styled(style, _untabbed(text), reverse=changed, **colour)
            for changed, text in line.pieces
        )


def _styled(style: Style, text: str, **styles: Any) -> Shown:
    """``style`` with only the styles that are set (click resets an unset one)."""
    return style(text, **{name: value for name, value in styles.items() if value})


def _untabbed(text: str) -> str:
    return text.replace("\t", TAB)
