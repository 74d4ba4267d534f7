"""Verbs that keep the store in shape: ``sync``, ``gc``, ``verify``, ``migrate``, ``doctor``,
and the archive's ``restore`` and ``forget``."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import click

from xcsh_store.agents import OTHER_AGENTS as ROOT_AGENTS
from xcsh_store.artifacts.output import format_bytes
from xcsh_store.cli.app import (
    Settings,
    cli,
    echo_wrapped,
    emit_json,
    json_option,
    open_index,
    pass_settings,
    print_table,
)
from xcsh_store.cli.health import Diagnosis, diagnose
from xcsh_store.cli.output.render import home_relative, local_time, plural
from xcsh_store.cli.output.safe import visible
from xcsh_store.cli.output.shapes import describe_skipped, skipped_json
from xcsh_store.cli.params import Duration, TimeBound, agents_in_words, filter_options
from xcsh_store.cli.places import found_session_folders, nothing_to_index
from xcsh_store.homes import get_data_store_dir
from xcsh_store.index import (
    GcReport,
    IndexedSession,
    OutsideReaders,
    Progress,
    SessionFilter,
    SessionIndex,
    SessionQuery,
    SyncReport,
    VerifyReport,
)
from xcsh_store.paths import (
    ensure_private_dir,
    get_archive_dir,
    get_index_db_path,
    get_sessions_dir,
    is_agent_dir,
)
from xcsh_store.session.upgrade import (
    CURRENT,
    MIGRATED,
    NOT_A_SESSION,
    WOULD_MIGRATE,
    FileMigration,
    migrate_files,
)
from xcsh_store.times import parse_iso

# --------------------------------------------------------------------------------------------
# sync

# More worker processes than this would only queue for the cores (and each costs memory).
MAX_WORKERS = 256


@contextmanager
def progress_bar(settings: Settings, label: str) -> Iterator[Progress | None]:
    """A byte-based progress bar on stderr when stderr is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        yield None
        return
    bar: Any = None
    shown = 0

    def report(done: int, total: int, path: str) -> None:
        nonlocal bar, shown
        if bar is None:
            bar = click.progressbar(
                length=max(total, 1),
                label=label,
                file=sys.stderr,
                color=settings.color,
                show_pos=False,
                item_show_func=lambda item: item,
            )
            bar.__enter__()
        bar.update(done - shown, current_item=visible(home_relative(path)[-40:]) if path else None)
        shown = done

    try:
        yield report
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def sync_json(report: SyncReport) -> dict[str, Any]:
    return {
        "files_seen": report.files_seen,
        "files_unchanged": report.files_unchanged,
        "files_changed": report.files_changed,
        "files_reindexed": report.files_reindexed,
        "files_removed": report.files_removed,
        "files_renamed": report.files_renamed,
        "entries_added": report.entries_added,
        "entries_removed": report.entries_removed,
        "bytes_read": report.bytes_read,
        "seconds": round(report.seconds, 3),
        "unreadable": report.unreadable,
        "missing_roots": report.missing_roots,
        "recorded_roots": report.recorded_roots,
        "history_mirrored": report.history_mirrored,
        "history_error": report.history_error,
        "skipped_lines": skipped_json(report.skipped_lines),
        "resync_reason": report.resync_reason,
        "repriced": report.repriced,
        "text_files_indexed": report.text_files_indexed,
        "text_pending": report.text_pending,
        "entries_pending": report.entries_pending,
        "files_archived_gone": report.files_archived_gone,
        "archive_bytes_written": report.archive_bytes_written,
        "archive_error": report.archive_error,
    }


