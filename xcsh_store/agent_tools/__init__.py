"""Tools for agents: the Model Context Protocol server (``xcsh-store mcp``) over the index, so
that an agent can recall its own past sessions. This package front is what the CLI uses.

* ``tools``: the read-only questions (search, a session's branch or tree, a context, prompt
  recall, usage) as plain functions returning JSON-ready dicts of bounded size;
* ``server``: those functions as MCP tools on the official SDK's server, over stdio.
"""

from xcsh_store.agent_tools.server import build_server, serve_stdio

__all__ = ["build_server", "serve_stdio"]
