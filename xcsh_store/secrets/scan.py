"""Where the secrets are: each session file read line by line, every secret in a line's
strings named with its kind, the session and entry, the file and line number, and a masked
preview, so that its owner can rotate it (``xcsh-store secrets``). Never the secret itself.

Lines are scanned a chunk at a time (one call of the detector for many lines); a chunk in
which something was found is looked at line by line.

``FileSecrets``: the secrets of whole files, kept while a file is unchanged, for whoever shows
pieces of a file (serve, mcp) and must take out a secret its pieces cut in two.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import orjson

from xcsh_store.files import open_regular_file
from xcsh_store.index import IndexedSession, SessionIndex
from xcsh_store.secrets.detect import SEPARATOR, Secret, SecretDetector
from xcsh_store.secrets.redact import json_strings, json_view_bytes, mask

# Bytes of lines scanned in one call of the detector.
CHUNK_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class SessionSecret:
    """A secret in a session file (``preview`` is masked)."""

    kind: str
    session_id: str
    agent: str
    entry_id: str | None
    path: str
    line: int
    preview: str


def session_secrets(
    index: SessionIndex, sessions: Iterable[IndexedSession], detector: SecretDetector
) -> Iterator[SessionSecret]:
    """The secrets of ``sessions``, file by file, in line order."""
    for session in sessions:
        entry_ids = dict(
            index.connection.execute(
                "SELECT offset, id FROM entries WHERE session = ? ORDER BY offset DESC, part DESC",
                (session.file_id,),
            )
        )
        path = index.local_path(session.path)
        for number, offset, secret in _file_secrets(path, detector):
            yield SessionSecret(
                kind=secret.kind,
                session_id=session.id,
                agent=session.agent,
                entry_id=entry_ids.get(offset),
                path=session.path,
                line=number,
                preview=mask(secret.value),
            )


def _file_secrets(path: str, detector: SecretDetector) -> Iterator[tuple[int, int, Secret]]:
    """(line number, byte offset of the line, secret) of each secret in the file's lines."""
    try:
        stream = open_regular_file(path)
    except OSError:
        return  # gone or unreadable since the last sync: nothing to say of it
    chunk: list[tuple[int, int, bytes]] = []
    size = offset = 0
    with stream:
        for number, line in enumerate(stream, start=1):
            chunk.append((number, offset, line))
            size += len(line)
            offset += len(line)
            if size >= CHUNK_BYTES:
                yield from _chunk_secrets(chunk, detector)
                chunk, size = [], 0
    yield from _chunk_secrets(chunk, detector)


def _chunk_secrets(
    chunk: list[tuple[int, int, bytes]], detector: SecretDetector
) -> Iterator[tuple[int, int, Secret]]:
    """The chunk's lines scanned as one (their JSON text, ``json_view``); where that finds
    something, each line's strings one line at a time."""
    lines = b"".join(line for _number, _offset, line in chunk)
    if not chunk or not detector.find_in_bytes(json_view_bytes(lines)):
        return
    for number, offset, line in chunk:
        for secret in detector.find(_line_text(line)):
            yield number, offset, secret


class FileSecrets:
    """The secrets in each file asked for (its lines as JSON text, ``json_view``), kept while
    the file's size and time stay the same. Safe to share between threads."""

    # Files remembered at once.
    FILES = 256

    def __init__(self, detector: SecretDetector) -> None:
        self.detector = detector
        self._found: dict[str, tuple[tuple[int, int], list[Secret]]] = {}
        self._lock = threading.Lock()

    def of(self, path: str) -> list[Secret]:
        try:
            stat = os.stat(path)
        except OSError:
            return []
        state = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            kept = self._found.get(path)
        if kept is not None and kept[0] == state:
            return kept[1]
        found = self._scan(path)
        with self._lock:
            if len(self._found) >= self.FILES:
                self._found.clear()
            self._found[path] = (state, found)
        return found

    def _scan(self, path: str) -> list[Secret]:
        try:
            stream = open_regular_file(path)
        except OSError:
            return []
        found: dict[str, Secret] = {}
        with stream:
            while chunk := stream.read(CHUNK_BYTES):
                chunk += stream.readline()  # whole lines: no secret is cut in two
                for secret in self.detector.find_in_bytes(json_view_bytes(chunk)):
                    found.setdefault(secret.value, secret)
        return list(found.values())


def _line_text(line: bytes) -> str:
    """A line's strings, each of an object with its key (as redaction reads them); a line
    that is not JSON as it is."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line.decode("utf-8", "replace").strip()
    return SEPARATOR.join(json_strings(value))
