"""Quick looks at index.db: what a status line and the budgets need, answered without the
index's store (``xcsh_store.index`` imports the store and its questions: too slow to import for
a command an agent's status bar runs on every redraw).

The one reader of index.db outside ``index/``: it opens the file read-only, never migrates or
writes it, and asks the few sums it needs with the usage_entries view's own rules applied to
only the rows those sums can involve (``usage``); an index made by an older program (a table
missing) answers what it can. It stands over the leaves only; the index, the web app and the
CLI use it.

* ``settings``: the limits a user sets: ``[quota.AGENT]`` window limits and ``[budget]`` spend
  limits in the config file, the budgets ``xcsh-store budget set`` keeps in ``budgets.toml``.
* ``usage``: the usage_entries rules over a restricted set of rows (a session, a period), and
  the read-only connection.
* ``spend``: each budget's period, what was spent in it, and how much of it that is.
* ``status``: the status line's facts: this session's cost, today's, the active five-hour
  window and the newest quota readings.
"""
