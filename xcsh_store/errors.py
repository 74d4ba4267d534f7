"""The exception hierarchy: every error the store raises on purpose is an XcshStoreError."""

from __future__ import annotations


class XcshStoreError(Exception):
    """Base class; its message is meant for the user and fits on one line."""


class EntryNotFoundError(XcshStoreError, KeyError):
    """An entry id that is not in the session (``Entry <id> not found``)."""

    def __init__(self, entry_id: object) -> None:
        super().__init__(f"Entry {entry_id} not found")
        self.entry_id = entry_id

    def __str__(self) -> str:
        # KeyError quotes its argument; we want the plain message.
        return str(self.args[0])


class PersistenceError(XcshStoreError):
    """Writing a session file failed; the manager latches it (compatibility: Synchronous writes
    with a latched error)."""


class SessionNotFoundError(XcshStoreError, LookupError):
    """No session matches an id, file-name prefix or path."""


class AmbiguousLookupError(XcshStoreError, LookupError):
    """A prefix that several things start with; ``candidates`` names them (the first few).
    ``lines``: the message for a terminal, its first line and then a line per match (empty
    when the message has no list to split)."""

    def __init__(self, message: str, candidates: list[str], lines: list[str] | None = None) -> None:
        super().__init__(message)
        self.candidates = candidates
        self.lines = lines or []


class AmbiguousSessionError(AmbiguousLookupError):
    """Several session files match an id or file-name prefix; ``candidates`` are their paths."""


class InternalUrlError(XcshStoreError):
    """An ``artifact://`` or ``agent://`` URL cannot be resolved; ``str()`` is the exact text."""


class NoArtifactsError(InternalUrlError):
    """The session has no artifacts folder (``folder``): it kept no tool or subagent output
    files, as every agent's session but xcsh's and pi's."""

    def __init__(self, message: str, folder: str) -> None:
        super().__init__(message)
        self.folder = folder


class OutputNotFoundError(InternalUrlError):
    """An ``agent://`` output the session's artifacts folder does not hold; ``str()`` is the
    reference's text, ``available`` the outputs it holds (their ids)."""

    def __init__(self, message: str, output_id: str, available: list[str]) -> None:
        super().__init__(message)
        self.output_id = output_id
        self.available = available


class HistoryError(XcshStoreError):
    """The prompt history database cannot be opened or used."""


class IndexDatabaseError(XcshStoreError):
    """The SQLite index cannot be opened, migrated or queried."""


class SearchQueryError(XcshStoreError, ValueError):
    """A search that cannot be run as asked: no word to search for, or an unknown role."""


class UnknownFilterError(XcshStoreError, ValueError):
    """A filter that nothing in the index has (a model no entry used, a project folder no
    session is in): a search or listing with it can only come back empty. ``name`` is the
    filter's (``model``, ``project``)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class AmbiguousEntryError(AmbiguousLookupError):
    """An entry id prefix that several entries of the session start with; ``candidates`` are
    their ids."""
