"""``export parquet DIR``: the index's sessions, entries and usage as Parquet files that DuckDB,
Spark, Trino or BigQuery read as they are.

Layout (Hive partitions, one file per partition):

    DIR/sessions/host=<host>/month=<YYYY-MM>/data.parquet
    DIR/entries/host=<host>/month=<YYYY-MM>/data.parquet
    DIR/usage/host=<host>/month=<YYYY-MM>/data.parquet
    DIR/_xcsh_manifests/<host>.json

A session, its entries and its usage live in the partition of the month the session was
created in, so a changed session rewrites one partition of each table. The manifest remembers
each exported file's state (index/read/export.py FileState); an export rewrites only the partitions
that hold a new, changed or deleted session. A partition file is written beside its final name
and renamed over it, so a reader sees the old file or the new one, never half of one; the
manifest is replaced last, so an export killed at any point is redone by the next one.
Tiers and ``redact_paths`` as for ``push`` (disclosure.py): below ``full`` no text, below
``meta`` no titles or first messages, secrets in titles, first messages and text redacted;
the manifest's states are keyed watermarks (which say whether the text was redacted), so the
folder holds no digest or size of a session file, and an export that redacts rewrites what one
that did not wrote.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from xcsh_store.index import (
    ENTRY_COLUMNS,
    ENTRY_ROW,
    SESSION_COLUMNS,
    SESSION_ROW,
    USAGE_COLUMNS,
    USAGE_ROW,
    Column,
    FileState,
    SessionIndex,
    entry_rows,
    named,
    session_files,
    session_row,
    usage_rows,
)
from xcsh_store.paths import ensure_private_dir
from xcsh_store.team.disclosure import Disclosure, host_key
from xcsh_store.team.errors import TeamIndexError
from xcsh_store.team.upload import remembered_host

# One manifest per host, so that hosts can export into one shared folder.
MANIFESTS = "_xcsh_manifests"
# 2: keyed watermarks (version 1 kept digests and sizes of the files), redact_paths.
MANIFEST_VERSION = 2
TABLES = ("sessions", "entries", "usage")
# The month of a session whose header has no usable time.
NO_MONTH = "unknown"


# Every table's path first, then its columns (the index's, as another store copies them:
# index/model/columns.py), with their Arrow types.
def _schema(columns: Iterable[Column], text: bool = False) -> pa.Schema:
    typed = [(column.name, getattr(pa, column.arrow)()) for column in columns if column.arrow]
    return pa.schema([("path", pa.string()), *typed, *([("text", pa.string())] if text else [])])


SCHEMAS = {
    "sessions": _schema(SESSION_ROW),
    "entries": _schema((*named(SESSION_ROW, "session_id"), *ENTRY_ROW), text=True),
    "usage": _schema(USAGE_ROW),
}


@dataclass
class ExportReport:
    host: str
    tier: str
    sessions: int = 0  # sessions the index holds
    changed: int = 0  # sessions new, changed or deleted since the last export
    partitions: int = 0  # partition files written or removed
    rows: int = 0  # rows written (all tables)


def month_of(created_at: str | None) -> str:
    if created_at and len(created_at) >= 7 and created_at[4] == "-":
        return created_at[:7]
    return NO_MONTH


def export_parquet(
    agent_dir: str,
    folder: str,
    tier: str = "full",
    host: str | None = None,
    db_path: str | None = None,
    redact_paths: bool = False,
    redact: bool = True,
) -> ExportReport:
    """Export the agent dir's index (``db_path``, default its index.db) into ``folder``
    (created if needed), incrementally; the secrets in its text redacted unless ``redact`` is
    false."""
    with SessionIndex.open(agent_dir, db_path=db_path, read_only=True) as index:
        key = host_key(os.path.dirname(index.db_path))
        disclosure = Disclosure(tier, key, redact_paths, redact)
        host = remembered_host(agent_dir, host, db_path)
        if "/" in host or host.startswith("."):
            raise TeamIndexError(f"Host name {host!r} cannot name a partition folder")
        ensure_private_dir(folder)
        manifest = _read_manifest(_manifest_path(folder, host))
        before: dict[str, dict[str, str]] = {}
        choices = {"host": host, "tier": tier, "redact_paths": redact_paths}
        if all(manifest.get(name) == value for name, value in choices.items()):
            before = manifest.get("files", {})
        report = ExportReport(host=host, tier=tier)
        local = {disclosure.path(path): state for path, state in session_files(index).items()}
        report.sessions = len(local)
        now = {path: {"state": disclosure.watermark(path, state.state),
                      "month": month_of(state.created_at)}
               for path, state in local.items()}  # fmt: skip
        changed = {path for path in now.keys() | before.keys() if now.get(path) != before.get(path)}
        report.changed = len(changed)
        dirty = {item["month"] for path in changed for item in (now.get(path), before.get(path))
                 if item is not None}  # fmt: skip
        if not before:  # another host or tier before, or none: every partition of ours anew
            dirty |= set(_months_on_disk(folder, host)) | {item["month"] for item in now.values()}
        usage = usage_rows(index) if dirty else {}
        with _full_disk_explained(folder):
            for month in sorted(dirty):
                states = sorted((path, state) for path, state in local.items()
                                if now[path]["month"] == month)  # fmt: skip
                report.rows += _write_month(folder, index, host, disclosure, month, states, usage)
                report.partitions += len(TABLES)
    exported = {"version": MANIFEST_VERSION, **choices, "files": now}
    with _full_disk_explained(folder):
        _write_manifest(_manifest_path(folder, host), exported)
    return report


@contextlib.contextmanager
def _full_disk_explained(folder: str) -> Iterator[None]:
    """A full disk, said so with what the export leaves behind."""
    try:
        yield
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        raise TeamIndexError(
            f"No space left on the disk holding {folder}: the partitions written before are"
            " whole (each file is replaced at once) and the manifest is the previous export's,"
            " so the next export writes the rest; free some space and export again"
        ) from None


def _write_month(
    folder: str,
    index: SessionIndex,
    host: str,
    disclosure: Disclosure,
    month: str,
    states: list[tuple[str, FileState]],
    usage: dict[int, list[tuple[Any, ...]]],
) -> int:
    """Write (or remove, when no session is left) the month's file of each table; ``states``
    are the month's files, each with its path as it leaves."""
    columns: dict[str, dict[str, list[Any]]] = {
        table: {name: [] for name in SCHEMAS[table].names} for table in TABLES
    }
    with_text = disclosure.at_least("full")
    for path, state in states:
        values = disclosure.session(session_row(index, state.file_id))
        session = dict(zip(SESSION_COLUMNS, values, strict=True))
        _add(columns["sessions"], {"path": path, **session})
        entries = list(entry_rows(index, state.file_id, with_text=with_text))
        for values, text, _raw in disclosure.entries(entries):
            _add(
                columns["entries"],
                {"path": path, "session_id": session["session_id"],
                 **dict(zip(ENTRY_COLUMNS, values, strict=True)), "text": text},
            )  # fmt: skip
        for usage_values in usage.get(state.file_id, []):
            row = dict(zip(USAGE_COLUMNS, disclosure.usage(usage_values), strict=True))
            _add(columns["usage"], {"path": path, **row})
    written = 0
    for table in TABLES:
        target = os.path.join(folder, table, f"host={host}", f"month={month}", "data.parquet")
        if not states:
            _remove(target)
            continue
        data = pa.table(columns[table], schema=SCHEMAS[table])
        _replace(target, data)
        written += data.num_rows
    return written


