"""The ``xcsh-store`` command line: argument parsing and output only, one library call per verb.

Each verb lives in the module ``app.VERB_MODULES`` names, imported when the verb is asked for.
"""

from xcsh_store.cli.app import cli

__all__ = ["cli"]
