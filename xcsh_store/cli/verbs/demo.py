"""``xcsh-store demo``: write a sample agent dir, index it, and take a tour of the commands."""

from __future__ import annotations

import os
import shlex
import time
from datetime import timedelta

import click
from click.core import ParameterSource

from xcsh_store.cli.app import Settings, cli, echo, echo_wrapped, pass_settings
from xcsh_store.cli.output.render import plural
from xcsh_store.demo.build import DEMO_DAYS, DEMO_NOW, write_demo
from xcsh_store.index import SessionIndex

DEFAULT_DEMO_DIR = "xcsh-store-demo"


def _session_id(path: str) -> str:
    """Session files are named ``<timestamp>_<session id>.jsonl``."""
    return os.path.basename(path)[: -len(".jsonl")].split("_", 1)[1]


@cli.command("demo")
@click.option(
    "--agent-dir",
    "demo_dir",
    type=click.Path(file_okay=False),
    help=f"Where to write the sample (default: ./{DEFAULT_DEMO_DIR}; never $XCSH_AGENT_DIR).",
)
@pass_settings
@click.pass_context
def demo_command(ctx: click.Context, settings: Settings, demo_dir: str | None) -> None:
    """Write a realistic sample agent dir, index it, and show what the tool does with it.

    Four projects over two weeks: branched sessions with summaries and labels, a compaction,
    screenshots stored as blobs, tool output artifacts, subagent outputs, prompt history and
    an old v1 file. The sample is the same on every run (fixed dates and ids).

    It goes to ./xcsh-store-demo or the folder given with --agent-dir (before or after the
    verb), never to $XCSH_AGENT_DIR, which may be a real agent dir. Running it again replaces
    the files an earlier demo wrote there (recorded with their hashes in the folder's
    .xcsh-store-demo); it refuses, deleting nothing, while the folder holds any other file.

    \b
    Examples:
      xcsh-store demo
      xcsh-store demo --agent-dir /tmp/xcsh-demo
    """
    target = demo_dir or _agent_dir_typed(ctx, settings) or DEFAULT_DEMO_DIR
    shown_dir = target if not os.path.isabs(target) else _short(target)
    target = os.path.abspath(os.path.expanduser(target))
    started = time.perf_counter()
    report = write_demo(target)
    assert report.sync is not None
    with SessionIndex.open(target, read_only=True) as index:
        ids = index.unique_id_prefixes(_session_id(path) for path in report.sessions.values())
    seconds = time.perf_counter() - started
    files = [*report.sessions.values(), report.legacy_file]
    projects = {os.path.basename(os.path.dirname(path)) for path in files}
    echo_wrapped(f"Wrote a sample agent dir to {shown_dir} ({seconds:.1f}s in all):")
    echo_wrapped(
        f"  {plural(report.sync.files_seen, 'session')} in {plural(len(projects), 'project')} "
        f"(one an old v1 file), {plural(report.history_prompts, 'prompt')} in history.db, "
        f"{plural(report.sync.entries_added, 'entry', 'entries')} indexed."
    )
    login = ids[_session_id(report.sessions["login"])]
    orders = ids[_session_id(report.sessions["orders"])]
    base = ["xcsh-store", "--agent-dir", shown_dir]
    color = ["--color", "always" if settings.color else "never"]
    first_day = (DEMO_NOW - timedelta(days=DEMO_DAYS - 1)).date().isoformat()
    for arguments in (
        ["ls"],
        ["search", "session cookie"],
        ["show", login, "--tree"],
        ["usage", "--since", first_day, "--chart"],
    ):
        echo_wrapped()
        # Commands are never wrapped: they are there to be copied.
        echo(settings.style("$ " + shlex.join(base + arguments), bold=True))
        cli.main([*base[1:3], *color, *arguments], prog_name="xcsh-store", standalone_mode=False)
    echo_wrapped()
    echo_wrapped(settings.style("Try next:", bold=True))
    for arguments in (
        ["show", login, "--context"],
        ["search", "--role", "toolResult", "failed"],
        ["cat", "artifact://0", "--session", login],
        ["cat", "agent://1-Review/findings/0", "--session", orders],
        ["history", "search", "--sessions", "orders"],
        ["usage", "--by", "model", "--html", "usage.html"],
        ["sql", "SELECT model, count(*) FROM messages GROUP BY model"],
        ["migrate", "--dry-run"],
        ["gc"],
        ["doctor"],
    ):
        echo("  " + shlex.join(base + arguments))


def _agent_dir_typed(ctx: click.Context, settings: Settings) -> str | None:
    """The global --agent-dir when it was typed on the command line; $XCSH_AGENT_DIR is ignored
    (it may name the user's real agent dir)."""
    root = ctx.find_root()
    if root.get_parameter_source("agent_dir") is ParameterSource.COMMANDLINE:
        return settings.agent_dir
    return None


def _short(path: str) -> str:
    """A path relative to the current folder when it is below it, else as given."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else path
