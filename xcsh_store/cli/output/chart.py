"""Usage charts: stacked unicode bars for the terminal and a self-contained HTML/SVG page, of
the bars index.usage_bars makes of the rows."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import replace

import click

from xcsh_store.cli.output.render import cut, cut_styled, display_width, human_count, money, pad
from xcsh_store.cli.output.safe import Shown, shown, styled, visible
from xcsh_store.index import UsageBar, UsageRow, usage_bars

# (name, colour on a terminal, shade without colour, colour in HTML)
SERIES = (
    ("input", "blue", "█", "#4e79a7"),
    ("output", "green", "▓", "#59a14f"),
    ("cache read", "cyan", "▒", "#9ecae9"),
    ("cache write", "yellow", "░", "#f1ce63"),
)
COST_COLOUR = "#e15759"
EIGHTHS = " ▏▎▍▌▋▊▉"
SPARKS = "▁▂▃▄▅▆▇█"
MIN_BAR_WIDTH = 10
# Labels (session ids, project folders) are cut to leave the bar room, never below this.
MIN_LABEL_WIDTH = 8
MAX_BAR_WIDTH = 72
# Room for the totals right of the bars.
VALUES_WIDTH = 18


def sparkline(values: Sequence[float]) -> str:
    top = max(values, default=0)
    if top <= 0:
        return SPARKS[0] * len(values)
    return "".join(SPARKS[min(7, int(value / top * 7.999))] for value in values)


def squeezed(values: Sequence[float], width: int) -> tuple[list[float], int]:
    """``values`` summed in runs of equal length so that at most ``width`` are left, and the
    run length (1 when they already fit)."""
    run = max(1, -(-len(values) // max(1, width)))
    return [sum(values[start : start + run]) for start in range(0, len(values), run)], run


def _cells(values: Sequence[float], scale: float, width: int) -> list[int]:
    """Cells per stacked segment; rounding the running sum keeps the whole bar to scale."""
    cells, drawn, running = [], 0, 0.0
    for value in values:
        running += value
        end = min(width, round(running * scale))
        cells.append(end - drawn)
        drawn = end
    return cells


def terminal_chart(
    rows: Sequence[UsageRow], by: str, metric: str, width: int | None, color: bool
) -> list[Shown]:
    """Horizontal bars, one line per group: stacked token kinds, or cost with 1/8-cell precision.

    Every line fits ``width`` (100 in a pipe): long labels are cut, and the sparklines sum
    neighbouring groups when there are more groups than columns.
    """
    # Labels come from session data: escaped before they are measured and cut.
    bars = [replace(bar, label=visible(bar.label)) for bar in usage_bars(rows, by)]
    if not bars:
        return [shown("No usage recorded.")]
    width = width or 100
    totals = [f"{human_count(bar.total):>6} {money(bar.cost):>9}" for bar in bars]
    totals_width = max(len(text) for text in totals)
    # A label, " ▕", the bar, "▏ " and the totals, two columns to spare.
    values_width = max(VALUES_WIDTH, totals_width + 2)
    label_width = min(
        max(display_width(bar.label) for bar in bars),
        max(MIN_LABEL_WIDTH, width - values_width - 4 - MIN_BAR_WIDTH),
    )
    available = width - label_width - values_width - 4
    bar_width = max(MIN_BAR_WIDTH, min(MAX_BAR_WIDTH, available))
    lines = [_legend(metric, color, width), ""]
    top = max(bar.measure(metric) for bar in bars)
    scale = bar_width / top if top > 0 else 0.0
    for bar, total in zip(bars, totals, strict=True):
        drawn = (
            _cost_bar(bar.cost, scale)
            if metric == "cost"
            else _token_bar(bar, scale, bar_width, color)
        )
        padding = bar_width - len(click.unstyle(drawn))
        label = pad(cut(bar.label, label_width), label_width, right=True)
        lines.append(shown(f"{label} ▕") + drawn + f"{' ' * padding}▏ {total:>{totals_width}}")
    lines.append("")
    for name, values, total in (
        ("tokens", [bar.total for bar in bars], human_count(sum(bar.total for bar in bars))),
        ("cost", [bar.cost for bar in bars], money(sum(bar.cost for bar in bars))),
    ):
        suffix = f"  {total} in total"
        room = width - label_width - 2 - len(suffix)
        marks, run = list(values), 1
        if len(values) > room:
            unit = f"{by}s" if by in ("day", "week", "month") else "groups"
            marks, run = squeezed(values, room - len(f" (each mark {len(values)} {unit})"))
            suffix += f" (each mark {run} {unit})"
        lines.append(f"{pad(name, label_width, right=True)}  {sparkline(marks)}{suffix}")
    return [cut_styled(line, width) for line in lines]


def _legend(metric: str, color: bool, width: int) -> Shown:
    if metric == "cost":
        return shown("Cost (bars), tokens and cost per group on the right")
    keys = [
        styled("█", color, fg=colour) + f" {name}" if color else shown(f"{shade} {name}")
        for name, colour, shade, _html in SERIES
    ]
    legend = "Tokens: " + Shown("  ").join(keys)
    note = "   (total tokens and cost on the right)"
    # The note goes first on a narrow terminal; the keys say what the shades mean.
    return legend + note if display_width(legend + note) <= width else legend


def _token_bar(bar: UsageBar, scale: float, width: int, color: bool) -> Shown:
    parts = []
    for (_name, colour, shade, _html), cells in zip(
        SERIES, _cells(bar.values, scale, width), strict=True
    ):
        if cells <= 0:
            continue
        parts.append(styled("█" * cells, color, fg=colour) if color else shade * cells)
    if not parts and bar.total > 0:
        parts.append("▏")  # something, however small, is not nothing
    return Shown("").join(parts)


def _cost_bar(cost: float, scale: float) -> str:
    eighths = round(cost * scale * 8)
    full, rest = divmod(eighths, 8)
    text = "█" * full + (EIGHTHS[rest] if rest else "")
    return text or ("▏" if cost > 0 else "")


# --------------------------------------------------------------------------------------------
# HTML


def _nice_step(top: float, ticks: int = 5) -> float:
    if top <= 0:
        return 1.0
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def html_chart(rows: Sequence[UsageRow], by: str, title: str, note: str = "") -> str:
    """A self-contained HTML page: stacked token columns, a cost line, a legend and a table.

    No scripts and no external files: it opens from disk, in a mail, or behind a strict CSP.
    ``note`` (the active billing window's burn rate) is shown under the summary.
    """
    bars = usage_bars(rows, by)
    width, height = 960, 420
    left, right, top_margin, bottom = 70, 70, 20, 90
    plot_w, plot_h = width - left - right, height - top_margin - bottom
    top_tokens = max((bar.total for bar in bars), default=0)
    top_cost = max((bar.cost for bar in bars), default=0)
    token_step, cost_step = _nice_step(top_tokens), _nice_step(top_cost)
    token_max = token_step * max(1, math.ceil(top_tokens / token_step))
    cost_max = cost_step * max(1, math.ceil(top_cost / cost_step))
    slot = plot_w / max(1, len(bars))
    column = max(2.0, slot * 0.7)
    parts: list[str] = []

    def y_of(value: float, maximum: float) -> float:
        return top_margin + plot_h - (value / maximum * plot_h if maximum else 0)

    for index in range(round(token_max / token_step) + 1):
        value = index * token_step
        y = y_of(value, token_max)
        parts.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">'
            f"{human_count(value)}</text>"
        )
    for index in range(round(cost_max / cost_step) + 1):
        value = index * cost_step
        parts.append(
            f'<text class="axis cost" x="{left + plot_w + 8}" y="{y_of(value, cost_max) + 4:.1f}">'
            f"{html.escape(money(value))}</text>"
        )
    label_every = max(1, math.ceil(len(bars) / 24))
    points = []
    for index, bar in enumerate(bars):
        x = left + index * slot + (slot - column) / 2
        base = 0.0
        for (name, _colour, _shade, fill), value in zip(SERIES, bar.values, strict=True):
            if value <= 0:
                continue
            y_top, y_bottom = y_of(base + value, token_max), y_of(base, token_max)
            parts.append(
                f'<rect x="{x:.1f}" y="{y_top:.1f}" width="{column:.1f}" '
                f'height="{max(0.5, y_bottom - y_top):.1f}" fill="{fill}">'
                f"<title>{html.escape(bar.label)} · {name}: {value:,.0f} tokens</title></rect>"
            )
            base += value
        centre = x + column / 2
        points.append((centre, y_of(bar.cost, cost_max), bar))
        if index % label_every == 0:
            parts.append(
                f'<text class="axis" transform="translate({centre:.1f},{top_margin + plot_h + 14})'
                f' rotate(45)">{html.escape(bar.label)}</text>'
            )
    if points:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _bar in points)
        parts.append(f'<polyline class="cost-line" points="{path}"/>')
        for x, y, bar in points:
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{COST_COLOUR}">'
                f"<title>{html.escape(bar.label)} · cost {html.escape(money(bar.cost))}"
                "</title></circle>"
            )
    legend = (
        "".join(
            f'<span><i style="background:{fill}"></i>{name}</span>'
            for name, _colour, _shade, fill in SERIES
        )
        + f'<span><i style="background:{COST_COLOUR}"></i>cost (right axis)</span>'
    )
    table_rows = "".join(
        f"<tr><td>{html.escape(bar.label)}</td>"
        + "".join(f"<td>{value:,.0f}</td>" for value in bar.values)
        + f"<td>{bar.total:,.0f}</td><td>{html.escape(money(bar.cost))}</td></tr>"
        for bar in bars
    )
    total_tokens = sum(bar.total for bar in bars)
    total_cost = sum(bar.cost for bar in bars)
    return _PAGE.format(
        title=html.escape(title),
        summary=html.escape(
            f"{human_count(total_tokens)} tokens · {money(total_cost)} · {len(bars)} × {by}"
        ),
        legend=legend,
        note=f'<p class="note">{html.escape(note)}</p>' if note else "",
        width=width,
        height=height,
        svg="".join(parts),
        by=html.escape(by),
        rows=table_rows,
        cost_colour=COST_COLOUR,
    )


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  :root {{ color-scheme: light dark; --fg: #222; --muted: #666; --grid: #e5e5e5; --bg: #fff; }}
  @media (prefers-color-scheme: dark) {{
    :root {{ --fg: #eee; --muted: #aaa; --grid: #333; --bg: #161616; }}
  }}
  body {{ font: 14px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg);
         max-width: 1000px; margin: 2rem auto; padding: 0 1rem; }}
  h1 {{ font-size: 1.3rem; margin-bottom: .2rem; }}
  .summary {{ color: var(--muted); margin-top: 0; }}
  .legend span {{ margin-right: 1.2rem; white-space: nowrap; }}
  .legend i {{ display: inline-block; width: .8rem; height: .8rem; margin-right: .35rem;
              vertical-align: -1px; border-radius: 2px; }}
  svg {{ width: 100%; height: auto; }}
  .grid {{ stroke: var(--grid); }}
  .axis {{ fill: var(--muted); font-size: 11px; }}
  .axis.cost {{ fill: {cost_colour}; }}
  .cost-line {{ fill: none; stroke: {cost_colour}; stroke-width: 2; }}
  rect:hover, circle:hover {{ opacity: .75; }}
  table {{ border-collapse: collapse; margin-top: 1.5rem; width: 100%; }}
  th, td {{ padding: .25rem .6rem; border-bottom: 1px solid var(--grid); text-align: right; }}
  th:first-child, td:first-child {{ text-align: left; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="summary">{summary}</p>
{note}
<p class="legend">{legend}</p>
<svg viewBox="0 0 {width} {height}" role="img" aria-label="{title}">{svg}</svg>
<table>
<thead><tr><th>{by}</th><th>input</th><th>output</th><th>cache read</th><th>cache write</th>
<th>total</th><th>cost</th></tr></thead>
<tbody>{rows}</tbody>
</table>
<p class="summary">Made by xcsh-store from index.db.</p>
</body>
</html>
"""
