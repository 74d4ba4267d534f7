"""The stages of the write path, in the order a byte goes through them (docs/write_path.md).

* ``changed``: find what changed (the scan, ``write/scan.py``, walks the roots; the files to read
  come out as plain data, ``Changes.todo``).
* ``read``: each file of the todo read, here or by a worker process (``write/pipeline.py``),
  from its start or from where the last read stopped; the reader of its format
  (``write/build.py``, and ``agents/`` for other agents' records) turns its lines into rows,
  handed on in chunks.
* the writer, ``write/indexer.py``: the chunks written in bounded transactions.

``write/sync.py`` runs them in turn; the lean pass (``write/usage_first.py``) takes the same
todo from ``changed`` and writes usage rows only; the text put off comes last
(``write/text_later.py``), and the entries put off go through ``read`` again
(``write/entries_later.py``).
"""
