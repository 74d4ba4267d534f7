"""The live verbs: ``watch`` (index.db kept current from file events), ``serve`` (the local web
app) and ``mcp`` (the Model Context Protocol server for agents). Each imports its extra's
packages only when it runs, and says in one line how to install them when they are missing."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import click

from xcsh_store.cli.app import (
    Settings,
    cli,
    echo_wrapped,
    json_bytes,
    json_option,
    open_index,
    pass_settings,
    require_extra,
)
from xcsh_store.cli.output.render import home_relative, local_time
from xcsh_store.cli.verbs.maintenance import require_agent_dir
from xcsh_store.cli.verbs.redaction import no_redact_flag, no_redact_option, redaction
from xcsh_store.index import REFRESH_SECONDS

if TYPE_CHECKING:
    from xcsh_store.watch import AppliedChange


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop``: the work under way ends cleanly, then the verb."""
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    for number in previous:
        signal.signal(number, lambda _number, _frame: stop.set())
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def sync_every(settings: Settings) -> float | None:
    """How often, at most, serve and mcp sync before they answer (None: --no-sync)."""
    return REFRESH_SECONDS if settings.sync else None


# --------------------------------------------------------------------------------------------
# watch


def describe_change(change: AppliedChange) -> str:
    """One line for people: the time, what changed, where."""
    when = local_time(change.at, seconds=True)
    where = home_relative(change.path) if change.path else ""
    if change.change == "synced":
        added = f"{change.entries} entries added"
        return f"{when}  synced {change.files} files, {added} ({change.reason})"
    if change.path is None:
        return f"{when}  {change.change} {change.files} files"
    entries = "" if change.entries is None else f" ({change.entries} entries)"
    return f"{when}  {change.change:<8} {where}{entries}"


def emit_line(data: dict[str, object]) -> None:
    """One line of JSON on stdout, at once (a reader follows the stream)."""
    sys.stdout.buffer.write(json_bytes(data) + b"\n")
    sys.stdout.flush()


def change_printer(as_json: bool) -> Callable[[AppliedChange], None]:
    """What prints each change applied: a line of JSON, or a line for people."""
    if as_json:
        return lambda change: emit_line(change.as_json())
    return lambda change: echo_wrapped(describe_change(change))


@cli.command("watch")
@click.option(
    "--debounce",
    type=click.IntRange(min=1, max=60_000),
    default=200,
    show_default=True,
    metavar="MS",
    help="The longest a burst of file events is held before one sync applies it.",
)
@json_option
@pass_settings
def watch_command(settings: Settings, debounce: int, as_json: bool) -> None:
    """Keep index.db current from file-system events until stopped (Ctrl-C, SIGTERM).

    One sync first, then each burst of events is one incremental sync that reads only the
    appended bytes. Renamed and moved files, deleted and re-created roots, a deleted index.db
    and lost events all end in a sync that sees the files as they are. With --json, one line
    of JSON per change applied.

    \b
    Examples:
      xcsh-store watch
      xcsh-store watch --json | jq -c 'select(.change == "indexed")'
    """
    require_extra("watch", "web", "watchfiles")
    from xcsh_store.watch import IndexWatcher, WatchOptions

    require_agent_dir(settings)

    stop = threading.Event()
    watcher = IndexWatcher(
        settings.agent_dir, change_printer(as_json), WatchOptions(debounce_ms=debounce), stop
    )
    with stop_on_signals(stop):
        watcher.run()


# --------------------------------------------------------------------------------------------
# mcp


@cli.command("mcp")
@no_redact_option
@pass_settings
def mcp_command(settings: Settings, no_redact: bool) -> None:
    """Serve the index to agents over stdio (Model Context Protocol), read-only.

    Tools: list_sessions, search_sessions, get_session (active branch or tree, paged),
    get_entry (one entry whole, paged), get_context, read_url (artifact:// and agent://),
    recall_prompts, usage; compact JSON of bounded size. Add it to an agent's MCP config as
    the command `xcsh-store mcp` (see docs/live.md). Each call syncs the index first (at most
    every 2 seconds; not while a `watch` keeps it current; never with --no-sync).
    Secrets in the answers (which reach the agent's model provider) are replaced by
    [REDACTED:<kind>].
    """
    require_extra("mcp", "mcp", "mcp")
    redact = redaction("mcp", no_redact)
    from xcsh_store.agent_tools import serve_stdio

    # The first index is made now (as any read verb makes it), not on the first call.
    open_index(settings, fresh=True).close()
    serve_stdio(settings.agent_dir, redact, sync_every(settings))


