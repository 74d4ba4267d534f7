"""The command-line reference page of the manual (docs/cli.md): every verb's and subverb's
``--help``, as a terminal of :data:`COLUMNS` columns without colour shows it, and the agents
whose sessions this installation reads, from the plugin registry (agents/registry.py).

``python -m xcsh_store.cli.reference > docs/cli.md`` writes the page; ``tests/test_docs.py``
fails when the committed page differs from what this prints now, so the reference never drifts
from the command line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import click

from xcsh_store.cli.app import cli
from xcsh_store.cli.doc_lists import agents_table

COLUMNS = 100
# The command that writes the page, named on it and in the drift test's message.
REGENERATE = "python -m xcsh_store.cli.reference > docs/cli.md"

INTRO = f"""\
# Command-line reference

Every verb's `--help`, as a terminal of {COLUMNS} columns shows it. This page is generated from the
command line itself:

```sh
{REGENERATE}
```

and a test fails when it differs from what the program prints, so it is always the current
version's. [Commands and conventions](commands.md) explains what the verbs share: session
arguments, times, search syntax, exit codes and output.
"""


def commands(
    context: click.Context, command: click.Command
) -> Iterator[tuple[click.Context, click.Command]]:
    """``command`` and every command below it, depth first, in the order ``--help`` lists
    them; hidden ones left out."""
    yield context, command
    if not isinstance(command, click.Group):
        return
    for name in command.list_commands(context):
        child = command.get_command(context, name)
        if child is not None and not child.hidden:
            yield from commands(click.Context(child, info_name=name, parent=context), child)


def page() -> str:
    """The whole page: a section per command, its ``--help`` in a text block.

    Click wraps help at the terminal's width (``$COLUMNS``), so :func:`main` sets it first.
    """
    root = click.Context(cli, info_name="xcsh-store", **cli.context_settings)
    sections = [INTRO]
    for context, _ in commands(root, cli):
        # The program and its verbs at one level, a group's subverbs below their verb.
        heading = "#" * max(2, context.command_path.count(" ") + 1)
        help_text = context.get_help()
        sections.append(f"{heading} `{context.command_path}`\n\n```text\n{help_text}\n```\n")
    sections.append(agents_section())
    return "\n".join(sections)


def agents_section() -> str:
    """The agent plugins, one row each (doc_lists.agents_table: the table of [Your own
    sessions](agents.md) too)."""
    return (
        "## Agents\n\nThe agent plugins this installation reads (besides xcsh, pi and oh-my-pi:"
        " [Your own sessions](agents.md)), from the entry point group `xcsh_store.agents`:\n\n"
        + agents_table()
        + "\n"
    )


def main() -> int:
    os.environ["COLUMNS"] = str(COLUMNS)
    os.environ["NO_COLOR"] = "1"
    sys.stdout.write(page())
    return 0


if __name__ == "__main__":
    sys.exit(main())
