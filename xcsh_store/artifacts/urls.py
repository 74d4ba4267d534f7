"""``artifact://`` and ``agent://`` URLs: parsing, resolution inside the artifacts folder, paging.

Resolution follows the reference's check order and error texts. Beyond the reference, nothing a
URL names can be read from outside the artifacts folder: ids that are paths, and symlinks whose
target leaves the folder, are refused with an :class:`InternalUrlError`.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes

from xcsh_store.artifacts.output import (
    DEFAULT_MAX_BYTES,
    format_bytes,
    truncate_head,
    truncate_head_bytes,
    utf8_encode,
    utf8_len,
)
from xcsh_store.errors import InternalUrlError

SUPPORTED_SCHEMES = ("agent", "artifact")

_SCHEME_AND_HOST = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#]*)")
_DIGITS = re.compile(r"[0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z0-9_\-]+")
_QUOTE_ESCAPE = re.compile(r"""\\(["'\\])""")
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_ARTIFACT_FILE = re.compile(r"([0-9]+)\.")
# JavaScript's String.prototype.trim() set (Python's str.strip() differs, e.g. on U+FEFF).
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# No JSON array can be this long; bigger index tokens are clamped to it.
_MAX_INDEX = 2**53


@dataclass(frozen=True)
class InternalResource:
    """What an internal URL resolved to."""

    url: str
    content: str
    content_type: str
    size: int
    source_path: str
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class InternalUrl:
    """An ``artifact://`` / ``agent://`` URL split the way the reference router sees it.

    ``raw_host`` is the text between ``://`` and the first ``/``, ``?`` or ``#``, percent-decoded
    (kept raw when that fails), case preserved. ``pathname`` and ``search_params`` follow WHATWG
    URL parsing (dot segments resolved, ``+`` in the query is a space).
    """

    scheme: str
    raw_host: str
    pathname: str
    search_params: list[tuple[str, str]]
    href: str

    def get_param(self, name: str) -> str | None:
        """The first value of query parameter ``name`` (``URLSearchParams.get``)."""
        return next((value for key, value in self.search_params if key == name), None)


# ------------------------------------------------------------------------------------------------
# URL parsing


def _decode_uri_component(text: str) -> str | None:
    """``decodeURIComponent``: None where JavaScript would throw (bad escape, bad UTF-8)."""
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


def _percent_encode(text: str, also: str) -> str:
    """Percent-encode controls, non-ASCII and the characters in ``also`` (WHATWG sets)."""
    out: list[str] = []
    for char in text:
        if char < " " or char > "~" or char in also:
            out.extend(f"%{byte:02X}" for byte in utf8_encode(char))
        else:
            out.append(char)
    return "".join(out)


def _parse_form(query: str) -> list[tuple[str, str]]:
    """``application/x-www-form-urlencoded`` parsing, as URLSearchParams does it."""
    pairs: list[tuple[str, str]] = []
    for sequence in query.split("&"):
        if not sequence:
            continue
        name, _, value = sequence.partition("=")
        pairs.append((_form_decode(name), _form_decode(value)))
    return pairs


def _form_decode(text: str) -> str:
    return unquote_to_bytes(utf8_encode(text.replace("+", " "))).decode("utf-8", "replace")


_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_FORBIDDEN_HOST_CHARS = frozenset("\0\t\n\r #/:<>?@[\\]^|")


def _whatwg_accepts_authority(authority: str) -> bool:
    """Whether ``new URL()`` accepts this authority of a non-special URL (userinfo, port)."""
    host = authority.rpartition("@")[2]
    host, colon, port = host.partition(":")
    if colon and port and not (len(port) <= 5 and port.isascii() and port.isdigit()):
        return False
    if colon and port and int(port) > 65535:
        return False
    return not any(char in _FORBIDDEN_HOST_CHARS for char in host)


def _whatwg_path(path: str) -> str:
    """The serialised path of a non-special URL: dot segments resolved, characters encoded."""
    if not path:
        return ""
    segments: list[str] = []
    parts = path[1:].split("/")
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        lowered = part.lower()
        if lowered in ("..", ".%2e", "%2e.", "%2e%2e"):
            if segments:
                segments.pop()
            if last:
                segments.append("")
        elif lowered in (".", "%2e"):
            if last:
                segments.append("")
        else:
            segments.append(_percent_encode(part, ' "<>`{}'))
    return "/" + "/".join(segments)


def parse_internal_url(url: str) -> InternalUrl:
    """Split ``url``; raises ``Invalid URL: <url>`` without a ``scheme://`` start.

    The scheme is not checked here (see :func:`resolve_internal_url`).
    """
    match = _SCHEME_AND_HOST.match(url)
    if match is None:
        raise InternalUrlError(f"Invalid URL: {url}")
    scheme = match.group(1).lower()
    host_text = match.group(2)
    decoded_host = _decode_uri_component(host_text)
    raw_host = host_text if decoded_host is None else decoded_host

    # WHATWG drops tabs and newlines anywhere and controls/spaces at the end before parsing.
    rest = re.sub(r"[\t\n\r]", "", url[match.end(1) + 3 :]).rstrip(_C0_AND_SPACE)
    before_fragment, hash_sign, fragment = rest.partition("#")
    authority_end = len(before_fragment)
    for separator in "/?":
        found = before_fragment.find(separator)
        if found != -1:
            authority_end = min(authority_end, found)
    authority = before_fragment[:authority_end]
    path, question_mark, query = before_fragment[authority_end:].partition("?")

    if _whatwg_accepts_authority(authority):
        pathname = _whatwg_path(path)
        query = _percent_encode(query, ' "#<>')
        # An empty port is dropped when a URL is serialised.
        host_and_port = authority[:-1] if authority.endswith(":") else authority
        href = f"{scheme}://{_percent_encode(host_and_port, '')}{pathname}"
        if question_mark:
            href += "?" + query
        if hash_sign:
            href += "#" + _percent_encode(fragment, ' "<>`')
    else:
        # What the reference builds when URL parsing fails: the raw pieces of the input.
        raw_before_fragment = url.partition("#")[0]
        pathname = raw_before_fragment[match.end() :].partition("?")[0]
        query = raw_before_fragment.partition("?")[2]
        href = url
    return InternalUrl(scheme, raw_host, pathname, _parse_form(query), href)


# ------------------------------------------------------------------------------------------------
# JSON query language


def _js_trim(text: str) -> str:
    return text.strip(_JS_WHITESPACE)


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
    text = _js_trim(query)
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
            inner = _js_trim(text[position + 1 : close])
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


def _array_index(key: str) -> int | None:
    """A property name that indexes a JavaScript array (canonical decimal, below 2**32 - 1)."""
    if _DIGITS.fullmatch(key) and (key == "0" or not key.startswith("0")) and len(key) <= 10:
        number = int(key)
        if number < 2**32 - 1:
            return number
    return None


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
            index = _array_index(token)
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
        decoded = _decode_uri_component(segment)
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


# ------------------------------------------------------------------------------------------------
# JSON as JavaScript parses and prints it


def _reject_constant(name: str) -> object:
    raise ValueError(f"Unexpected token {name!r}: NaN and Infinity are not JSON")


def _parse_json(text: str) -> object:
    """``JSON.parse``: every number is a double, NaN/Infinity literals are errors."""
    return json.loads(text, parse_int=float, parse_constant=_reject_constant)


def _js_number(value: float) -> str:
    """``Number.prototype.toString()`` for a double (shortest round-trip digits)."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent_text = repr(abs(value)).partition("e")
    integer_part, _, fraction = mantissa.partition(".")
    all_digits = integer_part + fraction
    significant = all_digits.lstrip("0")
    # value = 0.<digits> x 10**point
    point = len(integer_part) + int(exponent_text or 0) - (len(all_digits) - len(significant))
    digits = significant.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        text = digits + "0" * (point - count)
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        exponent = point - 1
        exponent_sign = "+" if exponent >= 0 else "-"
        head = digits[0] + ("." + digits[1:] if count > 1 else "")
        text = f"{head}e{exponent_sign}{abs(exponent)}"
    return sign + text


_JSON_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')


def _js_string(text: str) -> str:
    return (
        '"'
        + _NEEDS_ESCAPE.sub(
            lambda match: _JSON_ESCAPES.get(match.group(), f"\\u{ord(match.group()):04x}"), text
        )
        + '"'
    )


def _js_scalar(value: object) -> str | None:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return _js_string(value)
    return None


def _js_object_items(obj: dict) -> list[tuple[str, object]]:
    """JavaScript property order: array-index keys ascending first, then insertion order."""
    indexed = sorted(
        ((index, key) for key in obj if (index := _array_index(key)) is not None),
    )
    index_keys = {key for _, key in indexed}
    return [(key, obj[key]) for _, key in indexed] + [
        (key, value) for key, value in obj.items() if key not in index_keys
    ]


def js_stringify(value: object) -> str:
    """``JSON.stringify(value, null, 2) ?? "null"`` for parsed JSON (iterative: any depth)."""
    parts: list[str] = []
    stack: list[tuple[Iterator[tuple[str | None, object]], str, int]] = []
    first_in_frame: list[bool] = []

    def emit(item: object, depth: int) -> None:
        scalar = _js_scalar(item)
        if scalar is not None:
            parts.append(scalar)
            return
        if isinstance(item, dict):
            entries: list[tuple[str | None, object]] = list(_js_object_items(item))
            opening, closing = "{", "}"
        elif isinstance(item, list | tuple):
            entries = [(None, element) for element in item]
            opening, closing = "[", "]"
        else:
            raise TypeError(f"not a JSON value: {type(item).__name__}")
        if not entries:
            parts.append(opening + closing)
            return
        parts.append(opening)
        stack.append((iter(entries), closing, depth + 1))
        first_in_frame.append(True)

    emit(value, 0)
    while stack:
        entries_left, closing, depth = stack[-1]
        entry = next(entries_left, None)
        if entry is None:
            stack.pop()
            first_in_frame.pop()
            parts.append("\n" + "  " * (depth - 1) + closing)
            continue
        parts.append(("\n" if first_in_frame[-1] else ",\n") + "  " * depth)
        first_in_frame[-1] = False
        key, child = entry
        if key is not None:
            parts.append(_js_string(key) + ": ")
        emit(child, depth)
    return "".join(parts)


# ------------------------------------------------------------------------------------------------
# Reading files inside the artifacts folder


def _within(root_real: str, path_real: str) -> bool:
    return os.path.commonpath([root_real, path_real]) == root_real


def _read_inside(artifacts_dir: str, path: str, label: str) -> str | None:
    """Read ``path`` if it exists and resolves inside ``artifacts_dir``; None if missing.

    Symlinks are followed only while they stay inside the folder; the final open refuses a
    symlink, so a name swapped for a link after the check is not followed either.
    """
    root_real = os.path.realpath(artifacts_dir)
    if not _within(root_real, os.path.realpath(path)):
        raise InternalUrlError(f"{label} resolves outside the artifacts directory: {path}")
    try:
        real = os.path.realpath(path, strict=True)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InternalUrlError(f"{label} is a symlink loop: {path}") from error
        raise InternalUrlError(f"Cannot read {label}: {error.strerror}: {path}") from error
    if not _within(root_real, real):
        raise InternalUrlError(f"{label} resolves outside the artifacts directory: {path}")
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(real, flags)
    except OSError as error:
        raise InternalUrlError(f"Cannot read {label}: {error.strerror}: {path}") from error
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InternalUrlError(f"{label} is not a regular file: {path}")
    with os.fdopen(fd, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def _folder_error(error: OSError, artifacts_dir: str) -> InternalUrlError:
    if isinstance(error, FileNotFoundError):
        return InternalUrlError("No artifacts directory found")
    return InternalUrlError(f"Cannot read artifacts directory: {error.strerror}: {artifacts_dir}")


def _resolve_artifact(url: InternalUrl, artifacts_dir: str | None) -> InternalResource:
    if not artifacts_dir:
        raise InternalUrlError("No session - artifacts unavailable")
    artifact_id = url.raw_host
    if not artifact_id:
        raise InternalUrlError("artifact:// URL requires a numeric ID: artifact://0")
    if not _DIGITS.fullmatch(artifact_id):
        raise InternalUrlError(f"artifact:// ID must be numeric, got: {artifact_id}")
    try:
        names = os.listdir(artifacts_dir)
    except OSError as error:
        raise _folder_error(error, artifacts_dir) from error
    prefix = f"{artifact_id}."
    name = next((name for name in names if name.startswith(prefix)), None)
    if name is None:
        ids = [match.group(1) for match in map(_ARTIFACT_FILE.match, names) if match]
        available = ", ".join(sorted(ids, key=int)) or "none"
        raise InternalUrlError(f"Artifact {artifact_id} not found. Available: {available}")
    path = os.path.join(artifacts_dir, name)
    content = _read_inside(artifacts_dir, path, f"Artifact {artifact_id}")
    if content is None:
        raise InternalUrlError(f"Artifact {artifact_id} not found (removed while reading)")
    return InternalResource(url.href, content, "text/plain", utf8_len(content), path, [])


def _check_output_id(output_id: str) -> None:
    if output_id in (".", "..") or any(char in output_id for char in "/\\\0"):
        raise InternalUrlError(
            f"agent:// ID must name a file inside the artifacts directory, got: {output_id!r}"
        )


def _has_extraction(url: InternalUrl) -> tuple[bool, bool]:
    """(path extraction, ``?q=`` extraction) requested by an ``agent://`` URL."""
    return url.pathname not in ("", "/"), bool(url.get_param("q"))


def _available_outputs(artifacts_dir: str) -> str:
    try:
        names = os.listdir(artifacts_dir)
    except OSError:
        names = []
    outputs = [name.replace(".md", "", 1) for name in names if name.endswith(".md")]
    return ", ".join(outputs) or "none"


def _resolve_agent(url: InternalUrl, artifacts_dir: str | None) -> InternalResource:
    if not artifacts_dir:
        raise InternalUrlError("No session - agent outputs unavailable")
    try:
        os.stat(artifacts_dir)
    except OSError as error:
        raise _folder_error(error, artifacts_dir) from error
    output_id = url.raw_host
    if not output_id:
        raise InternalUrlError("agent:// URL requires an output ID: agent://<id>")
    _check_output_id(output_id)
    path_extraction, query_extraction = _has_extraction(url)
    if path_extraction and query_extraction:
        raise InternalUrlError("agent:// URL cannot combine path extraction with ?q=")

    path = os.path.join(artifacts_dir, f"{output_id}.md")
    raw = _read_inside(artifacts_dir, path, f"Output {output_id}")
    if raw is None:
        raise InternalUrlError(
            f"Not found: {output_id}\nAvailable: {_available_outputs(artifacts_dir)}"
        )
    if not (path_extraction or query_extraction):
        return InternalResource(url.href, raw, "text/markdown", utf8_len(raw), path, [])

    try:
        document = _parse_json(raw)
    except (ValueError, RecursionError) as error:
        raise InternalUrlError(f"Output {output_id} is not valid JSON: {error}") from error
    query = path_to_query(url.pathname) if path_extraction else url.get_param("q") or ""
    notes: list[str] = []
    if query:
        content = js_stringify(apply_query(document, query))
        notes.append(f"Extracted: {query}")
    else:
        content = js_stringify(document)
    return InternalResource(url.href, content, "application/json", utf8_len(content), path, notes)


def resolve_internal_url(
    url: str, artifacts_dir: str | os.PathLike[str] | None
) -> InternalResource:
    """Resolve an ``artifact://<id>`` or ``agent://<id>[/<path>][?q=<query>]`` URL.

    ``artifacts_dir`` is the session's artifact folder (None for a session without a file).
    Every failure raises :class:`InternalUrlError` with the reference's message.
    """
    parsed = _parse_supported(url)
    directory = os.fspath(artifacts_dir) if artifacts_dir is not None else None
    if parsed.scheme == "artifact":
        return _resolve_artifact(parsed, directory)
    return _resolve_agent(parsed, directory)


def _parse_supported(url: str) -> InternalUrl:
    parsed = parse_internal_url(url)
    if parsed.scheme not in SUPPORTED_SCHEMES:
        supported = ", ".join(f"{scheme}://" for scheme in SUPPORTED_SCHEMES)
        raise InternalUrlError(f"Unknown protocol: {parsed.scheme}://\nSupported: {supported}")
    return parsed


# ------------------------------------------------------------------------------------------------
# Paging (the read tool)

_LINE_SELECTOR = re.compile(r"[Ll]([0-9]+)(?:-[Ll]?([0-9]+))?")


def parse_line_selector(selector: str) -> tuple[int, int | None]:
    """``L<a>``, ``L<a>-L<b>`` or ``L<a>-<b>`` -> ``(offset, limit)`` (limit None: open end)."""
    match = _LINE_SELECTOR.fullmatch(selector)
    if match is None:
        raise InternalUrlError(f"Invalid line selector: {selector}")
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) is not None else None
    _check_page(start, None if end is None else end - start + 1)
    return start, None if end is None else end - start + 1


