"""Streamed tool output: tail buffering with spill to an artifact file, truncation, sanitising.

Byte counts are UTF-8 bytes. Python strings are sequences of code points, so "characters" here
are code points (the reference counts UTF-16 units); a surrogate code point in a Python string
counts 3 bytes, like the U+FFFD that JavaScript's encoder writes for it.
"""

from __future__ import annotations

import codecs
import contextlib
import itertools
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import BinaryIO, NamedTuple

from xcsh_store.paths import FILE_MODE

log = logging.getLogger("xcsh_store")

DEFAULT_MAX_LINES = 3000
DEFAULT_MAX_BYTES = 51200
DEFAULT_MAX_COLUMN = 1024

_SURROGATES = re.compile(r"[\ud800-\udfff]")


def utf8_len(text: str) -> int:
    return len(_encode(text))


def utf8_encode(text: str) -> bytes:
    """Well-formed UTF-8, as JavaScript's TextEncoder writes it (U+FFFD for surrogates)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text).encode("utf-8")


def _encode(text: str) -> bytes:
    # surrogatepass keeps a stray surrogate at its JavaScript byte length (3) and lets the
    # exact string come back from _decode, which the tail buffer relies on.
    return text.encode("utf-8", "surrogatepass")


def _decode(data: bytes | bytearray | memoryview) -> str:
    return bytes(data).decode("utf-8", "surrogatepass")


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _tail_start(data: bytes | bytearray, max_bytes: int) -> int:
    """Where the last ``max_bytes`` bytes begin, moved forward to a character boundary."""
    start = max(0, len(data) - max_bytes)
    while start < len(data) and _is_continuation(data[start]):
        start += 1
    return start


# ------------------------------------------------------------------------------------------------
# Byte and line truncation


class ByteTruncation(NamedTuple):
    """Text cut to a byte budget and its UTF-8 size."""

    text: str
    bytes: int


class LineTruncation(NamedTuple):
    text: str
    was_truncated: bool


@dataclass(frozen=True)
class TruncationResult:
    """Outcome of :func:`truncate_head` / :func:`truncate_tail`.

    When nothing was cut, ``truncated`` is False and ``output_lines``/``output_bytes`` equal the
    totals (the reference leaves them out; equal totals say the same thing).
    """

    content: str
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    truncated: bool = False
    truncated_by: str | None = None
    last_line_partial: bool = False
    first_line_exceeds_limit: bool = False


def _cut_bytes(data: str | bytes, max_bytes: int, keep_tail: bool) -> ByteTruncation:
    if max_bytes <= 0:
        return ByteTruncation("", 0)
    from_str = isinstance(data, str)
    raw = _encode(data) if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes and keep_tail:
        raw = raw[_tail_start(raw, max_bytes) :]
    elif len(raw) > max_bytes:
        end = max_bytes
        while end > 0 and _is_continuation(raw[end]):
            end -= 1
        raw = raw[:end]
    # Bytes from the caller may be invalid UTF-8; bytes we encoded always decode back exactly.
    text = _decode(raw) if from_str else raw.decode("utf-8", "replace")
    return ByteTruncation(text, len(raw))


def truncate_tail_bytes(data: str | bytes, max_bytes: int) -> ByteTruncation:
    """The last ``max_bytes`` UTF-8 bytes of ``data``, never starting inside a character."""
    return _cut_bytes(data, max_bytes, keep_tail=True)


def truncate_head_bytes(data: str | bytes, max_bytes: int) -> ByteTruncation:
    """The first ``max_bytes`` UTF-8 bytes of ``data``; a character cut in two is dropped."""
    return _cut_bytes(data, max_bytes, keep_tail=False)


def truncate_line(line: str, max_chars: int = DEFAULT_MAX_COLUMN) -> LineTruncation:
    """Cut ``line`` to ``max_chars`` code points and mark the cut with ``…``."""
    if len(line) <= max_chars:
        return LineTruncation(line, False)
    return LineTruncation(line[:max_chars] + "…", True)


def _untruncated(content: str, total_lines: int, total_bytes: int) -> TruncationResult:
    return TruncationResult(content, total_lines, total_bytes, total_lines, total_bytes)


def _truncate_lines(
    content: str, max_lines: int, max_bytes: int, keep_tail: bool
) -> TruncationResult:
    total_bytes = utf8_len(content)
    lines = content.split("\n")
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes)
    # Whole lines from the kept end; every line after the first costs a "\n" separator too.
    kept = 0
    used = 0
    truncated_by = "lines"
    for line in itertools.islice(reversed(lines) if keep_tail else lines, max(0, max_lines)):
        cost = utf8_len(line) + (1 if kept else 0)
        if used + cost > max_bytes:
            truncated_by = "bytes"
            break
        kept += 1
        used += cost
    if truncated_by == "bytes" and kept == 0:
        if keep_tail:
            tail = truncate_tail_bytes(lines[-1], max_bytes)
            return TruncationResult(
                tail.text, total_lines, total_bytes, 1, tail.bytes, True, "bytes", True
            )
        return TruncationResult("", total_lines, total_bytes, 0, 0, True, "bytes", False, True)
    shown = lines[total_lines - kept :] if keep_tail else lines[:kept]
    return TruncationResult(
        "\n".join(shown), total_lines, total_bytes, kept, used, True, truncated_by
    )


def truncate_head(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep whole leading lines within ``max_lines`` and ``max_bytes`` (separators counted).

    If the first line alone is too big the content is empty and ``first_line_exceeds_limit``
    is set.
    """
    return _truncate_lines(content, max_lines, max_bytes, keep_tail=False)


