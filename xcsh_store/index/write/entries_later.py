"""Entries put off: the entry rows (and search text) of the files a usage-first sync read only
the usage of (usage_first.py, ``files.entries_pending``).

Any sync that wants entries (``sync_files(entries=True)``: every read verb's but ``usage``'s)
reads such files whole, as it reads a changed file (a session its agent's plugin lists, a
document or a tree of files, through the plugin's records, as a sync reads it);
:func:`index_pending_entries` does only that, for :meth:`SessionIndex.index_pending_text`
(search, the web app's and MCP's background pass). The whole read writes the file's rows as
any other and, with its last rows, deletes the file's usage rows and clears its mark
(indexer.FileWrite): a pass killed at any point leaves each file's usage counted once, from
one table or the other, and the next sync carries on.
"""

from __future__ import annotations

import apsw

from xcsh_store.agents import reader_named
from xcsh_store.index.archive.keeper import Keeper
from xcsh_store.index.write.indexer import pk_counter
from xcsh_store.index.write.scan import Progress, SeenFile, SyncReport, known_file
from xcsh_store.index.write.stages.read import FileIndexer, archiving, index_files

_PENDING = (
    "SELECT path, root, project_dir, size, mtime_ns, inode, ctime_ns, agent FROM files"
    " WHERE entries_pending = 1 AND gone_at IS NULL ORDER BY mtime_ns, id"
)


def _listed_by(agent_name: str | None, path: str) -> str | None:
    """The agent whose plugin reads the session at ``path`` (scan.SeenFile.agent): one whose
    sessions are not JSONL files (a document, a tree of files), which the lean pass read too
    (lean/documents.py); None for a JSONL file, read as JSON lines."""
    agent = reader_named(agent_name)
    return None if agent is None or agent.kind_of(path) == "jsonl" else agent.name


def index_pending_entries(
    connection: apsw.Connection,
    workers: int = 1,
    progress: Progress | None = None,
    keeper: Keeper | None = None,
) -> SyncReport:
    """Read whole every file marked ``entries_pending`` (with its search text); returns what
    was done. A file that cannot be read keeps its usage rows and says why, as in a sync.
    ``keeper``: the archive's writer, which keeps the files as they are read (as a sync's
    does: the usage-first pass archived none of them); closed here."""
    report = SyncReport()
    todo = []
    for path, root, project_dir, size, mtime_ns, inode, ctime_ns, agent in list(
        connection.execute(_PENDING)
    ):
        seen = SeenFile(path, root, project_dir, size, mtime_ns, inode, ctime_ns)
        seen.agent = _listed_by(agent, path)
        todo.append((seen, known_file(connection, path)))
    indexer = FileIndexer(connection, pk_counter(connection), report, keeper=keeper)
    with archiving(report, keeper):
        if todo:
            index_files(indexer, todo, True, progress, workers)
    return report
