"""``xcsh-store completion SHELL``: the script that makes bash, zsh or fish complete verbs,
options, session ids, project folders and model names (cli/complete.py answers it)."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from xcsh_store.cli.app import COMPLETION_VARIABLE, cli

SHELLS = ("bash", "zsh", "fish")


@cli.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion_command(shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    \b
    Load it from the shell's start-up file:
      bash  eval "$(xcsh-store completion bash)"     in ~/.bashrc
      zsh   eval "$(xcsh-store completion zsh)"      in ~/.zshrc
      fish  xcsh-store completion fish | source      in ~/.config/fish/config.fish
    """
    completion = get_completion_class(shell)
    assert completion is not None  # every shell of SHELLS is one click knows
    # The script is the program's own text: printed as it is, newlines and all.
    click.echo(completion(cli, {}, "xcsh-store", COMPLETION_VARIABLE).source())