def _check_page(offset: int | None, limit: int | None) -> None:
    start = 1 if offset is None else offset
    if start < 1:
        raise InternalUrlError(f"L{start} is invalid; lines are 1-indexed. Use sel=L1.")
    if limit is not None and limit < 1:
        raise InternalUrlError(
            f"Invalid range L{start}-L{start + limit - 1}: end must be >= start."
        )


def _page(text: str, offset: int | None, limit: int | None) -> str:
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


def read_internal_url(
    url: str,
    artifacts_dir: str | os.PathLike[str] | None,
    offset: int | None = None,
    limit: int | None = None,
) -> str:
    """The text the read tool shows for an internal URL, paged by ``offset``/``limit`` lines.

    ``offset`` is 1-based; ``limit`` counts lines. Past the end, the returned text says so (as
    the reference does) instead of raising. JSON extraction results come back whole, and
    asking for a page of one raises ``Cannot combine query extraction with offset/limit``.
    """
    parsed = _parse_supported(url)
    _check_page(offset, limit)
    extraction = parsed.scheme == "agent" and any(_has_extraction(parsed))
    if extraction and (offset is not None or limit is not None):
        raise InternalUrlError("Cannot combine query extraction with offset/limit")
    resource = resolve_internal_url(url, artifacts_dir)
    if extraction:
        return resource.content
    return _page(resource.content, offset, limit)
