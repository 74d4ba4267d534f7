"""Prompt history: the ``history.db`` of every prompt typed (``store``) and searching it
(``search``)."""
