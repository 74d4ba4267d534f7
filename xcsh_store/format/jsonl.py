"""JSONL reading that never raises on content (and JSON documents read as leniently), and
writing one ``JSON.stringify`` line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # CPython's, not in typeshed
from typing import Any, BinaryIO

import orjson

from xcsh_store.files import open_regular_file
from xcsh_store.js import reject_constant, stringify, well_formed

BOM = b"\xef\xbb\xbf"
READ_CHUNK = 256 * 1024

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
# JSON.parse itself gives up around 10,000 levels, and values 100,000 deep still load (a test
# holds us to it); deeper than this a line is taken as garbage, so that a line of millions of "["
# cannot make the reader build millions of lists.
MAX_NESTING = 200_000


_DECODER = json.JSONDecoder(parse_constant=reject_constant)


# --------------------------------------------------------------------------------------------
# Reading


def parse_line(line: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
    """The JSON objects on one line, in order (compatibility: Lenient lines; Several objects on
    one line).

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


def parse_document(data: bytes | str) -> Any:
    """The JSON value of a whole document (another agent's chat file, never written back), read
    as leniently as parse_line reads a line: orjson first; else a byte that is not UTF-8 and a
    lone surrogate escape (``JSON.stringify`` writes one for an emoji it cut) as U+FFFD, and
    nesting deeper than orjson allows. ValueError when it is not one JSON value even so (one
    bad character costs a character, a truncated document the document)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if isinstance(data, str):
            text = data.removeprefix("\ufeff")
        else:
            text = data.removeprefix(BOM).decode("utf-8", "replace")
    position = _after_space(text, 0)
    try:
        value, position = _DECODER.raw_decode(text, position)
    except RecursionError:
        value, position = _decode_deep(text, position)
    if _after_space(text, position) != len(text):
        raise ValueError(f"text after the JSON value, at character {position}")
    return replace_lone_surrogates(value)


def replace_lone_surrogates(value: Any) -> Any:
    """``value`` with :func:`well_formed` applied to every string in it, at any depth (in
    place, but a string itself)."""
    if type(value) is str:
        return well_formed(value)
    pending: list[Any] = [value] if type(value) is dict or type(value) is list else []
    while pending:
        container = pending.pop()
        members = container.items() if type(container) is dict else enumerate(container)
        for key, item in list(members):
            if type(item) is str:
                container[key] = well_formed(item)
            elif type(item) is dict or type(item) is list:
                pending.append(item)
    return value


def read_document(path: str) -> Any:
    """The JSON value of the document at ``path`` (a regular file), by parse_document."""
    with open_regular_file(path) as stream:
        return parse_document(stream.read())


def _recover_values(text: str) -> list[dict[str, Any]]:
    values: list[dict[str, Any]] = []
    position = _after_space(text, 0)
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
        position = _after_space(text, position)
    return values


def _after_space(text: str, position: int) -> int:
    """The first position at or after ``position`` that is not JSON whitespace."""
    return _WHITESPACE.match(text, position).end()  # type: ignore[union-attr]  # * matches ""


def _decode_deep(text: str, position: int) -> tuple[Any, int]:
    """Decode one JSON value without recursion, for nesting too deep for the C decoders."""
    stack: list[tuple[dict[str, Any] | list[Any], str | None]] = []
    while True:
        position = _after_space(text, position)
        char = text[position : position + 1]
        if char == "{" or char == "[":
            container: dict[str, Any] | list[Any] = {} if char == "{" else []
            position = _after_space(text, position + 1)
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
            value, position = scanstring(text, position + 1)
        else:
            value, position = _decode_scalar(text, position)
        # Attach the finished value to its parent, closing every container it completes.
        while True:
            if not stack:
                return value, position
            container, key = stack[-1]
            if isinstance(container, list):
                container.append(value)
            elif key is not None:  # always, in an object
                container[key] = value
            position = _after_space(text, position)
            char = text[position : position + 1]
            if char == ",":
                position += 1
                if isinstance(container, dict):
                    position = _after_space(text, position)
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
    key, position = scanstring(text, position + 1)
    position = _after_space(text, position)
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


def dumps_line(value: Any) -> bytes:
    """One JSONL line: ``JSON.stringify(value) + "\\n"``."""
    return stringify(value) + b"\n"
