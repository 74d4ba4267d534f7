"""JSONL reading that never raises on content, and writing that matches JS ``JSON.stringify``."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

from xcsh_store.files import open_regular_file

BOM = b"\xef\xbb\xbf"
READ_CHUNK = 256 * 1024

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# JSON.parse itself gives up around 10,000 levels, and values 100,000 deep still load (a test
# holds us to it); deeper than this a line is taken as garbage, so that a line of millions of "["
# cannot make the reader build millions of lists.
MAX_NESTING = 200_000


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON.parse does not, so neither do we.
    raise ValueError(f"invalid JSON constant {name}")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


# --------------------------------------------------------------------------------------------
# Reading


def parse_line(line: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
    """The JSON objects on one line, in order (D15, D19).

    Almost every line is one object and takes the orjson fast path. Anything else (several
    values glued together, invalid UTF-8, lone surrogate escapes, nesting deeper than orjson
    allows) is recovered by the slow path; text after the last complete value is dropped, and
    values that are not objects are skipped like malformed lines.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return _recover_values(bytes(line).decode("utf-8", "replace"))
    return [value] if type(value) is dict else []


def _recover_values(text: str) -> list[dict[str, Any]]:
    values: list[dict[str, Any]] = []
    position = _WHITESPACE.match(text, 0).end()
    while position < len(text):
        try:
            value, position = _DECODER.raw_decode(text, position)
        except RecursionError:
            try:
                value, position = _decode_deep(text, position)
            except ValueError:
                break
        except ValueError:
            break
        if type(value) is dict:
            values.append(value)
        position = _WHITESPACE.match(text, position).end()
    return values


def _decode_deep(text: str, position: int) -> tuple[Any, int]:
    """Decode one JSON value without recursion, for nesting too deep for the C decoders."""
    stack: list[tuple[dict[str, Any] | list[Any], str | None]] = []
    while True:
        position = _WHITESPACE.match(text, position).end()
        char = text[position : position + 1]
        if char == "{" or char == "[":
            container: dict[str, Any] | list[Any] = {} if char == "{" else []
            position = _WHITESPACE.match(text, position + 1).end()
            closing = "}" if char == "{" else "]"
            if text[position : position + 1] == closing:
                value: Any = container
                position += 1
            else:
                key = None
                if char == "{":
                    key, position = _decode_key(text, position)
                if len(stack) >= MAX_NESTING:
                    raise ValueError(f"nested deeper than {MAX_NESTING} levels")
                stack.append((container, key))
                continue
        elif char == '"':
            value, position = json.decoder.scanstring(text, position + 1)
        else:
            value, position = _decode_scalar(text, position)
        # Attach the finished value to its parent, closing every container it completes.
        while True:
            if not stack:
                return value, position
            container, key = stack[-1]
            if key is None:
                container.append(value)  # type: ignore[union-attr]
            else:
                container[key] = value  # type: ignore[index]
            position = _WHITESPACE.match(text, position).end()
            char = text[position : position + 1]
            if char == ",":
                position += 1
                if isinstance(container, dict):
                    position = _WHITESPACE.match(text, position).end()
                    key, position = _decode_key(text, position)
                    stack[-1] = (container, key)
                break
            if char == ("}" if isinstance(container, dict) else "]"):
                stack.pop()
                value = container
                position += 1
                continue
            raise ValueError(f"unexpected {char!r} at {position}")


def _decode_key(text: str, position: int) -> tuple[str, int]:
    if text[position : position + 1] != '"':
        raise ValueError(f"expected a key at {position}")
    key, position = json.decoder.scanstring(text, position + 1)
    position = _WHITESPACE.match(text, position).end()
    if text[position : position + 1] != ":":
        raise ValueError(f"expected ':' at {position}")
    return key, position + 1


def _decode_scalar(text: str, position: int) -> tuple[Any, int]:
    for literal, value in _LITERALS.items():
        if text.startswith(literal, position):
            return value, position + len(literal)
    match = _NUMBER.match(text, position)
    if not match:
        raise ValueError(f"unexpected {text[position : position + 1]!r} at {position}")
    number = match.group()
    if "." in number or "e" in number or "E" in number:
        return float(number), match.end()
    return int(number), match.end()


@dataclass(slots=True)
class LineRecord:
    """One line of a JSONL file: where it is, and the objects parsed from it."""

    offset: int
    length: int
    values: list[dict[str, Any]]


