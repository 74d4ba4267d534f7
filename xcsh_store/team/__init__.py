"""The team index: the local indexes of several hosts pushed into one PostgreSQL database, read
by the same verbs as the local index (``--db``), and the Parquet export for analytics engines.

Modules:

* ``errors``: the one-line errors of the team index.
* ``conninfo``: the connection string checked, shown without its password, scrubbed from
  messages.
* ``server``: the connection, the schema's migrations (team/migrations/*.sql), one-line errors.
* ``disclosure``: what leaves the machine at each tier, keyed watermarks, path labels.
* ``upload``: ``push``, this host's index copied into the team index file by file, per tier.
* ``reader``: ``TeamIndex``, the reading side of ``SessionIndex`` answered by the server.
* ``parquet``: sessions, entries and usage as Hive-partitioned Parquet files.

psycopg and pyarrow (the ``team`` extra) are imported only by the modules that need them, on
first use of a name from this front.
"""

from typing import TYPE_CHECKING

from xcsh_store.lazy import lazy_exports

# The names offered on first use (lazy.py), each written once, here: type checkers (mypy,
# editors) read them, and lazy_exports reads this block at run time, which never runs it
# (nothing loads sooner). `NAME as NAME`: importable from here, not in __all__.
if TYPE_CHECKING:
    from xcsh_store.team.conninfo import Target
    from xcsh_store.team.disclosure import TIERS
    from xcsh_store.team.errors import (
        ConnectionStringError,
        PrivilegedRoleError,
        TeamConnectionError,
        TeamIndexError,
        TeamTimeoutError,
    )
    from xcsh_store.team.errors import TeamUnavailableError as TeamUnavailableError
    from xcsh_store.team.parquet import ExportReport, export_parquet
    from xcsh_store.team.reader import USAGE_GROUPS, TeamIndex, TeamSession
    from xcsh_store.team.server import connect, schema_version
    from xcsh_store.team.upload import PushReport, push, remembered_host

__getattr__, __dir__ = lazy_exports(__name__)
