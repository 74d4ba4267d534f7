"""``xcsh-store sql``: a read-only SQL query on index.db, printed as a table or JSON rows."""

from __future__ import annotations

import click

from xcsh_store.cli.app import (
    Settings,
    cli,
    echo,
    emit_json,
    json_option,
    pass_settings,
    print_table,
)
from xcsh_store.index.query import QueryResult, run_read_only_query
from xcsh_store.paths import get_index_db_path


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
@json_option
@pass_settings
def sql_command(
    settings: Settings, query: str, parameters: tuple[tuple[str, str], ...], as_json: bool
) -> None:
    """Run a read-only SQL QUERY on index.db (opened with SQLite's read-only flag).

    The tables and views are documented in the README ("Index schema"). Writing is refused.
    JSON: a list of objects, one per row, keyed by column name.

    \b
    Examples:
      xcsh-store sql "SELECT model, sum(cost) FROM messages GROUP BY model"
      xcsh-store sql "SELECT * FROM usage_by_day ORDER BY day DESC LIMIT 7" --json
      xcsh-store sql "SELECT path FROM sessions WHERE cwd = :cwd" -p cwd ~/src/app
    """
    result = run_read_only_query(get_index_db_path(settings.agent_dir), query, dict(parameters))
    if as_json:
        emit_json([dict(zip(result.columns, row, strict=True)) for row in result.rows])
        return
    if not result.columns:
        echo("(no result)")
        return
    print_table(result.rows, headers=result.columns, flexible=_widest(result))
    echo(f"({len(result.rows):,} row{'' if len(result.rows) == 1 else 's'})")


def _widest(result: QueryResult) -> int:
    """The column with the longest values gives way when the table is too wide."""
    lengths = [
        max((len(str(row[i])) for row in result.rows), default=0)
        for i in range(len(result.columns))
    ]
    return max(range(len(result.columns)), key=lengths.__getitem__)
