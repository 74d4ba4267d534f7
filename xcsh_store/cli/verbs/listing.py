"""The ``ls`` verb: the sessions, newest first, from the index's listing."""

from __future__ import annotations

from typing import Any

import click

from xcsh_store.cli.app import (
    Settings,
    cli,
    echo,
    echo_wrapped,
    emit_json,
    json_option,
    open_index,
    pass_settings,
    print_table,
    team_only,
)
from xcsh_store.cli.output.render import (
    cut_path,
    home_relative,
    human_count,
    local_time,
    plural,
    short_time,
)
from xcsh_store.cli.output.shapes import ARCHIVED_MARK, session_cost, session_json
from xcsh_store.cli.params import (
    AgentsHelpCommand,
    count_type,
    every_filter_but,
    filter_options,
)
from xcsh_store.errors import UnknownFilterError
from xcsh_store.index import SESSION_ORDERS, SessionFilter, SessionQuery, check_filters

# The cwd column keeps its end (the project name) when it is cut.
CWD_WIDTH = 24
# What the title keeps before the cwd goes: a single agent's list keeps its cwd (cut to its
# last folder) at 80 columns.
TITLE_WIDTH = 24
DEFAULT_LIST_LIMIT = 30


def where(cwd: str | None) -> str:
    """A cwd as a cell: home-relative, its last components when it is long."""
    return cut_path(home_relative(cwd), CWD_WIDTH)


def known_filters(index: Any, *, model: str | None = None, project: str | None = None) -> None:
    """After an empty answer: a usage error naming the --model or --project that nothing in
    the index has, instead of "no matches"."""
    try:
        check_filters(index, model=model, project=project)
    except UnknownFilterError as error:
        raise click.BadParameter(str(error), param_hint=f"--{error.name}") from None


def nothing_listed(settings: Settings, index: Any, agents: tuple[str, ...]) -> list[str]:
    """What an empty listing says: that nothing was synced yet, or which folders the last sync
    read (a Claude Code user whose sessions are elsewhere learns where it looked)."""
    what = f"No {' or '.join(agents)} sessions" if agents else "No sessions"
    if settings.db is not None:
        return [f"{what}."]
    last_sync = index.stats().last_sync
    if last_sync is None:
        return [f"{what}: nothing was synced yet; run `xcsh-store sync`."]
    agents_of = index.agent_roots()
    roots = [
        home_relative(root) + (f" ({agents_of[root]})" if root in agents_of else "")
        for root in index.roots()
    ]
    return [
        f"{what}. The last sync ({local_time(last_sync)}) read {plural(len(roots), 'folder')}:"
        f" {', '.join(roots)}.",
        "(`xcsh-store sync --add-root DIR` adds a folder of sessions.)",
    ]


# Marks an id that several files share: the id alone cannot select one of them.
SHARED_ID_MARK = "*"


# ls takes every filter: its folders first, the rest (a new one too) after --limit and --order.
_FOLDER_FILTERS = ("cwd", "project")


@cli.command("ls", cls=AgentsHelpCommand)
@filter_options(*_FOLDER_FILTERS)
@click.option(
    "--limit",
    "-n",
    type=count_type(0),
    default=DEFAULT_LIST_LIMIT,
    show_default=True,
    help="Most sessions to list; 0 lists all.",
)
@click.option(
    "--order",
    type=click.Choice(SESSION_ORDERS),
    default="modified",
    show_default=True,
    help="Newest modified, newest created, or by title.",
)
@filter_options(
    *every_filter_but(*_FOLDER_FILTERS),
    since="Only sessions active from this time on (modified since): 2026-11-01, 7d.",
    until="Only sessions started before this time (same forms as --since).",
)
@json_option
@pass_settings
def ls_command(
    settings: Settings,
    filters: SessionFilter,
    limit: int,
    order: str,
    as_json: bool,
) -> None:
    """List sessions, newest first: xcsh's, and the other agents' (AGENTS) once synced.

    \b
    Examples:
      xcsh-store ls --cwd . --limit 10
      xcsh-store ls --agent claude --agent codex
      xcsh-store ls --since 2026-11-16 --until 2026-11-17
    """
    team_only(settings, filters.host is not None, "--host")
    with open_index(settings, team=True, fresh=True) as index:
        sessions = index.sessions(
            SessionQuery(filter=filters, order=order, limit=limit + 1 if limit else None)
        )
        ids = index.unique_id_prefixes(session.session_id for session in sessions)
        # (Only without a sync: the sync before a listing reads the entries put off.)
        pending = index.entries_pending()
        if not sessions:
            known_filters(index, project=filters.project)
            nothing = [] if as_json else nothing_listed(settings, index, filters.agents)
    if pending:
        echo(
            f"Partial list: {pending:,} session file"
            f"{'s have only their' if pending != 1 else ' has only its'} usage indexed yet"
            " (`xcsh-store sync` reads the rest).",
            err=True,
        )
    more = bool(limit) and len(sessions) > limit
    sessions = sessions[:limit] if limit else sessions
    if as_json:
        emit_json([session_json(session) for session in sessions])
        return
    if not sessions:
        for line in nothing:
            echo_wrapped(line)
        return
    # The agent column is there only when the list holds several agents' sessions.
    several_agents = len({session.agent for session in sessions}) > 1
    agent = [2] if several_agents else []
    print_table(
        (
            [
                ids[session.session_id]
                + (SHARED_ID_MARK if session.id_shared else "")
                + (ARCHIVED_MARK if session.source_gone_at else ""),
                short_time(session.modified),
                *([session.agent] if several_agents else []),
                where(session.cwd),
                session.message_count,
                human_count(session.tokens),
                session_cost(session),
                session.title or session.first_message,
            ]
            for session in sessions
        ),
        headers=(
            "id", "modified", *(["agent"] if several_agents else []), "cwd", "msgs", "tokens",
            "cost", "title / first message",
        ),
        flexible=(6 + len(agent), 2 + len(agent)),
        cuts={2 + len(agent): cut_path},
        # On a narrow terminal the message count, then the cwd, give way to the title.
        optional=(3 + len(agent), 2 + len(agent)),
        right=tuple(column + len(agent) for column in (3, 4, 5)),
        # An id is the shortest prefix `show` takes: cut, it would select nothing.
        whole=(0,),
        main_width=TITLE_WIDTH,
        styles=lambda row, column, text: settings.style(text, fg="cyan") if column == 0 else text,
    )  # fmt: skip
    if any(session.id_shared for session in sessions):
        echo_wrapped(f"({SHARED_ID_MARK} id shared by several files: name the file or its path)")
    if any(session.source_gone_at for session in sessions):
        echo_wrapped(f"({ARCHIVED_MARK} archived: its file is gone, the store keeps it: restore)")
    if more:
        echo_wrapped(f"(showing {limit}; --limit 0 lists all)")
