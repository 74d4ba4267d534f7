"""Shell completion of what people type most: session ids (with their titles), project folders
and model names, from the index. Read-only, creates nothing, and a failure offers nothing
instead of printing an error into the user's command line."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import click
from click.shell_completion import CompletionItem

import xcsh_store.index as index_front
from xcsh_store.cli.output.render import cut
from xcsh_store.homes import get_store_dir
from xcsh_store.paths import get_index_db_path

# The index's names are looked up when a completion is asked, not when a verb's options are
# built: a verb that completes nothing (`ls` run) imports neither the store nor its questions.
if TYPE_CHECKING:
    from xcsh_store.index import Choice, SessionIndex

# Completion help is one line in the shell's menu.
HELP_WIDTH = 60

Complete = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]


def _agent_dir(ctx: click.Context) -> str:
    agent_dir = ctx.find_root().params.get("agent_dir")
    return os.path.abspath(os.path.expanduser(agent_dir)) if agent_dir else get_store_dir()


def _completer(choices: Callable[[SessionIndex, str], list[Choice]]) -> Complete:
    def complete(
        ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        agent_dir = _agent_dir(ctx)
        if not os.path.isfile(get_index_db_path(agent_dir)):
            return []
        try:
            with index_front.SessionIndex.open(agent_dir, read_only=True) as index:
                found = choices(index, incomplete)
        except Exception:  # a completion must never break the command line being typed
            return []
        return [
            CompletionItem(choice.value, help=cut(choice.help or "", HELP_WIDTH))
            for choice in found
        ]

    return complete


complete_session = _completer(lambda index, text: index_front.session_choices(index, text))
complete_project = _completer(lambda index, text: index_front.project_choices(index, text))
complete_model = _completer(lambda index, text: index_front.model_choices(index, text))
