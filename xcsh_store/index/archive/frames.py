"""The archive file format: Zstandard frames, each preceded by a skippable frame that says what
it holds, so that ``zstd -d`` gives back the source's bytes and the store can find any byte
without decompressing the rest.

An archive file is, in order:

* a *header*: a skippable frame holding ``XAH1`` and a JSON object (the source's path, root,
  project folder and agent, the archive's kind: ``append`` for a file kept as it grows,
  ``document`` for a session kept whole, its version and when it was begun);
* *pieces*: a skippable frame holding ``XAP1``, the source offset, length and mtime of the
  bytes, the size of the compressed frame that follows, their SHA-256 and (in a document) the
  member's name, then the Zstandard frame of those bytes (with its content size and checksum);
* *moves*, where the source was renamed: a skippable frame holding ``XAM1`` and a JSON object
  of its new path, root and project folder (the last one wins).

A skippable frame (magic 0x184D2A5A, a 4-byte little-endian size, the payload) is one every
Zstandard decoder steps over: ``zstd -d`` of an append archive is the source file, of a document
archive its members one after another. Nothing is ever rewritten: a file only grows, and a torn
tail (a write cut by a crash or a full disk) is whatever follows the last whole piece.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import orjson
import zstandard

from xcsh_store.errors import XcshStoreError

SKIPPABLE_MAGIC = 0x184D2A5A
_FRAME_HEAD = struct.Struct("<II")
HEADER_TAG = b"XAH1"
PIECE_TAG = b"XAP1"
MOVE_TAG = b"XAM1"
# offset, length, mtime_ns, compressed size, SHA-256 of the bytes
_PIECE = struct.Struct("<QQqQ32s")
# The kinds of archive: a file kept as it grows; a session kept whole (its latest version).
APPEND = "append"
DOCUMENT = "document"
FORMAT_VERSION = 1
# Level 3 (zstd's default): on session JSON it keeps a fifth of the bytes or less at several
# hundred MB/s; higher levels cost the sync far more time than they save space.
LEVEL = 3


class ArchiveDamagedError(XcshStoreError):
    """An archive file that does not decode as it should."""


@dataclass(frozen=True, slots=True)
class Header:
    """Whose bytes an archive file keeps."""

    source: str
    root: str
    project_dir: str
    agent: str
    kind: str
    version: int
    created_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION, "source": self.source, "root": self.root,
            "project_dir": self.project_dir, "agent": self.agent, "kind": self.kind,
            "version": self.version, "created_at": self.created_at,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Piece:
    """Bytes of the source kept in one Zstandard frame, ``size`` bytes at ``at`` in the
    archive file (its record, the frame that says what it holds first, begins at ``start``)."""

    offset: int
    length: int
    mtime_ns: int
    sha256: bytes
    member: str
    at: int
    size: int
    start: int

    @property
    def end(self) -> int:
        return self.offset + self.length


@dataclass
class Contents:
    """What an archive file holds: its header, its pieces in order, where its source is now
    (after the moves), and ``end``, the length of its whole records (a torn tail follows)."""

    header: Header | None
    pieces: list[Piece] = field(default_factory=list)
    end: int = 0
    size: int = 0
    source: str | None = None
    root: str | None = None
    project_dir: str | None = None

    @property
    def source_bytes(self) -> int:
        """How many bytes of an append archive's source it holds (pieces follow each other)."""
        return self.pieces[-1].end if self.pieces else 0

    @property
    def mtime_ns(self) -> int:
        return self.pieces[-1].mtime_ns if self.pieces else 0


def _skippable(tag: bytes, payload: bytes) -> bytes:
    body = tag + payload
    return _FRAME_HEAD.pack(SKIPPABLE_MAGIC, len(body)) + body


def header_record(header: Header) -> bytes:
    return _skippable(HEADER_TAG, orjson.dumps(header.to_json()))


def move_record(source: str, root: str, project_dir: str) -> bytes:
    payload = {"source": source, "root": root, "project_dir": project_dir}
    return _skippable(MOVE_TAG, orjson.dumps(payload))


def piece_record(offset: int, data: bytes, mtime_ns: int, member: str = "") -> bytes:
    """The record of ``data`` (the source's bytes at ``offset``): compressed here, so that a
    sync's worker processes do this work, not its writer."""
    compressor = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True)
    frame = compressor.compress(data)
    digest = hashlib.sha256(data).digest()
    head = _PIECE.pack(offset, len(data), mtime_ns, len(frame), digest)
    return _skippable(PIECE_TAG, head + member.encode("utf-8", "surrogateescape")) + frame


def read_contents(descriptor: int) -> Contents:
    """The records of the archive file open at ``descriptor``, read from its start (a header
    that is not one: ArchiveDamagedError)."""
    size = os.fstat(descriptor).st_size
    contents = Contents(None, size=size)
    at = 0
    while at + _FRAME_HEAD.size <= size:
        magic, length = _FRAME_HEAD.unpack(os.pread(descriptor, _FRAME_HEAD.size, at))
        body_at = at + _FRAME_HEAD.size
        if magic != SKIPPABLE_MAGIC or body_at + length > size or length < 4:
            break
        body = os.pread(descriptor, length, body_at)
        tag, payload = body[:4], body[4:]
        following = body_at + length
        if tag == HEADER_TAG and at == 0:
            contents.header = _header(payload)
            contents.source = contents.header.source
            contents.root, contents.project_dir = contents.header.root, contents.header.project_dir
        elif tag == PIECE_TAG and contents.header is not None and len(payload) >= _PIECE.size:
            offset, count, mtime_ns, frame_size, digest = _PIECE.unpack_from(payload)
            if following + frame_size > size:
                break  # the frame was cut short: a torn tail
            member = payload[_PIECE.size :].decode("utf-8", "surrogateescape")
            contents.pieces.append(
                Piece(offset, count, mtime_ns, digest, member, following, frame_size, at)
            )
            following += frame_size
        elif tag == MOVE_TAG and contents.header is not None:
            moved = orjson.loads(payload)
            contents.source, contents.root = moved["source"], moved["root"]
            contents.project_dir = moved["project_dir"]
        else:
            break
        at = contents.end = following
    if contents.header is None:
        raise ArchiveDamagedError("it does not begin with an archive header")
    return contents


def _header(payload: bytes) -> Header:
    try:
        value = orjson.loads(payload)
        return Header(
            value["source"], value["root"], value["project_dir"], value["agent"], value["kind"],
            int(value["version"]), value["created_at"],
        )  # fmt: skip
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise ArchiveDamagedError(f"its header does not read: {error}") from None


def piece_bytes(descriptor: int, piece: Piece, hashed: bool = True) -> bytes:
    """The source's bytes a piece keeps, checked against its SHA-256 (not ``hashed``: only
    against the frame's own checksum, for a reader that hashes everything it reads itself)."""
    frame = os.pread(descriptor, piece.size, piece.at)
    try:
        data = zstandard.ZstdDecompressor().decompress(frame, max_output_size=piece.length)
    except zstandard.ZstdError as error:
        raise ArchiveDamagedError(
            f"the piece at byte {piece.at} does not decompress: {error}"
        ) from None
    if len(data) != piece.length or (hashed and hashlib.sha256(data).digest() != piece.sha256):
        raise ArchiveDamagedError(f"the piece at byte {piece.at} is not the bytes it was")
    return data
