"""Bringing the index up to date with the files: the stages of the write path run in turn
(docs/write_path.md): find what changed (stages/changed.py), the lean pass when asked
(usage_first.py), read, build and write each changed file (stages/read.py), then the files
gone."""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping

import apsw

from xcsh_store.agents.prices.pricing import fixed_prices
from xcsh_store.agents.registry import XCSH_AGENTS, agent_named
from xcsh_store.format.storage import remove_quietly
from xcsh_store.index.archive.keeper import Keeper, archived_row
from xcsh_store.index.db import transaction
from xcsh_store.index.write.indexer import drop_file_rows, pk_counter
from xcsh_store.index.write.pipeline import default_workers
from xcsh_store.index.write.scan import IndexedFiles, KnownFile, Progress, SeenFile, SyncReport
from xcsh_store.index.write.stages.changed import find_changes
from xcsh_store.index.write.stages.read import (
    FileIndexer,
    archiving,
    bytes_to_read_whole,
    index_files,
    whole_reads,
)
from xcsh_store.times import iso_now

log = logging.getLogger("xcsh_store")

# A sync that may put search text off (text=False) does so only with at least this much to read
# whole: below, the text costs too little to leave searches partial for (a new session or two).
TEXT_LATER_MIN_BYTES = 32 << 20


def sync_files(
    connection: apsw.Connection,
    roots: list[str],
    full: bool = False,
    progress: Progress | None = None,
    indexed: IndexedFiles | None = None,
    workers: int | None = None,
    *,
    agent_roots: Mapping[str, str] | None = None,
    text: bool = True,
    keeper: Keeper | None = None,
    standing_roots: Collection[str] | None = (),
    entries: bool = True,
) -> SyncReport:
    """Bring the rows of every file under ``roots`` up to date; returns what was done.

    ``text`` false: when there is much to read whole (a first sync), usage first: those files
    get every row but their search rows, which text_later.py adds afterwards.

    ``agent_roots`` (root -> agent) hold other agents' files: nothing there is ever removed
    (the stale temp files of xcsh's rewrites are looked for only in the other roots), and an
    agent that finds its own sessions (a kind other than JSONL) lists them there.

    ``entries`` false (usage first, for real: usage_first.py): when there is as much to read
    whole (the sessions agents' plugins list counted in), the files and sessions of the agents
    with a lean read among them get only their usage rows, and are marked
    ``entries_pending``. The next sync, whatever it is asked, reads the files so marked whole
    (their entry rows, their archive copy, and their search text when ``text``:
    entries_later.py): a file its agent deletes is lost to the store only if it goes before
    that next run, and a user who only ever asks for usage still gets every session kept.

    ``indexed`` is the files table as read before (it is read here when not given).
    ``workers``: how many processes may read files whole (default: one per core); 1 reads
    everything in this process.

    ``keeper``: the archive's writer (index/archive/): the files of its roots are archived as
    they are read, and one found gone keeps its rows (marked gone) when the archive has it;
    so does one of a root no longer read when it is one of ``standing_roots`` (None: any), while
    the others (a root turned off) lose their rows; their archive stays.
    """
    started = time.perf_counter()
    report = SyncReport()
    changes = find_changes(connection, roots, full, report, indexed, agent_roots, keeper)
    todo = changes.todo
    indexer = FileIndexer(connection, pk_counter(connection), report, keeper=keeper)
    whole_bytes = bytes_to_read_whole(todo, full)
    if not text:
        indexer.with_text = whole_bytes < TEXT_LATER_MIN_BYTES
    # (The sessions agents' plugins list count towards the lean pass, which reads some of
    # them: not towards putting text off, which only JSONL files do. Their size is the
    # plugin's: an opencode database session's is its count of rows, far below its bytes.)
    listed_bytes = sum(max(item.size, 0) for item, _row in todo if item.agent is not None)
    with archiving(report, keeper):
        if not entries and not text and whole_bytes + listed_bytes >= TEXT_LATER_MIN_BYTES:
            todo = _usage_first(connection, todo, full, report, changes.pending)
        index_files(
            indexer, todo, full, progress, default_workers() if workers is None else workers
        )
        if keeper is not None:
            from xcsh_store.index.archive.backlog import catch_up  # (it imports us)

            catch_up(connection, keeper, report)

    # Files found under a root that is no longer registered go too, unless archived.
    marks = ",".join("?" * len(roots))
    forgotten = list(
        connection.execute(
            f"SELECT id, root FROM files WHERE root NOT IN ({marks}) AND gone_at IS NULL", roots
        )
    )
    for file_id in [row.id for row in changes.vanished.values()]:
        _file_gone(connection, file_id, report)
    for file_id, root in forgotten:
        _file_gone(
            connection, file_id, report, keep=standing_roots is None or root in standing_roots
        )
    for path in report.stale_temp_files:
        # A rewrite killed before its rename: the session file itself was never touched.
        if remove_quietly(path):
            report.temp_files_removed += 1
    report.seconds = time.perf_counter() - started
    return report


def _usage_first(
    connection: apsw.Connection,
    todo: list[tuple[SeenFile, KnownFile | None]],
    full: bool,
    report: SyncReport,
    pending: set[str],
) -> list[tuple[SeenFile, KnownFile | None]]:
    """The lean pass over the files of ``todo`` to read whole but those an earlier lean pass
    left ``pending`` (usage_first.py); returns what is left for the full read, in order."""
    from xcsh_store.index.write.usage_first import index_usage_first

    # (A session its agent's plugin lists is always read whole: usage_first.py reads those of
    # a lean read, lean/documents.py.)
    sessions = [position for position, (item, _row) in enumerate(todo) if item.agent is not None]
    whole = {
        position
        for position in [*(position for position, _size in whole_reads(todo, full)), *sessions]
        if todo[position][0].path not in pending
    }
    with fixed_prices():
        left = index_usage_first(connection, [todo[at] for at in sorted(whole)], report)
    for_full_read = {id(pair[0]) for pair in left}
    return [
        pair
        for position, pair in enumerate(todo)
        if position not in whole or id(pair[0]) in for_full_read
    ]


def _file_gone(
    connection: apsw.Connection, file_id: int, report: SyncReport, keep: bool = True
) -> None:
    """A file the index knew is gone: its session stays, read from the archive from now on,
    when the archive keeps it (and ``keep``) and the plugin that reads it is installed; else
    its rows go (its archive stays: the plugin installed again reads the session back)."""
    agent = connection.execute("SELECT agent FROM files WHERE id = ?", (file_id,)).get
    with transaction(connection):
        readable = agent in XCSH_AGENTS or agent_named(agent) is not None
        if keep and readable and archived_row(connection, file_id) is not None:
            # (Search text still to come is read from the archive: text_later.py.)
            connection.execute("UPDATE files SET gone_at = ? WHERE id = ?", (iso_now(), file_id))
            report.files_archived_gone += 1
            return
        report.entries_removed += drop_file_rows(connection, file_id)
        connection.execute("DELETE FROM archived WHERE file_id = ?", (file_id,))
        connection.execute("DELETE FROM files WHERE id = ?", (file_id,))
    report.files_removed += 1
