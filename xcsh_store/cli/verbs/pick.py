"""``xcsh-store pick``: search sessions and prompts as you type, in the terminal, and print the
one chosen, so that it composes with the shell (``$(xcsh-store pick)``, the Alt-R binding).
The picker itself is in cli/picker/."""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from typing import TextIO

import click

from xcsh_store.cli.app import (
    Settings,
    cli,
    color_enabled,
    echo,
    open_index,
    pass_settings,
    require_extra,
)
from xcsh_store.cli.output.safe import one_line as flat
from xcsh_store.cli.params import agent_option
from xcsh_store.cli.picker.shells import BINDINGS, SHELLS
from xcsh_store.cli.picker.source import PROMPTS, SESSIONS, PickSource, Row
from xcsh_store.errors import XcshStoreError
from xcsh_store.js import well_formed

TERMINAL = "/dev/tty"


@cli.command("pick")
@click.argument("query", nargs=-1)
@click.option("--prompts", is_flag=True, help="Start on prompts instead of sessions.")
@click.option(
    "--one-line",
    is_flag=True,
    help="Print the choice as one line without control characters (line breaks become"
    " spaces): what the shell bindings put on the command line.",
)
@agent_option
@click.option(
    "--shell-binding",
    type=click.Choice(SHELLS),
    help="Print the SHELL code that binds Alt-R to recall a prompt onto the command line.",
)
@pass_settings
def pick_command(
    settings: Settings,
    query: tuple[str, ...],
    prompts: bool,
    one_line: bool,
    agents: tuple[str, ...],
    shell_binding: str | None,
) -> None:
    """Search sessions (or prompts) as you type and print the one you choose.

    Type to search every session's entries, or with Tab (or Ctrl-R) the prompts typed
    into the agents; ↑/↓ (Ctrl-P/Ctrl-N) move, the lower pane shows the hit in its session.
    Enter prints the session id (or the prompt) on stdout and exits 0; Ctrl-O prints the
    command that resumes the session in its agent, Ctrl-X writes it as Markdown into the
    current folder and prints the file's path; Esc or Ctrl-C prints nothing and exits 1.
    The picker draws on the terminal, not on stdout, so `$(xcsh-store pick)` holds only the
    choice. QUERY is what to start with.

    \b
    Examples:
      id=$(xcsh-store pick flaky test) && xcsh-store show "$id"
      xcsh-store pick --prompts --agent claude
      eval "$(xcsh-store pick --shell-binding bash)"    in ~/.bashrc: Alt-R
    """
    if shell_binding is not None:
        click.echo(BINDINGS[shell_binding], nl=False)
        return
    require_extra("pick", "pick", "prompt_toolkit")
    from xcsh_store.cli.picker.screen import Picker

    colour_mode = click.get_current_context().find_root().params["color"]
    with ExitStack() as stack:
        index = stack.enter_context(open_index(settings))
        terminal = _open_terminal(stack)
        chosen = Picker(
            PickSource(index, agents),
            PROMPTS if prompts else SESSIONS,
            " ".join(query),
            terminal,
            colour=color_enabled(colour_mode, True, os.environ),
        ).run()
    if chosen is None:
        sys.exit(1)
    text = chosen.row.value
    if chosen.action == "resume":
        text = _resume_line(settings, chosen.row)
    elif chosen.action == "export":
        text = _exported(settings, chosen.row)
    if one_line:
        text = flat(text)
    if sys.stdout.isatty():
        echo(text)  # shown on the terminal: through the sanitiser
        return
    # Captured ($(…), a pipe): the exact text, for the shell to use.
    sys.stdout.buffer.write(well_formed(text).encode() + b"\n")
    sys.stdout.flush()


def _resume_line(settings: Settings, row: Row) -> str:
    """Ctrl-O: the agent's own command that continues the row's session (as ``resume``)."""
    from xcsh_store.agents.registry import resume_command

    with open_index(settings) as index:
        info = index.find_session(row.path or row.value)
    command = resume_command(info.agent, info.session_id, info.cwd or None, info.path)
    if command is None:
        raise XcshStoreError(f"{info.agent} has no command that resumes a session")
    return command.shell()


def _exported(settings: Settings, row: Row) -> str:
    """Ctrl-X: the row's session written as Markdown (redacted, as ``export``) into the
    current folder; its file name is printed."""
    from xcsh_store.format.transcript import transcript

    with open_index(settings) as index:
        info = index.find_session(row.path or row.value)
        document = transcript(info, index.branch_entries(info, None))
    require_extra("export", "secrets", "kingfisher_sdk", "detect_secrets")
    from xcsh_store.secrets.redact import Redactor

    document.redact(Redactor())
    name = f"{info.agent}-{''.join(c for c in info.session_id[:8] if c.isalnum())}.md"
    with open(name, "xb") as stream:
        stream.write(document.encoded("md"))
    return os.path.abspath(name)


def _open_terminal(stack: ExitStack) -> tuple[TextIO, TextIO]:
    """The terminal to read keys from and draw on: /dev/tty, whatever stdin and stdout are."""
    try:  # both closed with the stack, once the picker has ended
        reader = stack.enter_context(open(TERMINAL, encoding="utf-8"))  # noqa: SIM115
        writer = stack.enter_context(open(TERMINAL, "w", encoding="utf-8"))  # noqa: SIM115
    except OSError as error:
        raise click.ClickException(
            f"pick needs a terminal to draw on, and {TERMINAL} cannot be opened ({error.strerror})"
        ) from None
    return reader, writer