def describe_sync(report: SyncReport) -> list[str]:
    lines = [
        f"Synced {plural(report.files_seen, 'file')}: {report.files_changed:,} changed, "
        f"{report.files_unchanged:,} unchanged, {report.files_removed:,} removed"
        + (f", {report.files_renamed:,} renamed" if report.files_renamed else "")
        + f" · +{report.entries_added:,}/-{report.entries_removed:,} entries · "
        f"{format_bytes(report.bytes_read)} read · {report.seconds:.2f}s"
    ]
    if report.files_archived_gone:
        lines.append(
            f"Archived: {plural(report.files_archived_gone, 'file')} gone from their agents'"
            " folders; their sessions stay, read from the store's archive"
        )

    if report.repriced:
        lines.append("Prices changed: every session was priced again")
    if report.text_files_indexed:
        lines.append(
            f"Search text added for {plural(report.text_files_indexed, 'file')} (an earlier"
            " usage-first sync had left it for later)"
        )
    if report.text_pending:
        lines.append(
            f"Search text: {plural(report.text_pending, 'file')} changed while it was indexed:"
            " searches miss some of their entries until the next sync"
        )
    if report.history_mirrored:
        lines.append(f"Prompt history: {plural(report.history_mirrored, 'new prompt')} mirrored")
    if report.history_error:
        lines.append(f"Prompt history: {report.history_error}")
    lines += describe_skipped(report.skipped_lines)
    lines += [f"Unreadable: {path}: {error}" for path, error in report.unreadable.items()]
    lines += [f"Missing root: {root}" for root in report.missing_roots]
    lines += [
        f"Also indexed: {root} (sessions made there keep their blobs here)"
        for root in report.recorded_roots
        if root not in report.missing_roots
    ]
    return lines


def require_agent_dir(settings: Settings, init: bool = False, adding_roots: bool = False) -> None:
    """Refuse to write an index into a folder no agent uses (a mistyped --agent-dir), unless
    ``init`` asks to make it an agent dir (with an empty ``sessions/``). Where there is no
    xcsh agent dir, the index goes to the data dir (homes.get_data_store_dir), made here when
    there are sessions to index (found, or in roots being added)."""
    folder = settings.agent_dir
    if init:
        ensure_private_dir(get_sessions_dir(folder))
    elif (
        is_agent_dir(folder)
        or os.path.isfile(get_index_db_path(folder))
        or os.path.isdir(get_archive_dir(folder))
    ):
        return
    elif folder == get_data_store_dir():
        if not found_session_folders(folder) and not adding_roots:
            raise click.ClickException(f"Nothing to sync: {nothing_to_index(folder)}")
        ensure_private_dir(folder)
    else:
        found = found_session_folders(folder)
        if found:
            raise click.ClickException(
                f"{folder} is not an agent dir; sessions were found in {', '.join(found)}: run"
                " `xcsh-store sync` without --agent-dir (and $XCSH_AGENT_DIR) to index them in"
                f" {home_relative(get_data_store_dir())}, or `xcsh-store sync --init` to make"
                " this folder an agent dir and index them there"
            )
        raise click.ClickException(
            f"{folder} is not an agent dir (no sessions/ folder, no history.db):"
            " check --agent-dir or $XCSH_AGENT_DIR, or run `xcsh-store sync --init` to make it one"
        )


@cli.command("sync")
@click.option("--full", is_flag=True, help="Re-read every file instead of only what changed.")
@click.option(
    "--init",
    is_flag=True,
    help="Make the agent dir (and its sessions/ folder) if it is not one yet.",
)
@click.option(
    "--add-root",
    "add_roots",
    multiple=True,
    metavar="[AGENT:]DIR",
    help="Also index the session files under DIR, now and in every later sync (repeatable);"
    " AGENT:DIR for another agent's files (e.g. a copy from another machine), which are only"
    " ever read; AGENT is one of " + ", ".join(ROOT_AGENTS) + ".",
)
@click.option(
    "--remove-root",
    "remove_roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Stop indexing a root added with --add-root or recorded by the session manager "
    "(repeatable).",
)
@click.option(
    "--agent-roots/--no-agent-roots",
    "agent_roots",
    default=None,
    help="Index the sessions folders of " + agents_in_words(family=True) + " (where each keeps"
    " them, or where their variables move them: docs/agents.md) when they exist (the default),"
    " or stop (remembered).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=MAX_WORKERS),
    metavar="N",
    help="Processes that read files whole in parallel (default: one per core; 1: none, all in"
    " this process). A sync with little to read whole starts none.",
)
@json_option
@pass_settings
def sync_command(
    settings: Settings,
    full: bool,
    init: bool,
    add_roots: tuple[str, ...],
    remove_roots: tuple[str, ...],
    agent_roots: bool | None,
    workers: int | None,
    as_json: bool,
) -> None:
    """Bring index.db up to date with the session files and history.db.

    Indexes xcsh's sessions and those of AGENTS found on this
    machine; without an xcsh agent dir, index.db lives in ~/.local/share/xcsh-store. Only new
    bytes are read: an unchanged file costs one stat, a grown file is read from where the last
    sync stopped. Extra roots are remembered in the index; a registered root that is missing
    later makes `gc --apply` refuse. A folder given with --agent-dir that holds neither
    sessions/ nor history.db is refused (mistyped?) unless --init makes it an agent dir.

    \b
    Examples:
      xcsh-store sync
      xcsh-store sync --full --json
      xcsh-store sync --full --workers 4
      xcsh-store sync --add-root ~/old-machine/sessions
      xcsh-store sync --add-root claude:~/old-machine/.claude/projects
    """
    roots = [_agent_root(root) for root in add_roots]
    require_agent_dir(settings, init, adding_roots=bool(roots))
    with open_index(settings, read_only=False) as index:
        upgrade = index.pending_upgrade()
        if upgrade is not None:
            echo_wrapped(
                f"Upgrading index.db ({upgrade}): every session file is read once more", err=True
            )
        with progress_bar(settings, "Indexing") as bar:
            for path, agent in roots:
                index.add_root(path, agent)
            for root in remove_roots:
                index.remove_root(root)
            if agent_roots is not None:
                index.find_agent_roots(agent_roots)
            report = index.sync(full=full, progress=bar, workers=workers)
    if as_json:
        emit_json(sync_json(report))
        return
    for line in describe_sync(report):
        echo_wrapped(line)
    _prepare_secret_rules(index.db_path)
    if report.archive_error:
        raise click.ClickException(report.archive_error)


