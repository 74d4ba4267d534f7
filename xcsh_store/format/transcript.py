"""A session as a document to share (``xcsh-store export ID``): its active branch as the
messages a person reads, in Markdown or as JSON.

Only what was said and done is kept: user and assistant text, each tool call rendered as what
it did (a shell command as a command block, an edit as a diff of the lines it changed, a file
read as its path and range, any other call as its arguments), and tool output folded in a
``<details>`` block. Agents' bookkeeping (model and thinking-level changes, labels, custom
records, empty assistant turns of encrypted reasoning) is left out; thinking is folded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import orjson

from xcsh_store.format.tool_calls import FOLDED_DIFF_LINES, diff_size, exit_status, tool_view
from xcsh_store.times import iso_millis, iso_now

# The forms a session is exported in, with their media types.
EXPORT_TYPES = {
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "json": "application/json",
}
# Tool output longer than this many characters is cut in an export (the rest is said, not
# shown): a 20 MB build log makes a page nobody shares.
OUTPUT_CHARS = 20_000


@dataclass
class Block:
    """One piece of a message: ``kind`` is text, thinking, command, diff, read, call or
    output; ``text`` what it shows; ``title`` its heading (a tool's name, a file)."""

    kind: str
    text: str
    title: str = ""
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"kind": self.kind, "text": self.text}
        if self.title:
            shown["title"] = self.title
        if self.is_error:
            shown["is_error"] = True
        return shown


@dataclass
class Message:
    """A turn of the conversation: who spoke (user, assistant, tool), when, and its blocks."""

    role: str
    entry_id: str | None
    timestamp: str | None
    model: str | None = None
    blocks: list[Block] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "entry_id": self.entry_id,
            "timestamp": self.timestamp,
            "model": self.model,
            "blocks": [block.to_json() for block in self.blocks],
        }


class SessionFacts(Protocol):
    """What a transcript shows of the session (index.IndexedSession, team.TeamSession)."""

    @property
    def session_id(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def first_prompt(self) -> str | None: ...
    @property
    def created_at(self) -> str | None: ...
    @property
    def modified(self) -> datetime: ...

    def to_json(self) -> dict[str, Any]: ...


class TextRedactor(Protocol):
    """What redacts a transcript (secrets.Redactor)."""

    def texts(self, texts: Sequence[str | None]) -> list[str | None]: ...

    def value(self, value: Any) -> Any: ...


@dataclass
class Transcript:
    """What an export shows of a session: its title, the facts of its header, its record (as
    ``ls --json`` shows it) and its messages."""

    title: str
    facts: list[tuple[str, str]]
    session: dict[str, Any]
    messages: list[Message]

    def strings(self) -> list[str]:
        """Every text it shows, in a fixed order (:meth:`replace_strings` takes them back)."""
        texts = [self.title, *(value for _name, value in self.facts)]
        return texts + [text for block in self._blocks() for text in (block.text, block.title)]

    def replace_strings(self, texts: list[str]) -> None:
        """Put back the texts of :meth:`strings`, changed (redacted)."""
        given = iter(texts)
        self.title = next(given)
        self.facts = [(name, next(given)) for name, _value in self.facts]
        for block in self._blocks():
            block.text, block.title = next(given), next(given)

    def _blocks(self) -> Iterator[Block]:
        return (block for message in self.messages for block in message.blocks)

    def redact(self, redactor: TextRedactor) -> None:
        """Every secret the redactor finds in any of its texts replaced, in all of them."""
        strings = self.strings()
        found = redactor.texts(list(strings))
        self.replace_strings([new or old for new, old in zip(found, strings, strict=True)])
        self.session = redactor.value(self.session)

    def encoded(self, form: str) -> bytes:
        """The document as Markdown (``md``) or indented JSON (``json``)."""
        if form == "json":
            return orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2) + b"\n"
        return markdown(self).encode("utf-8", "surrogatepass")

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "exported_at": iso_now(),
            "messages": [message.to_json() for message in self.messages],
        }


def transcript(session: SessionFacts, entries: list[dict[str, Any]]) -> Transcript:
    """The session's header and the messages of its branch's entries (xcsh model), in order,
    without bookkeeping."""
    messages = []
    calls: dict[str, str] = {}  # tool call id -> the tool's name, for its result
    for entry in entries:
        message = _message_of(entry, calls)
        if message is not None and message.blocks:
            messages.append(message)
    title = _one_line(session.title or session.first_prompt or session.session_id)
    facts = [
        ("Agent", session.agent),
        ("Session", session.session_id),
        ("Folder", session.cwd),
        ("Started", session.created_at),
        ("Last active", iso_millis(session.modified)),
    ]
    shown = [(name, value) for name, value in facts if value]
    return Transcript(title, shown, session.to_json(), messages)


def message_of(entry: dict[str, Any]) -> Message | None:
    """One entry as the message it is, whole (a tool's output uncut): None for bookkeeping."""
    return _message_of(entry, {}, whole=True)


