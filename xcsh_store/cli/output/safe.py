"""The one sanitiser for what people read: no control character or bidi override in session
text, paths or titles reaches the terminal; each is shown as an escape (``\\x1b``, ``\\n``).

A session file can hold anything. Printed raw, ESC/CSI/OSC sequences set the terminal title, plant
OSC-8 links or move the cursor; CR, backspace and newlines forge lines; bidi overrides reorder
what is shown. ``--json`` output is exact and never passes through here (JSON escapes anyway).

Content is escaped before it is styled, never after: the CLI's colours are added to text that
is already safe (:class:`Shown`), so the sanitiser never has to tell the CLI's escape sequences
from a session's, and a session's are always shown as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import click


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_UNSAFE = (
    *range(0x20),  # C0 controls: ESC, BEL, BS, CR, LF, TAB, ...
    0x7F,  # DEL
    *range(0x80, 0xA0),  # C1 controls: 0x9b is a one-byte CSI on some terminals
    0x061C,  # Arabic letter mark
    0x200E,  # left-to-right and right-to-left marks
    0x200F,
    *range(0x202A, 0x202F),  # bidi embeddings and overrides (U+202E)
    *range(0x2066, 0x206A),  # bidi isolates
    0x2028,  # line and paragraph separators: a new line on some terminals
    0x2029,
    *range(0xD800, 0xE000),  # lone surrogates (file names that are not UTF-8) cannot be printed
)
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TABLE = {code: _SHORT.get(chr(code), _escape(code)) for code in _UNSAFE}
# Multi-line content (an artifact shown by `cat`) keeps its line breaks and tabs.
_TEXT_TABLE = {code: value for code, value in _TABLE.items() if chr(code) not in "\n\t"}


# A shell's command line: line breaks become spaces, and no other control character is kept.
_LINE_BREAKS = re.compile("[\r\n\v\f\x85\u2028\u2029]+")
_LINE_TABLE = {code: None for code in _UNSAFE} | {ord("\t"): " "}


def one_line(text: str) -> str:
    """``text`` as one line for a shell's command line: each run of line breaks a space (a
    newline would end a command there), tabs spaces, and every other control character, bidi
    control and lone surrogate removed (an escape sequence would reach the terminal as the
    shell draws the line: OSC 52 sets the clipboard; U+202E reorders what the line shows)."""
    return _LINE_BREAKS.sub(" ", text).translate(_LINE_TABLE)


def visible(text: str) -> str:
    """``text`` with every control character, bidi control and lone surrogate escaped."""
    return text.translate(_TABLE)


def visible_text(text: str) -> str:
    """Like :func:`visible`, keeping newlines and tabs (for multi-line content)."""
    return text.translate(_TEXT_TABLE)


class Shown(str):
    """Text ready for the terminal: the content in it went through :func:`visible` *before* the
    CLI styled it, so every escape sequence it holds is the CLI's own colour.

    Joined with plain text, the plain text is escaped first (``Shown + str``, ``str + Shown``,
    ``Shown.join``), so a line can be built from styled pieces and session text alike. Anything
    else (an f-string, ``%``, slicing) gives a plain ``str`` again, which :func:`shown` escapes
    whole: a mistake shows the colour codes as text, it never lets a session's through.
    """

    __slots__ = ()

    def __add__(self, other: str) -> Shown:
        return Shown(str.__add__(self, shown(other)))

    def __radd__(self, other: str) -> Shown:
        return Shown(str.__add__(shown(other), self))

    def join(self, parts: Iterable[str]) -> Shown:
        return Shown(str.join(self, [shown(part) for part in parts]))


def shown(text: str) -> Shown:
    """``text`` for the terminal: as it is when it is :class:`Shown`, else escaped whole."""
    return text if isinstance(text, Shown) else Shown(visible(text))


def styled(text: str, colour: bool, **styles: Any) -> Shown:
    """``text`` escaped, then styled with click's ``styles`` when ``colour`` is on."""
    content = shown(text)
    return Shown(click.style(content, **styles)) if colour and styles and content else content
