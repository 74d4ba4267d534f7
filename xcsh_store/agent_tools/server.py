"""``xcsh-store mcp``: the functions of ``tools`` served as MCP tools over stdio by the
official SDK.

Each call opens the index read-only (it never waits for a sync and always answers from the
last one), so a ``watch`` running beside the server keeps the answers current. Every answer
goes to an agent and from there to its model's provider: its secrets are redacted
(xcsh_store.secrets) unless the server was built without."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from mcp.server.fastmcp import FastMCP

from xcsh_store.agent_tools import tools
from xcsh_store.index import SessionIndex
from xcsh_store.secrets import FileSecrets, Redactor

INSTRUCTIONS = (
    "Recall past coding-agent sessions from the xcsh-store index: search_sessions finds "
    "entries by words; get_session reads a session's active branch (or its whole tree) page by "
    "page; get_context shows what the model saw at a leaf; recall_prompts finds prompts typed "
    "before; usage sums tokens and cost. Everything is read-only."
)


def _tool(
    agent_dir: str,
    question: Callable[..., dict[str, Any]],
    redactor: Redactor | None,
    file_secrets: FileSecrets | None,
) -> Callable[..., Any]:
    """``question`` without its first parameter (the index), which each call opens; its
    answer redacted by ``redactor``, with the secrets of the session files it quotes (a text
    cut short or an excerpt may hold a piece of one)."""

    @functools.wraps(question)
    def call(**arguments: Any) -> dict[str, Any]:
        with SessionIndex.open(agent_dir, read_only=True) as index:
            answer = question(index, **arguments)
            if redactor is None or file_secrets is None:
                return answer
            paths = {hit["path"] for hit in answer.get("hits", [])}
            if arguments.get("session"):
                paths.add(index.find_session(arguments["session"]).path)
            known = [found for path in paths for found in file_secrets.of(index.local_path(path))]
        return redactor.value(answer, known)

    hints = typing.get_type_hints(question)
    parameters = [
        parameter.replace(annotation=hints[parameter.name])
        for parameter in list(inspect.signature(question).parameters.values())[1:]
    ]
    call.__signature__ = inspect.Signature(parameters, return_annotation=dict[str, Any])
    del call.__wrapped__  # the signature above is the one the SDK reads
    call.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": dict[str, Any]}
    return call


def build_server(agent_dir: str, redact: bool = True) -> FastMCP:
    """The MCP server over the index of ``agent_dir``; its answers' secrets redacted unless
    ``redact`` is false."""
    server = FastMCP("xcsh-store", instructions=INSTRUCTIONS)
    redactor = Redactor() if redact else None
    file_secrets = FileSecrets(redactor.detector) if redactor is not None else None
    for name in tools.TOOLS:
        question = getattr(tools, name)
        server.add_tool(_tool(agent_dir, question, redactor, file_secrets), name=name)
    return server


def serve_stdio(agent_dir: str, redact: bool = True) -> None:
    """Serve until the client closes stdin."""
    build_server(agent_dir, redact).run("stdio")
