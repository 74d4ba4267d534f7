"""The index's upkeep room: keeping index.db and the blob store right.

* ``verify``: the index compared with a fresh parse of every file; ``repair``: re-indexing
  what differs, recounting blob refs, and the one "move aside and start afresh" for a damaged
  file.
* ``gc``: blob garbage collection from reference counts, safe against agents writing at the
  same time; ``blob_folder``: which blobs are on disk, kept current with little listing;
  ``watch``: the folder watch (inotify) that tells gc whether its sync saw every session file.
* ``outside_readers``: what Python's sqlite3 module and the ``sqlite3`` command can do with
  index.db (``doctor``'s check).

Borderline: ``outside_readers`` asks no question of the sessions: it checks the file, as
``verify`` checks its rows, so it is here rather than with the questions in read/.
"""
