"""The SQL functions of search, on every connection of the store (apsw) and, through the Datasette
plugin (datasette_plugin.py), on Datasette's (the stdlib sqlite3 module): the same functions
whichever SQLite runs them. The reading of session files is imported on their first call, so a
connection that only lists sessions never pays for it.

* ``entry_text(pk)``: an entry's search text, read from its session file (entries_fts keeps
  none, migration 0007); NULL when the file no longer holds the entry or cannot be read now.
* ``entry_snippet(pk, query)``: about a dozen words of that text around the first place
  ``query`` matches, each match in [brackets], as ``xcsh-store search`` shows it.
* ``search_match(query)``: what ``entries_fts MATCH`` needs for ``query`` in the syntax of
  ``xcsh-store search`` (plain words, the last one also a prefix, ``"phrases"``, ``-excluded``):
  never an FTS5 syntax error; a query with no word matches nothing.
* ``xcsh_rank(entries_fts, avgdl, group_idf, idf…)``: search's bm25 (index/read/ranking.py); an
  FTS5 function, which only apsw can register.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import apsw

from xcsh_store.index.read.ranking import bm25_score

if TYPE_CHECKING:
    from xcsh_store.index.read.search import FtsTokens, Highlighter

# What search_match gives a query without a word: an empty phrase, which FTS5 accepts and which
# matches nothing.
NOTHING = '""'
SNIPPET_MARKERS = ("[", "]")


class SearchFunctions:
    """The scalar functions above over ``connection``: an apsw connection or a stdlib sqlite3
    one (the queries they run are the same). ``tokenizer`` runs entries_fts's tokenizer: the
    apsw connection itself, or None for a private in-memory one (stdlib sqlite3 has no access to
    FTS5 tokenizers)."""

    def __init__(self, connection: Any, tokenizer: apsw.Connection | None = None) -> None:
        self.connection = connection
        self.tokenizer = tokenizer
        self._tokens: FtsTokens | None = None
        # The highlighter of the last query: a query marks every row of its result.
        self._highlighter: tuple[str, Highlighter] | None = None

    def scalars(self) -> dict[str, tuple[int, Callable[..., str | None]]]:
        """Each function by its SQL name, with its number of arguments."""
        return {
            "entry_text": (1, self.entry_text),
            "entry_snippet": (2, self.entry_snippet),
            "search_match": (1, self.search_match),
        }

    def entry_text(self, pk: object) -> str | None:
        from xcsh_store.index.read.texts import entry_texts

        if type(pk) is not int:
            return None
        return entry_texts(self.connection, [pk]).get(pk)

    def entry_snippet(self, pk: object, query: object) -> str | None:
        text = self.entry_text(pk)
        if text is None or not isinstance(query, str):
            return None
        return self._highlighter_of(query).snippet(text)

    def search_match(self, query: object) -> str:
        from xcsh_store.index.read.search import parse_search_query

        if not isinstance(query, str):
            return NOTHING
        return parse_search_query(query, self._fts_tokens()).match or NOTHING

    def _fts_tokens(self) -> FtsTokens:
        from xcsh_store.index.read.search import FtsTokens

        if self._tokens is None:
            self._tokens = FtsTokens(self.tokenizer)
        return self._tokens

    def _highlighter_of(self, query: str) -> Highlighter:
        from xcsh_store.index.read.search import Highlighter, parse_search_query

        if self._highlighter is None or self._highlighter[0] != query:
            tokens = self._fts_tokens()
            parsed = parse_search_query(query, tokens)
            self._highlighter = (query, Highlighter(parsed, SNIPPET_MARKERS, tokens))
        return self._highlighter[1]


def register_search_functions(connection: apsw.Connection) -> None:
    for name, (arguments, function) in SearchFunctions(connection, connection).scalars().items():
        connection.create_scalar_function(name, function, arguments)
    # ranking.py needs nothing heavy, and the rank runs for every row a search ranks.
    # apsw types an FTS5 function as taking any SQL values; xcsh_rank is given floats.
    connection.register_fts5_function("xcsh_rank", bm25_score)  # type: ignore[arg-type]
