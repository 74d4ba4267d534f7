"""The index's write room: session files into rows.

* ``scan``: finding the session files, and what the index remembers of each (the first step of
  a sync; the ``SyncReport`` and ``Progress`` a sync hands back).
* ``sync``: bringing the index up to date, file by file: skip, append or read again;
  ``pipeline``: the worker processes that read files whole; ``build``: one file into chunks of
  rows (the workers' work); ``indexer``: the rows written in bounded transactions; ``rows``:
  what the index stores for one JSON object (columns, search text, blob refs).
* What a sync derives once the rows are in: ``summaries`` (Claude Code's summary lines as
  titles), ``prices`` (costs priced again when the price table changed) and ``stale_search``
  (search rows of entries that are gone, counted as they go, deleted in batches).

Borderline modules, placed by what they do: ``rows`` is also read (texts and export derive an
entry's text as a write did, prompts its hash) but it is the one definition of what a write
stores; ``prices`` also answers which price each model seen was given (the ``prices`` verb),
from the record its re-pricing keeps; ``stale_search``'s count is read by search, but the rows
it counts are what writes leave behind.
"""
