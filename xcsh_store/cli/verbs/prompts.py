"""``xcsh-store history``: add, list, search and prune the prompt history (history.db), and
recall prompts typed in sessions through the index."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from xcsh_store.cli.app import (
    Settings,
    SuggestingGroup,
    cli,
    echo_wrapped,
    emit_json,
    json_option,
    open_index,
    pass_settings,
    print_table,
)
from xcsh_store.cli.output.render import cut_path, short_time
from xcsh_store.cli.output.shapes import prompt_hit_json
from xcsh_store.cli.params import agent_option, count_type, days_type
from xcsh_store.cli.verbs.listing import where
from xcsh_store.history.store import HistoryEntry, HistoryStorage
from xcsh_store.index import IndexReader, PromptHit, PromptQuery, prompt_json
from xcsh_store.paths import get_history_db_path

DEFAULT_LIMIT = 20

_limit_option = click.option(
    "--limit",
    "-n",
    type=click.IntRange(min=0),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Most prompts to show (at most 1000 are).",
)
_sessions_option = click.option(
    "--sessions",
    is_flag=True,
    help="Also prompts found in session files (from the index, as of the last sync), each "
    "linked to its session and entry.",
)


@cli.group("history", cls=SuggestingGroup)
def history_group() -> None:
    """Prompt history: the prompts typed into the agent, kept in <agent dir>/history.db.

    The file is the one xcsh writes; both programs can use it at the same time.
    """


def _open(settings: Settings) -> HistoryStorage:
    return HistoryStorage.open(get_history_db_path(settings.agent_dir))


def _has_history(settings: Settings) -> bool:
    """Whether there is a history.db to read: verbs that only read or delete never create one
    (a mistyped --agent-dir would otherwise gain a folder and a database)."""
    return os.path.isfile(get_history_db_path(settings.agent_dir))


def entry_to_json(entry: HistoryEntry) -> dict[str, Any]:
    """The documented JSON shape of one prompt from history.db."""
    return prompt_json(entry.prompt, entry.created_at, entry.cwd, history_id=entry.id)


def _when(created_at: float) -> str:
    return short_time(datetime.fromtimestamp(created_at, UTC))


NO_PROMPTS = "No prompts."
# history.db holds only what xcsh itself saved: a Claude Code or Codex user finds nothing there.
NO_HISTORY_PROMPTS = (
    "No prompts in history.db (the prompts xcsh saves). --sessions shows the prompts typed in"
    " every agent's sessions: xcsh-store history {verb} --sessions"
)


def _show(entries: Sequence[HistoryEntry], as_json: bool, verb: str) -> None:
    if as_json:
        emit_json([entry_to_json(entry) for entry in entries])
        return
    if not entries:
        echo_wrapped(NO_HISTORY_PROMPTS.format(verb=verb))
        return
    print_table(
        ((entry.id, _when(entry.created_at), where(entry.cwd), entry.prompt) for entry in entries),
        headers=("id", "when", "cwd", "prompt"),
        flexible=(3, 2),
        cuts={2: cut_path},
        right=(0,),
        whole=(0,),
    )


def _show_recall(
    settings: Settings, hits: Sequence[PromptHit], ids: dict[str, str], as_json: bool
) -> None:
    if as_json:
        emit_json([prompt_hit_json(hit) for hit in hits])
        return
    if not hits:
        echo_wrapped(NO_PROMPTS)
        return
    # history.db's id: only its own prompts have one (an empty column is noise).
    with_ids = any(hit.history_id for hit in hits)
    rows = [
        (
            hit.history_id or "",
            _when(hit.created_at),
            where(hit.cwd),
            ids.get(hit.session_id or "", ""),
            hit.prompt,
        )[0 if with_ids else 1 :]
        for hit in hits
    ]
    shift = 0 if with_ids else 1
    print_table(
        rows,
        headers=("id", "when", "cwd", "session", "prompt")[shift:],
        flexible=(4 - shift, 2 - shift),
        cuts={2 - shift: cut_path},
        right=(0,) if with_ids else (),
        # The prompt keeps its room before the cwd; ids are typed back whole.
        optional=(2 - shift,),
        whole=(0, 3) if with_ids else (2,),
        styles=lambda row, column, text: (
            settings.style(text, fg="cyan") if column == 3 - shift else text
        ),
    )


def _session_prefixes(index: IndexReader, hits: Sequence[PromptHit]) -> dict[str, str]:
    return index.unique_id_prefixes(hit.session_id for hit in hits if hit.session_id)


@history_group.command("add")
@click.argument("prompt")
@click.option("--cwd", metavar="DIR", help="Working directory to record with the prompt.")
@pass_settings
def add_command(settings: Settings, prompt: str, cwd: str | None) -> None:
    """Save PROMPT (trimmed) unless it is empty or repeats the newest prompt.

    Prints nothing.

    \b
    Example:
      xcsh-store history add "fix the failing test" --cwd ~/src/app
    """
    with _open(settings) as history:
        history.add(prompt, cwd)


@history_group.command("recent")
@_limit_option
@_sessions_option
@agent_option
@json_option
@pass_settings
def recent_command(
    settings: Settings, limit: int, sessions: bool, agents: tuple[str, ...], as_json: bool
) -> None:
    """List the newest prompts, newest first.

    With --sessions (implied by --agent), from the index: history.db's prompts, the other
    agents' prompt history files, and the prompts in every session.

    \b
    Examples:
      xcsh-store history recent --limit 5
      xcsh-store history recent --sessions --json
      xcsh-store history recent --agent claude
    """
    if sessions or agents or settings.db:
        with open_index(settings, team=True, fresh=True) as index:
            hits = index.prompts(PromptQuery(limit=limit, agents=agents))
            ids = _session_prefixes(index, hits)
        _show_recall(settings, hits, ids, as_json)
        return
    entries: list[HistoryEntry] = []
    if _has_history(settings):
        with _open(settings) as history:
            entries = history.get_recent(limit)
    _show(entries, as_json, "recent")


@history_group.command("search")
@click.argument("query", nargs=-1, required=True)
@_limit_option
@click.option("--rank", is_flag=True, help="Best match first instead of newest first.")
@_sessions_option
@agent_option
@json_option
@pass_settings
def search_command(
    settings: Settings,
    query: tuple[str, ...],
    limit: int,
    rank: bool,
    sessions: bool,
    agents: tuple[str, ...],
    as_json: bool,
) -> None:
    """Find prompts that contain every word of QUERY as a word or word prefix.

    Any text is taken literally: quotes, *, AND/OR/NOT and brackets are just words.

    \b
    Examples:
      xcsh-store history search fix migr --rank
      xcsh-store history search deploy --sessions
      xcsh-store history search deploy --agent codex
    """
    if sessions or agents or settings.db:
        if rank:
            raise click.UsageError(
                "--rank works on history.db alone; drop it or --sessions, --agent and --db"
            )
        with open_index(settings, team=True, fresh=True) as index:
            hits = index.prompts(PromptQuery(text=" ".join(query), limit=limit, agents=agents))
            ids = _session_prefixes(index, hits)
        _show_recall(settings, hits, ids, as_json)
        return
    entries: list[HistoryEntry] = []
    if _has_history(settings):
        with _open(settings) as history:
            entries = history.search(" ".join(query), limit, order="rank" if rank else "recent")
    _show(entries, as_json, "search " + shlex.join(query))


@history_group.command("prune")
@click.option(
    "--older-than",
    "older_than_days",
    type=days_type(),
    metavar="DAYS",
    help="Delete prompts older than this many days.",
)
@click.option(
    "--keep-last",
    type=count_type(0),
    metavar="N",
    help="Delete all but the N newest prompts.",
)
@json_option
@pass_settings
def prune_command(
    settings: Settings, older_than_days: float | None, keep_last: int | None, as_json: bool
) -> None:
    """Delete old prompts; with both options a prompt goes if either matches it.

    \b
    Example:
      xcsh-store history prune --older-than 90 --keep-last 10000
    """
    if older_than_days is None and keep_last is None:
        raise click.UsageError("give --older-than, --keep-last or both")
    older_than = None if older_than_days is None else timedelta(days=older_than_days)
    deleted = 0
    if _has_history(settings):
        with _open(settings) as history:
            deleted = history.prune(older_than=older_than, keep_last=keep_last)
    if as_json:
        emit_json({"deleted": deleted})
    else:
        echo_wrapped(f"Deleted {deleted} prompt{'' if deleted == 1 else 's'}.")
