"""The archive's verbs: ``restore`` (an archived session written back where its agent keeps it)
and ``forget`` (sessions deleted from the index and the archive on purpose)."""

from __future__ import annotations

import sys

import click

from xcsh_store.artifacts.output import format_bytes
from xcsh_store.cli.app import (
    Settings,
    cli,
    echo_wrapped,
    emit_json,
    json_option,
    open_index,
    pass_settings,
)
from xcsh_store.cli.output.render import home_relative, plural
from xcsh_store.cli.params import TimeBound, filter_options
from xcsh_store.index import IndexedSession, SessionFilter, SessionIndex, SessionQuery
from xcsh_store.times import parse_iso


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
    listed = index.sessions(SessionQuery(filters, "modified", None))
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
