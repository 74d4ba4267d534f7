"""The core both rooms of the index stand on (write/ stores rows, read/ answers questions from
them; neither imports the other: tests/test_layering.py): the shape of index.db's rows and what
both derive from a session file.

* ``columns``: each row type's columns (sessions, entries, usage, prompts) once, with their
  SQLite, PostgreSQL and Arrow types, which the writes, the reads, verify, the export, the team
  index and the Parquet files derive their lists from (tests/test_columns.py holds both
  schemas and docs/schema.md to it).
* ``facts``: what one JSON object of a session file becomes (EntryFacts, its prompt hash,
  its blob refs) and the lines a read skipped.
* ``paths``: entries as the index holds them and the paths from one to its root.
* ``search_rows``: the counts of the search table both rooms read.
"""
