"""The index's limits room: how close a user is to the plan's usage limits and to the spend
limits they set themselves (issue 37).

* ``settings``: the limits the store's config file sets (``[quota.AGENT]``, ``[budget]``) and
  the budgets ``xcsh-store budget set`` keeps (``budgets.toml`` beside it).
* ``pace``: when a window reaches 100 % at the rate it is used (pure arithmetic).
* ``quota``: each agent's windows: the readings agents wrote into their files (Codex's
  ``rate_limits``, quota_observations) and Claude's five-hour and weekly token totals against a
  limit set or calibrated from history.
* ``budgets``: spend per day, week and month, overall and per agent or project, against the
  budgets.
* ``status``: the few sums a status line shows, each one query on a read-only connection.
"""
