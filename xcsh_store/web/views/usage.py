"""``/usage``: tokens or cost over time, by model and by project, the billing windows, the
limits and the budgets."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from xcsh_store.agents import AGENTS
from xcsh_store.errors import XcshStoreError
from xcsh_store.index import UsageQuery, UsageRow, usage_total
from xcsh_store.web import pages
from xcsh_store.web.params import filters_of
from xcsh_store.web.site import Site


def usage(site: Site, request: Request) -> Response:
    by = request.query_params.get("by", "day")
    by = by if by in ("day", "week", "month", "block") else "day"
    metric = request.query_params.get("metric", "tokens")
    metric = metric if metric in ("tokens", "cost") else "tokens"

    def value_of(row: UsageRow) -> float | None:
        return row.tokens if metric == "tokens" else row.cost

    # The filters of the other pages (the entries of those sessions, in the span).
    filters = filters_of(request.query_params)
    blocks: list[Any] = []
    with site.open_index() as index:
        if by == "block":
            blocks = index.billing_blocks(filters)
            over_time = [pages.block_row(block) for block in blocks]
        else:
            over_time = index.usage_rows(UsageQuery(by=(by,), filter=filters))
        models = index.usage_rows(UsageQuery(by=("model",), filter=filters))
        projects = index.usage_rows(UsageQuery(by=("project",), filter=filters))
        choices, _models = site.filter_choices(index)
        try:
            limits, limits_error = pages.limit_rows(index.quota()), None
            budgets = index.budgets()
        except XcshStoreError as error:  # a config file that says nonsense
            limits, limits_error, budgets = [], str(error), []
    title = "by 5-hour billing window (UTC)" if by == "block" else f"by {by}"
    # The chart shows the windows worked in; the table also the idle time between them.
    worked = [row for row in over_time if row.entries]
    # Days, weeks and months on a time axis: idle ones are empty slots (a gap shows).
    axis = worked if by == "block" else pages.time_axis(over_time, by)
    charts = [
        pages.chart(title, axis, metric, value_of, len(axis) if by != "block" else 60),
        pages.ranked_chart("by model", models, metric, value_of, labels_of=pages.model_labels),
        pages.ranked_chart("by project", projects, metric, value_of, name_of=pages.project_name),
    ]
    active = next((block for block in blocks if block.active), None)
    return site.render(
        "usage.html", by=by, metric=metric, charts=charts, rows=over_time,
        totals=usage_total(over_time), active=active, blocks=blocks, limits=limits,
        limits_error=limits_error, budgets=budgets,
        query=request.query_params, projects=choices, agents=AGENTS,
    )  # fmt: skip


ROUTES = {"/usage": usage}
