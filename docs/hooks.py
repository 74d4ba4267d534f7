"""MkDocs hooks of the manual (mkdocs.yml): the pages read on the site as they read on GitHub."""

from __future__ import annotations

import re
from typing import Any

_CODE_SPAN = re.compile(r"`[^`\n]+`")


def on_page_markdown(markdown: str, **_: Any) -> str:
    """A table row's code spans with ``\\|`` unescaped.

    GitHub needs a pipe in a table cell escaped, code spans included, and shows it without the
    backslash; Python-Markdown never splits a cell inside a code span, and shows the backslash.
    """
    lines = markdown.split("\n")
    fenced = False
    for number, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("|"):
            lines[number] = _CODE_SPAN.sub(lambda span: span.group(0).replace("\\|", "|"), line)
    return "\n".join(lines)
