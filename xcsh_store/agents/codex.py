"""Codex CLI rollout files (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``):
each line ``{"timestamp", "type", "payload"}``, the first a ``session_meta``; before that
envelope (2025), bare items after a ``{"id", "timestamp", "instructions"}`` line.

Entries have no ids: each gets one in file order, the child of the one before.

* ``response_item`` messages are what the model saw and said; the assistant's give text, and
  so do reasoning summaries, ``function_call``/``custom_tool_call`` (name and arguments) and
  their outputs. The user's own words come from ``event_msg`` ``user_message`` (its
  ``response_item`` twin, and the injected environment and instructions, add no text), so a
  prompt is counted once; ``agent_message``/``agent_reasoning`` events repeat response items
  and add none either.
* ``thread_rolled_back`` (``num_turns``) goes back to before the last turns: what follows is a
  new branch from where the first of them began, as going back does in xcsh.
* ``turn_context`` names the model of the turn; ``compacted`` is a compaction (its message is
  the summary the model saw from then on); ``thread_name_updated`` titles the session.
* Usage: each ``token_count`` event's ``last_token_usage`` (that model call). Its
  ``input_tokens`` include the cached ones (``cached_input_tokens``: cache reads) and, for the
  GPT-5.6 family, the cache writes (``cache_write_input_tokens``, billed at the cache-write
  rate); the rest is input. ``output_tokens`` include the reasoning ones. The same event written
  twice has the same running total: the total is its usage key, so it counts once. A report of
  no new tokens (after a compaction or an aborted turn Codex reports the unchanged running total
  with a ``last_token_usage`` that is only its estimate of the context: codex-rs
  ``recompute_token_usage``) adds nothing and, having no key, replaces nothing. A fork or
  spawned subagent starts by replaying the parent's history with the second of the fork's
  creation as timestamp; usage of that second is the parent's and is not counted again.
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any, TypeGuard

import orjson

from xcsh_store.agents.base import (
    Agent,
    AgentEntry,
    HistoryPrompt,
    QuotaReading,
    SessionFacts,
    number,
    text_blocks,
    text_of,
)
from xcsh_store.agents.prices.pricing import price_table
from xcsh_store.homes import agent_home
from xcsh_store.times import iso_millis, parse_iso

# Codex's folder: $CODEX_HOME, else ~/.codex; rollouts in sessions/, the prompts typed in
# history.jsonl.
HOME_ENV = "CODEX_HOME"


def codex_dir() -> str:
    return agent_home(HOME_ENV, ".codex")


class CodexReader(Agent):
    name = "codex"
    label = "Codex"
    has_ids = False
    folder_variables = (HOME_ENV,)
    resume = "codex resume {id}"
    project_folders = False
    where = (
        "`$CODEX_HOME/sessions`, else `~/.codex/sessions`:"
        " `YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`"
    )

    def session_roots(self) -> list[str]:
        return [os.path.join(codex_dir(), "sessions")]

    def history_files(self) -> list[str]:
        return [os.path.join(codex_dir(), "history.jsonl")]

    def recognizes(self, value: dict[str, Any]) -> bool:
        if "payload" in value and isinstance(value.get("type"), str):
            return True
        # The envelope-less shape: a first line with the session id and the instructions.
        return "type" not in value and "instructions" in value and isinstance(value.get("id"), str)

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        payload = value.get("payload")
        timestamp = text_of(value.get("timestamp"))
        if type(payload) is not dict:
            if "type" not in value and "instructions" in value:
                _learn_session(value, timestamp, session)
                return AgentEntry({"type": "session_meta", "timestamp": timestamp})
            # A bare response item (or state marker) of the envelope-less shape.
            return _response_item(value, timestamp, session, enveloped=False)
        kind = value.get("type")
        if kind == "response_item":
            return _response_item(payload, timestamp, session, enveloped=True)
        if kind == "event_msg":
            return _event(payload, timestamp, session)
        entry: dict[str, Any] = {"type": kind, "timestamp": timestamp}
        if kind == "session_meta":
            _learn_session(payload, timestamp, session)
        elif kind == "turn_context":
            session.model = text_of(payload.get("model")) or session.model
            # In the row too: a sync that reads the file in parts picks the model up again
            # from the last row that names one.
            return AgentEntry(entry, model=session.model, provider="openai")
        elif kind == "compacted":
            entry.update(type="compaction", summary=text_of(payload.get("message")) or "")
        return AgentEntry(entry)

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        """``{"session_id", "ts" (seconds), "text"}``."""
        prompt, timestamp = text_of(value.get("text")), value.get("ts")
        if prompt is None or isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
            return None
        return HistoryPrompt(prompt, float(timestamp), None, text_of(value.get("session_id")))


def _learn_session(meta: dict[str, Any], timestamp: str | None, session: SessionFacts) -> None:
    if session.session_id is not None:
        return  # a fork's copy of its parent's session_meta
    session.session_id = text_of(meta.get("id"))
    session.cwd = text_of(meta.get("cwd"))
    session.created_at = text_of(meta.get("timestamp")) or timestamp
    source = meta.get("source")
    spawn = source.get("subagent") if type(source) is dict else None
    spawn = spawn.get("thread_spawn") if type(spawn) is dict else None
    parent = text_of(meta.get("forked_from_id")) or (
        text_of(spawn.get("parent_thread_id")) if type(spawn) is dict else None
    )
    if parent is not None:
        session.parent_session_id = parent
        session.replay_second = session.created_at[:19] if session.created_at else None


def _response_item(
    item: dict[str, Any], timestamp: str | None, session: SessionFacts, enveloped: bool
) -> AgentEntry:
    kind = item.get("type")
    entry: dict[str, Any] = {"type": "response_item", "timestamp": timestamp}
    found = AgentEntry(entry, qualifier=kind if isinstance(kind, str) else None)
    if kind == "message":
        role = item.get("role")
        texts = [
            part["text"]
            for part in item.get("content") or ()
            if type(part) is dict and isinstance(part.get("text"), str)
        ]
        if role == "assistant":
            entry.update(type="message", message=_message("assistant", texts))
            found.model, found.provider = session.model, "openai"
        elif role == "user" and not enveloped:
            entry.update(type="message", message=_message("user", texts))
        else:
            found.qualifier = f"message:{role}"
    elif kind == "reasoning":
        summary = item.get("summary")
        texts = [
            part["text"]
            for part in summary or ()
            if type(part) is dict and isinstance(part.get("text"), str)
        ] if type(summary) is list else []  # fmt: skip
        blocks = [{"type": "thinking", "thinking": text} for text in texts]
        entry.update(type="message", message={"role": "assistant", "content": blocks})
        found.model, found.provider = session.model, "openai"
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        arguments = item.get("arguments") if kind == "function_call" else item.get("input")
        if kind == "function_call" and isinstance(arguments, str):
            with contextlib.suppress(orjson.JSONDecodeError):
                arguments = orjson.loads(arguments)
        if kind == "custom_tool_call":
            arguments = {"input": arguments}
        call = {"type": "toolCall", "name": item.get("name"), "arguments": arguments}
        entry.update(type="message", message={"role": "assistant", "content": [call]})
        found.model, found.provider = session.model, "openai"
    elif kind in ("function_call_output", "custom_tool_call_output"):
        entry.update(
            type="message",
            message={"role": "toolResult", "content": _output_blocks(item.get("output"))},
        )
    return found


def _output_blocks(output: Any) -> list[dict[str, str]]:
    """A tool's output: a string, ``{"output": ...}``, or a list of content items."""
    if type(output) is dict:
        output = output.get("output", output.get("content"))
    if isinstance(output, str):
        try:
            decoded = orjson.loads(output) if output.startswith("{") else None
        except orjson.JSONDecodeError:
            decoded = None
        if type(decoded) is dict and isinstance(decoded.get("output"), str):
            output = decoded["output"]
        return text_blocks([output])
    if type(output) is list:
        return text_blocks(
            part["text"]
            for part in output
            if type(part) is dict and isinstance(part.get("text"), str)
        )
    return []


