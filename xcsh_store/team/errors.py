"""The team index's errors: each says in one line what failed and what to do, and none quotes
a password (conninfo.py)."""

from __future__ import annotations

from xcsh_store.errors import XcshStoreError


class TeamIndexError(XcshStoreError):
    """The team index cannot be reached, read or written; the message says why in a line."""


class TeamUnavailableError(TeamIndexError):
    """The server could not do it now (unreachable, the connection lost, a time limit, its
    disk full): trying again later may work, as ``push --watch`` does."""


class TeamConnectionError(TeamUnavailableError):
    """The server cannot be reached, or the connection was lost."""


class TeamTimeoutError(TeamUnavailableError):
    """A time limit (``sql --timeout``, the role's statement_timeout or lock_timeout) stopped
    a statement on the server."""


class ConnectionStringError(TeamIndexError):
    """The connection string cannot be read; the message quotes none of it."""


class PrivilegedRoleError(TeamIndexError):
    """``sql --db`` refused a role that can run programs or read or write files on the server."""
