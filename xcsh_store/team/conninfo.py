"""The team index's connection string: checked before libpq reads it, shown without its
password, and the server's messages scrubbed of it.

A connection string is a URL (``postgresql://user@host:port/db?param=value``) or libpq's
``key=value`` pairs. What it leaves out libpq takes from its environment: ``PGHOST``,
``PGUSER``, ``PGPASSWORD``, ``~/.pgpass`` (``PGPASSFILE``), ``PGSERVICE`` and its service file;
``postgresql://`` alone or ``service=NAME`` leaves everything to them. That is where a password
belongs: a URL given on the command line is visible to every user of the machine in ``ps``.

A URL whose password holds an unencoded ``@`` or ``/`` is refused before libpq reads it: libpq
would take part of the password for the host, port or database name and print it in its
errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

from xcsh_store.team.errors import ConnectionStringError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_POSTGRES_SCHEMES = ("postgresql", "postgres")
# What libpq quotes of a connection string in its parse errors (the offending token, which can
# be a piece of the password).
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
HOW = "postgresql://user@host:port/db, or key=value pairs"


@dataclass(frozen=True)
class Target:
    """A connection string libpq can read, and what messages may say of it."""

    conninfo: str
    parts: dict[str, str | int | None]

    @classmethod
    def parse(cls, conninfo: str) -> Target:
        scheme = _SCHEME.match(conninfo)
        if scheme and scheme.group(1).lower() not in _POSTGRES_SCHEMES:
            raise ConnectionStringError(
                f"Not a PostgreSQL URL: {scheme.group(1)}://… (postgresql://…)"
            )
        if scheme and _ambiguous_at(conninfo[scheme.end() :]):
            raise ConnectionStringError(
                "The URL has an '@' libpq would not read as the end of user:password: in a"
                " password, percent-encode '@', '/', '?' and '#' (%40, %2F, %3F, %23), or"
                " better, keep it out of the URL (PGPASSWORD, ~/.pgpass; docs/security.md)"
            )
        try:
            parts = conninfo_to_dict(conninfo)
        except ProgrammingError as error:
            reason = _QUOTED.sub('"…"', str(error).strip().splitlines()[0])
        except UnicodeEncodeError:
            reason = "it holds characters that are not text (lone surrogates)"
        else:
            return cls(conninfo, parts)
        # Raised here, not in the handler: libpq's error, which may quote the password, is not
        # chained to it.
        raise ConnectionStringError(f"Not a valid PostgreSQL connection string: {reason} ({HOW})")

    @property
    def shown(self) -> str:
        """The connection string as messages show it: a URL of the user, host, port, database
        and service it names, without its password or other parameters."""
        parts = self.parts
        user = f"{parts['user']}@" if parts.get("user") else ""
        port = f":{parts['port']}" if parts.get("port") else ""
        service = f"?service={parts['service']}" if parts.get("service") else ""
        host, database = parts.get("host", ""), parts.get("dbname", "")
        return f"postgresql://{user}{host}{port}/{database}{service}"

    @property
    def has_password(self) -> bool:
        return bool(self.parts.get("password"))

    def scrub(self, text: str) -> str:
        """A message of libpq or the server without the password, however it is spelled."""
        password = str(self.parts.get("password") or "")
        if not password:
            return text
        for spelling in sorted({password, quote(password, safe=""), quote(password)}, key=len,
                               reverse=True):  # fmt: skip
            text = text.replace(spelling, "***")
        return text


def _ambiguous_at(rest: str) -> bool:
    """Whether the part of a URL before its query has an '@' that libpq would not take as the
    end of the user:password it began with: a second '@', or one after a '/' (libpq ends the
    user:password at the first '@' or '/')."""
    head = rest.split("?", 1)[0]
    first = head.find("@")
    return first != -1 and ("/" in head[:first] or "@" in head[first + 1 :])
