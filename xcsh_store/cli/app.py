"""The click group, global options, error handling and the output helpers every verb shares."""

from __future__ import annotations

import base64
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import click
import orjson

from xcsh_store import __version__
from xcsh_store.cli.render import fit_table, one_line
from xcsh_store.cli.safe import visible, visible_line, visible_text
from xcsh_store.errors import XcshStoreError
from xcsh_store.index import SessionIndex, SQLiteError
from xcsh_store.paths import AGENT_DIR_ENV, get_agent_dir

# The team index the read verbs read when it is set (--db).
TEAM_DB_ENV = "XCSH_STORE_DB"

COMPLETION_HELP = """\b
Shell completion:
  bash  eval "$(_XCSH_STORE_COMPLETE=bash_source xcsh-store)"   (in ~/.bashrc)
  zsh   eval "$(_XCSH_STORE_COMPLETE=zsh_source xcsh-store)"    (in ~/.zshrc)
  fish  _XCSH_STORE_COMPLETE=fish_source xcsh-store | source    (in config.fish)"""


def color_enabled(mode: str, is_terminal: bool, environ: dict[str, str] | os._Environ) -> bool:
    """``--color``: ``always``/``never`` win; ``auto`` colours a terminal unless NO_COLOR is set.

    Following no-color.org, an explicit ``--color always`` overrides NO_COLOR.
    """
    if mode == "always":
        return True
    if mode == "never":
        return False
    return is_terminal and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


@dataclass
class Settings:
    """What the global options decided, handed to every verb through the click context."""

    agent_dir: str
    color: bool = False
    # --db: the team index (postgresql://…) the read verbs read instead of index.db.
    db: str | None = None

    def style(self, text: str, **styles: Any) -> str:
        return click.style(text, **styles) if self.color else text


# The module that defines each verb, imported when the verb is asked for: `xcsh-store ls`
# imports the listing and none of sync, gc, search, usage or the demo.
VERB_MODULES = {
    "cat": "sessions",
    "demo": "demo",
    "doctor": "maintenance",
    "export": "team",
    "gc": "maintenance",
    "history": "prompts",
    "ls": "listing",
    "mcp": "live",
    "migrate": "maintenance",
    "push": "team",
    "secrets": "redaction",
    "search": "sessions",
    "serve": "live",
    "show": "sessions",
    "sql": "sql",
    "sync": "maintenance",
    "usage": "usage",
    "verify": "maintenance",
    "watch": "live",
}