def _message(role: str, texts: list[str]) -> dict[str, Any]:
    return {"role": role, "content": text_blocks(texts)}


def _event(payload: dict[str, Any], timestamp: str | None, session: SessionFacts) -> AgentEntry:
    kind = payload.get("type")
    found = AgentEntry(
        {"type": "event_msg", "timestamp": timestamp},
        qualifier=kind if isinstance(kind, str) else None,
    )
    if kind == "user_message":
        message = text_of(payload.get("message")) or ""
        found.entry.update(type="message", message=_message("user", [message]))
    elif kind == "thread_name_updated":
        found.title = text_of(payload.get("thread_name")) or text_of(payload.get("name"))
        found.title_source = "auto" if found.title else None
    elif kind == "token_count":
        _token_count(found, payload, timestamp, session)
    elif kind == "thread_rolled_back":
        turns = payload.get("num_turns")
        found.rewind_turns = turns if type(turns) is int and turns > 0 else None
    return found


def _token_count(
    found: AgentEntry, payload: dict[str, Any], timestamp: str | None, session: SessionFacts
) -> None:
    replay = session.replay_second
    if replay is not None and timestamp is not None and timestamp[:19] <= replay:
        return  # the parent's history, replayed into the fork (its usage and readings)
    found.quotas = rate_limit_readings(payload.get("rate_limits"), timestamp)
    info = payload.get("info")
    if type(info) is not dict:
        return  # info: null (rate limits only)
    last = info.get("last_token_usage")
    if type(last) is not dict:
        return
    cached = number(last.get("cached_input_tokens"))
    written = number(last.get("cache_write_input_tokens"))
    figures = (
        max(number(last.get("input_tokens")) - cached - written, 0),
        number(last.get("output_tokens")),
        cached,
        written,
    )
    if not any(figures):
        return  # no new usage: the running total reported again
    model = session.model
    found.model, found.provider = model, "openai"
    cost = price_table().tokens_cost(model, timestamp, *figures, provider="openai")
    found.usage = (*figures, 0, cost)
    total = info.get("total_token_usage")
    if type(total) is dict:
        found.usage_key = "total:" + orjson.dumps(total, option=orjson.OPT_SORT_KEYS).decode()