def _message_of(
    entry: dict[str, Any], calls: dict[str, str], whole: bool = False
) -> Message | None:
    kind = entry.get("type")
    entry_id = entry.get("id") if isinstance(entry.get("id"), str) else None
    timestamp = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
    if kind in ("compaction", "branch_summary") and isinstance(entry.get("summary"), str):
        title = "Compaction summary" if kind == "compaction" else "Branch summary"
        return Message(
            "summary", entry_id, timestamp, blocks=[Block("text", entry["summary"], title)]
        )
    message = entry.get("message")
    if kind != "message" or not isinstance(message, dict):
        return None
    role = message.get("role")
    model = message.get("model") if isinstance(message.get("model"), str) else None
    if role in ("user", "assistant"):
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "toolCall":
                calls[_string(block.get("id"))] = _string(block.get("name"))
        return Message(role, entry_id, timestamp, model, list(_content_blocks(message)))
    if role == "toolResult":
        name = _string(message.get("toolName")) or calls.get(_string(message.get("toolCallId")))
        name = name or "tool"
        text = "\n".join(_texts(message.get("content")))
        error = message.get("isError") is True
        ran = _output(text, name, error, whole=whole)
        return Message("tool", entry_id, timestamp, blocks=[ran])
    if role == "bashExecution":
        command = Block("command", _string(message.get("command")), "bash")
        code = message.get("exitCode")
        status = code if isinstance(code, int) and not isinstance(code, bool) else None
        ran = _output(_string(message.get("output")), "bash", status=status, whole=whole)
        return Message("user", entry_id, timestamp, blocks=[command, ran])
    return None


def _content_blocks(message: dict[str, Any]) -> Iterator[Block]:
    content = message.get("content")
    if isinstance(content, str):
        if content.strip():
            yield Block("text", content)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and _string(block.get("text")).strip():
            yield Block("text", block["text"])
        elif kind == "thinking" and _string(block.get("thinking")).strip():
            yield Block("thinking", block["thinking"])
        elif kind == "toolCall":
            yield tool_call(_string(block.get("name")) or "tool", block.get("arguments"))
        elif kind == "image":
            yield Block("text", "[image]")


def tool_call(name: str, arguments: Any) -> Block:
    """A tool call as what it did (tool_calls.tool_view: a diff for an edit, a command for a
    shell run, a path and range for a read, its arguments otherwise)."""
    view = tool_view(name, arguments)
    return Block(view.kind, view.text, view.title)


def _output(
    text: str, name: str, is_error: bool = False, whole: bool = False, status: int | None = None
) -> Block:
    """A tool's output, cut at OUTPUT_CHARS unless ``whole``; a shell command's exit status
    (``status``, else where its output states one) beside the tool's name, a failure as an
    error."""
    status = exit_status(text) if status is None else status
    if status is not None:
        name, is_error = f"{name} · exit {status}", is_error or status != 0
    if len(text) > OUTPUT_CHARS and not whole:
        text = text[:OUTPUT_CHARS] + f"\n… ({len(text) - OUTPUT_CHARS:,} more characters)"
    return Block("output", text, name, is_error)


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                yield block["text"]
            elif isinstance(block, dict) and block.get("type") == "image":
                yield "[image]"


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


# --------------------------------------------------------------------------------------------
# Markdown


def markdown(document: Transcript) -> str:
    """The session as one Markdown document: a header, then each message; tool output and
    thinking folded in ``<details>``."""
    title = document.title
    lines = [f"# {title if len(title) <= 80 else title[:79] + '…'}", ""]
    lines += [f"- **{name}:** {_inline(value)}" for name, value in document.facts]
    lines.append("")
    for message in document.messages:
        lines += _message_markdown(message)
    return "\n".join(lines).rstrip() + "\n"


def _message_markdown(message: Message) -> list[str]:
    heading = {"user": "User", "assistant": "Assistant", "tool": "Tool", "summary": "Summary"}
    when = f" · {message.timestamp}" if message.timestamp else ""
    model = f" · {message.model}" if message.model else ""
    lines = [f"## {heading.get(message.role, message.role)}{model}{when}", ""]
    for block in message.blocks:
        lines += _block_markdown(block)
        lines.append("")
    return lines


def _block_markdown(block: Block) -> list[str]:
    if block.kind == "text":
        return [f"**{block.title}**", "", block.text] if block.title else [block.text]
    if block.kind == "thinking":
        return _details("Thinking", block.text, "")
    if block.kind == "command":
        return [f"**{_inline(block.title)}**", "", *_fence(block.text, "sh")]
    if block.kind == "diff":
        if block.text.count("\n") > FOLDED_DIFF_LINES:
            return [
                f"**{_inline(block.title)}**",
                "",
                *_details(diff_size(block.text), block.text, "diff"),
            ]
        return [f"**{_inline(block.title)}**", "", *_fence(block.text, "diff")]
    if block.kind == "read":
        return [f"**{_inline(block.title)}** `{_inline(block.text)}`"]
    if block.kind == "output":
        label = f"{'Error from' if block.is_error else 'Output of'} {block.title}"
        return _details(label, block.text, "text")
    return [f"**{_inline(block.title)}**", "", *_fence(block.text, "json")]


def _details(summary: str, text: str, language: str) -> list[str]:
    return [
        "<details>",
        f"<summary>{_html(summary)}</summary>",
        "",
        *_fence(text, language),
        "",
        "</details>",
    ]


def _fence(text: str, language: str) -> list[str]:
    """``text`` in a code fence longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", text.rstrip("\n"), fence]


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]


def _inline(value: object) -> str:
    return _one_line(str(value)).replace("`", "'")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
