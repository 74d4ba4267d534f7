"""Prompt history: the ``history.db`` of every prompt typed (``store``), its schema and the
numbered migrations that make it (``schema``, ``migrations/*.sql``), and searching it
(``search``)."""