# -- rate limits -----------------------------------------------------------------------------

_SLOTS = ("primary", "secondary")


def rate_limit_readings(limits: Any, timestamp: str | None) -> tuple[QuotaReading, ...]:
    """The windows of a ``token_count`` event's ``rate_limits``, in each form Codex wrote:

    * since 0.4x: ``{"primary": {"used_percent", "window_minutes", "resets_at"}, "secondary":
      ..., "limit_id", "plan_type", "credits", ...}``; ``resets_at`` is epoch seconds, an
      earlier release wrote ``resets_in_seconds`` (from the event's time) instead; a window
      may be null (an account without that limit, or a limit not reported yet);
    * before that, flat: ``primary_used_percent``, ``primary_window_minutes``,
      ``primary_reset_after_seconds`` and the same for ``secondary`` (with
      ``primary_to_secondary_ratio_percent``, which says nothing of use here).

    A window without a finite ``used_percent`` is not a reading; a reset time that cannot be
    placed (no event time for a relative one) is left unknown.
    """
    if type(limits) is not dict:
        return ()
    observed = parse_iso(timestamp) if timestamp else None
    limit_id, plan = text_of(limits.get("limit_id")), text_of(limits.get("plan_type"))
    readings = []
    for slot in _SLOTS:
        window = limits.get(slot)
        if type(window) is dict:
            used = window.get("used_percent")
            minutes = window.get("window_minutes")
            resets = _epoch_iso(window.get("resets_at"))
            after = window.get("resets_in_seconds")
        else:
            used = limits.get(f"{slot}_used_percent")
            minutes = limits.get(f"{slot}_window_minutes")
            resets, after = None, limits.get(f"{slot}_reset_after_seconds")
        if not _finite(used):
            continue
        if resets is None and observed is not None and _finite(after):
            resets = _epoch_iso(observed.timestamp() + float(after))
        readings.append(
            QuotaReading(
                slot,
                float(used),
                minutes if type(minutes) is int and minutes > 0 else None,
                resets,
                limit_id,
                plan,
            )
        )
    return tuple(readings)


def _finite(value: Any) -> TypeGuard[float]:
    """A finite int or float (a bool is neither)."""
    return type(value) in (int, float) and math.isfinite(value)


def _epoch_iso(value: Any) -> str | None:
    """Epoch seconds as canonical UTC ISO; None when not a plausible time."""
    if not _finite(value) or value <= 0:
        return None
    try:
        return iso_millis(float(value))
    except (OverflowError, ValueError, OSError):
        return None


READER = CodexReader()
