"""``xcsh-store history``: add, list, search and prune the prompt history (history.db)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import click

from xcsh_store.cli.app import cli, emit_json, pass_settings, print_table, user_errors
from xcsh_store.history import HistoryEntry, HistoryStorage
from xcsh_store.paths import get_history_db_path

DEFAULT_LIMIT = 20

_limit_option = click.option(
    "--limit",
    "-n",
    type=int,
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Most prompts to show (clamped to 0..1000).",
)
_json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON instead of a table."
)


@cli.group("history")
def history_group() -> None:
    """Prompt history: the prompts typed into the agent, kept in <agent dir>/history.db.

    The file is the one xcsh writes; both programs can use it at the same time.
    """


def _open(settings: Any) -> HistoryStorage:
    return HistoryStorage.open(get_history_db_path(settings.agent_dir))


def entry_to_json(entry: HistoryEntry) -> dict[str, Any]:
    """The documented JSON shape of one prompt."""
    return {
        "id": entry.id,
        "prompt": entry.prompt,
        "created_at": entry.created_at,
        "created": datetime.fromtimestamp(entry.created_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cwd": entry.cwd,
    }


def _show(entries: list[HistoryEntry], as_json: bool) -> None:
    if as_json:
        emit_json([entry_to_json(entry) for entry in entries])
        return
    print_table(
        (
            (
                entry.id,
                datetime.fromtimestamp(entry.created_at).strftime("%Y-%m-%d %H:%M"),
                entry.cwd,
                entry.prompt,
            )
            for entry in entries
        ),
        headers=("id", "when", "cwd", "prompt"),
    )


@history_group.command("add")
@click.argument("prompt")
@click.option("--cwd", metavar="DIR", help="Working directory to record with the prompt.")
@pass_settings
@user_errors
def add_command(settings: Any, prompt: str, cwd: str | None) -> None:
    """Save PROMPT (trimmed) unless it is empty or repeats the newest prompt.

    Prints nothing.

    Example: xcsh-store history add "fix the failing test" --cwd ~/src/app
    """
    with _open(settings) as history:
        history.add(prompt, cwd)


@history_group.command("recent")
@_limit_option
@_json_option
@pass_settings
@user_errors
def recent_command(settings: Any, limit: int, as_json: bool) -> None:
    """List the newest prompts, newest first.

    JSON: a list of {"id", "prompt", "created_at" (epoch seconds), "created" (ISO 8601 UTC),
    "cwd" (null when unknown)}.

    Example: xcsh-store history recent --limit 5
    """
    with _open(settings) as history:
        entries = history.get_recent(limit)
    _show(entries, as_json)


@history_group.command("search")
@click.argument("query", nargs=-1, required=True)
@_limit_option
@click.option("--rank", is_flag=True, help="Best match first instead of newest first.")
@_json_option
@pass_settings
@user_errors
def search_command(
    settings: Any, query: tuple[str, ...], limit: int, rank: bool, as_json: bool
) -> None:
    """Find prompts that contain every word of QUERY as a word or word prefix.

    Any text is taken literally: quotes, *, AND/OR/NOT and brackets are just words.

    JSON: the same list as `history recent`.

    Example: xcsh-store history search fix migr --rank
    """
    with _open(settings) as history:
        entries = history.search(" ".join(query), limit, order="rank" if rank else "recent")
    _show(entries, as_json)


@history_group.command("prune")
@click.option(
    "--older-than",
    "older_than_days",
    type=click.FloatRange(min=0),
    metavar="DAYS",
    help="Delete prompts older than this many days.",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    metavar="N",
    help="Delete all but the N newest prompts.",
)
@_json_option
@pass_settings
@user_errors
def prune_command(
    settings: Any, older_than_days: float | None, keep_last: int | None, as_json: bool
) -> None:
    """Delete old prompts; with both options a prompt goes if either matches it.

    JSON: {"deleted": <number of prompts deleted>}.

    Example: xcsh-store history prune --older-than 90 --keep-last 10000
    """
    if older_than_days is None and keep_last is None:
        raise click.UsageError("give --older-than, --keep-last or both")
    older_than = None if older_than_days is None else timedelta(days=older_than_days)
    with _open(settings) as history:
        deleted = history.prune(older_than=older_than, keep_last=keep_last)
    if as_json:
        emit_json({"deleted": deleted})
    else:
        click.echo(f"Deleted {deleted} prompt{'' if deleted == 1 else 's'}.")
