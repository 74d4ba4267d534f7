"""Checking the index against the files: re-derive each file's rows and compare them."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import apsw
import orjson

from xcsh_store.agents import kind_of, reader_named
from xcsh_store.agents.prices.pricing import fixed_prices
from xcsh_store.errors import XcshStoreError
from xcsh_store.index.archive.sources import sources_of
from xcsh_store.index.db import apply_migrations, load_migrations
from xcsh_store.index.model.columns import ENTRY_ROW, SESSION_ROW, compared
from xcsh_store.index.model.facts import SkippedLines
from xcsh_store.index.model.search_rows import stale_count
from xcsh_store.index.read.search import FtsTokens, quote, utf8
from xcsh_store.index.read.texts import entry_texts
from xcsh_store.index.write.indexer import drop_file_rows, pk_counter
from xcsh_store.index.write.scan import SeenFile, SyncReport, is_under_any, scan_any
from xcsh_store.index.write.stages.read import FileIndexer
from xcsh_store.index.write.stale_search import STALE_ROWS, forget_all
from xcsh_store.index.write.summaries import check_summary_titles
from xcsh_store.index.write.usage_first import usage_differences

# The columns compared (model/columns.py), some as an expression of them: a chain is the pk of
# its first entry, and pks differ between indexes, so that entry's seq is compared; a title
# from another file's summary line is no file's alone (summaries.py checks them all).
_COMPARED_AS = {
    "chain": "(SELECT head.seq FROM entries AS head WHERE head.pk = entries.chain)",
    "title": "iif(title_source = 'summary', NULL, title)",
    "title_source": "nullif(title_source, 'summary')",
}
_COMPARED_ENTRY_COLUMNS, _COMPARED_SESSION_COLUMNS = (
    ", ".join(_COMPARED_AS.get(column, column) for column in compared(row))
    for row in (ENTRY_ROW, SESSION_ROW)
)


@dataclass
class VerifyReport:
    """Files whose index rows differ from a fresh parse, and what differs."""

    files_checked: int = 0
    differences: dict[str, list[str]] = field(default_factory=dict)
    # Files that are new, changed or gone since the last sync (a sync, not a repair, is due):
    # path -> "new", "changed" or "deleted". They are not compared.
    changed_since_sync: dict[str, str] = field(default_factory=dict)
    # Lines of the files that hold no JSON object (every reader skips them), from the fresh parse.
    skipped_lines: dict[str, SkippedLines] = field(default_factory=dict)
    repaired: list[str] = field(default_factory=list)
    refcount_errors: list[str] = field(default_factory=list)
    # Problems of the full-text index not tied to one file (see search_errors).
    search_errors: list[str] = field(default_factory=list)
    # What SQLite found wrong with index.db's own pages; the files were then not compared.
    damaged: str | None = None
    # The damaged index was moved aside and rebuilt from the files (repair=True).
    rebuilt: bool = False
    # Archive files that do not hold what the index says (index/archive/check.py): archive
    # path -> what is wrong; and, after a repair, what became of each.
    archive_problems: dict[str, str] = field(default_factory=dict)
    archive_repaired: dict[str, str] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return (
            not self.differences
            and not self.changed_since_sync
            and not self.refcount_errors
            and not self.search_errors
            and not self.archive_problems
            and self.damaged is None
        )


def compare_with_files(
    connection: apsw.Connection,
    roots: list[str],
    report: VerifyReport,
    agent_roots: Mapping[str, str] | None = None,
) -> tuple[dict[str, SeenFile], dict[str, int]]:
    """Fill ``report`` with every file below ``roots`` that differs from its rows, or changed
    since the last sync, and the blobs whose refcount is wrong; returns the files found on
    disk by path and the indexed file ids by path (what a repair needs)."""
    scan = SyncReport()
    on_disk = {
        item.path: item
        for root in roots
        if os.path.isdir(root)
        for item in scan_any(root, scan, agent=(agent_roots or {}).get(root))
    }
    rows = list(
        connection.execute(
            "SELECT path, id, size, mtime_ns, inode, ctime_ns FROM files WHERE gone_at IS NULL"
        )
    )
    indexed = {path: file_id for path, file_id, *_ in rows}
    synced = {path: tuple(seen) for path, _, *seen in rows}
    verifier = Verifier(connection)
    # (Every line read again priced with one table, as a sync prices them.)
    with fixed_prices(), contextlib.closing(verifier):
        for path, item in sorted(on_disk.items()):
            report.files_checked += 1
            if path not in synced:
                report.changed_since_sync[path] = "new"
                continue
            if synced[path] != (item.size, item.mtime_ns, item.inode, item.ctime_ns):
                # An append (or any change) the last sync has not seen is no fault of the
                # index: a sync is what it takes, not a repair. The identity is the one the
                # sync's scan compares.
                report.changed_since_sync[path] = "changed"
                continue
            problems = verifier.compare_file(item)
            if problems:
                report.differences[path] = problems
        _compare_gone(connection, verifier, report)
        report.skipped_lines = verifier.skipped_lines
    if not report.changed_since_sync:
        # (With files new, changed or gone since the sync, their titles wait for the next.)
        for path, problem in check_summary_titles(connection).items():
            report.differences.setdefault(path, []).append(problem)
    unreadable = list(scan.unreadable)
    for path in sorted(set(indexed) - set(on_disk)):
        if is_under_any(path, unreadable):
            continue
        report.changed_since_sync[path] = "deleted"
    report.refcount_errors = refcount_errors(connection)
    report.search_errors = search_errors(connection)
    return on_disk, indexed


def _compare_gone(connection: apsw.Connection, verifier: Verifier, report: VerifyReport) -> None:
    """The sessions whose file is gone, compared with a fresh parse of their archive."""
    sources = sources_of(connection)
    if sources is None:
        return
    gone: list[tuple[Any, ...]] = connection.execute(
        "SELECT path, root, project_dir, size, mtime_ns, agent FROM files"
        " WHERE gone_at IS NOT NULL ORDER BY path"
    ).fetchall()
    for path, root, project_dir, size, mtime_ns, agent in gone:
        report.files_checked += 1
        plugin = reader_named(agent)
        kind = None if plugin is None or kind_of(plugin, path) == "jsonl" else agent
        seen = SeenFile(path, root, project_dir, size, mtime_ns, 0, 0, kind)
        try:
            with sources.copy_of(path) as copy:
                problems = verifier.compare_file(seen, copy)
        except (OSError, XcshStoreError) as error:
            problems = [f"its archive cannot be read: {error}"]
        if problems:
            report.differences[path] = problems


class Verifier:
    """Parses each file into a scratch in-memory index and compares it with the real one."""

    def __init__(self, connection: apsw.Connection) -> None:
        self.connection = connection
        self.scratch = apsw.Connection(":memory:")
        apply_migrations(self.scratch, load_migrations())
        self.scratch_report = SyncReport()
        self.scratch_indexer = FileIndexer(
            self.scratch, pk_counter(self.scratch), self.scratch_report
        )
        # Skipped lines of each file compared, as the fresh parse found them.
        self.skipped_lines: dict[str, SkippedLines] = {}
        self.tokens = FtsTokens(connection)

    def close(self) -> None:
        self.scratch.close()

    def compare_file(self, seen: SeenFile, copy: str | None = None) -> list[str]:
        """Differences between the index and a fresh parse of ``seen`` (empty when equal);
        of ``copy``, made from its archive, for a file that is gone."""
        row = list(
            self.connection.execute(
                "SELECT id, indexed_bytes, status, chained, text_pending, entries_pending"
                " FROM files WHERE path = ?",
                (seen.path,),
            )
        )
        if not row:
            return ["file is not in the index"]
        file_id, *state, text_pending, entries_pending = row[0]
        if entries_pending:
            # Its usage rows alone, until its entries come (write/usage_first.py).
            try:
                return usage_differences(self.connection, file_id, copy or seen.path, seen.agent)
            except OSError as error:
                return [f"file cannot be read: {error}"]
        try:
            if copy is None:
                self.scratch_indexer.index(seen, None, full=True)
            else:
                self.scratch_indexer.index_copy(seen, copy)
        except OSError as error:
            return [f"file cannot be read: {error}"]
        finally:
            self.scratch_indexer.batch.commit()
        ((scratch_id,),) = self.scratch.execute("SELECT id FROM files WHERE path = ?", (seen.path,))
        try:
            return self._differences(file_id, tuple(state), scratch_id, bool(text_pending))
        finally:
            drop_file_rows(self.scratch, scratch_id)
            self.scratch.execute("DELETE FROM files WHERE id = ?", (scratch_id,))
            # The scratch index holds one file at a time: its search rows all go at once.
            forget_all(self.scratch)

    def _line_differences(self, file_id: int, scratch_id: int) -> list[str]:
        """Whether the index counted the lines and the skipped lines as the fresh parse did;
        the fresh parse's skipped lines are kept for the report."""
        query = "SELECT lines, skipped_count, skipped_lines, path FROM files WHERE id = ?"
        (indexed,) = self.connection.execute(query, (file_id,))
        ((lines, skipped_count, skipped_lines, path),) = self.scratch.execute(query, (scratch_id,))
        if skipped_count:
            self.skipped_lines[path] = SkippedLines(skipped_count, orjson.loads(skipped_lines))
        if indexed[:3] == (lines, skipped_count, skipped_lines):
            return []
        return [
            f"lines: {indexed[0]} indexed with {indexed[1]} skipped, the file has {lines}"
            f" with {skipped_count} skipped"
        ]

    def _differences(
        self, file_id: int, state: tuple[int, str, int], scratch_id: int, text_pending: bool
    ) -> list[str]:
        """What differs; the search rows of a file whose text is still to come
        (write/text_later.py) are not compared: it has some or none of them, by design."""
        found: list[str] = []
        (fresh,) = self.scratch.execute(
            "SELECT indexed_bytes, status, chained FROM files WHERE id = ?", (scratch_id,)
        )
        if state != fresh:
            found.append(
                f"indexed {state[0]} bytes ({state[1]}, chained {state[2]}),"
                f" the file has {fresh[0]} ({fresh[1]}, chained {fresh[2]})"
            )
        found += self._line_differences(file_id, scratch_id)
        for label, query in (
            (
                "entries",
                f"SELECT {_COMPARED_ENTRY_COLUMNS} FROM entries WHERE session = ? ORDER BY seq",
            ),
            ("session", f"SELECT {_COMPARED_SESSION_COLUMNS} FROM sessions WHERE file_id = ?"),
            (
                # The number of tokens each entry is indexed under (FTS5's own docsize row).
                "search text",
                "SELECT e.seq, d.sz FROM entries AS e JOIN entries_fts_docsize AS d ON d.id = e.pk"
                " WHERE e.session = ? ORDER BY e.seq",
            ),
            (
                "summary lines",
                "SELECT seq, leaf_id, summary FROM leaf_summaries WHERE file_id = ? ORDER BY seq",
            ),
            (
                "quota readings",
                "SELECT seq, slot, observed_at, used_percent, window_minutes, resets_at, limit_id,"
                " plan_type FROM quota_observations WHERE file_id = ? ORDER BY seq, slot",
            ),
            (
                "blob refs",
                "SELECT e.seq, r.hash FROM entries AS e JOIN blob_refs AS r ON r.entry = e.pk"
                " WHERE e.session = ? ORDER BY e.seq, r.hash",
            ),
        ):
            if text_pending and label == "search text":
                continue
            ours = self.connection.execute(query, (file_id,)).fetchall()
            fresh = self.scratch.execute(query, (scratch_id,)).fetchall()
            if ours != fresh:
                found.append(_describe_difference(label, ours, fresh))
        if not found and not text_pending:
            found += self._posting_differences(file_id)
        return found

    def _posting_differences(self, file_id: int) -> list[str]:
        """Whether each entry is found under the first and the last word of its text:
        entries_fts keeps no text to compare (migration 0007), so its postings are probed with
        the text the file holds now. (The number of words of each is compared already.)

        One query per distinct word, over the file's range of keys, answers for all its
        entries at once."""
        rows = list(
            self.connection.execute(
                "SELECT seq, pk FROM entries WHERE session = ? ORDER BY seq", (file_id,)
            )
        )
        if not rows:
            return []
        texts = entry_texts(self.connection, [pk for _, pk in rows])
        expected: dict[str, list[tuple[int, int]]] = {}
        for seq, pk in rows:
            folded = [token for _, _, token in self.tokens.spans(utf8(texts.get(pk) or ""))]
            for token in {*folded[:1], *folded[-1:]}:
                expected.setdefault(token, []).append((seq, pk))
        low, high = min(pk for _, pk in rows), max(pk for _, pk in rows)
        for token, holders in expected.items():
            found = {
                row[0]
                for row in self.connection.execute(
                    "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?"
                    " AND rowid >= ? AND rowid <= ?",
                    (quote(token), low, high),
                )
            }
            for seq, pk in holders:
                if pk not in found:
                    return [f"search text: entry {seq} is not found under the words of its text"]
        return []