class StoreGroup(click.Group):
    """A group whose verbs report library and OS errors as one line with exit code 1, and
    whose verbs are imported when they are first asked for (VERB_MODULES)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *VERB_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in VERB_MODULES:
            importlib.import_module(f"xcsh_store.cli.{VERB_MODULES[cmd_name]}")
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # `xcsh-store ls | head`: the reader left; that is not an error worth a message.
            _silence_stdout()
            ctx.exit(0)
        except click.ClickException as error:
            # Verbs put paths and ids from the user's files into their messages.
            error.message = visible(error.message)
            raise
        except (XcshStoreError, OSError, SQLiteError) as error:
            raise click.ClickException(error_line(error)) from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """With ``--json`` on the command line, errors (usage errors too) are JSON on stderr:
        ``{"error": {"type", "message"}}``, with the usual exit codes (1, usage errors 2)."""
        arguments = list(sys.argv[1:] if args is None else args)
        if not (standalone_mode and wants_json(arguments)):
            return super().main(arguments, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(arguments, prog_name, complete_var, False, **extra)
        except click.ClickException as error:
            emit_error_json(error_json(error))
            sys.exit(error.exit_code)
        except click.Abort:
            emit_error_json({"error": {"type": "Aborted", "message": "interrupted"}})
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def wants_json(arguments: Sequence[str]) -> bool:
    """Whether ``--json`` is among the options (before a ``--`` that ends them)."""
    options = arguments[: arguments.index("--")] if "--" in arguments else arguments
    return "--json" in options


def error_json(error: click.ClickException) -> dict[str, Any]:
    """``{"error": {"type", "message"}}``. The type is ``UsageError`` (exit 2), the class name
    of the library or OS error that stopped the verb (``SessionNotFoundError``,
    ``FileNotFoundError``; ``SQLiteError`` for SQLite itself), or ``Error`` for a failure the
    verb reports itself. An ambiguous id adds its ``candidates``."""
    cause = error.__context__ if error.__suppress_context__ else None
    if isinstance(error, click.UsageError):
        kind = "UsageError"
    elif isinstance(cause, SQLiteError) and not isinstance(cause, XcshStoreError):
        kind = "SQLiteError"
    elif isinstance(cause, (XcshStoreError, OSError, SQLiteError)):
        kind = type(cause).__name__
    else:
        kind = "Error"
    body: dict[str, Any] = {"type": kind, "message": error.format_message()}
    candidates = getattr(cause, "candidates", None)
    if isinstance(candidates, list):
        body["candidates"] = candidates
    return {"error": body}


def emit_error_json(error: dict[str, Any]) -> None:
    """One line of JSON on stderr; stdout keeps only the data a verb printed before."""
    sys.stderr.buffer.write(orjson.dumps(error) + b"\n")
    sys.stderr.flush()


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def error_line(error: BaseException) -> str:
    text = str(error) or error.__class__.__name__
    if isinstance(error, SQLiteError) and not isinstance(error, XcshStoreError):
        text = f"SQLite: {text}"
    return visible(" ".join(text.split()))


@click.group(
    cls=StoreGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=COMPLETION_HELP,
)
@click.option(
    "--agent-dir",
    type=click.Path(file_okay=False),
    help=f"Agent folder to work on (default: ${AGENT_DIR_ENV}, else ~/.xcsh/agent).",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the output; auto colours a terminal unless NO_COLOR is set.",
)
@click.option(
    "--db",
    envvar=TEAM_DB_ENV,
    metavar="URL",
    help=f"Read a team index (postgresql://…, env ${TEAM_DB_ENV}) instead of this machine's"
    " index: ls, search, show, usage, history and sql.",
)
@click.version_option(__version__, prog_name="xcsh-store")
@click.pass_context
def cli(ctx: click.Context, agent_dir: str | None, color: str, db: str | None) -> None:
    """Store coding-agent sessions and search them through a SQLite index.

    The JSONL session files stay the source of truth; index.db is a mirror that `sync` keeps up
    to date and you can always delete. Global options go before the verb:

    \b
      xcsh-store demo                      build a sample agent dir and take the tour
      xcsh-store sync                      index ~/.xcsh/agent
      xcsh-store --agent-dir DIR ls --json
    """
    is_terminal = sys.stdout.isatty()
    ctx.obj = Settings(
        agent_dir=os.path.abspath(os.path.expanduser(agent_dir)) if agent_dir else get_agent_dir(),
        color=color_enabled(color, is_terminal, os.environ),
        db=db or None,
    )
    ctx.color = ctx.obj.color


pass_settings = click.make_pass_decorator(Settings)

json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON (the shape is documented in the README); errors too, on stderr.",
)


def json_default(value: Any) -> Any:
    """What orjson cannot encode by itself: bytes as sqlite-utils writes them, else ``str``."""
    if isinstance(value, bytes):
        # The sqlite-utils convention for binary values.
        return {"$base64": True, "encoded": base64.b64encode(value).decode("ascii")}
    return str(value)


def emit_json(data: Any) -> None:
    """Machine output: indented JSON on stdout, keys as documented per verb."""
    stream = sys.stdout.buffer
    stream.write(
        orjson.dumps(
            data,
            option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
            default=json_default,
        )
    )
    stream.write(b"\n")
    stream.flush()


def print_table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[str],
    *,
    flexible: int | Sequence[int] = (),
    right: Sequence[int] = (),
    styles: Callable[[int, int, str], str] | None = None,
    keep_end: Sequence[int] = (),
) -> None:
    """An aligned table cut to the terminal (the ``flexible`` columns give way, widest first).

    Every cell passes through the sanitiser before it is cut and styled.
    """
    cells = ([visible(one_line(value)) for value in row] for row in rows)
    click.echo(
        fit_table(cells, headers, flexible=flexible, right=right, styles=styles, keep_end=keep_end)
    )


def echo(text: str = "", err: bool = False) -> None:
    """One line for people, through the sanitiser: the verb's own colours are all that stays."""
    context = click.get_current_context(silent=True)
    click.echo(visible_line(text, bool(context and context.color)), err=err)


def echo_text(text: str, newline: bool = True) -> None:
    """Multi-line content (an artifact) through the sanitiser, keeping its lines and tabs."""
    click.echo(visible_text(text), nl=newline)


def open_index(settings: Settings, read_only: bool = True, team: bool = False) -> SessionIndex:
    """The agent dir's index; read-only for the verbs that only look (they never block a sync).

    With ``--db``, the verbs that can (``team``) get the team index instead, which answers the
    same questions with the same kinds of records (xcsh_store.team.TeamIndex), each with its
    host; the others refuse ``--db``.
    """
    if settings.db is None:
        return SessionIndex.open(settings.agent_dir, read_only=read_only)
    if not team:
        verb = click.get_current_context().info_name
        raise click.UsageError(
            f"--db is for ls, search, show, usage, history and sql; {verb} works on index.db"
        )
    require_extra("--db", "team", "psycopg")
    from xcsh_store.team import TeamIndex

    return TeamIndex.open(settings.db)  # type: ignore[return-value]


def require_extra(verb: str, extra: str, *modules: str) -> None:
    """Import ``modules``; the first missing one ends the verb with the one line that says how
    to get it (exit 2)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            click.echo(
                f"xcsh-store {verb} needs {module}: pip install 'xcsh-store[{extra}]'", err=True
            )
            sys.exit(2)


def team_only(settings: Settings, given: bool, option: str) -> None:
    """An option only the team index answers (``--host``, ``--by host``)."""
    if given and settings.db is None:
        raise click.UsageError(f"{option} needs a team index: --db postgresql://…")


def team_only_filter(settings: Settings, host: str | None) -> dict[str, str]:
    """The ``host`` keyword of a team index's listing or search, when ``--host`` was given."""
    team_only(settings, host is not None, "--host")
    return {} if host is None else {"host": host}
