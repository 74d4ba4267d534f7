"""What an entry says (its text, the title it gives its session, the model it sets, the usage it
reports) and the builders of the entries a session appends.

Every part reads these facts from here: the manager, the listings and the index agree because
there is one rule for each. The index stores usage in columns that :func:`message_usage` filled;
its SQL views only sum those columns (``usage_entries`` takes the rows whose columns are set), so
the rule of what counts is this module's alone.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from xcsh_store.format.versions import CURRENT_SESSION_VERSION, HEADER_TYPE
from xcsh_store.times import iso_now

# --------------------------------------------------------------------------------------------
# Text

TEXT_BLOCKS = ("text",)


def block_text(block: Any, kinds: Collection[str] = TEXT_BLOCKS) -> str | None:
    """The string a content block of one of ``kinds`` holds under its type's name (a ``text``
    block's ``text``, a ``thinking`` block's ``thinking``); None for any other block."""
    if type(block) is dict:
        kind = block.get("type")
        if kind in kinds:
            text = block.get(kind)
            if isinstance(text, str):
                return text
    return None


def content_text(content: Any) -> str:
    """The text of message content: a string, or its text blocks joined by a space."""
    if isinstance(content, str):
        return content
    if type(content) is not list:
        return ""
    return " ".join(text for text in map(block_text, content) if text is not None)


# --------------------------------------------------------------------------------------------
# Titles (compatibility: Title records before the header; pi's session_info names the session;
# oh-my-pi's title_change renames the session)

# pi names a session with an entry of this type.
SESSION_INFO_TYPE = "session_info"
# Who named a session that a session_info entry names.
NAMED_TITLE_SOURCE = "user"


def session_info_name(entry: dict[str, Any]) -> str | None:
    """The name a pi ``session_info`` entry gives its session, or None."""
    name = entry.get("name")
    if entry.get("type") == SESSION_INFO_TYPE and isinstance(name, str) and name:
        return name
    return None


# oh-my-pi renames a session with an entry of this type (decisions D28).
TITLE_CHANGE_TYPE = "title_change"


def title_change_name(entry: dict[str, Any]) -> tuple[str, str] | None:
    """``(title, source)`` an oh-my-pi ``title_change`` entry gives its session: its non-empty
    ``title``, and its ``source`` (``user`` when it has none); None for any other entry."""
    title = entry.get("title")
    if entry.get("type") != TITLE_CHANGE_TYPE or not isinstance(title, str) or not title:
        return None
    source = entry.get("source")
    return title, source if isinstance(source, str) and source else NAMED_TITLE_SOURCE


def branch_name(path: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The name the newest ``title_change`` on a root -> leaf path gives the session: it wins
    over every other title (D28)."""
    for entry in reversed(path):
        found = title_change_name(entry)
        if found is not None:
            return found
    return None


def named_title(entries: list[dict[str, Any]]) -> str | None:
    """The name of the last naming ``session_info`` entry: it wins over the header."""
    for entry in reversed(entries):
        name = session_info_name(entry)
        if name is not None:
            return name
    return None


def effective_title(
    header: dict[str, Any], leading: list[dict[str, Any]]
) -> tuple[str | None, str | None]:
    """``(title, source)``: the header's, else the last non-empty leading title record's."""
    title = header.get("title")
    if isinstance(title, str) and title:
        source = header.get("titleSource")
        return title, source if isinstance(source, str) else None
    for record in reversed(leading):
        title = record.get("title")
        if isinstance(title, str) and title:
            source = record.get("source")
            return title, source if isinstance(source, str) else None
    return None, None


# --------------------------------------------------------------------------------------------
# Models (compatibility: Explicit model changes win; Assistant messages without a model; pi's
# model_change form)

# The role a model_change without one sets the model of.
DEFAULT_MODEL_ROLE = "default"


def model_change_model(entry: dict[str, Any]) -> Any:
    """The model a ``model_change`` entry sets, or None: its truthy ``model`` (reference), else
    pi's ``provider`` + ``modelId`` form (both non-empty strings, no ``model``) as
    ``provider/modelId``."""
    model = entry.get("model")
    if model:
        return model
    provider, model_id = entry.get("provider"), entry.get("modelId")
    if model is None and _named(provider) and _named(model_id):
        return f"{provider}/{model_id}"
    return None


