"""Where the secrets are: each session file read line by line, every secret in a line's
strings named with its kind, the session and entry, the file and line number, and a masked
preview, so that its owner can rotate it (``xcsh-store secrets``). Never the secret itself.

Lines are scanned a chunk at a time (one call of the detector for many lines); a chunk in
which something was found is looked at line by line.

``FileSecrets``: the secrets of whole files, kept while a file is unchanged, for whoever shows
pieces of a file (serve, mcp) and must take out a secret its pieces cut in two.

A session that an agent's plugin reads itself (opencode's tree of files or its database,
Aider's runs in one markdown file, a whole-document chat) is not its stored path: opencode's
session file holds only its title, and Aider's ``….md#0`` cannot be opened. Its secrets are
those of the records the plugin reads (``agents.records``), as the index read them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import orjson

from xcsh_store.agents import PLUGIN_FAULTS, Agent, kind_of, reader_named
from xcsh_store.agents import records as plugin_records
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
        plugin = _plugin_of(index, session.path)
        # A plugin's session: a record's locator is its "line" (the offset column holds it).
        found = (
            _file_secrets(path, detector)
            if plugin is None
            else _record_secrets(plugin, path, detector)
        )
        for number, offset, secret in found:
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


def _plugin_of(index: SessionIndex, stored_path: str) -> Agent | None:
    """The plugin that reads the session stored at ``stored_path`` itself (a kind other than
    JSONL); None for a JSONL file, read line by line here."""
    row = index.connection.execute(
        "SELECT agent FROM files WHERE path = ?", (stored_path,)
    ).fetchone()
    plugin = reader_named(row[0]) if row else None
    if plugin is None or kind_of(plugin, index.local_path(stored_path)) == "jsonl":
        return None
    return plugin


def _records(plugin: Agent, path: str) -> Iterator[tuple[int, bytes]]:
    """(locator, JSON text) of each record of a plugin's session; none when it is gone or the
    plugin fails on it (as the index, which then keeps what it read before)."""
    try:
        for locator, value in plugin_records(plugin, path):
            yield locator, orjson.dumps(value, default=str)
    except OSError:
        return
    except PLUGIN_FAULTS:
        return


def _record_secrets(
    plugin: Agent, path: str, detector: SecretDetector
) -> Iterator[tuple[int, int, Secret]]:
    """(locator, locator, secret) of each secret in the records of a plugin's session."""
    chunk: list[tuple[int, int, bytes]] = []
    size = 0
    for locator, data in _records(plugin, path):
        chunk.append((locator, locator, data + b"\n"))
        size += len(data)
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
        self._found: dict[str, tuple[tuple[object, ...], list[Secret]]] = {}
        self._lock = threading.Lock()

    def of(self, path: str) -> list[Secret]:
        """The secrets of the file at ``path`` (a session file, an artifact)."""
        try:
            stat = os.stat(path)
        except OSError:
            return []
        return self._kept(path, (stat.st_size, stat.st_mtime_ns), lambda: self._scan(path))

    def of_session(self, index: SessionIndex, stored_path: str) -> list[Secret]:
        """The secrets of everything the session stored at ``stored_path`` was read from: its
        file, or the records of a plugin's session (kept while the index's state of it, its
        size and time as the plugin gave them, stays the same)."""
        path = index.local_path(stored_path)
        plugin = _plugin_of(index, stored_path)
        if plugin is None:
            return self.of(path)
        row = index.connection.execute(
            "SELECT size, mtime_ns, indexed_at FROM files WHERE path = ?", (stored_path,)
        ).fetchone()
        return self._kept(
            "records:" + path, tuple(row or ()), lambda: self._scan_records(plugin, path)
        )

    def _kept(
        self, key: str, state: tuple[object, ...], scan: Callable[[], list[Secret]]
    ) -> list[Secret]:
        with self._lock:
            kept = self._found.get(key)
        if kept is not None and kept[0] == state:
            return kept[1]
        found = scan()
        with self._lock:
            if len(self._found) >= self.FILES:
                self._found.clear()
            self._found[key] = (state, found)
        return found

    def _scan_records(self, plugin: Agent, path: str) -> list[Secret]:
        found: dict[str, Secret] = {}
        chunk: list[bytes] = []
        size = 0
        for _locator, data in (*_records(plugin, path), (0, b"")):
            chunk.append(data)
            size += len(data)
            if size >= CHUNK_BYTES or not data:
                for secret in self.detector.find_in_bytes(json_view_bytes(b"\n".join(chunk))):
                    found.setdefault(secret.value, secret)
                chunk, size = [], 0
        return list(found.values())

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
