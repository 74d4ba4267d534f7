"""Rebuilding the model context of one leaf: the path to the root, compaction-aware."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from xcsh_store.format.entries import (
    DEFAULT_MODEL_ROLE,
    assistant_model,
    model_change_model,
    model_change_role,
)
from xcsh_store.times import timestamp_to_millis

DEFAULT_THINKING_LEVEL = "off"
DEFAULT_MODE = "none"


class _Last:
    """Sentinel for "the last entry" as the leaf of :func:`build_session_context`."""

    def __repr__(self) -> str:
        return "LAST"


LAST: Any = _Last()


@dataclass
class SessionContext:
    messages: list[dict[str, Any]] = field(default_factory=list)
    thinking_level: str = DEFAULT_THINKING_LEVEL
    models: dict[str, str] = field(default_factory=dict)
    injected_ttsr_rules: list[str] = field(default_factory=list)
    mode: str = DEFAULT_MODE
    mode_data: dict[str, Any] | None = None


# --------------------------------------------------------------------------------------------
# Message factories (compatibility: Context rebuild as in the reference). They copy what an
# entry holds: a field its file lacks arrives as None.


def create_custom_message(
    custom_type: str | None,
    content: Any,
    display: Any,
    details: Any,
    timestamp: Any,
    attribution: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "custom",
        "customType": custom_type,
        "content": content,
        "display": display,
    }
    if details is not None:
        message["details"] = details
    if attribution is not None:
        message["attribution"] = attribution
    message["timestamp"] = timestamp_to_millis(timestamp)
    return message


def create_branch_summary_message(
    summary: str, from_id: str | None, timestamp: Any
) -> dict[str, Any]:
    return {
        "role": "branchSummary",
        "summary": summary,
        "fromId": from_id,
        "timestamp": timestamp_to_millis(timestamp),
    }


def create_compaction_summary_message(
    summary: str | None,
    tokens_before: Any,
    timestamp: Any,
    short_summary: str | None = None,
    provider_payload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "compactionSummary", "summary": summary}
    if short_summary is not None:
        message["shortSummary"] = short_summary
    message["tokensBefore"] = tokens_before
    if provider_payload is not None:
        message["providerPayload"] = provider_payload
    message["timestamp"] = timestamp_to_millis(timestamp)
    return message


# --------------------------------------------------------------------------------------------
# Paths


def index_by_id(entries: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """id -> entry; a later duplicate id wins, like the reference."""
    return {entry["id"]: entry for entry in entries if isinstance(entry.get("id"), str)}


def path_to_root(leaf: dict[str, Any], by_id: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Root -> leaf, following ``parentId``; stops at a missing parent or a cycle (compatibility:
    Cycles end every walk)."""
    path = [leaf]
    seen = {id(leaf)}
    current = leaf
    while True:
        parent_id = current.get("parentId")
        if not parent_id or not isinstance(parent_id, str):
            break
        parent = by_id.get(parent_id)
        if parent is None or id(parent) in seen:
            break
        seen.add(id(parent))
        path.append(parent)
        current = parent
    path.reverse()
    return path


# --------------------------------------------------------------------------------------------
# Context


def build_session_context(
    entries: list[dict[str, Any]],
    leaf_id: Any = LAST,
    by_id: Mapping[str, dict[str, Any]] | None = None,
) -> SessionContext:
    """The context the model sees at ``leaf_id`` (compatibility: Context rebuild as in the
    reference; Explicit model changes win).

    ``leaf_id``: None gives the empty context; an id gives that entry, or the last entry when
    the id is unknown; the default ``LAST`` gives the last entry.
    """
    if leaf_id is None:
        return SessionContext()
    if by_id is None:
        by_id = index_by_id(entries)
    leaf = by_id.get(leaf_id) if isinstance(leaf_id, str) and leaf_id else None
    if leaf is None:
        if not entries:
            return SessionContext()
        leaf = entries[-1]
    return context_of_path(path_to_root(leaf, by_id))


def context_of_path(path: list[dict[str, Any]]) -> SessionContext:
    """The context of a root -> leaf path (shared by the manager and the index)."""
    context = SessionContext()
    models = context.models
    explicit_default_model = False
    fallback_model: str | None = None
    rules: dict[str, None] = {}
    compaction: dict[str, Any] | None = None
    compaction_index = -1
    for index, entry in enumerate(path):
        kind = entry.get("type")
        if kind == "message":
            message = entry.get("message")
            if type(message) is dict and message.get("role") == "assistant":
                named = assistant_model(message)
                if named is not None:
                    fallback_model = named
                    # The key takes its place where the reference first inserts it
                    # (compatibility: Assistant messages without a model).
                    models.setdefault(DEFAULT_MODEL_ROLE, named)
        elif kind == "thinking_level_change":
            level = entry.get("thinkingLevel")
            context.thinking_level = DEFAULT_THINKING_LEVEL if level is None else level
        elif kind == "model_change":
            model = model_change_model(entry)
            if model is not None:
                role = model_change_role(entry)
                models[role] = model
                explicit_default_model = explicit_default_model or role == DEFAULT_MODEL_ROLE
        elif kind == "compaction":
            compaction, compaction_index = entry, index
        elif kind == "ttsr_injection":
            injected = entry.get("injectedRules")
            if type(injected) is list:
                rules.update((rule, None) for rule in injected if isinstance(rule, str))
        elif kind == "mode_change":
            mode = entry.get("mode")
            context.mode = mode if isinstance(mode, str) else DEFAULT_MODE
            context.mode_data = entry.get("data")
    if fallback_model is not None and not explicit_default_model:
        models[DEFAULT_MODEL_ROLE] = fallback_model
    context.injected_ttsr_rules = list(rules)

    messages = context.messages
    if compaction is None:
        for entry in path:
            _emit(entry, messages)
        return context

    payload = replacement_history_payload(compaction)
    messages.append(
        create_compaction_summary_message(
            compaction.get("summary"),
            compaction.get("tokensBefore"),
            compaction.get("timestamp"),
            compaction.get("shortSummary"),
            payload,
        )
    )
    if payload is None:
        first_kept = compaction.get("firstKeptEntryId")
        keeping = False
        for entry in path[:compaction_index]:
            keeping = keeping or (first_kept is not None and entry.get("id") == first_kept)
            if keeping:
                _emit(entry, messages)
    for entry in path[compaction_index + 1 :]:
        _emit(entry, messages)
    return context


def compaction_keeps_history(compaction: dict[str, Any]) -> bool:
    """Whether entries before the compaction (from ``firstKeptEntryId``) stay in the context;
    not when the compaction carries an OpenAI replacement history."""
    return replacement_history_payload(compaction) is None


def replacement_history_payload(compaction: dict[str, Any]) -> dict[str, Any] | None:
    preserved = compaction.get("preserveData")
    remote = preserved.get("openaiRemoteCompaction") if type(preserved) is dict else None
    if type(remote) is not dict:
        return None
    provider, history = remote.get("provider"), remote.get("replacementHistory")
    if not (isinstance(provider, str) and provider and type(history) is list):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


def _emit(entry: dict[str, Any], messages: list[dict[str, Any]]) -> None:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if message is not None:
            messages.append(message)
    elif kind == "custom_message":
        messages.append(
            create_custom_message(
                entry.get("customType"),
                entry.get("content"),
                entry.get("display"),
                entry.get("details"),
                entry.get("timestamp"),
                entry.get("attribution"),
            )
        )
    elif kind == "branch_summary" and entry.get("summary"):
        messages.append(
            create_branch_summary_message(
                entry["summary"], entry.get("fromId"), entry.get("timestamp")
            )
        )
