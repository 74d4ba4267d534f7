"""``xcsh-store sql``: a read-only SQL query on index.db, printed as a table or streamed JSON rows,
with a time limit and Ctrl-C that stops the statement at once."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import Any, Protocol

import click
import orjson

from xcsh_store.cli.app import (
    Settings,
    cli,
    echo_wrapped,
    json_bytes,
    json_option,
    open_team_index,
    pass_settings,
    print_table,
)
from xcsh_store.cli.params import FiniteRange, count_type
from xcsh_store.index import (
    QueryInterruptedError,
    QueryStream,
    QueryTimeoutError,
    open_query,
)
from xcsh_store.paths import get_index_db_path
from xcsh_store.times import MAX_DAYS

DEFAULT_TIMEOUT = 30.0
DEFAULT_TABLE_ROWS = 1000
# Shell convention for a program stopped by SIGINT.
INTERRUPTED_EXIT = 130


@cli.command("sql")
@click.argument("query")
@click.option(
    "--param",
    "-p",
    "parameters",
    type=(str, str),
    multiple=True,
    metavar="NAME VALUE",
    help="Bind :NAME in the query to VALUE (repeatable).",
)
@click.option(
    "--timeout",
    type=FiniteRange(min=0, max=MAX_DAYS * 86400),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Stop a statement that runs longer than this; 0 for no limit.",
)
@click.option(
    "--limit",
    "-n",
    type=count_type(1),
    default=DEFAULT_TABLE_ROWS,
    show_default=True,
    help="Most rows the table shows (the rest are counted); --json streams every row.",
)
@click.option(
    "--allow-privileged-role",
    is_flag=True,
    help="With --db: run the statement even as a superuser, or a role that may run programs"
    " or read or write files on the database host (refused otherwise: READ ONLY does not stop"
    " those). Prints a warning.",
)
@json_option
@pass_settings
def sql_command(
    settings: Settings,
    query: str,
    parameters: tuple[tuple[str, str], ...],
    timeout: float,
    limit: int,
    allow_privileged_role: bool,
    as_json: bool,
) -> None:
    """Run one read-only SQL statement QUERY on index.db (opened with SQLite's read-only flag).

    The tables and views are documented in docs/schema.md. Writing is refused,
    and so are several statements at once. Rows are streamed; Ctrl-C stops the statement.
    JSON: a list of objects, one per row, keyed by column name, written as rows arrive.

    \b
    Examples:
      xcsh-store sql "SELECT model, sum(cost) FROM messages GROUP BY model"
      xcsh-store sql "SELECT * FROM usage_by_day ORDER BY day DESC LIMIT 7" --json
      xcsh-store sql "SELECT path FROM sessions WHERE cwd = :cwd" -p cwd ~/src/app
    """
    if settings.db is not None:
        _team_sql(
            settings.db, query, dict(parameters), timeout, limit, allow_privileged_role, as_json
        )
        return
    if allow_privileged_role:
        raise click.UsageError("--allow-privileged-role is for a team index (--db)")
    path = get_index_db_path(settings.agent_dir)
    try:
        with (
            open_query(path, query, dict(parameters), timeout=timeout or None) as stream,
            _interrupt_on_sigint(stream),
        ):
            if as_json:
                _stream_json(stream)
            else:
                _print_rows(stream, limit)
    except QueryTimeoutError as error:
        raise click.ClickException(f"{error} (raise --timeout, or 0 for no limit)") from None
    except QueryInterruptedError as error:
        echo_wrapped(f"Error: {error}", err=True)
        raise click.exceptions.Exit(INTERRUPTED_EXIT) from None


def _team_sql(
    url: str,
    query: str,
    parameters: dict[str, str],
    timeout: float,
    limit: int,
    allow_privileged: bool,
    as_json: bool,
) -> None:
    """The statement on the team index (``--db``), as a reader role should run it."""
    with open_team_index(url) as team:
        if allow_privileged and (powers := team.powers()):
            echo_wrapped(
                f"Warning: --allow-privileged-role: running as a role with {', '.join(powers)};"
                " this statement can run programs and read or write files on the database host",
                err=True,
            )
        stream = team.query(
            query, parameters, timeout=timeout or None, allow_privileged=allow_privileged
        )
        if as_json:
            _stream_json(stream)
        else:
            _print_rows(stream, limit)


@contextmanager
def _interrupt_on_sigint(stream: QueryStream) -> Iterator[None]:
    """Ctrl-C stops the running statement instead of waiting for it to end."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = signal.signal(signal.SIGINT, lambda _signal, _frame: stream.interrupt())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Rows(Protocol):
    """The rows of a statement as either index streams them (QueryStream, TeamQuery)."""

    columns: list[str]

    def __iter__(self) -> Iterator[tuple[Any, ...]]: ...


def _stream_json(stream: Rows) -> None:
    """The documented shape (an indented list of objects), written row by row."""
    out = sys.stdout.buffer
    out.write(b"[")
    separator = b"\n"
    for row in stream:
        item = json_bytes(dict(zip(stream.columns, row, strict=True)), orjson.OPT_INDENT_2)
        # JSON strings hold no raw newline, so every line of the item can be indented.
        out.write(separator + b"\n".join(b"  " + line for line in item.split(b"\n")))
        separator = b",\n"
    out.write(b"]\n" if separator == b"\n" else b"\n]\n")
    out.flush()


def _print_rows(stream: Rows, limit: int) -> None:
    iterator = iter(stream)
    rows = list(islice(iterator, limit))
    more = sum(1 for _row in iterator)
    if not stream.columns:
        echo_wrapped("(no result)")
        return
    print_table(rows, headers=stream.columns, flexible=_widest(rows, stream.columns))
    shown = f"({len(rows):,} row{'' if len(rows) == 1 else 's'}"
    echo_wrapped(
        shown + (f"; {more:,} more rows not shown: raise --limit or use --json)" if more else ")")
    )


def _widest(rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> int:
    """The column with the longest values gives way when the table is too wide."""
    lengths = [max((len(str(row[i])) for row in rows), default=0) for i in range(len(columns))]
    return max(range(len(columns)), key=lengths.__getitem__)
