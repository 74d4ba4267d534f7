"""The ``--json`` shapes: one function per kind of record, so every verb prints the same keys.

These shapes are a public contract documented in docs/json.md; add keys, never
rename or remove them.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from xcsh_store.cli.output.render import (
    MARK_CLOSE,
    MARK_OPEN,
    PLAIN_MARKS,
    home_relative,
    money,
    plural,
)
from xcsh_store.times import iso_millis, iso_seconds

if TYPE_CHECKING:
    from datetime import datetime

    from xcsh_store.format.context import SessionContext
    from xcsh_store.index import (
        BillingBlock,
        IndexedSession,
        PromptHit,
        SearchHit,
        SkippedLines,
        UsageRow,
    )


def host_of(record: Any) -> dict[str, str]:
    """``{"host": …}`` for a record of the team index (``--db``), else nothing."""
    host = getattr(record, "host", None)
    return {} if host is None else {"host": host}


def session_json(session: IndexedSession) -> dict[str, Any]:
    return {
        "id": session.session_id,
        "agent": session.agent,
        "path": session.path,
        "cwd": session.cwd or None,
        # A session's project is its working directory, for every agent; project_dir is the
        # folder its file is in (below sessions/, Claude Code's projects/, Codex's sessions/).
        "project": session.cwd or None,
        "project_dir": session.project_dir,
        "title": session.title,
        "title_source": session.title_source,
        "parent_session": session.parent_session_path,
        "parent_session_id": session.parent_session_id,
        "version": session.version,
        "created": iso_millis(session.created),
        "modified": iso_millis(session.modified),
        "entry_count": session.entry_count,
        "message_count": session.message_count,
        "first_message": session.first_message,
        "last_entry_id": session.last_entry_id,
        "input_tokens": session.input_tokens,
        "output_tokens": session.output_tokens,
        "cache_read_tokens": session.cache_read_tokens,
        "cache_write_tokens": session.cache_write_tokens,
        # The four above together: the "tokens" of ls and show, the total of usage.
        "total_tokens": session.tokens,
        "premium_requests": session.premium_requests,
        # null when none of its tokens has a price; a lower bound when unpriced_entries is not 0.
        "cost": None if session.cost_kind == "unpriced" else session.cost,
        # Claude Code and Codex record no costs: theirs is priced by the index
        # (`xcsh-store prices`); entries of models without a price are not in "cost".
        "cost_estimated": session.cost_kind != "recorded",
        "unpriced_entries": session.unpriced_entries,
        "id_shared": session.id_shared,
        **host_of(session),
    }


def session_cost(session: IndexedSession) -> str:
    """A session's cost as shown: ``~$1.20`` when it is an estimate (Claude Code and Codex
    record none), ``≥~$1.20`` when some of its entries have no price, ``?`` when none has one;
    never a silent ``$0``."""
    kind = session.cost_kind
    if kind == "unpriced":
        return "?"
    return {"partial": "≥~", "estimated": "~"}.get(kind, "") + money(session.cost)


def cost_text(cost: float | None) -> str:
    """A summed cost: ``?`` when nothing in it has a price."""
    return "?" if cost is None else money(cost)


def plain_snippet(snippet: str) -> str:
    """A search snippet with its highlight marks as ``«`` and ``»``."""
    return snippet.replace(MARK_OPEN, PLAIN_MARKS[0]).replace(MARK_CLOSE, PLAIN_MARKS[1])


def hit_json(hit: SearchHit, on_active_branch: bool) -> dict[str, Any]:
    return {
        "session_id": hit.session_id,
        "agent": hit.agent,
        "path": hit.path,
        "title": hit.title,
        "cwd": hit.cwd,
        "entry_id": hit.entry_id,
        "type": hit.type,
        "role": hit.role,
        "model": hit.model,
        "timestamp": hit.timestamp,
        "snippet": plain_snippet(hit.snippet),
        "score": hit.score,
        "on_active_branch": on_active_branch,
        **host_of(hit),
    }


def prompt_json(
    prompt: str,
    created_at: float,
    cwd: str | None,
    *,
    history_id: int | None,
    source: str = "history",
    session_id: str | None = None,
    session_path: str | None = None,
    entry_id: str | None = None,
    agent: str = "xcsh",
) -> dict[str, Any]:
    """One remembered prompt, from history.db or (``source: "session"``) from a session."""
    return {
        "id": history_id,
        "prompt": prompt,
        "created_at": created_at,
        # history.db keeps whole seconds, so no milliseconds here.
        "created": iso_seconds(created_at),
        "cwd": cwd,
        "source": source,
        "agent": agent,
        "session_id": session_id,
        "session_path": session_path,
        "entry_id": entry_id,
    }


def prompt_hit_json(hit: PromptHit) -> dict[str, Any]:
    return prompt_json(
        hit.prompt,
        hit.created_at,
        hit.cwd,
        history_id=hit.history_id,
        source=hit.source,
        session_id=hit.session_id,
        session_path=hit.session_path,
        entry_id=hit.entry_id,
        agent=hit.agent,
    ) | host_of(hit)


def usage_json(row: UsageRow) -> dict[str, Any]:
    return {
        "key": row.key,
        "keys": list(row.keys) if row.keys else [row.key],
        "entries": row.entries,
        "input_tokens": row.input_tokens or 0,
        "output_tokens": row.output_tokens or 0,
        "cache_read_tokens": row.cache_read_tokens or 0,
        "cache_write_tokens": row.cache_write_tokens or 0,
        "total_tokens": row.tokens,
        # null when no entry has a price; else the sum of those priced (a lower bound when
        # unpriced_entries is not 0). Claude Code and Codex write no costs: theirs are the
        # index's estimates (agents/prices/pricing.py).
        "cost": row.cost,
        "estimated_cost_entries": row.estimated,
        "unpriced_entries": row.unpriced,
        "premium_requests": row.premium_requests,
    }


def block_json(block: BillingBlock) -> dict[str, Any]:
    """A billing window (``usage --by block``), its times in UTC ISO."""

    def iso(moment: datetime | None) -> str | None:
        return None if moment is None else moment.isoformat()

    return {
        "start": iso(block.start),
        "end": iso(block.end),
        "first_request": iso(block.first),
        "last_request": iso(block.last),
        "active": block.active,
        "gap": block.gap,
        "models": list(block.models),
        **{key: value for key, value in usage_json(block.usage).items() if key != "keys"},
        "tokens_per_minute": block.tokens_per_minute,
        "cost_per_hour": block.cost_per_hour,
        "remaining_minutes": block.remaining_minutes if block.active else None,
        "projected_tokens": block.projected_tokens,
        "projected_cost": block.projected_cost,
    }


def context_json(context: SessionContext) -> dict[str, Any]:
    return asdict(context)


def skipped_json(skipped: dict[str, SkippedLines]) -> dict[str, dict[str, Any]]:
    """{path: {"count", "lines"}}: lines that hold no JSON object, the first 1,000 listed."""
    return {path: {"count": item.count, "lines": item.lines} for path, item in skipped.items()}


def describe_skipped(skipped: dict[str, SkippedLines]) -> list[str]:
    """One line per file: "<path>: 2 malformed lines skipped (lines 4, 9)"."""
    return [f"{home_relative(path)}: {skipped_note(item)}" for path, item in skipped.items()]


def skipped_note(item: SkippedLines) -> str:
    shown = ", ".join(f"{number:,}" for number in item.lines[:10])
    more = ", …" if item.count > 10 else ""
    return (
        f"{plural(item.count, 'malformed line')} skipped "
        f"({'line' if item.count == 1 else 'lines'} {shown}{more})"
    )
