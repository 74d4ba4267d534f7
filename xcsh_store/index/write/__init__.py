"""The index's write room: session files into rows.

* A sync is a line of stages (docs/write_path.md), run by ``sync``: find what changed (``scan``:
  finding the session files, and what the index remembers of each, with the ``SyncReport`` and
  ``Progress`` a sync hands back; ``stages/changed``: the files to read), read
  (``stages/read``: each file, here or by ``pipeline``'s worker processes; ``stages/resume``:
  where its last read stopped), build rows (``build``: one file into chunks of rows), write
  (``indexer``: the rows written in bounded transactions, its column lists the core's:
  ``index/model/columns.py``; ``bulk_load``: how the writer runs meanwhile), text later
  (``text_later``). The lean pass ``usage_first`` shares the first stage; ``entries_later``
  runs the others over the files it left.
* What a sync derives once the rows are in: ``summaries`` (Claude Code's summary lines as
  titles), ``prices`` (costs priced again when the price table changed) and ``stale_search``
  (search rows of entries that are gone, counted as they go, deleted in batches).

What the reads derive as a write did (an entry's facts, its prompt hash, the skipped lines, the
paths through a tree, the stale search rows' count) is the core's, ``index/model/``: this room
and read/ both stand on it and never import each other (tests/test_layering.py).

Borderline modules, placed by what they do: ``prices`` also answers which price each model
seen was given (the ``prices`` verb), from the record its re-pricing keeps; ``stale_search``
deletes the rows that writes leave behind (their count, which search reads too, is the core's).
"""
