"""Tokens and cost per entry: what each model response of a session used, on the entry that
records it, for the session page and ``show`` to print beside the assistant's messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import apsw


@dataclass(frozen=True, slots=True)
class EntryUsage:
    """The usage one model response recorded: its input split as the agent reported it, its
    output, and its cost (None: no price source knows its model)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float | None

    @property
    def context_tokens(self) -> int:
        """The context the model read for the response: new input and cache, read or written."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


def entry_usage(connection: apsw.Connection, file_id: int) -> dict[str, EntryUsage]:
    """Entry id -> its usage, for the entries of the file that carry one. The lines of one
    response (Claude streams one as several lines, Codex writes a token_count twice) share a
    usage key and only the last of them keeps the figures (migration 0009): each response is
    counted once, on that line."""
    rows = connection.execute(
        "SELECT id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost"
        " FROM entries WHERE session = ? AND id IS NOT NULL AND input_tokens IS NOT NULL"
        " ORDER BY seq",
        (file_id,),
    )
    return {
        entry_id: EntryUsage(
            inputs or 0, outputs or 0, reads or 0, writes or 0, None if cost is None else cost
        )
        for entry_id, inputs, outputs, reads, writes, cost in rows
    }


def plus(first: EntryUsage | None, second: EntryUsage) -> EntryUsage:
    """The usage of two responses together (a cost unknown in either is unknown)."""
    if first is None:
        return second
    cost = None if first.cost is None or second.cost is None else first.cost + second.cost
    return EntryUsage(
        first.input_tokens + second.input_tokens,
        first.output_tokens + second.output_tokens,
        first.cache_read_tokens + second.cache_read_tokens,
        first.cache_write_tokens + second.cache_write_tokens,
        cost,
    )


def usage_by_response(
    responses: Sequence[tuple[object, bool]],
    shown: Sequence[bool],
    usage: Mapping[str, EntryUsage],
) -> dict[str, EntryUsage]:
    """Entry id -> the usage a view shows beside it, for entries in branch order given as
    (id, is an assistant message) and whether the view shows them: on each shown assistant
    message, the usage of the entries from it up to the next one (Codex records a response's
    tokens in a token_count event after the call's output, a record views leave out). Usage
    before the first shown assistant message has no row to go to."""
    used: dict[str, EntryUsage] = {}
    holder: str | None = None
    for (entry_id, assistant), keep in zip(responses, shown, strict=True):
        if keep and assistant:
            holder = entry_id if isinstance(entry_id, str) else None
        own = usage.get(entry_id) if isinstance(entry_id, str) else None
        if own is not None and holder is not None:
            used[holder] = plus(used.get(holder), own)
    return used
