"""How many terminal cells a line of output takes, counted independently of the code under test."""

from __future__ import annotations

import re
import unicodedata

_STYLE = re.compile(r"\x1b\[[0-9;]*m")


def cells(line: str) -> int:
    """Terminal cells of a line, counted independently of the code under test."""
    total = 0
    for char in _STYLE.sub("", line):
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Cf", "Cc"):
            continue
        total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total
