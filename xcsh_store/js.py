"""JavaScript-compatible text: what the reference agent's string and JSON built-ins give.

The store must write and read files byte for byte as the reference (a JavaScript program) does,
so every JavaScript rule it relies on is written here once: ``JSON.stringify`` (compact and
indented), ``JSON.parse``, ``Number.prototype.toString``, ``String.prototype.trim`` and its
whitespace, ``String.prototype.toWellFormed``, ``decodeURIComponent`` and string lengths in
UTF-16 code units.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

# What String.prototype.trim() and the regex \s strip (ECMAScript WhiteSpace and LineTerminator).
# str.strip() differs: it also strips U+001C..U+001F and U+0085 but keeps U+FEFF, so the same text
# would be stored differently by the two programs.
WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_CANONICAL_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")


# --------------------------------------------------------------------------------------------
# Strings


def trim(text: str) -> str:
    """``text.trim()``."""
    return text.strip(WHITESPACE)


def utf16_length(text: str) -> int:
    """``text.length``: the length in UTF-16 code units, the unit JavaScript measures strings in."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def well_formed(text: str) -> str:
    """``text.toWellFormed()``: lone surrogates become U+FFFD, split pairs are joined.

    A Python string can hold a surrogate pair as two code points where JavaScript sees one
    character; only surrogates that are not half of a pair are replaced. The result encodes as
    UTF-8, which SQLite needs to store or search a string.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def decode_uri_component(text: str) -> str | None:
    """``decodeURIComponent(text)``; None where JavaScript would throw (bad escape, bad UTF-8)."""
    if "%" not in text:
        return text
    pieces: list[str] = []
    position = 0
    for run in _PERCENT_RUN.finditer(text):
        if "%" in text[position : run.start()]:
            return None
        pieces.append(text[position : run.start()])
        try:
            pieces.append(bytes.fromhex(run.group().replace("%", "")).decode("utf-8"))
        except UnicodeDecodeError:
            return None
        position = run.end()
    if "%" in text[position:]:
        return None
    pieces.append(text[position:])
    return "".join(pieces)


def array_index(key: str) -> int | None:
    """The array index a property name stands for (canonical decimal below 2**32 - 1), or None."""
    if _CANONICAL_INDEX.fullmatch(key):
        number = int(key)
        if number < 2**32 - 1:
            return number
    return None


# --------------------------------------------------------------------------------------------
# Numbers


def json_number(value: float) -> str:
    """A double as ``JSON.stringify`` writes it: ``Number::toString`` (built from the shortest
    round-trip digits, which ``repr`` also gives), and ``null`` for NaN and the infinities."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    significant = (whole + fraction).lstrip("0")
    # value = 0.<digits> x 10**point
    point = len(whole) - len(whole + fraction) + len(significant) + int(exponent or 0)
    digits = significant.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        body = digits + "0" * (point - count)
    elif 0 < point <= 21:
        body = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        body = "0." + "0" * -point + digits
    else:
        power = point - 1
        body = digits[0] + ("." + digits[1:] if count > 1 else "") + ("e+" if power >= 0 else "e-")
        body += str(abs(power))
    return ("-" if value < 0 else "") + body


# --------------------------------------------------------------------------------------------
# JSON


def quote(text: str) -> str:
    """``JSON.stringify(text)`` for a string."""
    try:
        return orjson.dumps(text).decode()
    except orjson.JSONEncodeError:
        # Lone surrogates: JSON.stringify escapes them as \udxxx.
        escaped = json.dumps(text, ensure_ascii=False)
        return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", escaped)