def _add(columns: dict[str, list[Any]], row: dict[str, Any]) -> None:
    for name, values in columns.items():
        values.append(row.get(name))


def _replace(target: str, data: pa.Table) -> None:
    ensure_private_dir(os.path.dirname(target))
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        pq.write_table(data, temporary, compression="zstd")
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _remove(target: str) -> None:
    try:
        os.unlink(target)
    except FileNotFoundError:
        return
    for folder in (os.path.dirname(target), os.path.dirname(os.path.dirname(target))):
        try:
            os.rmdir(folder)
        except OSError:
            break


def _months_on_disk(folder: str, host: str) -> list[str]:
    found = set()
    for table in TABLES:
        base = os.path.join(folder, table, f"host={host}")
        if os.path.isdir(base):
            found |= {name.removeprefix("month=") for name in os.listdir(base)
                      if name.startswith("month=")}  # fmt: skip
    return sorted(found)


def _manifest_path(folder: str, host: str) -> str:
    return os.path.join(folder, MANIFESTS, f"{host}.json")


def _read_manifest(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            manifest = orjson.loads(handle.read())
    except FileNotFoundError:
        return {}
    except (OSError, orjson.JSONDecodeError):
        return {}  # unreadable: every partition is written again, which repairs it
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        return {}
    return manifest


def _write_manifest(target: str, manifest: dict[str, Any]) -> None:
    ensure_private_dir(os.path.dirname(target))
    temporary = f"{target}.{os.getpid()}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target)
