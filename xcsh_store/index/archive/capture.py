"""The archive's hook in a read: the bytes a reader takes from a source file, handed to the
writer as archive pieces with the chunks of rows made of them (build.py), so that what the
archive keeps is exactly what was indexed, and is compressed by whichever process read it."""

from __future__ import annotations

import hashlib
import os

from xcsh_store.index.archive.frames import piece_record

# (offset, length, SHA-256) of each piece of a source's archive: what a whole read checks the
# file against before it takes its bytes for the same version.
KeptPieces = list[tuple[int, int, bytes]]
# (first byte, one past the last, the archive record) of what a chunk's lines were.
CapturedPiece = tuple[int, int, bytes]
_HASH_BLOCK = 1 << 20
# The most source bytes one piece holds: a damaged piece loses no more than that, and a read
# of one entry of a gone session decompresses no more than that.
PIECE_BYTES = 1 << 20


class ByteCapture:
    """The bytes of the lines a read hands over, from ``start`` on, piece by piece."""

    __slots__ = ("mtime_ns", "parts", "pending_from", "position")

    def __init__(self, start: int, mtime_ns: int) -> None:
        self.position = self.pending_from = start
        self.mtime_ns = mtime_ns
        self.parts: list[bytes] = []

    def add(self, offset: int, data: bytes) -> None:
        """The line at ``offset`` was read (lines come in file order, one after the other)."""
        end = offset + len(data)
        if end <= self.position:
            return
        if offset > self.position:
            raise ValueError(f"bytes {self.position}-{offset} were skipped by the read")
        self.parts.append(data[self.position - offset :] if offset < self.position else data)
        self.position = end

    def take(self) -> CapturedPiece | None:
        """What was read since the last take, compressed (pieces of at most PIECE_BYTES, so
        that damage to one costs little); None when nothing was."""
        if not self.parts:
            return None
        data = b"".join(self.parts)
        start = self.pending_from
        self.parts = []
        self.pending_from = self.position
        records = b"".join(
            piece_record(start + at, data[at : at + PIECE_BYTES], self.mtime_ns)
            for at in range(0, len(data), PIECE_BYTES)
        )
        return start, self.position, records


def capture_start(descriptor: int, kept: KeptPieces) -> int:
    """Where a whole read of a file begins to capture: after the bytes its archive keeps when
    the file still begins with them (hashed piece by piece), else at 0 (a file rewritten or
    cut: the archive begins a new version and keeps the old one)."""
    for offset, length, digest in kept:
        hasher = hashlib.sha256()
        done = 0
        while done < length:
            block = os.pread(descriptor, min(_HASH_BLOCK, length - done), offset + done)
            if not block:
                return 0
            hasher.update(block)
            done += len(block)
        if hasher.digest() != digest:
            return 0
    return kept[-1][0] + kept[-1][1] if kept else 0