def _prepare_secret_rules(db_path: str) -> None:
    """In a terminal, with the secrets extra installed: the secret rules compiled once (a few
    seconds, once per machine and version, recorded beside index.db), so that the first
    ``secrets`` does not sit on them. Scripts and pipes never wait for it."""
    if not sys.stderr.isatty() or importlib.util.find_spec("kingfisher_sdk") is None:
        return
    from xcsh_store.secrets.detect import prepare_rules

    folder = os.path.dirname(os.path.abspath(db_path))
    prepare_rules(
        folder, lambda: click.echo("Preparing the secret rules (once per machine)…", err=True)
    )


sync_command.help = (sync_command.help or "").replace("AGENTS", agents_in_words(family=True))


def _agent_root(text: str) -> tuple[str, str | None]:
    """(folder, agent) of an --add-root value: ``DIR`` or ``AGENT:DIR`` (``claude:DIR``)."""
    agent, separator, rest = text.partition(":")
    if separator and agent in ROOT_AGENTS:
        path, named = os.path.expanduser(rest), agent
    else:
        path, named = text, None
    if not os.path.isdir(path):
        raise click.BadParameter(f"{path} is not a folder", param_hint="--add-root")
    return path, named


# --------------------------------------------------------------------------------------------
# gc


def gc_json(report: GcReport, grace: timedelta) -> dict[str, Any]:
    return {
        "applied": report.applied,
        "refused": report.refused,
        "grace_seconds": grace.total_seconds(),
        "blobs_on_disk": report.blobs_on_disk,
        "referenced": report.referenced,
        "kept_recent": report.kept_recent,
        "candidates": report.candidates,
        "candidate_bytes": report.candidate_bytes,
        "deleted": report.deleted,
        "bytes_freed": report.bytes_freed,
        "dangling": report.dangling,
        "skipped": report.skipped,
    }


@cli.command("gc")
@click.option("--apply", is_flag=True, help="Delete the unreferenced blobs (default: dry run).")
@click.option(
    "--grace",
    type=Duration(),
    default="1h",
    show_default=True,
    help="Keep blobs younger than this (30m, 1h, 2d): an agent may be about to reference them.",
)
@json_option
@pass_settings
def gc_command(settings: Settings, apply: bool, grace: timedelta, as_json: bool) -> None:
    """Find blobs (stored images) no session references any more; delete them with --apply.

    Syncs first, again while session files move. Refuses to delete while any session file,
    folder or root could not be read (a dangling folder link too), or files kept moving, since
    a blob referenced only from there would look unused. Also lists dangling references:
    entries pointing at blobs that are missing. Exit code 1 when deleting was refused, or (dry
    run) when --apply would refuse.

    \b
    Examples:
      xcsh-store gc
      xcsh-store gc --apply --grace 2d
    """
    require_agent_dir(settings)
    with open_index(settings, read_only=False) as index:
        report = index.blob_gc(apply=apply, grace=grace)
    if as_json:
        emit_json(gc_json(report, grace))
    else:
        _print_gc(settings, report, grace)
    if report.refused:
        done = "not deleted" if apply else "would not be deleted by --apply"
        raise click.ClickException(f"blobs {done}: {report.refused}")