def truncate_tail(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep whole trailing lines; a last line that alone is too big keeps its last bytes."""
    return _truncate_lines(content, max_lines, max_bytes, keep_tail=True)


class TailBuffer:
    """Keeps the last ``max_bytes`` UTF-8 bytes of appended text (trimmed lazily, at 2x)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._data = bytearray()

    def append(self, text: str) -> None:
        if not text:
            return
        if self.max_bytes <= 0:
            self._data.clear()
            return
        chunk = _encode(text)
        if len(chunk) >= self.max_bytes:
            self._data = bytearray(chunk[_tail_start(chunk, self.max_bytes) :])
            return
        self._data += chunk
        if len(self._data) > 2 * self.max_bytes:
            self._trim()

    def _trim(self) -> None:
        if self.max_bytes <= 0:
            self._data.clear()
        elif len(self._data) > self.max_bytes:
            del self._data[: _tail_start(self._data, self.max_bytes)]

    def text(self) -> str:
        self._trim()
        return _decode(self._data)

    def bytes(self) -> int:
        self._trim()
        return len(self._data)


# ------------------------------------------------------------------------------------------------
# Notices


def _js_to_fixed_1(value: float) -> str:
    """``Number.prototype.toFixed(1)``: the exact binary value, ties rounded away from zero."""
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def format_bytes(size: int) -> str:
    """``1023B``, ``1.5KB``, ``2.0MB``, ``1.0GB`` (binary units, one decimal)."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return _js_to_fixed_1(size / 1024) + "KB"
    if size < 1024 * 1024 * 1024:
        return _js_to_fixed_1(size / (1024 * 1024)) + "MB"
    return _js_to_fixed_1(size / (1024 * 1024 * 1024)) + "GB"


def format_tail_truncation_notice(
    result: TruncationResult,
    full_output_path: str | None = None,
    original_content: str | None = None,
    suffix: str = "",
) -> str:
    """``\\n\\n[Showing lines a-b of n...]`` for tail-truncated output, ``""`` if not truncated."""
    if not result.truncated:
        return ""
    full_output = f". Full output: {full_output_path}" if full_output_path else ""
    end = result.total_lines
    if result.last_line_partial:
        line_size = ""
        if original_content:
            last_line = original_content[original_content.rfind("\n") + 1 :]
            line_size = f" (line is {format_bytes(utf8_len(last_line))})"
        notice = (
            f"[Showing last {format_bytes(result.output_bytes)} of line {end}"
            f"{line_size}{full_output}{suffix}]"
        )
    else:
        start = end - result.output_lines + 1
        notice = f"[Showing lines {start}-{end} of {end}{full_output}{suffix}]"
    return "\n\n" + notice


def format_head_truncation_notice(
    result: TruncationResult, start_line: int = 1, total_file_lines: int | None = None
) -> str:
    """``\\n\\n[Showing lines a-b of n. Use sel=L<b+1> to continue]``, ``""`` if not truncated."""
    if not result.truncated:
        return ""
    total = result.total_lines if total_file_lines is None else total_file_lines
    end = start_line + result.output_lines - 1
    return f"\n\n[Showing lines {start_line}-{end} of {total}. Use sel=L{end + 1} to continue]"


# ------------------------------------------------------------------------------------------------
# Sanitising

# Escape sequences as terminals parse them. An introducer whose terminator never comes is not a
# sequence: only the ESC goes (with the other control characters) and the rest stays as text.
_ESCAPE_SEQUENCE = (
    r"\x1b\[[^\x40-\x7e]*[\x40-\x7e]"  # CSI: up to the first final byte
    r"|\x1b\].*?(?:\x07|\x1b\\)"  # OSC: up to BEL or ST
    r"|\x1b[PX^_].*?\x1b\\"  # DCS, SOS, PM, APC: up to ST
    r"|\x1b[\x20-\x2f][^\x30-\x7e]*[\x30-\x7e]"  # intermediate bytes, then a final byte
    r"|\x1b[\x40-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e]"  # two-character sequences
)
# Tab and newline stay; every other C0 control, DEL, C1 and any surrogate goes.
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]"
_SANITIZE = re.compile(f"{_ESCAPE_SEQUENCE}|{_CONTROL}", re.DOTALL)

# Complete inline-image sequences (SIXEL, iTerm2, Kitty) a terminal with image support renders.
_IMAGE_SEQUENCE = re.compile(
    r"\x1bP[0-9;]*q.*?(?:\x1b\\|\x07)"
    r"|\x1b\]1337;(?:File=|MultipartFile=|FilePart=|FileEnd).*?(?:\x07|\x1b\\)"
    r"|\x1b_G.*?\x1b\\",
    re.DOTALL,
)


def sanitize_text(text: str) -> str:
    """Remove ANSI escape sequences, ``\\r`` and other control characters; keep ``\\t``/``\\n``.

    Python strings have no UTF-16 surrogate pairs, so every surrogate code point counts as a
    lone surrogate and is removed.
    """
    return _SANITIZE.sub("", text)


def sanitize_with_image_passthrough(text: str, image_passthrough: bool = False) -> str:
    """:func:`sanitize_text`, except that complete image sequences are kept when enabled.

    The text between image sequences is sanitised piece by piece, so an image sequence is
    never mistaken for part of a neighbouring escape sequence.
    """
    if not image_passthrough:
        return sanitize_text(text)
    pieces: list[str] = []
    position = 0
    for match in _IMAGE_SEQUENCE.finditer(text):
        pieces.append(sanitize_text(text[position : match.start()]))
        pieces.append(match.group())
        position = match.end()
    pieces.append(sanitize_text(text[position:]))
    return "".join(pieces)


# ------------------------------------------------------------------------------------------------
# OutputSink


@dataclass(frozen=True)
class OutputSummary:
    """What a finished :class:`OutputSink` reports; ``artifact_id`` only when the file exists."""

    output: str
    truncated: bool
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    artifact_id: str | None = None


class OutputSink:
    """Collects streamed output: a bounded tail in memory, the whole output in a file once big.

    Until ``spill_threshold`` bytes have been buffered everything stays in memory. The chunk
    that overflows opens ``artifact_path`` (exclusively: an existing file is never clobbered),
    writes everything so far, and from then on every chunk goes to the file while memory keeps
    only the last ``spill_threshold`` bytes. If the file cannot be created or written, the sink
    silently keeps the tail only and reports no artifact id (a partial file is removed).
    Chunks are kept raw; :meth:`dump` sanitises the tail once.
    """

    def __init__(
        self,
        artifact_path: str | None = None,
        artifact_id: str | None = None,
        spill_threshold: int = DEFAULT_MAX_BYTES,
        on_chunk: Callable[[str], None] | None = None,
        *,
        chunk_throttle_ms: float = 0,
        mask_secrets: Callable[[str], str] | None = None,
        image_passthrough: bool = False,
    ) -> None:
        self._artifact_path = artifact_path
        self._artifact_id = artifact_id
        self._threshold = spill_threshold
        self._on_chunk = on_chunk
        self._throttle_ms = chunk_throttle_ms
        self._mask_secrets = mask_secrets
        self._image_passthrough = image_passthrough
        # The reference's buffer is always exactly the last _buffer_bytes bytes of _tail;
        # _tail may hold more so that trimming happens rarely.
        self._tail = bytearray()
        self._buffer_bytes = 0
        self._newlines = 0
        self._total_bytes = 0
        self._saw_data = False
        self._truncated = False
        self._last_chunk_time: float | None = None
        self._file: BinaryIO | None = None
        self._file_failed = False
        self._file_complete = False
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    @property
    def tail_text(self) -> str:
        """The raw (unsanitised) in-memory tail that :meth:`dump` will report."""
        return _decode(self._tail[len(self._tail) - self._buffer_bytes :])

    def push(self, chunk: str) -> None:
        if self._mask_secrets is not None:
            chunk = self._mask_secrets(chunk)
        if self._on_chunk is not None:
            now = time.monotonic() * 1000
            if self._last_chunk_time is None or now - self._last_chunk_time >= self._throttle_ms:
                self._last_chunk_time = now
                self._on_chunk(chunk)

        data = _encode(chunk)
        size = len(data)
        self._total_bytes += size
        if chunk:
            self._saw_data = True
            self._newlines += chunk.count("\n")

        will_overflow = self._buffer_bytes + size > self._threshold
        if self._artifact_path and (self._file is not None or will_overflow):
            self._write_to_file(chunk)

        self._tail += data
        if not will_overflow:
            self._buffer_bytes += size
            return
        self._truncated = True
        start = _tail_start(self._tail, self._threshold)
        self._buffer_bytes = len(self._tail) - start
        if len(self._tail) > 2 * self._threshold:
            del self._tail[:start]

    def push_bytes(self, data: bytes) -> None:
        """Push raw bytes; UTF-8 is decoded incrementally (a BOM is kept as U+FEFF).

        Invalid bytes become U+FFFD. Bytes that complete no character yet push nothing.
        """
        text = self._decoder.decode(data)
        if text:
            self.push(text)

    def flush_bytes(self) -> None:
        """End the byte stream: an incomplete trailing character becomes U+FFFD."""
        text = self._decoder.decode(b"", final=True)
        if text:
            self.push(text)

    def _write_to_file(self, chunk: str) -> None:
        if self._file_failed or self._file_complete or self._artifact_path is None:
            return
        try:
            if self._file is None:
                already_buffered = self._tail[len(self._tail) - self._buffer_bytes :]
                fd = os.open(
                    self._artifact_path,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                    FILE_MODE,
                )
                self._file = os.fdopen(fd, "wb")
                self._file.write(utf8_encode(_decode(already_buffered)))
            self._file.write(utf8_encode(chunk))
        except (OSError, ValueError) as error:
            self._abandon_file(error)

    def _abandon_file(self, error: Exception) -> None:
        """Fall back to the in-memory tail; an incomplete artifact must not look complete."""
        log.debug("output artifact %s unavailable: %s", self._artifact_path, error)
        if self._file is not None and self._artifact_path is not None:  # the one with a file
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
            with contextlib.suppress(OSError):
                os.unlink(self._artifact_path)
        self._file_failed = True

    def _close_file(self) -> None:
        if self._file is None:
            return
        try:
            self._file.close()
        except OSError as error:
            self._abandon_file(error)
            return
        self._file = None
        self._file_complete = True

    def dump(self, notice: str | None = None) -> OutputSummary:
        """Finish: close the artifact file and report the sanitised tail and the totals."""
        self.flush_bytes()
        self._close_file()
        raw_tail = self.tail_text
        output = (f"[{notice}]\n" if notice else "") + sanitize_with_image_passthrough(
            raw_tail, self._image_passthrough
        )
        if self._mask_secrets is not None:
            output = self._mask_secrets(output)
        has_artifact = (
            self._file_complete
            and self._artifact_path is not None
            and os.path.isfile(self._artifact_path)
        )
        return OutputSummary(
            output=output,
            truncated=self._truncated,
            total_lines=self._newlines + 1 if self._saw_data else 0,
            total_bytes=self._total_bytes,
            output_lines=raw_tail.count("\n") + 1 if raw_tail else 0,
            output_bytes=self._buffer_bytes,
            artifact_id=self._artifact_id if has_artifact else None,
        )
