"""The click group, global options, error handling and the output helpers every verb shares."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import click
from click.core import ParameterSource

from xcsh_store import __version__
from xcsh_store.cli.output.safe import Shown, shown, styled, visible, visible_text
from xcsh_store.errors import AmbiguousLookupError, IndexDatabaseError, XcshStoreError

# The rest is imported where it is used, not here: `xcsh-store --version` and `--help` import
# this module and click and little else (tests/test_start_up.py counts the modules), and each
# verb pays only for what it uses (the index, orjson, the table layout).
if TYPE_CHECKING:
    from xcsh_store.cli.output.table import Cut, Header
    from xcsh_store.index import IndexReader, SessionIndex
    from xcsh_store.team import TeamIndex

# The variable that names the agent dir (xcsh_store.paths.AGENT_DIR_ENV, which
# test_start_up.py holds equal): written here so that the option's help needs no import.
AGENT_DIR_ENV = "XCSH_AGENT_DIR"

# The team index the read verbs read when it is set (--db).
TEAM_DB_ENV = "XCSH_STORE_DB"
# Set (to 1), the read verbs answer from index.db as it is, as with --no-sync.
NO_SYNC_ENV = "XCSH_STORE_NO_SYNC"

# The variable click's completion protocol reads: the shells' scripts set it.
COMPLETION_VARIABLE = "_XCSH_STORE_COMPLETE"
COMPLETION_HELP = """\b
Shell completion (`xcsh-store completion --help`):
  bash  eval "$(xcsh-store completion bash)"   (in ~/.bashrc)
  zsh   eval "$(xcsh-store completion zsh)"    (in ~/.zshrc)
  fish  xcsh-store completion fish | source    (in ~/.config/fish/config.fish)"""


def color_enabled(mode: str, is_terminal: bool, environ: dict[str, str] | os._Environ) -> bool:
    """``--color``: ``always``/``never`` win; ``auto`` colours a terminal unless NO_COLOR is set.

    Following no-color.org, an explicit ``--color always`` overrides NO_COLOR.
    """
    if mode == "always":
        return True
    if mode == "never":
        return False
    return is_terminal and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


class Settings:
    """What the global options decided, handed to every verb through the click context.

    (A plain class: a dataclass would import inspect, ast and tokenize into every start,
    ``--version`` included: a sixth of its modules.)"""

    __slots__ = ("agent_dir", "color", "db", "json", "sync")

    def __init__(
        self,
        agent_dir: str,
        color: bool = False,
        db: str | None = None,
        sync: bool = True,
        json: bool = False,
    ) -> None:
        self.agent_dir = agent_dir
        self.color = color
        # --db: the team index (postgresql://…) the read verbs read instead of index.db.
        self.db = db
        # Whether the read verbs bring index.db up to date before they answer (--no-sync).
        self.sync = sync
        # --json before the verb: as --json after it (the verbs that print JSON).
        self.json = json

    def style(self, text: str, **styles: Any) -> Shown:
        """``text`` escaped, then coloured when colour is on (safe.styled)."""
        return styled(text, self.color, **styles)


# The module that defines each verb, imported when the verb is asked for: `xcsh-store ls`
# imports the listing and none of sync, gc, search, usage or the demo.
VERB_MODULES = {
    "budget": "limits",
    "cat": "sessions",
    "completion": "completion",
    "demo": "demo",
    "doctor": "maintenance",
    "export": "team",
    "forget": "maintenance",
    "gc": "maintenance",
    "history": "prompts",
    "ls": "listing",
    "mcp": "live",
    "pick": "pick",
    "migrate": "maintenance",
    "prices": "prices",
    "push": "team",
    "quota": "limits",
    "restore": "maintenance",
    "resume": "sessions",
    "secrets": "redaction",
    "search": "sessions",
    "serve": "live",
    "show": "sessions",
    "sql": "sql",
    "statusline": "limits",
    "sync": "maintenance",
    "team": "team",
    "usage": "usage",
    "verify": "maintenance",
    "watch": "live",
}


class SuggestingGroup(click.Group):
    """A group that answers a mistyped verb with the verbs it may have meant, as click does
    for options (click's own suggestion, where it makes one, knows only the verbs imported)."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            typed = args[0] if args else ""
            if typed.startswith("-") or self.get_command(ctx, typed) is not None:
                raise  # an option, or an error of the verb itself
            import difflib  # only for a mistyped verb: every start would pay for it

            close = difflib.get_close_matches(typed, self.list_commands(ctx), n=3, cutoff=0.6)
            hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise click.UsageError(f"No such command {typed!r}.{hint}", ctx) from None


class StoreGroup(SuggestingGroup):
    """A group whose verbs report library and OS errors as one line with exit code 1, and
    whose verbs are imported when they are first asked for (VERB_MODULES)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[ARGUMENTS_KEY] = list(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *VERB_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in VERB_MODULES:
            importlib.import_module(f"xcsh_store.cli.verbs.{VERB_MODULES[cmd_name]}")
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        from xcsh_store.index import SQLiteError

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # `xcsh-store ls | head`: the reader left; that is not an error worth a message.
            _silence_stdout()
            ctx.exit(0)
        except click.ClickException as error:
            # Verbs put paths and ids from the user's files into their messages.
            # click declares message Final, yet prints what it holds then.
            error.message = visible(error.message)  # type: ignore[misc]
            raise
        except AmbiguousLookupError as error:
            raise click.ClickException(ambiguous_lines(error)) from None
        except (XcshStoreError, OSError, SQLiteError) as error:
            raise click.ClickException(error_line(error)) from None
        except UnicodeError as error:
            raise click.ClickException(not_utf8(ctx.meta.get(ARGUMENTS_KEY, []), error)) from None

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


# Where the group keeps its command line (ctx.meta) for the errors that name an argument.
ARGUMENTS_KEY = "xcsh_store.arguments"


def not_utf8(arguments: Sequence[str], error: UnicodeError) -> str:
    """The one line for text that is not UTF-8 where only UTF-8 can go (a SQL query, a file
    name SQLite or Parquet is to open): the argument that holds it, when one does.

    Python hands over bytes of the command line that are not UTF-8 as lone surrogates;
    such an argument works as a path of this system, but never as text."""
    from xcsh_store.js import well_formed

    for argument in arguments:
        if well_formed(argument) != argument:
            return f"the argument {visible(argument)} is not valid UTF-8 text: give it in UTF-8"
    # A UnicodeError of the base class (from the idna codec, say) has no reason.
    reason = error.reason if isinstance(error, UnicodeDecodeError | UnicodeEncodeError) else error
    return f"text that is not valid UTF-8 cannot be used here ({visible(str(reason))})"


def wants_json(arguments: Sequence[str]) -> bool:
    """Whether ``--json`` is among the options (before a ``--`` that ends them)."""
    options = arguments[: arguments.index("--")] if "--" in arguments else arguments
    return "--json" in options


def error_json(error: click.ClickException) -> dict[str, Any]:
    """``{"error": {"type", "message"}}``. The type is ``UsageError`` (exit 2), the class name
    of the library or OS error that stopped the verb (``SessionNotFoundError``,
    ``FileNotFoundError``; ``SQLiteError`` for SQLite itself), or ``Error`` for a failure the
    verb reports itself. An ambiguous id adds its ``candidates``."""
    from xcsh_store.index import SQLiteError

    cause = error.__context__ if error.__suppress_context__ else None
    if isinstance(error, click.UsageError):
        kind = "UsageError"
    elif isinstance(cause, SQLiteError) and not isinstance(cause, XcshStoreError):
        kind = "SQLiteError"
    elif isinstance(cause, (XcshStoreError, OSError, SQLiteError)):
        kind = type(cause).__name__
    else:
        kind = "Error"
    message = error.format_message()
    if isinstance(cause, AmbiguousLookupError):  # one line in JSON; a line per match for people
        message = error_line(cause)
    body: dict[str, Any] = {"type": kind, "message": message}
    candidates = getattr(cause, "candidates", None)
    if isinstance(candidates, list):
        body["candidates"] = candidates
    return {"error": body}


def emit_error_json(error: dict[str, Any]) -> None:
    """One line of JSON on stderr; stdout keeps only the data a verb printed before."""
    sys.stderr.buffer.write(json_bytes(error) + b"\n")
    sys.stderr.flush()


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def ambiguous_lines(error: AmbiguousLookupError) -> str:
    """An ambiguous prefix's message as a person reads it: what matched, then each match on a
    line of its own (a path home-relative), each cut to the terminal."""
    from xcsh_store.cli.output.render import cut_middle, home_relative, terminal_width, wrap

    if not error.lines:
        return error_line(error)
    head, *matches = error.lines
    width = terminal_width()
    # Wrapped as click shows it, "Error: " before the first line.
    first, *rest = wrap("Error: " + " ".join(head.split()), width)
    lines = [visible(first.removeprefix("Error: ")), *(visible(line) for line in rest)]
    for match in matches:
        text = "  " + visible(home_relative(match) if os.path.isabs(match) else match)
        # (Two files of one id differ in their folders, at the start: keep both ends.)
        lines.append(text if width is None else cut_middle(text, width))
    return "\n".join(lines)


def error_line(error: BaseException) -> str:
    from xcsh_store.index import SQLiteError

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
    help=f"Agent folder to work on (default: ${AGENT_DIR_ENV}, else ~/.xcsh/agent once xcsh was"
    " used here, else ~/.local/share/xcsh-store: $XDG_DATA_HOME/xcsh-store).",
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
    " index: ls, search, show, usage, history, quota, budget and sql.",
)
@click.option(
    "--no-sync",
    is_flag=True,
    envvar=NO_SYNC_ENV,
    help=f"Answer from index.db as it is (or ${NO_SYNC_ENV}=1): ls, show, cat, search, usage,"
    " history, serve and mcp sync it first otherwise, unless a `watch` keeps it current.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON, as --json after the verb does (for the verbs that have it).",
)
@click.version_option(__version__, prog_name="xcsh-store")
@click.pass_context
def cli(
    ctx: click.Context,
    agent_dir: str | None,
    color: str,
    db: str | None,
    no_sync: bool,
    as_json: bool,
) -> None:
    """Store coding-agent sessions and search them through a SQLite index.

    The JSONL session files stay the source of truth; index.db is a mirror that `sync` keeps up
    to date and you can always delete. Global options go before the verb:

    \b
      xcsh-store demo                  build a sample agent dir and take the tour
      xcsh-store sync                  index this machine's sessions
      xcsh-store --agent-dir DIR ls --json
    """
    from xcsh_store.homes import get_store_dir
    from xcsh_store.js import well_formed

    is_terminal = sys.stdout.isatty()
    folder = os.path.abspath(os.path.expanduser(agent_dir)) if agent_dir else get_store_dir()
    if well_formed(folder) != folder:
        # SQLite takes file names as UTF-8: index.db could be neither made nor opened there.
        raise click.BadParameter(
            f"{visible(folder)} is not valid UTF-8, which SQLite needs of a folder to keep"
            " index.db in",
            param_hint="--agent-dir" if agent_dir else f"${AGENT_DIR_ENV}",
        )
    ctx.obj = Settings(
        agent_dir=folder,
        color=color_enabled(color, is_terminal, os.environ),
        db=db or None,
        sync=not no_sync,
        json=as_json,
    )
    ctx.color = ctx.obj.color


pass_settings = click.make_pass_decorator(Settings)


def _json_asked(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    """--json after the verb, or before it (the global option)."""
    settings = ctx.find_object(Settings)
    return value or (settings is not None and settings.json)


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    callback=_json_asked,
    help="Print JSON (the shape is documented in docs/json.md); errors too, on stderr.",
)


def json_default(value: Any) -> Any:
    """What orjson cannot encode by itself: bytes as sqlite-utils writes them, else ``str``."""
    if isinstance(value, bytes):
        # The sqlite-utils convention for binary values.
        import base64

        return {"$base64": True, "encoded": base64.b64encode(value).decode("ascii")}
    return str(value)


def json_bytes(data: Any, option: int = 0) -> bytes:
    """``data`` as JSON. A string that is not valid UTF-8 (a file name of other bytes, an
    argument) cannot be written as JSON: its lone surrogates become U+FFFD, as JavaScript's
    ``toWellFormed`` does, instead of ending the verb."""
    import orjson

    try:
        return orjson.dumps(data, option=option, default=json_default)
    except orjson.JSONEncodeError:
        return orjson.dumps(_well_formed_strings(data), option=option, default=json_default)


def _well_formed_strings(data: Any) -> Any:
    from xcsh_store.js import well_formed

    if isinstance(data, str):
        return well_formed(data)
    if isinstance(data, dict):
        return {
            _well_formed_strings(key): _well_formed_strings(value) for key, value in data.items()
        }
    if isinstance(data, (list, tuple)):
        return [_well_formed_strings(value) for value in data]
    return data


def emit_json(data: Any) -> None:
    """Machine output: indented JSON on stdout, keys as documented per verb."""
    import orjson

    stream = sys.stdout.buffer
    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
    stream.write(json_bytes(data, option))
    stream.write(b"\n")
    stream.flush()


def print_table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[Header],
    *,
    flexible: int | Sequence[int] = (),
    right: Sequence[int] = (),
    styles: Callable[[int, int, str], str] | None = None,
    cuts: Mapping[int, Cut] | None = None,
    optional: Sequence[int] = (),
    whole: Sequence[int] = (),
    main_width: int | None = None,
) -> None:
    """An aligned table cut to the terminal (table.fit_table: the first ``flexible`` column
    keeps its room longest, the ``optional`` ones go first, the ``whole`` ones are never cut;
    ``main_width``: what the main column keeps before the others give way, table.MAIN_WIDTH
    unless told).

    Every cell passes through the sanitiser before it is cut and styled.
    """
    from xcsh_store.cli.output.table import MAIN_WIDTH, fit_table

    echo(
        fit_table(
            rows, headers, flexible=flexible, right=right, styles=styles, cuts=cuts,
            optional=optional, whole=whole,
            main_width=MAIN_WIDTH if main_width is None else main_width,
        )
    )  # fmt: skip


def echo_wrapped(text: str = "", err: bool = False) -> None:
    """A line of prose for people, wrapped at the terminal's width (render.wrap); the lines
    after the first are indented two more spaces than it is."""
    from xcsh_store.cli.output.render import terminal_width, wrap

    indent = " " * (len(text) - len(text.lstrip(" ")) + 2)
    for line in wrap(text, terminal_width(), indent):
        echo(line, err=err)


def echo(text: str = "", err: bool = False) -> None:
    """One line for people: :class:`Shown` text as it is (the verb's own colours on escaped
    content), any other text escaped whole."""
    # A plain str again: click adds the newline with `+`, which Shown would escape.
    click.echo(str(shown(text)), err=err)


def echo_text(text: str, newline: bool = True) -> None:
    """Multi-line content (an artifact) through the sanitiser, keeping its lines and tabs."""
    click.echo(visible_text(text), nl=newline)


@overload
def open_index(
    settings: Settings,
    read_only: bool = True,
    team: Literal[False] = False,
    fresh: bool = False,
    entries: bool = True,
) -> SessionIndex: ...


@overload
def open_index(
    settings: Settings,
    read_only: bool = True,
    *,
    team: Literal[True],
    fresh: bool = False,
    entries: bool = True,
) -> IndexReader: ...


def open_index(
    settings: Settings,
    read_only: bool = True,
    team: bool = False,
    fresh: bool = False,
    entries: bool = True,
) -> IndexReader:
    """The agent dir's index; read-only for the verbs that only look (they never block a sync).
    ``fresh``: brought up to date first (fresh_index), unless --no-sync; ``entries`` false:
    for a read of usage alone, whose first sync reads only the lines with usage.

    With ``--db``, the verbs that can (``team``) get the team index instead, which answers the
    same questions with the same kinds of records (xcsh_store.team.TeamIndex), each with its
    host; the others refuse ``--db``.
    """
    from xcsh_store.index import SessionIndex
    from xcsh_store.paths import get_index_db_path

    if settings.db is None:
        fresh = fresh and settings.sync
        if read_only and not os.path.exists(get_index_db_path(settings.agent_dir)):
            from xcsh_store.cli.places import no_index_yet

            if not (fresh and first_index(settings)):
                raise IndexDatabaseError(no_index_yet(settings.agent_dir))
        if fresh:
            return fresh_index(settings, entries)
        return SessionIndex.open(settings.agent_dir, read_only=read_only)
    if not team:
        verb = click.get_current_context().info_name
        raise click.UsageError(
            "--db is for ls, search, show, usage, history, quota, budget and sql;"
            f" {verb} works on index.db"
        )
    return open_team_index(settings.db)


def open_team_index(url: str) -> TeamIndex:
    """The team index at ``url`` (``--db``): for what only it answers (``sql`` on PostgreSQL);
    the read verbs get it from open_index, as an IndexReader."""
    require_extra("--db", "team", "psycopg")
    from xcsh_store.team import TeamIndex

    warn_of_visible_password(url, "db", click.get_current_context().find_root())
    return TeamIndex.open(url)


def first_index(settings: Settings) -> bool:
    """Whether a read verb may make the first index of its agent dir, as `sync` would: an
    agent dir, or the data dir with sessions found on this machine (never a mistyped
    --agent-dir). Says so on stderr: the first sync reads every session (usage first, the
    search text after: docs/commands.md)."""
    from xcsh_store.cli.places import found_session_folders
    from xcsh_store.homes import get_data_store_dir
    from xcsh_store.paths import get_archive_dir, is_agent_dir

    folder = settings.agent_dir
    found = found_session_folders(folder)
    # (A folder that holds the store's archive: its index is made again from the archive.)
    holds_archive = os.path.isdir(get_archive_dir(folder))
    if not (is_agent_dir(folder) or holds_archive or (folder == get_data_store_dir() and found)):
        return False
    where = f" ({', '.join(found)})" if found else ""
    echo(f"Note: no index yet: indexing the sessions of this machine first{where}", err=True)
    return True


def fresh_index(settings: Settings, entries: bool = True) -> SessionIndex:
    """The agent dir's index, synced before a read verb answers, unless a watch keeps it
    current. It never fails for want of a sync: while another sync runs, or where index.db
    cannot be written, the verb answers from what the index holds and says so in one line on
    stderr."""
    from xcsh_store.index import BUSY, SessionIndex, SQLiteError, is_watched

    try:
        index = SessionIndex.open(settings.agent_dir)
    except (IndexDatabaseError, OSError, SQLiteError) as error:
        echo(f"Note: {error_line(error)}; answering from index.db as it is", err=True)
        return SessionIndex.open(settings.agent_dir, read_only=True)
    try:
        upgrade = index.pending_upgrade()
        if upgrade is not None and not is_watched(index.db_path):
            echo(f"Note: upgrading index.db first ({upgrade}): every session file is read again",
                 err=True)  # fmt: skip
        freshness = index.refresh(entries=entries)
    except (XcshStoreError, OSError, SQLiteError) as error:
        echo(f"Note: index.db was not brought up to date ({error_line(error)})", err=True)
        return index
    if freshness.state == BUSY:
        echo(
            "Note: another sync of index.db is under way; answering from what it holds now",
            err=True,
        )
    if freshness.report is not None and freshness.report.archive_error:
        echo(f"Note: {freshness.report.archive_error}", err=True)
    return index


def warn_of_visible_password(
    conninfo: str, parameter: str, context: click.Context | None = None
) -> None:
    """A warning on stderr when a connection string given on the command line (``parameter``
    of ``context``, default the verb's) holds a password: every user of the machine sees the
    command line in `ps`."""
    from xcsh_store.team import Target

    context = context or click.get_current_context()
    if context.get_parameter_source(parameter) is not ParameterSource.COMMANDLINE:
        return
    if Target.parse(conninfo).has_password:
        echo(
            "Warning: a password on the command line is visible to every user of this machine"
            " (ps) and stays in your shell history: put it in ~/.pgpass or PGPASSWORD, or the"
            f" URL in ${TEAM_DB_ENV} (docs/security.md)",
            err=True,
        )


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
