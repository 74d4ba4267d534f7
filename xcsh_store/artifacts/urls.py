"""``artifact://`` and ``agent://`` URLs: parsing them and resolving them in the artifacts folder.

Resolution follows the reference's check order and error texts. Beyond the reference, nothing a
URL names can be read from outside the artifacts folder: ids that are paths, and symlinks whose
target leaves the folder, are refused with an :class:`InternalUrlError`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes

from xcsh_store.artifacts.output import utf8_encode, utf8_len
from xcsh_store.artifacts.pages import check_page, page_of
from xcsh_store.artifacts.query import apply_query, path_to_query
from xcsh_store.errors import InternalUrlError, NoArtifactsError, OutputNotFoundError
from xcsh_store.js import decode_uri_component, parse, stringify_indented

SUPPORTED_SCHEMES = ("agent", "artifact")

_SCHEME_AND_HOST = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#]*)")
_DIGITS = re.compile(r"[0-9]+")
_ARTIFACT_FILE = re.compile(r"([0-9]+)\.")


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
    decoded_host = decode_uri_component(host_text)
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
        return NoArtifactsError("No artifacts directory found", artifacts_dir)
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


def _available_outputs(artifacts_dir: str) -> list[str]:
    try:
        names = os.listdir(artifacts_dir)
    except OSError:
        names = []
    return [name.replace(".md", "", 1) for name in names if name.endswith(".md")]


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
        available = _available_outputs(artifacts_dir)
        raise OutputNotFoundError(
            f"Not found: {output_id}\nAvailable: {', '.join(available) or 'none'}",
            output_id,
            available,
        )
    if not (path_extraction or query_extraction):
        return InternalResource(url.href, raw, "text/markdown", utf8_len(raw), path, [])

    try:
        document = parse(raw)
    except (ValueError, RecursionError) as error:
        raise InternalUrlError(f"Output {output_id} is not valid JSON: {error}") from error
    query = path_to_query(url.pathname) if path_extraction else url.get_param("q") or ""
    notes: list[str] = []
    if query:
        content = stringify_indented(apply_query(document, query))
        notes.append(f"Extracted: {query}")
    else:
        content = stringify_indented(document)
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
# The read tool


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
    check_page(offset, limit)
    extraction = parsed.scheme == "agent" and any(_has_extraction(parsed))
    if extraction and (offset is not None or limit is not None):
        raise InternalUrlError("Cannot combine query extraction with offset/limit")
    resource = resolve_internal_url(url, artifacts_dir)
    if extraction:
        return resource.content
    return page_of(resource.content, offset, limit)
