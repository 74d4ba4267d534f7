"""The ``xcsh-store`` command line: argument parsing and output only, one library call per verb."""

# Importing the verb modules registers their commands on the group.
from xcsh_store.cli import demo, maintenance, prompts, sessions, sql, usage  # noqa: F401
from xcsh_store.cli.app import cli

__all__ = ["cli"]
