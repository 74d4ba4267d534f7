"""``xcsh-store mcp``: the functions of ``tools`` served as MCP tools over stdio by the
official SDK.

Each call brings the index up to date first (a sync at most every ``REFRESH_SECONDS``, none
while a ``watch`` keeps it current, none that waits for another process's sync), then opens it
read-only. An answer is one text of compact JSON (no indentation, no second structured copy: an
agent's context is what it costs), bounded in bytes (bounds.py: every string cut, the page
shortened to fit); an error is an error result (``isError``) of one line, an argument the
schema refuses too. Every answer goes to an agent and from there to its model's provider: its
secrets are redacted (xcsh_store.secrets) unless the server was built without, and so are the
pieces of a secret that cutting a text left (the secrets of the files an answer quotes are
taken out of it, whole or cut); it is bounded after it is redacted."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ContentBlock, ToolAnnotations
from pydantic import ValidationError

from xcsh_store.agent_tools import tools
from xcsh_store.agent_tools.bounds import BUDGET_NOTE, Pages, bounded, cut
from xcsh_store.artifacts.urls import resolve_internal_url
from xcsh_store.errors import AmbiguousSessionError
from xcsh_store.index import REFRESH_SECONDS, Refresher, SessionIndex
from xcsh_store.js import stringify
from xcsh_store.paths import artifacts_dir_for
from xcsh_store.secrets import FileSecrets, Redactor

INSTRUCTIONS = (
    "Recall past coding-agent sessions from the xcsh-store index: list_sessions lists them by "
    "time and folder (what was worked on when); search_sessions finds entries by words; "
    "get_session reads a session's active branch (or its whole tree) page by page, one line "
    "per entry; get_entry reads one entry whole; get_context shows what the model saw at a "
    "leaf; read_url reads a session's artifact:// and agent:// outputs; recall_prompts finds "
    "prompts typed before; usage sums tokens and cost; quota says how close the plan's usage "
    "limits are. Everything is read-only; times are ISO "
    "8601 UTC."
)
# Every tool only reads the index, and the index is all it reads.
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)


def _tool(
    agent_dir: str,
    question: Callable[..., dict[str, Any]],
    redactor: Redactor | None,
    file_secrets: FileSecrets | None,
    pages: Pages,
    refresher: Refresher | None = None,
) -> Callable[..., str]:
    """``question`` without its first parameter (the index), which each call opens (after
    ``refresher`` brought it up to date), answering compact JSON; redacted by ``redactor``,
    with the secrets of the files the answer quotes (``file_secrets``), then bounded, its page
    shortened as ``pages`` says."""

    @functools.wraps(question)
    def call(**arguments: Any) -> str:
        if refresher is not None:
            refresher.refresh()
        with SessionIndex.open(agent_dir, read_only=True) as index:
            try:
                answer = question(index, **arguments)
            except AmbiguousSessionError as error:
                if redactor is None or file_secrets is None:
                    raise
                # It names its candidates by their titles, cut short: their files' secrets.
                known = [
                    found
                    for path in error.candidates
                    for found in file_secrets.of_session(index, path)
                ]
                message = redactor.text(str(error), known)
                raise AmbiguousSessionError(message, error.candidates) from None
            if redactor is not None and file_secrets is not None:
                sessions, files = quoted_files(index, arguments, answer)
                known = [found for path in files for found in file_secrets.of(path)]
                known += [
                    found for path in sessions for found in file_secrets.of_session(index, path)
                ]
                answer = redactor.value(answer, known)
        return stringify(bounded(answer, pages)).decode()

    hints = typing.get_type_hints(question)
    parameters = [
        parameter.replace(annotation=hints[parameter.name])
        for parameter in list(inspect.signature(question).parameters.values())[1:]
    ]
    # The SDK reads the tool's parameters from its signature (a wrapper's, here).
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    del call.__wrapped__  # the signature above is the one the SDK reads
    call.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": str}
    return call


def quoted_files(
    index: SessionIndex, arguments: dict[str, Any], answer: dict[str, Any]
) -> tuple[set[str], set[str]]:
    """What an answer quotes, whole or cut (a summary, an excerpt, a page of a text): the
    sessions it lists or names (their stored paths: FileSecrets.of_session reads what each was
    read from), and the file an artifact:// or agent:// URL reads."""
    paths = {item["path"] for key in ("hits", "sessions") for item in answer.get(key, [])}
    files = set()
    if arguments.get("session"):
        info = index.find_session(arguments["session"])
        paths.add(info.path)
        if arguments.get("url"):
            resource = resolve_internal_url(arguments["url"], artifacts_dir_for(info.path))
            files.add(resource.source_path)
    return paths, files


def one_line(error: ValidationError) -> str:
    """A refused argument as the CLI says it: ``by: 'x' is not one of 'day', …``."""
    problems = []
    for problem in error.errors():
        name = ".".join(str(part) for part in problem["loc"]) or "arguments"
        if problem["type"] == "literal_error":
            expected = problem.get("ctx", {}).get("expected", "")
            problems.append(f"{name}: {problem['input']!r} is not one of {expected}")
        elif problem["type"] == "missing":
            problems.append(f"{name}: missing (it is required)")
        else:
            problems.append(f"{name}: {problem['msg']}, not {problem['input']!r}")
    return "; ".join(problems)


class StoreServer(FastMCP):
    """FastMCP whose refused arguments are one line, not pydantic's report, and whose errors
    are cut as an answer's texts are; with a ``redactor``, its errors are redacted as its
    answers are (an ambiguous session is named with the titles of its candidates)."""

    def __init__(self, redactor: Redactor | None = None, **settings: Any) -> None:
        super().__init__("xcsh-store", **settings)
        self.redactor = redactor

    async def call_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> Sequence[ContentBlock] | dict[str, Any]:
        try:
            return await super().call_tool(name, arguments)
        except ToolError as error:
            refused = error.__cause__
            message = str(error)
            if isinstance(refused, ValidationError):
                message = f"Error executing tool {name}: {one_line(refused)}"
            if self.redactor is not None:
                message = self.redactor.text(message)
            # An error quotes what it was given (a session id, a URL): megabytes, maybe.
            raise ToolError(cut(message)) from None


def build_server(
    agent_dir: str, redact: bool = True, sync_every: float | None = REFRESH_SECONDS
) -> FastMCP:
    """The MCP server over the index of ``agent_dir``; its answers' secrets redacted unless
    ``redact`` is false; the index synced before a call at most every ``sync_every`` seconds
    (None: never)."""
    redactor = Redactor() if redact else None
    refresher = None if sync_every is None else Refresher(agent_dir, sync_every)
    server = StoreServer(redactor, instructions=INSTRUCTIONS)
    # One cache of the quoted files' secrets for all the tools.
    file_secrets = FileSecrets(redactor.detector) if redactor is not None else None
    for name in tools.TOOLS:
        question = getattr(tools, name)
        server.add_tool(
            _tool(agent_dir, question, redactor, file_secrets, tools.PAGES[name], refresher),
            name=name,
            description=f"{inspect.getdoc(question)} {BUDGET_NOTE}",
            annotations=READ_ONLY,
            structured_output=False,
        )
    return server


def serve_stdio(
    agent_dir: str, redact: bool = True, sync_every: float | None = REFRESH_SECONDS
) -> None:
    """Serve until the client closes stdin (build_server's ``sync_every``)."""
    build_server(agent_dir, redact, sync_every).run("stdio")
