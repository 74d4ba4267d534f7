"""``xcsh-store serve`` whose highlighter may use a lexer that backtracks exponentially
(``urbiscript``) and gives a block an hour: a page whose code asks for it is being highlighted
until the server stops. For the tests that stop a server whatever its pages cost.

    python highlight_child.py --agent-dir DIR serve --json --port N

prints ``{"url": ...}`` when it is ready, as ``serve --json`` does; SIGINT or SIGTERM stop it
(exit 0).
"""

from __future__ import annotations

import json
import signal
import sys

from xcsh_store.web import serve
from xcsh_store.web.highlight import BLOCK_CHARACTERS, CheckedLexer, Highlighter

if __name__ == "__main__":
    agent_dir, port = sys.argv[2], int(sys.argv[sys.argv.index("--port") + 1])
    highlighter = Highlighter(
        {"urbiscript": CheckedLexer("UrbiscriptLexer", BLOCK_CHARACTERS)}, block_seconds=3600
    )
    # uvicorn raises the signal it stopped on again once it is done: here, a clean exit.
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda _number, _frame: None)
    serve(
        agent_dir,
        port=port,
        on_ready=lambda url: print(json.dumps({"url": url}), flush=True),
        sync_every=None,
        highlighter=highlighter,
    )
