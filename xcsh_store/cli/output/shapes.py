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

if TYPE_CHECKING:
    from datetime import datetime

    from xcsh_store.format.context import SessionContext
    from xcsh_store.index import (
        BillingBlock,
        PromptHit,
        ReadSession,
        SearchHit,
        SkippedLines,
        UsageRow,
    )


# Marks a session whose file is gone, which the store's archive keeps (ls, show, pick).
ARCHIVED_MARK = "⌂"


def session_json(session: ReadSession) -> dict[str, Any]:
    """The session's own shape (SessionRecord.to_json), the one every front prints."""
    return session.to_json()


def session_cost(session: ReadSession) -> str:
    """A session's cost as shown: ``~$1.20`` when it is an estimate (its agent records none,
    as Claude Code and Codex), ``≥~$1.20`` when some of its entries have no price, ``?`` when
    none has one; never a silent ``$0``."""
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
    """The hit's own shape (SearchHit.to_json), its highlight marks as ``«`` and ``»``."""
    return hit.to_json(on_active_branch) | {"snippet": plain_snippet(hit.snippet)}


def prompt_hit_json(hit: PromptHit) -> dict[str, Any]:
    return hit.to_json()


def usage_json(row: UsageRow) -> dict[str, Any]:
    return row.to_json()


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
