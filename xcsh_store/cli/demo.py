"""``xcsh-store demo``: write a sample agent dir, index it, and take a tour of the commands."""

from __future__ import annotations

import os
import shlex
import time

import click

from xcsh_store.cli.app import Settings, cli, echo, pass_settings
from xcsh_store.cli.render import plural
from xcsh_store.demo import build_demo, prepare_demo_dir
from xcsh_store.index import SessionIndex
from xcsh_store.index.names import unique_id_prefixes

DEFAULT_DEMO_DIR = "xcsh-store-demo"


def _session_id(path: str) -> str:
    """Session files are named ``<timestamp>_<session id>.jsonl``."""
    return os.path.basename(path)[: -len(".jsonl")].split("_", 1)[1]


@cli.command("demo")
@click.option(
    "--agent-dir",
    "demo_dir",
    type=click.Path(file_okay=False),
    help=f"Where to write the sample (default: ./{DEFAULT_DEMO_DIR}, never ~/.xcsh/agent).",
)
@pass_settings
def demo_command(settings: Settings, demo_dir: str | None) -> None:
    """Write a realistic sample agent dir, index it, and show what the tool does with it.

    Four projects over two weeks: branched sessions with summaries and labels, a compaction,
    screenshots stored as blobs, tool output artifacts, subagent outputs, prompt history and
    an old v1 file. Running it again replaces an earlier demo; any other folder is refused.

    \b
    Examples:
      xcsh-store demo
      xcsh-store demo --agent-dir /tmp/xcsh-demo
    """
    target = demo_dir or (settings.agent_dir if settings.agent_dir_given else DEFAULT_DEMO_DIR)
    shown_dir = target if not os.path.isabs(target) else _short(target)
    target = os.path.abspath(os.path.expanduser(target))
    started = time.perf_counter()
    prepare_demo_dir(target)
    report = build_demo(target)
    with SessionIndex.open(target) as index:
        sync = index.sync()
        ids = unique_id_prefixes(index, (_session_id(path) for path in report.sessions.values()))
    seconds = time.perf_counter() - started
    files = [*report.sessions.values(), report.legacy_file]
    projects = {os.path.basename(os.path.dirname(path)) for path in files}
    echo(
        f"Wrote a sample agent dir to {shown_dir}: {plural(sync.files_seen, 'session')} in "
        f"{plural(len(projects), 'project')} (one an old v1 file), "
        f"{plural(report.history_prompts, 'prompt')} in history.db; "
        f"{plural(sync.entries_added, 'entry', 'entries')} indexed; {seconds:.1f}s in all."
    )
    login = ids[_session_id(report.sessions["login"])]
    orders = ids[_session_id(report.sessions["orders"])]
    base = ["xcsh-store", "--agent-dir", shown_dir]
    color = ["--color", "always" if settings.color else "never"]
    for arguments in (
        ["ls"],
        ["search", "session cookie"],
        ["show", login, "--tree"],
        ["usage", "--since", "14d", "--chart"],
    ):
        echo()
        echo(settings.style("$ " + shlex.join(base + arguments), bold=True))
        cli.main([*base[1:3], *color, *arguments], prog_name="xcsh-store", standalone_mode=False)
    echo()
    echo(settings.style("Try next:", bold=True))
    for arguments in (
        ["show", login, "--context"],
        ["search", "--role", "toolResult", "failed"],
        ["cat", "artifact://0", "--session", login],
        ["cat", "agent://1-Review/findings/0", "--session", orders],
        ["history", "search", "--sessions", "orders"],
        ["usage", "--by", "model", "--html", "usage.html"],
        ["sql", "SELECT model, count(*), round(sum(cost), 2) FROM messages GROUP BY model"],
        ["migrate", "--dry-run"],
        ["gc"],
        ["doctor"],
    ):
        echo("  " + shlex.join(base + arguments))


def _short(path: str) -> str:
    """A path relative to the current folder when it is below it, else as given."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else path
