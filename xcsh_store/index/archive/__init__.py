"""The index's archive room: the bytes of other agents' session files, kept compressed beside
index.db, so that a session stays when its agent deletes its file and the index can be made
again from them (docs/archive.md).

* ``frames``: the file format (Zstandard frames behind skippable frames that say what each
  holds); ``folder``: the archive folder, its file names and versions, appends that reach the
  disk before the index records them.
* ``capture``: the hook in a read (build.py): the bytes a reader takes, as archive pieces;
  ``keeper``: the writer's side during a sync (appends, documents kept whole, moves, the
  ``archived`` rows); ``backlog``: what the index holds and the archive does not yet;
  ``adopt``: the index made again from the archive.
* ``sources``: a gone session's bytes, or a copy of it, for the read modules; ``settings``:
  which agents are archived (the store's config file).

Borderline: ``backlog`` and ``adopt`` write rows through the write room's indexer (the write
room calls the keeper, never them: no circle); ``sources`` is read, but it is the archive's own
format that it reads.
"""