def _print_gc(settings: Settings, report: GcReport, grace: timedelta) -> None:
    echo_wrapped(
        f"Blob store: {plural(report.blobs_on_disk, 'blob')} on disk, "
        f"{report.referenced:,} referenced, {report.kept_recent:,} unreferenced but newer "
        f"than the {_duration(grace)} grace period"
    )
    count = len(report.deleted if report.applied else report.candidates)
    if report.applied:
        echo_wrapped(
            f"Deleted {plural(count, 'unreferenced blob')} ({format_bytes(report.bytes_freed)})."
        )
    elif report.candidates:
        echo_wrapped(
            f"{plural(count, 'unreferenced blob')} ({format_bytes(report.candidate_bytes)}) "
            + ("would be deleted; run with --apply to delete them:" if not report.refused else ":")
        )
        for digest in report.candidates:
            echo_wrapped(f"  {digest}")
    else:
        echo_wrapped("Nothing to delete.")
    if report.dangling:
        echo_wrapped(
            settings.style(
                f"{plural(len(report.dangling), 'dangling reference')} (entries point at blobs "
                "that are missing):",
                fg="yellow",
            )
        )
        for digest in report.dangling:
            echo_wrapped(f"  {digest}")
    for name in report.skipped:
        echo_wrapped(f"Warning: skipped blobs/{name}: not a regular file", err=True)


