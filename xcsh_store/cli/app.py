"""The click group, global options and the output helpers every verb shares."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click
import orjson
from tabulate import tabulate

from xcsh_store import __version__
from xcsh_store.errors import XcshStoreError
from xcsh_store.paths import AGENT_DIR_ENV, get_agent_dir


class Settings:
    """What the global options decided, handed to every verb through the click context."""

    def __init__(self, agent_dir: str) -> None:
        self.agent_dir = agent_dir


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--agent-dir",
    type=click.Path(file_okay=False),
    envvar=AGENT_DIR_ENV,
    help=f"Agent folder to work on (default: ${AGENT_DIR_ENV} or ~/.xcsh/agent).",
)
@click.version_option(__version__, prog_name="xcsh-store")
@click.pass_context
def cli(ctx: click.Context, agent_dir: str | None) -> None:
    """Store coding-agent sessions and search them through a SQLite index.

    The JSONL session files stay the source of truth; index.db is a mirror you can delete.

    Shell completion (bash): eval "$(_XCSH_STORE_COMPLETE=bash_source xcsh-store)"
    """
    ctx.obj = Settings(os.path.abspath(agent_dir) if agent_dir else get_agent_dir())


pass_settings = click.make_pass_decorator(Settings)


def user_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """Turn library errors and OS errors into one-line messages with exit code 1."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (XcshStoreError, OSError) as error:
            raise click.ClickException(_one_line(error)) from None

    return wrapper


def _one_line(error: BaseException) -> str:
    text = str(error) or error.__class__.__name__
    return " ".join(text.split("\n"))


def emit_json(data: Any) -> None:
    """Machine output: indented JSON on stdout, keys as documented per verb."""
    sys.stdout.buffer.write(
        orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str)
    )
    sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()


def print_table(rows: Iterable[Sequence[Any]], headers: Sequence[str], max_width: int = 60) -> None:
    """An aligned plain-text table; long cells are cut with an ellipsis."""
    cells = [[_cell(value, max_width) for value in row] for row in rows]
    click.echo(tabulate(cells, headers=list(headers), tablefmt="simple", disable_numparse=True))


def _cell(value: Any, max_width: int) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return text if len(text) <= max_width else text[: max_width - 1] + "…"