# orjson formats floats like JSON.stringify except integral values ("1.0", "1e+16" where JS writes
# "1" and "10000000000000000") and exponent -6 ("1e-6" where JS writes "0.000001"). Number tokens
# always follow ':', '[' or ',' (or start the document); a match inside a string is harmless, it
# only sends that value down the exact slow path.
_ORJSON_FLOAT_MISMATCH = re.compile(
    rb"(?:^|[:\[,])-?\d+(?:\.0|(?:\.\d+)?e(?:\+1[6-9]|\+20|-6))(?:[,}\]]|$)"
)
# Every mismatch contains "+", "e-6", or ".0" before a terminator. These searches are several
# times faster than the regex (literal prefixes), so the regex only runs on the rare output that
# passes them.
_INTEGRAL_FLOAT_HINT = re.compile(rb"\.0(?:[,}\]]|$)")


def _may_differ_from_js(data: bytes) -> bool:
    if b"+" in data or b"e-6" in data or _INTEGRAL_FLOAT_HINT.search(data):
        return _ORJSON_FLOAT_MISMATCH.search(data) is not None
    return False


def stringify(value: Any) -> bytes:
    """``JSON.stringify(value)`` (compact) as UTF-8 bytes.

    A dict's keys are written in insertion order, the order the file format keeps (entries are
    written with the keys in the order they were built or read).
    """
    try:
        data = orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return _stringify_exact(value, "", property_order=False).encode("utf-8")
    if _may_differ_from_js(data):
        return _stringify_exact(value, "", property_order=False).encode("utf-8")
    return data


def stringify_indented(value: Any) -> str:
    """``JSON.stringify(value, null, 2)`` of parsed JSON, each dict as the JavaScript object
    ``JSON.parse`` would have made: array-index keys first, ascending, then the others in order.
    """
    return _stringify_exact(value, "  ", property_order=True)


def _scalar(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json_number(value)
    return None


def _property_order(obj: dict[str, Any]) -> list[tuple[str, Any]]:
    """A JavaScript object's property order: array-index keys ascending, then insertion order."""
    indexed = sorted((index, key) for key in obj if (index := array_index(key)) is not None)
    index_keys = {key for _, key in indexed}
    return [(key, obj[key]) for _, key in indexed] + [
        (key, member) for key, member in obj.items() if key not in index_keys
    ]


def _stringify_exact(value: Any, indent: str, *, property_order: bool) -> str:
    """The slow, exact encoder: iterative (any depth), JavaScript number and surrogate rules."""
    newline = "\n" if indent else ""
    colon = ": " if indent else ":"
    parts: list[str] = []
    # Work items are (True, value, depth) to encode or (False, text, 0) to emit between values.
    work: list[tuple[bool, Any, int]] = [(True, value, 0)]
    while work:
        is_value, item, depth = work.pop()
        if not is_value:
            parts.append(item)
            continue
        scalar = _scalar(item)
        if scalar is not None:
            parts.append(scalar)
            continue
        if isinstance(item, dict):
            items = _property_order(item) if property_order else item.items()
            keys = [quote(str(key)) + colon for key, _ in items]
            members: list[Any] | tuple[Any, ...] = [member for _, member in items]
            opening, closing = "{", "}"
        elif isinstance(item, (list, tuple)):
            keys, members = None, item
            opening, closing = "[", "]"
        else:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
        if not members:
            parts.append(opening + closing)
            continue
        parts.append(opening)
        inner = newline + indent * (depth + 1)
        work.append((False, newline + indent * depth + closing, 0))
        later = "," + inner
        for index in range(len(members) - 1, -1, -1):
            work.append((True, members[index], depth + 1))
            separator = later if index else inner
            work.append((False, separator + keys[index] if keys else separator, 0))
    return "".join(parts)


def reject_constant(name: str) -> object:
    """A ``parse_constant`` hook for Python's json: it accepts NaN and Infinity, JSON.parse not."""
    raise ValueError(f"Unexpected token {name!r}: NaN and Infinity are not JSON")


def parse(text: str) -> Any:
    """``JSON.parse(text)``: every number a double, NaN and Infinity rejected.

    Raises ValueError, or RecursionError for nesting too deep. Keys keep their order in the
    text; :func:`stringify_indented` writes them in JavaScript's property order.
    """
    return json.loads(text, parse_int=float, parse_constant=reject_constant)
