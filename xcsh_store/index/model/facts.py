"""What the index derives from the lines of a session file: for each JSON object its columns,
search text, prompt hash and blob refs; for the file, the lines it skipped. The write room stores
these, the read room derives the same from lines it reads again."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from xcsh_store.format.blobs import BLOB_REF_PREFIX, parse_blob_ref
from xcsh_store.format.entries import (
    SESSION_INFO_TYPE,
    TITLE_CHANGE_TYPE,
    block_text,
    content_text,
    message_usage,
    model_change_model,
    session_info_name,
    title_change_name,
)
from xcsh_store.format.jsonl import parse_line, replace_lone_surrogates

# A file's skipped lines: how many, and the 1-based numbers of the first MAX_SKIPPED_LISTED.
MAX_SKIPPED_LISTED = 1000


@dataclass
class SkippedLines:
    """Lines of a file that hold no JSON object, which every reader skips."""

    count: int = 0
    lines: list[int] = field(default_factory=list)

    def add(self, number: int) -> None:
        self.count += 1
        if len(self.lines) < MAX_SKIPPED_LISTED:
            self.lines.append(number)


# Tool output can be megabytes; its beginning is what people search for.
TOOL_RESULT_TEXT_CAP = 2_048
# Arguments of a tool call can hold whole files.
TOOL_ARGUMENTS_TEXT_CAP = 2_048
ENTRY_TEXT_CAP = 65_536

BLOB_REF_IN_JSON = re.compile(rb'blob:sha256:([0-9a-f]{64})"')
_PREFIX = BLOB_REF_PREFIX.encode("ascii")
# A \u escape of a character of the ref prefix. JSON spells the prefix with each character
# itself or a \u escape of it: a line with neither the plain prefix nor one of these escapes
# holds no ref, and looking for those two is far cheaper than for every spelling at once.
_ESCAPED_PREFIX_CHARACTER = re.compile(
    rb"\\u00(?:" + b"|".join(sorted({b"%02x" % char for char in _PREFIX})) + b")",
    re.IGNORECASE,
)

NOT_AN_ENTRY = frozenset({"session", "title"})

# A JSON escape of a UTF-16 surrogate; alone (not half of a pair) it decodes to a lone surrogate.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def storable_values(line: bytes, escaped: bool) -> list[dict[str, Any]]:
    """The objects on a line as the index derives its rows from them: each string with a lone
    surrogate (a \\ud800-style escape, which SQLite cannot store) made well formed. ``escaped``
    is whether the line holds a ``\\u`` at all (the caller has looked already)."""
    values = [] if line.isspace() else parse_line(line)
    if escaped and SURROGATE_ESCAPE.search(line):
        values = [replace_lone_surrogates(value) for value in values]
    return values


def _text_blocks(
    content: Any, kinds: tuple[str, ...] = ("text",), cap: int | None = None
) -> list[str]:
    """The strings of the content's blocks of ``kinds``; with a ``cap``, only as many as it
    takes for them, joined by newlines, to be longer than ``cap`` characters (tool output
    can be thousands of blocks, of which the first few are kept)."""
    if isinstance(content, str):
        return [content]
    if type(content) is not list:
        return []
    texts = []
    size = 0
    for block in content:
        if type(block) is dict and block.get("type") in kinds:
            for key in ("text", "thinking"):
                value = block.get(key)
                if isinstance(value, str):
                    texts.append(value)
                    size += len(value) + 1
                    break
            if cap is not None and size > cap:
                break
    return texts


def prompt_hash(text: str) -> str:
    return hashlib.sha1(text.strip().encode("utf-8", "surrogatepass")).hexdigest()


class EntryFacts:
    """Everything the index derives from one object; plain attributes for speed."""

    __slots__ = (
        "custom_type",
        "id",
        "model",
        "parent_id",
        "prompt_hash",
        "provider",
        "role",
        "text",
        "timestamp",
        "tool_name",
        "type",
        "usage",
    )
    role: str | None
    provider: str | None
    model: str | None
    tool_name: str | None
    custom_type: str | None

    def __init__(
        self, value: dict[str, Any], is_header_record: bool, with_text: bool = True
    ) -> None:
        kind = value.get("type")
        self.type = kind if isinstance(kind, str) else None
        entry_id = value.get("id")
        parent_id = value.get("parentId")
        # Header and title records are not tree entries: their id is the session's.
        self.id = entry_id if isinstance(entry_id, str) and not is_header_record else None
        self.parent_id = parent_id if isinstance(parent_id, str) and self.id is not None else None
        timestamp = value.get("timestamp")
        self.timestamp = timestamp if isinstance(timestamp, str) else None
        self.role = self.provider = self.model = self.tool_name = self.custom_type = None
        # Its cost None when not recorded (priced when counted: build.py).
        self.usage: tuple[int | float | None, ...] | None = None
        self.prompt_hash: str | None = None
        self.text = _describe(self, value, kind, with_text)
        if len(self.text) > ENTRY_TEXT_CAP:
            self.text = self.text[:ENTRY_TEXT_CAP]


def _describe(facts: EntryFacts, value: dict[str, Any], kind: Any, with_text: bool) -> str:
    """Fill the type-specific columns and return the searchable text (without ``with_text``,
    only a user message's, which its prompt hash needs: the rest waits, text_later.py)."""
    if kind == "message":
        message = value.get("message")
        return _describe_message(facts, message, with_text) if type(message) is dict else ""
    if kind in ("custom", "custom_message"):
        custom_type = value.get("customType")
        facts.custom_type = custom_type if isinstance(custom_type, str) else None
        return "\n".join(_text_blocks(value.get("content"))) if kind == "custom_message" else ""
    if kind == "model_change":
        model = value.get("model")
        if isinstance(model, str) and model:
            provider, _, name = model.partition("/")
            facts.provider, facts.model = (provider, name) if name else (None, model)
        elif model_change_model(value) is not None:  # (compatibility: pi's model_change form)
            facts.provider, facts.model = value["provider"], value["modelId"]
        return ""
    if kind == "compaction":
        return "\n".join(
            text
            for text in (value.get("shortSummary"), value.get("summary"))
            if isinstance(text, str)
        )
    if kind == SESSION_INFO_TYPE:  # (compatibility: pi's session_info names the session)
        return session_info_name(value) or ""
    if kind == TITLE_CHANGE_TYPE:  # (oh-my-pi's title_change renames the session)
        renamed = title_change_name(value)
        return "" if renamed is None else renamed[0]
    if kind in ("branch_summary", "label", "session", "title"):
        key = {"branch_summary": "summary", "label": "label"}.get(kind, "title")
        text = value.get(key)
        return text if isinstance(text, str) else ""
    return ""


def _describe_message(facts: EntryFacts, message: dict[str, Any], with_text: bool) -> str:
    role = message.get("role")
    facts.role = role if isinstance(role, str) else None
    # What counts as usage is message_usage's rule alone; the usage_entries view sums these.
    # A usage without a cost is priced when counted (build.py, agents/prices/costs.py).
    facts.usage = message_usage(message, unrecorded_cost=None)
    if role == "user":
        text = content_text(message.get("content"))
        if text.strip():
            facts.prompt_hash = prompt_hash(text)
        return text
    if role == "assistant":
        provider, model = message.get("provider"), message.get("model")
        facts.provider = provider if isinstance(provider, str) else None
        facts.model = model if isinstance(model, str) else None
        return _assistant_text(message.get("content")) if with_text else ""
    if role == "toolResult":
        tool_name = message.get("toolName")
        facts.tool_name = tool_name if isinstance(tool_name, str) else None
        if not with_text:
            return ""
        texts = _text_blocks(message.get("content"), cap=TOOL_RESULT_TEXT_CAP)
        return (facts.tool_name or "") + "\n" + "\n".join(texts)[:TOOL_RESULT_TEXT_CAP]
    if role in ("bashExecution", "pythonExecution"):
        source = message.get("command") if role == "bashExecution" else message.get("code")
        output = message.get("output")
        parts = [source if isinstance(source, str) else ""]
        parts.append(output[:TOOL_RESULT_TEXT_CAP] if isinstance(output, str) else "")
        return "\n".join(parts)
    summary = message.get("summary")
    if isinstance(summary, str):
        return summary
    return "\n".join(_text_blocks(message.get("content")))


_TEXT_AND_THINKING = ("text", "thinking")


def _assistant_text(content: Any) -> str:
    """Text and thinking, and each tool call as its name and arguments, a line each."""
    if type(content) is not list:
        return content_text(content)
    parts = []
    for block in content:
        text = block_text(block, _TEXT_AND_THINKING)
        if text is not None:
            parts.append(text)
        elif type(block) is dict and block.get("type") == "toolCall":
            name = block.get("name")
            text = arguments_text(block.get("arguments"))
            parts.append(f"{name if isinstance(name, str) else ''} {text}")
    return "\n".join(parts)


def arguments_text(arguments: Any, cap: int = TOOL_ARGUMENTS_TEXT_CAP) -> str:
    """Tool-call arguments as a person reads them, at most ``cap`` characters: one line per
    value, ``key: value``, strings as they are (JSON would show ``\\n`` and ``\\"``, and glue
    the letter after an escape to the next word)."""
    lines: list[str] = []
    size = 0
    if type(arguments) is dict:
        # Most arguments are one flat object: its members are the lines, in order.
        for key, item in arguments.items():
            if type(item) is dict or type(item) is list:
                lines, size = [], 0
                break
            if size >= cap:
                return "\n".join(lines)[:cap]
            # A line longer than the cap ends the text: only its first ``cap`` characters can
            # be in it (cut here, not after joining, as it may hold a whole file).
            line = f"{key}: " + (item[:cap] if isinstance(item, str) else _scalar_text(item))
            lines.append(line)
            size += len(line) + 1
        else:
            return "\n".join(lines)[:cap]
    # (label, value) pairs on an explicit stack, members pushed in reverse: arguments may nest
    # deeper than Python's recursion limit, and only their first ``cap`` characters are read.
    # A container hands its label (its keys so far) to its first member.
    pending: list[tuple[str, Any]] = [] if arguments is None else [("", arguments)]
    while pending and size < cap:
        label, item = pending.pop()
        if type(item) is dict:
            members = [(f"{key}: ", value) for key, value in item.items()]
        elif type(item) is list:
            members = [("", value) for value in item]
        else:
            line = label + (item if isinstance(item, str) else _scalar_text(item))
            lines.append(line)
            size += len(line) + 1
            continue
        if members:
            members[0] = (label + members[0][0], members[0][1])
        pending += reversed(members)
    return "\n".join(lines)[:cap]


def _scalar_text(value: Any) -> str:
    if value is None or type(value) is bool:
        return "null" if value is None else "true" if value else "false"
    return str(value)


def blob_refs_in(line: bytes, value: Any = None, *, escaped: bool | None = None) -> set[str]:
    """Every well-formed ``blob:sha256:`` reference in a JSON line, at any depth, however it
    is spelled; ``value`` is the line parsed (it is parsed here when not given).

    Without a ``\\u`` escape the raw bytes spell every string as it decodes, so a byte pattern
    finds all refs; an escape can spell any character of a ref (``blob:sha256:…\\u0035``,
    which the loader resolves like any other), so such a line is searched as decoded strings.
    ``escaped`` says whether the line holds a ``\\u`` (looked for when not given).
    """
    if escaped is None:
        escaped = b"\\u" in line
    if escaped:
        if _PREFIX not in line and not _ESCAPED_PREFIX_CHARACTER.search(line):
            return set()
        return _refs_in_value(orjson.loads(line) if value is None else value)
    if _PREFIX not in line:
        return set()
    return {match.decode("ascii") for match in BLOB_REF_IN_JSON.findall(line)}


def _refs_in_value(value: Any) -> set[str]:
    """The hashes of well-formed refs among the strings (keys too) of a decoded value."""
    found = set()
    pending = [value]
    while pending:
        current = pending.pop()
        if type(current) is dict:
            pending.extend(current.keys())
            pending.extend(current.values())
        elif type(current) is list:
            pending.extend(current)
        elif type(current) is str and current.startswith(BLOB_REF_PREFIX):
            digest = parse_blob_ref(current)
            if digest is not None:
                found.add(digest)
    return found
