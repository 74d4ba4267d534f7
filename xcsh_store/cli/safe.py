"""The one sanitiser for what people read: no control character or bidi override in session
text, paths or titles reaches the terminal; each is shown as an escape (``\\x1b``, ``\\n``).

A session file can hold anything. Printed raw, ESC/CSI/OSC sequences set the terminal title, plant
OSC-8 links or move the cursor; CR, backspace and newlines forge lines; bidi overrides reorder
what is shown. ``--json`` output is exact and never passes through here (JSON escapes anyway).
"""

from __future__ import annotations

import re


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

# The SGR sequences click.style writes for the styles the verbs use (reset, bold, dim, red to
# cyan); kept when colour is on, every other sequence is escaped. No black, white, reverse or
# conceal: nothing here can hide text.
OWN_STYLE = re.compile(r"\x1b\[(?:[012]|3[1-6]|9[1-6])m")


def visible(text: str) -> str:
    """``text`` with every control character, bidi control and lone surrogate escaped."""
    return text.translate(_TABLE)


def visible_text(text: str) -> str:
    """Like :func:`visible`, keeping newlines and tabs (for multi-line content)."""
    return text.translate(_TEXT_TABLE)


def visible_line(text: str, colour: bool) -> str:
    """A line the CLI built: escaped as :func:`visible`, keeping only its own colours.

    With colour on, a session's text can at most carry one of the same few colours; it can never
    move the cursor, set a title, plant a link or hide text.
    """
    if not colour:
        return visible(text)
    pieces = OWN_STYLE.split(text)
    styles = OWN_STYLE.findall(text)
    out = [visible(pieces[0])]
    for style, piece in zip(styles, pieces[1:], strict=True):
        out += [style, visible(piece)]
    return "".join(out)
