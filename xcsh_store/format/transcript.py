"""A session as a document to share (``xcsh-store export ID``): its active branch as the
messages a person reads, in Markdown or as JSON.

Only what was said and done is kept: user and assistant text, each tool call rendered as what
it did (a shell command as a command block, an edit as a diff of the lines it changed, a file
read as its path and range, any other call as its arguments), and tool output folded in a
``<details>`` block. Agents' bookkeeping (model and thinking-level changes, labels, custom
records, empty assistant turns of encrypted reasoning) is left out; thinking is folded.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import orjson

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
# A diff longer than this many lines is folded (a Write of a whole file is all additions).
FOLDED_DIFF_LINES = 40
# Calls whose arguments hold a shell command, by the key that holds it.
_COMMAND_KEYS = ("command", "cmd")
# Calls that read a file: the key of its path, and those of its range.
_PATH_KEYS = ("file_path", "path", "filePath", "absolute_path")
_RANGE_KEYS = (("offset", "limit"), ("start_line", "end_line"), ("line", "limit"))


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


def _message_of(entry: dict[str, Any], calls: dict[str, str]) -> Message | None:
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
        return Message("tool", entry_id, timestamp, blocks=[_output(text, name, error)])
    if role == "bashExecution":
        command = Block("command", _string(message.get("command")), "bash")
        ran = _output(_string(message.get("output")), "bash")
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
    """A tool call as what it did: a diff for an edit, a command for a shell run, a path
    and range for a read, its arguments otherwise (by the arguments' form, not the tool's
    name, so that every agent's edit and shell tools are read alike)."""
    if isinstance(arguments, dict):
        diff = _edit_diff(arguments)
        if diff is not None:
            return Block("diff", diff, f"{name} {_string(_first(arguments, _PATH_KEYS))}".strip())
        if isinstance(arguments.get("input"), str) and "*** Begin Patch" in arguments["input"]:
            return Block("diff", arguments["input"], name)  # Codex apply_patch: already a diff
        command = _first(arguments, _COMMAND_KEYS)
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            command = " ".join(command)
        if isinstance(command, str):
            described = _string(arguments.get("description"))
            return Block("command", command, f"{name}: {described}" if described else name)
        path = _first(arguments, _PATH_KEYS)
        if isinstance(path, str) and len(arguments) <= 3:
            return Block("read", path + _range(arguments), name)
    shown = orjson.dumps(arguments, option=orjson.OPT_INDENT_2).decode() if arguments else ""
    return Block("call", shown, name)


def _edit_diff(arguments: dict[str, Any]) -> str | None:
    """The unified diff of an edit's arguments: Claude's Edit (old_string/new_string) and
    MultiEdit (edits), Gemini's and opencode's replace (old_string/oldString), a Write
    (content: every line added); None for arguments that are no edit."""
    path = _string(_first(arguments, _PATH_KEYS)) or "file"
    pairs: list[tuple[str, str]] = []
    edits = arguments.get("edits")
    if isinstance(edits, list):
        pairs = [_old_new(edit) for edit in edits if isinstance(edit, dict)]
        pairs = [pair for pair in pairs if pair != ("", "")]
    elif _old_new(arguments) != ("", ""):
        pairs = [_old_new(arguments)]
    elif isinstance(arguments.get("content"), str) and _first(arguments, _PATH_KEYS):
        pairs = [("", arguments["content"])]
    if not pairs:
        return None
    return "".join(line_diff(old, new, path) for old, new in pairs)


def line_diff(old: str, new: str, path: str) -> str:
    """The unified diff of ``old`` to ``new`` (a file's lines), headed by ``path``."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), path, path
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def diff_size(diff: str) -> str:
    """``Diff: +12 −3 lines``: what a unified diff adds and removes."""
    lines = diff.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return f"Diff: +{added} −{removed} lines"


def _old_new(value: dict[str, Any]) -> tuple[str, str]:
    old = _first(value, ("old_string", "oldString", "old_str"))
    new = _first(value, ("new_string", "newString", "new_str"))
    if isinstance(old, str) and isinstance(new, str):
        return old, new
    return "", ""


def _range(arguments: dict[str, Any]) -> str:
    for start_key, end_key in _RANGE_KEYS:
        start, end = arguments.get(start_key), arguments.get(end_key)
        if isinstance(start, int) and isinstance(end, int):
            last = end if end_key == "end_line" else start + end - 1
            return f" (lines {start}–{last})"
        if isinstance(start, int):
            return f" (from line {start})"
    return ""


def _output(text: str, name: str, is_error: bool = False) -> Block:
    if len(text) > OUTPUT_CHARS:
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


def _first(value: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((value[key] for key in keys if value.get(key) is not None), None)


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