def _duration(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# --------------------------------------------------------------------------------------------
# verify


def verify_json(report: VerifyReport) -> dict[str, Any]:
    return {
        "clean": report.clean,
        "files_checked": report.files_checked,
        "differences": report.differences,
        "changed_since_sync": report.changed_since_sync,
        "refcount_errors": report.refcount_errors,
        "search_errors": report.search_errors,
        "repaired": report.repaired,
        "archive_problems": report.archive_problems,
        "archive_repaired": report.archive_repaired,
        "skipped_lines": skipped_json(report.skipped_lines),
    }


@cli.command("verify")
@click.option("--repair", is_flag=True, help="Re-index exactly the files that differ.")
@json_option
@pass_settings
def verify_command(settings: Settings, repair: bool, as_json: bool) -> None:
    """Compare index.db with a fresh parse of every session file.

    Exit code 1 when the index differs and was not repaired.

    \b
    Examples:
      xcsh-store verify
      xcsh-store verify --repair
    """
    if repair:
        require_agent_dir(settings)
    with open_index(settings, read_only=not repair) as index:
        report = index.verify(repair=repair)
    if as_json:
        emit_json(verify_json(report))
    else:
        _print_verify(settings, report)
    unrepaired = len(set(report.differences) - set(report.repaired))
    unsynced = len(set(report.changed_since_sync) - set(report.repaired))
    wrong_counts = 0 if repair else len(report.refcount_errors)
    wrong_search = 0 if repair else len(report.search_errors)
    failures = []
    if unsynced:
        failures.append(
            f"{plural(unsynced, 'file')} changed since the last sync: run `xcsh-store sync`"
        )
    if unrepaired or wrong_counts or wrong_search:
        what = [plural(unrepaired, "file")] if unrepaired else []
        what += [plural(wrong_counts, "blob count")] if wrong_counts else []
        what += ["search rows of gone entries"] if wrong_search else []
        failures.append(
            f"the index differs in {' and '.join(what)}; run `xcsh-store verify --repair`"
        )
    if failures:
        raise click.ClickException("; ".join(failures))


def _print_verify(settings: Settings, report: VerifyReport) -> None:
    if report.clean:
        echo_wrapped(
            settings.style("Index matches the files and the archive", fg="green")
            + f" ({report.files_checked:,} checked)."
        )
    else:
        echo_wrapped(f"Checked {plural(report.files_checked, 'file')}:")
    for path, problems in report.differences.items():
        state = " (repaired)" if path in report.repaired else ""
        echo_wrapped(settings.style(home_relative(path), bold=True) + state)
        for problem in problems:
            echo_wrapped(f"  {problem}")
    if report.changed_since_sync:
        echo_wrapped("Changed since the last sync (not compared):")
        for path, change in report.changed_since_sync.items():
            state = ", indexed now" if path in report.repaired else ""
            echo_wrapped(f"  {home_relative(path)} ({change}{state})")
    for problem in [*report.refcount_errors, *report.search_errors]:
        echo_wrapped(problem)
    for archive, problem in report.archive_problems.items():
        repaired = report.archive_repaired.get(archive)
        echo_wrapped(
            settings.style(f"Archive {home_relative(archive)}", bold=True)
            + (f" (repaired: {repaired})" if repaired else "")
        )
        echo_wrapped(f"  {problem}")
    if report.skipped_lines:
        echo_wrapped("Skipped lines (no JSON object; every reader skips them):")
        for line in describe_skipped(report.skipped_lines):
            echo_wrapped(f"  {line}")


# --------------------------------------------------------------------------------------------
# migrate


def migration_json(item: FileMigration) -> dict[str, Any]:
    return {
        "path": item.path,
        "status": item.status,
        "from_version": item.from_version,
        "to_version": item.to_version,
        "error": item.error,
    }


_RESULT_TEXT = {
    MIGRATED: "migrated",
    WOULD_MIGRATE: "would migrate",
    NOT_A_SESSION: "left alone: not a session file",
}


@cli.command("migrate")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--dry-run", "-n", is_flag=True, help="Only say which files would be rewritten.")
@json_option
@pass_settings
def migrate_command(
    settings: Settings, files: tuple[str, ...], dry_run: bool, as_json: bool
) -> None:
    """Rewrite old session files as v3, in place, keeping entry ids.

    v1 and v2 files and files with entries lacking ids are rewritten. Entries keep the ids
    ls, show and search already showed: entries that had none get the ones the index gave
    them, so nothing you noted down goes stale. Each file is replaced atomically, keeping its
    modification time. Without FILES: every session file under the agent dir. A file without a
    valid session header is never touched. Lines that are not JSON are dropped, as xcsh does
    when it rewrites a file. Exit code 1 when a file could not be migrated.

    \b
    Examples:
      xcsh-store migrate --dry-run
      xcsh-store migrate ~/.xcsh/agent/sessions/--home-me-app--/old-session.jsonl
    """
    results = migrate_files(list(files) if files else None, settings.agent_dir, dry_run)
    if as_json:
        emit_json({"dry_run": dry_run, "files": [migration_json(item) for item in results]})
    else:
        _print_migrations(results, get_sessions_dir(settings.agent_dir))
    failed = [item for item in results if item.status not in (*_RESULT_TEXT, CURRENT)]
    if failed:
        raise click.ClickException(f"{plural(len(failed), 'file')} could not be migrated")


def _print_migrations(results: list[FileMigration], sessions_dir: str) -> None:
    shown = [item for item in results if item.status != CURRENT]
    if shown:
        print_table(
            (
                (
                    _below(item.path, sessions_dir),
                    f"v{item.from_version}" if item.from_version else "",
                    _RESULT_TEXT.get(item.status, f"{item.status}: {item.error}"),
                )
                for item in shown
            ),
            headers=("file", "from", "result"),
            flexible=0,
        )
    counts = {status: 0 for status in (MIGRATED, WOULD_MIGRATE, CURRENT, NOT_A_SESSION)}
    for item in results:
        counts[item.status] = counts.get(item.status, 0) + 1
    counts = {status: count for status, count in counts.items() if count}
    echo_wrapped(
        f"{plural(len(results), 'file')}: "
        + ", ".join(f"{count:,} {_summary_word(status)}" for status, count in counts.items())
        + (
            "; entry ids are unchanged. Run `xcsh-store sync` to index the rewritten files."
            if counts.get(MIGRATED)
            else "."
        )
        if results
        else "No session files found."
    )


def _below(path: str, folder: str) -> str:
    """Session files are shown relative to the sessions folder they are in."""
    relative = os.path.relpath(path, folder)
    return home_relative(path) if relative.startswith("..") else relative


def _summary_word(status: str) -> str:
    return {CURRENT: "already current", NOT_A_SESSION: "not sessions"}.get(
        status, status.replace("_", " ")
    )


# --------------------------------------------------------------------------------------------
# doctor


def doctor_json(diagnosis: Diagnosis) -> dict[str, Any]:
    stats = diagnosis.index
    return {
        "healthy": diagnosis.healthy,
        "versions": diagnosis.versions,
        "fts5": diagnosis.fts5,
        "paths": diagnosis.paths,
        "exists": diagnosis.exists,
        "session_roots": diagnosis.session_roots,
        "index": None
        if stats is None
        else {
            "db_bytes": stats.db_bytes,
            "files": stats.files,
            "sessions": stats.sessions,
            "entries": stats.entries,
            "unreadable_files": stats.unreadable_files,
            "invalid_files": stats.invalid_files,
            "blobs_referenced": stats.blobs_referenced,
            "history_prompts": stats.history_prompts,
            "last_sync": stats.last_sync,
        },
        "index_error": diagnosis.index_error,
        "outside_readers": outside_readers_json(diagnosis.outside_readers),
        "permissions_checked": diagnosis.checked,
        "permission_problems": [
            {
                "path": problem.path,
                "kind": problem.kind,
                "mode": f"{problem.mode:04o}",
                "expected": f"{problem.expected:04o}",
                "fix": problem.fix,
            }
            for problem in diagnosis.permission_problems
        ],
        "more_permission_problems": diagnosis.more_permission_problems,
        "skipped_lines": skipped_json(diagnosis.skipped_lines),
        "duplicate_sessions": [
            {
                "session_id": duplicate.session_id,
                "counted": duplicate.counted,
                "copies": list(duplicate.copies),
                "entries": duplicate.entries,
            }
            for duplicate in diagnosis.duplicates
        ],
        "archive": None
        if diagnosis.archive is None
        else {
            "folder": diagnosis.archive.folder,
            "files": diagnosis.archive.files,
            "bytes": diagnosis.archive.bytes,
            "sessions": diagnosis.archive.sessions,
            "sessions_gone": diagnosis.archive.gone,
            "source_bytes": diagnosis.archive.source_bytes,
        },
        "problems": diagnosis.problems,
    }


def outside_readers_json(found: OutsideReaders | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {
        "readers": [
            {
                "reader": reader.name,
                "sqlite": reader.sqlite_version,
                "error": reader.error,
                "reads_every_table": reader.reads_every_table,
                "unreadable": reader.unreadable,
                "search": reader.searches,
                "search_error": reader.match_error,
            }
            for reader in found.readers
        ],
        "datasette": found.datasette_version,
        "datasette_plugin": found.plugin,
    }


@cli.command("doctor")
@json_option
@pass_settings
def doctor_command(settings: Settings, as_json: bool) -> None:
    """Check versions, paths, the index and file permissions, and say how to fix problems.

    Exit code 1 when a problem was found.

    \b
    Example:
      xcsh-store doctor
    """
    diagnosis = diagnose(settings.agent_dir)
    if as_json:
        emit_json(doctor_json(diagnosis))
    else:
        _print_doctor(settings, diagnosis)
    if not diagnosis.healthy:
        raise click.exceptions.Exit(1)


# What doctor says of an xcsh folder or file not made yet, where that is no problem.
NOT_YET = {
    "sessions": "none (xcsh's own sessions; the other agents' are read where they are)",
    "blobs": "none yet (made when xcsh stores an image)",
    "history_db": "none yet (made when xcsh saves a prompt)",
}


def _print_doctor(settings: Settings, diagnosis: Diagnosis) -> None:
    style = settings.style
    versions = diagnosis.versions
    ok, bad = style("ok", fg="green"), style("missing", fg="yellow")
    echo_wrapped(style("Versions", bold=True))
    echo_wrapped(
        f"  xcsh-store {versions['xcsh_store']} · Python {versions['python']} · "
        f"SQLite {versions['sqlite']} (apsw {versions['apsw']}, FTS5 "
        f"{'yes' if diagnosis.fts5 else 'NO'})"
    )
    echo_wrapped(style("Paths", bold=True))
    for name, path in diagnosis.paths.items():
        state: str
        if diagnosis.exists[name]:
            state = ok
        elif any(path in problem for problem in diagnosis.problems):
            state = bad
        else:  # made when first needed: nothing is wrong (a Claude-only user has none of them)
            state = NOT_YET.get(name, bad)
        echo_wrapped(f"  {name:<11} {home_relative(path)}  " + state)
    for root in diagnosis.session_roots:
        found = ok if os.path.isdir(root) else bad
        recorded = " (recorded by the session manager)"
        echo_wrapped(f"  {'root':<11} {home_relative(root)}  " + found + recorded)
    echo_wrapped(style("Index", bold=True))
    stats = diagnosis.index
    if stats is None:
        echo_wrapped(f"  {diagnosis.index_error or 'not checked'}")
    else:
        echo_wrapped(
            f"  {plural(stats.sessions, 'session')} · {plural(stats.entries, 'entry', 'entries')}"
            f" · {plural(stats.history_prompts, 'prompt')} · {format_bytes(stats.db_bytes)}"
            f" · last sync {local_time(stats.last_sync) or 'never'}"
        )
    archive = diagnosis.archive
    if archive is not None:
        echo_wrapped(style("Archive", bold=True) + f" {home_relative(archive.folder)}")
        if archive.files:
            echo_wrapped(
                f"  {plural(archive.sessions, 'session')} kept ({archive.gone:,} with their file"
                f" gone) · {plural(archive.files, 'file')} · {format_bytes(archive.bytes)}"
                f" for {format_bytes(archive.source_bytes)} of sessions"
            )
        else:
            echo_wrapped("  empty: other agents' sessions are kept here as sync reads them")
    if diagnosis.outside_readers is not None:
        _print_outside_readers(settings, diagnosis.outside_readers)
    echo_wrapped(style("Permissions", bold=True))
    if not diagnosis.permission_problems:
        echo_wrapped(f"  {plural(diagnosis.checked, 'path')} checked: all private " + ok)
    for problem in diagnosis.permission_problems:
        echo_wrapped(
            f"  {home_relative(problem.path)}  {problem.mode:04o}, want {problem.expected:04o}"
            f"  → {problem.fix}"
        )
    if diagnosis.more_permission_problems:
        echo_wrapped(f"  … and {diagnosis.more_permission_problems:,} more")
    if diagnosis.skipped_lines:
        echo_wrapped(
            style("Skipped lines", bold=True) + " (no JSON object; every reader skips them)"
        )
        for line in describe_skipped(diagnosis.skipped_lines):
            echo_wrapped(f"  {line}")
    if diagnosis.duplicates:
        echo_wrapped(style("Sessions in several files", bold=True) + " (their usage counts once)")
        for duplicate in diagnosis.duplicates:
            echo_wrapped(
                f"  {duplicate.session_id}: {plural(duplicate.entries, 'entry', 'entries')}"
                f" with usage counted in {home_relative(duplicate.counted)}, not in "
                + ", ".join(home_relative(path) for path in duplicate.copies)
            )
    if diagnosis.problems:
        echo_wrapped(style("Problems", bold=True, fg="red"))
        for described in diagnosis.problems:
            echo_wrapped(f"  • {described}")
    else:
        echo_wrapped(style("No problems found.", fg="green"))


def _print_outside_readers(settings: Settings, found: OutsideReaders) -> None:
    """What sqlite-utils, Datasette and the sqlite3 command can do with index.db here."""
    style = settings.style
    ok = style("ok", fg="green")
    echo_wrapped(style("Outside readers of index.db", bold=True))
    for reader in found.readers:
        users = " (sqlite-utils, Datasette)" if reader.name == "Python sqlite3" else ""
        if reader.error is not None:
            verdict = style(f"cannot open it: {reader.error}", fg="yellow")
        else:
            unreadable = "; ".join(f"{name} ({error})" for name, error in reader.unreadable.items())
            tables = (
                "every table " + ok
                if not reader.unreadable
                else style("cannot read " + unreadable, fg="yellow")
            )
            search = ok if reader.searches else style(f"no ({reader.match_error})", fg="yellow")
            verdict = tables + " · search " + search
        echo_wrapped(f"  {reader.name}{users}, SQLite {reader.sqlite_version}: " + verdict)
    if found.datasette_version is None:
        echo_wrapped(
            "  Datasette: not installed here; `pip install 'xcsh-store[datasette]'` adds it with"
            " xcsh-store's plugin (search with text and snippets)"
        )
    elif found.plugin:
        echo_wrapped(
            f"  Datasette {found.datasette_version} with xcsh-store's plugin: search with text"
            " and snippets " + ok
        )
    else:
        echo_wrapped(
            f"  Datasette {found.datasette_version}: "
            + style("without xcsh-store's plugin", fg="yellow")
            + " (install xcsh-store where Datasette runs)"
        )
    echo_wrapped("  `xcsh-store sql`: search with entry_text() and entry_snippet() " + ok)


# --------------------------------------------------------------------------------------------
# restore, forget: the archive of other agents' sessions


@cli.command("restore")
@click.argument("sessions", nargs=-1, required=True)
@click.option(
    "--to",
    "to",
    type=click.Path(file_okay=False),
    help="Write the files into this folder instead of the agent's own.",
)
@json_option
@pass_settings
def restore_command(
    settings: Settings, sessions: tuple[str, ...], to: str | None, as_json: bool
) -> None:
    """Write archived sessions back where their agent keeps them, byte for byte.

    The store's archive keeps the bytes it read of every other agent's session, so a session
    its agent deleted can be resumed: restore writes its file back (the agent's folder as it
    is found now) and prints the agent's resume command. A file already there with the same
    bytes is left as it is; one with other bytes is never overwritten (use --to DIR).

    SESSION is an id prefix, a file-name prefix or a path.

    \b
    Examples:
      xcsh-store restore 0195f3c2
      xcsh-store restore 0195f3c2 --to ~/restored
    """
    results = []
    with open_index(settings, read_only=False, fresh=True) as index:
        for session in sessions:
            results.append(index.restore(index.find_session(session), to))
    if as_json:
        emit_json([result.to_json() for result in results])
        return
    for result in results:
        where = home_relative(result.path)
        if result.files:
            echo_wrapped(
                f"Restored {result.agent} session {result.session_id}: {where}"
                f" ({format_bytes(result.bytes)}, SHA-256 {result.sha256[:16]}…)"
            )
        else:
            echo_wrapped(f"{result.agent} session {result.session_id} is there already: {where}")
        if result.command:
            echo_wrapped(f"  resume it: {result.command}")


@cli.command("forget")
@click.argument("sessions", nargs=-1)
@click.option(
    "--before",
    type=TimeBound(),
    help="Sessions last active before this time: 2026-01-01, 90d.",
)
@filter_options("agents", "project")
@click.option("--yes", is_flag=True, help="Do not ask before deleting.")
@click.option("--dry-run", is_flag=True, help="Only say what would be forgotten.")
@json_option
@pass_settings
def forget_command(
    settings: Settings,
    sessions: tuple[str, ...],
    before: str | None,
    filters: SessionFilter,
    yes: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Delete sessions from the index and the archive on purpose (privacy).

    The archive keeps other agents' sessions after their files are deleted; forget is the only
    way anything leaves it (gc never touches it). The team index drops the sessions on the
    next push. A session whose file is still there is left out of later syncs until its agent
    writes to the file again. Asks first, unless --yes.

    \b
    Examples:
      xcsh-store forget 0195f3c2
      xcsh-store forget --before 2025-01-01 --agent claude --dry-run
      xcsh-store forget --project ~/work/secret --yes
    """
    if not sessions and before is None and not filters.agents and filters.project is None:
        raise click.UsageError("name the sessions to forget: IDs, --before, --agent or --project")
    with open_index(settings, read_only=False, fresh=True) as index:
        chosen = _chosen(index, sessions, before, filters)
        counted = index.forget(chosen, apply=False)
        if dry_run or not chosen:
            report = counted
        else:
            if not yes:
                _confirm(counted.sessions, counted.archive_bytes)
            report = index.forget(chosen, apply=True)
    if as_json:
        emit_json({"dry_run": dry_run, **report.to_json()})
        return
    verb = "Would forget" if dry_run else "Forgot"
    echo_wrapped(
        f"{verb} {plural(report.sessions, 'session')}"
        f" ({plural(report.entries, 'entry', 'entries')};"
        f" {plural(report.archive_files, 'archive file')}, {format_bytes(report.archive_bytes)})"
    )
    if report.files_left:
        echo_wrapped(
            f"{plural(report.files_left, 'file')} still in the agents' folders: left out of"
            " syncs until their agent writes to them (delete them to forget them for good)"
        )


def _chosen(
    index: SessionIndex, sessions: tuple[str, ...], before: str | None, filters: SessionFilter
) -> list[IndexedSession]:
    """The sessions named, else those the filters pick (both: the named ones the filters
    keep), last active before ``before`` when given."""
    listed = index.sessions(SessionQuery(filter=filters))
    if sessions:
        kept = {session.file_id for session in listed} if filters != SessionFilter() else None
        found = [index.find_session(session) for session in sessions]
        listed = [session for session in found if kept is None or session.file_id in kept]
    cutoff = parse_iso(before) if before is not None else None
    unique = {session.file_id: session for session in listed}
    return [session for session in unique.values() if cutoff is None or session.modified < cutoff]


def _confirm(count: int, size: int) -> None:
    if not sys.stdin.isatty():
        raise click.UsageError(
            f"forget would delete {plural(count, 'session')}: give --yes to do it without a"
            " question (or --dry-run to see them)"
        )
    click.confirm(
        f"Forget {plural(count, 'session')} for good ({format_bytes(size)} of archive)?",
        abort=True,
    )
