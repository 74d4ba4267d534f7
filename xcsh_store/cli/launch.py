"""The ``xcsh-store`` program: ``xcsh-store statusline`` straight to its line (statusline.py,
without click or the index's store: an agent's status bar runs it on every redraw), every other
command line to the click group (app.py)."""

from __future__ import annotations

import sys


def main() -> None:
    arguments = sys.argv[1:]
    if arguments[:1] == ["statusline"] and not {"-h", "--help"} & set(arguments):
        from xcsh_store.cli.statusline import main as status_line

        sys.exit(status_line(arguments[1:]))
    from xcsh_store.cli.app import cli

    cli(prog_name="xcsh-store")