def model_change_role(entry: dict[str, Any]) -> Any:
    """The role whose model a ``model_change`` entry sets: its truthy ``role``, else the default."""
    return entry.get("role") or DEFAULT_MODEL_ROLE


def sets_default_model(entry: dict[str, Any]) -> bool:
    """Whether a ``model_change`` entry sets the model of the default role."""
    return model_change_role(entry) == DEFAULT_MODEL_ROLE and model_change_model(entry) is not None


def assistant_model(message: dict[str, Any]) -> str | None:
    """``provider/model`` of an assistant message naming both, else None."""
    provider, model = message.get("provider"), message.get("model")
    return f"{provider}/{model}" if _named(provider) and _named(model) else None


def _named(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


# --------------------------------------------------------------------------------------------
# Usage (compatibility: Usage as in the reference; Missing usage counts as zero)

USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "premiumRequests")
# The figures of :func:`message_usage`, in its order: the usage keys, then cost.total.
USAGE_FIELDS = (*USAGE_KEYS, "cost")
_NUMBERS = (int, float)  # exact types: a bool is not a token count


def message_usage(
    message: dict[str, Any], unrecorded_cost: float | None = 0
) -> tuple[int | float | None, ...] | None:
    """The usage a message reports, as figures in :data:`USAGE_FIELDS` order; None when it
    reports none. A usage without a ``cost.total`` has ``unrecorded_cost`` for it: 0 as the
    reference sums it, None for the index (which then prices the tokens: agents/prices/costs.py).

    An assistant message reports its own; a ``task`` tool result reports the subagent runs it
    made (in ``details.usage``). Anything else reports nothing.
    """
    role = message.get("role")
    if role == "assistant":
        usage = message.get("usage")
    elif role == "toolResult" and message.get("toolName") == "task":
        details = message.get("details")
        usage = details.get("usage") if type(details) is dict else None
    else:
        return None
    return usage_figures(usage, unrecorded_cost)


def usage_figures(
    usage: Any, unrecorded_cost: float | None = 0
) -> tuple[int | float | None, ...] | None:
    """(input, output, cacheRead, cacheWrite, premiumRequests, cost.total) of a usage object;
    None when it is not an object. Quantities that are missing or not numbers count as 0, a
    cost that is as ``unrecorded_cost``."""
    if type(usage) is not dict:
        return None
    get = usage.get
    # A loop, not a comprehension: this runs for every message of every file read.
    figures: list[int | float | None] = []
    for key in USAGE_KEYS:
        value: Any = get(key)
        figures.append(value if type(value) in _NUMBERS else 0)
    cost = get("cost")
    total: Any = cost.get("total") if type(cost) is dict else None
    figures.append(total if type(total) in _NUMBERS else unrecorded_cost)
    return tuple(figures)


# --------------------------------------------------------------------------------------------
# Builders: the records a session writes, with the keys in the reference's order

# The fromId of a branch summary that branches from before the first entry.
ROOT_BRANCH = "root"


def set_optional(target: dict[str, Any], key: str, value: Any) -> None:
    """Optional fields that are unset are absent, never null."""
    if value is not None:
        target[key] = value


def set_title_after_id(header: dict[str, Any], title: str, title_source: str | None) -> None:
    """Put ``title`` and ``titleSource`` right after the header's ``id``, in place: where the
    header of ``fork()`` holds them (as undefined, not serialised) from its start, so that a
    later name keeps that place (reference.md, the header and fork() sections)."""
    fields = [(key, value) for key, value in header.items() if key not in ("title", "titleSource")]
    header.clear()
    for key, value in fields:
        header[key] = value
        if key == "id":
            header["title"] = title
            set_optional(header, "titleSource", title_source)


def build_header(
    session_id: str,
    cwd: str,
    parent_session: str | None = None,
    title: str | None = None,
    title_source: str | None = None,
) -> dict[str, Any]:
    """The ``session`` record a file starts with, stamped now."""
    header: dict[str, Any] = {
        "type": HEADER_TYPE,
        "version": CURRENT_SESSION_VERSION,
        "id": session_id,
    }
    set_optional(header, "title", title)
    set_optional(header, "titleSource", title_source)
    header["timestamp"] = iso_now()
    header["cwd"] = cwd
    set_optional(header, "parentSession", parent_session)
    return header


