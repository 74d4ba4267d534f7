"""``xcsh-store prices``: the price each model seen in the index is given, its source and date,
and the models left without one."""

from __future__ import annotations

from typing import Any

import click

from xcsh_store.agents.prices.pricing import price_table
from xcsh_store.agents.prices.pricing_model import Rate
from xcsh_store.cli.app import (
    Settings,
    cli,
    echo,
    emit_json,
    json_option,
    open_index,
    pass_settings,
    print_table,
)
from xcsh_store.cli.params import agents_in_words
from xcsh_store.homes import get_prices_file
from xcsh_store.index import ModelSeen

_KINDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


def _rate_text(rate: Rate | None) -> str:
    if rate is None:
        return "-"
    tiers = "".join(f" ({start // 1000}k+: {tier:g})" for start, tier in rate.tiers)
    return f"{rate.base:g}{tiers}"


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
    genai-prices dataset. Rates are dollars per million tokens; "200k+: 6" is the rate of a
    whole request whose input is over 200k tokens. pi, opencode and Aider record their own
    costs; a line they left without one is priced too.

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
    rows = []
    for item in seen:
        price = item.price
        name = "/".join(part for part in (item.provider, item.model) if part) or "?"
        if price is None:
            rates = ["-"] * len(_KINDS)
            source = "recorded by the agent" if item.unpriced == 0 else "no price"
        else:
            rates = [_rate_text(getattr(price.rates, kind)) for kind in _KINDS]
            source = price.source + (f" (from {price.date})" if price.date else "")
        rows.append((item.agent, name, f"{item.entries:,}", *rates, source))
    print_table(
        rows,
        headers=(
            "agent",
            "model",
            "entries",
            "input",
            "output",
            "cache read",
            "cache write",
            "1h write",
            "source",
        ),
        right=(2,),
        flexible=(1, 8),
    )
    unpriced = [item.model or "?" for item in seen if item.unpriced]
    if unpriced:
        echo(f"Unpriced (no cost counted; add them to {get_prices_file()}): {', '.join(unpriced)}")
    if not current:
        echo("The index was priced with another price table: `xcsh-store sync` prices it again.")
    click.echo(f"Price table: {table.fingerprint}")


prices_command.help = (prices_command.help or "").replace(
    "ESTIMATED", agents_in_words(estimated=True)
)
