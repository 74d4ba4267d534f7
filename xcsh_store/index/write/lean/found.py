"""What a lean read finds in one file: its requests (one per line that holds usage), the few
facts of its session usage groups by, and which of the requests the full read counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from xcsh_store.agents import Agent, SessionFacts
from xcsh_store.agents.claude import claude_usage
from xcsh_store.agents.prices.pricing import price_table

# Who serves Codex's models (codex.py).
CODEX_PROVIDER = "openai"
# The seqs each line's offset leaves for the objects glued onto it (a line's offset is its seq
# here: only their order counts).
SEQS_PER_BYTE = 64


class CacheSplit(msgspec.Struct):
    ephemeral_1h_input_tokens: int = 0


class ClaudeUsage(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_creation: CacheSplit | None = None


@dataclass(slots=True)
class UsageRequest:
    """One line's request: its seq, entry id, timestamp, model, usage (priced only if it
    counts: most lines of a response are replaced by its last) and usage key."""

    seq: int
    entry_id: str | None
    timestamp: str | None
    model: str | None
    # Claude Code's usage object, Codex's four figures (input, output, cache read, write), or
    # the six figures an agent's reader made (by_reader.py; None: an entry without usage).
    usage: dict[str, Any] | ClaudeUsage | tuple[Any, ...] | None
    usage_key: str | None
    # Who served it, as the agent's record says (UsageRead.recorded_providers).
    provider: str | None = None

    def figures(self) -> tuple[Any, ...]:
        """The six usage figures, as the agent's reader makes them (claude.py, codex.py)."""
        usage = self.usage
        if isinstance(usage, tuple):
            if len(usage) == 6:
                return usage
            sent, received, cache_read, cache_write = usage
            cost = price_table().tokens_cost(
                self.model, self.timestamp, sent, received, cache_read, cache_write,
                provider=CODEX_PROVIDER,
            )  # fmt: skip
            return (*usage, 0, cost)
        if isinstance(usage, ClaudeUsage):
            usage = usage_dict(usage)
        return claude_usage(usage or {}, self.model, self.timestamp)


@dataclass
class UsageRead:
    """What the lean pass found in one file."""

    agent: Agent
    session: SessionFacts
    requests: list[UsageRequest] = field(default_factory=list)
    activity_at: str | None = None
    # Whether each request's provider is the one its record names (opencode's ``providerID``),
    # as the full read takes it, rather than the price table's for its model.
    recorded_providers: bool = False


def usage_dict(usage: ClaudeUsage) -> dict[str, Any]:
    split = usage.cache_creation
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_creation": None
        if split is None
        else {"ephemeral_1h_input_tokens": split.ephemeral_1h_input_tokens},
    }


def counted(requests: list[UsageRequest]) -> list[UsageRequest]:
    """The requests whose usage the full read keeps: a later line with the same usage key
    (the same response, written again) or the same entry id replaces an earlier one."""
    alive = [True] * len(requests)
    by_key: dict[str, int] = {}
    by_id: dict[str, int] = {}
    for number, request in enumerate(requests):
        if request.entry_id is not None:
            earlier = by_id.get(request.entry_id)
            if earlier is not None:
                alive[earlier] = False
            by_id[request.entry_id] = number
        if request.usage_key is not None:
            earlier = by_key.get(request.usage_key)
            if earlier is not None:
                alive[earlier] = False
            by_key[request.usage_key] = number
    return [request for request, kept in zip(requests, alive, strict=True) if kept]


def line_end(data: bytes, start: int, position: int) -> int | None:
    """Where the line that begins at ``start`` (and holds ``position``) ends: its newline, or
    the end of the data; None for a last line still being written (it waits for a later sync,
    as in build.py)."""
    end = data.find(b"\n", position)
    if end >= 0:
        return end
    try:
        orjson.loads(data[start:])
    except orjson.JSONDecodeError:
        return None
    return len(data)