def _entry(kind: str, entry_id: str, parent_id: str | None) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": iso_now()}


def _fields_first(
    kind: str, entry_id: str, parent_id: str | None, fields: dict[str, Any]
) -> dict[str, Any]:
    """``custom`` and ``custom_message`` put their own fields before id/parentId/timestamp."""
    entry = {"type": kind, **{key: value for key, value in fields.items() if value is not None}}
    entry["id"] = entry_id
    entry["parentId"] = parent_id
    entry["timestamp"] = iso_now()
    return entry


def build_message(entry_id: str, parent_id: str | None, message: dict[str, Any]) -> dict[str, Any]:
    entry = _entry("message", entry_id, parent_id)
    entry["message"] = message
    return entry


def build_thinking_level_change(
    entry_id: str, parent_id: str | None, level: str | None
) -> dict[str, Any]:
    entry = _entry("thinking_level_change", entry_id, parent_id)
    entry["thinkingLevel"] = level
    return entry


def build_model_change(
    entry_id: str, parent_id: str | None, model: str, role: str | None = None
) -> dict[str, Any]:
    entry = _entry("model_change", entry_id, parent_id)
    entry["model"] = model
    set_optional(entry, "role", role)
    return entry


def build_compaction(
    entry_id: str,
    parent_id: str | None,
    summary: str,
    short_summary: str | None,
    first_kept_entry_id: str,
    tokens_before: int,
    details: Any = None,
    from_extension: bool | None = None,
    preserve_data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    entry = _entry("compaction", entry_id, parent_id)
    entry["summary"] = summary
    set_optional(entry, "shortSummary", short_summary)
    entry["firstKeptEntryId"] = first_kept_entry_id
    entry["tokensBefore"] = tokens_before
    set_optional(entry, "details", details)
    set_optional(entry, "fromExtension", from_extension)
    set_optional(entry, "preserveData", preserve_data)
    return entry


def build_custom_entry(
    entry_id: str, parent_id: str | None, custom_type: str, data: Any = None
) -> dict[str, Any]:
    return _fields_first("custom", entry_id, parent_id, {"customType": custom_type, "data": data})


def build_custom_message_entry(
    entry_id: str,
    parent_id: str | None,
    custom_type: str,
    content: Any,
    display: bool,
    details: Any = None,
    attribution: str = "agent",
) -> dict[str, Any]:
    fields = {
        "customType": custom_type,
        "content": content,
        "display": display,
        "details": details,
        "attribution": attribution,
    }
    return _fields_first("custom_message", entry_id, parent_id, fields)


def build_label_change(
    entry_id: str, parent_id: str | None, target_id: str, label: str | None
) -> dict[str, Any]:
    entry = _entry("label", entry_id, parent_id)
    entry["targetId"] = target_id
    set_optional(entry, "label", label)
    return entry


def build_ttsr_injection(
    entry_id: str, parent_id: str | None, rule_names: list[str]
) -> dict[str, Any]:
    entry = _entry("ttsr_injection", entry_id, parent_id)
    entry["injectedRules"] = list(rule_names)
    return entry


def build_session_init(
    entry_id: str,
    parent_id: str | None,
    system_prompt: str,
    task: str,
    tools: list[str],
    output_schema: Any = None,
) -> dict[str, Any]:
    entry = _entry("session_init", entry_id, parent_id)
    entry["systemPrompt"] = system_prompt
    entry["task"] = task
    entry["tools"] = list(tools)
    set_optional(entry, "outputSchema", output_schema)
    return entry


def build_mode_change(
    entry_id: str, parent_id: str | None, mode: str, data: dict[str, Any] | None = None
) -> dict[str, Any]:
    entry = _entry("mode_change", entry_id, parent_id)
    entry["mode"] = mode
    set_optional(entry, "data", data)
    return entry


def build_branch_summary(
    entry_id: str,
    from_id: str | None,
    summary: str,
    details: Any = None,
    from_extension: bool | None = None,
) -> dict[str, Any]:
    """A summary of the branch left, as the first entry after ``from_id`` (None: a new root)."""
    entry = _entry("branch_summary", entry_id, from_id)
    entry["fromId"] = from_id if from_id is not None else ROOT_BRANCH
    entry["summary"] = summary
    set_optional(entry, "details", details)
    set_optional(entry, "fromExtension", from_extension)
    return entry