def iter_lines(
    stream: BinaryIO, start: int = 0, *, include_unterminated: bool = True
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, line)`` for every line from byte ``start``; lines keep their ``\\n``.

    A leading UTF-8 BOM at offset 0 is skipped. The last line may lack its newline; it is
    yielded only when ``include_unterminated`` is true.
    """
    stream.seek(start)
    offset = start
    # The pieces of a line that has not ended yet, joined once when it ends: gluing each chunk
    # onto the piece before would make reading one long line quadratic in its length.
    pending: list[bytes] = []
    first = start == 0
    while True:
        chunk = stream.read(READ_CHUNK)
        if not chunk:
            break
        if first:
            first = False
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM) :]
                offset += len(BOM)
        if b"\n" not in chunk:
            pending.append(chunk)
            continue
        buffer = b"".join([*pending, chunk]) if pending else chunk
        line_start = 0
        while True:
            newline = buffer.find(b"\n", line_start)
            if newline < 0:
                break
            yield offset, buffer[line_start : newline + 1]
            offset += newline + 1 - line_start
            line_start = newline + 1
        pending = [buffer[line_start:]] if line_start < len(buffer) else []
    if pending and include_unterminated:
        yield offset, b"".join(pending)


def iter_records(
    stream: BinaryIO, start: int = 0, *, include_unterminated: bool = True
) -> Iterator[LineRecord]:
    """Every non-empty line with the objects it holds (possibly none, for a malformed line)."""
    for offset, line in iter_lines(stream, start, include_unterminated=include_unterminated):
        if not line.isspace():
            yield LineRecord(offset, len(line), parse_line(line))


def parse_jsonl_bytes(data: bytes) -> list[dict[str, Any]]:
    """All objects in a JSONL document held in memory (see :func:`parse_line`)."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    values: list[dict[str, Any]] = []
    view = memoryview(data)
    position = 0
    size = len(data)
    while position < size:
        newline = data.find(b"\n", position)
        end = size if newline < 0 else newline
        if end > position:
            values.extend(parse_line(view[position:end]))
        position = end + 1
    return values


def read_jsonl_file(path: str) -> list[dict[str, Any]]:
    """All objects in a JSONL file, read in chunks so a big file is never held twice."""
    values: list[dict[str, Any]] = []
    with open_regular_file(path) as stream:
        for _offset, line in iter_lines(stream):
            if not line.isspace():
                values.extend(parse_line(line))
    return values


# --------------------------------------------------------------------------------------------
# Writing

# orjson formats floats like JSON.stringify except integral values ("1.0", "1e+16" where JS writes
# "1" and "10000000000000000") and exponent -6 ("1e-6" where JS writes "0.000001"). Number tokens
# always follow ':', '[' or ',' (or start the document); a match inside a string is harmless, it
# only sends that value down the exact slow path.
_JS_FLOAT_MISMATCH = re.compile(
    rb"(?:^|[:\[,])-?\d+(?:\.0|(?:\.\d+)?e(?:\+1[6-9]|\+20|-6))(?:[,}\]]|$)"
)
# Every mismatch contains "+", "e-6", or ".0" before a terminator. These searches are several
# times faster than the regex (literal prefixes), so the regex only runs on the rare output that
# passes them.
_INTEGRAL_FLOAT_HINT = re.compile(rb"\.0(?:[,}\]]|$)")


def _may_differ_from_js(data: bytes) -> bool:
    if b"+" in data or b"e-6" in data or _INTEGRAL_FLOAT_HINT.search(data):
        return _JS_FLOAT_MISMATCH.search(data) is not None
    return False


def dumps(value: Any) -> bytes:
    """Compact JSON exactly as JavaScript's ``JSON.stringify`` would write it."""
    try:
        data = orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return _dumps_exact(value)
    if _may_differ_from_js(data):
        return _dumps_exact(value)
    return data


def dumps_line(value: Any) -> bytes:
    return dumps(value) + b"\n"


def _js_number(value: int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    return _js_float(value)


def _js_float(value: float) -> str:
    """ECMAScript Number::toString from the shortest round-trip digits (which repr also gives)."""
    text = repr(abs(value))
    mantissa, _, exponent = text.partition("e")
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


def _js_string(value: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        # Lone surrogates: JSON.stringify escapes them as \udxxx.
        text = json.dumps(value, ensure_ascii=False)
        return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _dumps_exact(value: Any) -> bytes:
    """The slow, exact encoder: iterative (any depth), JS number and surrogate rules."""
    parts: list[str] = []
    # Work items are values to encode or literal text to emit between them.
    work: list[tuple[bool, Any]] = [(True, value)]
    while work:
        is_value, item = work.pop()
        if not is_value:
            parts.append(item)
        elif item is None:
            parts.append("null")
        elif isinstance(item, str):
            parts.append(_js_string(item))
        elif isinstance(item, (bool, int, float)):
            parts.append(_js_number(item))
        elif isinstance(item, dict):
            pending: list[tuple[bool, Any]] = [(False, "}")]
            members = list(item.items())
            for index in range(len(members) - 1, -1, -1):
                key, member = members[index]
                pending.append((True, member))
                separator = "," if index else ""
                pending.append((False, f"{separator}{_js_string(str(key))}:"))
            pending.append((False, "{"))
            work.extend(pending)
        elif isinstance(item, (list, tuple)):
            pending = [(False, "]")]
            for index in range(len(item) - 1, -1, -1):
                pending.append((True, item[index]))
                if index:
                    pending.append((False, ","))
            pending.append((False, "["))
            work.extend(pending)
        else:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
    return "".join(parts).encode("utf-8")
