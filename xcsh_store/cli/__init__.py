"""The ``xcsh-store`` command line: argument parsing and output only, one library call per verb."""

from xcsh_store.cli import history  # noqa: F401  (importing registers the verbs)
from xcsh_store.cli.app import cli

__all__ = ["cli"]
