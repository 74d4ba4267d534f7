"""The JSON query language of ``agent://`` URLs: ``.foo.bar[0]`` parsed and followed into JSON.

Tokens are parsed as the reference agent parses them, and followed with JavaScript property
semantics (an array's ``"0"`` and ``"length"``), so a query finds what it finds there.
"""

from __future__ import annotations

import re

from xcsh_store.errors import InternalUrlError
from xcsh_store.js import array_index, decode_uri_component, trim

_DIGITS = re.compile(r"[0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z0-9_\-]+")
_QUOTE_ESCAPE = re.compile(r"""\\(["'\\])""")
# No JSON array can be this long; bigger index tokens are clamped to it.
_MAX_INDEX = 2**53


def _index_token(digits: str) -> int:
    significant = digits.lstrip("0") or "0"
    if len(significant) > 16:
        return _MAX_INDEX
    return min(int(significant), _MAX_INDEX)


def parse_query(query: str) -> list[int | str]:
    """Tokens of a jq-like query: ``.foo.bar[0]`` -> ``["foo", "bar", 0]``.

    ``[n]`` (digits) is an array index (int); ``.0`` and ``["0"]`` are the string key ``"0"``.
    Raises :class:`InternalUrlError` (``Invalid query: ...``) on a malformed query.
    """
    text = trim(query)
    if text.startswith("."):
        text = text[1:]
    tokens: list[int | str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char == ".":
            position += 1
            continue
        if char == "[":
            close = text.find("]", position + 1)
            if close == -1:
                raise InternalUrlError(f"Invalid query: missing ] in {query}")
            inner = trim(text[position + 1 : close])
            if not inner:
                raise InternalUrlError(f"Invalid query: empty [] in {query}")
            if inner[0] in "\"'" and inner.endswith(inner[0]):
                tokens.append(_QUOTE_ESCAPE.sub(r"\1", inner[1:-1]))
            elif _DIGITS.fullmatch(inner):
                tokens.append(_index_token(inner))
            else:
                tokens.append(inner)
            position = close + 1
            continue
        identifier = _IDENTIFIER.match(text, position)
        if identifier is None:
            raise InternalUrlError(f"Invalid query: unexpected token '{char}' in {query}")
        tokens.append(identifier.group())
        position = identifier.end()
    return tokens


def apply_query(data: object, query: str, default: object = None) -> object:
    """Follow ``query`` into parsed JSON with JavaScript property semantics.

    Index tokens need an array; key tokens need an object or an array (where ``"0"`` indexes
    and ``"length"`` is the length). Anything missing gives ``default``.
    """
    current = data
    for token in parse_query(query):
        if current is None:
            return default
        if isinstance(token, int):
            if not isinstance(current, list | tuple) or token >= len(current):
                return default
            current = current[token]
        elif isinstance(current, dict):
            if token not in current:
                return default
            current = current[token]
        elif isinstance(current, list | tuple):
            if token == "length":
                current = len(current)
                continue
            index = array_index(token)
            if index is None or index >= len(current):
                return default
            current = current[index]
        else:
            return default
    return current


def path_to_query(pathname: str) -> str:
    """The query an ``agent://<id>/<path>`` path means: ``/foo/bar/0`` -> ``.foo.bar[0]``."""
    parts: list[str] = []
    for segment in pathname.split("/"):
        if not segment:
            continue
        decoded = decode_uri_component(segment)
        if decoded is None:
            decoded = segment
        if _DIGITS.fullmatch(decoded):
            parts.append(f"[{decoded}]")
        elif _IDENTIFIER.fullmatch(decoded):
            parts.append(f".{decoded}")
        else:
            escaped = decoded.replace("\\", "\\\\").replace("'", "\\'")
            parts.append(f"['{escaped}']")
    return "".join(parts)
