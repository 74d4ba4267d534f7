"""Writing an archived session back where its agent keeps it (``xcsh-store restore``): the
bytes it read, byte for byte, so that the agent can resume it.

Its place is where the file was, below the agent's folder as it is found now (the variables
that move it honoured: a folder moved since is where the file goes), or below ``--to DIR``.
A file that is there already is left alone: the same bytes are a restore already done; other
bytes are refused, never overwritten. A new file is written beside its place and linked in
(no other file can be replaced on the way), with the time the agent last wrote it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from xcsh_store.agents import agent_session_roots
from xcsh_store.errors import XcshStoreError
from xcsh_store.files import open_regular_file
from xcsh_store.index.archive.folder import ArchiveFolder
from xcsh_store.index.archive.frames import APPEND, Contents, Piece, piece_bytes
from xcsh_store.paths import FILE_MODE, ensure_private_dir


class RestoreError(XcshStoreError):
    """A session that cannot be restored (not archived, or its place holds other bytes)."""


@dataclass
class Restored:
    """One session written back: where its files went, the SHA-256 and size of what was
    written (its file's; a session of several files: all of them in order), and whether each
    was there already."""

    session_id: str
    agent: str
    path: str
    files: list[str] = field(default_factory=list)
    already_there: list[str] = field(default_factory=list)
    sha256: str = ""
    bytes: int = 0
    command: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "session_id": self.session_id, "agent": self.agent, "path": self.path,
            "files": self.files, "already_there": self.already_there, "sha256": self.sha256,
            "bytes": self.bytes, "resume": self.command,
        }  # fmt: skip


def restore_files(
    folder: ArchiveFolder, base: str, version: int, target_root: str | None, to: str | None
) -> tuple[str, list[str], list[str], str, int]:
    """Write the archived source of ``base`` below its root (``target_root``: where its agent
    keeps it now; None: where it was) or below ``to``; returns (the session's path, the files
    written, those already there, SHA-256, bytes)."""
    contents = folder.contents(base, version)
    assert contents.header is not None and contents.source is not None
    root = contents.root or contents.header.root
    members = _members(contents, root)
    session_member = os.path.relpath(contents.source, root)
    # A session kept among others (opencode's ``opencode.db#<id>``, a run of Aider's chat log
    # ``<log>#<offset>``) is archived alone: a database of its rows, the run at its offset.
    # That is no file of the agent's to put back in its place.
    in_database = next((m for m in members if session_member.startswith(m + "#")), None)
    if in_database is not None and to is None:
        raise RestoreError(
            f"{contents.source} was kept in its agent's database or log with other sessions,"
            " not in a file of its own: restore --to DIR writes it there alone"
        )
    if to is not None:
        destination = os.path.abspath(to)
        # One file goes into the folder by its name; a session of several keeps its layout.
        single = len(members) == 1
        places = {
            member: os.path.join(destination, os.path.basename(member) if single else member)
            for member in members
        }
    else:
        destination = target_root or root
        places = {member: os.path.join(destination, member) for member in members}
    by_member: dict[str, list[Piece]] = {member: [] for member in members}
    for piece in contents.pieces:
        by_member[piece.member if contents.header.kind != APPEND else session_member].append(piece)
    digest = hashlib.sha256()
    written, there, total = [], [], 0
    with folder.opened(base, version) as descriptor:
        # Every place is looked at before anything is written: all of the session, or none.
        found = {
            member: _holds(places[member], descriptor, pieces)
            for member, pieces in by_member.items()
        }
        for member, pieces in by_member.items():
            place = places[member]
            total += sum(piece.length for piece in pieces)
            if found[member]:
                there.append(place)
                for piece in pieces:
                    digest.update(piece_bytes(descriptor, piece))
            else:
                _write_new(place, descriptor, pieces, contents.mtime_ns, digest)
                written.append(place)
    if in_database is not None:
        path = places[in_database] + session_member[len(in_database) :]
    else:
        path = places[session_member]
    return path, written, there, digest.hexdigest(), total


def _members(contents: Contents, root: str) -> list[str]:
    """The names (below the root) of the files of an archived session, in order."""
    assert contents.header is not None and contents.source is not None
    if contents.header.kind == APPEND:
        return [os.path.relpath(contents.source, root)]
    return list(dict.fromkeys(piece.member for piece in contents.pieces))


def _holds(place: str, descriptor: int, pieces: list[Piece]) -> bool:
    """Whether ``place`` holds these very bytes (False: nothing there); RestoreError when it
    holds anything else."""
    try:
        stream = open_regular_file(place)
    except FileNotFoundError:
        if os.path.lexists(place):
            raise RestoreError(f"{place} is a link to nothing: not replaced") from None
        return False
    except OSError as error:
        raise RestoreError(f"{place} is there and cannot be read: {error.strerror}") from None
    with stream:
        same = all(stream.read(piece.length) == piece_bytes(descriptor, piece) for piece in pieces)
        if same and not stream.read(1):
            return True
    raise RestoreError(
        f"{place} exists and is not the archived session: it is left as it is"
        " (move it away, or restore with --to DIR)"
    )


def _write_new(
    place: str, descriptor: int, pieces: list[Piece], mtime_ns: int, digest: Any
) -> None:
    """Write a new file at ``place`` (never over another): a temporary name beside it,
    fsynced, linked to ``place`` (which fails if anything appeared there meanwhile); its bytes
    go into ``digest`` too."""
    folder = os.path.dirname(place)
    ensure_private_dir(folder)
    temporary = os.path.join(folder, f".{os.path.basename(place)}.{os.getpid()}.restore")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        with open(os.open(temporary, flags, FILE_MODE), "wb") as stream:
            for piece in pieces:
                # (Hashed whole, here: the SHA-256 restore reports is of what it wrote.)
                data = piece_bytes(descriptor, piece, hashed=False)
                digest.update(data)
                stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mtime_ns:
            os.utime(temporary, ns=(mtime_ns, mtime_ns))
        try:
            os.link(temporary, place)
        except FileExistsError:
            raise RestoreError(f"{place} appeared while it was restored: left as it is") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def current_root(agent: str, root: str) -> str:
    """Where ``agent`` keeps the sessions it kept in ``root`` now: the same folder when it is
    still one of the agent's, else the agent's folder as found now (its variables honoured);
    ``root`` for an agent that names none."""
    roots = [folder for folder, owner in agent_session_roots().items() if owner == agent]
    if not roots or root in roots:
        return root
    existing = [folder for folder in roots if os.path.isdir(folder)]
    return (existing or roots)[0]
