"""The index's read room: the questions the index answers, each module the query of one kind.

* ``questions``: the questions as frozen types that check themselves (SessionFilter,
  SessionQuery, SearchQuery, UsageQuery, PromptQuery), which the modules below compile to SQL.
* ``sessions``: the listing, lookup by path or id prefix, one session's text and skipped lines;
  ``names``: short id prefixes; ``choices``: shell-completion choices and the check that a
  filter names a model or project the index has.
* ``search``: full-text search (query parsing, snippets) and ``ranking``, its bm25 at a cost
  that does not grow with the index; ``texts``: the search text of entries, read again from the
  session files.
* ``tree``: trees and contexts (over the core's entry paths, ``index/model/paths.py``);
  ``outline``: a session laid out for reading.
* ``usage``: token and cost sums; ``prompts``: the prompt history, recalled with the session
  prompts; ``query``: the read-only ad-hoc SQL of the ``sql`` verb.
* ``export``: the index as rows for another store (the team index, the Parquet export);
  ``datasette_plugin``: search in Datasette (Datasette loads it, nothing here does).

Borderline modules, placed by what they do: ``prompts`` also mirrors the prompt history into
the index at each sync (history.db, and the history files of the agents that keep one): the
mirror and the recall are the two sides of the one ``history`` table, kept together.
What this room shares with the write room (entry facts, entry paths, the columns of each row,
the stale search rows' count) is the core's, ``index/model/``: neither room imports the other
(tests/test_layering.py).

The store (``index/store.py``) calls these modules, so the ones it calls never import it: what
they need of it they name as a small protocol (``sessions.SessionStore``,
``outline.SessionTrees``) or take its connection. ``choices`` and ``export``, which are handed
a store by their callers (the CLI, web, MCP, team), import its type.
"""
