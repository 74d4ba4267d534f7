"""``xcsh-store prices``: the price each model seen in the index is given, its source and date,
and the models left without one."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import click

from xcsh_store.agents.prices.pricing import price_table
from xcsh_store.agents.prices.pricing_model import ModelPrice, Rate
from xcsh_store.cli.app import (
    Settings,
    cli,
    echo_wrapped,
    emit_json,
    json_option,
    open_index,
    pass_settings,
    print_table,
)
from xcsh_store.cli.output.render import cut_middle
from xcsh_store.cli.params import agents_in_words
from xcsh_store.homes import get_prices_file
from xcsh_store.index import ModelSeen

_KINDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")
# The source column of a model priced by no table: its agent records costs, or nothing does.
RECORDED = "agent"
NO_PRICE = "none"


def _rate_text(rate: Rate | None) -> str:
    return "-" if rate is None else f"{rate.base:g}"


# A date at the end of a model's name (claude-sonnet-4-20250514): the same model, a release.
_RELEASE_DATE = re.compile(r"-\d{8}$")


def short_model(model: str | None) -> str:
    """A model's name as ccusage writes it: no provider, no ``claude-``, no release date
    (``anthropic/claude-sonnet-4-20250514`` -> ``sonnet-4``)."""
    name = (model or "?").rsplit("/", 1)[-1] if (model or "").count("/") <= 1 else model or "?"
    return _RELEASE_DATE.sub("", name.removeprefix("claude-"))


def _names(seen: list[ModelSeen]) -> list[str]:
    """Each model's short name, or its whole name where two of one agent's would read alike."""
    short = [short_model(item.model) for item in seen]
    counts = Counter((item.agent, name) for item, name in zip(seen, short, strict=True))
    return [
        name if counts[(item.agent, name)] == 1 else item.model or "?"
        for item, name in zip(seen, short, strict=True)
    ]


def _tier_rows(price: ModelPrice) -> list[tuple[str, ...]]:
    """A priced model's tiers, a line each below it: ``> 200k`` and the rate of every kind
    that has that tier (a whole request whose input is over 200k tokens)."""
    rates = [getattr(price.rates, kind) for kind in _KINDS]
    starts = sorted({start for rate in rates if rate is not None for start, _ in rate.tiers})
    rows = []
    for start in starts:
        cells = [
            next((f"{tier:g}" for at, tier in rate.tiers if at == start), "")
            if rate is not None
            else ""
            for rate in rates
        ]
        rows.append(("", f"  > {start // 1000}k", "", *cells, ""))
    return rows


def _seen_json(seen: ModelSeen) -> dict[str, Any]:
    price = seen.price
    return {
        "agent": seen.agent,
        "provider": seen.provider,
        "model": seen.model,
        "entries": seen.entries,
        "unpriced_entries": seen.unpriced,
        "last_used": seen.last_used,
        # Dollars per million tokens; null where the agent records its own costs (pi, xcsh)
        # or no source prices the model. A rate with tiers: {"base", "tiers": [[above, rate]]}.
        "price": None
        if price is None
        else {
            kind: None
            if (rate := getattr(price.rates, kind)) is None
            else {"base": rate.base, "tiers": [list(tier) for tier in rate.tiers]}
            for kind in _KINDS
        },
        "source": None if price is None else price.source,
        "date": None if price is None else price.date,
    }


@cli.command("prices")
@json_option
@pass_settings
def prices_command(settings: Settings, as_json: bool) -> None:
    """The price of each model seen in the index, its source and date; the models left unpriced.

    ESTIMATED record tokens, not costs: each request is priced at the price in
    force on its day, from ~/.config/xcsh-store/prices.toml ($XDG_CONFIG_HOME) first, then the
    genai-prices dataset. Rates are dollars per million tokens; a line "> 200k" below a model
    gives its rates for a whole request whose input is over 200k tokens. pi and xcsh record
    their own costs.

    \b
    Example:
      xcsh-store prices
    """
    table = price_table()
    with open_index(settings) as index:
        seen, current = index.models_seen(table)
    if as_json:
        emit_json(
            {
                "price_table": table.fingerprint,
                "prices_file": get_prices_file(),
                "index_priced_with_it": current,
                "models": [_seen_json(item) for item in seen],
                "unpriced": [item.model for item in seen if item.unpriced],
            }
        )
        return
    rows: list[tuple[str, ...]] = []
    sources: list[str] = []
    for item, name in zip(seen, _names(seen), strict=True):
        price = item.price
        if price is None:
            rates = ["-"] * len(_KINDS)
            source = RECORDED if item.unpriced == 0 else NO_PRICE
        else:
            rates = [_rate_text(getattr(price.rates, kind)) for kind in _KINDS]
            described = price.source + (f" (from {price.date})" if price.date else "")
            if described not in sources:
                sources.append(described)
            source = str(sources.index(described) + 1)
        rows.append((item.agent, name, f"{item.entries:,}", *rates, source))
        if price is not None:
            rows.extend(_tier_rows(price))
    print_table(
        rows,
        headers=(
            "agent",
            "model",
            ("entries", "n"),
            ("input", "in"),
            ("output", "out"),
            ("cache read", "c.read"),
            ("cache write", "c.write"),
            ("1h write", "1h"),
            ("source", "src"),
        ),
        right=(2, 3, 4, 5, 6, 7),
        flexible=(1,),
        cuts={1: cut_middle},
    )
    legend = [f"{number} {source}" for number, source in enumerate(sources, 1)]
    legend += [f"{RECORDED}: recorded by the agent", f"{NO_PRICE}: no price known"]
    echo_wrapped("Sources: " + "; ".join(legend) + ".")
    unpriced = [item.model or "?" for item in seen if item.unpriced]
    if unpriced:
        echo_wrapped(
            f"Unpriced (no cost counted; add them to {get_prices_file()}): {', '.join(unpriced)}"
        )
    if not current:
        echo_wrapped(
            "The index was priced with another price table: `xcsh-store sync` prices it again."
        )
    click.echo(f"Price table: {table.fingerprint}")


prices_command.help = (prices_command.help or "").replace(
    "ESTIMATED", agents_in_words(estimated=True)
)
