"""The index's limits room: how close a user is to the plan's usage limits (issue 37).

* ``pace``: when a window reaches 100 % at the rate it is used (pure arithmetic).
* ``quota``: each agent's windows: the readings agents wrote into their files (Codex's
  ``rate_limits``, quota_observations) and Claude's five-hour and weekly token totals against a
  limit set (xcsh_store.glance.settings) or calibrated from history.

The spend budgets and the status line's sums are xcsh_store.glance's: they must answer without
importing the store.
"""
