"""The ``xcsh-store`` command line: argument parsing and output only, one library call per verb.

The group and what every verb shares are at the top: the click group, global options, settings,
error handling and the echo helpers (app), argument types (params), shell completion of ids,
folders and models (complete), where this machine's sessions are (places), and the generator of
docs/cli.md (reference). Two rooms below: output/ (how things are printed) and verbs/ (one
module per verb family, each imported when its verb is asked for: ``app.VERB_MODULES``).
The program itself is ``launch.main``, which sends ``statusline`` (statusline.py) past click.

``cli`` is imported on first use: ``xcsh-store statusline`` imports this package without it.
"""

from typing import TYPE_CHECKING

from xcsh_store.lazy import lazy_exports

# The names offered on first use (lazy.py), written once, here: type checkers read them, and
# lazy_exports reads this block at run time, which never runs it.
if TYPE_CHECKING:
    from xcsh_store.cli.app import cli

__getattr__, __dir__ = lazy_exports(__name__)