# --------------------------------------------------------------------------------------------
# serve


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--token",
    envvar="XCSH_STORE_TOKEN",
    help="Every request must carry it (?token= once, then a cookie; or Authorization: Bearer);"
    " needed for any address but loopback. Given here it shows in `ps`: prefer the"
    " XCSH_STORE_TOKEN variable or --token-file.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    help="Read the token from this file (its first line); it must be private (chmod 600).",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests that name this host (repeatable); loopback's names and --host"
    " are always answered, any other Host header is refused (DNS rebinding).",
)
@click.option("--watch", "live", is_flag=True, help="Also keep index.db current (as `watch`).")
@click.option(
    "--redact",
    "always_redact",
    is_flag=True,
    help="Redact on loopback too.",
)
@no_redact_flag("Redact nothing, beyond loopback too; warns every time.")
@json_option
@pass_settings
def serve_command(
    settings: Settings,
    host: str,
    port: int,
    token: str | None,
    token_file: str | None,
    allowed_hosts: tuple[str, ...],
    live: bool,
    always_redact: bool,
    no_redact: bool,
    as_json: bool,
) -> None:
    """A read-only session browser in the web browser, on http://127.0.0.1:8765/.

    Sessions list, search, each session read as its active branch with the branch points
    marked and the abandoned branches folded, contexts, usage charts. A page syncs the index
    before it reads it (at most every 2 seconds; not while `watch` or --watch keeps it current;
    never with --no-sync); open pages update while `watch` (or --watch) runs. With --json,
    the URL is printed as {"url": ...}, then with --watch each change applied as `watch
    --json` prints it. Secrets are replaced by [REDACTED:<kind>] in every page when the
    server answers an address or an --allow-host name but loopback's; on loopback alone,
    pages show sessions as they are (they are the owner's).

    \b
    Examples:
      xcsh-store serve --watch
      (umask 077; openssl rand -hex 16 > ~/.xcsh-token)
      xcsh-store serve --host 0.0.0.0 --allow-host my-laptop.lan \\
        --token-file ~/.xcsh-token
    """
    require_extra(
        "serve", "web", "starlette", "uvicorn", "jinja2", *(["watchfiles"] if live else [])
    )
    from xcsh_store.web import (
        LOOPBACK_NAMES,
        allowed_host_names,
        beyond_loopback,
        read_token_file,
        serve,
    )

    context = click.get_current_context()
    typed_token = context.get_parameter_source("token") == click.core.ParameterSource.COMMANDLINE
    if token_file is not None:
        if typed_token:
            raise click.UsageError("--token and --token-file: give one")
        token = read_token_file(token_file)
    try:
        hosts = allowed_host_names(host, allowed_hosts)
    except ValueError as error:
        raise click.UsageError(f"--allow-host: {error}") from None
    if host not in LOOPBACK_NAMES and not token:
        raise click.UsageError(
            f"--host {host} needs a token (--token-file, XCSH_STORE_TOKEN or --token):"
            f" without one, anyone who can reach port {port} of this machine could read every"
            " session"
        )
    if always_redact and no_redact:
        raise click.UsageError("--redact and --no-redact ask for opposite things")
    # Pages that may leave this machine (an address or a name but loopback's) lose their
    # secrets.
    wanted = always_redact or beyond_loopback(hosts)
    redact = redaction("serve", no_redact) if wanted or no_redact else False
    if live:
        require_agent_dir(settings)
    else:
        open_index(settings, fresh=True).close()  # the first index made now, as by any reader

    def ready(url: str) -> None:
        # A token typed on the command line is no secret from this terminal; one from the
        # environment or a file stays out of what is printed (and of any log of it).
        if token and typed_token:
            url += "?" + urlencode({"token": token})
        if as_json:
            emit_line({"url": url})
            return
        echo_wrapped(f"Serving {settings.agent_dir} on {url}  (Ctrl-C stops)")
        if token and not typed_token:
            source = "--token-file" if token_file else "XCSH_STORE_TOKEN"
            echo_wrapped(
                f"Open it once with ?token=<the token of {source}>; a cookie keeps it then."
            )

    # uvicorn stops on SIGINT/SIGTERM, then raises the signal again with the handlers it
    # found: these, so that a stop asked for is a clean exit (0), not a death by signal.
    with stop_on_signals(threading.Event()):
        serve(
            settings.agent_dir,
            host,
            port,
            token,
            live,
            change_printer(as_json),
            on_ready=ready,
            allowed_hosts=allowed_hosts,
            redact=redact,
            sync_every=sync_every(settings),
        )