def _describe_difference(label: str, ours: list[Any], fresh: list[Any]) -> str:
    if len(ours) != len(fresh):
        return f"{label}: {len(ours)} rows indexed, {len(fresh)} in the file"
    for position, (mine, theirs) in enumerate(zip(ours, fresh, strict=True)):
        if mine != theirs:
            return f"{label}: row {position} differs ({mine!r} != {theirs!r})"
    return f"{label}: differ"


def search_errors(connection: apsw.Connection) -> list[str]:
    """Search rows of entries that are gone, when they are not the ones counted as stale as
    their entries went (stale_search.py): only damage or a bug makes the two disagree, and the
    count decides when they are deleted. (Damage to entries_fts itself is check_integrity's.)"""
    ((found,),) = connection.execute(f"SELECT count(*) FROM ({STALE_ROWS})").fetchall()
    counted = stale_count(connection)
    if found == counted:
        return []
    return [f"search: {found:,} indexed texts belong to no entry, {counted:,} were counted"]


def refcount_errors(connection: apsw.Connection) -> list[str]:
    """Blobs whose stored refcount disagrees with the references actually indexed."""
    rows = connection.execute(
        "SELECT b.hash, b.refcount, coalesce(r.n, 0) FROM blobs AS b"
        " LEFT JOIN (SELECT hash, count(*) AS n FROM blob_refs GROUP BY hash) AS r"
        " ON r.hash = b.hash WHERE b.refcount != coalesce(r.n, 0)"
    ).fetchall()
    missing = connection.execute(
        "SELECT DISTINCT hash FROM blob_refs WHERE hash NOT IN (SELECT hash FROM blobs)"
    ).fetchall()
    errors = [
        f"blob {digest}: refcount {stored}, {actual} references" for digest, stored, actual in rows
    ]
    errors += [f"blob {digest}: referenced but has no blobs row" for (digest,) in missing]
    return errors
